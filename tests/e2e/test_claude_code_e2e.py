"""End to end with the real Claude Code CLI (bundled in the claude-agent-sdk wheel) against a local fake
Anthropic Messages API (``cli_fakes.FakeMessages``; the npm CLI's run is in ``test_cli_hooks_e2e``):
planguard's hooks installed with ``planguard_claude_code.settings``, a scripted model that navigates,
reproduces, patches, tries to submit too early (denied), validates and submits. The hooks run as
installed (``python -S .../launch.py``), answered by the warm hook daemon, which the first hook call
starts; the same scenario also runs with the daemon off.
"""

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

pytest.importorskip("planguard_claude_code")
from claude_hook_support import daemon_sandbox
from cli_fakes import FakeMessages, claude_code_turns
from planguard_claude_code import client, settings
from planguard_claude_code.hook import read_summary

pytestmark = pytest.mark.e2e


def _bundled_cli() -> Path | None:
    try:
        import claude_agent_sdk
    except ImportError:
        return None
    cli = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
    return cli if cli.is_file() and os.access(cli, os.X_OK) else None


CLI = _bundled_cli()


# --------------------------------------------------------------------------- the scenario

CALC = "def add(a, b):\n    return a - b\n"
SUBMIT = "#!/bin/sh\necho submitted >> submissions.log\necho submitted\n"

CONFIG = """\
plan: plan
telemetry: {enabled: false}
store: {enabled: true, path: 'STORE'}
policies:
  reminder: {every_model_calls: 3, min_gap_model_calls: 0}
  gates:
    - name: validate-before-submit
      tool: Bash
      arguments: {command: 'submit\\.sh'}
      until: {phase_after: {phase: V, after: P, strict: true}}
"""


@pytest.fixture
def workspace() -> Iterator[dict[str, Path]]:
    # Not under pytest's tmp_path: its "test_<name>" folders make every path "test-ish" for the paper's rules.
    tmp_path = Path(tempfile.mkdtemp(prefix="pgcc-"))
    work = tmp_path / "work"
    work.mkdir()
    (work / "calc.py").write_text(CALC)
    (work / "submit.sh").write_text(SUBMIT)
    (work / "submit.sh").chmod(0o755)
    home = tmp_path / "home"
    home.mkdir()
    config = tmp_path / "planguard.yaml"
    config.write_text(CONFIG.replace("STORE", str(tmp_path / "store")))
    try:
        with daemon_sandbox(tmp_path / "state") as run_dir:
            yield {
                "store": tmp_path / "store",
                "work": work,
                "home": home,
                "config": config,
                "state": tmp_path / "state",
                "settings": tmp_path / "settings.json",
                "run": run_dir,
            }
    finally:
        shutil.rmtree(tmp_path, ignore_errors=True)


