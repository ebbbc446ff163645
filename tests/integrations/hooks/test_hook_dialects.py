"""The hook service's dialects (Codex CLI, Gemini CLI, OpenCode beside Claude Code) without the CLIs:
payloads as each CLI sends them, answered in-process by the same runner, answers in each CLI's idiom;
and ``planguard install`` for each CLI. The real CLIs run in ``test_cli_hooks_e2e.py``."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("planguard_hooks")
from planguard_hooks import install, opencode, service
from planguard_hooks.dialects import CODEX, GEMINI, dialect

CONFIG = """\
plan: plan
telemetry: {enabled: false}
store: {enabled: false}
policies:
  reminder: {every_model_calls: 1, min_gap_model_calls: 0}
  gates:
    - name: no-submit
      tool: run_shell_command
      arguments: {command: 'submit\\.sh'}
      until: {phase_after: {phase: V, after: P, strict: true}}
    - name: no-submit-codex
      tool: Bash
      arguments: {command: 'submit\\.sh'}
      until: {phase_after: {phase: V, after: P, strict: true}}
"""


@pytest.fixture
def setup(tmp_path: Path) -> dict[str, Path]:
    config = tmp_path / "planguard.yaml"
    config.write_text(CONFIG)
    return {"config": config, "state": tmp_path / "state"}


def _ask(setup: dict[str, Path], payload: Any, speaks: str) -> dict[str, Any]:
    out = io.StringIO()
    text = payload if isinstance(payload, str) else json.dumps(payload)
    service.main(
        str(setup["config"]),
        str(setup["state"]),
        stdin=io.StringIO(text),
        stdout=out,
        dialect=dialect(speaks),
    )
    return json.loads(out.getvalue()) if out.getvalue().strip() else {}


def _gemini(event: str, **fields: Any) -> dict[str, Any]:
    return {
        "session_id": "g1",
        "cwd": "/w",
        "hook_event_name": event,
        "timestamp": "2026-12-01T00:00:00Z",
        **fields,
    }


def test_gemini_denial_is_decision_deny_with_a_reason_and_reminders_are_additional_context(
    setup: dict[str, Path],
) -> None:
    prompt = _ask(setup, _gemini("BeforeAgent", prompt="fix it"), "gemini")
    assert prompt["hookSpecificOutput"]["hookEventName"] == "BeforeAgent"
    assert "PLAN REMINDER" in prompt["hookSpecificOutput"]["additionalContext"]
    read = {"tool_name": "read_file", "tool_input": {"file_path": "/w/calc.py"}}
    assert _ask(setup, _gemini("BeforeTool", **read), "gemini") == {}
    after = _ask(
        setup,
        _gemini("AfterTool", **read, tool_response={"llmContent": "x = 1", "returnDisplay": ""}),
        "gemini",
    )
    assert set(after) == {"hookSpecificOutput"}  # Gemini's own keys only, no permissionDecision
    assert after["hookSpecificOutput"]["hookEventName"] == "AfterTool"
    submit = {"tool_name": "run_shell_command", "tool_input": {"command": "./submit.sh"}}
    denied = _ask(setup, _gemini("BeforeTool", **submit), "gemini")
    assert denied["decision"] == "deny"
    assert denied["reason"].startswith("PLANGUARD GATE (no-submit)")
    assert "hookSpecificOutput" not in denied or "permissionDecision" not in denied["hookSpecificOutput"]
    summary = service.read_summary("g1", str(setup["config"]), str(setup["state"]))
    assert summary is not None and summary["n_steps"] == 1 and summary["decision_counts"]["deny"] == 1
    assert _ask(setup, _gemini("SessionEnd", reason="exit"), "gemini") == {}
    # Events planguard does not listen to are answered with nothing.
    assert _ask(setup, _gemini("AfterModel", llm_response={}), "gemini") == {}


def test_gemini_reminder_due_after_a_tool_error_waits_for_the_next_request(setup: dict[str, Path]) -> None:
    """Gemini CLI gives the model only a failed tool's error message (its AfterTool context is dropped): a
    reminder due then is not counted as sent into nothing, it goes with the next request's context."""
    read = {"tool_name": "read_file", "tool_input": {"file_path": "/w/missing.py"}}
    _ask(setup, _gemini("BeforeTool", **read), "gemini")
    error = {"llmContent": "", "returnDisplay": "", "error": {"message": "File not found", "type": "x"}}
    assert _ask(setup, _gemini("AfterTool", **read, tool_response=error), "gemini") == {}
    summary = service.read_summary("g1", str(setup["config"]), str(setup["state"]))
    assert summary is not None and summary["n_model_calls"] == 1  # the request after the error still counts
    prompt = _ask(setup, _gemini("BeforeAgent", prompt="go on"), "gemini")
    text = prompt["hookSpecificOutput"]["additionalContext"]
    assert text.count("PLAN REMINDER") == 2, text  # the held one, and the one due now


