"""One session is one store file and one end record, with every finished step, whatever the hook daemon does:
on, off (``--no-daemon``, ``PLANGUARD_HOOK_DAEMON=0``, the fail-open fallback: a process per call), killed by
PID mid-session, idle-exited mid-session, restarted, and a session dropped from the daemon's memory. Each
mode runs the same 10-call session through the real hook command (``python -S .../launch.py``, as
``planguard install claude-code`` writes it) with real Claude Code hook payloads, then replays the one
store file: the same letters as the daemon-on run. The Codex and Gemini dialects share the service, so
they are checked the same way with the daemon off."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("planguard_claude_code")
from claude_hook_support import daemon_sandbox, live_daemon_locks, post_tool_use, pre_tool_use
from planguard_claude_code import client, hook
from planguard_claude_code.hook import HookRunner
from planguard_claude_code.state import SessionStore

from planguard.offline.loaders.planguard_store import read_session
from planguard.offline.replay import replay, replay_pipeline

CLIENT = str(Path(client.__file__).resolve().with_name("launch.py"))
SID = "8f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b"
CONFIG = """\
plan: plan
telemetry: {{enabled: false}}
store: {{enabled: true, path: '{store}'}}
policies:
  reminder: {{enabled: false}}
"""
#: Ten calls: navigate, write a test, reproduce, patch, validate, look again, patch, validate twice, review.
SESSION: list[tuple[str, dict[str, Any]]] = [
    ("Read", {"file_path": "/tmp/w/calc.py"}),
    ("Grep", {"pattern": "def add", "path": "/tmp/w"}),
    ("Bash", {"command": "cat > test_calc.py <<'EOF'\nassert 1\nEOF"}),
    ("Bash", {"command": "python3 test_calc.py"}),
    ("Edit", {"file_path": "/tmp/w/calc.py", "old_string": "-", "new_string": "+"}),
    ("Bash", {"command": "python3 test_calc.py"}),
    ("Read", {"file_path": "/tmp/w/calc.py"}),
    ("Edit", {"file_path": "/tmp/w/calc.py", "old_string": "+", "new_string": "+ "}),
    ("Bash", {"command": "python3 test_calc.py"}),
    ("Bash", {"command": "git diff"}),
]
PROMPT = {
    "session_id": SID,
    "transcript_path": "/x.jsonl",
    "cwd": "/tmp/w",
    "hook_event_name": "UserPromptSubmit",
    "prompt": "fix calc.py",
}
END = {
    "session_id": SID,
    "transcript_path": "/x.jsonl",
    "cwd": "/tmp/w",
    "hook_event_name": "SessionEnd",
    "reason": "prompt_input_exit",
}


@pytest.fixture
def box(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Path]]:
    for var in ("PLANGUARD_CONFIG", "PLANGUARD_STATE_DIR", "CLAUDE_PROJECT_DIR", client.ENV_TIMEOUT):
        monkeypatch.delenv(var, raising=False)
    tmp = Path(tempfile.mkdtemp(prefix="pgc-"))  # short: a state/run socket path must fit in ~100 bytes
    (tmp / "pg.yaml").write_text(CONFIG.format(store=tmp / "store"))
    state = tmp / "s"
    with daemon_sandbox(state) as run_dir:
        yield {"config": tmp / "pg.yaml", "state": state, "run": run_dir, "store": tmp / "store"}
    import shutil

    shutil.rmtree(tmp, ignore_errors=True)


def hook_call(
    box: dict[str, Path],
    payload: dict[str, Any],
    *,
    env: dict[str, str] | None = None,
    args: tuple[str, ...] = (),
) -> dict[str, Any]:
    """One hook call in a new process, with the command ``planguard install`` writes."""
    cmd = [sys.executable, "-S", CLIENT, "--config", str(box["config"]), "--state-dir", str(box["state"])]
    proc = subprocess.run(
        [*cmd, *args],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )
    assert (proc.returncode, proc.stderr) == (0, ""), proc.stderr
    out = proc.stdout.strip()
    return json.loads(out) if out else {}


def run_session(
    box: dict[str, Path],
    *,
    midway: Callable[[], None] | None = None,
    env: dict[str, str] | None = None,
    args: tuple[str, ...] = (),
) -> None:
    """The prompt, the ten calls (``midway`` runs after the fifth), the end."""
    hook_call(box, PROMPT, env=env, args=args)
    for n, (tool, tool_input) in enumerate(SESSION, 1):
        hook_call(box, pre_tool_use(f"toolu_{n:02d}", tool, tool_input, SID), env=env, args=args)
        hook_call(box, post_tool_use(f"toolu_{n:02d}", tool, tool_input, SID), env=env, args=args)
        if n == 5 and midway is not None:
            midway()
    hook_call(box, END, env=env, args=args)


def one_session_file(box: dict[str, Path]) -> tuple[Path, str]:
    """The store's only session file (one header, one end record, ten steps) and its replayed letters."""
    files = sorted(box["store"].glob("*.jsonl"))
    assert len(files) == 1, [f.name for f in files]
    lines = [json.loads(line) for line in files[0].read_text().splitlines()]
    kinds = [r["type"] for r in lines]
    assert kinds.count("planguard.session") == 1 and kinds[0] == "planguard.session", kinds
    assert kinds.count("end") == 1 and kinds[-1] == "end", kinds
    stored = read_session(files[0])
    assert stored.errors == []
    assert [s.index for s in stored.steps] == list(range(10))
    # Kept without content, the same calls keep the same digests, whichever process recorded them.
    digests = [s.event.digest for s in stored.steps]
    assert digests[0] == digests[6] and digests[3] == digests[5] == digests[8]
    assert len(set(digests)) == 7
    assert stored.end is not None and stored.end.n_steps == 10
    (result,) = list(replay([files[0]], replay_pipeline()))
    assert not isinstance(result, Exception), result
    assert result.summary.n_steps == 10
    assert result.summary.letters == stored.end.letters  # offline = live
    return files[0], result.summary.letters