def _env(home: Path, url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE", "PLANGUARD_"))}
    env.update(
        {
            "HOME": str(home),
            "ANTHROPIC_BASE_URL": url,
            "ANTHROPIC_API_KEY": "sk-ant-fake",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "PATH": f"{Path(sys.executable).parent}:{env.get('PATH', '')}",
            "XDG_RUNTIME_DIR": os.environ["XDG_RUNTIME_DIR"],  # the test's own (see daemon_sandbox)
            client.ENV_WATCH: os.environ[client.ENV_WATCH],
        }
    )
    return env


@pytest.mark.skipif(CLI is None, reason="claude-agent-sdk with its bundled Claude Code CLI is not installed")
@pytest.mark.parametrize("daemon", [True, False], ids=["daemon", "no-daemon"])
def test_claude_code_cli_gate_reminder_and_phases(workspace: dict[str, Path], daemon: bool) -> None:
    work, home = workspace["work"], workspace["home"]
    command = settings.hook_command(workspace["config"], workspace["state"], daemon=daemon)
    assert command.split()[1:3] == ["-S", str(Path(client.__file__).resolve().with_name("launch.py"))]
    settings.install(workspace["settings"], command)

    with FakeMessages(claude_code_turns(work)) as fake:
        proc = subprocess.run(
            [
                str(CLI),
                "-p",
                "Fix the bug in calc.py, test it, then run ./submit.sh.",
                "--settings",
                str(workspace["settings"]),
                "--output-format",
                "json",
                "--allowedTools",
                "Bash,Read,Edit",
                "--model",
                "claude-sonnet-4-5",
            ],
            cwd=work,
            env=_env(home, fake.url),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
        result = json.loads(proc.stdout)
        assert not fake.unknown, fake.unknown
        errors = workspace["state"] / "hook-errors.log"
        assert not errors.exists(), errors.read_text()

        # The early submit never ran; the model saw why. The later one ran once.
        assert (work / "submissions.log").read_text() == "submitted\n"
        denial = fake.tool_result(5, "toolu_05")
        assert "PLANGUARD GATE (validate-before-submit)" in denial
        assert "submitted" in fake.tool_result(7, "toolu_07")
        assert (work / "calc.py").read_text() == CALC.replace("a - b", "a + b")

        # Reminders reached later model requests, as hook context on a tool result.
        reminded = [i for i in range(len(fake.requests)) if "PLAN REMINDER:" in json.dumps(fake.requests[i])]
        assert reminded and reminded[0] >= 2, reminded
        assert len(fake.requests) == 8

    # Every hook call went through one daemon (started by the first), or none did.
    daemons = client.daemon_status(
        str(workspace["state"]), environ={"XDG_RUNTIME_DIR": os.environ["XDG_RUNTIME_DIR"]}
    )
    if daemon:
        assert len(daemons) == 1, daemons
        # UserPromptSubmit, 7 PreToolUse, 6 PostToolUse(Failure) (the denied call has none), SessionEnd
        assert daemons[0]["served"] >= 14 and daemons[0]["failed"] == 0, daemons
        assert daemons[0]["base_dir"] == str(work.resolve())
    else:
        assert daemons == [] and not workspace["run"].exists()

    summary = read_summary(result["session_id"], str(workspace["config"]), str(workspace["state"]))
    assert summary is not None
    assert summary["letters"] == "NRRPV"
    assert summary["n_steps"] == 6  # the denied call is not a step
    assert summary["n_model_calls"] == len(fake.requests)
    assert summary["decision_counts"].get("deny") == 1
    assert summary["metrics"]["plan"]["PC"] == pytest.approx(1.0)

    # One session, one store file (one end record), daemon or not; its replay gives the live letters.
    from planguard.offline.loaders.planguard_store import read_session
    from planguard.offline.replay import replay, replay_pipeline

    (stored,) = workspace["store"].glob("*.jsonl")
    session = read_session(stored)
    assert session.errors == [] and session.end is not None and len(session.blocked) == 1
    (replayed,) = list(replay([stored], replay_pipeline()))
    assert not isinstance(replayed, Exception), replayed
    assert (replayed.summary.letters, replayed.summary.n_steps) == (summary["letters"], 6)

    # Offline = live: the session's own transcript replays to the same phases and metrics.
    from planguard.guard import Guard
    from planguard.offline.loaders import Trajectory, iter_trajectories
    from planguard.session import replay_events

    transcripts = list((home / ".claude" / "projects").glob(f"*/{result['session_id']}.jsonl"))
    assert len(transcripts) == 1
    (trajectory,) = [t for t in iter_trajectories([transcripts[0]]) if isinstance(t, Trajectory)]
    guard = Guard.from_file(workspace["config"])
    offline = replay_events(trajectory.events, guard.pipeline, trajectory.id, trajectory.meta).end()
    guard.shutdown()
    assert offline.letters == summary["letters"]
    assert offline.langutory == summary["langutory"]
    assert offline.scores["plan"].as_dict() == summary["metrics"]["plan"]
    # The denied call is in the transcript as a hook error: a recorded denial offline, not a step.
    assert offline.n_steps == summary["n_steps"]
    assert offline.decision_counts.get("deny") == 1


@pytest.mark.skipif(
    CLI is None or shutil.which("bash") is None, reason="bundled Claude Code CLI not installed"
)
def test_claude_agent_sdk_hook_matchers(workspace: dict[str, Path]) -> None:
    """The same adapter, in-process, through the Claude Agent SDK's Python hooks (HookMatcher)."""
    import asyncio

    from claude_agent_sdk import ClaudeAgentOptions, ResultMessage, query
    from planguard_claude_code import hook_matchers

    from planguard.config import load_config
    from planguard.guard import Guard

    work, home = workspace["work"], workspace["home"]
    guard = Guard(load_config(workspace["config"]))
    with FakeMessages(claude_code_turns(work)) as fake:
        options = ClaudeAgentOptions(
            hooks=hook_matchers(guard),  # type: ignore[arg-type]
            allowed_tools=["Bash", "Read", "Edit"],
            model="claude-sonnet-4-5",
            cwd=str(work),
            env=_env(home, fake.url),
            cli_path=str(CLI),
        )

        async def run() -> str:
            session_id = ""
            async for message in query(
                prompt="Fix the bug in calc.py, test it, then run ./submit.sh.", options=options
            ):
                if isinstance(message, ResultMessage):
                    session_id = message.session_id
            return session_id

        session_id = asyncio.run(run())
        assert session_id
        assert (work / "submissions.log").read_text() == "submitted\n"
        assert "PLANGUARD GATE (validate-before-submit)" in fake.tool_result(5, "toolu_05")
    summary = guard.end(session_id)
    assert summary is not None
    assert summary.letters == "NRRPV"
    assert summary.decision_counts.get("deny") == 1
    guard.shutdown()
