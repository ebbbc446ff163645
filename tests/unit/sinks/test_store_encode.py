"""The store writer's lines: orjson's equal the standard encoder's, step lines of any call read back, and
redaction's fast paths equal its general ones."""

from __future__ import annotations

import enum
import json
import math
import uuid
from typing import Any, NamedTuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planguard.actions import Action, ActionType, WriteKind
from planguard.decisions import Decision, DecisionKind
from planguard.events import ToolEvent
from planguard.session import Pipeline, Session
from planguard.sinks.capture import ContentPolicy
from planguard.sinks.redact import REDACTED, Redactor, redact_value
from planguard.sinks.store import writer as writer_module
from planguard.sinks.store.config import StoreConfig
from planguard.sinks.store.records import StepRecord
from planguard.sinks.store.writer import _ENCODER, StoreSink, _encode
from planguard.stages import Policy
from planguard.step import Step
from planguard.testing import ScriptedDetector


class _Str(str):
    pass


class _Int(int):
    pass


class _Float(float):
    pass


class _Pair(NamedTuple):
    a: int
    b: Any


class _Color(enum.Enum):
    RED = "red"


class _Level(enum.IntEnum):
    HIGH = 3


class _Kind(str, enum.Enum):  # noqa: UP042 (the mixin on purpose: its str() is "_Kind.READ")
    READ = "read"


def _keys_as_text(value: Any) -> Any:
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            writable = k is None or isinstance(k, str | int | float)  # (bool is an int)
            out[k if writable else str(k)] = _keys_as_text(v)
        return out
    if isinstance(value, list | tuple):
        return [_keys_as_text(v) for v in value]
    return value


def _reference(value: Any) -> bytes:
    """The line as the standard library writes it: UTF-8, or all non-ASCII escaped when the text holds a lone
    surrogate (which UTF-8 cannot carry)."""
    try:
        text = _ENCODER.encode(value) + "\n"
    except TypeError:  # a key json refuses (a tuple, a plain Enum): the record with such keys as str()
        value = _keys_as_text(value)
        text = _ENCODER.encode(value) + "\n"
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, default=str, separators=(",", ":")).encode() + b"\n"


def _outcome(fn: Any, value: Any) -> Any:
    try:
        return fn(value)
    except (TypeError, ValueError, RecursionError) as exc:  # UnicodeEncodeError is a ValueError
        return type(exc).__name__


_text = st.text(max_size=12)  # all of Unicode, lone surrogates included
_floats = st.one_of(
    st.floats(),
    st.sampled_from([0.0, -0.0, 1e-4, 9.999e-5, 1e16, 9999999999999998.0, 1e-7, 1e22, math.nan, math.inf]),
)
_ints = st.one_of(
    st.integers(min_value=-(2**64), max_value=2**64),
    st.sampled_from([2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64 - 1, 2**64, 10**30]),
)
_odd = st.sampled_from(
    [
        _Str("sub"),
        _Int(7),
        _Float(0.5),
        _Float("nan"),
        _Pair(1, "x"),
        _Color.RED,
        _Level.HIGH,
        _Kind.READ,
        uuid.UUID(int=12345),
        b"raw",
        {1, 2},
        object(),
    ]
)
_leaves = st.one_of(st.none(), st.booleans(), _ints, _floats, _text, _odd)
_keys = st.one_of(
    _text, st.integers(-5, 5), st.sampled_from([None, True, 1.5, _Str("k"), _Kind.READ, _Level.HIGH])
)
_values = st.recursive(
    _leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(_keys, inner, max_size=4),
    ),
    max_leaves=20,
)


