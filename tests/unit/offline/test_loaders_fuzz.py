"""Fuzzing: no input of any shape makes iter_trajectories raise; it yields runs or LoadErrors only.

Random bytes and random JSON rarely get past the first check, so the JSON strategies are biased toward
each format's own vocabulary (keys like ``steps``, ``history``, ``tool_calls``, ``sessionId``), and real
shared files are truncated and bit-flipped, to drive the loaders deep with wrong types everywhere.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planguard.events import ToolEvent
from planguard.offline.loaders import FORMATS, LoadError, Trajectory, iter_trajectories

SHARED = Path(__file__).resolve().parents[3].parent / "shared"
REAL = SHARED / "data" / "realtraj"

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

SUFFIXES = [".jsonl", ".json", ".traj", ".traj.json", ".yaml", ".txt"]

# Keys and values the loaders branch on, so random documents reach the per-format code.
VOCABULARY = [
    "id",
    "steps",
    "action",
    "tool_calls",
    "function",
    "name",
    "arguments",
    "observation_head",
    "n_steps",
    "trajectory",
    "history",
    "info",
    "replay_config",
    "role",
    "content",
    "message_type",
    "is_demo",
    "thought",
    "observation",
    "state",
    "execution_time",
    "model_stats",
    "messages",
    "extra",
    "actions",
    "command",
    "returncode",
    "raw_output",
    "tool_call_id",
    "trajectory_format",
    "type",
    "uuid",
    "parentUuid",
    "sessionId",
    "isSidechain",
    "agentId",
    "message",
    "tool_use",
    "tool_result",
    "tool_use_id",
    "is_error",
    "input",
    "text",
    "toolUseResult",
    "summary",
    "source",
    "cause",
    "args",
    "extras",
    "exit_code",
    "metadata",
    "tool_call_metadata",
    "model_response",
    "choices",
    "instance_id",
    "test_result",
    "instruction",
    "timestamp",
]
VALUES = [
    "assistant",
    "user",
    "tool",
    "system",
    "exit",
    "agent",
    "run",
    "read",
    "edit",
    "write",
    "think",
    "finish",
    "message",
    "tool_use",
    "tool_result",
    "text",
    "summary",
    "bash",
    "submit",
    "```bash\nls\n```",
    "<returncode>1</returncode><output>x</output>",
    "2025-01-01T00:00:00Z",
    "{'a': 1}",
    "[{'type': 'text'}]",
    "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT",
    "Exit code 3",
]

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
    | st.sampled_from(VALUES)
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.dictionaries(st.sampled_from(VOCABULARY) | st.text(max_size=8), inner, max_size=6)
    ),
    max_leaves=20,
)
# Members of the per-format entries below: small, so a list of entries stays within Hypothesis' budget.
members = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(VOCABULARY), inner, max_size=3)
    ),
    max_leaves=8,
)
shaped_objects = st.dictionaries(st.sampled_from(VOCABULARY), json_values, min_size=1, max_size=8)


# Per-format entries: the keys each loader dispatches on are present, everything else is arbitrary.
blocks = st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "tool_use", "tool_result", "thinking", "image"])},
    optional={k: members for k in ("id", "name", "input", "text", "tool_use_id", "content", "is_error")},
)
claude_entries = st.fixed_dictionaries(
    {"type": st.sampled_from(["user", "assistant", "summary", "system"]), "sessionId": st.just("s")},
    optional={
        "message": st.fixed_dictionaries(
            {},
            optional={
                "id": members,
                "content": st.lists(blocks, max_size=4) | members,
                "model": members,
            },
        )
        | members,
        **{
            k: members for k in ("uuid", "parentUuid", "isSidechain", "agentId", "toolUseResult", "timestamp")
        },
    },
)
openhands_events = st.fixed_dictionaries(
    {"source": st.sampled_from(["agent", "user", "environment"])},
    optional={
        "action": st.sampled_from(
            [
                "run",
                "read",
                "edit",
                "write",
                "think",
                "finish",
                "message",
                "browse",
                "call_tool_mcp",
                "delegate",
                "mystery",
            ]
        )
        | members,
        "observation": st.sampled_from(["run", "error", "agent_state_changed", "edit"]) | members,
        **{k: members for k in ("id", "cause", "args", "extras", "content", "message", "timestamp")},
        "tool_call_metadata": st.fixed_dictionaries(
            {}, optional={k: members for k in ("function_name", "tool_call_id", "model_response")}
        )
        | members,
    },
)
chat_messages = st.fixed_dictionaries(
    {"role": st.sampled_from(["system", "user", "assistant", "tool", "exit"])},
    optional={k: members for k in ("content", "extra", "tool_calls", "tool_call_id", "action", "is_demo")},
)
swe_steps = st.fixed_dictionaries(
    {"action": st.text(max_size=12) | members},
    optional={
        k: members
        for k in (
            "observation",
            "thought",
            "response",
            "state",
            "execution_time",
            "tool_calls",
            "observation_head",
            "i",
        )
    },
)


def _check(items: list[Any]) -> None:
    for item in items:
        assert isinstance(item, (Trajectory, LoadError))
        if isinstance(item, Trajectory):
            assert item.format in FORMATS
            assert isinstance(item.id, str) and isinstance(item.source, str)
            assert all(isinstance(event, ToolEvent) for event in item.events)
        else:
            assert str(item).startswith(item.path)
            # The loaders' last-resort handler wraps unexpected exceptions as "cannot load/sniff ... (Type:";
            # bad input must be diagnosed by the loaders themselves, never reach that net.
            assert not item.message.startswith(("cannot load", "cannot sniff")), item.message


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


@FUZZ
@given(data=st.binary(max_size=2048), suffix=st.sampled_from(SUFFIXES))
def test_arbitrary_bytes_never_raise(scratch: Path, data: bytes, suffix: str) -> None:
    path = scratch / f"bytes{suffix}"
    path.write_bytes(data)
    _check(list(iter_trajectories([path])))


@FUZZ
@given(
    document=json_values | shaped_objects | st.lists(shaped_objects, max_size=6),
    suffix=st.sampled_from(SUFFIXES),
)
def test_arbitrary_json_documents_never_raise(scratch: Path, document: Any, suffix: str) -> None:
    path = scratch / f"doc{suffix}"
    path.write_text(json.dumps(document))
    _check(list(iter_trajectories([path])))


@FUZZ
@given(records=st.lists(shaped_objects | json_values, min_size=1, max_size=8))
def test_arbitrary_json_lines_never_raise(scratch: Path, records: list[Any]) -> None:
    path = scratch / "lines.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    _check(list(iter_trajectories([path])))


@FUZZ
@given(
    steps=st.lists(
        st.dictionaries(st.sampled_from(VOCABULARY), json_values, max_size=5) | json_values, max_size=5
    ),
    fmt=st.sampled_from(FORMATS),
)
def test_format_shaped_garbage_never_raises(scratch: Path, steps: list[Any], fmt: str) -> None:
    """Each format's skeleton with arbitrary members, also forced through every loader."""
    skeletons: list[Any] = [
        {"id": "r", "steps": steps},
        {"trajectory": steps, "history": steps, "info": {"model_stats": "{'api_calls': 'x'}"}},
        {"history": steps},
        {"messages": steps, "info": {}},
        steps,
        {"instance_id": "i", "history": steps},
    ]
    for index, skeleton in enumerate(skeletons):
        path = scratch / f"skeleton{index}.json"
        path.write_text(json.dumps(skeleton))
        _check(list(iter_trajectories([path])))
        _check(list(iter_trajectories([path], source_format=fmt)))
    claude = scratch / "claude.jsonl"
    claude.write_text(
        "".join(json.dumps({"type": "assistant", "sessionId": "s", "message": s}) + "\n" for s in steps)
    )
    _check(list(iter_trajectories([claude])))


