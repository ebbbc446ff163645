"""JSON in and out: orjson when installed (it parses a long conversation several times faster), else the
standard library. Output is compact UTF-8 either way."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["dumps", "loads"]

_orjson: Any
try:
    import orjson as _orjson
except ImportError:  # pragma: no cover - depends on the environment
    _orjson = None


def loads(data: bytes | str) -> Any:
    """The parsed body; a ``ValueError`` when it is not JSON, or nested too deeply.

    Not through :mod:`planguard.documents` (whose depth walk would cost every request with a long history):
    orjson itself refuses nesting past 1024 levels with a ``ValueError``, and the standard library's
    ``RecursionError`` is turned into one, so a hostile body is "not JSON" to every caller. What the proxy
    hands on from a body to planguard (tool arguments, results) is depth-limited there."""
    try:
        if _orjson is not None:
            return _orjson.loads(data)
        return json.loads(data)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None


def dumps(obj: Any) -> bytes:
    if _orjson is not None:
        out: bytes = _orjson.dumps(obj)
        return out
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
