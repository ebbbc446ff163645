"""End to end with the real coding CLIs from npm (Gemini CLI, Codex CLI, OpenCode, Claude Code) against
scripted fake model servers on 127.0.0.1 (``cli_fakes``), in throw-away git repositories: planguard's
hooks installed with ``planguard install <cli>``, answered by the one hook service (stdlib client, warm
daemon) in each CLI's dialect. The scripted model navigates, reproduces, patches, tries to submit too
early (denied, with a reason the model reads in its next request), validates and submits; reminders
reach later requests; and replaying the CLI's own session file (with its working directory, as
``planguard replay`` does) gives the live steps and denials, under the live rules.

The CLIs are installed by ``.ci/services/clis.sh`` (pinned versions, ``~/.cache/planguard-clis``, or
``$PLANGUARD_CLI_PREFIX``), by the test itself when missing; a test skips only without npm.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("planguard_hooks")
from claude_hook_support import daemon_sandbox
from cli_fakes import (
    CALC_TEST,
    FakeChatCompletions,
    FakeGemini,
    FakeMessages,
    FakeModelServer,
    FakeResponses,
    claude_code_turns,
    cli_binary,
    cli_prefix,
    npm_missing,
)
from planguard_hooks import client
from planguard_hooks.service import read_summary

pytestmark = pytest.mark.e2e

CALC = "def add(a, b):\n    return a - b\n"
SUBMIT = "#!/bin/sh\necho submitted >> submissions.log\necho submitted\n"
GATE_TEXT = "PLANGUARD GATE (validate-before-submit)"
REMINDER_TEXT = "PLAN REMINDER:"
PROMPT = "Fix the bug in calc.py, test it, then run ./submit.sh."


def _config(shell_tool: str) -> str:
    return f"""\
plan: plan
rules: live
telemetry: {{enabled: false}}
store: {{enabled: false}}
policies:
  reminder: {{every_model_calls: 3, min_gap_model_calls: 0}}
  gates:
    - name: validate-before-submit
      tool: {shell_tool}
      arguments: {{command: 'submit\\.sh'}}
      until: {{phase_after: {{phase: V, after: P, strict: true}}}}
"""


def _skip_unless(name: str) -> Path:
    """The CLI's executable; installed now (pinned, by ``.ci/services/clis.sh``) when npm is there but the
    CLI is not. Skips only without npm/node."""
    if npm_missing():
        pytest.skip("npm/node are not installed: the coding-CLI e2e tests need them")
    binary = cli_binary(name)
    if binary is None:
        script = Path(__file__).resolve().parents[2] / ".ci" / "services" / "clis.sh"
        env = {**os.environ, "PLANGUARD_CLI_PREFIX": str(cli_prefix())}
        proc = subprocess.run(["bash", str(script), "start"], env=env, capture_output=True, text=True)
        binary = cli_binary(name)
        assert binary is not None, f"{script} start did not install {name}:\n{proc.stderr[-3000:]}"
    return binary


#: Where a scripted run's repository lives: ``/tmp`` (issue #29: a repository under a temp directory is a
#: repository, PHASES_LIVE.md §4, its work dir being the hook payload's ``cwd``), or a place that is no temp
#: directory (the user's cache directory), for the same letters there.
UNDER_TMP = "/tmp"
ELSEWHERE = "elsewhere"


def _repository_base(place: str) -> Path:
    if place == UNDER_TMP:
        return Path(UNDER_TMP)
    base = Path.home() / ".cache" / "planguard-e2e"
    base.mkdir(parents=True, exist_ok=True)
    return base


@pytest.fixture
def workspace(request: pytest.FixtureRequest) -> Iterator[dict[str, Path]]:
    # Not under pytest's tmp_path: its "test_<name>" folders make every path "test-ish" for the paper's rules.
    # The repository is made right where ``place`` says, not relocated: under /tmp unless a test asks.
    place = getattr(request, "param", UNDER_TMP)
    tmp = Path(tempfile.mkdtemp(prefix="pgcli-", dir=_repository_base(place)))
    work = tmp / "work"
    work.mkdir()
    (work / "calc.py").write_text(CALC)
    (work / "submit.sh").write_text(SUBMIT)
    (work / "submit.sh").chmod(0o755)
    subprocess.run(["git", "init", "-q"], cwd=work, check=True)
    home = tmp / "home"
    home.mkdir()
    try:
        with daemon_sandbox(tmp / "state") as run_dir:
            yield {
                "place": Path(place),
                "tmp": tmp,
                "work": work,
                "home": home,
                "config": tmp / "planguard.yaml",
                "state": tmp / "state",
                "run": run_dir,
            }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _base_env(home: Path) -> dict[str, str]:
    """No proxies, no real keys, nothing from the outer planguard environment; the test's own runtime dir."""
    keep = ("PATH", "LANG", "LC_ALL", "TMPDIR")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env.update(
        {
            "HOME": str(home),
            "PATH": f"{Path(sys.executable).parent}:{env.get('PATH', '')}",
            "XDG_RUNTIME_DIR": os.environ["XDG_RUNTIME_DIR"],  # the test's own (see daemon_sandbox)
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_STATE_HOME": str(home / ".local" / "state"),
            "XDG_CACHE_HOME": str(home / ".cache"),
            "NO_PROXY": "127.0.0.1,localhost",
            client.ENV_WATCH: os.environ[client.ENV_WATCH],
            "TERM": "dumb",
        }
    )
    return env


