"""The real CLIs (npm, pinned; ``.ci/services/clis.sh``) when planguard cannot answer a hook call at all:
its installation is broken (``import planguard`` fails in the hook process), so only the stdlib hook
client runs. A config with a fail-closed gate (``planguard install`` writes ``--fail-closed``) blocks the
tool call through the CLI's own blocking contract (exit status 2, the reason on standard error, which the
model reads as the tool's error); a fail-open config lets it run. Scripted models on 127.0.0.1
(``cli_fakes``) ask for one shell call, ``./submit.sh``, then answer."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("planguard_hooks")
from cli_fakes import FakeGemini, FakeMessages, cli_binary, npm_missing

pytestmark = pytest.mark.e2e

SUBMIT = "#!/bin/sh\necho submitted >> submissions.log\necho submitted\n"
BLOCKED = "PLANGUARD: this call is blocked: planguard could not evaluate it"
ANSWER = [{"text": "Done."}]


def _config(shell_tool: str, fail_closed: bool) -> str:
    return f"""\
plan: plan
telemetry: {{enabled: false}}
store: {{enabled: false}}
policies:
  reminder: {{enabled: false}}
  gates:
    - name: validate-before-submit
      tool: {shell_tool}
      arguments: {{command: 'submit\\.sh'}}
      until: {{phase_after: {{phase: V, after: P}}}}
      fail_closed: {str(fail_closed).lower()}
"""


@pytest.fixture
def box() -> Iterator[dict[str, Path]]:
    tmp = Path(tempfile.mkdtemp(prefix="pgfc-"))
    work = tmp / "work"
    work.mkdir()
    (work / "submit.sh").write_text(SUBMIT)
    (work / "submit.sh").chmod(0o755)
    subprocess.run(["git", "init", "-q"], cwd=work, check=True)
    (tmp / "home").mkdir()
    shadow = tmp / "shadow" / "planguard"  # what the hook process imports as planguard: a broken install
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('planguard is half-uninstalled')\n")
    try:
        yield {"tmp": tmp, "work": work, "home": tmp / "home", "shadow": tmp / "shadow"}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _binary(name: str) -> Path:
    if npm_missing():
        pytest.skip("npm/node are not installed: the coding-CLI e2e tests need them")
    binary = cli_binary(name)
    if binary is None:
        pytest.skip(f"{name} is not installed: run .ci/services/clis.sh start")
    return binary


def _install(agent: str, box: dict[str, Path], shell_tool: str, fail_closed: bool) -> None:
    config = box["tmp"] / "planguard.yaml"
    config.write_text(_config(shell_tool, fail_closed))
    argv = [sys.executable, "-m", "planguard", "install", agent, "--project-dir", str(box["work"])]
    argv += ["--config", str(config), "--state-dir", str(box["tmp"] / "state")]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr


def _env(box: dict[str, Path]) -> dict[str, str]:
    """The CLI's environment, in which the hook process cannot import planguard (no daemon either)."""
    env = {k: os.environ[k] for k in ("PATH", "LANG", "LC_ALL", "TMPDIR") if k in os.environ}
    home = box["home"]
    env.update(
        {
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_STATE_HOME": str(home / ".local" / "state"),
            "XDG_CACHE_HOME": str(home / ".cache"),
            "NO_PROXY": "127.0.0.1,localhost",
            "TERM": "dumb",
            "PYTHONPATH": str(box["shadow"]),
            "PLANGUARD_HOOK_DAEMON": "0",
        }
    )
    return env


def _run(argv: list[str], box: dict[str, Path], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        argv, cwd=box["work"], env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
    return proc


def _check(box: dict[str, Path], fail_closed: bool, result: str) -> None:
    """Fail-closed: the submit never ran and the model read why. Fail-open: it ran."""
    log = box["work"] / "submissions.log"
    if fail_closed:
        assert not log.exists()
        assert BLOCKED in result, result
    else:
        assert log.read_text() == "submitted\n"
        assert BLOCKED not in result


@pytest.mark.parametrize("fail_closed", [True, False], ids=["fail-closed", "fail-open"])
def test_claude_code_blocks_by_exit_status_2_when_planguard_cannot_answer(
    box: dict[str, Path], fail_closed: bool
) -> None:
    claude = _binary("claude")
    _install("claude-code", box, "Bash", fail_closed)
    submit = [{"name": "Bash", "args": {"command": "./submit.sh", "description": "submit"}, "id": "toolu_01"}]
    with FakeMessages([submit, ANSWER]) as fake:
        env = _env(box)
        env.update(
            {
                "CLAUDE_CONFIG_DIR": str(box["home"] / ".claude"),
                "ANTHROPIC_BASE_URL": fake.url,
                "ANTHROPIC_API_KEY": "sk-ant-fake",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                "DISABLE_TELEMETRY": "1",
                "DISABLE_AUTOUPDATER": "1",
                "DISABLE_ERROR_REPORTING": "1",
            }
        )
        argv = [str(claude), "-p", "Submit.", "--output-format", "stream-json", "--verbose"]
        _run([*argv, "--allowedTools", "Bash", "--model", "claude-sonnet-4-5"], box, env)
        assert len(fake.requests) == 2
        _check(box, fail_closed, fake.tool_result(1, "toolu_01"))


@pytest.mark.parametrize("fail_closed", [True, False], ids=["fail-closed", "fail-open"])
def test_gemini_cli_blocks_by_exit_status_2_when_planguard_cannot_answer(
    box: dict[str, Path], fail_closed: bool
) -> None:
    gemini = _binary("gemini")
    _install("gemini", box, "run_shell_command", fail_closed)
    (box["home"] / ".gemini").mkdir()
    (box["home"] / ".gemini" / "settings.json").write_text(
        json.dumps(
            {
                "privacy": {"usageStatisticsEnabled": False},
                "telemetry": {"enabled": False},
                "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
                "security": {"auth": {"selectedType": "gemini-api-key"}},
            }
        )
    )
    submit = [{"name": "run_shell_command", "args": {"command": "./submit.sh"}}]
    with FakeGemini([submit, ANSWER]) as fake:
        env = _env(box)
        env.update(
            {
                "GEMINI_API_KEY": "fake-key",
                "GOOGLE_GEMINI_BASE_URL": fake.url,
                "GEMINI_CLI_TRUST_WORKSPACE": "true",
            }
        )
        _run(
            [str(gemini), "-p", "Submit.", "--yolo", "-m", "gemini-2.5-pro", "--output-format", "json"],
            box,
            env,
        )
        assert len(fake.requests) == 2
        _check(box, fail_closed, json.dumps(fake.requests[1]["contents"][-1]))
