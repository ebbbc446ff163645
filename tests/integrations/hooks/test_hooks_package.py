"""The hook service as the ``planguard-agents-hooks`` distribution: its subcommands reach the ``planguard``
command through the ``planguard.commands`` entry points, its state directory moved to
``…/planguard/hooks`` (the old one still used), and what the previous distribution
(``planguard-agents-claude-code``) wrote keeps working: an old ``.claude/settings.json`` hook command, the
``planguard_claude_code`` import path."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

pytest.importorskip("planguard_hooks")
import planguard_claude_code
from planguard_hooks import client, install

from planguard.cli import integration_commands, main

CONFIG = """\
telemetry: {enabled: false}
store: {enabled: false}
policies:
  gates:
    - name: no-submit
      tool: Bash
      arguments: {command: 'submit'}
      until: {phase_after: {phase: V, after: P, strict: true}}
      message: "planguard: no submit yet"
"""
PAYLOAD = {
    "session_id": "s-compat",
    "cwd": "/tmp/w",
    "hook_event_name": "PreToolUse",
    "tool_name": "Bash",
    "tool_input": {"command": "submit"},
    "tool_use_id": "toolu_01",
}
ENV = {**os.environ, "PLANGUARD_CONFIG": "", "PLANGUARD_TELEMETRY": "0", "PLANGUARD_STORE": "0"}


def test_the_integration_commands_come_from_entry_points() -> None:
    found = integration_commands()
    assert found["install"].value == "planguard_hooks.commands:register_install"
    assert found["hook"].value == "planguard_hooks.commands:register_hook"
    assert found["install"].dist is not None and found["install"].dist.name == "planguard-agents-hooks"


@pytest.mark.parametrize("agent", ["claude-code", "codex", "gemini", "opencode"])
def test_install_every_cli_through_the_planguard_command(
    agent: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["install", agent, "--project-dir", str(tmp_path), "--print"]) == 0
    out = capsys.readouterr().out
    assert "launch.py" in out and ("--dialect" in out) == (agent != "claude-code")


def test_an_old_settings_file_keeps_working_and_is_replaced_by_install(tmp_path: Path) -> None:
    (tmp_path / "planguard.yaml").write_text(CONFIG)
    # What `planguard install claude-code` of planguard-agents-claude-code 0.2.0 wrote.
    old_launch = Path(planguard_claude_code.__file__).with_name("launch.py")
    old_command = shlex.join(
        [sys.executable, "-S", str(old_launch), "--config", str(tmp_path / "planguard.yaml"),
         "--state-dir", str(tmp_path / "state")]
    )  # fmt: skip
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    handler = {"type": "command", "command": old_command, "timeout": 30}
    settings.write_text(json.dumps({"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [handler]}]}}))

    proc = subprocess.run(
        [*shlex.split(old_command), "--no-daemon"],
        input=json.dumps(PAYLOAD),
        capture_output=True,
        text=True,
        timeout=120,
        env=ENV,
    )
    assert proc.returncode == 0, proc.stderr
    answer = json.loads(proc.stdout)["hookSpecificOutput"]
    assert answer["permissionDecision"] == "deny"
    assert answer["permissionDecisionReason"].startswith("planguard: no submit yet")

    # Installing again replaces the old entry with the new command: one planguard handler per event.
    install.install(settings, install.hook_command(tmp_path / "planguard.yaml"))
    data = json.loads(settings.read_text())
    commands = [h["command"] for g in data["hooks"]["PreToolUse"] for h in g["hooks"]]
    assert len(commands) == 1 and "planguard_hooks/launch.py" in commands[0]


def test_the_old_import_path_still_gives_the_public_names() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        adapter = planguard_claude_code.ClaudeCodeAdapter
    import planguard_hooks

    assert adapter is planguard_hooks.ClaudeCodeAdapter
    assert any(issubclass(w.category, DeprecationWarning) for w in caught)
    from planguard_claude_code.sdk import hook_matchers

    assert hook_matchers is planguard_hooks.hook_matchers


def test_state_directory_is_hooks_and_the_old_one_is_still_used(tmp_path: Path) -> None:
    env = {"XDG_STATE_HOME": str(tmp_path)}
    assert client.default_state_dir(env) == str(tmp_path / "planguard" / "hooks")
    (tmp_path / "planguard" / "claude-code").mkdir(parents=True)
    assert client.default_state_dir(env) == str(tmp_path / "planguard" / "claude-code")
    (tmp_path / "planguard" / "hooks").mkdir()
    assert client.default_state_dir(env) == str(tmp_path / "planguard" / "hooks")


def test_a_missing_integration_names_its_distribution(tmp_path: Path) -> None:
    # planguard_hooks hidden: its entry points are still listed, but the package does not import.
    (tmp_path / "planguard_hooks").mkdir()
    (tmp_path / "planguard_hooks" / "__init__.py").write_text(
        "raise ImportError('simulated: not installed')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "planguard", "install", "codex"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**ENV, "PYTHONPATH": str(tmp_path)},
    )
    assert proc.returncode == 2
    assert "planguard-agents-hooks" in proc.stderr and 'pip install "planguard-agents[hooks]"' in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("agent", ["claude-code", "codex", "gemini", "opencode"])
def test_install_refuses_a_config_that_does_not_load(
    agent: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing.yaml"
    typo = tmp_path / "typo.yaml"
    typo.write_text("polices: {}\n")
    for config, problem in ((missing, "cannot read the file"), (typo, "unknown key 'polices'")):
        argv = ["install", agent, "--project-dir", str(tmp_path), "--config", str(config)]
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "nothing was written" in err and f"error: {config}" in err and problem in err
    assert not [p for p in tmp_path.rglob("*") if p.name not in ("typo.yaml",)]
    # The same file once fixed is installed.
    typo.write_text("policies: {}\n")
    assert main(["install", agent, "--project-dir", str(tmp_path), "--config", str(typo)]) == 0


def test_a_socket_path_too_long_moves_to_a_short_private_directory(tmp_path: Path) -> None:
    deep = tmp_path.joinpath(*["a-rather-long-folder-name"] * 6)
    env = {"XDG_RUNTIME_DIR": str(deep / "runtime"), "PATH": os.environ.get("PATH", "")}
    address = client.locate(str(deep / "state"), env)
    assert address is not None, "no daemon: every hook call would build planguard itself"
    assert address.directory == f"/tmp/planguard-{os.getuid()}"
    assert len(os.fsencode(address.sock)) <= client.MAX_SOCKET_PATH
    assert os.stat(address.directory).st_mode & 0o077 == 0
