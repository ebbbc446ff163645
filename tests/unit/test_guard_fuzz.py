"""Hypothesis: arbitrary event streams and hook orders never raise into the caller, with every policy on."""

from __future__ import annotations

import asyncio
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planguard.config import load_config
from planguard.decisions import Decision
from planguard.events import ToolEvent
from planguard.guard import Guard
from planguard.step import Step
from planguard.testing import RecordingSink

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "planguard.yaml"

TOOLS = [
    "bash",
    "str_replace_editor",
    "submit",
    "finish",
    "search",
    "Read",
    "Edit",
    "Bash",
    "execute_bash",
    "",
    "think",
    "Grep",
    "TodoWrite",
]
COMMANDS = [
    "cat /testbed/a.py",
    "grep -rn foo /testbed",
    "python /testbed/reproduce_bug.py",
    "submit",
    "sed -i s/a/b/ x.py",
    "cd /testbed && python -m pytest tests/test_x.py",
    "echo hi > /testbed/test_new.py",
    "ls",
    "",
    "(((",
    "'unclosed",
    "cat <<EOF > /testbed/test_a.py\nprint(1)\nEOF",
    'python -c \'open("t.py","w")\'',
    "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT",
]
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True),
    st.text(max_size=30),
    st.binary(max_size=10),
)
arguments = st.one_of(
    st.text(max_size=60),
    st.fixed_dictionaries({"command": st.one_of(st.sampled_from(COMMANDS), st.text(max_size=60))}),
    st.fixed_dictionaries(
        {
            "command": st.sampled_from(["create", "str_replace", "view", "insert", "undo_edit", "x"]),
            "path": st.one_of(
                st.sampled_from(["/testbed/a.py", "/testbed/test_b.py", "reproduce.py"]), st.text(max_size=30)
            ),
        }
    ),
    st.dictionaries(st.text(max_size=10), scalars, max_size=4),
)
events = st.builds(
    ToolEvent,
    tool=st.one_of(st.sampled_from(TOOLS), st.text(max_size=20)),
    arguments=arguments,
    call_id=st.one_of(st.none(), st.sampled_from(["c1", "c2", "c3"]), st.text(max_size=8)),
    action=st.one_of(st.none(), st.sampled_from(COMMANDS), st.text(max_size=40)),
    result=st.one_of(st.none(), st.text(max_size=60)),
    is_error=st.booleans(),
    exit_code=st.one_of(st.none(), st.integers(-5, 300)),
)
ops = st.lists(
    st.tuples(
        st.sampled_from(["before_tool", "after_tool", "before_model", "end", "both"]),
        st.sampled_from(["s1", "s2", "s3"]),
        events,
    ),
    max_size=60,
)


CONFIG = load_config(
    EXAMPLE, env={"PLANGUARD_TELEMETRY": "0", "PLANGUARD_STORE": "0", "PLANGUARD_MAX_SESSIONS": "2"}
)


def make_guard() -> tuple[Guard, RecordingSink]:
    rec = RecordingSink()
    return Guard(CONFIG, sinks=[rec]), rec


def check(op: str, out: object) -> None:
    if op == "before_tool":
        assert isinstance(out, Decision)
    elif op == "after_tool":
        assert out is None or isinstance(out, Step)
    elif op == "before_model":
        assert isinstance(out, list) and all(isinstance(d, Decision) and d.injects for d in out)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops)
def test_sync_hooks_never_raise(seq):
    guard, _ = make_guard()
    for op, sid, ev in seq:
        if op == "both":
            d = guard.before_tool(sid, ev)
            check("before_tool", d)
            if not d.blocks:
                check("after_tool", guard.after_tool(sid, ev))
        elif op == "end":
            guard.end(sid)
        elif op == "before_model":
            check(op, guard.before_model(sid))
        else:
            check(op, getattr(guard, op)(sid, ev))
    guard.shutdown()
    # Nothing was raised; nothing should even have failed inside (a counted error is a bug somewhere).
    assert guard.errors.total == 0, dict(guard.errors.counts)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops)
def test_async_hooks_never_raise(seq):
    guard, _ = make_guard()

    async def main() -> None:
        for op, sid, ev in seq:
            if op in ("before_tool", "both"):
                check("before_tool", await guard.abefore_tool(sid, ev))
            if op in ("after_tool", "both"):
                check("after_tool", await guard.aafter_tool(sid, ev))
            elif op == "before_model":
                check(op, await guard.abefore_model(sid))
            elif op == "end":
                await guard.aend(sid)

    asyncio.run(main())
    guard.shutdown()


@settings(max_examples=200, deadline=None)
@given(st.lists(events, max_size=40))
def test_offline_observe_agrees_with_live_hooks(evs):
    """The same events through live hooks and offline observe give the same phases and metrics."""
    live, _ = make_guard()
    for ev in evs:
        live.before_tool("s", ev)
        live.after_tool("s", ev)
    offline = live.pipeline.session("offline")
    for ev in evs:
        offline.observe(ev)
    a, b = live.session("s"), offline
    # Denied calls never run live; compare only when nothing was denied.
    if a.n_steps == len(evs):
        assert a.langutory.rle() == b.langutory.rle()
        assert a.scores() == b.scores()
