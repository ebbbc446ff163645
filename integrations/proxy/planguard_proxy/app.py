"""The ASGI application: model-API routes observed, everything else forwarded unchanged.

``POST …/chat/completions`` and ``POST …/responses`` (OpenAI) and ``POST …/messages`` (Anthropic) are
observed; the upstream's answer decides streaming (``text/event-stream``) or not. Anything that goes wrong
inside planguard forwards the traffic unchanged (fail-open) — except that the calls of an answer still get
a fail-closed gate's denial (``Guard.failure_decision``), and an answer whose denied calls cannot be
replaced is withheld (502, or an error event ending the stream); upstream errors pass through with their
status and body; upstream timeouts and connection failures become 504/502 in the API's own error shape; a
client that disconnects cancels the upstream request. When every tool call of an answer is denied, the
proxy answers them itself and asks the model again (``gate_retries``).

The app speaks ASGI directly (no framework routing or middleware): every request of an agent crosses it, and
each wrapper layer would cost a few percent of the proxy's added latency per request and per streamed chunk.
What is logged to the store after a response (its tool calls) is written once the client has the response.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, MutableMapping
from types import SimpleNamespace
from typing import Any

import httpx

from planguard.config import Config
from planguard.decisions import Decision
from planguard.guard import Guard
from planguard.policies.gates import Gate

from . import _json
from .config import ProxyConfig
from .monitor import Monitor, Refusal, RequestPlan, session_key
from .sse import SSEDecoder, SSEFramingError
from .store import ConversationStore, open_store
from .transport import UpstreamBody
from .upstream import Upstream, build_client, client_headers, upstream_headers
from .wire import WIRES, ToolCall, Wire

__all__ = ["HEALTH_PATH", "SESSIONS_PATH", "ProxyApp", "create_app"]

logger = logging.getLogger("planguard.proxy")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

#: The proxy's own endpoints (never forwarded): health/stats, and a session's phases and metrics.
ADMIN_PREFIX = "/_planguard/"
HEALTH_PATH = "/_planguard/health"
SESSIONS_PATH = "/_planguard/sessions"
_EVENT_STREAM = b"text/event-stream"
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
_ALLOW = b"GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS"


#: Every tool call of an answer was denied: (the answer's text, its calls, call id → denial as the result).
_Denied = tuple[str, list[ToolCall], dict[str, str]]


class _ClientGone(Exception):
    pass


class _TooLarge(Exception):
    pass


class _Withheld(Exception):
    """Observing an answer failed part-way and a fail-closed gate covers its calls: it is not forwarded."""

    def __init__(self, decision: Decision) -> None:
        super().__init__(decision.message)
        self.decision = decision


#: What the client gets instead of an answer a fail-closed gate withholds (followed by the gate's message).
WITHHELD = "planguard could not check this answer's tool calls and a fail-closed gate covers them"


class ProxyApp:
    """The ASGI app; holds the guard, the store, the upstream client and the monitor of one proxy process.

    ``state.proxy`` is the app itself (the attribute Starlette apps expose, kept for callers of
    ``create_app``)."""

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
        self.state = SimpleNamespace(proxy=self)
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
        self._upstream: Upstream | None = None
        self._sweep_every = (
            sweep_every_s if sweep_every_s is not None else (min(30.0, idle / 4) if idle else None)
        )
        self._sweeper: asyncio.Task[None] | None = None
        self._session_header = proxy.session_header.lower().encode("latin-1")
        self._work_dir_header = proxy.work_dir_header.lower().encode("latin-1")
        t = proxy.timeouts
        self._timeouts = {"connect": t.connect, "read": t.read, "write": t.write, "pool": t.pool}
        self._bases = {w.api: proxy.upstream_for(w.api) for w in WIRES.values()}
        self._hold = proxy.gate == "rewrite"
        # Asking the model again needs a gate to deny a call: without one, streams pass through unbuffered.
        self._gated = self._hold and any(isinstance(p, Gate) for p in guard.pipeline.policies)
        self._urls: dict[tuple[str, bytes, bytes], httpx.URL] = {}

    # ------------------------------------------------------------------ lifecycle

    @property
    def upstream(self) -> Upstream:
        if self._upstream is None:
            self._upstream = build_client(self.proxy, self._transport)
        return self._upstream

    @property
    def client(self) -> httpx.AsyncClient:
        return self.upstream.client

    @contextlib.asynccontextmanager
    async def lifespan(self, _app: object = None) -> AsyncIterator[None]:
        _ = self.upstream  # build the pool (and its TLS context, ~0.3 s) now, not on the first request
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
        if self._upstream is not None:
            await self._upstream.aclose()
            self._upstream = None
        with contextlib.suppress(Exception):
            await self.store.close()

    async def _sweep_loop(self, every: float) -> None:
        while True:
            await asyncio.sleep(every)
            try:
                await self.monitor.sweep()
            except Exception as exc:
                self.guard.errors.record("proxy.sweep", exc)

    # ------------------------------------------------------------------ ASGI

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            await self._http(scope, receive, send)
        elif kind == "lifespan":
            await self._lifespan(receive, send)
        elif kind == "websocket":
            await send({"type": "websocket.close", "code": 1000})

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        await receive()  # lifespan.startup
        ctx = self.lifespan()
        try:
            await ctx.__aenter__()
        except Exception as exc:
            await send({"type": "lifespan.startup.failed", "message": f"{type(exc).__name__}: {exc}"})
            return
        await send({"type": "lifespan.startup.complete"})
        await receive()  # lifespan.shutdown
        try:
            await ctx.__aexit__(None, None, None)
        except Exception as exc:
            await send({"type": "lifespan.shutdown.failed", "message": f"{type(exc).__name__}: {exc}"})
            return
        await send({"type": "lifespan.shutdown.complete"})

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        with _json.policy(self.monitor.json):
            await self._handle(scope, receive, send)

    async def _handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope["path"]
        method: str = scope["method"]
        if path.startswith(ADMIN_PREFIX):
            status, obj = await self._admin(method, path)
            await _send_json(send, status, obj)
            return
        if not path.startswith("/"):
            # ``OPTIONS *`` asks about the server itself: answered here, never forwarded.
            if method == "OPTIONS" and path == "*":
                await send({"type": "http.response.start", "status": 204, "headers": [(b"allow", _ALLOW)]})
                await send({"type": "http.response.body", "body": b""})
            else:
                await _send_json(
                    send, 400, WIRES["openai"].error_body("bad request target", "invalid_request")
                )
            return
        if _escapes(path, scope.get("raw_path")):
            # ``..`` would climb out of the upstream's base path (httpx removes dot segments).
            await _send_json(send, 400, WIRES["openai"].error_body("dot segments in path", "invalid_request"))
            return
        wire = _wire_for(method, path)
        w = wire or WIRES["openai"]
        headers: list[tuple[bytes, bytes]] = scope["headers"]
        try:
            body = await asyncio.wait_for(
                _read_body(receive, headers, self.proxy.max_body_bytes), self.proxy.timeouts.client_body
            )
        except TimeoutError:
            await _send_json(send, 408, w.error_body("request body not received in time", "timeout_error"))
            return
        except _TooLarge:
            msg = f"request body larger than {self.proxy.max_body_bytes} bytes"
            await _send_json(send, 413, w.error_body(msg, "request_too_large"))
            return
        except _ClientGone:
            return
        url = self._url(
            wire.api if wire else _api_of(headers),
            scope.get("raw_path") or path.encode("utf-8"),
            scope.get("query_string") or b"",
        )
        plan: RequestPlan | None = None
        out = body
        if wire is not None:
            try:
                plan, out = await self._on_request(wire, headers, body)
            except _json.NonStandardJSON:
                msg = "request body is non-standard JSON (NaN, infinity or a lone surrogate), refused"
                await _send_json(send, 400, w.error_body(msg, "invalid_request_error"))
                return
        own = (self._session_header, self._work_dir_header)
        fwd = upstream_headers(headers, observed=wire is not None, drop=own)
        fwd.append((b"host", url.netloc))
        sized = bool(out) or method in _BODY_METHODS or any(k == b"content-length" for k, _v in headers)

        def request_for(content: bytes) -> httpx.Request:
            # ``stream=`` rather than ``content=``: the host and length are set here, and httpx then skips
            # re-deriving them (a good part of building a request).
            h = [*fwd, (b"content-length", b"%d" % len(content))] if sized else fwd
            return httpx.Request(
                method,
                url,
                headers=h,
                stream=httpx.ByteStream(content),
                extensions={"timeout": self._timeouts},
            )

        watch = _DisconnectWatch(receive, send)
        try:
            await self._exchange(watch.send, wire, w, plan, request_for, out)
        except asyncio.CancelledError:
            if not watch.gone:
                raise
            # The client went away: the upstream request was cancelled with this task; nobody to answer.
            watch.task.uncancel()
        finally:
            watch.stop()

    def _url(self, api: str, target: bytes, query: bytes) -> httpx.URL:
        """The upstream URL of a request. Agents call the same few endpoints over and over, and parsing a
        URL is a good part of building an httpx request: parsed ones are kept."""
        key = (api, target, query)
        url = self._urls.get(key)
        if url is None:
            if len(self._urls) >= 1024:
                self._urls.clear()
            text = self._bases[api] + target.decode("latin-1")
            url = self._urls[key] = httpx.URL(text + "?" + query.decode("latin-1") if query else text)
        return url

    async def _admin(self, method: str, path: str) -> tuple[int, Any]:
        if method != "GET":
            return 405, {"error": "method not allowed"}
        if path == HEALTH_PATH:
            return 200, self.monitor.stats()
        if path.startswith(SESSIONS_PATH + "/"):
            summary = await self.monitor.summary(path[len(SESSIONS_PATH) + 1 :])
            if summary is None:
                return 404, {"error": "no such session"}
            return 200, summary
        return 404, {"error": "not found"}

    # ------------------------------------------------------------------ one exchange

    async def _exchange(
        self,
        send: Send,
        wire: Wire | None,
        w: Wire,
        plan: RequestPlan | None,
        request_for: Callable[[bytes], httpx.Request],
        content: bytes,
    ) -> None:
        """Send the request upstream and answer the client. When every tool call of the answer is denied
        (gate ``rewrite``), the proxy answers those calls itself, the denial as each one's result, and asks
        the model again, up to ``gate_retries`` times: the agent gets the model's next answer and goes on."""
        rounds = 0
        refused: dict[str, str] = {}  # this client request's denials, by call (see Monitor.decide)
        while True:
            try:
                resp = await self.upstream.send(request_for(content))
            except httpx.TimeoutException:
                await _send_json(send, 504, w.error_body("upstream timed out", "timeout_error"))
                return
            except httpx.HTTPError as exc:
                msg = f"upstream unreachable: {type(exc).__name__}"
                await _send_json(send, 502, w.error_body(msg, "api_error"))
                return
            raw_headers = resp.headers.raw
            if wire is None or plan is None or resp.status_code >= 300:
                await self._passthrough(send, resp, raw_headers)
                return
            retry = (
                self._gated
                and rounds < self.proxy.gate_retries
                and plan.body is not None
                and bool(plan.body.get("tools"))  # a model without tools asks for no calls
            )
            ctype, encoded = _content_info(raw_headers)
            if _EVENT_STREAM in ctype:
                denied = await self._stream(
                    send, wire, plan, resp, raw_headers, encoded, buffer=retry, refused=refused
                )
            else:
                denied = await self._whole(
                    send, wire, w, plan, resp, raw_headers, encoded, retry=retry, refused=refused
                )
            if denied is None:
                return
            assert plan.body is not None
            text, calls, results = denied
            refusal = Refusal(plan.n_messages, text, calls, results)
            wire.answer_calls(plan.body, text, calls, results)
            content = _json.dumps(plan.body, standard=plan.standard)
            rounds += 1
            # Unless the upstream keeps the history (``previous_response_id``), later turns show it again.
            kept = None if plan.body.get("previous_response_id") else refusal
            await self.monitor.on_model_again(plan.conversation, kept)

    async def _whole(
        self,
        send: Send,
        wire: Wire,
        w: Wire,
        plan: RequestPlan,
        resp: httpx.Response,
        raw_headers: list[tuple[bytes, bytes]],
        encoded: bool,
        *,
        retry: bool,
        refused: dict[str, str],
    ) -> _Denied | None:
        """A whole (not streamed) answer; with ``retry``, the calls to answer when all were denied (and
        nothing is sent)."""
        try:
            content = await _read_all(resp, encoded)
        except httpx.TimeoutException:
            await _send_json(send, 504, w.error_body("upstream timed out", "timeout_error"))
            return None
        except httpx.HTTPError as exc:
            msg = f"upstream failed: {type(exc).__name__}"
            await _send_json(send, 502, w.error_body(msg, "api_error"))
            return None
        finally:
            await resp.aclose()
        pending: list[dict[str, Any]] = []
        try:
            try:
                content, denied = await self._on_response_body(wire, plan, content, pending, retry, refused)
            except _Withheld as withheld:
                await self.monitor.on_response_end(plan.conversation, pending)
                await _send_json(send, 502, w.error_body(_withheld_text(withheld.decision), "api_error"))
                return None
            if denied is not None:
                return denied
            # The answer's tool calls are logged before the client has it: its next request (carrying their
            # results) may reach another replica at once, which must know the calls.
            await self.monitor.on_response_end(plan.conversation, pending)
            await send(
                {
                    "type": "http.response.start",
                    "status": resp.status_code,
                    "headers": client_headers(raw_headers, decoded=True, length=len(content)),
                }
            )
            await send({"type": "http.response.body", "body": content})
            return None
        finally:
            await self.monitor.on_response_end(plan.conversation, pending)  # (an answer not sent: its calls)

    # ------------------------------------------------------------------ observed traffic

    async def _on_request(
        self, wire: Wire, headers: list[tuple[bytes, bytes]], body: bytes
    ) -> tuple[RequestPlan | None, bytes]:
        try:
            obj, standard = _json.read(body)
        except _json.NonStandardJSON:
            raise
        except ValueError:
            return None, body  # not JSON: the upstream answers with its own error
        if not isinstance(obj, dict):
            return None, body
        try:
            prev = obj.get("previous_response_id")
            sid = (
                _get(headers, self._session_header)
                or (await self.monitor.conversation_of_response(prev) if isinstance(prev, str) else None)
                or session_key(wire, obj)
            )
            if not sid:
                return None, body
            plan = await self.monitor.on_request(wire, obj, sid, _get(headers, self._work_dir_header))
            plan.standard = standard
            return plan, (_json.dumps(obj, standard=standard) if plan.body_changed else body)
        except Exception as exc:
            self.monitor._failed("proxy.request", exc)
            if self.guard.fails_closed:
                # The answer is still read: its calls meet the fail-closed gates (forwarded unchanged).
                return self.monitor.failed_plan(wire, obj), body
            return None, body

    async def _on_response_body(
        self,
        wire: Wire,
        plan: RequestPlan,
        content: bytes,
        pending: list[dict[str, Any]],
        retry: bool,
        refused: dict[str, str],
    ) -> tuple[bytes, _Denied | None]:
        """The answer for the client, or (with ``retry``) the calls to answer when all were denied."""
        conv = plan.conversation
        try:
            obj, standard = _json.read(content)
        except ValueError as exc:  # not JSON, or non-standard JSON refused: unread
            self._unobserved(exc)
            return content, None
        if not isinstance(obj, dict):
            self._unobserved(ValueError("answer is not a JSON object"))
            return content, None
        rid = obj.get("id")
        if isinstance(rid, str) and wire.chains:
            # Before the client has the answer: its follow-up may go to another replica at once.
            await self.monitor.remember_response(rid, conv.id)
        seen: list[ToolCall] | None = None  # the answer's calls, once they are known
        try:
            calls = seen = wire.response_calls(obj)
            self.monitor.said(conv, wire.response_text(obj), pending)  # before the calls it leads to
            denied: dict[str, str] = {}
            for call in calls:
                msg = self.monitor.decide(conv, call, pending, refused=refused)
                if msg is not None:
                    denied[call.id] = msg
            if retry and calls and len(denied) == len(calls):
                return content, (wire.response_text(obj), calls, denied)
            changed = False
            if denied:
                wire.rewrite_response(obj, denied)
                changed = True
            if not calls:
                seen = None
                text_calls = self.monitor.text_calls(wire.response_text(obj), plan.n_messages)
                seen = [call for _block, call in text_calls]
                for block, call in text_calls:
                    msg = self.monitor.decide(
                        conv, call, pending, text_index=plan.n_messages, refused=refused
                    )
                    if msg is not None:
                        changed = wire.replace_text(obj, block, msg) or changed
            return (_json.dumps(obj, standard=standard) if changed else content), None
        except Exception as exc:
            self.monitor._failed("proxy.response", exc)
            closed = self.monitor.failure_decision(seen)
            if closed is not None:
                raise _Withheld(closed) from None
            return content, None

    def _unobserved(self, exc: Exception) -> None:
        """An answer planguard could not read: counted, and withheld (``_Withheld``) when a fail-closed gate
        is on — its calls, whatever they are, were not checked. Else it goes to the client unchanged."""
        self.monitor.counters["unobserved_answers"] += 1
        self.monitor._failed("proxy.response.unread", exc)
        closed = self.monitor.failure_decision(None)
        if closed is not None:
            raise _Withheld(closed)

    async def _stream(
        self,
        send: Send,
        wire: Wire,
        plan: RequestPlan,
        resp: httpx.Response,
        raw_headers: list[tuple[bytes, bytes]],
        encoded: bool,
        *,
        buffer: bool = False,
        refused: dict[str, str] | None = None,
    ) -> _Denied | None:
        """Forward an SSE response as it arrives, observing it on the side. Each upstream read leaves in
        one write; the last one carries the end of the response with it.

        ``buffer`` (the model may be asked again): nothing leaves until the upstream stream has ended, so a
        stream whose calls were all denied can be dropped unseen; its calls are then returned instead."""
        conv = plan.conversation
        pending: list[dict[str, Any]] = []
        monitor = self.monitor
        said = 0  # how much of the answer's text has been observed as a turn

        def decide(call: ToolCall) -> str | None:
            nonlocal said
            said = monitor.said(conv, translator.text, pending, said)  # the text before the call first
            return monitor.decide(conv, call, pending, refused=refused)

        translator = wire.stream(
            decide, self._hold, monitor.text is not None or monitor.guard.observes_messages
        )
        decoder = SSEDecoder()
        observing = True
        chunks, at_end = _body_of(resp, encoded)
        start = {
            "type": "http.response.start",
            "status": resp.status_code,
            "headers": client_headers(raw_headers, decoded=True),
        }
        kept: list[bytes] = []  # buffer: everything, until the end

        async def forward(body: bytes) -> None:
            if buffer:
                kept.append(body)
            elif body:
                await send({"type": "http.response.body", "body": body, "more_body": True})

        async def finish(body: bytes) -> None:
            # The answer's tool calls are logged before the client has its end: its next request (carrying
            # their results) may reach another replica at once, which must know the calls.
            await monitor.on_response_end(conv, pending)
            if buffer:
                await send(start)
                body = b"".join([*kept, body])
            await send({"type": "http.response.body", "body": body})

        def given_up() -> bytes | None:
            """The translator gave up (``translator.error``): counted; when a fail-closed gate covers the
            calls it may have held back, the error event that ends the stream instead of them and the rest
            (else None: the rest passes through raw, fail-open)."""
            monitor.counters["unobserved_answers"] += 1
            monitor._failed("proxy.stream", translator.error or RuntimeError("stream translator"))
            closed = monitor.failure_decision(None)
            return None if closed is None else wire.stream_error(_withheld_text(closed), "api_error")

        if not buffer:
            await send(start)
        try:
            tail: list[bytes] = []
            upstream_failed: bytes | None = None  # the error event ending a stream the upstream broke off
            try:
                async for chunk in chunks:
                    if not observing:
                        out = chunk
                    else:
                        try:
                            events = decoder.feed(chunk)
                        except SSEFramingError as exc:
                            observing = False
                            translator.error = exc
                            held = translator.abandon()
                            end = given_up()
                            if end is not None:
                                await finish(end)
                                return None
                            out = b"".join([*held, decoder.take_rest()])
                        else:
                            parts = [b for ev in events for b in translator.feed(ev)]
                            if translator.error is not None:
                                observing = False
                                end = given_up()
                                if end is not None:
                                    await finish(end)
                                    return None
                            out = b"".join(parts)
                    if at_end():
                        tail.append(out)
                        break
                    await forward(out)
            except httpx.HTTPError as exc:
                kind = "timeout_error" if isinstance(exc, httpx.TimeoutException) else "api_error"
                upstream_failed = wire.stream_error(f"upstream stream failed: {type(exc).__name__}", kind)
            # The stream has ended, or the upstream broke off: either way the translator gives back what it
            # still holds (or, having given up under a fail-closed gate, the error event that ends it).
            if observing:
                rest = translator.finish()
                end = given_up() if translator.error is not None else None
                if end is not None:
                    await finish(b"".join([*tail, end]))
                    return None
                tail.extend(rest)
            if upstream_failed is not None:
                await finish(b"".join([*tail, upstream_failed]))
                return None
            if observing:
                tail.append(decoder.take_rest())
                said = monitor.said(conv, translator.text, pending, said)
                if translator.response_id is not None:
                    await monitor.remember_response(translator.response_id, conv.id)
                calls = translator.calls
                if buffer and calls and len(translator.denied) == len(calls) and translator.error is None:
                    return translator.text, calls, dict(translator.denied)
            if observing and not translator.calls and translator.error is None:
                for _block, call in monitor.text_calls(translator.text, plan.n_messages):
                    monitor.decide(conv, call, pending, text_index=plan.n_messages, can_rewrite=False)
            await finish(b"".join(tail))
            return None
        finally:
            await resp.aclose()
            await monitor.on_response_end(conv, pending)

    async def _passthrough(
        self, send: Send, resp: httpx.Response, raw_headers: list[tuple[bytes, bytes]]
    ) -> None:
        chunks, at_end = _body_of(resp, False)
        await send(
            {
                "type": "http.response.start",
                "status": resp.status_code,
                "headers": client_headers(raw_headers, decoded=False),
            }
        )
        try:
            async for chunk in chunks:
                if at_end():
                    await send({"type": "http.response.body", "body": chunk})
                    return
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        except httpx.HTTPError as exc:
            logger.debug("upstream body failed mid-way: %s", type(exc).__name__)
        finally:
            await resp.aclose()
        await send({"type": "http.response.body", "body": b""})


