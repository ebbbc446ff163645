"""The Claude Code hook when planguard cannot evaluate a call: a fail-closed gate stays closed (the call is
denied in the hook JSON idiom), everything else is let through, the hook exits 0, and the error is reported
somewhere that works. Driven as Claude Code drives it: a new ``planguard hook claude-code`` process per
call, through the warm daemon and without it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("planguard_hooks")
from claude_hook_support import daemon_sandbox, pre_tool_use
from planguard_hooks import client

SID = "0b9e6a52-8a51-4b8e-9d1c-5f7d3c2a1e00"
GATED = """\
plan: plan
telemetry: {enabled: false}
store: {enabled: false}
fail_closed_gates: FAIL_CLOSED
policies:
  reminder: {enabled: false}
  gates:
    - name: no-prod-deploy
      tool: Bash
      arguments: {command: 'deploy --prod'}
      until: {phases_seen: [V]}
      max_denials: 1
"""
DEPLOY = {"command": "./deploy --prod"}


def hook(
    config: Path, state: Path, payload: Any = None, raw: str | None = None
) -> tuple[dict[str, Any], str]:
    command = ["hook", "claude-code", "--config", str(config), "--state-dir", str(state)]
    proc = subprocess.run(
        [sys.executable, "-m", "planguard", *command],
        input=raw if raw is not None else json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PLANGUARD_CONFIG": ""},
    )
    assert proc.returncode == 0, proc.stderr  # Claude Code reads exit 2 as "block", 1 as a broken hook
    assert "Traceback" not in proc.stderr
    out = proc.stdout.strip()
    return (json.loads(out) if out else {}), proc.stderr


def denied(answer: dict[str, Any]) -> bool:
    return answer.get("hookSpecificOutput", {}).get("permissionDecision") == "deny"


def let_through_and_told(answer: dict[str, Any]) -> bool:
    """Fail-open: no decision, and the one line the CLI shows the user."""
    return set(answer) == {"systemMessage"} and "let through (fail-open)" in answer["systemMessage"]


@pytest.fixture(params=["daemon", "no-daemon"])
def box(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[dict[str, Path]]:
    for closed in ("true", "false"):
        (tmp_path / f"{closed}.yaml").write_text(GATED.replace("FAIL_CLOSED", closed))
    state = tmp_path / "state"
    with daemon_sandbox(state) as run_dir:
        if request.param == "no-daemon":
            os.environ[client.ENV_DAEMON] = "0"
        yield {
            "closed": tmp_path / "true.yaml",
            "open": tmp_path / "false.yaml",
            "state": state,
            "run": run_dir,
        }


def test_unusable_state_dir_keeps_a_fail_closed_gate_closed(box: dict[str, Path]) -> None:
    state = box["state"]
    state.mkdir(mode=0o700)
    state.chmod(0o777)  # planguard refuses to read snapshots from a directory others can write
    n = 0

    def pre(command: str) -> dict[str, Any]:
        nonlocal n
        n += 1
        return pre_tool_use(f"toolu_{n:02d}", "Bash", {"command": command}, SID)

    # Twice: max_denials would let the second one through if the gate's own state were consulted.
    for _ in range(2):
        answer, stderr = hook(box["closed"], state, pre(DEPLOY["command"]))
        assert denied(answer), answer
        assert "no-prod-deploy" in answer["hookSpecificOutput"]["permissionDecisionReason"]
        assert "not writable by others" in answer["systemMessage"]  # the error log is what failed
    # A call no gate covers is let through (fail open), the error still shown.
    answer, stderr = hook(box["closed"], state, pre("ls"))
    assert not denied(answer) and "not writable by others" in answer["systemMessage"]
    if os.environ.get(client.ENV_DAEMON) == "0":
        assert "not writable by others" in stderr
    # Without fail-closed gates the gated call is let through too, and reported.
    answer, _ = hook(box["open"], state, pre(DEPLOY["command"]))
    assert not denied(answer) and "not writable by others" in answer["systemMessage"]
    assert not (state / "hook-errors.log").exists()


def test_deeply_nested_stdin_exits_0_and_keeps_fail_closed(box: dict[str, Path]) -> None:
    deep_input = pre_tool_use("toolu_01", "Bash", DEPLOY, SID)
    raw = json.dumps(deep_input)[:-1] + ', "x": ' + "[" * 100_000 + "]" * 100_000 + "}"
    t0 = time.perf_counter()
    answer, _ = hook(box["closed"], box["state"], raw=raw)
    assert denied(answer), answer  # cannot be read, may be a gated PreToolUse: the closed gate denies
    answer, _ = hook(box["open"], box["state"], raw=raw)
    assert let_through_and_told(answer), answer
    assert time.perf_counter() - t0 < 30
    log = (box["state"] / "hook-errors.log").read_text()
    assert log.count("nested deeper than") == 2


def test_invalid_utf8_stdin_is_refused_naming_the_byte_and_keeps_fail_closed(box: dict[str, Path]) -> None:
    """Bytes that are not UTF-8 are refused, not repaired (``errors="replace"`` would hand the gate a
    different command than the one that runs): one line naming the byte and its offset, exit 0, no
    decision — except that a fail-closed gate denies a payload that may be a PreToolUse call."""
    good = json.dumps(pre_tool_use("toolu_01", "Bash", DEPLOY, SID)).encode()
    at = good.index(b"deploy")
    raw = good[:at] + b"\xff" + good[at:]  # "./\xffdeploy --prod": replaced, it would still match the gate

    def run(config: Path) -> tuple[dict[str, Any], str]:
        command = ["hook", "claude-code", "--config", str(config), "--state-dir", str(box["state"])]
        t0 = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "planguard", *command],
            input=raw,
            capture_output=True,
            timeout=60,
            env={**os.environ, "PLANGUARD_CONFIG": ""},
        )
        assert time.perf_counter() - t0 < 30
        assert proc.returncode == 0 and b"Traceback" not in proc.stderr, proc.stderr
        out = proc.stdout.decode().strip()
        return (json.loads(out) if out else {}), proc.stderr.decode()

    answer, _ = run(box["closed"])
    assert denied(answer), answer  # cannot be read, may be a gated PreToolUse: the closed gate denies
    answer, _ = run(box["open"])
    assert let_through_and_told(answer), answer  # fail open: no decision, the user told
    lines = (box["state"] / "hook-errors.log").read_text().splitlines()
    assert len(lines) == 2, lines  # one line per call, no traceback
    for line in lines:
        assert f"not valid UTF-8 (byte 0xff at offset {at})" in line, line


def test_config_alias_bomb_is_refused_fast_and_reported(box: dict[str, Path], tmp_path: Path) -> None:
    from hostile_config import alias_bomb

    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(alias_bomb())
    answer, _ = hook(bomb, box["state"], pre_tool_use("toolu_01", "Bash", DEPLOY, SID))
    # Which gates exist is unknown: fail open (the user told), unless asked from the environment.
    assert let_through_and_told(answer), answer
    (line,) = (box["state"] / "hook-errors.log").read_text().splitlines()  # one line, no traceback
    assert f"config unusable: {bomb}:1: YAML aliases are not allowed" in line


def test_a_daemon_killed_by_pid_leaves_the_gate_closed(box: dict[str, Path]) -> None:
    if os.environ.get(client.ENV_DAEMON) == "0":
        pytest.skip("needs the daemon")
    import signal

    answer, _ = hook(box["closed"], box["state"], pre_tool_use("toolu_01", "Bash", {"command": "ls"}, SID))
    assert answer == {}
    (daemon,) = client.daemon_status(str(box["state"]))
    os.kill(daemon["pid"], signal.SIGKILL)
    answer, _ = hook(box["closed"], box["state"], pre_tool_use("toolu_02", "Bash", DEPLOY, SID))
    assert denied(answer) and "no-prod-deploy" in answer["hookSpecificOutput"]["permissionDecisionReason"]
    (again,) = client.daemon_status(str(box["state"]))
    assert again["pid"] != daemon["pid"]  # a fresh daemon answered, from the session's files


def test_an_unusable_config_denies_when_fail_closed_is_asked_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Which gates a config that cannot be loaded would set up is unknown; PLANGUARD_FAIL_CLOSED_GATES=1
    then denies every PreToolUse call rather than guessing."""
    from hostile_config import alias_bomb
    from planguard_hooks.service import HookRunner, answer_text
    from planguard_hooks.state import SessionStore

    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(alias_bomb())
    store = SessionStore(tmp_path / "state")
    payload = json.dumps(pre_tool_use("toolu_01", "Bash", {"command": "ls"}, SID))
    monkeypatch.delenv("PLANGUARD_FAIL_CLOSED_GATES", raising=False)
    assert let_through_and_told(answer_text(payload, store, lambda: HookRunner(str(bomb), store)))
    monkeypatch.setenv("PLANGUARD_FAIL_CLOSED_GATES", "1")
    answer = answer_text(payload, store, lambda: HookRunner(str(bomb), store))
    assert (
        denied(answer) and "could not be loaded" in answer["hookSpecificOutput"]["permissionDecisionReason"]
    )
    assert (tmp_path / "state" / "hook-errors.log").read_text().count("YAML aliases are not allowed") == 2
