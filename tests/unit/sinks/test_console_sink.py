"""The console timeline: one readable line per tool call, colour only for terminals."""

from __future__ import annotations

import io
import re
from typing import Any

import pytest

from planguard.decisions import Decision, DecisionKind
from planguard.events import ToolEvent
from planguard.session import Pipeline, Session
from planguard.sinks.console import ConsoleSink, _want_color
from planguard.stages import Policy
from planguard.step import Step
from planguard.testing import ScriptedDetector

ANSI = re.compile(r"\x1b\[[0-9;]*m")


class Gate(Policy):
    name = "gate"

    def before_tool(self, step: Step, session: Session, state: Any) -> Decision | None:
        if "rm -rf" in (step.event.action or ""):
            return Decision(DecisionKind.DENY, "destructive\ncommand refused", self.name)
        return None

    def after_tool(self, step: Step, session: Session, state: Any) -> list[Decision]:
        return [Decision(DecisionKind.NUDGE, "x", self.name, f) for f in step.findings]

    def before_model(self, session: Session, state: Any) -> list[Decision]:
        return (
            [Decision(DecisionKind.REMIND, "PLAN REMINDER: navigate first", self.name)]
            if session.n_steps == 1
            else []
        )


def run(sink: ConsoleSink) -> str:
    pipe = Pipeline(detectors=(ScriptedDetector("slow_start", [1]),), policies=(Gate(),), sinks=(sink,))
    s = pipe.session("dev-1")
    for cmd in [
        "cat /testbed/src/mod.py",
        "python /testbed/reproduce_bug.py",
        "rm -rf /",
        "grep -rn x /testbed",
    ]:
        s.before_model()
        ev = ToolEvent.shell(cmd)
        if s.before_tool(ev).blocks:
            continue
        ev.exit_code = 1 if "python" in cmd else 0
        s.after_tool(ev)
    s.end()
    assert sink.flush()
    return sink.stream.getvalue()  # type: ignore[attr-defined,no-any-return]


@pytest.mark.parametrize(
    ("content", "remind", "deny"),
    [
        # planguard's own messages (these answer no finding) are shown either way; a finding's and a
        # custom policy's (the "gate" here is one: it may quote the call) are content
        (None, "remind (gate)", "deny (gate)"),
        (True, "remind: PLAN REMINDER: navigate first", "deny: destructive command refused"),
    ],
)
def test_plain_timeline(
    monkeypatch: pytest.MonkeyPatch, content: bool | None, remind: str, deny: str
) -> None:
    monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raising=False)
    out = run(ConsoleSink(io.StringIO(), color=False, content=content))
    assert not ANSI.search(out)
    lines = out.splitlines()
    assert lines[0] == "▶ dev-1  plan=plan"
    assert re.match(r"  dev-1 #0   bash {16}N   {14}PC 0\.40  N1$", lines[1]), lines[1]
    assert lines[2] == f"  dev-1       ↳ {remind}"
    step1 = lines[3]
    assert "#1" in step1 and "✗ failed" in step1 and "⚑ slow_start" in step1 and "→ nudge" in step1
    assert lines[4] == f"  dev-1 -    bash                ✗ blocked  → {deny}"  # a refused call is no step
    assert lines[5].startswith("  dev-1 #2   bash                N")
    numbers = re.findall(r" #(\d+) ", out)
    assert numbers == sorted(set(numbers)), numbers  # one number per step, in order
    assert lines[6].startswith("■ dev-1  3 steps  N")
    assert "findings: slow_start" in lines[6]


def test_a_reminder_is_shown_whole_other_messages_cut() -> None:
    out = run(ConsoleSink(io.StringIO(), color=False, content=True, max_message_chars=12))
    assert "↳ remind: PLAN REMINDER: navigate first" in out  # what the agent was told, in full
    assert "deny: destructive…" in out  # (12 characters at most)


