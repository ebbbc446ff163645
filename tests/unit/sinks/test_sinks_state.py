"""A sink's per-session state: made by ``new_state(session)``, held by the session, passed to every hook,
dropped when the session ends (as detectors' and policies' states are)."""

from __future__ import annotations

import gc
import weakref
from typing import Any

from planguard import Guard, ToolEvent
from planguard.config import Config
from planguard.decisions import Decision
from planguard.findings import Finding
from planguard.session import Pipeline, Session, SessionSummary
from planguard.stages import Sink
from planguard.step import Step

OFF = Config.model_validate(
    {
        "telemetry": {"enabled": False},
        "store": {"enabled": False},
        "policies": {"reminder": {"enabled": False}},
    }
)


class Calls:
    """One session's record: which hooks ran, in order."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.hooks: list[str] = []


class PerSession(Sink):
    def __init__(self) -> None:
        self.made: list[str] = []
        self.ended: dict[str, list[str]] = {}

    def new_state(self, session: Session) -> Calls:
        self.made.append(session.id)
        return Calls(session.id)

    def on_session_start(self, session: Session, state: Calls) -> None:
        assert state.session_id == session.id
        state.hooks.append("start")

    def on_tool_start(self, session: Session, step: Step, state: Calls) -> None:
        state.hooks.append(f"tool_start {step.index}")

    def on_tool_end(self, session: Session, step: Step, state: Calls) -> None:
        state.hooks.append(f"tool_end {step.index}")

    def on_finding(self, session: Session, step: Step | None, finding: Finding, state: Calls) -> None:
        state.hooks.append(f"finding {finding.detector}")

    def on_decision(self, session: Session, step: Step | None, decision: Decision, state: Calls) -> None:
        state.hooks.append(f"decision {decision.kind}")

    def on_session_end(self, session: Session, summary: SessionSummary, state: Calls) -> None:
        assert state.session_id == session.id
        self.ended[session.id] = [*state.hooks, "end"]


def test_each_session_gets_its_own_state_in_every_hook() -> None:
    sink = PerSession()
    with Guard(OFF, sinks=[sink]) as guard:
        for sid in ("a", "b"):
            for i in range(2):
                event = ToolEvent.shell(f"ls {sid}{i}", call_id=f"{sid}{i}")
                guard.before_tool(sid, event)
                guard.after_tool(sid, event)
        guard.end("b")
        guard.end("a")
    assert sink.made == ["a", "b"]
    expected = ["start", "tool_start 0", "tool_end 0", "tool_start 1", "tool_end 1"]
    assert sink.ended["a"] == sink.ended["b"]  # (end-of-run decisions between the last call and the end)
    assert sink.ended["a"][:5] == expected and sink.ended["a"][-1] == "end"


def test_the_state_goes_with_the_end_of_the_session_and_the_end_is_heard_once() -> None:
    sink = PerSession()
    session = Pipeline(sinks=(sink,)).session("s")
    session.observe(ToolEvent.shell("ls"))
    ((_, state),) = session.sink_states
    gone = weakref.ref(state)
    del state
    session.end()
    session.end()  # idempotent: the sink heard the end once
    assert list(sink.ended) == ["s"] and sink.ended["s"][-1] == "end"
    assert session.sink_states == ()
    gc.collect()
    assert gone() is None  # nothing but the session held it


def test_a_restored_session_begins_a_new_record_without_a_new_session_event() -> None:
    sink = PerSession()
    pipeline = Pipeline(sinks=(sink,))
    first = pipeline.session("s")
    first.observe(ToolEvent.shell("ls"))
    saved = first.state()
    assert "sink_states" not in saved  # a process's own record (open spans, files): never saved
    restored = Session.restore(pipeline, saved)
    restored.observe(ToolEvent.shell("cat a"))
    restored.end()
    assert sink.made == ["s", "s"]
    assert sink.ended["s"] == ["tool_end 1", "end"]  # no "start": the run did not begin again


def test_a_sink_whose_new_state_fails_is_counted_and_sits_the_session_out() -> None:
    class Broken(PerSession):
        def new_state(self, session: Session) -> Any:
            raise RuntimeError("no state")

    broken, working = Broken(), PerSession()
    with Guard(OFF, sinks=[broken, working]) as guard:
        event = ToolEvent.shell("ls", call_id="c")
        assert not guard.before_tool("s", event).blocks
        assert guard.after_tool("s", event) is not None
        assert guard.end("s") is not None
        assert guard.errors.total == 1
        ((where, n),) = guard.errors.counts.items()
        assert where.endswith("Broken.new_state:RuntimeError") and n == 1
    assert broken.ended == {} and working.ended["s"][-1] == "end"


def test_sinks_hold_decisions_for_as_many_calls_as_a_session_keeps_pending() -> None:
    from planguard import session, sinks

    assert sinks.MAX_OPEN_CALLS == session.MAX_PENDING
