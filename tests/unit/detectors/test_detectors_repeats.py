"""Identical-call repeats and A-B ping-pong: thresholds, normalisation, reset and re-fire."""

from __future__ import annotations

from planguard.actions import classify_action
from planguard.detectors import RepeatedCall, call_key
from planguard.events import ToolEvent
from planguard.session import Pipeline


def fire_steps(det: RepeatedCall, events: list[ToolEvent]) -> list[tuple[int, str, int, int]]:
    pipe = Pipeline(actions=classify_action, detectors=(det,))
    s = pipe.session("t")
    out: list[tuple[int, str, int, int]] = []
    for e in events:
        step = s.observe(e)
        out.extend((step.index, f.data["pattern"], f.first_step, f.data["count"]) for f in step.findings)
    s.end()
    assert pipe.errors.total == 0
    return out


A = ToolEvent(tool="Grep", arguments={"pattern": "needle", "path": "src"})
B = ToolEvent(tool="Bash", arguments={"command": "pytest -q"})
C = ToolEvent(tool="Read", arguments={"file_path": "a.py"})


def test_identical_repeats_threshold() -> None:
    assert fire_steps(RepeatedCall(), [A] * 3) == []
    assert fire_steps(RepeatedCall(), [A] * 4) == [(3, "repeat", 0, 4)]
    assert fire_steps(RepeatedCall(), [A] * 12) == [(3, "repeat", 0, 4)]  # above: once per streak
    assert fire_steps(RepeatedCall(), [A] * 4 + [C] + [A] * 4) == [(3, "repeat", 0, 4), (8, "repeat", 5, 4)]
    assert fire_steps(RepeatedCall(repeats=2), [C, A, A]) == [(2, "repeat", 1, 2)]


def test_normalisation_ignores_cosmetics_but_not_arguments() -> None:
    runs = [
        ToolEvent(tool="Bash", arguments={"command": "pytest  -q ", "description": f"try {i}"})
        for i in range(4)
    ]
    assert fire_steps(RepeatedCall(), runs) == [(3, "repeat", 0, 4)]
    varied = [ToolEvent(tool="Bash", arguments={"command": f"pytest -k t{i}"}) for i in range(4)]
    assert fire_steps(RepeatedCall(), varied) == []
    assert call_key(ToolEvent(tool="x", arguments="raw  text")) == ("x", "raw text")
    assert call_key(ToolEvent(tool="x", arguments={"b": [1], "a": {"k": 1}})) == (
        "x",
        (("b", [1]), ("a", {"k": 1})),
    )
    assert call_key(ToolEvent(tool="x", arguments={"q": "a", "timeout": 5})) == ("x", (("q", "a"),))
    # the scaffold's own action text wins when present (SWE-agent)
    assert call_key(ToolEvent.shell("grep  -rn x .")) == ("bash", "grep -rn x .")


def test_ping_pong_threshold() -> None:
    assert fire_steps(RepeatedCall(), [A, B, A, B, A]) == []  # 2.5 cycles
    assert fire_steps(RepeatedCall(), [A, B, A, B, A, B]) == [(5, "ping-pong", 0, 3)]
    assert fire_steps(RepeatedCall(), [C, A, B, A, B, A, B, A, B, A]) == [(6, "ping-pong", 1, 3)]
    # broken by a third call, then a new alternation fires again
    events = [A, B, A, B, A, B, C, C, A, C, A, C, A, C]
    assert [f[:2] for f in fire_steps(RepeatedCall(), events)] == [(5, "ping-pong"), (12, "ping-pong")]
    assert fire_steps(RepeatedCall(cycles=2), [A, B, A, B]) == [(3, "ping-pong", 0, 2)]


def test_think_steps_are_not_calls() -> None:
    think = ToolEvent(tool="", arguments={})
    assert fire_steps(RepeatedCall(), [think] * 6) == []
    assert fire_steps(RepeatedCall(), [A, think, A, A, think, A]) == [(5, "repeat", 0, 4)]
