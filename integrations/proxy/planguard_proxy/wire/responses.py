"""OpenAI Responses API (``POST /v1/responses``), streaming and not.

A request's ``input`` is a string (one user message) or a list of items: messages (``role`` + ``content``,
a string or ``input_text`` parts), ``function_call`` items the model asked for earlier and the agent's
``function_call_output`` items (``call_id`` + ``output``). ``instructions`` is the system prompt. A response's
``output`` is a list of items: ``message`` (``output_text`` parts), ``function_call`` (``call_id``, ``name``,
``arguments`` as JSON text), ``reasoning``, ...

Streams are ``event: response.*`` SSE events with a ``sequence_number``: ``response.created`` …
``response.output_item.added`` (an item begins at ``output_index``), ``response.output_text.delta`` /
``response.function_call_arguments.delta`` fragments, ``response.output_item.done`` (the whole item) …
``response.completed`` (the whole response again). A call is decided when its ``output_item.done`` arrives.

``previous_response_id``: the client sends only the new items (the upstream holds the history). The proxy
needs no history: the conversation's state is its own log, keyed by the session header or by the first
request's instructions and first user message; a chained request carries the results of the calls of the
previous response as ``function_call_output`` items, which is all the monitor reads.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .. import _json
from ..sse import SSEEvent
from .base import Decide, StreamTranslator, ToolCall, ToolResult, Wire, text_of
from .openai import parse_arguments

__all__ = ["ResponsesWire"]


def _items(body: Mapping[str, Any]) -> list[Any]:
    inp = body.get("input")
    if isinstance(inp, str):
        return [{"role": "user", "content": inp}]
    return inp if isinstance(inp, list) else []


def _denial_message(item_id: str, text: str) -> dict[str, Any]:
    """The assistant message an output item is replaced with when its call is denied."""
    return {
        "type": "message",
        "id": "msg_pg_" + item_id,
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


class ResponsesWire(Wire):
    name = "responses"
    api = "openai"
    chains = True
    path = "/responses"

    def messages(self, body: Mapping[str, Any]) -> list[Any]:
        return _items(body)

    def session_material(self, body: Mapping[str, Any]) -> list[Any]:
        system = body.get("instructions") if isinstance(body.get("instructions"), str) else None
        user = None
        for m in _items(body):
            if not isinstance(m, dict) or m.get("type", "message") != "message":
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
        for m in reversed(_items(body)):
            if isinstance(m, dict) and m.get("type") == "function_call_output" and m.get("call_id") in wanted:
                wanted.discard(m["call_id"])
                out.append(ToolResult(str(m["call_id"]), text_of(m.get("output"))))
                if not wanted:
                    break
        out.reverse()
        return out

    def inject(self, body: dict[str, Any], text: str) -> None:
        items = _items(body)
        body["input"] = [*items, {"role": "user", "content": text}]

    def annotate_results(self, body: dict[str, Any], notes: Mapping[str, str]) -> bool:
        changed = False
        for m in _items(body):
            if isinstance(m, dict) and m.get("type") == "function_call_output" and m.get("call_id") in notes:
                note = notes[m["call_id"]]
                out = m.get("output")
                if isinstance(out, list):
                    m["output"] = [{"type": "input_text", "text": note}, *out]
                else:
                    m["output"] = f"{note}\n{out or ''}"
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
        added: list[Any] = []
        if text:
            added.append({"role": "assistant", "content": text})
        for c in calls:
            args = c.raw_arguments or _json.dumps(c.arguments).decode("utf-8")
            added.append({"type": "function_call", "call_id": c.id, "name": c.name, "arguments": args})
            added.append({"type": "function_call_output", "call_id": c.id, "output": results[c.id]})
        items = _items(body)
        body["input"] = items[:at] + added + items[at:] if at is not None else [*items, *added]

    # ---------------------------------------------------------------- responses

    def response_calls(self, obj: Mapping[str, Any]) -> list[ToolCall]:
        calls = []
        for item in obj.get("output") or ():
            if isinstance(item, dict) and item.get("type") == "function_call":
                raw = item.get("arguments") or ""
                raw = raw if isinstance(raw, str) else _json.dumps(raw).decode("utf-8")
                calls.append(
                    ToolCall(
                        str(item.get("call_id") or ""), str(item.get("name") or ""), parse_arguments(raw), raw
                    )
                )
        return calls

    def response_text(self, obj: Mapping[str, Any]) -> str:
        return "\n".join(
            text_of(item.get("content"))
            for item in obj.get("output") or ()
            if isinstance(item, dict) and item.get("type") == "message"
        )

    def rewrite_response(self, obj: dict[str, Any], denied: Mapping[str, str]) -> None:
        output = obj.get("output") or []
        for i, item in enumerate(output):
            if (
                isinstance(item, dict)
                and item.get("type") == "function_call"
                and item.get("call_id") in denied
            ):
                output[i] = _denial_message(str(item.get("id") or item["call_id"]), denied[item["call_id"]])
        if isinstance(obj.get("output_text"), str):  # some servers add the SDK's convenience field
            obj["output_text"] = self.response_text(obj)

    def replace_text(self, obj: dict[str, Any], old: str, new: str) -> bool:
        for item in obj.get("output") or ():
            if not isinstance(item, dict) or item.get("type") != "message":
                continue
            for part in item.get("content") or ():
                if isinstance(part, dict) and isinstance(part.get("text"), str) and old in part["text"]:
                    part["text"] = part["text"].replace(old, new, 1)
                    return True
        return False

    def stream(self, decide: Decide, hold: bool, want_text: bool = True) -> StreamTranslator:
        return _ResponsesStream(decide, hold, want_text)

    # ---------------------------------------------------------------- errors

    def error_body(self, message: str, kind: str) -> dict[str, Any]:
        return {"error": {"message": message, "type": kind, "param": None, "code": kind}}

    def stream_error(self, message: str, kind: str) -> bytes:
        data = _json.dumps({"type": "error", "code": kind, "message": message, "param": None})
        return b"event: error\ndata: " + data + b"\n\n"


@dataclass(slots=True)
class _Held:
    raw: bytes
    obj: Any
    index: int | None  # output_index of the function call the event belongs to
    kind: str


#: Events that can begin, carry or end a function call, or end the response: the only ones parsed (unless
#: the text is wanted); text deltas, the bulk of a stream, pass as they are.
_WATCHED = ("response.output_item.", "response.function_call_arguments.", "response.completed")
_ENDS = ("response.completed", "response.incomplete", "response.failed")


class _ResponsesStream(StreamTranslator):
    def __init__(self, decide: Decide, hold: bool, want_text: bool = True) -> None:
        super().__init__(decide, hold, want_text)
        self._open: dict[int, bool] = {}  # output_index of a function call → decided
        self._denied_at: dict[int, str] = {}  # output_index of a denied call → its denial text
        self._seq: dict[int, list[int]] = {}  # output_index → sequence numbers of its held events

    def _feed(self, ev: SSEEvent) -> list[bytes]:
        kind = ev.event or ""
        watched = kind.startswith(_WATCHED) or (self.want_text and kind == "response.output_text.delta")
        if kind and not watched and kind not in _ENDS:
            return [ev.raw] if not self._held or not self.hold else self._hold(ev, None, None, kind)
        try:
            obj = _json.loads(ev.data) if ev.data else None
        except ValueError as exc:
            self.error = exc  # unread: counted, and withheld under a fail-closed gate
            return self.abandon(ev)
        if not isinstance(obj, dict):
            return [ev.raw] if not self.hold else self._hold(ev, obj, None, kind)
        kind = str(obj.get("type") or kind)
        raw_index = obj.get("output_index")
        index = raw_index if isinstance(raw_index, int) else -1
        item = obj.get("item")
        belongs: int | None = None
        if kind == "response.output_text.delta" and isinstance(obj.get("delta"), str):
            self._add_text(obj["delta"])
        elif (
            kind == "response.output_item.added"
            and isinstance(item, dict)
            and item.get("type") == "function_call"
        ):
            self._open[index] = False
            belongs = index
        elif kind.startswith("response.function_call_arguments.") and index in self._open:
            belongs = index
        elif kind == "response.output_item.done" and index in self._open:
            belongs = index
            if isinstance(item, dict):
                raw = item.get("arguments") or ""
                call = ToolCall(
                    str(item.get("call_id") or ""), str(item.get("name") or ""), parse_arguments(raw), raw
                )
                msg = self._decide(call)
                if msg is not None:
                    self._denied_at[index] = msg
            self._open[index] = True
        elif kind in _ENDS:
            self.finished = True
            resp = obj.get("response")
            if isinstance(resp, dict) and isinstance(resp.get("id"), str):
                self.response_id = resp["id"]
            for i in self._open:
                self._open[i] = True
        if not self.hold:
            return [ev.raw]
        return self._hold(ev, obj, belongs, kind)

    def _hold(self, ev: SSEEvent, obj: Any, index: int | None, kind: str) -> list[bytes]:
        self._held.append(_Held(ev.raw, obj, index, kind))
        return self._release()

    def _finish(self) -> list[bytes]:
        for i in self._open:
            self._open[i] = True
        return self._release()

    def _release(self) -> list[bytes]:
        out: list[bytes] = []
        held = self._held
        while held:
            h = held[0]
            if h.index is not None and not self._open.get(h.index, True):
                break
            out.extend(self._emit(h))
            held.popleft()
        return out

    def _emit(self, h: _Held) -> list[bytes]:
        """A held event as it leaves: a denied call's events become one assistant message saying why (its
        sequence numbers reused), and the final response lists that message in the call's place."""
        obj = h.obj
        if not self._denied_at or not isinstance(obj, dict):
            return [h.raw]
        if h.index is not None and h.index in self._denied_at:
            seqs = self._seq.setdefault(h.index, [])
            if isinstance(obj.get("sequence_number"), int):
                seqs.append(obj["sequence_number"])
            if h.kind != "response.output_item.done":
                return []
            item = obj.get("item") or {}
            return _message_events(h.index, str(item.get("id") or ""), self._denied_at[h.index], seqs)
        if h.kind in _ENDS and isinstance(obj.get("response"), dict):
            ResponsesWire().rewrite_response(obj["response"], self.denied)
            return [_event(h.kind, obj)]
        return [h.raw]


