"""Incremental Server-Sent Events framing.

The proxy forwards a stream event by event: an event's bytes leave as soon as its terminating blank line
arrives, so nothing is buffered beyond one event. Each event keeps its raw bytes, so an event the proxy
does not change is forwarded byte for byte.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SSEDecoder", "SSEEvent", "SSEFramingError", "encode_event"]


class SSEFramingError(ValueError):
    """The upstream stream is not SSE (an event grew past the size limit without a terminator)."""


@dataclass(slots=True)
class SSEEvent:
    raw: bytes  # the event as received, terminator included
    event: str | None  # the ``event:`` field, if any
    data: str  # the ``data:`` lines joined with "\n"


_SEPARATORS = (b"\r\n\r\n", b"\n\n", b"\r\r")


class SSEDecoder:
    """Feed bytes, get complete events. ``max_event_bytes`` bounds the one event being assembled.

    Model APIs frame events with ``\\n\\n`` and put one ``data:`` line in most events; that case is parsed
    without splitting lines. Buffers holding a ``\\r`` take the general path (any of the three line
    endings SSE allows)."""

    __slots__ = ("_buf", "_max")

    def __init__(self, max_event_bytes: int = 4 * 1024 * 1024) -> None:
        self._buf = b""
        self._max = max_event_bytes

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        old = len(self._buf)
        buf = self._buf + chunk if old else chunk
        if b"\r" in buf:
            return self._feed_general(buf)
        out: list[SSEEvent] = []
        start = 0
        # The buffer held no separator before this chunk: look only where a new one can start.
        i = buf.find(b"\n\n", old - 1 if old else 0)
        while i != -1:
            end = i + 2
            out.append(_parse_lf(buf[start:end]))
            start = end
            i = buf.find(b"\n\n", start)
        self._buf = buf[start:] if start else buf
        if len(self._buf) > self._max:
            raise SSEFramingError(f"SSE event larger than {self._max} bytes without a terminator")
        return out

    def _feed_general(self, buf: bytes) -> list[SSEEvent]:
        out: list[SSEEvent] = []
        start = 0
        while True:
            cut = _find_separator(buf, start)
            if cut is None:
                break
            end, sep_len = cut
            raw = buf[start : end + sep_len]
            ev = _parse(raw[: end - start])
            if ev is not None:
                ev.raw = raw
                out.append(ev)
            else:  # comment-only / empty event: still forward it unchanged
                out.append(SSEEvent(raw, None, ""))
            start = end + sep_len
        self._buf = buf[start:] if start else buf
        if len(self._buf) > self._max:
            raise SSEFramingError(f"SSE event larger than {self._max} bytes without a terminator")
        return out

    def take_rest(self) -> bytes:
        """Whatever trails the last complete event (an unterminated final event)."""
        rest = self._buf
        self._buf = b""
        return rest


def _find_separator(buf: bytes, start: int) -> tuple[int, int] | None:
    best: tuple[int, int] | None = None
    for sep in _SEPARATORS:
        i = buf.find(sep, start)
        if i != -1 and (best is None or i < best[0]):
            best = (i, len(sep))
    return best


def _parse_lf(raw: bytes) -> SSEEvent:
    """One ``\\n``-framed event, terminator included."""
    text = raw[:-2].decode("utf-8", errors="replace")
    if text.startswith("data:") and "\n" not in text:
        return SSEEvent(raw, None, text[6:] if text.startswith("data: ") else text[5:])
    ev = _parse(text)
    if ev is None:
        return SSEEvent(raw, None, "")
    ev.raw = raw
    return ev


def _parse(block: bytes | str) -> SSEEvent | None:
    text = block.decode("utf-8", errors="replace") if isinstance(block, bytes) else block
    event: str | None = None
    data: list[str] = []
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    for line in text.split("\n"):
        if not line or line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "data":
            data.append(value)
        elif name == "event":
            event = value
    if event is None and not data:
        return None
    return SSEEvent(b"", event, "\n".join(data))


def encode_event(data: str, event: str | None = None) -> bytes:
    """One SSE event (``event:`` line when given, then one ``data:`` line per line of ``data``)."""
    head = f"event: {event}\n" if event else ""
    body = "".join(f"data: {line}\n" for line in data.split("\n"))
    return (head + body + "\n").encode("utf-8")