def _install(agent: str, workspace: dict[str, Path], shell_tool: str) -> None:
    """The test's config (its gate on ``shell_tool``, the CLI's shell tool as its hooks name it), and
    planguard's hooks installed for ``agent`` into the repository, as a user would."""
    workspace["config"].write_text(_config(shell_tool))
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "planguard", "install", agent),
            *("--project-dir", str(workspace["work"])),
            *("--config", str(workspace["config"]), "--state-dir", str(workspace["state"])),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr


def _run(argv: list[str], work: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The CLI, non-interactively, in the repository; it must exit 0."""
    proc = subprocess.run(
        argv, cwd=work, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
    return proc


def _check_run(fake: FakeModelServer, workspace: dict[str, Path], tool_result: Callable[[int], str]) -> None:
    """What every scripted run must show. ``tool_result(i)``: the result of turn ``i``'s call as the model
    read it in agent-loop request ``i`` (JSON text). The early submit (turn 5) never ran and the model read
    why; the later one (turn 7) ran once; the patch was made; reminders reached later requests."""
    work = workspace["work"]
    assert not fake.unknown, fake.unknown
    errors = workspace["state"] / "hook-errors.log"
    assert not errors.exists(), errors.read_text()
    assert (work / "submissions.log").read_text() == "submitted\n"
    assert len(fake.requests) == 8
    assert GATE_TEXT in tool_result(5)
    assert "submitted" in tool_result(7)
    assert (work / "calc.py").read_text() == CALC.replace("a - b", "a + b")
    reminded = fake.sent_after(0, REMINDER_TEXT)
    assert reminded and reminded[0] >= 2, reminded


def _check_live(session_id: str, workspace: dict[str, Path], *, failed_first: bool = False) -> dict[str, Any]:
    """What planguard recorded live: every hook call through one daemon, none failed; the phases, steps
    (the denied call is not one; ``failed_first``: a failed read before the task is one more), the denial
    and the plan's compliance."""
    state = workspace["state"]
    daemons = client.daemon_status(str(state), environ={"XDG_RUNTIME_DIR": os.environ["XDG_RUNTIME_DIR"]})
    assert len(daemons) == 1 and daemons[0]["failed"] == 0, daemons
    work = workspace["work"]
    under_tmp = Path(UNDER_TMP) in work.resolve().parents
    assert under_tmp == (workspace["place"] == Path(UNDER_TMP)), work
    summary = read_summary(session_id, str(workspace["config"]), str(state))
    assert summary is not None
    # The repository the live rules judged paths against: the hook payloads' cwd, wherever it lives.
    assert summary["work_dir"] == str(workspace["work"])
    assert summary["letters"] == "N" * failed_first + "NRRPV"
    assert summary["n_steps"] == 6 + failed_first
    assert summary["decision_counts"].get("deny") == 1
    assert summary["metrics"]["plan"]["PC"] == pytest.approx(1.0)
    return summary


def _check_replay(
    path: Path,
    loader_module: str,
    workspace: dict[str, Path],
    live: dict[str, Any],
    session_id: str | None = None,
) -> None:
    """The CLI's own session file replayed offline, as ``planguard replay`` does (with the run's metadata:
    its working directory is what the live rules judge paths against), gives the live phases, steps and
    denial (skips while the loader is not on this branch)."""
    pytest.importorskip(loader_module, reason=f"{loader_module} (the session-file loader) not merged yet")
    from planguard.guard import Guard
    from planguard.offline.loaders import LoadError, Trajectory, iter_trajectories
    from planguard.session import replay_events

    loaded = list(iter_trajectories([path]))
    assert not [x for x in loaded if isinstance(x, LoadError)], loaded
    (trajectory,) = [
        t for t in loaded if isinstance(t, Trajectory) and (session_id is None or t.id == session_id)
    ]
    assert trajectory.meta.get("cwd") == str(workspace["work"])
    guard = Guard.from_file(workspace["config"])
    try:
        offline = replay_events(trajectory.events, guard.pipeline, trajectory.id, trajectory.meta).end()
    finally:
        guard.shutdown()
    assert offline.letters == live["letters"]
    assert offline.n_steps == live["n_steps"]
    assert offline.decision_counts.get("deny") == 1


# --------------------------------------------------------------------------- Gemini CLI


def _gemini_turns(work: Path) -> list[list[dict[str, Any]]]:
    def shell(command: str) -> list[dict[str, Any]]:
        return [{"name": "run_shell_command", "args": {"command": command}}]

    calc = str(work / "calc.py")
    return [
        [{"name": "read_file", "args": {"file_path": calc}}],
        [{"name": "write_file", "args": {"file_path": str(work / "test_calc.py"), "content": CALC_TEST}}],
        shell("python3 test_calc.py"),
        [
            {
                "name": "replace",
                "args": {
                    "file_path": calc,
                    "old_string": "return a - b",
                    "new_string": "return a + b",
                    "instruction": "add must add",
                },
            }
        ],
        shell("./submit.sh"),  # too early: nothing validated the patch yet
        shell("python3 test_calc.py"),
        shell("./submit.sh"),
        [{"text": "Fixed add(); the test passes and the fix is submitted."}],
    ]


def _function_response(request: dict[str, Any], name: str) -> str:
    """The last functionResponse for tool ``name`` in a Gemini request, as JSON text."""
    for content in reversed(request["contents"]):
        for part in content.get("parts", []):
            response = part.get("functionResponse")
            if isinstance(response, dict) and response.get("name") == name:
                return json.dumps(response)
    raise AssertionError(f"no functionResponse for {name}")


@pytest.mark.parametrize("workspace", [UNDER_TMP, ELSEWHERE], indirect=True)
def test_gemini_cli_gate_reminder_phases_and_replay(workspace: dict[str, Path]) -> None:
    gemini = _skip_unless("gemini")
    work, home = workspace["work"], workspace["home"]
    _install("gemini", workspace, "run_shell_command")
    (home / ".gemini").mkdir()
    (home / ".gemini" / "settings.json").write_text(
        json.dumps(
            {
                "privacy": {"usageStatisticsEnabled": False},
                "telemetry": {"enabled": False},
                "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
                "security": {"auth": {"selectedType": "gemini-api-key"}},
            }
        )
    )
    with FakeGemini(_gemini_turns(work)) as fake:
        env = _base_env(home)
        env.update(
            {
                "GEMINI_API_KEY": "fake-key",
                "GOOGLE_GEMINI_BASE_URL": fake.url,
                "GEMINI_CLI_TRUST_WORKSPACE": "true",  # a throw-away repository: its hooks may run
            }
        )
        argv = [str(gemini), "-p", PROMPT, "--yolo", "-m", "gemini-2.5-pro", "--output-format", "json"]
        proc = _run(argv, work, env)
        # A denial is the tool's error, a reminder is appended to a tool result (AfterTool).
        _check_run(fake, workspace, lambda i: _function_response(fake.requests[i], "run_shell_command"))

    session_id = json.loads(proc.stdout)["session_id"]
    live = _check_live(session_id, workspace)
    assert live["n_model_calls"] >= 7
    (recording,) = (home / ".gemini" / "tmp").glob(f"*/chats/session-*{session_id[:8]}*.json*")
    _check_replay(recording, "planguard.offline.loaders.gemini_cli", workspace, live)


# --------------------------------------------------------------------------- Codex CLI


def _shell(n: int, command: str) -> list[dict[str, Any]]:
    return [{"name": "exec_command", "args": {"cmd": command}, "id": f"call_{n:02d}"}]


def _codex_turns() -> list[list[dict[str, Any]]]:
    return [
        _shell(1, "cat calc.py"),
        _shell(2, f"cat > test_calc.py <<'EOF'\n{CALC_TEST}EOF"),
        _shell(3, "python3 test_calc.py"),
        _shell(4, "sed -i 's/return a - b/return a + b/' calc.py"),
        _shell(5, "./submit.sh"),  # too early: nothing validated the patch yet
        _shell(6, "python3 test_calc.py"),
        _shell(7, "./submit.sh"),
        [{"text": "Fixed add(); the test passes and the fix is submitted."}],
    ]


def _codex_own_tools_turns() -> list[list[dict[str, Any]]]:
    """Codex's own edit tool for the new test file and for the fix: ``apply_patch``, the free-form tool
    (codex-rs ``tools/handlers/apply_patch.rs``), whose hooks get the patch as ``tool_input.command``."""
    new_test = "".join(f"+{line}\n" for line in CALC_TEST.splitlines())
    add = f"*** Begin Patch\n*** Add File: test_calc.py\n{new_test}*** End Patch\n"
    fix = (
        "*** Begin Patch\n*** Update File: calc.py\n@@ def add(a, b):\n-    return a - b\n+    return a + b\n"
        "*** End Patch\n"
    )
    return [
        _shell(1, "cat calc.py"),
        [{"name": "apply_patch", "input": add, "id": "call_02"}],
        _shell(3, "python3 test_calc.py"),
        [{"name": "apply_patch", "input": fix, "id": "call_04"}],
        _shell(5, "./submit.sh"),  # too early: nothing validated the patch yet
        _shell(6, "python3 test_calc.py"),
        _shell(7, "./submit.sh"),
        [{"text": "Fixed add(); the test passes and the fix is submitted."}],
    ]


def _call_output(request: dict[str, Any], call_id: str) -> str:
    """The ``function_call_output`` (or a free-form tool's ``custom_tool_call_output``) for ``call_id`` in a
    Responses request's ``input``, as JSON text."""
    for item in request.get("input", []):
        if (
            isinstance(item, dict)
            and item.get("type") in ("function_call_output", "custom_tool_call_output")
            and item.get("call_id") == call_id
        ):
            return json.dumps(item.get("output"))
    raise AssertionError(f"no function_call_output for {call_id}")


@pytest.mark.parametrize(
    ("workspace", "turns"),
    [(UNDER_TMP, _codex_turns), (UNDER_TMP, _codex_own_tools_turns), (ELSEWHERE, _codex_own_tools_turns)],
    ids=["shell", "own-tools", "own-tools-elsewhere"],
    indirect=["workspace"],
)
def test_codex_cli_gate_reminder_phases_and_replay(
    workspace: dict[str, Path], turns: Callable[[], list[list[dict[str, Any]]]]
) -> None:
    codex = _skip_unless("codex")
    work, home = workspace["work"], workspace["home"]
    _install("codex", workspace, "Bash")  # Codex's hooks name its shell tool (exec_command) Bash
    codex_home = home / ".codex"
    codex_home.mkdir()
    with FakeResponses(turns()) as fake:
        (codex_home / "config.toml").write_text(
            f"""\
model = "gpt-5.5"
model_provider = "fake"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[model_providers.fake]
name = "fake"
base_url = "{fake.url}/v1"
wire_api = "responses"
env_key = "FAKE_OPENAI_KEY"

[projects."{work}"]
trust_level = "trusted"

[analytics]
enabled = false
"""
        )
        env = _base_env(home)
        env.update({"CODEX_HOME": str(codex_home), "FAKE_OPENAI_KEY": "sk-fake"})
        # The hooks were written by this test (planguard install codex): no review needed.
        argv = [str(codex), "exec", "--dangerously-bypass-hook-trust", "--json", PROMPT]
        proc = _run(argv, work, env)
        _check_run(fake, workspace, lambda i: _call_output(fake.requests[i], f"call_{i:02d}"))

    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    (session_id,) = {e["thread_id"] for e in events if e.get("type") == "thread.started"}
    live = _check_live(session_id, workspace)
    (rollout,) = (codex_home / "sessions").rglob(f"rollout-*{session_id}.jsonl")
    _check_replay(rollout, "planguard.offline.loaders.codex", workspace, live)


# --------------------------------------------------------------------------- OpenCode (plugin)


def _opencode_turns(work: Path) -> list[list[dict[str, Any]]]:
    def bash(n: int, command: str) -> list[dict[str, Any]]:
        args = {"command": command, "description": f"step {n}"}
        return [{"name": "bash", "args": args, "id": f"call_{n:02d}"}]

    calc = str(work / "calc.py")
    return [
        [{"name": "read", "args": {"filePath": calc}, "id": "call_01"}],
        [
            {
                "name": "write",
                "args": {"filePath": str(work / "test_calc.py"), "content": CALC_TEST},
                "id": "call_02",
            }
        ],
        bash(3, "python3 test_calc.py"),
        [
            {
                "name": "edit",
                "args": {"filePath": calc, "oldString": "return a - b", "newString": "return a + b"},
                "id": "call_04",
            }
        ],
        bash(5, "./submit.sh"),  # too early: nothing validated the patch yet
        bash(6, "python3 test_calc.py"),
        bash(7, "./submit.sh"),
        [{"text": "Fixed add(); the test passes and the fix is submitted."}],
    ]


def _tool_message(request: dict[str, Any], call_id: str) -> str:
    """The ``tool`` message answering ``call_id`` in a Chat Completions request, as JSON text."""
    for message in request.get("messages", []):
        if message.get("role") == "tool" and message.get("tool_call_id") == call_id:
            return json.dumps(message.get("content"))
    raise AssertionError(f"no tool message for {call_id}")


def _opencode_failing_turns(work: Path) -> list[list[dict[str, Any]]]:
    """The task after a call of OpenCode's read tool that fails inside the tool (a missing file): OpenCode
    fires no ``tool.execute.after`` for it, the plugin closes it from the part's error state."""
    missing = [{"name": "read", "args": {"filePath": str(work / "missing.py")}, "id": "call_00"}]
    return [missing, *_opencode_turns(work)]


@pytest.mark.parametrize(
    ("workspace", "failing"),
    [(UNDER_TMP, False), (UNDER_TMP, True), (ELSEWHERE, False)],
    ids=["task", "failing-read-first", "task-elsewhere"],
    indirect=["workspace"],
)
def test_opencode_plugin_gate_reminder_phases_and_replay(workspace: dict[str, Path], failing: bool) -> None:
    opencode = _skip_unless("opencode")
    work, home = workspace["work"], workspace["home"]
    _install("opencode", workspace, "bash")
    assert (work / ".opencode" / "plugin" / "planguard.js").is_file()
    turns = _opencode_failing_turns(work) if failing else _opencode_turns(work)
    with FakeChatCompletions(turns) as fake:
        provider = {
            "npm": "@ai-sdk/openai-compatible",
            "name": "Fake",
            "options": {"baseURL": f"{fake.url}/v1", "apiKey": "sk-fake"},
            "models": {"fake-model": {"name": "Fake", "tool_call": True}},
        }
        (work / "opencode.json").write_text(
            json.dumps(
                {
                    "provider": {"fake": provider},
                    "model": "fake/fake-model",
                    "small_model": "fake/fake-model",
                    "autoupdate": False,
                    "share": "disabled",
                    "permission": {"edit": "allow", "bash": "allow"},
                }
            )
        )
        env = _base_env(home)
        env.update(
            {
                "OPENCODE_DISABLE_MODELS_FETCH": "1",
                "OPENCODE_DISABLE_AUTOUPDATE": "1",
                "OPENCODE_DISABLE_SHARE": "1",
                "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
                "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
                "OPENCODE_DISABLE_CLAUDE_CODE": "1",
            }
        )
        proc = _run([str(opencode), "run", "--format", "json", PROMPT], work, env)
        if failing:  # every model request counted: the failed call held none back
            assert "missing.py" in _tool_message(fake.requests[1], "call_00")
            fake.requests.pop(0)
        _check_run(fake, workspace, lambda i: _tool_message(fake.requests[i], f"call_{i:02d}"))

    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    (session_id,) = {e["sessionID"] for e in events if e.get("sessionID")}
    live = _check_live(session_id, workspace, failed_first=failing)
    # Every request after a tool result, the failed one's too (none before the first: the plugin has no
    # prompt event).
    assert live["n_model_calls"] == len(fake.requests) + failing - 1
    database = home / ".local" / "share" / "opencode" / "opencode.db"  # where opencode 1.18 keeps sessions
    _check_replay(database, "planguard.offline.loaders.opencode", workspace, live, session_id)


# --------------------------------------------------------------------------- Claude Code (npm)


@pytest.mark.parametrize("workspace", [UNDER_TMP, ELSEWHERE], indirect=True)
def test_claude_code_cli_gate_reminder_phases_and_replay(workspace: dict[str, Path]) -> None:
    claude = _skip_unless("claude")
    work, home = workspace["work"], workspace["home"]
    _install("claude-code", workspace, "Bash")
    assert (work / ".claude" / "settings.json").is_file()
    config_dir = home / ".claude"  # CLAUDE_CONFIG_DIR: settings, and the session files under projects/
    with FakeMessages(claude_code_turns(work)) as fake:
        proc = _run_claude(claude, workspace, fake, "Bash,Read,Write,Edit")
        # A denial is the tool_result's error text; a reminder is hook context on a tool result.
        _check_run(fake, workspace, lambda i: fake.tool_result(i, f"toolu_{i:02d}"))

    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    (session_id,) = {e["session_id"] for e in events if e.get("type") == "result"}
    live = _check_live(session_id, workspace)
    assert live["n_model_calls"] == len(fake.requests)
    (transcript,) = (config_dir / "projects").glob(f"*/{session_id}.jsonl")
    _check_replay(transcript, "planguard.offline.loaders.claude_code", workspace, live)


def _run_claude(
    claude: Path, workspace: dict[str, Path], fake: FakeMessages, allowed_tools: str
) -> subprocess.CompletedProcess[str]:
    """Claude Code in ``-p`` mode against ``fake``, its settings and session files under the test's home."""
    env = _base_env(workspace["home"])
    env.update(
        {
            "CLAUDE_CONFIG_DIR": str(workspace["home"] / ".claude"),
            "ANTHROPIC_BASE_URL": fake.url,
            "ANTHROPIC_API_KEY": "sk-ant-fake",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",  # no autoupdate, telemetry, error reports
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1",
        }
    )
    argv = [
        *(str(claude), "-p", PROMPT, "--output-format", "stream-json", "--verbose"),
        *("--allowedTools", allowed_tools, "--model", "claude-sonnet-4-5"),
    ]
    return _run(argv, workspace["work"], env)


def test_claude_code_permission_refusal_is_a_denial_live_and_in_replay(workspace: dict[str, Path]) -> None:
    """``--allowedTools`` without Write: Claude Code refuses the Write after planguard's PreToolUse let it
    through, and fires no result hook for it (2.1.328); its transcript records the refusal. The next hook
    call closes it from the transcript as the denial it was, not a step, as the transcript's replay does."""
    claude = _skip_unless("claude")
    work = workspace["work"]
    _install("claude-code", workspace, "Bash")
    with FakeMessages(claude_code_turns(work)) as fake:
        proc = _run_claude(claude, workspace, fake, "Bash,Read,Edit")
        assert "permissions to write" in fake.tool_result(2, "toolu_02")
    assert not (work / "test_calc.py").exists()  # the Write never ran
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    (session_id,) = {e["session_id"] for e in events if e.get("type") == "result"}
    live = read_summary(session_id, str(workspace["config"]), str(workspace["state"]))
    assert live is not None
    ran = 6  # Read, Bash, Edit, ./submit.sh (denied by the gate: no step), Bash, ./submit.sh
    denials = live["decision_counts"].get("deny", 0)
    assert live["n_steps"] + denials == ran + 1, live  # every call is a step or a denial, the Write a denial
    assert live["n_steps"] <= ran - 1 and denials >= 2, live
    assert live["n_model_calls"] == len(fake.requests)  # the refused call held back no model call
    (transcript,) = (workspace["home"] / ".claude" / "projects").glob(f"*/{session_id}.jsonl")
    from planguard.guard import Guard
    from planguard.offline.loaders import Trajectory, iter_trajectories
    from planguard.session import replay_events

    (trajectory,) = [t for t in iter_trajectories([transcript]) if isinstance(t, Trajectory)]
    guard = Guard.from_file(workspace["config"])
    try:
        offline = replay_events(trajectory.events, guard.pipeline, trajectory.id, trajectory.meta).end()
    finally:
        guard.shutdown()
    assert (offline.letters, offline.n_steps) == (live["letters"], live["n_steps"])
    assert offline.decision_counts.get("deny") == denials
