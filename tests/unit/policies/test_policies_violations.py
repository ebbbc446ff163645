"""Violation reminders: skipped, out of order, out of plan, finish with phases missing."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from planguard.decisions import DecisionKind
from planguard.events import ToolEvent
from planguard.policies.match import ToolMatcher
from planguard.policies.violations import DEFAULT_FINISH_TOOLS
from planguard.testing import drive, guard_for_tests

NAV = ToolEvent.shell("cat /testbed/src/mod.py")
CREATE_REPRO = ToolEvent("str_replace_editor", {"command": "create", "path": "/testbed/reproduce_bug.py"})
RUN_REPRO = ToolEvent.shell("python /testbed/reproduce_bug.py")
PATCH = ToolEvent("str_replace_editor", {"command": "str_replace", "path": "/testbed/src/mod.py"})
REGRESSION = ToolEvent.shell("python -m pytest /testbed/tests/test_mod.py")
SUBMIT = ToolEvent.shell("submit")


def violations_guard(plan="plan", **violations):
    return guard_for_tests(
        plan=plan,
        policies={
            "reminder": {"enabled": False},
            "responses": {"enabled": False},
            "violations": violations,
        },
    )


def messages(turns):
    return [m for t in turns for m in t.messages]


def test_following_the_plan_sends_nothing():
    guard, rec = violations_guard()
    turns = drive(guard, "s", [NAV, CREATE_REPRO, RUN_REPRO, PATCH, RUN_REPRO, SUBMIT], end=True)
    assert [t.step.roles for t in turns if t.step] == [
        ("L_navigate",),
        ("L_reproduce_newly_generated_test",),
        ("L_reproduce_newly_generated_test",),
        ("P",),
        ("V_newly_generated_test",),
        (),
    ]
    assert not messages(turns)
    assert not rec.decisions_of(policy="violations")


def test_skipped_phase_named_at_the_point_a_later_phase_begins():
    guard, _ = violations_guard()
    turns = drive(guard, "s", [NAV, PATCH, NAV])
    (m,) = messages(turns)
    assert m.kind is DecisionKind.REMIND and m.policy == "violations"
    assert m.message.startswith("PLAN REMINDER: you started Patch without doing Reproduction (")
    assert "Write a new test script" in m.message
    assert turns[2].messages == [m]  # delivered at the model call after the patch


def test_several_skipped_phases_are_named_together_and_once():
    guard, _ = violations_guard()
    # Validation-only run: V needs a patch first, so patch then run a new test: N and R are both skipped.
    turns = drive(guard, "s", [PATCH, NAV, PATCH, NAV])
    (m,) = messages(turns)
    assert "you started Patch without doing Navigation (" in m.message
    assert ") and Reproduction (" in m.message


def test_out_of_order_phase_named_with_the_later_phase_it_followed():
    guard, _ = violations_guard(skipped=False)
    turns = drive(guard, "s", [PATCH, NAV, NAV])
    (m,) = messages(turns)
    assert m.message == (
        "PLAN REMINDER: you started Navigation after Patch, but the plan puts Navigation first "
        "(Navigation → Reproduction → Patch → Validation)."
    )


def test_out_of_order_reported_when_a_skipped_phase_was_not_reported():
    guard, _ = violations_guard(plan="plan_reordered", skipped=False)  # N, P, R (told), V
    turns = drive(guard, "s", [NAV, CREATE_REPRO, PATCH, NAV])
    (m,) = messages(turns)
    assert m.message.startswith(
        "PLAN REMINDER: you started Patch after Reproduction, but the plan puts Patch first"
    )


def test_doing_a_skipped_phase_late_is_not_reported_again():
    guard, _ = violations_guard(plan="plan_reordered")  # N, P, R, V
    turns = drive(guard, "s", [NAV, CREATE_REPRO, PATCH, NAV])
    (m,) = messages(turns)
    assert m.message.startswith("PLAN REMINDER: you started Reproduction without doing Patch (")


def test_out_of_plan_phase_named_once():
    guard, _ = violations_guard()
    turns = drive(guard, "s", [NAV, CREATE_REPRO, RUN_REPRO, PATCH, REGRESSION, REGRESSION, NAV])
    (m,) = messages(turns)
    assert m.message == (
        "PLAN REMINDER: Regression tests after the patch is not a phase of your plan "
        "(Navigation → Reproduction → Patch → Validation); stay with the plan's phases."
    )


def test_finish_with_missing_phase_is_denied_once_naming_it():
    guard, rec = violations_guard()
    turns = drive(guard, "s", [NAV, CREATE_REPRO, RUN_REPRO, PATCH, SUBMIT, SUBMIT])
    first, second = turns[4].decision, turns[5].decision
    assert first.kind is DecisionKind.DENY and first.policy == "violations"
    assert first.message == (
        "PLAN REMINDER: before you finish, do the plan phases not done yet: Validation (Rerun your "
        "reproduction script and new edge-case tests to confirm the fix)."
    )
    assert second.kind is DecisionKind.ALLOW  # max_finish_denials=1: the agent can still end
    summary = guard.end("s")
    assert summary is not None and summary.decision_counts["deny"] == 1
    # already told at the finish call: no second reminder at the end
    assert len(rec.decisions_of("remind", policy="violations")) == 0


def test_finish_detected_for_finish_tools_and_mini_swe_agent_echo():
    for event in (
        ToolEvent("submit"),
        ToolEvent("finish", {"message": "done"}),
        ToolEvent.shell("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"),
        ToolEvent.shell("cd /testbed && submit"),
    ):
        guard, _ = violations_guard()
        (t,) = drive(guard, "s", [event])
        assert t.decision.kind is DecisionKind.DENY, event


def test_finish_in_remind_mode_runs_the_call_and_queues_the_reminder():
    guard, _ = violations_guard(on_finish="remind")
    turns = drive(guard, "s", [NAV, SUBMIT, NAV])
    assert turns[1].decision.kind is DecisionKind.ALLOW and turns[1].step is not None
    (m,) = turns[2].messages
    assert m.message.startswith(
        "PLAN REMINDER: before you finish, do the plan phases not done yet: Reproduction"
    )


def test_session_end_with_missing_phases_records_a_reminder():
    guard, rec = violations_guard()
    drive(guard, "s", [NAV, PATCH], end=True)
    ends = [r for r in rec.decisions if r.step is None and r.item.policy == "violations"]
    assert len(ends) == 1
    assert "Reproduction" in ends[0].item.message and "Validation" in ends[0].item.message


def test_cap_per_session_and_custom_messages():
    guard, _ = violations_guard(
        max_per_session=1,
        messages={"skipped": "skip {missed} before {phase}", "out_of_plan": "extra {phase}"},
    )
    turns = drive(guard, "s", [NAV, PATCH, REGRESSION, NAV])
    (m,) = messages(turns)
    assert m.message.startswith("PLAN REMINDER: skip Reproduction (")


def test_persisted_delivery():
    guard, _ = violations_guard(delivery="persisted")
    (m,) = messages(drive(guard, "s", [PATCH, NAV]))
    assert m.ephemeral is False


def test_no_plan_means_no_violations():
    guard, rec = violations_guard(plan="no_plan")
    drive(guard, "s", [PATCH, SUBMIT], end=True)
    assert not rec.decisions_of(policy="violations")


# The single default finish regex the per-literal patterns replaced (searched in a shell tool's command).
_OLD_FINISH = re.compile(r"(?:^|&&|;|\|\|)\s*submit\s*(?:$|&&|;|\|\|)|COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")
_OLD_FINISH_TOOLS = {"submit", "finish", "final_answer", "task_complete"}
_OLD_SHELL_TOOLS = {"bash", "execute_bash", "shell", "run_shell_command"}
# Pieces of shell text around a ``submit``: separators, whitespace, near misses, the final echo.
_COMMAND_BITS = [
    *("submit", "submit", "resubmit", "Submit"),
    *(" ", "\t", "\n"),
    *("&&", "&", ";", "||", "|"),
    *("echo x", "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "COMPLETE_TASK"),
]


@settings(max_examples=1500, deadline=None)
@given(
    tool=st.sampled_from(["bash", "execute_bash", "shell", "run_shell_command", "submit", "Bash", "python"]),
    command=st.lists(st.sampled_from(_COMMAND_BITS), max_size=8).map("".join) | st.text(max_size=40),
    raw=st.booleans(),
)
def test_default_finish_patterns_match_exactly_what_the_old_single_regex_did(
    tool: str, command: str, raw: bool
) -> None:
    """The per-literal default finish patterns decide every call as the one alternation regex did: the
    finish tools by name, a shell tool's command (parsed or raw argument text) by the regex."""
    event = ToolEvent(tool, command if raw else {"command": command})
    name = tool.lower()  # the tool globs are case-insensitive
    expected = name in _OLD_FINISH_TOOLS or (
        name in _OLD_SHELL_TOOLS and _OLD_FINISH.search(command) is not None
    )
    assert ToolMatcher(DEFAULT_FINISH_TOOLS).matches(event) is expected
