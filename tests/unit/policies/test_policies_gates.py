"""Gates: deny a tool (pattern) until conditions hold; fail-open by default, fail-closed on request."""

from __future__ import annotations

import dataclasses

import pytest
from pydantic import ValidationError

from planguard.decisions import DecisionKind
from planguard.events import ToolEvent
from planguard.policies import Gate, GateConfig, ToolPattern
from planguard.testing import drive, guard_for_tests

NAV = ToolEvent.shell("cat /testbed/src/mod.py")
CREATE_REPRO = ToolEvent("str_replace_editor", {"command": "create", "path": "/testbed/reproduce_bug.py"})
RUN_REPRO = ToolEvent.shell("python /testbed/reproduce_bug.py")
PATCH = ToolEvent("str_replace_editor", {"command": "str_replace", "path": "/testbed/src/mod.py"})
SUBMIT = ToolEvent("submit")
VALIDATE_AFTER_PATCH = {"phase_after": {"phase": "V", "after": "P"}}


def gate_guard(*gates, **top):
    return guard_for_tests(
        policies={
            "reminder": {"enabled": False},
            "violations": {"enabled": False},
            "responses": {"enabled": False},
            "gates": list(gates),
        },
        **top,
    )


def kinds(turns):
    return [t.decision.kind.value for t in turns]


def test_submit_denied_after_a_patch_until_validation_follows_it():
    guard, rec = gate_guard({"name": "validate", "tool": "submit", "until": VALIDATE_AFTER_PATCH})
    turns = drive(guard, "s", [NAV, CREATE_REPRO, RUN_REPRO, PATCH, SUBMIT, RUN_REPRO, SUBMIT])
    assert kinds(turns) == ["allow"] * 4 + ["deny", "allow", "allow"]
    deny = turns[4].decision
    assert deny.policy == "gate:validate"
    assert deny.message == (
        "PLANGUARD GATE (validate): submit is not allowed yet. First do Validation after your last Patch."
    )
    assert turns[4].step is None  # the denied call never ran
    assert rec.decisions_of("deny", policy="gate:validate") == [deny]


def test_a_new_patch_closes_the_gate_again():
    guard, _ = gate_guard({"name": "v", "tool": "submit", "until": VALIDATE_AFTER_PATCH})
    turns = drive(guard, "s", [CREATE_REPRO, PATCH, RUN_REPRO, PATCH, SUBMIT, RUN_REPRO, SUBMIT])
    assert kinds(turns)[4:] == ["deny", "allow", "allow"]


def test_without_a_patch_the_gate_is_open_unless_strict():
    guard, _ = gate_guard({"name": "v", "tool": "submit", "until": VALIDATE_AFTER_PATCH})
    assert kinds(drive(guard, "s", [NAV, SUBMIT])) == ["allow", "allow"]
    guard, _ = gate_guard(
        {
            "name": "v",
            "tool": "submit",
            "until": {"phase_after": {"phase": "V", "after": "P", "strict": True}},
        }
    )
    (t,) = drive(guard, "s", [SUBMIT])
    assert t.decision.kind is DecisionKind.DENY and "First do Patch, then Validation" in t.decision.message


def test_shell_submit_gated_by_an_argument_predicate_other_shell_calls_not():
    guard, _ = gate_guard(
        {
            "name": "v",
            "tool": ["bash", "execute_bash"],
            "arguments": {"command": r"(^|&&|;)\s*submit\b"},
            "until": VALIDATE_AFTER_PATCH,
        }
    )
    turns = drive(
        guard,
        "s",
        [
            CREATE_REPRO,
            PATCH,
            NAV,
            ToolEvent.shell("cd /testbed && submit"),
            RUN_REPRO,
            ToolEvent.shell("submit"),
        ],
    )
    assert kinds(turns) == ["allow", "allow", "allow", "deny", "allow", "allow"]


def test_only_successful_validation_counts_when_asked():
    guard, _ = gate_guard(
        {
            "name": "v",
            "tool": "submit",
            "until": {"phase_after": {"phase": "V", "after": "P", "succeeded": True}},
        }
    )

    seen: list[int] = []

    def failing_first(ev):  # the second run of the reproduction script (the first after the patch) fails
        if ev is RUN_REPRO:
            seen.append(1)
            return dataclasses.replace(ev, exit_code=1 if len(seen) == 2 else 0)
        return None

    turns = drive(
        guard,
        "s",
        [CREATE_REPRO, RUN_REPRO, PATCH, RUN_REPRO, SUBMIT, RUN_REPRO, SUBMIT],
        results=failing_first,
    )
    assert kinds(turns)[4:] == ["deny", "allow", "allow"]


