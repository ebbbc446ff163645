"""``planguard hook claude-code`` driven as Claude Code drives it: a new process per hook call, real hook
payloads on standard input (shapes recorded from Claude Code 2.1), JSON answers on standard output —
through the warm hook daemon and, with it turned off, in each hook process."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("planguard_hooks")
from claude_hook_support import daemon_sandbox
from planguard_hooks import client, install
from planguard_hooks.translate import (
    MAX_RESULT_CHARS,
    call_event,
    context_answer,
    deny_answer,
    result_event,
    session_key,
)

from planguard.decisions import Decision, DecisionKind

SID = "7942e760-cceb-464e-9da1-1983bf618dd4"
BASE = {
    "session_id": SID,
    "transcript_path": f"/home/u/.claude/projects/-tmp-w/{SID}.jsonl",
    "cwd": "/tmp/w",
    "prompt_id": "1764e718-525c-4ede-a55e-74adb1c495fe",
    "permission_mode": "default",
}

CONFIG = """\
plan: plan
telemetry: {enabled: false}
store: {enabled: false}
policies:
  reminder: {every_model_calls: 2, min_gap_model_calls: 0}
  gates:
    - name: validate-before-submit
      tool: Bash
      arguments: {command: 'submit'}
      until: {phase_after: {phase: V, after: P, strict: true}}
"""


def pre(tool: str, tool_input: dict[str, Any], tid: str, **extra: Any) -> dict[str, Any]:
    return {
        **BASE,
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_use_id": tid,
        **extra,
    }


def post(tool: str, tool_input: dict[str, Any], tid: str, response: Any, **extra: Any) -> dict[str, Any]:
    return {
        **BASE,
        "hook_event_name": "PostToolUse",
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_response": response,
        "tool_use_id": tid,
        "duration_ms": 12,
        **extra,
    }


def fail(tool: str, tool_input: dict[str, Any], tid: str, error: str) -> dict[str, Any]:
    return {
        **BASE,
        "hook_event_name": "PostToolUseFailure",
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_use_id": tid,
        "error": error,
        "is_interrupt": False,
        "duration_ms": 13,
    }


def bash_ok(stdout: str = "") -> dict[str, Any]:
    return {"stdout": stdout, "stderr": "", "interrupted": False, "isImage": False, "noOutputExpected": False}


def run_hook(
    payload: Any, config: Path, state: Path, raw: str | None = None
) -> tuple[int, dict[str, Any], str]:
    """One hook call in a new process, exactly as Claude Code makes it."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "planguard",
            "hook",
            "claude-code",
            "--config",
            str(config),
            "--state-dir",
            str(state),
        ],
        input=raw if raw is not None else json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PLANGUARD_CONFIG": ""},
    )
    out = proc.stdout.strip()
    return proc.returncode, (json.loads(out) if out else {}), proc.stderr


