"""Scripted fake model servers on 127.0.0.1 for the coding-CLI end-to-end tests, one per API the CLIs
speak with streaming: Gemini ``streamGenerateContent`` SSE, OpenAI Responses SSE, OpenAI Chat Completions
SSE, Anthropic Messages SSE. Each records the request bodies it received (so a test can look for a
reminder or a denial the model was sent) and answers agent-loop requests (those that offer tools) from
its script, in order; past the script, and for side requests (titles, summaries), it answers a short
text.

Also: where the CLIs from npm are (``PLANGUARD_CLI_PREFIX``, else ``~/.cache/planguard-clis``, where
``.ci/services/clis.sh`` installs them).
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

#: One scripted model turn: tool calls ``{"name", "args", "id"}`` and/or ``{"text"}``.
Turn = list[dict[str, Any]]


def cli_prefix() -> Path:
    return Path(os.environ.get("PLANGUARD_CLI_PREFIX") or Path.home() / ".cache" / "planguard-clis")


def cli_binary(name: str) -> Path | None:
    """An npm-installed CLI's executable (``codex``, ``gemini``, ``opencode``), or None."""
    path = cli_prefix() / "node_modules" / ".bin" / name
    return path if path.exists() and os.access(path, os.X_OK) else None


def npm_missing() -> bool:
    return shutil.which("npm") is None or shutil.which("node") is None


class FakeModelServer:
    """The HTTP plumbing; subclasses answer :meth:`answer` for the API they fake."""

    def __init__(self, turns: list[Turn]) -> None:
        self.turns = turns
        self.requests: list[dict[str, Any]] = []  # agent-loop request bodies, in order
        self.other: list[str] = []  # everything else, cut short (debugging)
        self.unknown: list[str] = []
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def send(self, status: int, body: bytes, ctype: str = "application/json") -> None:
                self.send_response(status)
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                try:
                    req = json.loads(body or b"null")
                except ValueError:
                    req = None
                status, payload, ctype = fake.answer(self.path, req)
                self.send(status, payload, ctype)

            def do_GET(self) -> None:
                status, payload, ctype = fake.answer_get(self.path)
                self.send(status, payload, ctype)

            def do_HEAD(self) -> None:  # a connectivity probe (Claude Code)
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeModelServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def next_turn(self, req: dict[str, Any]) -> tuple[int, Turn]:
        """Record an agent-loop request; its 1-based number and the scripted turn that answers it."""
        with self._lock:
            self.requests.append(req)
            n = len(self.requests)
        return n, self.turns[n - 1] if n <= len(self.turns) else [{"text": "done"}]

    def answer(self, path: str, req: Any) -> tuple[int, bytes, str]:
        raise NotImplementedError

    def answer_get(self, path: str) -> tuple[int, bytes, str]:
        self.unknown.append(f"GET {path}")
        return 404, b"{}", "application/json"

    def sent_after(self, index: int, needle: str) -> list[int]:
        """Indexes (0-based, from ``index`` on) of agent-loop requests whose body contains ``needle``."""
        return [i for i in range(index, len(self.requests)) if needle in json.dumps(self.requests[i])]


def _sse(chunks: list[dict[str, Any]], event_names: bool = False) -> bytes:
    out = []
    for c in chunks:
        head = f"event: {c['type']}\n" if event_names else ""
        out.append(f"{head}data: {json.dumps(c)}\n\n")
    return "".join(out).encode()


