"""A hook call planguard cannot answer at all: planguard itself does not import (a broken or half-removed
installation), so the stdlib hook client is all that runs. Fail-open, the call goes on and the user is
told in one line (``systemMessage``, which every CLI's hook contract shows); with ``--fail-closed`` (what
``planguard install`` writes for a config with a fail-closed gate) or ``PLANGUARD_FAIL_CLOSED_GATES=1``, a
call about to run is blocked by the CLIs' blocking contract: exit status 2, the reason on standard error.
The real CLIs honour that in ``tests/e2e/test_cli_hooks_fail_closed_e2e.py``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("planguard_hooks")
from planguard_hooks import client, install
from planguard_hooks.dialects import DIALECTS

#: Each CLI's before-tool and after-tool event names.
EVENTS = {"claude-code": ("PreToolUse", "PostToolUse"), "codex": ("PreToolUse", "PostToolUse")}
EVENTS |= {"gemini": ("BeforeTool", "AfterTool"), "opencode": ("PreToolUse", "PostToolUse")}


@pytest.fixture
def broken(tmp_path: Path) -> dict[str, str]:
    """An environment in which ``import planguard`` fails (a package of that name that raises first on
    the path), without the daemon."""
    shadow = tmp_path / "shadow" / "planguard"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('planguard is half-uninstalled')\n")
    keep = {k: v for k, v in os.environ.items() if not k.startswith("PLANGUARD_")}
    return {
        **keep,
        "PYTHONPATH": str(tmp_path / "shadow"),
        client.ENV_DAEMON: "0",
        "PLANGUARD_STATE_DIR": str(tmp_path / "state"),
    }


def _hook(env: dict[str, str], dialect: str, payload: str, *flags: str) -> subprocess.CompletedProcess[str]:
    """The hook command ``planguard install`` writes for ``dialect`` (``python -S launch.py``)."""
    command = install.hook_command(dialect=dialect, fail_closed="--fail-closed" in flags)
    return subprocess.run(
        command, shell=True, input=payload, env=env, capture_output=True, text=True, timeout=60, check=False
    )


def _payload(event: str, tool: str = "Bash") -> str:
    body = {"session_id": "s1", "cwd": "/tmp/w", "hook_event_name": event, "tool_name": tool}
    return json.dumps({**body, "tool_input": {"command": "./submit.sh"}, "tool_use_id": "t1"})


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_fail_open_lets_the_call_through_and_tells_the_user(broken: dict[str, str], dialect: str) -> None:
    pre, _ = EVENTS[dialect]
    proc = _hook(broken, dialect, _payload(pre))
    assert proc.returncode == 0, proc.stderr
    answer = json.loads(proc.stdout)
    assert set(answer) == {"systemMessage"}
    assert (
        "could not evaluate this call (cannot load planguard (planguard is half-uninstalled))"
        in (answer["systemMessage"])
    )
    assert "let through" in answer["systemMessage"]


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_fail_closed_blocks_a_tool_start_by_exit_status_2(broken: dict[str, str], dialect: str) -> None:
    pre, post = EVENTS[dialect]
    proc = _hook(broken, dialect, _payload(pre), "--fail-closed")
    assert proc.returncode == client.BLOCK_STATUS == 2
    assert proc.stderr.startswith("PLANGUARD: this call is blocked: planguard could not evaluate it")
    assert proc.stdout == ""
    # A payload cut before its event name may be a tool start: blocked as well.
    cut = _hook(broken, dialect, _payload(pre)[:20], "--fail-closed")
    assert cut.returncode == 2
    # Not a tool about to run: let through, the user told.
    after = _hook(broken, dialect, _payload(post), "--fail-closed")
    assert after.returncode == 0 and "let through" in json.loads(after.stdout)["systemMessage"]


def test_the_environment_asks_for_fail_closed_too(broken: dict[str, str]) -> None:
    proc = _hook({**broken, "PLANGUARD_FAIL_CLOSED_GATES": "1"}, "claude-code", _payload("PreToolUse"))
    assert proc.returncode == 2 and "blocked" in proc.stderr


def test_the_client_knows_each_dialects_tool_start_event() -> None:
    """The client imports no planguard, so it keeps the event names itself: they are the dialects'."""
    for name, speaks in DIALECTS.items():
        assert json.loads(speaks.gate_mark()) == client.TOOL_START_EVENT.get(
            name, client.DEFAULT_TOOL_START_EVENT
        )
        others = {e for e in speaks.events if e != json.loads(speaks.gate_mark())}
        assert others == set(client.OTHER_EVENTS.get(name, client.DEFAULT_OTHER_EVENTS)), name


@pytest.mark.parametrize("agent", ["claude-code", "codex", "gemini", "opencode"])
def test_install_writes_fail_closed_for_a_config_with_a_fail_closed_gate(tmp_path: Path, agent: str) -> None:
    gate = "{name: g, tool: Bash, arguments: {command: x}, until: {phases_seen: [V]}, fail_closed: FC}"
    config = tmp_path / "planguard.yaml"
    for fail_closed in (True, False):
        config.write_text(
            f"plan: plan\npolicies:\n  gates:\n    - {gate.replace('FC', str(fail_closed).lower())}\n"
        )
        argv = [sys.executable, "-m", "planguard", "install", agent, "--project-dir", str(tmp_path)]
        argv += ["--config", str(config), "--print"]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
        assert proc.returncode == 0, proc.stderr
        # The hook command (in OpenCode's plugin: its COMMAND line) carries the flag.
        commands = [line for line in proc.stdout.splitlines() if "launch.py" in line]
        assert commands and all(("--fail-closed" in c) == fail_closed for c in commands), commands
