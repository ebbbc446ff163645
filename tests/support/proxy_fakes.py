"""A scripted fake model API (OpenAI Chat Completions and Responses, Anthropic Messages) served on
127.0.0.1, and a helper to run ASGI apps in a background thread.

The fake speaks the real wire formats, streaming included, chunked the way the services chunk them:
OpenAI ``chat.completion.chunk`` events whose ``delta.tool_calls`` carry ``index``/``id``/``function.name``
first and then ``function.arguments`` fragments, ``finish_reason`` on the last chunk and ``data: [DONE]``;
Anthropic ``message_start`` → ``content_block_start`` (text / tool_use) → ``content_block_delta``
(``text_delta`` / ``input_json_delta``) → ``content_block_stop`` → ``message_delta`` → ``message_stop``,
with a ``ping``. Event boundaries and network writes deliberately do not line up (an event is sometimes
split across two writes, several events sometimes share one), as on a real connection.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import quiet_guard
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

__all__ = [
    "SCRIPTED_COMMANDS",
    "FakeUpstream",
    "Reply",
    "ServerThread",
    "bash_agent_script",
    "text_agent_script",
]

_ids = itertools.count(1)


@dataclass
class Reply:
    """What the fake answers to one request."""

    text: str | None = None
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (name, arguments)
    status: int = 200
    error_body: Any = None  # JSON body for an error status
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0  # before the response starts
    chunk_delay_s: float = 0.0  # between stream writes
    malformed: bytes | None = None  # stream these raw bytes instead of a well-formed stream
    die_after_events: int | None = None  # close the stream abruptly after this many events
    # Rewrites the answer's bytes (a whole body, or each stream event): crafted traffic, e.g. a NaN token.
    craft: Callable[[bytes], bytes] | None = None


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: Any
    query: str = ""


#: The shell commands of the scripted coding agent run (navigate, reproduce, patch, validate, submit).
SCRIPTED_COMMANDS = [
    "ls -la",
    "cat calc.py",
    "grep -n 'def add' calc.py",
    "printf 'from calc import add\\nassert add(2, 2) == 4, add(2, 2)\\nprint(\"ok\")\\n' > reproduce.py",
    "python reproduce.py",
    "sed -i 's/return a - b/return a + b/' calc.py",
    "python reproduce.py",
    "python -c 'from calc import add; assert add(-1, 1) == 0; print(\"edge ok\")'",
    "cat calc.py",
    "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT",
]


def _assistant_turns(wire: str, body: dict[str, Any]) -> int:
    if wire == "responses":  # one function call per scripted turn
        items = body.get("input")
        return (
            sum(1 for m in items if isinstance(m, dict) and m.get("type") == "function_call")
            if isinstance(items, list)
            else 0
        )
    return sum(1 for m in body.get("messages") or () if isinstance(m, dict) and m.get("role") == "assistant")


def bash_agent_script(commands: list[str] | None = None) -> Callable[[str, dict[str, Any]], Reply]:
    """Answers the k-th model call (k = assistant turns so far) with a bash tool call for commands[k]."""
    cmds = commands if commands is not None else SCRIPTED_COMMANDS

    def script(wire: str, body: dict[str, Any]) -> Reply:
        k = _assistant_turns(wire, body)
        if k < len(cmds):
            return Reply(text=f"Step {k + 1}.", tool_calls=[("bash", {"command": cmds[k]})])
        return Reply(text="Done.")

    return script


def text_agent_script(commands: list[str] | None = None) -> Callable[[str, dict[str, Any]], Reply]:
    """mini-swe-agent's text-based format: a THOUGHT and exactly one ```mswea_bash_command block."""
    cmds = commands if commands is not None else SCRIPTED_COMMANDS

    def script(wire: str, body: dict[str, Any]) -> Reply:
        k = min(_assistant_turns(wire, body), len(cmds) - 1)
        return Reply(text=f"THOUGHT: step {k + 1}.\n\n```mswea_bash_command\n{cmds[k]}\n```")

    return script


