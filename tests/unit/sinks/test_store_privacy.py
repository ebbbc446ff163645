"""The local store is private by default: metadata only, 0600 files in a 0700 directory with its own
.gitignore; a metadata-only store still replays to the live letters and metrics; v1 files still read."""

from __future__ import annotations

import gc
import json
import shutil
import stat
from itertools import islice
from pathlib import Path
from typing import Any

import pytest

from planguard.config import Config
from planguard.events import ToolEvent
from planguard.guard import Guard
from planguard.offline.loaders import Trajectory, iter_trajectories
from planguard.offline.loaders.planguard_store import read_session
from planguard.offline.replay import replay, replay_pipeline
from planguard.sinks.capture import ENV_CAPTURE

ARG_TEXT = "cat /srv/app/settings_local.py"
RESULT_TEXT = "DATABASE_HOST = 'db.internal'"
URL = "https://admin:hunter2pass@git.example.com/org/repo.git"


def guard_with_store(path: Path, **store: Any) -> Guard:
    cfg = Config.model_validate(
        {
            "telemetry": {"enabled": False},
            "store": {"path": str(path), **store},
            "sessions": {"idle_timeout_s": None},
            "policies": {"responses": {"findings": {"repeated_call": {"ladder": {"log": 1}}}}},
        }
    )
    return Guard(cfg)


def drive(guard: Guard, sid: str, events: list[ToolEvent]) -> None:
    for ev in events:
        guard.before_model(sid)
        if guard.before_tool(sid, ev).blocks:
            continue
        guard.after_tool(sid, ev)
    guard.end(sid)


def calls() -> list[ToolEvent]:
    out = [ToolEvent("bash", {"command": ARG_TEXT}, call_id=f"c{i}", result=RESULT_TEXT) for i in range(5)]
    out.append(ToolEvent("bash", {"command": f"curl -sS {URL}"}, call_id="c9", result="Cloning"))
    return out


@pytest.fixture(autouse=True)
def _no_capture_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_CAPTURE, raising=False)


def test_by_default_the_store_keeps_no_content(tmp_path: Path) -> None:
    store = tmp_path / "proj" / ".planguard" / "sessions"
    guard = guard_with_store(store)
    drive(guard, "s1", calls())
    guard.shutdown()
    (path,) = store.glob("*.jsonl")
    raw = path.read_text()
    for text in ("settings_local", "db.internal", "hunter2pass", "git.example.com", "Cloning"):
        assert text not in raw, text
    stored = read_session(path)
    assert stored.header.content is False and not stored.errors
    assert all(s.event.arguments is None and s.event.result is None for s in stored.steps)
    # What replay and reports need is there: phases, commands' roles, action types, findings, decisions.
    assert [s.letters for s in stored.steps] and all(s.commands for s in stored.steps)
    assert all(s.action and "type" in s.action and "target" not in s.action for s in stored.steps)
    # ... and which calls were the same: keyed digests (of the call, its action's target), not the text.
    digests = [s.event.digest for s in stored.steps]
    assert digests[0] == digests[4] != digests[5] and all(d and len(d) == 18 for d in digests)
    assert stored.steps[-1].action is not None and "target_id" in stored.steps[-1].action
    findings = [f for s in stored.steps for f in s.findings]
    assert findings and all(f.evidence == "" for f in findings)
    assert all(isinstance(v, (int, float, list)) for f in findings for v in f.data.values())
    # A decision answering a finding (its message quotes the evidence) keeps no message.
    answers = [d for s in stored.steps for d in s.decisions if d.finding is not None]
    assert answers and all(d.message == "" for d in answers)


@pytest.mark.parametrize("how", ["config", "env"])
def test_content_is_kept_redacted_when_opted_into(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    if how == "env":
        monkeypatch.setenv(ENV_CAPTURE, "SPAN_AND_EVENT")
        guard = guard_with_store(tmp_path)
    else:
        guard = guard_with_store(tmp_path, content=True)
    drive(guard, "s1", calls())
    guard.shutdown()
    (path,) = tmp_path.glob("*.jsonl")
    raw = path.read_text()
    assert "settings_local" in raw and "db.internal" in raw  # content arrives ...
    assert "hunter2pass" not in raw  # ... with the URL's password redacted, in arguments and action.target
    stored = read_session(path)
    assert stored.header.content is True
    assert stored.steps[-1].action is not None and "[REDACTED]" in stored.steps[-1].action["target"]
    assert any(f.evidence for s in stored.steps for f in s.findings)


def test_files_are_private_and_the_directory_ignored_by_git(tmp_path: Path) -> None:
    store = tmp_path / "a" / "b"
    guard = guard_with_store(store)
    drive(guard, "s1", calls()[:1])
    guard.shutdown()
    (path,) = store.glob("*.jsonl")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(store.stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "a").stat().st_mode) == 0o700  # parents it created too
    assert (store / ".gitignore").read_text().splitlines()[-1] == "*"
    # The reader skips the .gitignore (not a session file).
    from planguard.offline.loaders.planguard_store import iter_sessions

    assert [type(s).__name__ for s in iter_sessions(store)] == ["StoredSession"]


