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
    if _orjson is not None:
        return _orjson.loads(data)
    return json.loads(data)


def dumps(obj: Any) -> bytes:
    if _orjson is not None:
        out: bytes = _orjson.dumps(obj)
        return out
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