# Generating four nested lists per example is the slow part; fewer, richer examples cover the same paths.
@settings(FUZZ, max_examples=80)
@given(
    claude=st.lists(claude_entries, min_size=1, max_size=6),
    events=st.lists(openhands_events, min_size=1, max_size=6),
    messages=st.lists(chat_messages, min_size=1, max_size=6),
    steps=st.lists(swe_steps, max_size=5),
)
def test_format_entries_with_wrong_members_never_raise(
    scratch: Path, claude: list[Any], events: list[Any], messages: list[Any], steps: list[Any]
) -> None:
    documents: dict[str, Any] = {
        "oh.json": events,
        "oh-output.json": {
            "instance_id": "i",
            "history": events,
            "test_result": {"report": {"resolved": True}},
        },
        "mini.json": messages,
        "mini2.json": {"messages": messages, "info": {}, "trajectory_format": "mini-swe-agent-1.1"},
        "swe.traj": {"trajectory": steps, "history": messages},
        "demo.traj": {"history": messages},
        "corpus.jsonl": {"id": "r", "steps": steps},
    }
    for name, document in documents.items():
        path = scratch / name
        path.write_text(json.dumps(document))
        _check(list(iter_trajectories([path])))
    path = scratch / "claude.jsonl"
    path.write_text("".join(json.dumps(entry) + "\n" for entry in claude))
    _check(list(iter_trajectories([path])))


REAL_FILES = [
    "mini-swe-agent/local.traj.json",
    "claude-code/spotter_short.jsonl",
    "openhands/runtime_basic_interactions.json",
    "swe-agent/demo_function_calling_simple.traj",
    "swe-agent/demo_str_replace_anthropic.yaml",
]


@FUZZ
@given(
    name=st.sampled_from(REAL_FILES),
    cut=st.floats(min_value=0.0, max_value=1.0),
    flips=st.lists(st.tuples(st.floats(min_value=0.0, max_value=1.0), st.integers(0, 255)), max_size=4),
)
def test_damaged_real_files_never_raise(
    scratch: Path, name: str, cut: float, flips: list[tuple[float, int]]
) -> None:
    source = REAL / name
    if not source.is_file():
        pytest.skip("shared data folder ../shared/data is not available")
    data = bytearray(source.read_bytes())
    for where, byte in flips:
        data[int(where * (len(data) - 1))] = byte
    path = scratch / f"damaged-{source.name}"
    path.write_bytes(bytes(data[: max(1, int(cut * len(data)))]))
    _check(list(iter_trajectories([path])))
