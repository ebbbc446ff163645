"""JSON in and out, one parser and one policy for every body, event and tool argument the proxy reads.

orjson parses (a long conversation several times faster than the standard library). What orjson refuses
and the standard library reads — ``NaN``/``Infinity``, a lone surrogate escape (``"\\ud800"``), a number
past a double — and, in tool arguments, an integer past 64 bits (which orjson reads as an inexact float)
is *non-standard JSON*. It is never passed on unread: the policy of the request being handled
(:func:`policy`, the proxy's ``nonstandard_json`` setting) either observes it with the standard library's
reading (``observe``, the default) or refuses it (``refuse``: :class:`NonStandardJSON`, which callers treat
as an unreadable body — the request gets a 400, an answer is withheld when a fail-closed gate is on, else
forwarded unchanged and counted). Either way it is counted in the policy's ``counts``.

Output is compact UTF-8; what orjson cannot write (a lone surrogate) is written by the standard library with
non-ASCII escaped, as the JSON it came from had it, and what it would change (NaN, which orjson writes as
``null``) keeps the standard library's token when :func:`dumps` is told the object came from non-standard
JSON.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

__all__ = ["JSONPolicy", "NonStandardJSON", "dumps", "loads", "policy", "read"]

#: An integer literal of 20 digits or more: past 64 bits, orjson reads it as a float (``2**64`` has 20).
_LONG_INT = re.compile(rb"\d{20}")


class NonStandardJSON(ValueError):
    """JSON only the standard library reads, refused by the policy (``nonstandard_json: refuse``)."""


@dataclass(slots=True)
class JSONPolicy:
    """What to do with non-standard JSON, and how often it was met (``observed`` / ``refused``)."""

    nonstandard: Literal["observe", "refuse"] = "observe"
    counts: dict[str, int] = field(default_factory=lambda: {"observed": 0, "refused": 0})

    def met(self, value: Any) -> Any:
        """Non-standard JSON was read as ``value``: counted, then observed or refused."""
        if self.nonstandard == "refuse":
            self.counts["refused"] += 1
            raise NonStandardJSON("non-standard JSON (NaN, infinity, lone surrogate or over-long integer)")
        self.counts["observed"] += 1
        return value


#: Outside a request (no :func:`policy` block): observe, counted here.
_DEFAULT = JSONPolicy()
_POLICY: ContextVar[JSONPolicy | None] = ContextVar("planguard_proxy_json_policy", default=None)


@contextlib.contextmanager
def policy(p: JSONPolicy) -> Iterator[JSONPolicy]:
    """Within this block (a request and its answer), :func:`loads` follows ``p`` and counts in it."""
    token = _POLICY.set(p)
    try:
        yield p
    finally:
        _POLICY.reset(token)


def loads(data: bytes | str, *, exact_integers: bool = False) -> Any:
    """The parsed value (see :func:`read`)."""
    return read(data, exact_integers=exact_integers)[0]


def read(data: bytes | str, *, exact_integers: bool = False) -> tuple[Any, bool]:
    """The parsed value and whether it was standard JSON; a ``ValueError`` when it is not JSON (or nested
    too deeply), a :class:`NonStandardJSON` when it is non-standard and the policy refuses it.

    ``exact_integers`` (tool arguments, a few hundred bytes): an integer past 64 bits counts as
    non-standard and, observed, keeps its exact value. Not for whole bodies: the digit scan would cost every
    request with a long history, and an over-long integer there changes nothing the proxy decides on.

    Not through :mod:`planguard.documents` (whose depth walk would cost every request with a long history):
    orjson refuses nesting past 1024 levels and the standard library's ``RecursionError`` becomes a
    ``ValueError``, so a hostile body is "not JSON" to every caller. What the proxy hands on from a body to
    planguard (tool arguments, results) is depth-limited there."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        pass
    else:
        if not exact_integers or _LONG_INT.search(data.encode() if isinstance(data, str) else data) is None:
            return value, True
        exact = json.loads(data)
        return (value, True) if exact == value else (_current().met(exact), False)
    try:
        value = json.loads(data)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
    return _current().met(value), False


def _current() -> JSONPolicy:
    return _POLICY.get() or _DEFAULT


def dumps(obj: Any, *, standard: bool = True) -> bytes:
    """``obj`` as compact UTF-8 JSON. ``standard=False`` (it was read from non-standard JSON): NaN and
    infinities keep their tokens rather than becoming ``null``."""
    if standard:
        try:
            out: bytes = orjson.dumps(obj)
            return out
        except orjson.JSONEncodeError:
            pass  # a lone surrogate (orjson writes only valid UTF-8), or an integer past 64 bits
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(obj, separators=(",", ":")).encode("ascii")