def test_a_directory_removed_while_the_store_runs_is_made_again(tmp_path: Path) -> None:
    store = tmp_path / "a" / "b"
    guard = guard_with_store(store)
    drive(guard, "s1", calls()[:1])
    guard.end("s1")
    (sink,) = guard.pipeline.sinks
    assert sink.flush()  # type: ignore[attr-defined]
    shutil.rmtree(tmp_path / "a")
    drive(guard, "s2", calls()[:1])
    guard.shutdown()
    (path,) = store.glob("*.jsonl")
    assert read_session(path).id == "s2" and read_session(path).complete
    assert stat.S_IMODE(store.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert (store / ".gitignore").read_text().splitlines()[-1] == "*"


def test_a_version_1_file_still_reads(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    lines = [
        {"type": "planguard.session", "v": 1, "session_id": "old", "started_at": 1.0, "plan": "plan"},
        {
            "type": "step",
            "index": 0,
            "event": {"tool": "bash", "arguments": {"command": "ls"}, "action": "ls"},
            "roles": ["L_navigate"],
            "letters": "N",
            "commands": [["ls", "L_navigate"]],
        },
        {"type": "end", "n_steps": 1, "letters": "N"},
    ]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    stored = read_session(path)
    assert not stored.errors and stored.header.content is True
    assert stored.events()[0].arguments == {"command": "ls"}
    (result,) = [r for r in replay([path], replay_pipeline()) if not hasattr(r, "message")]
    assert result.summary.letters == "N"  # classified again from its arguments


def test_a_metadata_only_store_replays_to_the_live_letters_and_metrics(shared: Path, tmp_path: Path) -> None:
    """Real SWE-agent runs, driven live through a guard with the default (metadata-only) store, then replayed
    from the store: every run's letters and compliance scores equal the live ones and those of replaying
    the original trajectory (the store keeps each step's commands and action type, not their text), and
    so do its findings but tool_oscillation's (which needs the written texts to see a revert)."""
    runs = [
        t
        for t in islice(iter_trajectories([shared / "data" / "swe-agent" / "trajectories.jsonl"]), 12)
        if isinstance(t, Trajectory)
    ]
    assert len(runs) >= 10
    guard = guard_with_store(tmp_path)
    live: dict[str, Any] = {}
    for t in runs:
        for ev in t.events:
            guard.before_model(t.id)
            guard.before_tool(t.id, ev)
            guard.after_tool(t.id, ev)
        live[t.id] = guard.end(t.id)
    guard.shutdown()
    raw = "".join(p.read_text() for p in tmp_path.glob("*.jsonl"))
    assert '"arguments"' not in raw and '"result"' not in raw
    original = {}
    offline = replay_pipeline()
    for t in runs:  # the original trajectory, replayed with its arguments
        session = offline.session(t.id)
        for ev in t.events:
            session.observe(ev)
        original[t.id] = session.end()
    replayed = replay([tmp_path], replay_pipeline())
    stored = {r.trajectory.id: r.summary for r in replayed if hasattr(r, "summary")}
    assert set(stored) == set(live)
    for sid, summary in live.items():
        assert stored[sid].letters == summary.letters, sid
        assert stored[sid].n_steps == summary.n_steps
        for plan, scores in summary.scores.items():
            assert stored[sid].scores[plan].as_dict() == pytest.approx(scores.as_dict()), (sid, plan)
    for sid, summary in original.items():
        assert stored[sid].letters == summary.letters
        found = {k: n for k, n in summary.finding_counts.items() if k != "tool_oscillation"}
        assert {k: n for k, n in stored[sid].finding_counts.items() if k != "tool_oscillation"} == found, sid


@pytest.mark.parametrize("content", [False, True])
def test_a_queued_record_holds_what_its_line_needs_not_the_step(tmp_path: Path, content: bool) -> None:
    """While a finished call's record waits for the writer, it holds no step or classification (objects
    every garbage collection would walk): the call, its roles and sub-commands, its action."""
    from planguard.sinks.store import StoreSink

    guard = guard_with_store(tmp_path, content=content)
    (sink,) = [s for s in guard.pipeline.sinks if isinstance(s, StoreSink)]
    items: list[tuple[Any, ...]] = []
    sink._worker.submit = lambda item: items.append(item) or True  # type: ignore[method-assign]
    ev = ToolEvent("bash", {"command": ARG_TEXT}, call_id="c1")
    guard.before_tool("q", ev)
    ev.result = RESULT_TEXT
    guard.after_tool("q", ev)
    (taken,) = [item[3] for item in items if item[0] == "step"]
    held = {type(x).__name__ for item in items for x in (*item, *gc.get_referents(taken))}
    assert held.isdisjoint({"Step", "Classification"})
    assert taken.event is ev and taken.roles == ("L_navigate",)
    assert [(c.label, c.role) for c in taken.commands] == [("cat", "L_navigate")]
    line = sink._line(items[-1]).decode()
    assert (ARG_TEXT in line) is content and (RESULT_TEXT in line) is content
