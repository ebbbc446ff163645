"""planguard.journal: a session's ops as JSON lines, and their replay with the sinks muted, which gives the
session that was live (the hook service and the proxy rebuild sessions with it)."""

from __future__ import annotations

import json
from typing import Any

from quiet_guard import quiet_config

from planguard import Guard, journal
from planguard.events import ToolEvent
from planguard.journal import Op
from planguard.sinks import Sink


class Recorder(Sink):
    def __init__(self) -> None:
        self.heard: list[str] = []

    def on_tool_end(self, session: Any, step: Any, state: Any) -> None:
        self.heard.append(step.event.tool)


def _ops() -> list[Op]:
    calls = [
        ("Read", {"file_path": "/w/calc.py"}, "def add(a, b): return a - b"),
        ("Bash", {"command": "python3 -c 'import calc; assert calc.add(1, 2) == 3'"}, "AssertionError"),
        ("Edit", {"file_path": "/w/calc.py", "old_string": "a - b", "new_string": "a + b"}, "ok"),
        ("Bash", {"command": "python3 -c 'import calc; assert calc.add(1, 2) == 3'"}, ""),
    ]
    ops = [Op("model")]
    for n, (tool, args, result) in enumerate(calls):
        ops.append(Op("pre", ToolEvent(tool, args, call_id=f"c{n}", metadata={"cwd": "/w"})))
        ops.append(
            Op("post", ToolEvent(tool, args, call_id=f"c{n}", result=result, is_error=result.startswith("A")))
        )
        ops.append(Op("model"))
    return ops


def test_ops_round_trip_through_json_lines() -> None:
    for op in _ops():
        line = op.to_json()
        assert "\n" not in line
        back = Op.from_json(line)
        assert back.kind == op.kind
        if op.event is not None:
            assert back.event is not None
            assert journal.event_dict(back.event) == journal.event_dict(op.event)


def test_an_older_hook_journal_line_is_read() -> None:
    line = json.dumps(
        {"op": "post", "e": {"t": "Bash", "a": {"command": "ls"}, "id": "c1", "r": "x", "rc": 0}}
    )
    op = Op.from_json(line)
    assert op.event is not None
    assert (op.event.tool, op.event.arguments, op.event.call_id, op.event.result, op.event.exit_code) == (
        "Bash",
        {"command": "ls"},
        "c1",
        "x",
        0,
    )


def test_replay_gives_the_live_session_and_the_sinks_hear_nothing() -> None:
    ops = _ops()
    live_sink, replay_sink = Recorder(), Recorder()
    live = Guard(quiet_config(), sinks=[live_sink]).pipeline.session("s")
    for op in ops:
        journal.apply(live, op)
    replayed = journal.replay(Guard(quiet_config(), sinks=[replay_sink]).pipeline, "s", ops)
    assert replayed.summary().letters == live.summary().letters != ""
    assert replayed.summary().n_model_calls == live.summary().n_model_calls
    assert live_sink.heard == ["Read", "Bash", "Edit", "Bash"] and replay_sink.heard == []


def test_a_call_refused_after_it_was_allowed_replays_as_a_denial_not_a_step() -> None:
    """A ``refused`` entry (the agent's harness refused a call the session had let run; it never ran)
    makes its earlier ``pre`` a recorded denial on replay; the entry survives the JSON round trip."""
    guard = Guard(quiet_config())
    ops = _ops()
    reason = "refused by Claude Code's permissions (config)"
    refused = Op("refused", ToolEvent("", call_id="c2", blocked=reason))
    back = Op.from_json(refused.to_json())
    assert back.kind == "refused" and back.event is not None and back.event.blocked == reason
    del ops[8]  # c2's post: a refused call has no result
    seen: list[Any] = []
    session = journal.replay(guard.pipeline, "s", [*ops, back], observe=lambda op, r: seen.append(r))
    summary = session.end()
    assert summary.n_steps == 3 and summary.decision_counts.get("deny") == 1
    (denial,) = [r for op, r in zip([*ops, back], seen, strict=True) if op.kind == "pre" and r.blocks]
    assert "permissions" in denial.message
    guard.shutdown()