@pytest.fixture(params=["daemon", "no-daemon"])
def env(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[dict[str, Path]]:
    config = tmp_path / "planguard.yaml"
    config.write_text(CONFIG)
    state = tmp_path / "state"
    with daemon_sandbox(state) as run_dir:
        if request.param == "no-daemon":
            os.environ[client.ENV_DAEMON] = "0"
        yield {"config": config, "state": state, "run": run_dir}


def _served(env: dict[str, Path]) -> int | None:
    """Hook calls the daemon answered; None when there is no daemon (it is off)."""
    daemons = client.daemon_status(str(env["state"]))
    if os.environ.get(client.ENV_DAEMON) == "0":
        assert daemons == [] and not env["run"].exists()
        return None
    assert len(daemons) == 1, daemons
    return int(daemons[0]["served"])


# --------------------------------------------------------------------------- translation (in-process)


def test_payload_translation_matches_the_transcript_loader_shape() -> None:
    e = call_event(pre("Read", {"file_path": "/tmp/w/calc.py"}, "toolu_01"))
    assert (e.tool, e.arguments, e.call_id) == ("Read", {"file_path": "/tmp/w/calc.py"}, "toolu_01")
    done = result_event(post("Bash", {"command": "ls"}, "toolu_02", bash_ok("a\nb")), now=100.0)
    assert (done.result, done.is_error, done.exit_code, done.end_time) == ("a\nb", False, None, 100.0)
    assert done.start_time == pytest.approx(100.0 - 0.012)
    failed = result_event(fail("Bash", {"command": "false"}, "toolu_03", "Exit code 1"))
    assert (failed.is_error, failed.exit_code, failed.failed) == (True, 1, True)
    big = result_event(
        post("Read", {"file_path": "/x"}, "t", {"type": "text", "file": {"content": "x" * 100_000}})
    )
    assert big.result is not None and len(big.result) < MAX_RESULT_CHARS + 100


def test_subagent_calls_get_their_own_session_key() -> None:
    assert session_key(BASE) == SID
    assert session_key({**BASE, "agent_id": "a2898e3", "agent_type": "Explore"}) == f"{SID}/a2898e3"
    assert session_key({}) == "unknown-session"


def test_answers_follow_the_hooks_reference() -> None:
    deny = Decision(DecisionKind.DENY, "PLANGUARD GATE (g): not yet.", "gate:g")
    remind = Decision(DecisionKind.REMIND, "PLAN REMINDER: the plan", "reminder")
    out = deny_answer(deny, [remind])
    assert out["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert out["hookSpecificOutput"]["permissionDecisionReason"].startswith("PLANGUARD GATE (g): not yet.")
    assert "PLAN REMINDER: the plan" in out["hookSpecificOutput"]["permissionDecisionReason"]
    assert "continue" not in out
    stop = deny_answer(Decision(DecisionKind.STOP, "stop now", "responses"))
    assert stop["continue"] is False and stop["stopReason"] == "stop now"
    assert context_answer("PostToolUse", [remind]) == {
        "hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "PLAN REMINDER: the plan"}
    }
    assert context_answer("PostToolUse", [Decision(DecisionKind.NOTIFY, "ops only")]) == {}


# --------------------------------------------------------------------------- settings


def test_install_is_idempotent_and_keeps_other_hooks(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    mine = {"type": "command", "command": "/usr/local/bin/lint.sh"}
    path.write_text(
        json.dumps({"model": "opus", "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [mine]}]}})
    )
    cmd = install.hook_command(tmp_path / "pg.yaml", executable="/opt/venv/bin/planguard")
    assert cmd == f"/opt/venv/bin/planguard hook claude-code --config {tmp_path / 'pg.yaml'}"
    install.install(path, cmd)
    install.install(path, cmd)
    data = json.loads(path.read_text())
    assert data["model"] == "opus"
    pre_groups = data["hooks"]["PreToolUse"]
    assert pre_groups[0] == {"matcher": "Bash", "hooks": [mine]}
    ours = [h for g in pre_groups for h in g["hooks"] if install.is_planguard_hook(h)]
    assert len(ours) == 1 and ours[0]["command"] == cmd
    assert set(data["hooks"]) == {
        "PreToolUse",
        "PostToolUse",
        "PostToolUseFailure",
        "UserPromptSubmit",
        "SessionEnd",
    }
    assert "matcher" not in data["hooks"]["SessionEnd"][0]
    assert install.uninstall(path) == 5
    assert json.loads(path.read_text()) == {
        "model": "opus",
        "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [mine]}]},
    }


def test_install_refuses_to_overwrite_a_broken_settings_file(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text('{"hooks": [}')
    with pytest.raises(ValueError, match=r"settings\.json:1: not valid JSON"):
        install.install(path, "planguard hook claude-code")
    assert path.read_text() == '{"hooks": [}'


def test_install_command_writes_the_project_settings(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "planguard",
            "install",
            "claude-code",
            "--scope",
            "project",
            "--project-dir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads((tmp_path / ".claude" / "settings.json").read_text())
    command = data["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    python, flag, script = shlex.split(command)
    assert (python, flag, script) == (
        sys.executable,
        "-S",
        str(Path(client.__file__).resolve().with_name("launch.py")),
    )
    assert install.is_planguard_hook({"type": "command", "command": command})

    # The installed command itself answers a hook call (in-process here: no daemon for a one-off).
    proc = subprocess.run(
        [*shlex.split(command), "--no-daemon", "--state-dir", str(tmp_path / "state")],
        input=json.dumps(pre("Bash", {"command": "ls"}, "toolu_01")),
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PLANGUARD_CONFIG": "", "PLANGUARD_TELEMETRY": "0", "PLANGUARD_STORE": "0"},
    )
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    assert list((tmp_path / "state").glob("*.snap"))


# --------------------------------------------------------------------------- the hook command


def test_hook_session_gate_reminders_and_show(env: dict[str, Path]) -> None:
    cfg, state = env["config"], env["state"]
    rc, out, _ = run_hook({**BASE, "hook_event_name": "UserPromptSubmit", "prompt": "fix it"}, cfg, state)
    assert (rc, out) == (0, {})  # model call 1: nothing due yet
    calls_made = 1

    calls = [
        ("Read", {"file_path": "/tmp/w/calc.py"}, bash_ok()),
        ("Bash", {"command": "cat > test_calc.py <<'EOF'\nassert 1\nEOF", "description": "t"}, bash_ok()),
        ("Bash", {"command": "python3 test_calc.py", "description": "t"}, None),
        (
            "Edit",
            {"file_path": "/tmp/w/calc.py", "old_string": "a - b", "new_string": "a + b"},
            {"filePath": "x"},
        ),
    ]
    reminders = 0
    for n, (tool, inp, response) in enumerate(calls, 1):
        tid = f"toolu_{n:02d}"
        rc, out, _ = run_hook(pre(tool, inp, tid), cfg, state)
        assert (rc, out) == (0, {})  # allowed calls get no answer: Claude Code's permissions stay in charge
        payload = fail(tool, inp, tid, "Exit code 1") if response is None else post(tool, inp, tid, response)
        rc, out, _ = run_hook(payload, cfg, state)
        calls_made += 2
        assert rc == 0
        if out:
            ctx = out["hookSpecificOutput"]
            assert ctx["hookEventName"] == payload["hook_event_name"]
            assert ctx["additionalContext"].startswith("PLAN REMINDER:")
            reminders += 1
    assert reminders >= 2

    rc, out, _ = run_hook(pre("Bash", {"command": "./submit.sh"}, "toolu_05"), cfg, state)
    assert rc == 0
    assert out["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert "PLANGUARD GATE (validate-before-submit)" in out["hookSpecificOutput"]["permissionDecisionReason"]

    for tid, tool, inp in [
        ("toolu_06", "Bash", {"command": "python3 test_calc.py"}),
        ("toolu_07", "Bash", {"command": "./submit.sh"}),
    ]:
        rc, out, _ = run_hook(pre(tool, inp, tid), cfg, state)
        assert (rc, out) == (0, {})
        run_hook(post(tool, inp, tid, bash_ok("ok")), cfg, state)
    run_hook({**BASE, "hook_event_name": "SessionEnd", "reason": "other"}, cfg, state)
    calls_made += 1 + 4 + 1
    served = _served(env)
    assert served is None or served == calls_made

    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "planguard",
            "hook",
            "claude-code",
            "--config",
            str(cfg),
            "--state-dir",
            str(state),
            "--show",
            SID,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    shown = json.loads(proc.stdout)
    assert shown["letters"] == "NRRPV"
    assert shown["n_steps"] == 6
    assert shown["decision_counts"]["deny"] == 1
    assert shown["journal_complete"] is True
    assert not (state / "hook-errors.log").exists()


def test_hook_never_fails_the_agent(env: dict[str, Path], tmp_path: Path) -> None:
    cfg, state = env["config"], env["state"]
    # What planguard could not evaluate is let through, the user told in one line (systemMessage).
    rc, out, _ = run_hook(None, cfg, state, raw="{not json")
    assert rc == 0 and set(out) == {"systemMessage"} and "let through" in out["systemMessage"]
    assert run_hook(None, cfg, state, raw="")[:2] == (0, {})
    assert run_hook({"hook_event_name": "Notification", "message": "x"}, cfg, state)[:2] == (0, {})
    bad = tmp_path / "bad.yaml"
    bad.write_text("policies: {reminder: {every_model_calls: 0}}\n")
    rc, out, _ = run_hook(pre("Bash", {"command": "ls"}, "toolu_01"), bad, state)
    # An unusable config lets the call through, logs why and tells the user.
    assert rc == 0 and set(out) == {"systemMessage"} and "config unusable" in out["systemMessage"]
    log = (state / "hook-errors.log").read_text()
    assert "every_model_calls" in log and "not JSON" in log
    served = _served(env)
    # Unusable calls are still answered (with nothing); an empty payload never leaves the hook process.
    assert served is None or served == 3
