"""The warm hook daemon, driven by real hook processes (``python -S .../launch.py``, as installed): it starts
on first use, detached from the hook; it dies or hangs and the hooks carry on without losing or repeating
an event; it leaves when idle, when the code or config changes; it can be turned off."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("planguard_claude_code")
from claude_hook_support import (
    SCRIPT,
    daemon_sandbox,
    live_daemon_locks,
    lock_is_held,
    post_tool_use,
    pre_tool_use,
)
from planguard_claude_code import client
from planguard_claude_code.hook import HookRunner, read_summary
from planguard_claude_code.state import Op, SessionStore, file_name

CLIENT = str(Path(client.__file__).resolve().with_name("launch.py"))
SID = "5d0c8a4e-0f4e-4c55-9a53-cc1d2e3f4a5b"
CONFIG = """\
plan: plan
telemetry: {enabled: false}
store: {enabled: false}
policies:
  reminder: {enabled: false}
  gates:
    - name: validate-before-submit
      tool: Bash
      arguments: {command: 'submit'}
      until: {phase_after: {phase: V, after: P, strict: true}}
"""


def _pre(n: int, tool: str, tool_input: dict[str, Any], sid: str = SID) -> dict[str, Any]:
    return pre_tool_use(f"toolu_{n:02d}", tool, tool_input, sid)


def _post(n: int, tool: str, tool_input: dict[str, Any], sid: str = SID) -> dict[str, Any]:
    return post_tool_use(f"toolu_{n:02d}", tool, tool_input, sid)


@pytest.fixture
def box(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Path]]:
    for var in ("PLANGUARD_CONFIG", "PLANGUARD_STATE_DIR", "CLAUDE_PROJECT_DIR", client.ENV_TIMEOUT):
        monkeypatch.delenv(var, raising=False)
    tmp = Path(tempfile.mkdtemp(prefix="pgd-"))  # short: a state/run socket path must fit in ~100 bytes
    (tmp / "pg.yaml").write_text(CONFIG)
    state = tmp / "s"
    with daemon_sandbox(state) as run_dir:
        yield {"config": tmp / "pg.yaml", "state": state, "run": run_dir, "tmp": tmp}
    import shutil

    shutil.rmtree(tmp, ignore_errors=True)


def hook(
    box: dict[str, Path], payload: Any, *, extra_env: dict[str, str] | None = None, args: tuple[str, ...] = ()
) -> tuple[dict[str, Any], float]:
    """One hook call in a new process, with the command ``planguard install claude-code`` writes."""
    cmd = [sys.executable, "-S", CLIENT, "--config", str(box["config"]), "--state-dir", str(box["state"])]
    t0 = time.perf_counter()
    proc = subprocess.run(
        [*cmd, *args],
        input=json.dumps(payload),
        capture_output=True,  # pipes, as Claude Code's: a daemon holding them would hang this call
        text=True,
        timeout=120,
        env={**os.environ, **(extra_env or {})},
    )
    elapsed = time.perf_counter() - t0
    assert (proc.returncode, proc.stderr) == (0, ""), proc.stderr
    out = proc.stdout.strip()
    return (json.loads(out) if out else {}), elapsed


def feed(box: dict[str, Path], steps: list[tuple[str, dict[str, Any]]], start: int = 1, **kw: Any) -> None:
    for n, (tool, inp) in enumerate(steps, start):
        assert hook(box, _pre(n, tool, inp), **kw)[0] == {}
        hook(box, _post(n, tool, inp), **kw)


def status(box: dict[str, Path]) -> list[dict[str, Any]]:
    return client.daemon_status(str(box["state"]))


def the_daemon(box: dict[str, Path]) -> dict[str, Any]:
    daemons = status(box)
    assert len(daemons) == 1, daemons
    return daemons[0]


def wait_until(cond: Any, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def errors(box: dict[str, Path]) -> str:
    path = box["state"] / "hook-errors.log"
    return path.read_text() if path.exists() else ""


def journal(box: dict[str, Path]) -> list[str]:
    log = box["state"] / (file_name(SID) + ".log")
    return [Op.from_json(line).kind for line in log.read_text().splitlines()]


# --------------------------------------------------------------------------- start-up


def test_first_call_starts_one_detached_daemon_in_a_private_directory(box: dict[str, Path]) -> None:
    assert not box["run"].exists()
    feed(box, SCRIPT[:1])
    d = the_daemon(box)
    assert d["served"] == 2 and d["failed"] == 0
    pid = d["pid"]
    # Private directory and socket; the lock says who lives.
    assert box["run"].stat().st_mode & 0o777 == 0o700
    (sock,) = box["run"].glob("cc-*.sock")
    assert sock.stat().st_mode & 0o077 == 0
    (lock,) = live_daemon_locks(box["run"])
    assert int(lock.read_text()) == pid
    # Detached: its own session, none of the hook's pipes (Claude Code waits for those to close).
    assert os.getsid(pid) == pid
    assert os.readlink(f"/proc/{pid}/fd/0") == "/dev/null"
    assert os.readlink(f"/proc/{pid}/fd/1") == "/dev/null"
    assert b"planguard_claude_code.daemon" in Path(f"/proc/{pid}/cmdline").read_bytes()

    feed(box, SCRIPT[1:3], start=2)
    d = the_daemon(box)
    assert (d["pid"], d["served"], d["sessions"]) == (pid, 6, 1)
    shown = read_summary(SID, str(box["config"]), str(box["state"]))
    assert shown is not None and (shown["letters"], shown["n_steps"]) == ("NRR", 3)
    assert journal(box) == ["pre", "post", "model"] * 3
    assert errors(box) == ""


def test_every_launcher_shares_the_daemon(box: dict[str, Path]) -> None:
    """The installed command, ``planguard hook claude-code`` and the ``planguard-claude-code-hook`` entry
    point are one hook: they reach the same daemon."""
    feed(box, SCRIPT[:1])
    pid = the_daemon(box)["pid"]
    launchers = [[sys.executable, "-m", "planguard", "hook", "claude-code"]]
    entry = Path(sys.executable).with_name("planguard-claude-code-hook")
    if entry.exists():
        launchers.append([str(entry)])
    for n, cmd in enumerate(launchers, 2):
        for payload in (_pre(n, *SCRIPT[n - 1]), _post(n, *SCRIPT[n - 1])):
            proc = subprocess.run(
                [*cmd, "--config", str(box["config"]), "--state-dir", str(box["state"])],
                input=json.dumps(payload),
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    d = the_daemon(box)
    assert (d["pid"], d["served"]) == (pid, 2 + 2 * len(launchers))


def test_gate_answers_come_back_through_the_daemon(box: dict[str, Path]) -> None:
    feed(box, SCRIPT[:4])
    denied, _ = hook(box, _pre(5, "Bash", {"command": "./submit"}))
    assert denied["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert (
        "PLANGUARD GATE (validate-before-submit)" in denied["hookSpecificOutput"]["permissionDecisionReason"]
    )
    feed(box, SCRIPT[4:], start=6)
    assert hook(box, _pre(7, "Bash", {"command": "./submit"}))[0] == {}
    assert the_daemon(box)["served"] == 12


def test_a_different_planguard_environment_gets_its_own_daemon(box: dict[str, Path]) -> None:
    feed(box, SCRIPT[:1])
    feed(box, SCRIPT[1:2], start=2, extra_env={"PLANGUARD_RULES": "corrected"})
    feed(box, SCRIPT[2:3], start=3, extra_env={client.ENV_TIMEOUT: "7"})  # not a planguard setting
    daemons = status(box)
    assert sorted(d["served"] for d in daemons) == [2, 4], (daemons, errors(box))
    shown = read_summary(SID, str(box["config"]), str(box["state"]))
    assert shown is not None and shown["n_steps"] == 3


def test_daemon_runs_in_the_project_directory_with_the_default_sinks(box: dict[str, Path]) -> None:
    """Telemetry and the store on, the store at its default relative path: it lands in Claude Code's
    project directory (where a hook process would write it), and the daemon, which keeps the session
    between calls, writes one session file for it."""
    project = box["tmp"] / "project"
    project.mkdir()
    box["config"].write_text(
        CONFIG.replace("telemetry: {enabled: false}\n", "").replace("store: {enabled: false}\n", "")
    )
    env = {"CLAUDE_PROJECT_DIR": str(project)}
    feed(box, SCRIPT, extra_env=env)
    hook(box, {**_pre(9, *SCRIPT[0]), "hook_event_name": "SessionEnd", "reason": "other"}, extra_env=env)
    d = the_daemon(box)
    assert d["base_dir"] == str(project.resolve()) and d["served"] == 11
    client.stop_daemons(str(box["state"]))  # flushes the sinks
    files = list((project / ".planguard" / "sessions").glob("*.jsonl"))
    assert len(files) == 1, files
    records = [json.loads(line) for line in files[0].read_text().splitlines()]
    assert [r["index"] for r in records if r["type"] == "step"] == [0, 1, 2, 3, 4]
    assert records[-1]["type"] == "end"
    assert errors(box) == ""


# --------------------------------------------------------------------------- failures


def test_killed_daemon_leaves_a_stale_socket_and_the_next_call_starts_another(box: dict[str, Path]) -> None:
    feed(box, SCRIPT[:2])
    first = the_daemon(box)["pid"]
    os.kill(first, signal.SIGKILL)
    wait_until(lambda: not live_daemon_locks(box["run"]))
    (sock,) = box["run"].glob("cc-*.sock")  # still there: nobody removed it
    with pytest.raises(ConnectionRefusedError):
        socket.socket(socket.AF_UNIX).connect(str(sock))

    feed(box, SCRIPT[2:], start=3)
    d = the_daemon(box)
    assert d["pid"] != first and d["served"] == 6
    shown = read_summary(SID, str(box["config"]), str(box["state"]))
    assert shown is not None
    assert (shown["letters"], shown["n_steps"], shown["journal_complete"]) == ("NRRPV", 5, True)
    assert journal(box) == ["pre", "post", "model"] * 5
    assert errors(box) == ""


def test_stale_socket_file_before_any_daemon(box: dict[str, Path]) -> None:
    addr = client.locate(str(box["state"]))
    assert addr is not None
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(addr.sock)
    stale.close()  # the file stays, nobody listens
    feed(box, SCRIPT[:1])
    assert the_daemon(box)["served"] == 2


def test_wedged_daemon_times_out_and_the_call_counts_once(box: dict[str, Path]) -> None:
    """A daemon that takes a call and does not answer: the hook gives up after the timeout, answers the
    call itself and stops the daemon. When the daemon does get to the call, the request id shows it is
    already applied."""
    feed(box, SCRIPT[:1])
    pid = the_daemon(box)["pid"]
    os.kill(pid, signal.SIGSTOP)
    try:
        tool, inp = SCRIPT[1]
        answer, elapsed = hook(box, _pre(2, tool, inp), extra_env={client.ENV_TIMEOUT: "1"})
        assert answer == {} and elapsed >= 1.0
    finally:
        os.kill(pid, signal.SIGCONT)
    wait_until(lambda: not live_daemon_locks(box["run"]))  # it was sent SIGTERM, and leaves
    hook(box, _post(2, tool, inp))
    feed(box, SCRIPT[2:], start=3)
    assert journal(box) == ["pre", "post", "model"] * 5  # the PreToolUse above counted once
    shown = read_summary(SID, str(box["config"]), str(box["state"]))
    assert shown is not None and (shown["letters"], shown["n_steps"]) == ("NRRPV", 5)


def test_daemon_that_cannot_start_means_in_process_answers(box: dict[str, Path]) -> None:
    addr = client.locate(str(box["state"]))
    assert addr is not None
    os.mkdir(addr.sock)  # something that is not a socket where the socket goes: the daemon cannot listen
    feed(box, SCRIPT[:1])
    assert status(box) == [] and not live_daemon_locks(box["run"])
    assert Path(addr.path("failed")).exists()
    assert "hook daemon" in errors(box) and "failed" in errors(box)
    # For a while the hooks do not try again: they answer in-process straight away.
    _, elapsed = hook(box, _pre(2, *SCRIPT[1]))
    assert elapsed < client.DEFAULT_TIMEOUT_S
    hook(box, _post(2, *SCRIPT[1]))
    shown = read_summary(SID, str(box["config"]), str(box["state"]))
    assert shown is not None and (shown["letters"], shown["n_steps"]) == ("NR", 2)
    os.rmdir(addr.sock)


def test_runtime_directory_that_is_not_private_is_not_used(box: dict[str, Path]) -> None:
    box["run"].mkdir(mode=0o755)
    box["run"].chmod(0o755)
    feed(box, SCRIPT[:1])
    assert not list(box["run"].iterdir())
    d = the_daemon(box)
    assert Path(d["socket"]).parent == box["state"] / "run"
    assert (box["state"] / "run").stat().st_mode & 0o777 == 0o700


# --------------------------------------------------------------------------- leaving, reloading


def test_idle_daemon_exits_and_removes_its_socket(box: dict[str, Path]) -> None:
    feed(box, SCRIPT[:1], extra_env={client.ENV_IDLE: "1"})
    assert the_daemon(box)["idle_s"] == 1.0
    wait_until(lambda: not live_daemon_locks(box["run"]))
    assert not list(box["run"].glob("*.sock"))
    feed(box, SCRIPT[1:2], start=2)  # and the next call starts a new one
    assert the_daemon(box)["served"] == 2


def test_config_change_rebuilds_the_runner(box: dict[str, Path]) -> None:
    feed(box, SCRIPT[:4])
    pid = the_daemon(box)["pid"]
    box["config"].write_text(CONFIG.replace("plan: plan", "plan: no_reproduce"))
    feed(box, SCRIPT[4:], start=5)
    shown = read_summary(SID, str(box["config"]), str(box["state"]))
    assert shown is not None and shown["letters"] == "NRRPV"
    assert list(shown["metrics"]) == ["no_reproduce"]
    assert "snapshot stale" in errors(box)  # rebuilt from the journal, as a hook process would
    assert the_daemon(box)["pid"] == pid


def test_code_change_makes_the_daemon_hand_over(box: dict[str, Path]) -> None:
    feed(box, SCRIPT[:1], extra_env={client.ENV_WATCH: "1"})
    pid = the_daemon(box)["pid"]
    source = Path(CLIENT).with_name("translate.py")
    st = source.stat()
    try:
        os.utime(source, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
        wait_until(lambda: not live_daemon_locks(box["run"]))
    finally:
        os.utime(source, ns=(st.st_atime_ns, st.st_mtime_ns))
    feed(box, SCRIPT[1:2], start=2)
    assert the_daemon(box)["pid"] != pid


def test_stop_daemons_command(box: dict[str, Path]) -> None:
    feed(box, SCRIPT[:1])
    cli = [sys.executable, "-m", "planguard", "hook", "claude-code"]
    proc = subprocess.run(
        [*cli, "--state-dir", str(box["state"]), "--stop-daemons"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0 and "stopped 1 hook daemon(s)" in proc.stdout
    assert not live_daemon_locks(box["run"]) and not list(box["run"].glob("*.sock"))


def test_a_broken_hook_command_never_blocks_the_tool(box: dict[str, Path]) -> None:
    """Exit status 2 would make Claude Code block the tool call; a bad option is a non-blocking 1."""
    proc = subprocess.run(
        [sys.executable, "-S", CLIENT, "--bogus"],
        input=json.dumps(_pre(1, *SCRIPT[0])),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1 and "unrecognized arguments: --bogus" in proc.stderr


# --------------------------------------------------------------------------- turned off


@pytest.mark.parametrize("how", ["env", "flag"])
def test_disabled_daemon_answers_in_process(box: dict[str, Path], how: str) -> None:
    kw: dict[str, Any] = (
        {"extra_env": {client.ENV_DAEMON: "0"}} if how == "env" else {"args": ("--no-daemon",)}
    )
    feed(box, SCRIPT[:4], **kw)
    denied, _ = hook(box, _pre(5, "Bash", {"command": "./submit"}), **kw)
    assert denied["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert status(box) == [] and not box["run"].exists()
    shown = read_summary(SID, str(box["config"]), str(box["state"]))
    assert shown is not None and shown["letters"] == "NRRP"


# --------------------------------------------------------------------------- the runner a daemon keeps


def test_long_lived_runner_and_hook_processes_interleave_without_loss(box: dict[str, Path]) -> None:
    """A daemon keeps sessions in memory between calls; whenever another process answered a call of the
    session meanwhile, it reads the session back from disk instead of using its stale copy."""
    store = SessionStore(box["state"])
    daemon_runner = HookRunner(str(box["config"]), store, long_lived=True)
    try:
        for n, (tool, inp) in enumerate(SCRIPT, 1):
            if n % 2:
                daemon_runner.handle(_pre(n, tool, inp))
                one_off = HookRunner(str(box["config"]), store)  # a hook process answering in-process
                one_off.handle(_post(n, tool, inp))
                one_off.close()
            else:
                daemon_runner.handle(_pre(n, tool, inp))
                daemon_runner.handle(_post(n, tool, inp))
        assert daemon_runner.cached_sessions() == 1
        assert daemon_runner.abandoned >= 2  # its copy went stale after each foreign call
        assert len(daemon_runner.guard) == 1  # the guard holds only what the runner keeps
    finally:
        daemon_runner.close()
    shown = read_summary(SID, str(box["config"]), str(box["state"]))
    assert shown is not None and (shown["letters"], shown["n_steps"]) == ("NRRPV", 5)
    assert journal(box) == ["pre", "post", "model"] * 5
    assert errors(box) == ""


def test_request_ids_make_a_repeated_call_count_once(box: dict[str, Path]) -> None:
    store = SessionStore(box["state"])
    daemon_runner = HookRunner(str(box["config"]), store, long_lived=True)
    try:
        for n, (tool, inp) in enumerate(SCRIPT[:4], 1):
            daemon_runner.handle(_pre(n, tool, inp))
            daemon_runner.handle(_post(n, tool, inp))
        submit = _pre(5, "Bash", {"command": "./submit"})
        first = daemon_runner.handle(submit, rid="r-5")
        assert first["hookSpecificOutput"]["permissionDecision"] == "deny"
        # The hook process gave up waiting and answers the same request in-process: same answer, once.
        one_off = HookRunner(str(box["config"]), store)
        assert one_off.handle(submit, rid="r-5") == first
        one_off.close()
        assert daemon_runner.handle(submit, rid="r-5") == first
        again = daemon_runner.handle(submit, rid="r-6")  # a new request is a new call
        assert again["hookSpecificOutput"]["permissionDecision"] == "deny"
    finally:
        daemon_runner.close()
    shown = read_summary(SID, str(box["config"]), str(box["state"]))
    assert shown is not None and shown["decision_counts"]["deny"] == 2


def test_long_lived_runner_serves_threads_of_one_session(box: dict[str, Path]) -> None:
    store = SessionStore(box["state"])
    runner = HookRunner(str(box["config"]), store, long_lived=True)
    n = 24
    barrier = threading.Barrier(n)

    def one(i: int) -> None:
        barrier.wait()
        inp = {"pattern": f"p{i}", "path": "/tmp/w"}
        runner.handle(_pre(100 + i, "Grep", inp))
        runner.handle(_post(100 + i, "Grep", inp))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    runner.close()
    shown = read_summary(SID, str(box["config"]), str(box["state"]))
    assert shown is not None and shown["n_steps"] == n
    assert sorted(journal(box)).count("post") == n
    assert errors(box) == ""
    assert not lock_is_held(box["state"] / (file_name(SID) + ".lock"))
