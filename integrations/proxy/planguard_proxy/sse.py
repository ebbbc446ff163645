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
    """Feed bytes, get complete events. ``max_event_bytes`` bounds the one event being assembled."""

    __slots__ = ("_buf", "_max")

    def __init__(self, max_event_bytes: int = 4 * 1024 * 1024) -> None:
        self._buf = bytearray()
        self._max = max_event_bytes

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        self._buf += chunk
        out: list[SSEEvent] = []
        while True:
            cut = _find_separator(self._buf)
            if cut is None:
                break
            end, sep_len = cut
            raw = bytes(self._buf[: end + sep_len])
            del self._buf[: end + sep_len]
            ev = _parse(raw[:end])
            if ev is not None:
                ev.raw = raw
                out.append(ev)
            else:  # comment-only / empty event: still forward it unchanged
                out.append(SSEEvent(raw, None, ""))
        if len(self._buf) > self._max:
            raise SSEFramingError(f"SSE event larger than {self._max} bytes without a terminator")
        return out

    def take_rest(self) -> bytes:
        """Whatever trails the last complete event (an unterminated final event)."""
        rest = bytes(self._buf)
        self._buf.clear()
        return rest


def _find_separator(buf: bytearray) -> tuple[int, int] | None:
    best: tuple[int, int] | None = None
    for sep in _SEPARATORS:
        i = buf.find(sep)
        if i != -1 and (best is None or i < best[0]):
            best = (i, len(sep))
    return best


def _parse(block: bytes) -> SSEEvent | None:
    text = block.decode("utf-8", errors="replace")
    event: str | None = None
    data: list[str] = []
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
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
