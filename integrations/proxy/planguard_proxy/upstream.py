"""The upstream side: one pooled ``httpx.AsyncClient`` and the header rules of a transparent proxy.

Credentials (``Authorization``, ``x-api-key``) are forwarded as they came and never read otherwise.
Headers stay bytes end to end (as the ASGI server and the upstream transport hold them): no decoding,
re-encoding or case folding beyond the header name.
"""

from __future__ import annotations

import urllib.request
from collections.abc import Iterable

import httpx

from .config import ProxyConfig
from .transport import UpstreamTransport

__all__ = [
    "HOP_BY_HOP",
    "Upstream",
    "build_client",
    "client_headers",
    "connection_named",
    "upstream_headers",
]

#: Connection-level headers a proxy must not forward (RFC 9110 §7.6.1), plus ones it recomputes.
HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-authenticate",
        b"proxy-authorization",
        b"proxy-connection",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
    }
)
#: Not forwarded upstream either: the proxy computes the host and length of what it sends, and it has read
#: the whole body already, so the upstream has nothing to say before it (``Expect: 100-continue``).
_REQUEST_SKIP = HOP_BY_HOP | {b"host", b"content-length", b"expect"}
_IDENTITY = (b"accept-encoding", b"identity")


class _NoCookies(httpx.Cookies):
    """A cookie jar that never stores anything."""

    def extract_cookies(self, response: httpx.Response) -> None:
        return None


class _SharedClient(httpx.AsyncClient):
    """The upstream client is shared by every agent behind the proxy: a cookie one upstream response sets
    must reach that agent (it is forwarded) but never ride along on other agents' requests, so the client
    keeps no cookies (which also saves building a cookie-jar request per response)."""

    _none = _NoCookies()

    @property
    def cookies(self) -> httpx.Cookies:
        return self._none

    @cookies.setter
    def cookies(self, value: object) -> None:
        return None


class Upstream:
    """The client, and the transport requests go to directly when nothing sits in between.

    ``send`` hands a request to the proxy's own transport (``transport.UpstreamTransport``) when the
    environment names no HTTP proxy: the client's per-request work (auth and redirect flows, event hooks,
    cookie merging — none of which a transparent proxy uses) is then skipped. With an environment proxy,
    or a transport given by the caller, every request goes through ``client.send`` as usual.
    """

    def __init__(self, client: httpx.AsyncClient, direct: httpx.AsyncBaseTransport | None) -> None:
        self.client = client
        self.direct = direct

    async def send(self, request: httpx.Request) -> httpx.Response:
        if self.direct is not None:
            return await self.direct.handle_async_request(request)
        return await self.client.send(request, stream=True)

    async def aclose(self) -> None:
        await self.client.aclose()


def build_client(config: ProxyConfig, transport: httpx.AsyncBaseTransport | None = None) -> Upstream:
    t = config.timeouts
    direct: httpx.AsyncBaseTransport | None = None
    if transport is None and config.http_client == "builtin":
        transport = UpstreamTransport(
            max_connections=config.max_connections,
            max_keepalive=config.max_keepalive,
            keepalive_expiry=config.keepalive_expiry_s,
        )
        if not urllib.request.getproxies():
            direct = transport
    client = _SharedClient(
        timeout=httpx.Timeout(connect=t.connect, read=t.read, write=t.write, pool=t.pool),
        limits=httpx.Limits(
            max_connections=config.max_connections,
            max_keepalive_connections=config.max_keepalive,
            keepalive_expiry=config.keepalive_expiry_s,
        ),
        follow_redirects=False,
        transport=transport,
    )
    return Upstream(client, direct)


def connection_named(headers: Iterable[tuple[bytes, bytes]]) -> frozenset[bytes]:
    """Header names a ``Connection:`` header lists: hop-by-hop for this message too (RFC 9110 §7.6.1)."""
    names: set[bytes] = set()
    for k, v in headers:
        if k.lower() == b"connection":
            names.update(t.strip().lower() for t in v.split(b",") if t.strip())
    return frozenset(names)


def upstream_headers(
    headers: list[tuple[bytes, bytes]], *, observed: bool, drop: tuple[bytes, ...] = ()
) -> list[tuple[bytes, bytes]]:
    """Headers to send upstream (ASGI names are lower-case). Observed routes ask for an uncompressed
    answer (the proxy reads it)."""
    skip = (
        _REQUEST_SKIP | connection_named(headers)
        if any(k == b"connection" for k, _ in headers)
        else _REQUEST_SKIP
    )
    if observed:
        out = [(k, v) for k, v in headers if k not in skip and k not in drop and k != b"accept-encoding"]
        out.append(_IDENTITY)
        return out
    return [(k, v) for k, v in headers if k not in skip and k not in drop]


def client_headers(
    raw: Iterable[tuple[bytes, bytes]], *, decoded: bool, length: int | None = None
) -> list[tuple[bytes, bytes]]:
    """Headers to send the client. ``decoded``: the body is re-framed (length and encoding recomputed;
    ``length`` is the new Content-Length, if known)."""
    raw = list(raw)
    skip = HOP_BY_HOP | connection_named(raw)
    out: list[tuple[bytes, bytes]] = []
    for k, v in raw:
        lk = k.lower()
        if lk in skip or (decoded and (lk == b"content-length" or lk == b"content-encoding")):
            continue
        out.append((lk, v))
    if length is not None:
        out.append((b"content-length", b"%d" % length))
    return out
