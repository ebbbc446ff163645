"""Calls of tools no mapping rule knows: counted per session, said once, shown by replay per file."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from planguard.cli import main
from planguard.events import ToolEvent
from planguard.phases import get_rules
from planguard.session import Pipeline


def _claude_code_transcript(path: Path, calls: list[tuple[str, dict[str, str]]]) -> Path:
    lines = []
    for i, (name, arguments) in enumerate(calls):
        common = {"sessionId": "s1", "cwd": "/home/u/proj"}
        lines.append(
            {
                **common,
                "type": "assistant",
                "uuid": f"a{i}",
                "parentUuid": f"u{i - 1}" if i else None,
                "message": {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": f"t{i}", "name": name, "input": arguments}],
                },
            }
        )
        lines.append(
            {
                **common,
                "type": "user",
                "uuid": f"u{i}",
                "parentUuid": f"a{i}",
                "message": {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "ok"}],
                },
            }
        )
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return path


def test_replay_names_the_tools_to_map(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _claude_code_transcript(
        tmp_path / "run.jsonl",
        [
            ("frob", {"target": "a.py"}),
            ("quux", {"target": "a.py"}),
            ("frob", {"target": "b.py"}),
            ("Bash", {"command": "ls"}),
        ],
    )
    assert main(["replay", str(run), "--format", "jsonl", "-o", str(tmp_path / "out.jsonl")]) == 0
    err = capsys.readouterr().err
    assert err.count("cannot classify") == 1  # the file's warning, not the session log line too
    assert f"{run}: 3 of 4 tool calls use tools planguard cannot classify (frob, quux)" in err
    assert "tools.rules" in err
    record = json.loads((tmp_path / "out.jsonl").read_text())
    assert record["n_steps"] == 4 and record["letters"] == "N"


def test_a_run_of_known_tools_says_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _claude_code_transcript(
        tmp_path / "run.jsonl",
        [("Read", {"file_path": "/home/u/proj/a.py"}), ("frob", {}), ("Bash", {"command": "pytest"})],
    )
    assert main(["replay", str(run), "--format", "jsonl", "-o", str(tmp_path / "out.jsonl")]) == 0
    assert "cannot classify" not in capsys.readouterr().err


def test_a_session_logs_once_and_counts_every_unknown_call(caplog: pytest.LogCaptureFixture) -> None:
    session = Pipeline(rules=get_rules("live")).session("s")
    with caplog.at_level(logging.WARNING, logger="planguard"):
        for name in ["frob", "quux", "frob", "frob", "zork", "frob"]:
            session.observe(ToolEvent(tool=name, arguments={}))
    assert len([r for r in caplog.records if "cannot classify" in r.getMessage()]) == 1
    assert session.phases_unobserved() is not None
    summary = session.end()
    assert summary.unclassified == 6 and summary.unknown_tools == {"frob": 4, "quux": 1, "zork": 1}


def test_odd_tool_names_are_counted_by_their_text() -> None:
    session = Pipeline(rules=get_rules("live")).session("s")
    for name in [7, {1, 2}, "x" * 10_000]:
        session.observe(ToolEvent(tool=name, arguments={}))  # type: ignore[arg-type]
    summary = session.end()
    assert summary.unclassified == 3 and "7" in summary.unknown_tools and "x" * 100 in summary.unknown_tools
