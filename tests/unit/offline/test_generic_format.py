"""The generic trajectory format: detected by ``planguard replay``, bad lines named, and written by
``planguard export`` from the store so that a live session's export replays to the same summary."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from planguard.config import Config
from planguard.guard import Guard
from planguard.offline.export import generic_records
from planguard.offline.loaders import detect_format, load_trajectories
from planguard.offline.loaders.planguard_store import read_session
from planguard.offline.replay import replay, replay_pipeline
from planguard.sinks.store.records import RECORDED_KEY
from planguard.testing import RecordingSink


def _write(path: Path, lines: list[Any]) -> Path:
    path.write_text(
        "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines), encoding="utf-8"
    )
    return path


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "planguard", *args], capture_output=True, text=True, timeout=120
    )


def test_detected_and_loaded_in_call_order_per_session(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "log.jsonl",
        [
            {
                "session": "a",
                "tool": "bash",
                "arguments": {"command": "ls"},
                "result": "x",
                "is_error": False,
            },
            {
                "session": "b",
                "tool": "read_file",
                "arguments": '{"path": "q"}',
                "result": None,
                "is_error": False,
            },
            {
                "session": "a",
                "tool": "bash",
                "arguments": {"command": "pytest"},
                "result": "1 failed",
                "is_error": True,
                "call_id": "c2",
                "time": 1700000000.5,
                "exit_code": 1,
            },
            {
                "session": "a",
                "tool": "submit",
                "arguments": {},
                "result": None,
                "is_error": False,
                "blocked": "not yet",
            },
        ],
    )
    assert detect_format(path) == "generic"
    runs, errors = load_trajectories(path)
    assert errors == []
    assert [r.id for r in runs] == ["a", "b"]
    a = runs[0]
    assert [e.tool for e in a.events] == ["bash", "bash", "submit"]
    assert a.events[1].is_error and a.events[1].exit_code == 1 and a.events[1].call_id == "c2"
    assert a.events[1].start_time == 1700000000.5
    assert a.events[2].blocked == "not yet"
    assert runs[1].events[0].arguments == '{"path": "q"}'  # raw argument text is kept as text


def test_bad_lines_are_named_and_the_rest_loads(tmp_path: Path) -> None:
    good = {"session": "s", "tool": "bash", "arguments": {"command": "ls"}, "result": "", "is_error": False}
    path = _write(
        tmp_path / "log.jsonl",
        [
            good,
            "{not json",
            {"session": "s", "tool": 3, "arguments": {}},
            {"session": "s", "tool": "bash", "arguments": [1], "result": None},
            {"session": "s", "tool": "bash", "arguments": {}, "is_error": "yes"},
            {"session": "s", "tool": "bash", "arguments": {}, "time": "noon"},
            [1, 2],
            good,
        ],
    )
    runs, errors = load_trajectories(path)
    assert len(runs) == 1 and len(runs[0].events) == 2
    messages = {e.line: str(e) for e in errors}
    assert set(messages) == {2, 3, 4, 5, 6, 7}
    assert all(m.startswith(f"{path}:") for m in messages.values())
    assert "invalid JSON" in messages[2]
    assert "'tool' is number" in messages[3]
    assert "'arguments' is array" in messages[4]
    assert "'is_error' is string" in messages[5]
    assert "'time' is string" in messages[6]
    assert "record is array" in messages[7]

    proc = _cli("replay", str(path), "--format", "jsonl")
    assert proc.returncode == 1  # the bad lines are reported, the session still replays
    assert f"{path}:3:" in proc.stderr
    assert json.loads(proc.stdout.splitlines()[0])["id"] == "s"


# ------------------------------------------------------------------ live session → store → export → replay


def _live_session(store: Path) -> Any:
    pytest.importorskip("langchain.agents", reason="the LangChain integration needs langchain>=1")
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage
    from langchain_core.tools import tool
    from planguard_langchain import PlanGuardMiddleware
    from planguard_langchain.testing import ScriptedChatModel, call, turn

    @tool
    def bash(command: str) -> str:
        """Run a shell command."""
        if "pytest" in command:
            return "1 passed"
        return f"ran {command}"

    @tool
    def str_replace_editor(
        command: str, path: str, file_text: str = "", old_str: str = "", new_str: str = ""
    ) -> str:
        """View, create or edit a file."""
        return f"{command} {path}: ok"

    @tool
    def submit() -> str:
        """Submit the work."""
        return "submitted"

    turns = [
        turn(call("bash", command="grep -rn 'def parse' /testbed/pkg")),
        turn(call("str_replace_editor", command="view", path="/testbed/pkg/core.py")),
        turn(
            call(
                "str_replace_editor", command="create", path="/testbed/reproduce.py", file_text="import pkg\n"
            )
        ),
        turn(call("bash", command="python /testbed/reproduce.py")),
        turn(
            call(
                "str_replace_editor",
                command="str_replace",
                path="/testbed/pkg/core.py",
                old_str="a",
                new_str="b",
            )
        ),
        turn(call("submit")),  # denied: no validation after the patch
        turn(call("bash", command="python /testbed/reproduce.py")),
        turn(call("submit")),
    ]
    cfg = Config.model_validate(
        {
            "plan": "plan",
            "telemetry": {"enabled": False},
            "store": {"enabled": True, "path": str(store), "always": True},
            "policies": {
                "gates": [
                    {
                        "name": "validate-before-submit",
                        "tool": "submit",
                        "until": {"phase_after": {"phase": "V", "after": "P"}},
                    }
                ]
            },
        }
    )
    rec = RecordingSink()
    guard = Guard(cfg, sinks=[rec])
    agent = create_agent(
        ScriptedChatModel(turns=turns),
        [bash, str_replace_editor, submit],
        middleware=[PlanGuardMiddleware(guard)],
    )
    agent.invoke({"messages": [HumanMessage("fix the parser")]}, {"configurable": {"thread_id": "run-1"}})
    guard.end("run-1")  # (the middleware may have ended it already)
    guard.shutdown()  # flushes the store's writer
    return rec.summaries["run-1"]


def test_store_export_of_a_live_session_replays_to_the_same_summary(tmp_path: Path) -> None:
    store = tmp_path / "sessions"
    live = _live_session(store)
    assert live is not None and live.decision_counts.get("deny") == 1  # the gate denied the early submit

    out = tmp_path / "export.jsonl"
    proc = _cli("export", str(store), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == live.n_steps + 1  # every accepted call, plus the denied one
    assert [x["tool"] for x in lines].count("submit") == 2
    assert lines[5]["tool"] == "submit" and "validate-before-submit" in lines[5]["blocked"]
    assert detect_format(out) == "generic"

    (result,) = list(replay([out], replay_pipeline()))
    assert not isinstance(result, Exception)
    replayed = result.summary
    assert replayed.session_id == "run-1"
    assert replayed.letters == live.letters
    assert replayed.langutory == live.langutory
    assert replayed.n_steps == live.n_steps
    assert replayed.scores == live.scores
    assert replayed.decision_counts.get("deny") == live.decision_counts["deny"]

    record = json.loads(_cli("replay", str(out), "--format", "jsonl").stdout)
    # (the command's "n_steps" counts every replayed call, the recorded denial too; the summary's does not)
    assert record["letters"] == live.letters and record["langutory"] == live.langutory
    assert record["metrics"]["plan"] == live.scores["plan"].as_dict()


def test_export_of_a_store_file_matches_its_events(tmp_path: Path) -> None:
    store = tmp_path / "sessions"
    _live_session(store)
    (path,) = sorted(store.glob("*.jsonl"))
    stored = read_session(path)
    records = list(generic_records(stored))
    accepted = [r for r in records if "blocked" not in r]
    assert [r["tool"] for r in accepted] == [s.event.tool for s in stored.steps]
    assert all(r["session"] == "run-1" for r in records)
    assert not stored.header.content  # the default store keeps metadata only: the export says what it has
    for r, step in zip(accepted, stored.steps, strict=True):
        assert r["arguments"] == {RECORDED_KEY: step.event.digest}
        assert r["recorded"]["commands"] == [list(c) for c in step.commands]