def test_gemini_shell_exit_code_and_tool_errors_become_failed_calls() -> None:
    failed = GEMINI.common(
        _gemini(
            "AfterTool",
            tool_name="run_shell_command",
            tool_input={"command": "pytest"},
            tool_response={"llmContent": "Output: boom\nExit Code: 2\n", "returnDisplay": ""},
        )
    )
    assert failed is not None
    assert failed["hook_event_name"] == "PostToolUseFailure" and failed["error"].startswith("Exit code 2")
    errored = GEMINI.common(
        _gemini(
            "AfterTool",
            tool_name="read_file",
            tool_input={"file_path": "/nope"},
            tool_response={
                "llmContent": "",
                "error": {"message": "File not found", "type": "FILE_NOT_FOUND"},
            },
        )
    )
    assert errored is not None and errored["error"] == "File not found"
    ok = GEMINI.common(
        _gemini(
            "AfterTool",
            tool_name="run_shell_command",
            tool_input={"command": "true"},
            tool_response={"llmContent": [{"text": "Output: fine"}, {"text": "Exit Code: 0"}]},
        )
    )
    assert ok is not None and ok["hook_event_name"] == "PostToolUse"
    assert ok["tool_response"] == "Output: fine\nExit Code: 0"


def test_codex_answers_keep_to_what_codex_accepts(setup: dict[str, Path]) -> None:
    stop = {
        "hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "x": 1},
        "continue": False,
        "stopReason": "stop",
    }
    answer = CODEX.answer(stop, {"hook_event_name": "PreToolUse"})
    assert "continue" not in answer and "stopReason" not in answer  # Codex rejects them on PreToolUse
    assert answer["hookSpecificOutput"]["permissionDecision"] == "deny"
    base = {"session_id": "c1", "turn_id": "t1", "cwd": "/w", "model": "m", "permission_mode": "default"}
    pre = {**base, "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": "call_1"}
    denied = _ask(setup, {**pre, "tool_input": {"command": "./submit.sh"}}, "codex")
    assert denied["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert "PLANGUARD GATE (no-submit-codex)" in denied["hookSpecificOutput"]["permissionDecisionReason"]
    assert _ask(setup, {**base, "hook_event_name": "Stop", "stop_hook_active": False}, "codex") == {}


def test_unreadable_payload_fails_open_in_every_dialect(setup: dict[str, Path]) -> None:
    for name in ("claude-code", "codex", "gemini", "opencode"):
        # No decision; one line for the user, in the answer field each CLI shows (systemMessage).
        answer = _ask(setup, "{not json", name)
        assert set(answer) == {"systemMessage"}, answer
        assert answer["systemMessage"].startswith("planguard could not evaluate this call (standard input")
    assert (setup["state"] / "hook-errors.log").read_text().count("not JSON") == 4
    with pytest.raises(ValueError, match="unknown hook dialect 'cursor'; expected one of claude-code"):
        dialect("cursor")


def test_hook_client_speaks_a_dialect_from_the_command_line(setup: dict[str, Path]) -> None:
    command = install.hook_command(setup["config"], setup["state"], daemon=False, dialect="gemini")
    assert "--dialect gemini" in command and "--no-daemon" in command
    payload = _gemini("BeforeTool", tool_name="run_shell_command", tool_input={"command": "./submit.sh"})
    proc = subprocess.run(command, shell=True, input=json.dumps(payload), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["decision"] == "deny"


def test_install_writes_each_clis_own_settings(tmp_path: Path) -> None:
    def install(agent: str, *extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "planguard", "install", agent, "--project-dir", str(tmp_path), *extra],
            capture_output=True,
            text=True,
        )

    assert install("gemini").returncode == 0
    gemini = json.loads((tmp_path / ".gemini" / "settings.json").read_text())["hooks"]
    assert set(gemini) == {"BeforeTool", "AfterTool", "BeforeAgent", "SessionEnd"}
    assert gemini["BeforeTool"][0]["matcher"] == ".*"  # a regular expression in Gemini CLI
    # The hook's own bound (daemon answer 10 s + session lock 20 s + building planguard 10 s), in ms.
    assert gemini["BeforeTool"][0]["hooks"][0]["timeout"] == 40_000
    assert "--dialect gemini" in gemini["AfterTool"][0]["hooks"][0]["command"]
    assert install("codex").returncode == 0
    codex = json.loads((tmp_path / ".codex" / "hooks.json").read_text())["hooks"]
    assert set(codex) == {"PreToolUse", "PostToolUse", "UserPromptSubmit", "SessionEnd"}
    assert codex["PreToolUse"][0]["hooks"][0]["timeout"] == 40
    short = install("codex", "--timeout", "30")
    assert short.returncode == 2 and "shorter than the hook's own bound (40 s)" in short.stderr
    assert install("codex").returncode == 0  # again: refreshed, not doubled
    assert len(json.loads((tmp_path / ".codex" / "hooks.json").read_text())["hooks"]["PreToolUse"]) == 1
    bad = install("gemini", "--scope", "local")
    assert bad.returncode == 2 and "gemini has no local settings scope" in bad.stderr

    assert install("opencode").returncode == 0
    plugin = tmp_path / ".opencode" / "plugin" / "planguard.js"
    text = plugin.read_text()
    assert text.startswith(opencode.MARK) and "/*PLANGUARD_COMMAND*/" not in text
    assert '"--dialect", "opencode"' in text
    assert install("opencode", "--uninstall").returncode == 0 and not plugin.exists()
    plugin.write_text("// someone else's plugin\n")
    assert "not planguard's plugin" in install("opencode").stderr
    assert install("opencode", "--uninstall").returncode == 0 and plugin.exists()


def test_opencode_database_loads_like_the_json_storage_and_names_bad_rows(tmp_path: Path) -> None:
    import sqlite3

    from planguard.offline.loaders import LoadError, Trajectory, iter_trajectories

    path = tmp_path / "opencode.db"
    db = sqlite3.connect(path)
    db.executescript(
        "CREATE TABLE session (id TEXT, directory TEXT, title TEXT, version TEXT, parent_id TEXT);"
        "CREATE TABLE message (id TEXT, session_id TEXT, data TEXT);"
        "CREATE TABLE part (id TEXT, message_id TEXT, session_id TEXT, data TEXT);"
    )
    db.execute("INSERT INTO session VALUES ('ses_1', '/w', 't', '1.18.33', NULL)")
    db.execute("INSERT INTO message VALUES ('msg_1', 'ses_1', ?)", (json.dumps({"role": "assistant"}),))
    tool = {
        "type": "tool",
        "tool": "bash",
        "callID": "call_1",
        "state": {"status": "completed", "input": {"command": "ls"}, "output": "a.py", "time": {"start": 1}},
    }
    db.execute("INSERT INTO part VALUES ('prt_1', 'msg_1', 'ses_1', ?)", (json.dumps(tool),))
    db.execute("INSERT INTO part VALUES ('prt_2', 'msg_1', 'ses_1', '{broken')")
    db.commit()
    db.close()
    loaded = list(iter_trajectories([path]))
    (run,) = [x for x in loaded if isinstance(x, Trajectory)]
    assert run.id == "ses_1" and [e.tool for e in run.events] == ["bash"] and run.events[0].result == "a.py"
    (error,) = [x for x in loaded if isinstance(x, LoadError)]
    assert "part prt_2" in str(error) and "not JSON" in str(error)


def test_fail_closed_gates_deny_in_each_clis_own_form(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = {"config": tmp_path / "broken.yaml", "state": tmp_path / "state"}
    broken["config"].write_text("policies: [unclosed\n")
    monkeypatch.setenv("PLANGUARD_FAIL_CLOSED_GATES", "1")
    gemini = _ask(broken, _gemini("BeforeTool", tool_name="read_file", tool_input={}), "gemini")
    assert gemini["decision"] == "deny" and "fail-closed" in gemini["reason"]
    codex = _ask(broken, {"session_id": "c", "hook_event_name": "PreToolUse", "tool_name": "Bash"}, "codex")
    assert codex["hookSpecificOutput"]["permissionDecision"] == "deny"
    # A payload too broken to read, but of the CLI's before-tool event: still denied.
    assert _ask(broken, '{"hook_event_name": "BeforeTool", ', "gemini")["decision"] == "deny"
    # Not a tool call: let through.
    after = _ask(broken, _gemini("AfterTool", tool_name="read_file", tool_input={}), "gemini")
    assert set(after) == {"systemMessage"} and "let through (fail-open)" in after["systemMessage"]
