"""The loaders' fast paths against the standard library they stand in for.

``planguard.offline.loaders._json.loads`` must be exactly ``json.loads`` (same value, same exception and
message), whether orjson is installed or not; ``_lines`` must split a file exactly as iterating it does; and
the positional ``ToolEvent`` construction of the SWE-agent loader relies on the dataclass's field order.
"""

from __future__ import annotations

import dataclasses
import io
import json
import math
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planguard.events import ToolEvent
from planguard.offline.loaders import _json
from planguard.offline.loaders import _lines as split_lines

FUZZ = settings(max_examples=400, deadline=None)


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


scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=2**62, max_value=2**65)
    | st.integers(min_value=-(2**65), max_value=-(2**62))
    | st.floats()
    | st.text()
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
)


@FUZZ
@given(value=values, ensure_ascii=st.booleans(), indent=st.sampled_from([None, 0, 2]))
def test_loads_equals_json_loads_on_generated_json(
    value: Any, ensure_ascii: bool, indent: int | None
) -> None:
    text = json.dumps(value, ensure_ascii=ensure_ascii, indent=indent)
    same_as_stdlib(text)
    same_as_stdlib(text.encode("utf-8", "surrogatepass"))


@FUZZ
@given(data=st.binary(max_size=256))
def test_loads_equals_json_loads_on_arbitrary_bytes(data: bytes) -> None:
    same_as_stdlib(data)


json_alphabet = st.sampled_from(list('{}[]:,"\\ -+.0123456789eEtrufalsnNIinfy\t\r\nu\ud800\ufeffé'))


@FUZZ
@given(text=st.text(json_alphabet, max_size=40))
def test_loads_equals_json_loads_on_json_like_text(text: str) -> None:
    same_as_stdlib(text)
    same_as_stdlib(text.encode("utf-8", "surrogatepass"))


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
    limit, and orjson's 1024) one DocumentError, never a RecursionError and never a value too deep."""
    from planguard.documents import MAX_DEPTH, DocumentError

    for nesting in [MAX_DEPTH - 1, MAX_DEPTH]:
        text = b"[" * nesting + b"]" * nesting
        assert outcome(_json.loads, text) == outcome(json.loads, text)
    limit = sys.getrecursionlimit()
    for nesting in [MAX_DEPTH + 1, 500, *range(limit - 5, limit + 5), 1023, 1024, 1025, 2000, 100_000]:
        for text in (b"[" * nesting + b"]" * nesting, '{"a": ' * nesting + "1" + "}" * nesting):
            with pytest.raises(DocumentError, match=f"nested deeper than {MAX_DEPTH} levels"):
                _json.loads(text)


def test_loads_without_orjson(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_json, "_orjson", None)
    for text in ['{"a": [1, 2.5, "x"]}', "NaN", "{", "18446744073709551616"]:
        same_as_stdlib(text)
        same_as_stdlib(text.encode())


@FUZZ
@given(
    parts=st.lists(st.binary(max_size=40) | st.sampled_from([b"\n", b"\r\n", b"\r", b" \n", b"\n\n"])),
    chunk=st.integers(min_value=1, max_value=64),
)
def test_lines_split_like_file_iteration(parts: list[bytes], chunk: int) -> None:
    data = b"".join(parts)
    assert list(split_lines(io.BytesIO(data), chunk)) == list(io.BytesIO(data))


def test_tool_event_field_order_used_by_the_swe_agent_loader() -> None:
    # load_jsonl_record builds ToolEvent positionally, in this order.
    assert [f.name for f in dataclasses.fields(ToolEvent)][:10] == [
        "tool",
        "arguments",
        "call_id",
        "action",
        "result",
        "is_error",
        "exit_code",
        "start_time",
        "end_time",
        "metadata",
    ]
