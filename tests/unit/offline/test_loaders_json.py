"""The loaders' JSON reader: ``planguard.offline.loaders._json.loads`` is exactly ``json.loads`` (same
value, same exception and message: the loaders' errors name its column) within the document nesting limit,
and one DocumentError past it.
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any

import pytest

from planguard.offline.loaders import _json


def outcome(parse: Any, data: bytes | str) -> tuple[Any, ...]:
    try:
        return ("value", canonical(parse(data)))
    except RecursionError:
        return ("recursion",)
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError: message and position must match
        return ("error", type(exc).__name__, str(exc))


def canonical(value: Any) -> Any:
    """Comparable form that tells int from float, -0.0 from 0.0 and keeps NaN equal to itself."""
    if isinstance(value, dict):
        return ("dict", [(k, canonical(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", [canonical(v) for v in value])
    if isinstance(value, float):
        return ("float", "nan" if math.isnan(value) else value.hex())
    return (type(value).__name__, value)


def same_as_stdlib(data: bytes | str) -> None:
    assert outcome(_json.loads, data) == outcome(json.loads, data)


@pytest.mark.parametrize(
    "text",
    [
        "18446744073709551615",
        "18446744073709551616",
        "-9223372036854775808",
        "-9223372036854775809",
        '{"n": 123456789012345678901234567890}',
        '{"hash": "1234567890123456789012", "n": 1}',
        "1e400",
        "-1e400",
        "1e-400",
        "-0",
        "-0.0",
        "NaN",
        "[Infinity, -Infinity]",
        '"\\ud800"',
        '"\\udc00\\ud800"',
        '"\\ud83d\\ude00"',
        '{"a": 1, "a": 2, "b": 3}',
        "\ufeff{}",
        '"a\tb"',
        "",
        " ",
        "{} x",
        '{"a": [1, 2,]}',
    ],
)
def test_loads_equals_json_loads_on_known_differences(text: str) -> None:
    same_as_stdlib(text)
    same_as_stdlib(text.encode("utf-8", "surrogatepass"))
    same_as_stdlib(b"\xef\xbb\xbf" + text.encode("utf-8", "surrogatepass"))


def test_loads_refuses_nesting_past_the_document_limit_whatever_the_parser_takes() -> None:
    """Within ``MAX_DEPTH`` the value is json.loads'; past it (up to, around and beyond the recursion
    limit) one DocumentError, never a RecursionError and never a value too deep."""
    from planguard.documents import MAX_DEPTH, DocumentError

    for nesting in [MAX_DEPTH - 1, MAX_DEPTH]:
        text = b"[" * nesting + b"]" * nesting
        assert outcome(_json.loads, text) == outcome(json.loads, text)
    limit = sys.getrecursionlimit()
    for nesting in [MAX_DEPTH + 1, 500, *range(limit - 5, limit + 5), 1023, 1024, 1025, 2000, 100_000]:
        for text in (b"[" * nesting + b"]" * nesting, '{"a": ' * nesting + "1" + "}" * nesting):
            with pytest.raises(DocumentError, match=f"nested deeper than {MAX_DEPTH} levels"):
                _json.loads(text)
