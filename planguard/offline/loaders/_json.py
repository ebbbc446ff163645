"""``json.loads`` for the loaders, parsed by orjson when it is installed and provably gives the same result,
within the one document reader's nesting limit (:data:`planguard.documents.MAX_DEPTH`).

Parsing is most of the cost of loading a corpus, and orjson parses these files about twice as fast as the
standard library. Where the two disagree, the standard library's answer is the contract (error messages
name its column, and it accepts NaN, lone surrogates, a BOM, huge numbers). orjson accepts a strict
subset of what ``json.loads`` accepts and returns equal values for it, with two exceptions that are
checked before orjson is asked:

* integers beyond 64 bits, which orjson silently turns into floats: any text with a run of 19 digits
  goes to the standard library (a long digit run inside a string only costs the slower parser);
* nesting deeper than the interpreter's recursion limit allows ``json.loads`` (orjson allows 1024
  levels): a text with more ``[``/``{`` bytes than the stack has room for goes to the standard library.

Anything orjson rejects is parsed again by ``json.loads``, which then returns what it accepts or raises
its own error. tests/test_loaders_json.py checks the equivalence on generated JSON and arbitrary bytes
for documents within the limit.

Trajectories come from outside, so the limit of every other reader applies (a 100,000-deep line must be one
clear error, whatever recursion limit or parser is in use, and nothing recursive downstream may meet a value
nested past it): text nested deeper than ``MAX_DEPTH`` raises :class:`~planguard.documents.DocumentError`
(a ``ValueError``), as ``loads_json`` does. The nesting is checked only when the text has more openers
than the limit, from the count the orjson checks make anyway.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from ...documents import MAX_DEPTH, check_depth, too_deep

__all__ = ["loads"]

_orjson: Any
try:
    import orjson as _orjson
except ImportError:  # pragma: no cover - depends on the environment
    _orjson = None

# One pass over the text marks what the two checks look for: digits become "0", openers become "[".
_MARKS = bytes(48 if 48 <= b <= 57 else 91 if b in (91, 123) else 32 for b in range(256))
# The shortest integers outside orjson's range: 20 digits (>= 2**64) or "-" and 19 (< -2**63).
_LONG_DIGITS = b"0" * 19
# Frames json.loads itself adds (loads -> decode -> raw_decode) plus slack.
_OWN_FRAMES = 8


def loads(data: bytes | str) -> Any:
    """``json.loads(data)``'s value or exception; a document nested deeper than ``MAX_DEPTH`` is a
    :class:`~planguard.documents.DocumentError`."""
    try:
        raw = data if isinstance(data, bytes) else data.encode()
    except UnicodeEncodeError:  # lone surrogates: only the standard library takes them
        assert isinstance(data, str)
        return _within_limit(_stdlib_loads(data), data.count("[") + data.count("{"))
    marks = raw.translate(_MARKS)
    # len - len(replace) = marks.count(b"["), which compares byte by byte; replace() skips with memchr.
    openers = len(marks) - len(marks.replace(b"[", b""))
    if _orjson is not None and _LONG_DIGITS not in marks and _stack_has_room(openers):
        try:
            return _within_limit(_orjson.loads(raw), openers)
        except _orjson.JSONDecodeError:
            pass  # not JSON to orjson; json.loads may still accept it, or explains why not
    return _within_limit(_stdlib_loads(data), openers)


def _stdlib_loads(data: bytes | str) -> Any:
    try:
        return json.loads(data)
    except RecursionError:
        raise too_deep() from None


def _within_limit(value: Any, openers: int) -> Any:
    """``value``, refused when nested past ``MAX_DEPTH`` (only a text with more openers can be)."""
    return check_depth(value) if openers > MAX_DEPTH else value


def _stack_has_room(nesting: int) -> bool:
    """Whether json.loads, called from here, could descend ``nesting`` levels without a RecursionError."""
    frames_allowed = sys.getrecursionlimit() - nesting - _OWN_FRAMES
    if frames_allowed <= 0:
        return False
    try:
        sys._getframe(frames_allowed - 1)  # walks the stack in C, and only as far as it must
    except ValueError:  # the stack is shallower than that
        return True
    return False