def _normalised(value: Any) -> Any:
    """What a line promises to read back as, beyond the standard library's line: an Enum member as its value,
    NaN and infinities as None (strict JSON has no form for them). Keys are left alone."""
    if isinstance(value, enum.Enum):
        return _normalised(value.value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _normalised(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_normalised(v) for v in value]
    return value


def _read(line: bytes) -> str:
    """A line's value, as canonical text (NaN compares equal to itself)."""
    return json.dumps(json.loads(line))


def _reads_as_the_standard_encoder(line_of: Any, record: Any) -> None:
    got = _outcome(lambda r: _read(line_of(r)), record)
    assert got == _outcome(lambda r: _read(_reference(_normalised(r))), record)


@settings(max_examples=1500, deadline=None)
@given(value=_values)
def test_lines_read_back_as_the_standard_encoders(value: Any) -> None:
    _reads_as_the_standard_encoder(_encode, {"type": "step", "value": value})


def test_strict_json_for_what_json_cannot_express() -> None:
    line = _encode({"n": math.nan, "i": -math.inf, "c": _Color.RED, "t": _Pair(1, (2,)), "f": _Float(0.5)})
    assert line == b'{"n":null,"i":null,"c":"red","t":[1,[2]],"f":0.5}\n'
    # orjson refuses a non-string key and an integer beyond 64 bits: json writes the line, just as strictly.
    assert _encode({1: math.nan, "c": _Color.RED, "big": 2**70}) == b'{"1":null,"c":"red","big":%d}\n' % 2**70


def test_nesting_beyond_orjson_and_the_interpreter() -> None:
    deep: Any = "x"
    for _ in range(300):  # beyond orjson's 255 levels: the standard encoder writes it
        deep = [deep]
    assert _encode({"v": deep}) == _reference({"v": deep})
    for _ in range(100_000):
        deep = [deep]
    assert _outcome(_encode, {"v": deep}) == "RecursionError"


# --------------------------------------------------------------------------- step lines


class _Policies(Policy):
    name = "p"

    def before_tool(self, step: Step, session: Session, state: Any) -> Decision | None:
        if step.index % 3 == 1:
            return Decision(DecisionKind.LOG, "gate looked", self.name)
        return None

    def after_tool(self, step: Step, session: Session, state: Any) -> list[Decision]:
        return [Decision(DecisionKind.NUDGE, "reproduce first", self.name, f) for f in step.findings]


_events = st.builds(
    ToolEvent,
    tool=st.one_of(st.sampled_from(["bash", "str_replace_editor", "Read", "x"]), _odd),
    arguments=st.one_of(st.dictionaries(_keys, _values, max_size=4), _text),
    call_id=st.one_of(  # (hashable: the session keys pending calls by it)
        st.none(),
        _text,
        st.sampled_from([_Str("c"), _Color.RED, _Kind.READ, uuid.UUID(int=1), 1e-5, 1e20, 3]),
    ),
    action=st.one_of(st.none(), st.sampled_from(["cat a.py", "python -m pytest", "export TOKEN=abc"])),
    result=st.one_of(st.none(), _text, st.sampled_from(["password=hunter2", "x" * 50 + " sk-" + "a" * 20])),
    is_error=st.booleans(),
    exit_code=st.one_of(st.none(), _ints),
    start_time=st.one_of(st.none(), _floats),
    end_time=st.one_of(st.none(), _floats),
    metadata=st.dictionaries(_keys, _values, max_size=3),
)


@pytest.mark.parametrize(
    "store",
    [{}, {"content": True}, {"content": True, "redact": False}, {"content": True, "max_result_chars": 10}],
)
@settings(max_examples=60, deadline=None)
@given(events=st.lists(_events, min_size=1, max_size=6))
def test_step_lines_are_strict_json_that_reads_back(store: dict[str, Any], events: list[ToolEvent]) -> None:
    """Whatever a call holds, its step line is its record as the standard encoder would write it, and the
    reader takes it back: the same step, roles, findings and decisions."""
    sink = StoreSink(StoreConfig(path="never-written", **store))  # (records are taken off its queue)
    items: list[tuple[Any, ...]] = []

    def submit(item: tuple[Any, ...]) -> bool:
        items.append(item)
        return True

    sink._worker.submit = submit  # type: ignore[method-assign]
    pipe = Pipeline(
        detectors=(ScriptedDetector("flaky", lambda s: s.index % 2 == 0),),
        policies=(_Policies(),),
        sinks=(sink,),
    )
    s = pipe.session("fuzz")
    for ev in events:
        s.before_model()
        s.before_tool(ev)
        s.after_tool(ev)
    steps = [item for item in items if item[0] == "step"]
    assert len(steps) == len(events)
    for item in steps:
        step, decisions = item[3], item[4]
        record = sink.step_json(*item[3:8])
        _reads_as_the_standard_encoder(lambda _, item=item: sink._line(item), record)
        line = _outcome(sink._line, item)
        if not isinstance(line, bytes):  # a value no encoder can write: the one record is dropped, counted
            continue
        back = StepRecord.from_json(json.loads(line))  # a name or an id not a string is written as text
        assert (back.index, back.roles, back.letters) == (step.index, list(step.roles), record["letters"])
        assert [f.detector for f in back.findings] == ["flaky"] * len(step.findings)
        assert [d.kind for d in back.decisions] == [str(d.kind) for d in decisions or ()]
        assert (back.event.arguments is None) == (not sink.content.include)  # private by default
        assert (back.event.digest is None) == sink.content.include


# --------------------------------------------------------------------------- redaction fast paths


def _redact_value_before(value: Any, r: Redactor, depth: int = 0) -> Any:
    """redact_value by its definition: a key is secret when its one-key mapping redacts its value."""
    if isinstance(value, str):
        return r(value)
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if depth > 32:
        return REDACTED
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            key = str(k)
            named_secret = redact_value({key: "x"}, r) == {r(key): REDACTED}
            if named_secret and v is not None and v != "" and not isinstance(v, bool):
                out[r(key)] = REDACTED
            else:
                out[r(key)] = _redact_value_before(v, r, depth + 1)
        return out
    if isinstance(value, (list, tuple)):
        return [_redact_value_before(v, r, depth + 1) for v in value]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return r(bytes(value).decode("utf-8", "replace"))
    return r(str(value))


def _every_pattern(r: Redactor, text: str) -> str:
    for pattern, repl in r.patterns:
        text = pattern.sub(repl, text)
    return text


_short = st.one_of(
    st.text(max_size=4).filter(lambda t: not any("\ud800" <= c <= "\udfff" for c in t)),
    st.sampled_from(["ß", "ſk-", "ık", "İ", "key", "KEY", "hf_", "://", "ok"]),
)


@settings(max_examples=500, deadline=None)
@given(text=_short)
def test_short_text_fast_path_equals_running_every_pattern(text: str) -> None:
    plain, extra = Redactor(), Redactor([(r"^o", "0")])
    assert plain(text) == _every_pattern(plain, text)
    assert extra(text) == _every_pattern(extra, text)  # extra patterns still run on short text


@settings(max_examples=300, deadline=None)
@given(value=st.dictionaries(_keys, _values, max_size=5))
def test_redact_value_equals_the_general_path(value: dict[Any, Any]) -> None:
    r = Redactor([(r"internal-\d+", "[X]")])
    want = _outcome(lambda v: _redact_value_before(v, r), value)
    assert _outcome(lambda v: redact_value(v, r), value) == want


_maybe_text = st.one_of(st.none(), st.text(max_size=8))


def _digest(value: Any) -> str:
    return f"digest({value!r})"


@settings(max_examples=200, deadline=None)
@given(
    action=st.builds(
        Action,
        type=st.sampled_from(ActionType),
        target=_maybe_text,
        tool=st.text(max_size=8),
        path=_maybe_text,
        intent=_maybe_text,
        is_validation=st.booleans(),
        is_source_write=st.booleans(),
        is_completion=st.booleans(),
        write=st.one_of(st.none(), st.sampled_from(WriteKind)),
        shell=_maybe_text,
        structured=st.booleans(),
        scaffold=_maybe_text,
    )
)
def test_an_actions_texts_are_kept_only_with_content_and_digested_without(action: Action) -> None:
    full = writer_module._action(action, ContentPolicy(include=True), _digest)
    assert full is not None and full["type"] == str(action.type)
    if action.target:
        assert full["target"] == action.target or "REDACTED" in full["target"]
    without = writer_module._action(action, ContentPolicy(include=False), _digest)
    assert without is not None and "target" not in without and "path" not in without
    if action.target:
        assert without["target_id"] == _digest(action.target)  # a digest in its place