def create_app(config: Config | None = None, proxy: ProxyConfig | None = None, **kw: Any) -> ProxyApp:
    """The proxy as an ASGI app (``app.state.proxy`` is the ``ProxyApp`` itself)."""
    from planguard.config import default_config

    return ProxyApp(config if config is not None else default_config(), proxy or ProxyConfig(), **kw)


class _DisconnectWatch:
    """Cancels the current task when the client disconnects, until the response is complete.

    One watcher per request covers waiting for the upstream, reading its answer and streaming it back:
    cancelling the task closes the upstream connection, which is how the upstream learns the request is
    abandoned. (The ASGI server's ``send`` does not report a vanished client, so something must listen.)
    Responses go out through ``send``, which stops the watch before the final message: the server answers
    ``receive`` with ``http.disconnect`` once a response is complete, and work after the response (the
    store append) must not be cancelled by that.
    """

    __slots__ = ("_send", "_watcher", "gone", "stopped", "task")

    def __init__(self, receive: Receive, send: Send) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.task = task
        self.gone = False
        self.stopped = False
        self._send = send
        self._watcher = asyncio.ensure_future(self._watch(receive))

    async def send(self, message: Message) -> None:
        if not self.stopped and message["type"] == "http.response.body" and not message.get("more_body"):
            self.stop()
        await self._send(message)

    async def _watch(self, receive: Receive) -> None:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                break
        if not self.stopped:
            self.gone = True
            self.task.cancel()

    def stop(self) -> None:
        self.stopped = True
        self._watcher.cancel()


