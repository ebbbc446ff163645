"""What the proxy needs from a model API's wire format, and nothing about planguard.

A ``Wire`` reads tool calls out of responses (whole, or incrementally from a stream), reads tool results
out of requests, adds a final message to a request, and rewrites a response whose tool call was denied.
``decide`` callbacks answer a completed tool call with a denial message, or ``None`` to let it through.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..sse import SSEEvent

__all__ = ["MAX_TEXT_CHARS", "Decide", "StreamTranslator", "ToolCall", "ToolResult", "Wire", "text_of"]

#: Assistant text the proxy keeps per response (for text actions); the rest still streams through.
MAX_TEXT_CHARS = 1_000_000


@dataclass(slots=True)
class ToolCall:
    id: str
    name: str
    arguments: Any  # a parsed object, or the raw argument text when it is not JSON
    raw_arguments: str | None = None


@dataclass(slots=True)
class ToolResult:
    call_id: str
    text: str
    is_error: bool = False


#: A completed tool call → the denial message to show instead of it, or None to let it through.
Decide = Callable[[ToolCall], "str | None"]


def text_of(content: Any) -> str:
    """The text of a message ``content``: a string, or a list of text parts/blocks (others skipped)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for p in content:
            if isinstance(p, str):
                parts.append(p)
            elif isinstance(p, (dict, Mapping)):
                t = p.get("text")
                if isinstance(t, str):
                    parts.append(t)
                elif p.get("type") == "tool_result":
                    parts.append(text_of(p.get("content")))
        return "\n".join(parts)
    return str(content)