def _event(kind: str, obj: Mapping[str, Any]) -> bytes:
    return b"event: " + kind.encode("utf-8") + b"\ndata: " + _json.dumps(obj) + b"\n\n"


def _message_events(index: int, item_id: str, text: str, seqs: list[int]) -> list[bytes]:
    """The events of an assistant message at ``output_index`` ``index`` saying ``text`` (a denied call's
    place in the stream), numbered with the sequence numbers of the call's events it replaces."""
    msg = _denial_message(item_id, text)
    mid = msg["id"]
    empty = {**msg, "status": "in_progress", "content": []}
    part = {"type": "output_text", "text": "", "annotations": []}
    events: list[tuple[str, dict[str, Any]]] = [
        ("response.output_item.added", {"output_index": index, "item": empty}),
        (
            "response.content_part.added",
            {"item_id": mid, "output_index": index, "content_index": 0, "part": part},
        ),
        (
            "response.output_text.delta",
            {"item_id": mid, "output_index": index, "content_index": 0, "delta": text},
        ),
        (
            "response.output_text.done",
            {"item_id": mid, "output_index": index, "content_index": 0, "text": text},
        ),
        (
            "response.content_part.done",
            {"item_id": mid, "output_index": index, "content_index": 0, "part": {**part, "text": text}},
        ),
        ("response.output_item.done", {"output_index": index, "item": msg}),
    ]
    out = []
    last = seqs[-1] if seqs else 0
    for i, (kind, fields) in enumerate(events):
        seq = seqs[i] if i < len(seqs) - 1 else last
        out.append(_event(kind, {"type": kind, "sequence_number": seq, **fields}))
    return out
