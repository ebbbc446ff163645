"""OpenAI Chat Completions (``POST /v1/chat/completions``), streaming and not.

Streaming tool calls arrive as ``chat.completion.chunk`` deltas: ``choices[0].delta.tool_calls`` entries
carry an ``index``, the call ``id`` and ``function.name`` in the first fragment, then ``function.arguments``
fragments; calls are streamed one after the other and the last chunk of the choice sets ``finish_reason``;
``data: [DONE]`` ends the stream. Only choice 0 is observed (agents execute that one).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .. import _json
from ..sse import SSEEvent, encode_event
from .base import Decide, StreamTranslator, ToolCall, ToolResult, Wire, text_of

__all__ = ["OpenAIWire", "parse_arguments"]


def parse_arguments(raw: str) -> Any:
    """Tool arguments as an object when they are JSON, else the raw text (classifiers accept both)."""
    if not raw:
        return {}
    try:
        return _json.loads(raw, exact_integers=True)
    except _json.NonStandardJSON:
        raise  # refused: the answer is unread (the caller withholds it under a fail-closed gate)
    except ValueError:
        return raw


class OpenAIWire(Wire):
    name = "openai"
    api = "openai"
    path = "/chat/completions"

    def messages(self, body: Mapping[str, Any]) -> list[Any]:
        m = body.get("messages")
        return m if isinstance(m, list) else []

    def session_material(self, body: Mapping[str, Any]) -> list[Any]:
        system = user = None
        for m in self.messages(body):
            # Parsed JSON holds dicts: dict first, an exact type test (the Mapping ABC test is the slow one).
            if not isinstance(m, (dict, Mapping)):
                continue
            role = m.get("role")
            if system is None and role in ("system", "developer"):
                system = text_of(m.get("content"))
            elif user is None and role == "user":
                user = text_of(m.get("content"))
            if user is not None and system is not None:
                break
        return [system, user]

    def tool_results(self, body: Mapping[str, Any], ids: Iterable[str]) -> list[ToolResult]:
        wanted = set(ids)
        if not wanted:
            return []
        out = []
        # Results sit at the end of the history: scan backwards and stop once every open call is found, so
        # the cost does not grow with the conversation.
        for m in reversed(self.messages(body)):
            if isinstance(m, (dict, Mapping)) and m.get("role") == "tool" and m.get("tool_call_id") in wanted:
                wanted.discard(m["tool_call_id"])
                out.append(ToolResult(str(m["tool_call_id"]), text_of(m.get("content"))))
                if not wanted:
                    break
        out.reverse()
        return out

    def inject(self, body: dict[str, Any], text: str) -> None:
        body.setdefault("messages", []).append({"role": "user", "content": text})

    def annotate_results(self, body: dict[str, Any], notes: Mapping[str, str]) -> bool:
        changed = False
        for m in self.messages(body):
            if isinstance(m, dict) and m.get("role") == "tool" and m.get("tool_call_id") in notes:
                note = notes[m["tool_call_id"]]
                c = m.get("content")
                if isinstance(c, list):
                    m["content"] = [{"type": "text", "text": note}, *c]
                else:
                    m["content"] = f"{note}\n{c or ''}"
                changed = True
        return changed

    def answer_calls(
        self,
        body: dict[str, Any],
        text: str,
        calls: list[ToolCall],
        results: Mapping[str, str],
        at: int | None = None,
    ) -> None:
        messages = body.setdefault("messages", [])
        added: list[Any] = [
            {
                "role": "assistant",
                "content": text or None,
                "tool_calls": [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {
                            "name": c.name,
                            "arguments": c.raw_arguments or _json.dumps(c.arguments).decode(),
                        },
                    }
                    for c in calls
                ],
            },
            *({"role": "tool", "tool_call_id": c.id, "content": results[c.id]} for c in calls),
        ]
        pos = len(messages) if at is None else at
        messages[pos:pos] = added

    # ---------------------------------------------------------------- responses

    @staticmethod
    def _message(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
        choices = obj.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], Mapping):
            msg = choices[0].get("message")
            if isinstance(msg, Mapping):
                return msg
        return None

    def response_calls(self, obj: Mapping[str, Any]) -> list[ToolCall]:
        msg = self._message(obj)
        calls = []
        for tc in (msg or {}).get("tool_calls") or ():
            fn = tc.get("function") or {}
            raw = fn.get("arguments") or ""
            calls.append(
                ToolCall(str(tc.get("id") or ""), str(fn.get("name") or ""), parse_arguments(raw), raw)
            )
        return calls

    def response_text(self, obj: Mapping[str, Any]) -> str:
        return text_of((self._message(obj) or {}).get("content"))

    def rewrite_response(self, obj: dict[str, Any], denied: Mapping[str, str]) -> None:
        choice = obj["choices"][0]
        msg = choice["message"]
        kept = [tc for tc in msg.get("tool_calls") or () if tc.get("id") not in denied]
        notes = "\n".join(denied.values())
        msg["content"] = f"{msg['content']}\n{notes}" if msg.get("content") else notes
        if kept:
            msg["tool_calls"] = kept
        else:
            msg.pop("tool_calls", None)
            if choice.get("finish_reason") == "tool_calls":
                choice["finish_reason"] = "stop"

    def replace_text(self, obj: dict[str, Any], old: str, new: str) -> bool:
        msg = self._message(obj)
        if msg is None or not isinstance(msg.get("content"), str) or old not in msg["content"]:
            return False
        msg["content"] = msg["content"].replace(old, new, 1)  # type: ignore[index]
        return True

    def stream(self, decide: Decide, hold: bool, want_text: bool = True) -> StreamTranslator:
        return _OpenAIStream(decide, hold, want_text)

    # ---------------------------------------------------------------- errors

    def error_body(self, message: str, kind: str) -> dict[str, Any]:
        return {"error": {"message": message, "type": kind, "param": None, "code": kind}}

    def stream_error(self, message: str, kind: str) -> bytes:
        return encode_event(_json.dumps(self.error_body(message, kind)).decode("utf-8"))


@dataclass(slots=True)
class _Call:
    index: int
    id: str = ""
    name: str = ""
    parts: list[str] = field(default_factory=list)
    decided: bool = False
    denial: str | None = None
    announced: bool = False  # the denial text has been emitted


@dataclass(slots=True)
class _Held:
    raw: bytes
    obj: Any  # parsed chunk, None for [DONE] and non-JSON
    refs: tuple[int, ...]  # tool-call indices the event carries deltas for


#: A finish_reason that is set (a string), not null: the choice is over, its open call complete.
_FINISH_SET = re.compile(r'"finish_reason"\s*:\s*"')


def _inert(data: str, want_text: bool) -> bool:
    """An event that cannot carry a tool call, the end of one, or (unless wanted) text: no need to parse
    it. Keys are matched with their quotes, so the same word inside a string value (escaped quotes) does
    not count; a false positive only costs a parse. Data that is not even shaped like a JSON object is
    parsed (and so stops the observation, as any malformed event does)."""
    return (
        data[:1] == "{"
        and data[-1:] == "}"
        and '"tool_calls"' not in data
        and (not want_text or '"content"' not in data)
        and ('"finish_reason"' not in data or _FINISH_SET.search(data) is None)
    )


class _OpenAIStream(StreamTranslator):
    def __init__(self, decide: Decide, hold: bool, want_text: bool = True) -> None:
        super().__init__(decide, hold, want_text)
        self._calls: dict[int, _Call] = {}
        self._open: _Call | None = None

    def _feed(self, ev: SSEEvent) -> list[bytes]:
        data = ev.data
        obj: Any = None
        refs: tuple[int, ...] = ()
        if len(data) < 16 and data.strip() == "[DONE]":
            self.finished = True
            self._complete_open()
        elif not data or _inert(data, self.want_text):
            if not self._held:  # nothing held back: forward at once, in order
                return [ev.raw]
        else:
            try:
                obj = _json.loads(data)
            except ValueError as exc:
                # Not a chunk we understand: stop observing; the caller counts it, and withholds the rest
                # when a fail-closed gate is on (else it passes through untouched).
                self.error = exc
                return self.abandon(ev)
            refs = self._observe(obj)
        if not self.hold:
            return [ev.raw]
        self._held.append(_Held(ev.raw, obj, refs))
        return self._release()

    def _finish(self) -> list[bytes]:
        self._complete_open()
        return self._release()

    # ---------------------------------------------------------------- internals

    def _observe(self, obj: Any) -> tuple[int, ...]:
        # Parsed JSON: objects are dicts (``isinstance`` against the Mapping ABC costs more per event).
        if not isinstance(obj, dict):
            return ()
        choices = obj.get("choices")
        if not choices:
            return ()
        refs: list[int] = []
        for choice in choices:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta")
            if delta:
                if self.want_text:
                    content = delta.get("content")
                    if isinstance(content, str):
                        self._add_text(content)
                tool_calls = delta.get("tool_calls")
                if tool_calls:
                    for tc in tool_calls:
                        refs.append(self._fragment(tc))
            if choice.get("finish_reason"):
                self._complete_open()
        return tuple(refs)

    def _fragment(self, tc: dict[str, Any]) -> int:
        """One ``delta.tool_calls`` entry: the first of a call carries id and name, the rest arguments."""
        i: int = tc.get("index", 0)
        call = self._calls.get(i)
        if call is None:
            self._complete_open()
            call = self._calls[i] = self._open = _Call(i)
        cid = tc.get("id")
        if cid:
            call.id = str(cid)
        fn = tc.get("function")
        if fn:
            name = fn.get("name")
            if name and not call.name:
                call.name = str(name)
            args = fn.get("arguments")
            if isinstance(args, str):
                call.parts.append(args)
        return i

    def _complete_open(self) -> None:
        call, self._open = self._open, None
        if call is None or call.decided:
            return
        raw = "".join(call.parts)
        call.denial = self._decide(ToolCall(call.id, call.name, parse_arguments(raw), raw))
        call.decided = True

    def _release(self) -> list[bytes]:
        out: list[bytes] = []
        held, calls = self._held, self._calls
        while held:
            h = held[0]
            if h.refs and not all(calls[i].decided for i in h.refs):
                break
            out.append(self._emit(h))
            held.popleft()
        return out

    def _emit(self, h: _Held) -> bytes:
        if not self.denied or not isinstance(h.obj, dict):
            return h.raw  # nothing denied so far: indices and content are unchanged
        choices = h.obj.get("choices") or ()
        changed = False
        for choice in choices:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta")
            if isinstance(delta, dict) and delta.get("tool_calls"):
                kept = []
                for tc in delta["tool_calls"]:
                    call = self._calls[tc.get("index", 0)]
                    if call.denial is not None:
                        changed = True
                        if not call.announced:
                            call.announced = True
                            prev = delta.get("content")
                            delta["content"] = f"{prev}{call.denial}" if prev else call.denial
                        continue
                    new_index = self._new_index(call.index)
                    if new_index != tc.get("index", 0):
                        tc = {**tc, "index": new_index}
                        changed = True
                    kept.append(tc)
                if kept:
                    delta["tool_calls"] = kept
                else:
                    del delta["tool_calls"]
            if (
                choice.get("finish_reason") == "tool_calls"
                and self._calls
                and all(c.denial is not None for c in self._calls.values())
            ):
                choice["finish_reason"] = "stop"
                changed = True
        if not changed:
            return h.raw
        return encode_event(_json.dumps(h.obj).decode("utf-8"))

    def _new_index(self, index: int) -> int:
        return sum(1 for c in self._calls.values() if c.index < index and c.denial is None)
