"""``json.loads`` for the loaders, parsed by orjson when it is installed and provably gives the same result.

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
(one difference remains: this function is one more frame on the stack, so text nested to within one
level of the recursion limit can fail here where a direct json.loads call would just succeed).
"""

from __future__ import annotations

import json
import sys
from typing import Any

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
    """Exactly ``json.loads(data)``: the same value, or the same exception."""
    if _orjson is not None:
        try:
            raw = data if isinstance(data, bytes) else data.encode()
        except UnicodeEncodeError:  # lone surrogates: only the standard library takes them
            return json.loads(data)
        marks = raw.translate(_MARKS)
        # len - len(replace) = marks.count(b"["), which compares byte by byte; replace() skips with memchr.
        if _LONG_DIGITS not in marks and _stack_has_room(len(marks) - len(marks.replace(b"[", b""))):
            try:
                return _orjson.loads(raw)
            except _orjson.JSONDecodeError:
                pass  # not JSON to orjson; json.loads may still accept it, or explains why not
    return json.loads(data)


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