def test_colour_uses_ansi_codes() -> None:
    out = run(ConsoleSink(io.StringIO(), color=True))
    assert ANSI.search(out)
    plain = ANSI.sub("", out)
    assert "⚑ slow_start" in plain and "✗ blocked" in plain


def test_colour_follows_the_terminal_and_env(monkeypatch: pytest.MonkeyPatch) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    assert _want_color(Tty()) is True
    assert _want_color(io.StringIO()) is False
    monkeypatch.setenv("NO_COLOR", "1")
    assert _want_color(Tty()) is False
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert _want_color(io.StringIO()) is True


def test_decisions_of_calls_that_never_end_stay_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Gated calls whose results never come: the sink keeps the decisions of at most ``MAX_OPEN_CALLS`` of
    them (the session itself forgets the oldest past ``MAX_PENDING``); those it still holds get their line,
    decisions included, at the session's end."""
    from planguard import session as session_module
    from planguard import sinks

    class Note(Policy):
        name = "note"

        def before_tool(self, step: Step, session: Session, state: Any) -> Decision | None:
            return Decision(DecisionKind.LOG, f"looked at {step.event.call_id}", self.name)

    monkeypatch.setattr(session_module, "MAX_PENDING", 3)
    monkeypatch.setattr(sinks, "MAX_OPEN_CALLS", 3)
    sink = ConsoleSink(io.StringIO(), color=False)
    s = Pipeline(policies=(Note(),), sinks=(sink,)).session("orphans")
    n = 8
    for i in range(n):
        assert not s.before_tool(ToolEvent.shell(f"cat /testbed/f{i}.py", call_id=f"c{i}")).blocks
        ((_, st),) = s.sink_states
        assert len(st.decisions) <= 3
    s.end()
    assert sink.flush()
    steps = [line for line in sink.stream.getvalue().splitlines() if line.startswith("  orphans #")]  # type: ignore[union-attr]
    assert [re.match(r"  orphans #(\d+)", line).group(1) for line in steps] == ["5", "6", "7"]  # type: ignore[union-attr]
    assert all(line.endswith("→ log") for line in steps), steps


def test_a_message_answering_a_finding_is_content(monkeypatch: pytest.MonkeyPatch) -> None:
    """The nudge answering slow_start quotes nothing here, but a finding's answer may (escalation quotes the
    evidence): without content it is shown by kind and policy only."""
    from planguard.findings import Finding

    monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raising=False)
    sink = ConsoleSink(io.StringIO(), color=False)
    finding = Finding("repeated_call", 0, 3, "bash cat secret-path")
    quoting = Decision(DecisionKind.NUDGE, "repeated_call: bash cat secret-path", "responses", finding)
    assert sink._why(quoting) == "nudge (responses)"
    with_content = ConsoleSink(io.StringIO(), color=False, content=True)
    assert with_content._why(quoting) == "nudge: repeated_call: bash cat secret-path"


def test_parallel_calls_are_shown_in_call_order() -> None:
    """Three calls run at once (a model's parallel tool calls) and end in reverse: the timeline still shows
    #0, #1, #2, each line once its earlier calls have theirs (a call still open at the session's end gets
    its line then, after them)."""
    sink = ConsoleSink(io.StringIO(), color=False)
    s = Pipeline(sinks=(sink,)).session("par")
    events = [ToolEvent.shell(f"cat /testbed/f{i}.py", call_id=f"c{i}") for i in range(4)]
    for ev in events:
        assert not s.before_tool(ev).blocks
    s.after_tool(events[2])
    s.after_tool(events[1])
    assert sink.flush()
    assert " #" not in sink.stream.getvalue()  # type: ignore[attr-defined]  # #0 still runs: all held
    s.after_tool(events[0])
    s.end()  # events[3] never ended
    assert sink.flush()
    out = sink.stream.getvalue()  # type: ignore[attr-defined]
    assert re.findall(r"  par #(\d+)", out) == ["0", "1", "2", "3"]
    assert out.splitlines()[-1].startswith("■ par")
