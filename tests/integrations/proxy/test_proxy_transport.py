"""The proxy's upstream transport (asyncio + httptools) against real servers on 127.0.0.1: the fake model
API (same answers as httpx's own transport, byte for byte), scripted raw HTTP/1.1 servers for the edge
cases (framing, informational responses, early close, stalls), TLS with a throwaway certificate, pool
limits, keep-alive expiry and cancellation."""

from __future__ import annotations

import asyncio
import json
import shutil
import ssl
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from planguard_proxy.transport import HIGH_WATER, UpstreamBody, UpstreamTransport
from proxy_fakes import FakeUpstream, Reply, ServerThread

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
BODY = {"model": "m", "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]}


def run(coro: Awaitable[Any]) -> Any:
    async def main() -> Any:
        return await coro

    return asyncio.run(main())


async def _read_request(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    return head, await reader.readexactly(length) if length else b""


class RawServer:
    """A scripted HTTP/1.1 server: ``handler(reader, writer)`` per connection; counts connections."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.connections = 0
        self.closed = asyncio.Event()
        self.server: asyncio.Server | None = None

    async def __aenter__(self) -> RawServer:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.connections += 1
            try:
                await self.handler(reader, writer)
            except (ConnectionError, asyncio.IncompleteReadError):
                pass
            finally:
                writer.close()
                self.closed.set()

        self.server = await asyncio.start_server(serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"


def _request(url: str, body: bytes = b"{}", method: str = "POST", **timeouts: float) -> httpx.Request:
    t = {"connect": 5.0, "read": 5.0, "write": 5.0, "pool": 5.0, **timeouts}
    return httpx.Request(
        method, url, content=body, headers={"content-type": "application/json"}, extensions={"timeout": t}
    )


async def _fetch(t: httpx.AsyncBaseTransport, req: httpx.Request) -> httpx.Response:
    resp = await t.handle_async_request(req)
    await resp.aread()
    await resp.aclose()
    return resp


# ---------------------------------------------------------------------- against the fake model API


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_same_answers_as_httpx_default_transport(api: str, stream: bool) -> None:
    reply = Reply(text="hello", tool_calls=[("bash", {"command": "ls -la"})], headers={"x-extra": "1"})
    path = "/v1/chat/completions" if api == "openai" else "/v1/messages"
    with ServerThread(FakeUpstream(lambda w, b: reply).app) as up:

        async def go() -> list[tuple[int, list[tuple[bytes, bytes]], bytes]]:
            out = []
            for t in (UpstreamTransport(), httpx.AsyncHTTPTransport()):
                async with httpx.AsyncClient(transport=t) as client:
                    for _ in range(3):  # the second and third reuse the connection
                        r = await client.post(up.url + path, json={**BODY, "stream": stream})
                        # Ids and timestamps differ per answer, and with them the length.
                        assert int(r.headers.get("content-length", len(r.content))) == len(r.content)
                        skip = (b"date", b"server", b"content-length")
                        headers = [(k.lower(), v) for k, v in r.headers.raw if k.lower() not in skip]
                        out.append((r.status_code, headers, _normalize(r.content)))
            return out

        results = run(go())
    assert all(r[0] == 200 for r in results)
    ours, theirs = results[:3], results[3:]
    assert ours == theirs


def _normalize(body: bytes) -> bytes:
    # The fake numbers ids and timestamps per answer: blank them so answers can be compared.
    import re

    return re.sub(rb'"(id|created)": ?"?[\w-]+"?', b"", body).replace(b"toolu_", b"").replace(b"call_", b"")


def test_keep_alive_reuses_one_connection_and_expiry_closes_it() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            _head, body = await _read_request(reader)
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body))
            await writer.drain()

    async def go() -> None:
        async with RawServer(handler) as srv:
            t = UpstreamTransport(keepalive_expiry=0.3)
            for i in range(5):
                r = await _fetch(t, _request(srv.url, b"x%d" % i))
                assert r.content == b"x%d" % i
            assert srv.connections == 1 and t.open_connections == 1 and t.idle_connections == 1
            await asyncio.sleep(0.6)  # idle past the expiry: closed by the pool, not by the server
            assert t.open_connections == 0 and t.idle_connections == 0
            assert (await _fetch(t, _request(srv.url, b"again"))).content == b"again"
            assert srv.connections == 2
            await t.aclose()

    run(go())


@pytest.mark.parametrize(
    "answer",
    [
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello world",
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\ncontent-length: 11\r\n\r\nhello world",
        b"HTTP/1.1 103 Early Hints\r\nlink: </a>\r\n\r\n"
        b"HTTP/1.1 200 OK\r\ncontent-length: 11\r\n\r\nhello world",
    ],
)
def test_response_framings(answer: bytes) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        for i in range(0, len(answer), 7):  # a few bytes at a time: framing must not depend on reads
            writer.write(answer[i : i + 7])
            await writer.drain()
            await asyncio.sleep(0.001)

    async def go() -> None:
        async with RawServer(handler) as srv:
            t = UpstreamTransport()
            r = await _fetch(t, _request(srv.url))
            assert (r.status_code, r.content) == (200, b"hello world")
            assert "link" not in r.headers  # the informational response's headers are not the answer's
            await t.aclose()

    run(go())


def test_body_delimited_by_close_and_no_reuse() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\nuntil the end")
        await writer.drain()
        writer.close()

    async def go() -> None:
        async with RawServer(handler) as srv:
            t = UpstreamTransport()
            r = await _fetch(t, _request(srv.url))
            assert r.content == b"until the end"
            await asyncio.sleep(0.05)
            assert t.idle_connections == 0 and t.open_connections == 0
            await t.aclose()

    run(go())


def test_connection_closed_mid_body_is_a_protocol_error() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nonly a part")
        await writer.drain()

    async def go() -> None:
        async with RawServer(handler) as srv:
            t = UpstreamTransport()
            resp = await t.handle_async_request(_request(srv.url))
            with pytest.raises(httpx.RemoteProtocolError):
                await resp.aread()
            await resp.aclose()
            assert t.open_connections == 0
            await t.aclose()

    run(go())


def test_closed_before_answering_and_malformed_answers() -> None:
    answers = iter([b"", b"this is not http\r\n\r\n"])

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        writer.write(next(answers))
        await writer.drain()

    async def go() -> None:
        async with RawServer(handler) as srv:
            t = UpstreamTransport()
            for _ in range(2):
                with pytest.raises(httpx.RemoteProtocolError):
                    await t.handle_async_request(_request(srv.url))
            assert t.open_connections == 0
            await t.aclose()

    run(go())


def test_read_timeouts_before_and_during_the_body() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head, _ = await _read_request(reader)
        if b"/mid" in head:
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc")
            await writer.drain()
        await asyncio.sleep(5)

    async def go() -> None:
        async with RawServer(handler) as srv:
            t = UpstreamTransport()
            with pytest.raises(httpx.ReadTimeout):
                await t.handle_async_request(_request(srv.url + "/head", read=0.2))
            resp = await t.handle_async_request(_request(srv.url + "/mid", read=0.2))
            with pytest.raises(httpx.ReadTimeout):
                await resp.aread()
            await resp.aclose()
            assert t.open_connections == 0  # a timed-out connection is never reused
            await t.aclose()

    run(go())


def test_connect_errors() -> None:
    async def go() -> None:
        t = UpstreamTransport()
        with pytest.raises(httpx.ConnectError):
            await t.handle_async_request(_request("http://127.0.0.1:1/x"))
        assert t.open_connections == 0
        await t.aclose()

    run(go())


def test_pool_limit_queues_requests_and_times_out() -> None:
    release = asyncio.Event()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            await _read_request(reader)
            await release.wait()
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
            await writer.drain()

    async def go() -> None:
        async with RawServer(handler) as srv:
            t = UpstreamTransport(max_connections=1)
            first = asyncio.ensure_future(_fetch(t, _request(srv.url)))
            await asyncio.sleep(0.05)
            with pytest.raises(httpx.PoolTimeout):
                await t.handle_async_request(_request(srv.url, pool=0.1))
            second = asyncio.ensure_future(_fetch(t, _request(srv.url)))
            await asyncio.sleep(0.05)
            release.set()
            assert (await first).content == b"ok" and (await second).content == b"ok"
            assert srv.connections == 1  # the queued request took the connection the first released
            await t.aclose()

    run(go())


def test_cancelling_a_request_closes_its_connection() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        await reader.read()  # until the client closes

    async def go() -> None:
        async with RawServer(handler) as srv:
            t = UpstreamTransport()
            task = asyncio.ensure_future(t.handle_async_request(_request(srv.url)))
            await asyncio.sleep(0.1)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await asyncio.wait_for(srv.closed.wait(), 2)  # the upstream saw the request abandoned
            assert t.open_connections == 0
            await t.aclose()

    run(go())


def test_large_bodies_both_ways_with_backpressure() -> None:
    big = bytes(range(256)) * (4 * HIGH_WATER // 256)

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            _head, body = await _read_request(reader)
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % len(body))
            for i in range(0, len(body), 65536):
                writer.write(body[i : i + 65536])
                await writer.drain()

    async def go() -> None:
        async with RawServer(handler) as srv:
            t = UpstreamTransport()
            resp = await t.handle_async_request(_request(srv.url, big))
            assert isinstance(resp.stream, UpstreamBody)
            parts = []
            async for chunk in resp.stream:
                parts.append(chunk)
                await asyncio.sleep(0.005)  # a slow reader: the transport pauses the socket meanwhile
            assert b"".join(parts) == big
            assert resp.stream.at_end()
            await resp.aclose()
            assert t.idle_connections == 1
            await t.aclose()

    run(go())


def test_head_requests_go_to_the_fallback_transport() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 1234\r\n\r\n")  # HEAD: a length, no body
        await writer.drain()
        await asyncio.sleep(0.5)

    async def go() -> None:
        async with RawServer(handler) as srv:
            t = UpstreamTransport()
            r = await _fetch(t, _request(srv.url, b"", method="HEAD"))
            assert r.status_code == 200 and r.headers["content-length"] == "1234" and r.content == b""
            await t.aclose()

    run(go())


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
def test_tls(tmp_path: Path) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=DNS:localhost",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(cert, key)

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            _head, body = await _read_request(reader)
            answer = json.dumps({"echo": body.decode()}).encode()
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n%s" % (len(answer), answer))
            await writer.drain()

    async def go() -> None:
        server = await asyncio.start_server(handler, "127.0.0.1", 0, ssl=server_ctx)
        port = server.sockets[0].getsockname()[1]
        try:
            trusting = UpstreamTransport(ssl_context=ssl.create_default_context(cafile=str(cert)))
            for i in range(2):
                r = await _fetch(trusting, _request(f"https://localhost:{port}/v1", b"hi%d" % i))
                assert r.json() == {"echo": f"hi{i}"}
            assert trusting.open_connections == 1
            await trusting.aclose()
            default = UpstreamTransport()  # the system's trust store: a self-signed certificate fails
            with pytest.raises(httpx.ConnectError):
                await default.handle_async_request(_request(f"https://localhost:{port}/v1"))
            await default.aclose()
        finally:
            server.close()

    run(go())
