"""A store kept without content (the default) replayed with ``planguard replay --config`` decides as the live
run did where the decisions read the calls' arguments (a gate's argument pattern, the finish check of a
shell ``submit`` or mini-swe-agent's ``COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT``, the agent's todo list); a
config whose patterns the recording has no verdicts for is said to be so, per session (issue #32)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from planguard.cli.commands import replay as replay_command
from planguard.config import Config
from planguard.events import ToolEvent
from planguard.guard import Guard
from planguard.offline.replay import DecisionLog

SHELL_SUBMIT_GATE = {
    "name": "validate-before-shell-submit",
    "tool": ["bash"],
    "arguments": {"command": r"(^|&&|;)\s*submit\b"},
    "until": {"phase_after": {"phase": "V", "after": "P"}},
    "max_denials": 3,
}


def _config(*, gate: bool) -> dict[str, Any]:
    return {
        "rules": "live",
        "policies": {
            "reminder": {"enabled": False},
            "violations": {"on_finish": "deny", "max_finish_denials": 1},
            "todo": {"finish_check": "deny", "max_finish_denials": 1},
            "gates": [SHELL_SUBMIT_GATE] if gate else [],
        },
    }


def _todos(*items: tuple[str, str]) -> ToolEvent:
    return ToolEvent("TodoWrite", {"todos": [{"content": text, "status": status} for text, status in items]})


def _bash(command: str) -> ToolEvent:
    return ToolEvent("bash", {"command": command})


# An agent that writes a todo list, marks an item done with no work, finishes too early (mini-swe-agent's
# finish command), patches, submits before testing (a shell ``submit``), tests, completes the list, submits.
CALLS = [
    _todos(("Fix the parser in src/parser.py", "in_progress"), ("Run the tests", "pending")),
    _bash("cat src/parser.py"),
    _todos(("Fix the parser in src/parser.py", "completed"), ("Run the tests", "in_progress")),
    _bash("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"),
    _bash("sed -i 's/old/new/' src/parser.py"),
    _bash("submit"),
    _bash("python -m pytest tests/test_parser.py"),
    _todos(("Fix the parser in src/parser.py", "completed"), ("Run the tests", "completed")),
    _bash("submit"),
]


def _live(config: dict[str, Any], store: Path) -> tuple[Any, list[dict[str, Any]], list[str]]:
    """The agent run live under ``config`` with a store without content: summary, decisions, denied."""
    log = DecisionLog()
    cfg = Config.model_validate(
        {**config, "telemetry": {"enabled": False}, "store": {"path": str(store), "content": False}}
    )
    guard = Guard(cfg, sinks=[log])
    denied = []
    for i, call in enumerate(CALLS):
        event = ToolEvent(call.tool, dict(call.arguments), call_id=f"c{i}")  # type: ignore[arg-type]
        guard.before_model("s")
        if guard.before_tool("s", event).blocks:
            denied.append(str(event.arguments))
            continue
        event.result = "ok"
        guard.after_tool("s", event)
    summary = guard.end("s")
    guard.shutdown()
    return summary, log.take("s"), denied


def _replay(config: dict[str, Any], store: Path, tmp_path: Path) -> tuple[int, dict[str, Any]]:
    cfg = tmp_path / "replay.yaml"
    cfg.write_text(yaml.safe_dump(config))
    out = tmp_path / "replay.jsonl"
    parser = argparse.ArgumentParser()
    replay_command.register(parser.add_subparsers())
    ns = parser.parse_args(["replay", "--config", str(cfg), str(store), "--format", "jsonl", "-o", str(out)])
    code = ns.func(ns)
    (record,) = [json.loads(line) for line in out.read_text().splitlines()]
    return code, record


def test_replay_config_of_a_metadata_only_store_decides_as_live(tmp_path: Path) -> None:
    config = _config(gate=True)
    summary, live_decisions, denied = _live(config, tmp_path / "store")
    # The run as it went live: both early finishes denied, the todo item "done" with no work found.
    assert len(denied) == 2
    assert {(d["kind"], d["policy"]) for d in live_decisions} >= {
        ("deny", "gate:validate-before-shell-submit"),
        ("deny", "violations"),
    }
    assert "todo_done_without_work" in summary.finding_counts
    text = "".join(p.read_text() for p in (tmp_path / "store").glob("*.jsonl"))
    assert "parser" not in text and "COMPLETE_TASK" not in text and "Run the tests" not in text  # no content

    code, rec = _replay(config, tmp_path / "store", tmp_path)
    assert code == 0
    assert rec["decisions"] == live_decisions
    assert rec["letters"] == summary.letters
    assert rec["n_denied"] == 2 and rec["n_steps"] == summary.n_steps
    assert sorted(f["detector"] for f in rec["findings"]) == sorted(f.detector for f in summary.findings)
    assert "unjudged_calls" not in rec

    # ``planguard export`` of the store carries the same facts: its replay decides as live too.
    exported = tmp_path / "exported.jsonl"
    cmd = [sys.executable, "-m", "planguard", "export", str(tmp_path / "store"), "-o", str(exported)]
    subprocess.run(cmd, check=True, timeout=300)
    code, rec = _replay(config, exported, tmp_path)
    assert code == 0 and rec["decisions"] == live_decisions and rec["letters"] == summary.letters
    assert "unjudged_calls" not in rec


def test_replay_config_needing_verdicts_the_store_did_not_record_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _live(_config(gate=False), tmp_path / "store")  # recorded without the shell-submit gate
    code, rec = _replay(_config(gate=True), tmp_path / "store", tmp_path)
    # The gate's argument pattern was never recorded: each of the six bash calls (five ran, one was denied by
    # the finish check) is unjudged, and the replay says so.
    assert code == 0
    assert rec["unjudged_calls"] == 6
    err = capsys.readouterr().err
    assert "session 's': 6 call(s) were judged by argument patterns the recording kept no verdict for" in err