def test_other_conditions_and_their_messages():
    guard, _ = gate_guard(
        {
            "name": "g",
            "tool_regex": "sub.*",
            "until": {
                "phases_seen": ["L_reproduce"],
                "plan_complete": True,
                "min_steps": 3,
            },
            "max_denials": None,
        }
    )
    (t,) = drive(guard, "s", [ToolEvent("submit_patch")])
    assert t.decision.message == (
        "PLANGUARD GATE (g): submit_patch is not allowed yet. First do Reproduction; complete the plan "
        "phases not done yet: Navigation, Reproduction, Patch, Validation; work for at least 3 tool calls "
        "(0 so far)."
    )
    turns = drive(guard, "s", [NAV, CREATE_REPRO, PATCH, RUN_REPRO, ToolEvent("submit_patch")])
    assert turns[-1].decision.kind is DecisionKind.ALLOW


def test_gate_gives_way_after_max_denials_and_logs_it():
    guard, rec = gate_guard(
        {
            "name": "v",
            "tool": "submit",
            "until": {"min_steps": 100},
            "max_denials": 2,
            "message": "no ({denials}/{max_denials})",
        }
    )
    turns = drive(guard, "s", [SUBMIT] * 4)
    assert kinds(turns) == ["deny", "deny", "allow", "allow"]
    assert [t.decision.message for t in turns[:2]] == ["no (1/2)", "no (2/2)"]
    assert len(rec.decisions_of("log", policy="gate:v")) == 2


def test_unlimited_denials_when_null():
    guard, _ = gate_guard({"name": "v", "tool": "submit", "until": {"min_steps": 100}, "max_denials": None})
    assert kinds(drive(guard, "s", [SUBMIT] * 6)) == ["deny"] * 6


def test_raw_string_arguments_are_matched_as_one_text():
    matcher = ToolPattern(tool="bash", arguments={"command": "^submit"}).compile()
    assert matcher.matches(ToolEvent("bash", "submit now"))
    assert not matcher.matches(ToolEvent("bash", "ls"))
    assert not matcher.matches(ToolEvent("bash", {"cmd": "submit"}))


def test_tool_globs_ignore_case_unless_asked():
    """Claude Code's shell tool is ``Bash``; a gate written for ``bash`` must see it (issue #20)."""
    pattern = {"tool": ["bash", "execute_bash"], "arguments": {"command": r"(^|&&|;)\s*submit\b"}}
    submit = ToolEvent("Bash", {"command": "cd /repo && submit"})
    assert ToolPattern(**pattern).compile().matches(submit)
    assert ToolPattern(**pattern).compile().matches(ToolEvent("EXECUTE_BASH", {"command": "submit"}))
    assert not ToolPattern(**pattern, tool_case_sensitive=True).compile().matches(submit)
    guard, _ = gate_guard({"name": "v", **pattern, "until": VALIDATE_AFTER_PATCH})
    assert kinds(drive(guard, "s", [PATCH, submit])) == ["allow", "deny"]


def test_gate_config_errors():
    with pytest.raises(ValidationError, match="expected at least one of: phase_after"):
        GateConfig(name="x", tool="submit", until={})
    with pytest.raises(ValidationError, match="expected a valid regular expression"):
        GateConfig(name="x", tool="bash", arguments={"command": "(unclosed"}, until={"min_steps": 1})


def _boom(*args, **kwargs):
    raise RuntimeError("internal failure")


def test_internal_error_in_a_gate_fails_open_by_default(monkeypatch):
    guard, _ = gate_guard({"name": "v", "tool": "submit", "until": {"min_steps": 5}})
    monkeypatch.setattr(Gate, "unmet", _boom)
    (t,) = drive(guard, "s", [SUBMIT])
    assert t.decision.kind is DecisionKind.ALLOW
    assert guard.errors.counts == {"gate:v.before_tool:RuntimeError": 1}


def test_internal_error_in_a_fail_closed_gate_denies(monkeypatch):
    guard, _ = gate_guard({"name": "v", "tool": "submit", "until": {"min_steps": 5}, "fail_closed": True})
    monkeypatch.setattr(Gate, "unmet", _boom)
    turns = drive(guard, "s", [SUBMIT, NAV])
    assert kinds(turns) == ["deny", "allow"]
    assert "is blocked: its conditions could not be checked" in turns[0].decision.message


def test_pipeline_failure_denies_only_the_tools_of_fail_closed_gates(monkeypatch):
    guard, _ = gate_guard({"name": "v", "tool": "submit", "until": {"min_steps": 5}}, fail_closed_gates=True)
    monkeypatch.setattr(type(guard.pipeline.rules), "classify", _boom)
    denied = guard.before_tool("s", SUBMIT)
    assert denied.kind is DecisionKind.DENY and "could not be checked" in denied.message
    assert guard.before_tool("s", NAV).kind is DecisionKind.ALLOW
    assert guard.errors.total == 2


def test_gate_runs_before_the_violation_finish_check():
    guard, rec = guard_for_tests(
        policies={
            "reminder": {"enabled": False},
            "gates": [{"name": "v", "tool": "submit", "until": VALIDATE_AFTER_PATCH}],
        }
    )
    turns = drive(guard, "s", [PATCH, SUBMIT])
    assert turns[1].decision.policy == "gate:v"
    assert not rec.decisions_of("deny", policy="violations")
