"""Detector responses: the escalation ladder, cooldowns, exemptions, block and stop.

A ScriptedDetector stands in for real detectors: it fires (once per episode) on every call to the tool
``search``, so each ``search`` following another tool is a new fire.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from pydantic import ValidationError

from planguard.decisions import DecisionKind
from planguard.events import ToolEvent
from planguard.policies import Ladder
from planguard.testing import ScriptedDetector, drive, guard_for_tests

SEARCH = ToolEvent("search", {"query": "foo"})
EDIT = ToolEvent("edit", {"path": "a.py"})
NAV = ToolEvent.shell("cat /testbed/src/mod.py")
PATCH = ToolEvent("str_replace_editor", {"command": "str_replace", "path": "/testbed/src/mod.py"})

LOOP = ScriptedDetector("loop", lambda step: step.event.tool == "search", evidence="searching in circles")


def responses_guard(findings=None, default=None, detectors=(LOOP,)):
    responses: dict = {"findings": findings or {}}
    if default is not None:
        responses["default"] = default
    guard, rec = guard_for_tests(
        policies={"reminder": {"enabled": False}, "violations": {"enabled": False}, "responses": responses},
        detectors=list(detectors),
    )
    return guard, rec


def kinds(rec):
    return [r.item.kind.value for r in rec.decisions if r.item.policy == "responses"]


def test_ladder_climbs_log_warn_nudge_block_stop():
    guard, rec = responses_guard(
        {
            "loop": {
                "ladder": {"log": 1, "warn": 2, "nudge": 3, "block": 4, "stop": 5},
                "cooldown_steps": 0,
                "pattern": {"tools": ["search"]},
            }
        }
    )
    turns = drive(guard, "s", [SEARCH, EDIT] * 3)  # fires 1..3
    assert kinds(rec) == ["log", "notify", "nudge"]
    nudge = rec.decisions_of("nudge")[0]
    assert nudge.message.startswith("PLANGUARD NOTE: (automatic, from the run monitor)")
    assert nudge.finding is not None and nudge.finding.detector == "loop"
    assert turns[5].messages == [nudge]  # the nudge reaches the model at its next request

    turns = drive(guard, "s", [SEARCH, SEARCH, EDIT])  # fire 4 → block: the next search is denied
    assert turns[1].decision.kind is DecisionKind.DENY
    assert "continues a loop pattern" in turns[1].decision.message
    assert turns[1].step is None and turns[2].decision.kind is DecisionKind.ALLOW

    turns = drive(guard, "s", [SEARCH, EDIT, EDIT])  # fire 5 → stop at the next call, whatever it is
    assert turns[1].decision.kind is DecisionKind.STOP
    assert turns[1].decision.message.startswith(
        "Run stopped by planguard: the loop pattern persisted (5 times)"
    )
    assert len(turns) == 2  # drive() ends the loop on STOP, as integrations do
    assert guard.before_tool("s", EDIT).kind is DecisionKind.STOP  # and it stays stopped


def test_block_denies_only_calls_that_continue_the_pattern():
    guard, _ = responses_guard(
        {"loop": {"ladder": {"block": 1}, "cooldown_steps": 0, "pattern": {"tools": ["search"]}}}
    )
    turns = drive(guard, "s", [SEARCH, EDIT, SEARCH])
    # the edit breaks the pattern: the block is disarmed, and the later search is a new episode
    assert [t.decision.kind for t in turns] == [DecisionKind.ALLOW] * 3
    turns = drive(guard, "s", [SEARCH])
    assert turns[0].decision.kind is DecisionKind.DENY


def test_block_calls_denies_several_continuing_calls():
    guard, _ = responses_guard(
        {"loop": {"ladder": {"block": 1}, "block_calls": 2, "pattern": {"tools": ["search"]}}}
    )
    turns = drive(guard, "s", [SEARCH, SEARCH, SEARCH, SEARCH])
    assert [t.decision.kind.value for t in turns] == ["allow", "deny", "deny", "allow"]


def test_block_pattern_by_role_prefix_for_search_loop_default():
    nav_loop = ScriptedDetector("search_loop", lambda step: step.roles == ("L_navigate",))
    guard, _ = responses_guard({"search_loop": {"ladder": {"block": 1}}}, detectors=[nav_loop])
    turns = drive(guard, "s", [NAV, NAV, PATCH])
    assert [t.decision.kind.value for t in turns] == ["allow", "deny", "allow"]
    assert "You have searched and read for many steps" in turns[1].decision.message


def test_block_default_pattern_is_the_same_tool():
    guard, _ = responses_guard({"loop": {"ladder": {"block": 1}}})
    guard.pipeline = replace(guard.pipeline, actions=None)  # compare tool names, not action types
    turns = drive(guard, "s", [SEARCH, SEARCH])
    assert turns[1].decision.kind is DecisionKind.DENY


def test_cooldown_only_logs_fires_close_to_the_last_response():
    guard, rec = responses_guard({"loop": {"ladder": {"nudge": 1}, "cooldown_steps": 5}})
    # fires at steps 0, 2, 4, 6, 8: responses at 0 and 6 (6 - 0 >= 5); the rest are logged
    drive(guard, "s", [SEARCH, EDIT] * 5)
    assert kinds(rec) == ["nudge", "log", "log", "nudge", "log"]


def test_exempt_tools_are_neither_counted_nor_blocked():
    det = ScriptedDetector("loop", lambda step: step.event.tool in ("search", "think"))
    guard, rec = responses_guard(
        {
            "loop": {
                "ladder": {"nudge": 1, "block": 2},
                "exempt_tools": ["thi*"],
                "cooldown_steps": 0,
                "pattern": {"tools": ["search", "think"]},
            }
        },
        detectors=[det],
    )
    think = ToolEvent("think", {"thought": "hmm"})
    turns = drive(guard, "s", [think, EDIT, think, EDIT, SEARCH, EDIT, SEARCH, think, SEARCH])
    # the thinks fired nothing countable; the searches are fires 1 (nudge) and 2 (block)
    assert kinds(rec) == ["nudge", "log", "deny"]
    assert turns[7].decision.kind is DecisionKind.ALLOW  # exempt: never blocked
    assert turns[8].decision.kind is DecisionKind.DENY


def test_unlisted_kinds_follow_the_default_response():
    guard, rec = responses_guard(default={"ladder": {"log": 1, "warn": 2}, "cooldown_steps": 0})
    drive(guard, "s", [SEARCH, EDIT, SEARCH])
    assert kinds(rec) == ["log", "notify"]
    assert rec.decisions_of("notify")[0].message == "loop: searching in circles"


def test_default_config_nudges_on_a_search_loop_and_only_logs_other_kinds():
    det = ScriptedDetector("search_loop", lambda step: step.event.tool == "search")
    guard, rec = guard_for_tests(detectors=[det, LOOP])
    drive(guard, "s", [SEARCH])
    assert sorted(d.kind.value for d in rec.decisions_of(policy="responses")) == ["log", "nudge"]


def test_message_templates():
    guard, rec = responses_guard(
        {
            "loop": {
                "ladder": {"nudge": 1, "block": 2},
                "cooldown_steps": 0,
                "pattern": {"tools": ["search"]},
                "message": "{kind} x{count}: {evidence} ({steps} steps, {tool})",
                "block_message": "no more {tool}",
            }
        }
    )
    turns = drive(guard, "s", [SEARCH, EDIT, SEARCH, SEARCH])
    assert rec.decisions_of("nudge")[0].message == "loop x1: searching in circles (1 steps, search)"
    assert turns[3].decision.message == "no more search"


def test_ladder_thresholds_must_not_decrease():
    with pytest.raises(ValidationError, match=r"got block=2 after nudge=3"):
        Ladder(nudge=3, block=2)
    assert Ladder(log=1, nudge=1, stop=4).rung(3) == "nudge"
    assert Ladder(log=None).rung(5) is None


def test_a_queued_stop_outlasts_a_flood_of_messages() -> None:
    """The messages queued for the next model request are bounded (the oldest go), but a STOP is never the one
    dropped: a run a policy has ended stays ended however many nudges follow it before the model is called."""
    from collections.abc import Iterable
    from typing import Any

    from planguard.decisions import Decision
    from planguard.session import MAX_QUEUED_MESSAGES, Pipeline, Session
    from planguard.stages import Policy
    from planguard.step import Step

    class StopThenNudge(Policy):
        name = "flood"

        def after_tool(self, step: Step, session: Session, state: Any) -> Iterable[Decision]:
            if step.index == 0:
                return [Decision(DecisionKind.STOP, "run over", self.name)]
            return [Decision(DecisionKind.NUDGE, f"nudge {step.index}", self.name)]

    s = Pipeline(policies=(StopThenNudge(),)).session("flood")
    n = MAX_QUEUED_MESSAGES + 5
    for i in range(n):
        s.observe(ToolEvent.shell(f"ls dir{i}"))
    out = s.before_model()
    assert len(out) == MAX_QUEUED_MESSAGES
    assert [d.kind for d in out].count(DecisionKind.STOP) == 1
    assert [d.message for d in out if d.kind is DecisionKind.NUDGE] == [f"nudge {i}" for i in range(6, n)]