def _body_of(resp: httpx.Response, decode: bool) -> tuple[AsyncIterable[bytes], Callable[[], bool]]:
    """The response body as chunks as they arrive (``decode``: undo a content encoding), and whether the
    last chunk has been taken — known only with the proxy's own transport, whose final write then carries
    the end of the response too."""
    if decode:
        return resp.aiter_bytes(), _never  # identity was asked for, but the upstream encoded anyway
    stream = resp.stream
    if isinstance(stream, UpstreamBody):
        return stream, stream.at_end
    return resp.aiter_raw(), _never


def _withheld_text(decision: Decision) -> str:
    return f"{WITHHELD}: {decision.message}" if decision.message else WITHHELD


def _never() -> bool:
    return False


async def _read_all(resp: httpx.Response, decode: bool) -> bytes:
    chunks, _ = _body_of(resp, decode)
    parts = [c async for c in chunks]
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _content_info(raw: list[tuple[bytes, bytes]]) -> tuple[bytes, bool]:
    """The response's content type, and whether its body is content-encoded."""
    ctype = b""
    encoded = False
    for k, v in raw:
        lk = k.lower()
        if lk == b"content-type":
            ctype = v
        elif lk == b"content-encoding":
            encoded = v.strip().lower() not in (b"", b"identity")
    return ctype, encoded