def errors(box: dict[str, Path]) -> str:
    path = box["state"] / "hook-errors.log"
    return path.read_text() if path.exists() else ""


def the_daemon_pid(box: dict[str, Path]) -> int:
    daemons = client.daemon_status(str(box["state"]))
    assert len(daemons) == 1, daemons
    return int(daemons[0]["pid"])


def wait_until(cond: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@pytest.fixture(scope="module")
def daemon_letters() -> Iterator[str]:
    """The letters of the session with the daemon on throughout: what every other mode must give."""
    mp = pytest.MonkeyPatch()
    for var in ("PLANGUARD_CONFIG", "PLANGUARD_STATE_DIR", "CLAUDE_PROJECT_DIR", client.ENV_TIMEOUT):
        mp.delenv(var, raising=False)
    tmp = Path(tempfile.mkdtemp(prefix="pgc-"))
    (tmp / "pg.yaml").write_text(CONFIG.format(store=tmp / "store"))
    b = {"config": tmp / "pg.yaml", "state": tmp / "s", "store": tmp / "store"}
    with daemon_sandbox(b["state"]):
        run_session(b)
        assert client.daemon_status(str(b["state"])), "the daemon answered"
        _, letters = one_session_file(b)
    mp.undo()
    import shutil

    shutil.rmtree(tmp, ignore_errors=True)
    assert len(letters) >= 10 and set(letters) >= {"N", "R", "P", "V"}
    yield letters


# --------------------------------------------------------------------------- Claude Code, every mode


@pytest.mark.parametrize("how", ["flag", "env"])
def test_daemon_off_one_file_one_end(box: dict[str, Path], daemon_letters: str, how: str) -> None:
    if how == "flag":
        run_session(box, args=("--no-daemon",))
    else:
        run_session(box, env={client.ENV_DAEMON: "0"})
    assert client.daemon_status(str(box["state"])) == []
    assert one_session_file(box)[1] == daemon_letters
    assert errors(box) == ""


def test_fail_open_fallback_one_file_one_end(box: dict[str, Path], daemon_letters: str) -> None:
    addr = client.locate(str(box["state"]))
    assert addr is not None
    os.mkdir(addr.sock)  # not a socket where the socket goes: no daemon can listen, every call in-process
    run_session(box)
    assert client.daemon_status(str(box["state"])) == []
    assert "hook daemon unavailable" in errors(box)
    assert one_session_file(box)[1] == daemon_letters
    os.rmdir(addr.sock)


def test_daemon_killed_mid_session(box: dict[str, Path], daemon_letters: str) -> None:
    killed: list[int] = []

    def kill() -> None:
        pid = the_daemon_pid(box)
        os.kill(pid, signal.SIGKILL)
        killed.append(pid)
        wait_until(lambda: not live_daemon_locks(box["run"]))

    run_session(box, midway=kill)
    assert killed and the_daemon_pid(box) != killed[0]  # the next call started another
    assert one_session_file(box)[1] == daemon_letters


def test_daemon_idle_exit_mid_session(box: dict[str, Path], daemon_letters: str) -> None:
    pids: list[int] = []

    def idle_out() -> None:
        pids.extend(d["pid"] for d in client.daemon_status(str(box["state"])))  # (none: it already left)
        wait_until(lambda: not live_daemon_locks(box["run"]))  # it leaves after 1 s without calls

    # The daemon leaves in the pause midway (on a slow machine perhaps between other calls too: each time
    # the next call starts another).
    run_session(box, midway=idle_out, env={client.ENV_IDLE: "1"})
    # (The one that took over may be idle-exited by now as well.)
    assert all(d["pid"] not in pids for d in client.daemon_status(str(box["state"])))
    assert one_session_file(box)[1] == daemon_letters


def test_daemon_restarted_mid_session(box: dict[str, Path], daemon_letters: str) -> None:
    pids: list[int] = []

    def restart() -> None:
        pids.append(the_daemon_pid(box))
        assert client.stop_daemons(str(box["state"]), wait_s=15.0) == 1

    run_session(box, midway=restart)
    assert pids and the_daemon_pid(box) != pids[0]
    assert one_session_file(box)[1] == daemon_letters


def test_session_dropped_from_the_daemons_memory(
    box: dict[str, Path], daemon_letters: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon's runner keeps a bounded number of sessions in memory: one it dropped (another session
    came) is read back from its files, and goes on in its store file."""
    monkeypatch.setattr(hook, "MAX_CACHED_SESSIONS", 1)
    monkeypatch.chdir(box["store"].parent)
    runner = HookRunner(str(box["config"]), SessionStore(box["state"]), long_lived=True)
    other = "0a0b0c0d-aaaa-bbbb-cccc-000000000000"
    try:
        runner.handle(PROMPT)
        for n, (tool, tool_input) in enumerate(SESSION, 1):
            runner.handle(pre_tool_use(f"toolu_{n:02d}", tool, tool_input, SID))
            runner.handle(pre_tool_use(f"toolu_x{n:02d}", "Read", {"file_path": "/tmp/o"}, other))
            runner.handle(post_tool_use(f"toolu_{n:02d}", tool, tool_input, SID))
            runner.handle(post_tool_use(f"toolu_x{n:02d}", "Read", {"file_path": "/tmp/o"}, other))
        runner.handle(END)
        assert runner.abandoned >= 10  # the session left memory at nearly every call
    finally:
        runner.close()
    files = sorted(box["store"].glob("*.jsonl"))
    assert len(files) == 2  # one per session
    mine = [f for f in files if read_session(f).id == SID]
    assert len(mine) == 1
    for f in files:
        if f not in mine:
            f.unlink()
    assert one_session_file(box)[1] == daemon_letters


def test_records_past_the_checkpoint_are_cut(box: dict[str, Path], daemon_letters: str) -> None:
    """A process that wrote a call's records but died before its checkpoint: the call is answered again
    (the checkpoint never said it was), so the records the dead process left are cut first."""
    args = ("--no-daemon",)
    hook_call(box, PROMPT, args=args)
    for n, (tool, tool_input) in enumerate(SESSION[:5], 1):
        hook_call(box, pre_tool_use(f"toolu_{n:02d}", tool, tool_input, SID), args=args)
        hook_call(box, post_tool_use(f"toolu_{n:02d}", tool, tool_input, SID), args=args)
    (path,) = box["store"].glob("*.jsonl")
    steps = [line for line in path.read_text().splitlines() if json.loads(line)["type"] == "step"]
    with open(path, "a") as f:  # what a process killed between its flush and its checkpoint left
        f.write(steps[-1].replace('"index":4', '"index":5') + "\n")
    for n, (tool, tool_input) in enumerate(SESSION[5:], 6):
        hook_call(box, pre_tool_use(f"toolu_{n:02d}", tool, tool_input, SID), args=args)
        hook_call(box, post_tool_use(f"toolu_{n:02d}", tool, tool_input, SID), args=args)
    hook_call(box, END, args=args)
    assert one_session_file(box)[1] == daemon_letters


# --------------------------------------------------------------------------- the other dialects


def _codex(event: str, **fields: Any) -> dict[str, Any]:
    return {
        "session_id": SID,
        "turn_id": "t1",
        "cwd": "/tmp/w",
        "model": "m",
        "permission_mode": "default",
        "hook_event_name": event,
        **fields,
    }


def _gemini(event: str, **fields: Any) -> dict[str, Any]:
    return {
        "session_id": SID,
        "cwd": "/tmp/w",
        "hook_event_name": event,
        "timestamp": "2026-12-01T00:00:00Z",
        **fields,
    }


#: The same session in Gemini CLI's tool names (``read_file``, ``search_file_content``,
#: ``run_shell_command``, ``replace``).
GEMINI_TOOLS = {
    "Read": "read_file",
    "Grep": "search_file_content",
    "Bash": "run_shell_command",
    "Edit": "replace",
}


def test_codex_and_gemini_daemon_off_one_file_one_end(box: dict[str, Path]) -> None:
    args = ("--no-daemon",)
    codex_args = (*args, "--dialect", "codex")
    hook_call(box, _codex("UserPromptSubmit", prompt="fix calc.py"), args=codex_args)
    for n, (tool, tool_input) in enumerate(SESSION, 1):
        call = {"tool_name": tool, "tool_input": tool_input, "tool_use_id": f"call_{n}"}
        hook_call(box, _codex("PreToolUse", **call), args=codex_args)
        hook_call(box, _codex("PostToolUse", **call, tool_response="ok"), args=codex_args)
    hook_call(box, _codex("SessionEnd", reason="exit"), args=codex_args)
    _, codex_letters = one_session_file(box)
    for f in box["store"].glob("*.jsonl"):
        f.unlink()

    sid = SID[::-1]
    gemini_args = (*args, "--dialect", "gemini")
    hook_call(box, {**_gemini("BeforeAgent", prompt="fix calc.py"), "session_id": sid}, args=gemini_args)
    for tool, tool_input in SESSION:
        call = {"tool_name": GEMINI_TOOLS[tool], "tool_input": tool_input, "session_id": sid}
        hook_call(box, _gemini("BeforeTool", **call), args=gemini_args)
        response = {"llmContent": "Output: ok\nExit Code: 0", "returnDisplay": ""}
        hook_call(box, _gemini("AfterTool", **call, tool_response=response), args=gemini_args)
    hook_call(box, {**_gemini("SessionEnd", reason="exit"), "session_id": sid}, args=gemini_args)
    _, gemini_letters = one_session_file(box)
    assert len(codex_letters) >= 10 and len(gemini_letters) >= 10
    assert set(codex_letters) >= {"N", "R", "P", "V"}
    assert set(gemini_letters) >= {"N", "R", "P", "V"}
    assert errors(box) == ""


def test_parallel_calls_with_the_daemon_off_share_one_file(box: dict[str, Path]) -> None:
    """Parallel tool calls (one assistant message, several tool uses): their hook processes run at once
    and take the session's lock in turn; each appends to the one file."""
    from concurrent.futures import ThreadPoolExecutor

    args = ("--no-daemon",)
    hook_call(box, PROMPT, args=args)
    calls = [(f"toolu_p{n}", "Read", {"file_path": f"/tmp/w/m{n}.py"}) for n in range(4)]
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda c: hook_call(box, pre_tool_use(*c, SID), args=args), calls))
        list(pool.map(lambda c: hook_call(box, post_tool_use(*c, SID), args=args), calls))
    hook_call(box, END, args=args)
    (path,) = box["store"].glob("*.jsonl")
    stored = read_session(path)
    assert stored.errors == [] and stored.end is not None
    # (A step is written when its call ends, as in one process: parallel calls in the order they finished.)
    assert sorted(s.index for s in stored.steps) == [0, 1, 2, 3] and stored.end.n_steps == 4
    assert errors(box) == ""
