"""Periodic plan reminder: triggers, cap, minimum gap, delivery, template."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from planguard.decisions import DecisionKind
from planguard.events import ToolEvent
from planguard.plan import PRESETS
from planguard.policies import ReminderConfig
from planguard.testing import drive, guard_for_tests

NAV = "cat /testbed/src/mod.py"


def reminder_guard(**reminder):
    guard, rec = guard_for_tests(
        policies={
            "reminder": reminder,
            "violations": {"enabled": False},
            "responses": {"enabled": False},
        }
    )
    return guard, rec


def model_calls(guard, sid, n):
    """``n`` model calls with no tool calls between; returns the injected decisions of each."""
    return [guard.before_model(sid) for _ in range(n)]


def test_every_five_model_calls_by_default_prefixed_and_showing_the_plan():
    guard, _ = reminder_guard()
    out = model_calls(guard, "s", 15)
    fired = [i + 1 for i, ds in enumerate(out) if ds]
    assert fired == [5, 10, 15]
    d = out[4][0]
    assert d.kind is DecisionKind.REMIND and d.policy == "reminder"
    assert d.message.startswith("PLAN REMINDER:")
    assert PRESETS["plan"].render() in d.message
    assert "Not done yet: Navigation, Reproduction, Patch, Validation." in d.message


def test_every_n_tool_calls_delivers_at_the_next_model_call():
    guard, _ = reminder_guard(every_model_calls=None, every_tool_calls=3, min_gap_model_calls=0)
    turns = drive(guard, "s", [ToolEvent.shell(NAV)] * 7)
    # turn i: before_model sees the tool calls of turns < i
    fired = [i for i, t in enumerate(turns) if t.messages]
    assert fired == [3, 6]


def test_cap_per_session():
    guard, _ = reminder_guard(every_model_calls=1, min_gap_model_calls=0, max_per_session=4)
    out = model_calls(guard, "s", 20)
    assert sum(len(ds) for ds in out) == 4
    assert [ds[0].message.count("PLAN REMINDER") for ds in out[:4]] == [1, 1, 1, 1]


def test_no_cap_when_null():
    guard, _ = reminder_guard(every_model_calls=2, min_gap_model_calls=0, max_per_session=None)
    assert sum(len(ds) for ds in model_calls(guard, "s", 40)) == 20


def test_min_gap_in_model_calls_spaces_reminders_from_both_triggers():
    # The tool trigger is due after every call; the gap still allows one reminder per 4 model calls.
    guard, _ = reminder_guard(every_model_calls=None, every_tool_calls=1, min_gap_model_calls=4)
    turns = drive(guard, "s", [ToolEvent.shell(NAV)] * 13)
    fired = [i for i, t in enumerate(turns) if t.messages]
    assert fired == [1, 5, 9]


def test_min_gap_in_seconds(monkeypatch):
    import planguard.policies.reminder as mod

    now = [1000.0]
    monkeypatch.setattr(mod.time, "time", lambda: now[0])
    guard, _ = reminder_guard(every_model_calls=1, min_gap_model_calls=0, min_gap_s=60)
    assert guard.before_model("s")
    now[0] += 30
    assert not guard.before_model("s")
    now[0] += 31
    assert guard.before_model("s")


@pytest.mark.parametrize(("delivery", "ephemeral"), [("ephemeral", True), ("persisted", False)])
def test_delivery_ephemeral_or_persisted(delivery, ephemeral):
    guard, _ = reminder_guard(every_model_calls=1, delivery=delivery)
    (d,) = guard.before_model("s")
    assert d.ephemeral is ephemeral


def test_default_is_ephemeral():
    assert ReminderConfig().delivery == "ephemeral"


def test_template_fields_and_prefix_added_when_missing():
    guard, _ = reminder_guard(
        every_model_calls=1,
        min_gap_model_calls=0,
        template="#{count} {plan_name}: now {phase}; next {next}; done {done} ({steps} calls)",
    )
    drive(guard, "s", [ToolEvent.shell(NAV)])
    (d,) = guard.before_model("s")
    assert d.message == (
        "PLAN REMINDER: #2 plan: now Navigation; next Reproduction (Write a new test script that reproduces "
        "the bug and run it to confirm it fails); done Navigation (1 calls)"
    )


def test_template_with_unknown_field_is_rejected_naming_the_field():
    with pytest.raises(ValidationError, match=r"unknown template field \{plna\}; expected one of: \{plan\}"):
        ReminderConfig(template="PLAN REMINDER: {plna}")


def test_no_reminders_without_a_plan_or_when_disabled():
    guard, _ = guard_for_tests(plan="no_plan")
    assert not any(model_calls(guard, "s", 20))
    guard, _ = reminder_guard(enabled=False)
    assert not any(model_calls(guard, "s", 20))


def test_sessions_count_independently():
    guard, _ = reminder_guard(every_model_calls=3, min_gap_model_calls=0)
    a = [bool(guard.before_model("a")) for _ in range(2)]
    b = [bool(guard.before_model("b")) for _ in range(3)]
    a.append(bool(guard.before_model("a")))
    assert a == [False, False, True]
    assert b == [False, False, True]


def test_progress_fields_follow_each_session_although_shared_by_the_guard():
    # The progress texts are remembered per (current role, missing phases) by the policy, which every
    # session shares: interleaved sessions in different places must each see their own.
    guard, _ = reminder_guard(
        every_model_calls=1, min_gap_model_calls=0, max_per_session=None, template="{status} | {done}"
    )
    drive(guard, "a", [ToolEvent.shell(NAV)])
    (a1,) = guard.before_model("a")
    (b1,) = guard.before_model("b")
    drive(guard, "b", [ToolEvent.shell(NAV)])
    (b2,) = guard.before_model("b")
    (a2,) = guard.before_model("a")
    prefix = "PLAN REMINDER: Current phase: "
    assert (
        b1.message
        == prefix + "not started. Not done yet: Navigation, Reproduction, Patch, Validation. | none"
    )
    navigating = prefix + "Navigation. Not done yet: Reproduction, Patch, Validation. | Navigation"
    assert a1.message == a2.message == b2.message == navigating