def _get(headers: list[tuple[bytes, bytes]], name: bytes) -> str | None:
    for k, v in headers:
        if k == name:
            return v.decode("latin-1")
    return None


async def _send_json(send: Send, status: int, obj: Any) -> None:
    body = _json.dumps(obj)
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _api_of(headers: list[tuple[bytes, bytes]]) -> str:
    """Which API an unobserved request is for, so its credentials only ever go to that API's upstream."""
    for k, _v in headers:
        if k == b"anthropic-version" or k == b"x-api-key":
            return "anthropic"
    return "openai"


def _escapes(path: str, raw_path: bytes | None) -> bool:
    """Whether the path has a ``.`` or ``..`` segment (decoded or percent-encoded)."""
    for p in (path, raw_path.decode("latin-1").lower().replace("%2e", ".") if raw_path else ""):
        if "." in p and any(seg in (".", "..") for seg in p.split("?", 1)[0].replace("\\", "/").split("/")):
            return True
    return False


def _wire_for(method: str, path: str) -> Wire | None:
    if method != "POST":
        return None
    p = path.rstrip("/")
    if p.endswith("/chat/completions"):
        return WIRES["openai"]
    if p.endswith("/v1/messages"):
        return WIRES["anthropic"]
    if p.endswith("/responses"):
        return WIRES["responses"]
    return None


async def _read_body(receive: Receive, headers: list[tuple[bytes, bytes]], limit: int) -> bytes:
    for k, v in headers:
        if k == b"content-length" and v.isdigit() and int(v) > limit:
            raise _TooLarge
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise _ClientGone
        chunk = message.get("body", b"")
        if chunk:
            size += len(chunk)
            if size > limit:
                raise _TooLarge
            parts.append(chunk)
        if not message.get("more_body", False):
            break
    return parts[0] if len(parts) == 1 else b"".join(parts)
