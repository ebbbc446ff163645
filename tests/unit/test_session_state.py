"""``Session.state`` / ``Session.restore``: a process that handles one call at a time (the Claude Code
hook) saves a session between calls and picks it up again; the run goes on exactly as if never stopped."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from quiet_guard import quiet_config

from planguard.events import ToolEvent
from planguard.guard import Guard
from planguard.offline.loaders import Trajectory, iter_trajectories
from planguard.session import Session
from planguard.testing import RecordingSink


def _run(session: Session, events: list[ToolEvent]) -> None:
    for e in events:
        session.before_model()
        if not session.before_tool(e).blocks:
            session.after_tool(e)


def test_a_restored_session_continues_as_if_never_stopped(shared: Path) -> None:
    corpus = shared / "data" / "swe-agent" / "trajectories.jsonl"
    runs = [t for t in iter_trajectories([corpus]) if isinstance(t, Trajectory)][:12]
    recorder = RecordingSink()
    with Guard(quiet_config(), sinks=[recorder]) as guard:
        pipeline = guard.pipeline
        for t in runs:
            half = len(t.events) // 2
            whole = pipeline.session(f"{t.id}/whole")
            _run(whole, t.events)
            expected = whole.end()

            first = pipeline.session(f"{t.id}/split")
            _run(first, t.events[:half])
            saved = pickle.dumps(first.state())
            recorder.decisions.clear()
            second = Session.restore(pipeline, pickle.loads(saved))
            _run(second, t.events[half:])
            got = second.end()

            assert recorder.summaries[f"{t.id}/split"] is got  # the sinks hear the restored session
            assert (got.letters, got.langutory, got.n_steps, got.n_model_calls) == (
                expected.letters,
                expected.langutory,
                expected.n_steps,
                expected.n_model_calls,
            )
            assert got.scores == expected.scores
            assert got.finding_counts == expected.finding_counts
            assert got.decision_counts == expected.decision_counts
            assert [(f.detector, f.first_step, f.evidence) for f in got.findings] == [
                (f.detector, f.first_step, f.evidence) for f in expected.findings
            ]


def test_state_leaves_out_the_pipeline_and_restore_checks_what_it_gets() -> None:
    session = Guard(quiet_config()).session("s")
    state = session.state()
    assert not {"pipeline", "_hooks", "_compliances"} & set(state)
    del state["langutory"]
    with pytest.raises(ValueError, match="langutory"):
        Session.restore(session.pipeline, state)