class FakeUpstream:
    """The fake model API. ``script(wire, body) -> Reply`` decides each answer; requests are recorded."""

    def __init__(self, script: Callable[[str, dict[str, Any]], Reply] | None = None) -> None:
        self.script = script or bash_agent_script()
        self.requests: list[Recorded] = []
        self.streams_started = 0
        self.streams_completed = 0
        self.streams_cancelled = 0
        self.in_flight = 0
        self.disconnect_seen = threading.Event()
        self.app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._openai, methods=["POST"]),
                Route("/v1/messages", self._anthropic, methods=["POST"]),
                Route("/v1/responses", self._responses, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
            ]
        )

    # ------------------------------------------------------------------ routes

    async def _models(self, request: Request) -> Response:
        self.requests.append(
            Recorded(request.url.path, dict(request.headers), None, request.scope["query_string"].decode())
        )
        return JSONResponse(
            {"object": "list", "data": [{"id": "fake-model", "object": "model"}]},
            headers={"x-fake": "models"},
        )

    async def _record(self, request: Request) -> tuple[Any, bool]:
        raw = await request.body()
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        self.requests.append(Recorded(request.url.path, dict(request.headers), body))
        return body, isinstance(body, dict)

    async def _openai(self, request: Request) -> Response:
        return await self._serve(
            request,
            "openai",
            ("messages", list),
            _OPENAI_INVALID,
            lambda reply, body: _openai_events(reply, _model(body), body),
            lambda reply, body: _openai_message(reply, _model(body)),
        )

    async def _anthropic(self, request: Request) -> Response:
        return await self._serve(
            request,
            "anthropic",
            ("messages", list),
            {"type": "error", "error": {"type": "invalid_request_error", "message": "invalid body"}},
            lambda reply, body: _anthropic_events(reply, _model(body)),
            lambda reply, body: _anthropic_message(reply, _model(body)),
        )

    async def _responses(self, request: Request) -> Response:
        return await self._serve(
            request,
            "responses",
            ("input", (str, list)),
            _OPENAI_INVALID,
            lambda reply, body: _responses_events(_responses_object(reply, body)),
            _responses_object,
        )

    async def _serve(
        self,
        request: Request,
        wire: str,
        required: tuple[str, type | tuple[type, ...]],
        invalid: dict[str, Any],
        events: Callable[[Reply, dict[str, Any]], list[bytes]],
        message: Callable[[Reply, dict[str, Any]], dict[str, Any]],
    ) -> Response:
        """One request of ``wire``: a body without the ``required`` (key, type) gets the API's 400
        ``invalid``; else the script's reply, streamed (``events``) or whole (``message``)."""
        body, ok = await self._record(request)
        key, kinds = required
        if not ok or not isinstance(body.get(key), kinds):
            return JSONResponse(invalid, status_code=400)
        reply = self.script(wire, body)
        if reply.delay_s and not await self._delay(request, reply.delay_s):
            return Response(status_code=499)
        if reply.status != 200:
            return JSONResponse(reply.error_body, status_code=reply.status, headers=reply.headers)
        if body.get("stream"):
            return StreamingResponse(
                self._stream(reply, events(reply, body)),
                media_type="text/event-stream",
                headers=reply.headers,
            )
        return _answer(reply, message(reply, body))

    async def _delay(self, request: Request, seconds: float) -> bool:
        """Wait before answering; False (and ``disconnect_seen``) if the caller hung up meanwhile."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if await request.is_disconnected():
                self.disconnect_seen.set()
                return False
            await asyncio.sleep(0.02)
        return True

    async def _stream(self, reply: Reply, events: list[bytes]):  # type: ignore[no-untyped-def]
        self.streams_started += 1
        self.in_flight += 1
        try:
            if reply.malformed is not None:
                yield reply.malformed
                self.streams_completed += 1
                return
            if reply.die_after_events is not None:
                events = events[: reply.die_after_events]
            if reply.craft is not None:
                events = [reply.craft(e) for e in events]
            for chunk in _rechunk(events):
                if reply.chunk_delay_s:
                    await asyncio.sleep(reply.chunk_delay_s)
                yield chunk
            if reply.die_after_events is not None:
                raise RuntimeError("fake upstream: connection dropped mid-stream")
            self.streams_completed += 1
        except (asyncio.CancelledError, GeneratorExit):
            self.streams_cancelled += 1
            self.disconnect_seen.set()
            raise
        finally:
            self.in_flight -= 1


# ---------------------------------------------------------------------- wire formats


_OPENAI_INVALID = {
    "error": {"message": "invalid body", "type": "invalid_request_error", "param": None, "code": None}
}


def _model(body: dict[str, Any]) -> Any:
    return body.get("model", "fake-model")


def _answer(reply: Reply, obj: dict[str, Any]) -> Response:
    if reply.craft is None:
        return JSONResponse(obj, headers=reply.headers)
    body = reply.craft(json.dumps(obj).encode())
    return Response(body, media_type="application/json", headers=reply.headers)


def _fragments(s: str, n: int = 7) -> list[str]:
    return [s[i : i + n] for i in range(0, len(s), n)] or [""]


def _sse(data: Any, event: str | None = None) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data)
    return ((f"event: {event}\n" if event else "") + f"data: {payload}\n\n").encode()


def _rechunk(events: list[bytes]) -> list[bytes]:
    """Network writes that do not line up with events: some split in two, some sharing a write."""
    out: list[bytes] = []
    buf = b""
    for i, ev in enumerate(events):
        if i % 3 == 1 and len(ev) > 10:
            cut = len(ev) // 2
            out.append(buf + ev[:cut])
            buf = ev[cut:]
        elif i % 3 == 2:
            buf += ev
        else:
            out.append(buf + ev)
            buf = b""
    if buf:
        out.append(buf)
    return out


def _openai_message(reply: Reply, model: str) -> dict[str, Any]:
    calls = [
        {
            "id": f"call_{next(_ids)}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)},
        }
        for name, args in reply.tool_calls
    ]
    msg: dict[str, Any] = {"role": "assistant", "content": reply.text, "refusal": None}
    if calls:
        msg["tool_calls"] = calls
    return {
        "id": f"chatcmpl-{next(_ids)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {"index": 0, "message": msg, "logprobs": None, "finish_reason": "tool_calls" if calls else "stop"}
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def _openai_events(reply: Reply, model: str, body: dict[str, Any]) -> list[bytes]:
    base = {
        "id": f"chatcmpl-{next(_ids)}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": "fp_fake",
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return _sse(
            {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}
        )

    events = [chunk({"role": "assistant", "content": "", "refusal": None})]
    for piece in _fragments(reply.text or "", 5) if reply.text else []:
        events.append(chunk({"content": piece}))
    for i, (name, args) in enumerate(reply.tool_calls):
        events.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": i,
                            "id": f"call_{next(_ids)}",
                            "type": "function",
                            "function": {"name": name, "arguments": ""},
                        }
                    ]
                }
            )
        )
        for frag in _fragments(json.dumps(args)):
            events.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": frag}}]}))
    events.append(chunk({}, "tool_calls" if reply.tool_calls else "stop"))
    if (body.get("stream_options") or {}).get("include_usage"):
        events.append(
            _sse(
                {
                    **base,
                    "choices": [],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                }
            )
        )
    events.append(b"data: [DONE]\n\n")
    return events


def _anthropic_message(reply: Reply, model: str) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if reply.text:
        content.append({"type": "text", "text": reply.text})
    for name, args in reply.tool_calls:
        content.append({"type": "tool_use", "id": f"toolu_{next(_ids):04d}", "name": name, "input": args})
    return {
        "id": f"msg_{next(_ids)}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if reply.tool_calls else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


def _anthropic_events(reply: Reply, model: str) -> list[bytes]:
    events = [
        _sse(
            {
                "type": "message_start",
                "message": {
                    "id": f"msg_{next(_ids)}",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": 10, "output_tokens": 1},
                },
            },
            "message_start",
        ),
        _sse({"type": "ping"}, "ping"),
    ]
    index = 0
    if reply.text:
        events.append(
            _sse(
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "text", "text": ""},
                },
                "content_block_start",
            )
        )
        for piece in _fragments(reply.text, 5):
            events.append(
                _sse(
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "text_delta", "text": piece},
                    },
                    "content_block_delta",
                )
            )
        events.append(_sse({"type": "content_block_stop", "index": index}, "content_block_stop"))
        index += 1
    for name, args in reply.tool_calls:
        events.append(
            _sse(
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {
                        "type": "tool_use",
                        "id": f"toolu_{next(_ids):04d}",
                        "name": name,
                        "input": {},
                    },
                },
                "content_block_start",
            )
        )
        for frag in _fragments(json.dumps(args)):
            events.append(
                _sse(
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": frag},
                    },
                    "content_block_delta",
                )
            )
        events.append(_sse({"type": "content_block_stop", "index": index}, "content_block_stop"))
        index += 1
    events.append(
        _sse(
            {
                "type": "message_delta",
                "delta": {
                    "stop_reason": "tool_use" if reply.tool_calls else "end_turn",
                    "stop_sequence": None,
                },
                "usage": {"output_tokens": 5},
            },
            "message_delta",
        )
    )
    events.append(_sse({"type": "message_stop"}, "message_stop"))
    return events


def _responses_object(reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
    """A Responses API ``response`` object. Ids and times derive from the request, so the same request
    gets the same bytes (a direct call and one through the proxy can be compared byte for byte)."""
    seed = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]
    output: list[dict[str, Any]] = []
    if reply.text:
        output.append(
            {
                "type": "message",
                "id": f"msg_{seed}",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
            }
        )
    for i, (name, args) in enumerate(reply.tool_calls):
        output.append(
            {
                "type": "function_call",
                "id": f"fc_{seed}_{i}",
                "call_id": f"call_{seed}_{i}",
                "name": name,
                "arguments": json.dumps(args),
                "status": "completed",
            }
        )
    return {
        "id": f"resp_{seed}",
        "object": "response",
        "created_at": 1_700_000_000,
        "status": "completed",
        "error": None,
        "incomplete_details": None,
        "instructions": body.get("instructions"),
        "model": body.get("model", "fake-model"),
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": body.get("previous_response_id"),
        "temperature": 1.0,
        "tool_choice": "auto",
        "tools": body.get("tools") or [],
        "top_p": 1.0,
        "usage": {
            "input_tokens": 10,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 5,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 15,
        },
    }


def _responses_events(resp: dict[str, Any]) -> list[bytes]:
    """The ``response.*`` events of a response, as the API streams them (text and arguments in fragments)."""
    seq = itertools.count()
    events: list[bytes] = []

    def ev(kind: str, **fields: Any) -> None:
        events.append(_sse({"type": kind, "sequence_number": next(seq), **fields}, kind))

    start = {**resp, "status": "in_progress", "output": [], "usage": None}
    ev("response.created", response=start)
    ev("response.in_progress", response=start)
    for i, item in enumerate(resp["output"]):
        if item["type"] == "message":
            text = item["content"][0]["text"]
            ev(
                "response.output_item.added",
                output_index=i,
                item={**item, "status": "in_progress", "content": []},
            )
            part = {"type": "output_text", "text": "", "annotations": []}
            ev("response.content_part.added", item_id=item["id"], output_index=i, content_index=0, part=part)
            for frag in _fragments(text):
                ev(
                    "response.output_text.delta",
                    item_id=item["id"],
                    output_index=i,
                    content_index=0,
                    delta=frag,
                    logprobs=[],
                )
            ev(
                "response.output_text.done",
                item_id=item["id"],
                output_index=i,
                content_index=0,
                text=text,
                logprobs=[],
            )
            ev(
                "response.content_part.done",
                item_id=item["id"],
                output_index=i,
                content_index=0,
                part={**part, "text": text},
            )
        else:
            ev(
                "response.output_item.added",
                output_index=i,
                item={**item, "status": "in_progress", "arguments": ""},
            )
            for frag in _fragments(item["arguments"]):
                ev("response.function_call_arguments.delta", item_id=item["id"], output_index=i, delta=frag)
            ev(
                "response.function_call_arguments.done",
                item_id=item["id"],
                output_index=i,
                arguments=item["arguments"],
            )
        ev("response.output_item.done", output_index=i, item=item)
    ev("response.completed", response=resp)
    return events


# ---------------------------------------------------------------------- running servers


class ServerThread:
    """An ASGI app served by uvicorn on 127.0.0.1 in a background thread (its own event loop)."""

    def __init__(self, app: Any, **kw: Any) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        cfg = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on", **kw)
        self.server = uvicorn.Server(cfg)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ServerThread:
        self.thread.start()
        deadline = time.monotonic() + 15
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("server did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=20)
        self.sock.close()


# ---------------------------------------------------------------------- a proxy in front of the fake


class RecordingSink:
    """Every sink hook call, in order (what telemetry would see), for exactly-once checks."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def new_state(self, session: Any) -> None:
        return None

    def on_session_start(self, session: Any, state: Any) -> None:
        self.calls.append(("start", session.id))

    def on_tool_start(self, session: Any, step: Any, state: Any) -> None:
        self.calls.append(("tool_start", (step.event.call_id, step.event.action or step.event.tool)))

    def on_tool_end(self, session: Any, step: Any, state: Any) -> None:
        self.calls.append(("tool_end", (step.event.call_id, tuple(step.roles), step.event.exit_code)))

    def on_finding(self, session: Any, step: Any, finding: Any, state: Any) -> None:
        self.calls.append(("finding", finding.detector))

    def on_decision(self, session: Any, step: Any, decision: Any, state: Any) -> None:
        self.calls.append(("decision", decision.kind.value))

    def on_session_end(self, session: Any, summary: Any, state: Any) -> None:
        self.calls.append(("end", summary.n_steps))

    def shutdown(self) -> None:
        pass

    def of(self, kind: str) -> list[Any]:
        return [v for k, v in self.calls if k == kind]


