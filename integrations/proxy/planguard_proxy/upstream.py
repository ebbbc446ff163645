"""The upstream side: one pooled ``httpx.AsyncClient`` and the header rules of a transparent proxy.

Credentials (``Authorization``, ``x-api-key``) are forwarded as they came and never read otherwise.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import httpx

from .config import ProxyConfig

__all__ = ["HOP_BY_HOP", "build_client", "request_headers", "response_headers"]

#: Connection-level headers a proxy must not forward (RFC 9110 §7.6.1), plus ones it recomputes.
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)


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


def build_client(config: ProxyConfig, transport: httpx.AsyncBaseTransport | None = None) -> httpx.AsyncClient:
    t = config.timeouts
    return _SharedClient(
        timeout=httpx.Timeout(connect=t.connect, read=t.read, write=t.write, pool=t.pool),
        limits=httpx.Limits(
            max_connections=config.max_connections,
            max_keepalive_connections=config.max_keepalive,
            keepalive_expiry=config.keepalive_expiry_s,
        ),
        follow_redirects=False,
        transport=transport,
    )


def request_headers(
    headers: Iterable[tuple[str, str]], *, observed: bool, drop: Iterable[str] = ()
) -> list[tuple[str, str]]:
    """Headers to send upstream. Observed routes ask for an uncompressed answer (the proxy reads it)."""
    skip = HOP_BY_HOP | {"host", "content-length"} | {d.lower() for d in drop}
    if observed:
        skip = skip | {"accept-encoding"}
    out = [(k, v) for k, v in headers if k.lower() not in skip]
    if observed:
        out.append(("accept-encoding", "identity"))
    return out


def response_headers(headers: Mapping[str, str] | httpx.Headers, *, decoded: bool) -> dict[str, str]:
    """Headers to send the client. ``decoded``: the body is re-framed (length and encoding recomputed)."""
    skip = HOP_BY_HOP | ({"content-length", "content-encoding"} if decoded else set())
    items = headers.multi_items() if isinstance(headers, httpx.Headers) else headers.items()
    out: dict[str, str] = {}
    for k, v in items:
        lk = k.lower()
        if lk in skip:
            continue
        out[lk] = f"{out[lk]}, {v}" if lk in out and lk != "set-cookie" else v
    return out