class FakeGemini(FakeModelServer):
    """``POST /v1beta/models/<model>:streamGenerateContent?alt=sse`` (and ``:generateContent``,
    ``:countTokens``) of the Gemini API."""

    def answer(self, path: str, req: Any) -> tuple[int, bytes, str]:
        route = path.split("?", 1)[0]
        if route.endswith(":countTokens"):
            return 200, b'{"totalTokens": 100}', "application/json"
        if not route.endswith((":streamGenerateContent", ":generateContent")) or not isinstance(req, dict):
            self.unknown.append(f"POST {path}")
            return (
                404,
                b'{"error": {"code": 404, "message": "fake", "status": "NOT_FOUND"}}',
                "application/json",
            )
        if req.get("tools"):
            _, turn = self.next_turn(req)
        else:
            self.other.append(json.dumps(req)[:300])
            turn = [{"text": '{"reasoning": "fake", "next_speaker": "user"}'}]
        parts: list[dict[str, Any]] = []
        for block in turn:
            if "name" in block:
                parts.append({"functionCall": {"name": block["name"], "args": block["args"]}})
            else:
                parts.append({"text": block["text"]})
        chunk = {
            "candidates": [
                {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
            "modelVersion": "gemini-2.5-pro",
        }
        if route.endswith(":streamGenerateContent"):
            return 200, _sse([chunk]), "text/event-stream"
        return 200, json.dumps(chunk).encode(), "application/json"


class FakeResponses(FakeModelServer):
    """``POST /v1/responses`` of the OpenAI Responses API, streamed (``stream: true``) as SSE events
    ``response.created``, ``response.output_item.added``/``.done`` per output item, ``response.completed``."""

    def answer(self, path: str, req: Any) -> tuple[int, bytes, str]:
        route = path.split("?", 1)[0]
        if not route.endswith("/responses") or not isinstance(req, dict):
            self.unknown.append(f"POST {path}")
            return 404, b'{"error": {"message": "fake", "type": "not_found"}}', "application/json"
        if req.get("tools"):
            n, turn = self.next_turn(req)
        else:
            self.other.append(json.dumps(req)[:300])
            n, turn = 0, [{"text": "ok"}]
        rid = f"resp_{n:03d}_{len(self.other)}"
        items: list[dict[str, Any]] = []
        for i, block in enumerate(turn):
            if "name" in block:
                items.append(
                    {
                        "type": "function_call",
                        "id": f"fc_{n}_{i}",
                        "call_id": block.get("id") or f"call_{n}_{i}",
                        "name": block["name"],
                        "arguments": json.dumps(block["args"]),
                        "status": "completed",
                    }
                )
            else:
                items.append(
                    {
                        "type": "message",
                        "id": f"msg_{n}_{i}",
                        "role": "assistant",
                        "status": "completed",
                        "content": [{"type": "output_text", "text": block["text"], "annotations": []}],
                    }
                )
        usage = {
            "input_tokens": 10,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 5,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 15,
        }
        base = {"id": rid, "object": "response", "model": req.get("model"), "status": "in_progress"}
        events: list[dict[str, Any]] = [{"type": "response.created", "response": {**base, "output": []}}]
        for i, item in enumerate(items):
            events.append({"type": "response.output_item.added", "output_index": i, "item": item})
            events.append({"type": "response.output_item.done", "output_index": i, "item": item})
        done = {**base, "status": "completed", "output": items, "usage": usage}
        events.append({"type": "response.completed", "response": done})
        for seq, e in enumerate(events):
            e["sequence_number"] = seq
        if req.get("stream"):
            return 200, _sse(events, event_names=True), "text/event-stream"
        return 200, json.dumps(done).encode(), "application/json"


class FakeChatCompletions(FakeModelServer):
    """``POST /v1/chat/completions`` of an OpenAI-compatible provider, streamed as ``chat.completion.chunk``
    SSE (``data: [DONE]`` last); ``GET /v1/models`` lists one model."""

    def answer(self, path: str, req: Any) -> tuple[int, bytes, str]:
        route = path.split("?", 1)[0]
        if not route.endswith("/chat/completions") or not isinstance(req, dict):
            self.unknown.append(f"POST {path}")
            return 404, b'{"error": {"message": "fake", "type": "not_found"}}', "application/json"
        if req.get("tools"):
            n, turn = self.next_turn(req)
        else:
            self.other.append(json.dumps(req)[:300])
            n, turn = 0, [{"text": "Fix calc.py"}]
        cid = f"chatcmpl-{n:03d}-{len(self.other)}"
        head = {"id": cid, "object": "chat.completion.chunk", "created": 1, "model": req.get("model")}
        chunks: list[dict[str, Any]] = [{**head, "choices": [{"index": 0, "delta": {"role": "assistant"}}]}]
        calls = [b for b in turn if "name" in b]
        for block in turn:
            if "text" in block:
                chunks.append({**head, "choices": [{"index": 0, "delta": {"content": block["text"]}}]})
        for i, block in enumerate(calls):
            delta = {
                "tool_calls": [
                    {
                        "index": i,
                        "id": block.get("id") or f"call_{n}_{i}",
                        "type": "function",
                        "function": {"name": block["name"], "arguments": json.dumps(block["args"])},
                    }
                ]
            }
            chunks.append({**head, "choices": [{"index": 0, "delta": delta}]})
        finish = "tool_calls" if calls else "stop"
        chunks.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        chunks.append(
            {
                **head,
                "choices": [],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            }
        )
        body = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
        return 200, body.encode(), "text/event-stream"

    def answer_get(self, path: str) -> tuple[int, bytes, str]:
        if path.split("?", 1)[0].endswith("/models"):
            return (
                200,
                b'{"object": "list", "data": [{"id": "fake-model", "object": "model"}]}',
                "application/json",
            )
        return super().answer_get(path)


class FakeMessages(FakeModelServer):
    """``POST /v1/messages`` of the Anthropic Messages API, streamed (``stream: true``) as SSE events
    ``message_start``, ``content_block_start``/``_delta``/``_stop`` per block, ``message_delta``,
    ``message_stop``; ``POST /v1/messages/count_tokens`` counts 100."""

    def answer(self, path: str, req: Any) -> tuple[int, bytes, str]:
        route = path.split("?", 1)[0]
        if route.endswith("/messages/count_tokens"):
            return 200, b'{"input_tokens": 100}', "application/json"
        if not route.endswith("/messages") or not isinstance(req, dict):
            self.unknown.append(f"POST {path}")
            error = {"type": "error", "error": {"type": "not_found_error", "message": "fake"}}
            return 404, json.dumps(error).encode(), "application/json"
        if req.get("tools"):
            n, turn = self.next_turn(req)
        else:
            self.other.append(json.dumps(req)[:300])
            n, turn = 0, [{"text": "ok"}]
        blocks: list[dict[str, Any]] = []
        for i, block in enumerate(turn):
            if "name" in block:
                tool_id = block.get("id") or f"toolu_{n:02d}_{i}"
                blocks.append(
                    {"type": "tool_use", "id": tool_id, "name": block["name"], "input": block["args"]}
                )
            else:
                blocks.append({"type": "text", "text": block["text"]})
        stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
        message = {
            "id": f"msg_{n:03d}_{len(self.other)}",
            "type": "message",
            "role": "assistant",
            "model": req.get("model"),
            "content": blocks,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": 12, "output_tokens": 7},
        }
        if not req.get("stream"):
            return 200, json.dumps(message).encode(), "application/json"
        start = {**message, "content": [], "stop_reason": None}
        events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
        for i, b in enumerate(blocks):
            if b["type"] == "tool_use":
                empty = {**b, "input": {}}
                delta = {"type": "input_json_delta", "partial_json": json.dumps(b["input"])}
            else:
                empty = {"type": "text", "text": ""}
                delta = {"type": "text_delta", "text": b["text"]}
            events.append({"type": "content_block_start", "index": i, "content_block": empty})
            events.append({"type": "content_block_delta", "index": i, "delta": delta})
            events.append({"type": "content_block_stop", "index": i})
        events.append(
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": 7},
            }
        )
        events.append({"type": "message_stop"})
        return 200, _sse(events, event_names=True), "text/event-stream"

    def tool_result(self, request_index: int, tool_use_id: str) -> str:
        """The ``tool_result`` block answering ``tool_use_id`` in agent-loop request ``request_index``, as
        JSON text."""
        for message in self.requests[request_index].get("messages", []):
            content = message.get("content")
            for block in content if isinstance(content, list) else []:
                if block.get("type") == "tool_result" and block.get("tool_use_id") == tool_use_id:
                    return json.dumps(block)
        raise AssertionError(f"no tool_result for {tool_use_id} in request {request_index}")


# --------------------------------------------------------------------------- the scripted coding task

#: The throw-away repository's reproduction test (``calc.add`` is broken until the agent patches it).
CALC_TEST = "from calc import add\nassert add(2, 3) == 5, add(2, 3)\nprint('ok')\n"


def claude_code_turns(work: Path) -> list[list[dict[str, Any]]]:
    """Claude Code's turns of the task: read, reproduce, patch, submit too early (denied), validate,
    submit, answer."""

    def tool(n: int, name: str, args: dict[str, Any]) -> list[dict[str, Any]]:
        return [{"name": name, "args": args, "id": f"toolu_{n:02d}"}]

    def bash(n: int, command: str) -> list[dict[str, Any]]:
        return tool(n, "Bash", {"command": command, "description": f"step {n}"})

    calc = str(work / "calc.py")
    return [
        tool(1, "Read", {"file_path": calc}),
        bash(2, f"cat > test_calc.py <<'EOF'\n{CALC_TEST}EOF"),
        bash(3, "python3 test_calc.py"),
        tool(4, "Edit", {"file_path": calc, "old_string": "return a - b", "new_string": "return a + b"}),
        bash(5, "./submit.sh"),  # too early: nothing validated the patch yet
        bash(6, "python3 test_calc.py"),
        bash(7, "./submit.sh"),
        [{"text": "Fixed add(); the test passes and the fix is submitted."}],
    ]