def _said(content: Any) -> str:
    """The text a user message says: a string, or its text parts (tool results and media are not said)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(
        p if isinstance(p, str) else p["text"]
        for p in content
        if isinstance(p, str)
        or (
            isinstance(p, (dict, Mapping))
            and p.get("type", "text") in ("text", "input_text")
            and isinstance(p.get("text"), str)
        )
    )


class StreamTranslator(ABC):
    """One streamed response: feed upstream events, forward what comes out.

    With ``hold`` set, the events of a tool call are held back until the call is complete and decided, so a
    denied call can be replaced before the client sees it; everything else passes through in order.

    Most events of a stream are text deltas. Without ``want_text`` (the assistant text is only needed for
    text actions) an event is parsed only when its bytes can carry a tool call or the end of one (a cheap
    substring test); the others pass through as they are, in order with the held ones.
    """

    def __init__(self, decide: Decide, hold: bool, want_text: bool = True) -> None:
        self.decide = decide
        self.hold = hold
        self.want_text = want_text
        self.calls: list[ToolCall] = []
        self.denied: dict[str, str] = {}
        self.error: Exception | None = None  # set when the translator gave up (the rest passes through raw)
        self._text: list[str] = []
        self._text_len = 0
        self._held: deque[Any] = deque()  # items with a ``raw`` attribute, in arrival order
        self._broken = False
        self.finished = False  # the upstream sent its end-of-stream marker
        self.response_id: str | None = None  # the response's id, where later requests refer to it

    def feed(self, ev: SSEEvent) -> list[bytes]:
        """Bytes to forward now for one upstream event (nothing while a tool call is held back)."""
        if self._broken:
            return [ev.raw]
        try:
            return self._feed(ev)
        except Exception as exc:
            self.error = exc
            return self.abandon(ev)

    def finish(self) -> list[bytes]:
        """The upstream stream ended: decide open calls, release everything held."""
        if self._broken:
            return []
        try:
            return self._finish()
        except Exception as exc:
            self.error = exc
            return self.abandon()

    def abandon(self, ev: SSEEvent | None = None) -> list[bytes]:
        """Stop observing: the held events' original bytes (and ``ev``'s, if not held), in order."""
        self._broken = True
        out = [h.raw for h in self._held]
        self._held.clear()
        if ev is not None and not any(r is ev.raw for r in out):
            out.append(ev.raw)
        return out

    @abstractmethod
    def _feed(self, ev: SSEEvent) -> list[bytes]: ...

    @abstractmethod
    def _finish(self) -> list[bytes]: ...

    @property
    def text(self) -> str:
        return "".join(self._text)

    def _add_text(self, t: str) -> None:
        if t and self._text_len < MAX_TEXT_CHARS:
            self._text.append(t)
            self._text_len += len(t)

    def _decide(self, call: ToolCall) -> str | None:
        self.calls.append(call)
        msg = self.decide(call)
        if msg is not None:
            self.denied[call.id] = msg
        return msg


class Wire(ABC):
    """One model API's wire format."""

    name: str
    #: Which API's upstream (and credentials) the wire's requests go to.
    api: str
    #: Later requests may name an earlier response (``previous_response_id``) instead of resending it.
    chains: bool = False
    #: Path suffix the wire serves (``/v1/chat/completions``, ``/v1/messages``).
    path: str

    # ---------------------------------------------------------------- requests

    @abstractmethod
    def messages(self, body: Mapping[str, Any]) -> list[Any]: ...

    @abstractmethod
    def session_material(self, body: Mapping[str, Any]) -> list[Any]:
        """What identifies a conversation: system prompt and first user message (hashed by the caller)."""

    @abstractmethod
    def tool_results(self, body: Mapping[str, Any], ids: Iterable[str]) -> list[ToolResult]:
        """Results in the request for the given open call ids, in request order."""

    def user_turns(self, body: Mapping[str, Any]) -> list[str]:
        """The user's messages after the model's last turn in the request's history, in order: what the
        user said since the model last spoke. Tool results, system and developer messages are no turns,
        and every item the model produced (an assistant message, a function call, reasoning) ends the
        search. A chained request (``previous_response_id``) carries only its new items: all of them."""
        out = []
        for m in reversed(self.messages(body)):
            if not isinstance(m, (dict, Mapping)):
                continue
            role, kind = m.get("role"), m.get("type")
            if role == "assistant" or (
                isinstance(kind, str) and kind != "message" and not kind.endswith("_output")
            ):
                break
            if role == "user":
                text = _said(m.get("content"))
                if text.strip():
                    out.append(text)
        out.reverse()
        return out

    @abstractmethod
    def inject(self, body: dict[str, Any], text: str) -> None:
        """Add ``text`` as the request's final user turn (never between a tool call and its result)."""

    @abstractmethod
    def annotate_results(self, body: dict[str, Any], notes: Mapping[str, str]) -> bool:
        """Prefix the results of the given call ids with a note; True when anything changed."""

    @abstractmethod
    def answer_calls(
        self,
        body: dict[str, Any],
        text: str,
        calls: list[ToolCall],
        results: Mapping[str, str],
        at: int | None = None,
    ) -> None:
        """Add the model's turn (``text`` and ``calls``) and each call's result (call id → text) to the
        request, as the agent would have: the request asks the model again after those calls. At the end of
        the history, or before its message ``at`` (the same exchange shown again on a later turn)."""

    # ---------------------------------------------------------------- responses

    @abstractmethod
    def response_calls(self, obj: Mapping[str, Any]) -> list[ToolCall]: ...

    @abstractmethod
    def response_text(self, obj: Mapping[str, Any]) -> str: ...

    @abstractmethod
    def rewrite_response(self, obj: dict[str, Any], denied: Mapping[str, str]) -> None:
        """Replace the denied tool calls by text giving the reason (the model's turn then ends)."""

    @abstractmethod
    def replace_text(self, obj: dict[str, Any], old: str, new: str) -> bool:
        """Replace ``old`` by ``new`` in the response's assistant text; True when found."""

    @abstractmethod
    def stream(self, decide: Decide, hold: bool, want_text: bool = True) -> StreamTranslator: ...

    # ---------------------------------------------------------------- errors

    @abstractmethod
    def error_body(self, message: str, kind: str) -> dict[str, Any]:
        """An error body in the API's own shape (``kind``: e.g. ``timeout_error``, ``api_error``)."""

    @abstractmethod
    def stream_error(self, message: str, kind: str) -> bytes:
        """An SSE error event in the API's own shape, for failures after the stream has started."""
