"""The ASGI application: model-API routes observed, everything else forwarded unchanged.

``POST …/chat/completions`` (OpenAI) and ``POST …/messages`` (Anthropic) are observed; the upstream's
answer decides streaming (``text/event-stream``) or not. Anything that goes wrong inside planguard
forwards the traffic unchanged (fail-open); upstream errors pass through with their status and body;
upstream timeouts and connection failures become 504/502 in the API's own error shape; a client that
disconnects cancels the upstream request.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable
from typing import Any, TypeVar

import anyio
import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive

from planguard.config import Config
from planguard.guard import Guard

from . import _json
from .config import ProxyConfig
from .monitor import Monitor, RequestPlan, session_key
from .sse import SSEDecoder, SSEFramingError
from .store import ConversationStore, open_store
from .upstream import build_client, request_headers, response_headers
from .wire import WIRES, Wire

__all__ = ["HEALTH_PATH", "SESSIONS_PATH", "ProxyApp", "create_app"]

logger = logging.getLogger("planguard.proxy")

#: The proxy's own endpoints (never forwarded): health/stats, and a session's phases and metrics.
ADMIN_PREFIX = "/_planguard/"
HEALTH_PATH = "/_planguard/health"
SESSIONS_PATH = "/_planguard/sessions"
_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"]
_T = TypeVar("_T")


class _ClientGone(Exception):
    pass


class _TooLarge(Exception):
    pass


class ProxyApp:
    """Holds the guard, the store, the upstream client and the monitor for one proxy process."""

    def __init__(
        self,
        config: Config,
        proxy: ProxyConfig,
        *,
        guard: Guard | None = None,
        store: ConversationStore | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        sweep_every_s: float | None = None,
    ) -> None:
        self.config = config
        self.proxy = proxy
        idle = config.sessions.idle_timeout_s
        if guard is None:
            # The proxy ends idle conversations itself (only the up-to-date replica records the end).
            sessions = config.sessions.model_copy(update={"idle_timeout_s": None})
            guard = Guard(config.model_copy(update={"sessions": sessions}))
        self.guard = guard
        s = proxy.store
        self.store = (
            store
            if store is not None
            else open_store(
                s.backend, s.url, ttl_s=s.ttl_s, prefix=s.key_prefix, max_conversations=s.max_conversations
            )
        )
        self.monitor = Monitor(guard, self.store, proxy, idle_end_s=idle)
        self._transport = transport
        self._client: httpx.AsyncClient | None = None
        self._sweep_every = (
            sweep_every_s if sweep_every_s is not None else (min(30.0, idle / 4) if idle else None)
        )
        self._sweeper: asyncio.Task[None] | None = None

    # ------------------------------------------------------------------ lifecycle

    @property
    def client(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = build_client(self.proxy, self._transport)
        return self._client

    @contextlib.asynccontextmanager
    async def lifespan(self, _app: Starlette) -> AsyncIterator[None]:
        _ = self.client  # build the pool (and its TLS context, ~0.3 s) now, not on the first request
        if self._sweep_every:
            self._sweeper = asyncio.create_task(self._sweep_loop(self._sweep_every))
        try:
            yield
        finally:
            await self.aclose()

    async def aclose(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
            self._sweeper = None
        with contextlib.suppress(Exception):
            await self.monitor.end_all()
        self.guard.shutdown()
        if self._client is not None:
            await self._client.aclose()
            self._client = None
        with contextlib.suppress(Exception):
            await self.store.close()

    async def _sweep_loop(self, every: float) -> None:
        while True:
            await asyncio.sleep(every)
            try:
                await self.monitor.sweep()
            except Exception as exc:
                self.guard.errors.record("proxy.sweep", exc)

    # ------------------------------------------------------------------ routing

    async def handle(self, request: Request) -> Response:
        path = request.url.path
        if path.startswith(ADMIN_PREFIX):
            return await self._admin(request, path)
        wire = _wire_for(request.method, path)
        try:
            body = await _read_body(request, self.proxy.max_body_bytes)
        except _TooLarge:
            w = wire or WIRES["openai"]
            msg = f"request body larger than {self.proxy.max_body_bytes} bytes"
            return JSONResponse(w.error_body(msg, "request_too_large"), status_code=413)
        url = self.proxy.upstream_for(wire.name if wire else _api_of(request)) + path
        if request.url.query:
            url += "?" + request.url.query
        headers = request_headers(
            request.headers.items(), observed=wire is not None, drop=(self.proxy.session_header,)
        )
        plan: RequestPlan | None = None
        send = body
        if wire is not None:
            plan, send = await self._on_request(wire, request, body)
        upstream_req = self.client.build_request(request.method, url, headers=headers, content=send)
        w = wire or WIRES["openai"]
        try:
            resp = await _unless_disconnected(request.receive, self.client.send(upstream_req, stream=True))
        except _ClientGone:
            return Response(status_code=499)
        except httpx.TimeoutException:
            return JSONResponse(w.error_body("upstream timed out", "timeout_error"), status_code=504)
        except httpx.HTTPError as exc:
            return JSONResponse(
                w.error_body(f"upstream unreachable: {type(exc).__name__}", "api_error"), status_code=502
            )
        if wire is None or plan is None or resp.status_code >= 300:
            return self._passthrough(resp, wire)
        if "text/event-stream" in resp.headers.get("content-type", ""):
            return StreamingResponse(
                self._stream(wire, plan, resp),
                status_code=resp.status_code,
                headers=response_headers(resp.headers, decoded=True),
            )
        try:
            content = await _unless_disconnected(request.receive, resp.aread())
        except _ClientGone:
            return Response(status_code=499)
        except httpx.TimeoutException:
            return JSONResponse(w.error_body("upstream timed out", "timeout_error"), status_code=504)
        except httpx.HTTPError as exc:
            return JSONResponse(
                w.error_body(f"upstream failed: {type(exc).__name__}", "api_error"), status_code=502
            )
        finally:
            await resp.aclose()
        content = await self._on_response_body(wire, plan, content)
        return Response(
            content, status_code=resp.status_code, headers=response_headers(resp.headers, decoded=True)
        )

    async def _admin(self, request: Request, path: str) -> Response:
        if request.method != "GET":
            return JSONResponse({"error": "method not allowed"}, status_code=405)
        if path == HEALTH_PATH:
            return JSONResponse(self.monitor.stats())
        if path.startswith(SESSIONS_PATH + "/"):
            summary = await self.monitor.summary(path[len(SESSIONS_PATH) + 1 :])
            if summary is None:
                return JSONResponse({"error": "no such session"}, status_code=404)
            return JSONResponse(summary)
        return JSONResponse({"error": "not found"}, status_code=404)

    # ------------------------------------------------------------------ observed traffic

    async def _on_request(
        self, wire: Wire, request: Request, body: bytes
    ) -> tuple[RequestPlan | None, bytes]:
        try:
            obj = _json.loads(body)
        except ValueError:
            return None, body  # not JSON: the upstream answers with its own error
        if not isinstance(obj, dict):
            return None, body
        try:
            sid = request.headers.get(self.proxy.session_header) or session_key(wire, obj)
            if not sid:
                return None, body
            plan = await self.monitor.on_request(wire, obj, sid)
            return plan, (_json.dumps(obj) if plan.body_changed else body)
        except Exception as exc:
            self.monitor._failed("proxy.request", exc)
            return None, body

    async def _on_response_body(self, wire: Wire, plan: RequestPlan, content: bytes) -> bytes:
        pending: list[dict[str, Any]] = []
        conv = plan.conversation
        try:
            obj = _json.loads(content)
            if not isinstance(obj, dict):
                return content
            calls = wire.response_calls(obj)
            denied: dict[str, str] = {}
            for call in calls:
                msg = self.monitor.decide(conv, call, pending)
                if msg is not None:
                    denied[call.id] = msg
            changed = False
            if denied:
                wire.rewrite_response(obj, denied)
                changed = True
            if not calls:
                for block, call in self.monitor.text_calls(wire.response_text(obj), plan.n_messages):
                    msg = self.monitor.decide(conv, call, pending, text_index=plan.n_messages)
                    if msg is not None:
                        changed = wire.replace_text(obj, block, msg) or changed
            return _json.dumps(obj) if changed else content
        except ValueError:
            return content  # not JSON: the upstream's own answer, unchanged
        except Exception as exc:
            self.monitor._failed("proxy.response", exc)
            return content
        finally:
            await self.monitor.on_response_end(conv, pending)

    async def _stream(self, wire: Wire, plan: RequestPlan, resp: httpx.Response) -> AsyncIterator[bytes]:
        conv = plan.conversation
        pending: list[dict[str, Any]] = []
        monitor = self.monitor
        translator = wire.stream(
            lambda call: monitor.decide(conv, call, pending), self.proxy.gate == "rewrite"
        )
        decoder = SSEDecoder()
        observing = True
        try:
            try:
                # Identity was asked for; raw bytes skip httpx's decoder unless the upstream encoded anyway.
                chunks = resp.aiter_bytes() if resp.headers.get("content-encoding") else resp.aiter_raw()
                async for chunk in chunks:
                    if not observing:
                        yield chunk
                        continue
                    try:
                        events = decoder.feed(chunk)
                    except SSEFramingError as exc:
                        observing = False
                        monitor._failed("proxy.sse", exc)
                        yield b"".join([*translator.abandon(), decoder.take_rest()])
                        continue
                    out: list[bytes] = []
                    for ev in events:
                        out.extend(translator.feed(ev))
                    if translator.error is not None:
                        observing = False
                        monitor._failed("proxy.stream", translator.error)
                    if out:
                        yield b"".join(out)
            except httpx.HTTPError as exc:
                tail = translator.finish() if observing else []
                kind = "timeout_error" if isinstance(exc, httpx.TimeoutException) else "api_error"
                yield b"".join(
                    [*tail, wire.stream_error(f"upstream stream failed: {type(exc).__name__}", kind)]
                )
                return
            if observing:
                out = translator.finish()
                rest = decoder.take_rest()
                if out or rest:
                    yield b"".join([*out, rest])
                if not translator.calls and translator.error is None:
                    for _block, call in monitor.text_calls(translator.text, plan.n_messages):
                        monitor.decide(conv, call, pending, text_index=plan.n_messages, can_rewrite=False)
        finally:
            with anyio.CancelScope(shield=True):
                await resp.aclose()
                await monitor.on_response_end(conv, pending)

    def _passthrough(self, resp: httpx.Response, wire: Wire | None) -> Response:
        async def body() -> AsyncIterator[bytes]:
            try:
                async for chunk in resp.aiter_raw():
                    yield chunk
            except httpx.HTTPError as exc:
                logger.debug("upstream body failed mid-way: %s", type(exc).__name__)
            finally:
                with anyio.CancelScope(shield=True):
                    await resp.aclose()

        return StreamingResponse(
            body(), status_code=resp.status_code, headers=response_headers(resp.headers, decoded=False)
        )


def create_app(config: Config | None = None, proxy: ProxyConfig | None = None, **kw: Any) -> Starlette:
    """The proxy as an ASGI app (``app.state.proxy`` is the ``ProxyApp``)."""
    from planguard.config import default_config

    p = ProxyApp(config if config is not None else default_config(), proxy or ProxyConfig(), **kw)
    app = Starlette(routes=[Route("/{path:path}", p.handle, methods=_METHODS)], lifespan=p.lifespan)
    app.state.proxy = p
    return app


def _api_of(request: Request) -> str:
    """Which API an unobserved request is for, so its credentials only ever go to that API's upstream."""
    h = request.headers
    return "anthropic" if "anthropic-version" in h or "x-api-key" in h else "openai"


def _wire_for(method: str, path: str) -> Wire | None:
    if method != "POST":
        return None
    p = path.rstrip("/")
    if p.endswith("/chat/completions"):
        return WIRES["openai"]
    if p.endswith("/v1/messages"):
        return WIRES["anthropic"]
    return None


async def _read_body(request: Request, limit: int) -> bytes:
    cl = request.headers.get("content-length")
    if cl is not None and cl.isdigit() and int(cl) > limit:
        raise _TooLarge
    parts: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _TooLarge
        parts.append(chunk)
    return b"".join(parts)


async def _wait_disconnect(receive: Receive) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return


async def _unless_disconnected(receive: Receive, work: Awaitable[_T]) -> _T:
    """``work``'s result, or ``_ClientGone`` (with ``work`` cancelled) if the client disconnects first."""
    task: asyncio.Future[_T] = asyncio.ensure_future(work)
    watcher: asyncio.Future[Any] = asyncio.ensure_future(_wait_disconnect(receive))
    try:
        await asyncio.wait([task, watcher], return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        task.cancel()
        watcher.cancel()
        raise
    if task.done():
        watcher.cancel()
        return task.result()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task
    raise _ClientGone
