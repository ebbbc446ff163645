"""Anthropic Messages (``POST /v1/messages``), streaming and not.

A stream is ``message_start``, then per content block ``content_block_start`` (a ``tool_use`` block carries
``id`` and ``name``), ``content_block_delta`` events (``input_json_delta.partial_json`` fragments for tool
input, ``text_delta`` for text), ``content_block_stop``; then ``message_delta`` (``stop_reason``) and
``message_stop``; ``ping`` and ``error`` events may appear anywhere. A denied ``tool_use`` block is replaced
by a text block at the same index, so block indices never shift.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .. import _json
from ..sse import SSEEvent, encode_event
from .base import Decide, StreamTranslator, ToolCall, ToolResult, Wire, text_of
from .openai import parse_arguments

__all__ = ["AnthropicWire"]


class AnthropicWire(Wire):
    name = "anthropic"
    api = "anthropic"
    path = "/messages"

    def messages(self, body: Mapping[str, Any]) -> list[Any]:
        m = body.get("messages")
        return m if isinstance(m, list) else []

    def session_material(self, body: Mapping[str, Any]) -> list[Any]:
        user = None
        for m in self.messages(body):
            if isinstance(m, (dict, Mapping)) and m.get("role") == "user":
                user = text_of(m.get("content"))
                break
        return [text_of(body.get("system")), user]

    def tool_results(self, body: Mapping[str, Any], ids: Iterable[str]) -> list[ToolResult]:
        wanted = set(ids)
        if not wanted:
            return []
        found: list[list[ToolResult]] = []
        # Results sit at the end of the history: scan turns backwards, stop once every open call is found.
        for m in reversed(self.messages(body)):
            if not wanted:
                break
            if (
                not isinstance(m, (dict, Mapping))
                or m.get("role") != "user"
                or not isinstance(m.get("content"), list)
            ):
                continue
            turn = []
            for b in m["content"]:
                if (
                    isinstance(b, (dict, Mapping))
                    and b.get("type") == "tool_result"
                    and b.get("tool_use_id") in wanted
                ):
                    wanted.discard(b["tool_use_id"])
                    turn.append(
                        ToolResult(str(b["tool_use_id"]), text_of(b.get("content")), bool(b.get("is_error")))
                    )
            found.append(turn)
        return [r for turn in reversed(found) for r in turn]

    def inject(self, body: dict[str, Any], text: str) -> None:
        msgs = body.setdefault("messages", [])
        block = {"type": "text", "text": text}
        # Tool results must open the user turn that follows a tool_use; text may follow them in that turn.
        # A final assistant turn is a prefill the model continues: the note goes into the user turn before it.
        target = len(msgs) - 1
        if target >= 0 and isinstance(msgs[target], Mapping) and msgs[target].get("role") == "assistant":
            target -= 1
        if target >= 0 and isinstance(msgs[target], dict) and msgs[target].get("role") == "user":
            m = msgs[target]
            c = m.get("content")
            m["content"] = [*c, block] if isinstance(c, list) else [{"type": "text", "text": c or ""}, block]
        else:
            msgs.append({"role": "user", "content": [block]})

    def annotate_results(self, body: dict[str, Any], notes: Mapping[str, str]) -> bool:
        changed = False
        for m in self.messages(body):
            if not isinstance(m, dict) or m.get("role") != "user" or not isinstance(m.get("content"), list):
                continue
            for b in m["content"]:
                if isinstance(b, dict) and b.get("type") == "tool_result" and b.get("tool_use_id") in notes:
                    note = notes[b["tool_use_id"]]
                    c = b.get("content")
                    if isinstance(c, list):
                        b["content"] = [{"type": "text", "text": note}, *c]
                    else:
                        b["content"] = f"{note}\n{c or ''}"
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
        blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        blocks.extend(
            {
                "type": "tool_use",
                "id": c.id,
                "name": c.name,
                "input": c.arguments if isinstance(c.arguments, dict) else {},
            }
            for c in calls
        )
        messages = body.setdefault("messages", [])
        added = [
            {"role": "assistant", "content": blocks},
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": c.id, "content": results[c.id], "is_error": True}
                    for c in calls
                ],
            },
        ]
        pos = len(messages) if at is None else at
        messages[pos:pos] = added

    # ---------------------------------------------------------------- responses

    def response_calls(self, obj: Mapping[str, Any]) -> list[ToolCall]:
        calls = []
        for b in obj.get("content") or ():
            if isinstance(b, (dict, Mapping)) and b.get("type") == "tool_use":
                args = b.get("input")
                calls.append(
                    ToolCall(
                        str(b.get("id") or ""), str(b.get("name") or ""), args if args is not None else {}
                    )
                )
        return calls

    def response_text(self, obj: Mapping[str, Any]) -> str:
        return "".join(
            b.get("text", "")
            for b in obj.get("content") or ()
            if isinstance(b, (dict, Mapping)) and b.get("type") == "text"
        )

    def rewrite_response(self, obj: dict[str, Any], denied: Mapping[str, str]) -> None:
        content = obj.get("content") or []
        obj["content"] = [
            {"type": "text", "text": denied[b["id"]]}
            if isinstance(b, (dict, Mapping)) and b.get("type") == "tool_use" and b.get("id") in denied
            else b
            for b in content
        ]
        left = any(isinstance(b, (dict, Mapping)) and b.get("type") == "tool_use" for b in obj["content"])
        if not left and obj.get("stop_reason") == "tool_use":
            obj["stop_reason"] = "end_turn"

    def replace_text(self, obj: dict[str, Any], old: str, new: str) -> bool:
        for b in obj.get("content") or ():
            if isinstance(b, dict) and b.get("type") == "text" and old in (b.get("text") or ""):
                b["text"] = b["text"].replace(old, new, 1)
                return True
        return False

    def stream(self, decide: Decide, hold: bool, want_text: bool = True) -> StreamTranslator:
        return _AnthropicStream(decide, hold, want_text)

    # ---------------------------------------------------------------- errors

    def error_body(self, message: str, kind: str) -> dict[str, Any]:
        return {"type": "error", "error": {"type": kind, "message": message}}

    def stream_error(self, message: str, kind: str) -> bytes:
        return encode_event(_json.dumps(self.error_body(message, kind)).decode("utf-8"), "error")


@dataclass(slots=True)
class _Block:
    index: int
    id: str
    name: str
    initial: Any
    parts: list[str] = field(default_factory=list)
    decided: bool = False
    denial: str | None = None


@dataclass(slots=True)
class _Held:
    raw: bytes
    type: str
    obj: Any
    ref: int | None  # index of the tool_use block the event belongs to


#: Events that never carry a tool call.
_INERT_EVENTS = frozenset({"ping", "message_start"})


class _AnthropicStream(StreamTranslator):
    def __init__(self, decide: Decide, hold: bool, want_text: bool = True) -> None:
        super().__init__(decide, hold, want_text)
        self._blocks: dict[int, _Block] = {}
        self._open = 0  # tool_use blocks started and not yet complete

    def _inert(self, ev: SSEEvent) -> bool:
        """Needs no parsing: a ping or message start, or — while no tool_use block is open, so it cannot
        belong to one — a delta of a text (unless text is wanted), thinking or other block."""
        data = ev.data
        if data[:1] != "{" or data[-1:] != "}":
            return False  # not shaped like a JSON object: parsed, so malformed data stops the observation
        if ev.event in _INERT_EVENTS:
            return True
        return (
            ev.event == "content_block_delta"
            and not self._open
            and (not self.want_text or '"text_delta"' not in data)
        )

    def _feed(self, ev: SSEEvent) -> list[bytes]:
        obj: Any = None
        etype = ev.event or ""
        ref: int | None = None
        if ev.data and self._inert(ev):
            if not self._held:  # nothing held back: forward at once, in order
                return [ev.raw]
        elif ev.data:
            try:
                obj = _json.loads(ev.data)
            except ValueError as exc:
                self.error = exc  # unread: counted, and withheld under a fail-closed gate
                return self.abandon(ev)
            if isinstance(obj, (dict, Mapping)):
                etype = str(obj.get("type") or etype)
                ref = self._observe(etype, obj)
        if not self.hold:
            return [ev.raw]
        self._held.append(_Held(ev.raw, etype, obj, ref))
        return self._release()

    def _finish(self) -> list[bytes]:
        for b in self._blocks.values():
            self._complete(b)
        return self._release()

    # ---------------------------------------------------------------- internals

    def _observe(self, etype: str, obj: Mapping[str, Any]) -> int | None:
        if etype == "message_stop":
            self.finished = True
            return None
        idx = obj.get("index")
        if etype == "content_block_start":
            cb = obj.get("content_block") or {}
            if cb.get("type") == "tool_use" and isinstance(idx, int):
                old = self._blocks.get(idx)
                if old is None or old.decided:
                    self._open += 1
                self._blocks[idx] = _Block(
                    idx, str(cb.get("id") or ""), str(cb.get("name") or ""), cb.get("input")
                )
                return idx
            if cb.get("type") == "text":
                self._add_text(str(cb.get("text") or ""))
            return None
        block = self._blocks.get(idx) if isinstance(idx, int) else None
        if etype == "content_block_delta":
            delta = obj.get("delta") or {}
            if block is not None:
                if delta.get("type") == "input_json_delta":
                    block.parts.append(str(delta.get("partial_json") or ""))
                return block.index
            if delta.get("type") == "text_delta":
                self._add_text(str(delta.get("text") or ""))
            return None
        if etype == "content_block_stop" and block is not None:
            self._complete(block)
            return block.index
        return None

    def _complete(self, b: _Block) -> None:
        if b.decided:
            return
        self._open -= 1
        raw = "".join(b.parts)
        if raw:
            args: Any = parse_arguments(raw)
        else:
            args = b.initial if isinstance(b.initial, Mapping) else {}
            raw = _json.dumps(args).decode("utf-8")
        b.denial = self._decide(ToolCall(b.id, b.name, args, raw))
        b.decided = True

    def _release(self) -> list[bytes]:
        out: list[bytes] = []
        while self._held:
            h = self._held[0]
            if h.ref is not None and not self._blocks[h.ref].decided:
                break
            out.extend(self._emit(h))
            self._held.popleft()
        return out

    def _emit(self, h: _Held) -> list[bytes]:
        if not self.denied:
            return [h.raw]
        if h.ref is not None:
            b = self._blocks[h.ref]
            if b.denial is None:
                return [h.raw]
            if h.type == "content_block_start":
                start = {
                    "type": "content_block_start",
                    "index": b.index,
                    "content_block": {"type": "text", "text": ""},
                }
                text_delta = {
                    "type": "content_block_delta",
                    "index": b.index,
                    "delta": {"type": "text_delta", "text": b.denial},
                }
                return [_event(start), _event(text_delta)]
            if h.type == "content_block_stop":
                return [h.raw]
            return []  # the denied call's input fragments
        if h.type == "message_delta" and isinstance(h.obj, dict):
            delta = h.obj.get("delta")
            if (
                isinstance(delta, dict)
                and delta.get("stop_reason") == "tool_use"
                and all(b.denial is not None for b in self._blocks.values())
            ):
                delta["stop_reason"] = "end_turn"
                return [_event(h.obj)]
        return [h.raw]


def _event(obj: Mapping[str, Any]) -> bytes:
    return encode_event(_json.dumps(obj).decode("utf-8"), str(obj["type"]))
