"""The upstream connection pool: HTTP/1.1 on asyncio protocols, parsed by httptools, as an httpx transport.

Why not httpx's default transport: httpcore drives h11 (pure Python) over anyio streams, with a cancel scope
per socket operation; on a 2-CPU machine that is about 1 ms of CPU per request — more than everything else
the proxy does together, and most of its added latency. This transport does the same job for the requests a
model-API proxy sends (one request per connection at a time, keep-alive, TLS, the four httpx timeouts, pool
limits) with llhttp's C parser and the event loop's own transports: tens of microseconds per request.

It plugs into ``httpx.AsyncClient(transport=...)``, so the client, its timeouts and its exceptions are
unchanged. Requests it is not meant for (``HEAD``, ``CONNECT``, protocol upgrades, schemes other than
http/https) go to ``fallback`` (httpx's own transport); proxies from the environment are mounted by the
client and never reach it.

Behaviour kept from httpcore: a request is sent once (never retried); an idle connection is closed after
``keepalive_expiry`` seconds (keep that below the upstream's keep-alive, so a request never races the
upstream closing it); a response read is cancelled by closing its connection, so a client that goes away
cancels the upstream request; a response body that was not read to its end is not reused.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections import deque
from typing import Any, cast

import httptools
import httpx

__all__ = ["UpstreamBody", "UpstreamTransport"]

#: Response bytes buffered before reading from the socket pauses (backpressure from a slow client).
HIGH_WATER = 256 * 1024
#: Request bodies up to this size leave in the same write as the headers: one wake-up of the upstream.
COALESCE_BYTES = 256 * 1024

_Origin = tuple[bytes, str, int]


def _expire(fut: asyncio.Future[bool]) -> None:
    if not fut.done():
        fut.set_result(False)


class _Conn(asyncio.Protocol):
    """One connection to the upstream; the response in progress is parsed as bytes arrive."""

    def __init__(self, pool: UpstreamTransport, origin: _Origin) -> None:
        self.pool = pool
        self.origin = origin
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.counted = False  # counts towards the pool's open connections
        self.closed = False
        self.idle_timer: asyncio.TimerHandle | None = None
        self.write_paused = False
        self.drain: asyncio.Future[bool] | None = None
        self.waiter: asyncio.Future[bool] | None = None
        self._reset()

    def _reset(self) -> None:
        self.active = False  # a request is in flight on this connection
        self.status = 0
        self.headers: list[tuple[bytes, bytes]] = []
        self.headers_done = False
        self.informational = False
        self.until_eof = False  # body delimited by the upstream closing the connection
        self.body: list[bytes] = []
        self.buffered = 0
        self.read_paused = False
        self.complete = False
        self.keep_alive = False
        self.error: Exception | None = None

    def begin(self) -> None:
        self._reset()
        self.active = True

    # ------------------------------------------------------------------ asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports implement asyncio.Transport without subclassing it.
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        if not self.active or self.complete:
            # Bytes nobody asked for (e.g. a 408 an upstream sends before closing an idle connection): the
            # connection is out of step with its requests and must not be reused.
            self.keep_alive = False
            self.close()
            return
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._fail(httpx.RemoteProtocolError("upstream switched protocols unasked"))
        except httptools.HttpParserError as exc:
            if self.complete:  # the response was whole; bytes after it only spoil the connection
                self.keep_alive = False
                self.close()
            else:
                self._fail(httpx.RemoteProtocolError(f"malformed upstream response: {exc}"))

    def eof_received(self) -> bool | None:
        return None  # close the transport: HTTP/1.1 has no use for a half-open connection

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.active and not self.complete and self.error is None:
            if self.headers_done and self.until_eof and exc is None:
                self.complete = True
                self.keep_alive = False
            elif self.headers_done:
                self.error = httpx.RemoteProtocolError("upstream closed the connection mid-response")
            else:
                self.error = httpx.RemoteProtocolError("Server disconnected without sending a response.")
        self._wake()
        if self.drain is not None and not self.drain.done():
            self.drain.set_result(True)
        self.pool._lost(self)

    def pause_writing(self) -> None:
        self.write_paused = True

    def resume_writing(self) -> None:
        self.write_paused = False
        if self.drain is not None and not self.drain.done():
            self.drain.set_result(True)

    # ------------------------------------------------------------------ httptools callbacks

    def on_message_begin(self) -> None:
        if self.complete:
            raise RuntimeError("a second response on one request")

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        status = self.parser.get_status_code()
        if status < 200:  # 100 Continue / 103 Early Hints: the final response follows
            self.informational = True
            self.headers = []
            return
        self.status = status
        self.headers_done = True
        if status not in (204, 304):
            framed = False
            for name, value in self.headers:
                n = name.lower()
                if n == b"content-length" or (n == b"transfer-encoding" and b"chunked" in value.lower()):
                    framed = True
                    break
            self.until_eof = not framed
        self._wake()

    def on_body(self, body: bytes) -> None:
        self.body.append(body)
        self.buffered += len(body)
        if self.buffered > HIGH_WATER and not self.read_paused and self.transport is not None:
            self.read_paused = True
            self.transport.pause_reading()
        self._wake()

    def on_message_complete(self) -> None:
        if self.informational:
            self.informational = False
            return
        self.complete = True
        self.keep_alive = self.parser.should_keep_alive()
        self._wake()

    # ------------------------------------------------------------------ the request side

    def _fail(self, exc: Exception) -> None:
        if self.error is None:
            self.error = exc
        self.close()
        self._wake()

    def _wake(self) -> None:
        w = self.waiter
        if w is not None and not w.done():
            w.set_result(True)

    async def wait(self, timeout: float | None) -> bool:
        """Until the parser has news (True) or ``timeout`` passes (False)."""
        loop = self.pool._loop()
        fut: asyncio.Future[bool] = loop.create_future()
        self.waiter = fut
        handle = loop.call_later(timeout, _expire, fut) if timeout is not None else None
        try:
            return await fut
        finally:
            self.waiter = None
            if handle is not None:
                handle.cancel()

    async def send(self, request: httpx.Request, timeout: float | None) -> None:
        t = self.transport
        if t is None or self.closed or t.is_closing():
            raise httpx.WriteError("upstream connection closed")
        url = request.url
        head = [request.method.encode("ascii"), b" ", url.raw_path, b" HTTP/1.1\r\n"]
        for name, value in request.headers.raw:
            if b"\n" in value or b"\r" in value or b"\n" in name or b"\r" in name:
                raise httpx.LocalProtocolError(f"illegal header {name!r}")
            head += (name, b": ", value, b"\r\n")
        head.append(b"\r\n")
        stream = request.stream
        if isinstance(stream, httpx.ByteStream):
            body = b"".join(stream)  # its one chunk (``request.content`` is unset when built with stream=)
            if len(body) <= COALESCE_BYTES:
                head.append(body)
                t.write(b"".join(head))
            else:
                t.write(b"".join(head))
                t.write(body)
            await self._drained(timeout)
            return
        t.write(b"".join(head))
        chunked = request.headers.get("transfer-encoding", "").lower() == "chunked"
        async for chunk in stream:  # type: ignore[union-attr]
            if chunk:
                t.write(b"%x\r\n%b\r\n" % (len(chunk), chunk) if chunked else chunk)
                await self._drained(timeout)
        if chunked:
            t.write(b"0\r\n\r\n")
        await self._drained(timeout)

    async def _drained(self, timeout: float | None) -> None:
        while self.write_paused and not self.closed:
            loop = self.pool._loop()
            fut: asyncio.Future[bool] = loop.create_future()
            self.drain = fut
            handle = loop.call_later(timeout, _expire, fut) if timeout is not None else None
            try:
                if not await fut:
                    raise httpx.WriteTimeout(f"upstream took more than {timeout} s to accept the request")
            finally:
                self.drain = None
                if handle is not None:
                    handle.cancel()
        if self.closed and self.error is None and not self.headers_done:
            raise httpx.WriteError("upstream closed the connection while the request was sent")

    async def response_head(self, timeout: float | None) -> None:
        while not self.headers_done:
            if self.error is not None:
                raise self.error
            if self.closed:
                raise httpx.RemoteProtocolError("Server disconnected without sending a response.")
            if not await self.wait(timeout):
                raise httpx.ReadTimeout(f"upstream sent no response head within {timeout} s")

    def close(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()
        self.pool._forget(self)


class UpstreamBody(httpx.AsyncByteStream):
    """A response body as it arrives: each step yields everything received since the last one.

    An iterator object rather than an async generator: a consumer that stops early leaves nothing for the
    event loop to finalize, and ``at_end`` tells it when the chunk it holds was the last one.
    """

    __slots__ = ("_conn", "_done", "_pool", "_timeout")

    def __init__(self, pool: UpstreamTransport, conn: _Conn, timeout: float | None) -> None:
        self._pool = pool
        self._conn = conn
        self._timeout = timeout
        self._done = False

    def __aiter__(self) -> UpstreamBody:
        return self

    async def __anext__(self) -> bytes:
        conn = self._conn
        while True:
            if self._done:  # closed early: the connection may serve another request by now
                raise StopAsyncIteration
            if conn.body:
                data = conn.body[0] if len(conn.body) == 1 else b"".join(conn.body)
                conn.body.clear()
                conn.buffered = 0
                if conn.read_paused and conn.transport is not None:
                    conn.read_paused = False
                    conn.transport.resume_reading()
                return data
            if conn.complete:
                self._finish()
                raise StopAsyncIteration
            if conn.error is not None:
                self._finish()
                raise conn.error
            if conn.closed:
                self._finish()
                raise httpx.RemoteProtocolError("upstream closed the connection mid-response")
            if not await conn.wait(self._timeout):
                self._finish()
                raise httpx.ReadTimeout(f"upstream sent nothing for {self._timeout} s")

    def at_end(self) -> bool:
        """The whole body has arrived and been taken."""
        return self._done or (self._conn.complete and not self._conn.body)

    async def aclose(self) -> None:
        self._finish()

    def _finish(self) -> None:
        if not self._done:
            self._done = True
            self._pool._release(self._conn)


class UpstreamTransport(httpx.AsyncBaseTransport):
    """A pool of HTTP/1.1 connections per origin (see the module docstring)."""

    def __init__(
        self,
        *,
        ssl_context: ssl.SSLContext | None = None,
        max_connections: int = 512,
        max_keepalive: int = 128,
        keepalive_expiry: float | None = 4.0,
        fallback: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._ssl = ssl_context
        self._max = max_connections
        self._max_idle = max_keepalive
        self._expiry = keepalive_expiry
        self._fallback = fallback
        self._idle: dict[_Origin, list[_Conn]] = {}
        self._n_idle = 0
        self._n_open = 0  # connections open or being opened
        self._conns: set[_Conn] = set()
        self._waiters: deque[asyncio.Future[bool]] = deque()
        self._closing = False
        self._ev_loop: asyncio.AbstractEventLoop | None = None

    def _loop(self) -> asyncio.AbstractEventLoop:
        if self._ev_loop is None:
            self._ev_loop = asyncio.get_running_loop()
        return self._ev_loop

    @property
    def open_connections(self) -> int:
        return self._n_open

    @property
    def idle_connections(self) -> int:
        return self._n_idle

    # ------------------------------------------------------------------ httpx.AsyncBaseTransport

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self._closing:
            raise httpx.ConnectError("the upstream transport is closed")
        url = request.url
        scheme = url.raw_scheme
        if (
            request.method in ("HEAD", "CONNECT")
            or scheme not in (b"http", b"https")
            or "upgrade" in request.headers
        ):
            return await self._other(request)
        timeouts: dict[str, Any] = request.extensions.get("timeout") or {}
        origin = (scheme, url.host, url.port or (443 if scheme == b"https" else 80))
        conn = await self._acquire(origin, timeouts.get("connect"), timeouts.get("pool"))
        try:
            await conn.send(request, timeouts.get("write"))
            await conn.response_head(timeouts.get("read"))
        except BaseException:
            conn.keep_alive = False
            self._release(conn)
            raise
        return httpx.Response(
            conn.status, headers=conn.headers, stream=UpstreamBody(self, conn, timeouts.get("read"))
        )

    async def aclose(self) -> None:
        self._closing = True
        for conn in list(self._conns):
            conn.close()
        self._idle.clear()
        self._n_idle = 0
        while self._waiters:
            w = self._waiters.popleft()
            if not w.done():
                w.set_result(True)
        if self._fallback is not None:
            await self._fallback.aclose()

    async def _other(self, request: httpx.Request) -> httpx.Response:
        if self._fallback is None:
            self._fallback = httpx.AsyncHTTPTransport(
                verify=self._ssl if self._ssl is not None else True,
                limits=httpx.Limits(max_connections=8, keepalive_expiry=self._expiry),
            )
        return await self._fallback.handle_async_request(request)

    # ------------------------------------------------------------------ the pool

    async def _acquire(self, origin: _Origin, connect: float | None, pool: float | None) -> _Conn:
        while True:
            stack = self._idle.get(origin)
            while stack:
                conn = stack.pop()
                self._n_idle -= 1
                if conn.idle_timer is not None:
                    conn.idle_timer.cancel()
                    conn.idle_timer = None
                t = conn.transport
                if not conn.closed and t is not None and not t.is_closing():
                    conn.begin()
                    return conn
                conn.close()
            if self._n_open < self._max:
                conn = await self._connect(origin, connect)
                conn.begin()
                return conn
            if self._n_idle:  # every slot is taken, some by idle connections to other origins
                self._evict_idle()
                continue
            await self._wait_slot(pool)

    async def _connect(self, origin: _Origin, timeout: float | None) -> _Conn:
        scheme, host, port = origin
        loop = self._loop()
        tls = scheme == b"https"
        if tls and self._ssl is None:
            self._ssl = httpx.create_ssl_context()
        self._n_open += 1
        try:
            coro = loop.create_connection(
                lambda: _Conn(self, origin),
                host,
                port,
                ssl=self._ssl if tls else None,
                server_hostname=host if tls else None,
            )
            _t, conn = await (asyncio.wait_for(coro, timeout) if timeout is not None else coro)
        except BaseException as exc:
            self._n_open -= 1
            self._wake_waiter()
            if isinstance(exc, TimeoutError):
                msg = f"connecting to {host}:{port} took more than {timeout} s"
                raise httpx.ConnectTimeout(msg) from None
            if isinstance(exc, OSError):
                raise httpx.ConnectError(f"cannot connect to {host}:{port}: {exc}") from exc
            raise
        conn.counted = True
        if conn.closed:  # lost between connecting and now
            self._forget(conn)
            raise httpx.ConnectError(f"connection to {host}:{port} closed at once")
        self._conns.add(conn)
        return conn

    def _release(self, conn: _Conn) -> None:
        """The request on ``conn`` is over: keep the connection for the next one, or close it."""
        reusable = (
            conn.complete
            and conn.keep_alive
            and conn.error is None
            and not conn.closed
            and not self._closing
            and self._n_idle < self._max_idle
            and not conn.body
        )
        conn.active = False
        if not reusable:
            conn.close()
            return
        self._idle.setdefault(conn.origin, []).append(conn)
        self._n_idle += 1
        if self._expiry is not None:
            conn.idle_timer = self._loop().call_later(self._expiry, self._expire_idle, conn)
        self._wake_waiter()

    def _expire_idle(self, conn: _Conn) -> None:
        conn.idle_timer = None
        self._drop_idle(conn)
        conn.close()

    def _evict_idle(self) -> None:
        for stack in self._idle.values():
            if stack:
                conn = stack.pop(0)  # the longest idle of that origin
                self._n_idle -= 1
                if conn.idle_timer is not None:
                    conn.idle_timer.cancel()
                    conn.idle_timer = None
                conn.close()
                return

    def _drop_idle(self, conn: _Conn) -> None:
        stack = self._idle.get(conn.origin)
        if stack and conn in stack:
            stack.remove(conn)
            self._n_idle -= 1

    def _lost(self, conn: _Conn) -> None:
        if not conn.active:
            self._drop_idle(conn)
            if conn.idle_timer is not None:
                conn.idle_timer.cancel()
                conn.idle_timer = None
        self._forget(conn)

    def _forget(self, conn: _Conn) -> None:
        self._conns.discard(conn)
        if conn.counted:
            conn.counted = False
            self._n_open -= 1
            self._wake_waiter()

    async def _wait_slot(self, timeout: float | None) -> None:
        loop = self._loop()
        fut: asyncio.Future[bool] = loop.create_future()
        self._waiters.append(fut)
        handle = loop.call_later(timeout, _expire, fut) if timeout is not None else None
        try:
            if not await fut:
                raise httpx.PoolTimeout(f"no upstream connection free within {timeout} s")
        finally:
            if handle is not None:
                handle.cancel()
            if not fut.done():
                fut.cancel()
            with contextlib.suppress(ValueError):
                self._waiters.remove(fut)

    def _wake_waiter(self) -> None:
        while self._waiters:
            w = self._waiters.popleft()
            if not w.done():
                w.set_result(True)
                return