def submit_gate(*, fail_closed: bool = False) -> dict[str, Any]:
    """Config sections of a gate that never opens on a bash ``submit`` (it matches the call's arguments):
    what reaches the agent shows whether the proxy read the answer."""
    return {
        "fail_closed_gates": fail_closed,
        "policies": {
            "violations": {"enabled": False},
            "gates": [
                {
                    "name": "no-early-submit",
                    "tool": "bash",
                    "arguments": {"command": "^submit"},
                    "until": {"min_steps": 1000},
                    "max_denials": None,
                    "message": "GATE: run the tests before submitting",
                }
            ],
        },
    }


def quiet_config(**overrides: Any) -> Any:
    """:func:`quiet_guard.quiet_config` without idle ends (a conversation lives as long as a test needs)."""
    return quiet_guard.quiet_config(**{"sessions": {"idle_timeout_s": None}, **overrides})


@dataclass
class Stack:
    fake: FakeUpstream
    upstream: ServerThread
    proxy: ServerThread
    app: Any  # planguard_proxy.ProxyApp
    guard: Any

    @property
    def url(self) -> str:
        return self.proxy.url


class proxy_stack:
    """The fake upstream and a proxy in front of it, both on 127.0.0.1."""

    def __init__(
        self,
        script: Callable[[str, dict[str, Any]], Reply] | None = None,
        *,
        config: Any = None,
        sinks: tuple[Any, ...] = (),
        store: Any = None,
        fake: FakeUpstream | None = None,
        upstream: ServerThread | None = None,
        **proxy_settings: Any,
    ) -> None:
        self.fake = fake or FakeUpstream(script)
        self._own_upstream = upstream is None
        # A keep-alive far longer than the proxy's pool expiry: no request races a closing connection.
        self.upstream = upstream or ServerThread(self.fake.app, timeout_keep_alive=60)
        self.config = config if config is not None else quiet_config()
        self.sinks = sinks
        self.store = store
        self.proxy_settings = proxy_settings

    def __enter__(self) -> Stack:
        from planguard_proxy import ProxyConfig, create_app

        from planguard.guard import Guard

        if self._own_upstream:
            self.upstream.__enter__()
        guard = Guard(self.config, sinks=self.sinks)
        pcfg = ProxyConfig.model_validate({"upstream": self.upstream.url, **self.proxy_settings})
        app = create_app(self.config, pcfg, guard=guard, store=self.store)
        self.proxy = ServerThread(
            app, server_header=False, date_header=False, timeout_keep_alive=75
        ).__enter__()
        return Stack(self.fake, self.upstream, self.proxy, app.state.proxy, guard)

    def __exit__(self, *exc: object) -> None:
        self.proxy.__exit__(*exc)
        if self._own_upstream:
            self.upstream.__exit__(*exc)
