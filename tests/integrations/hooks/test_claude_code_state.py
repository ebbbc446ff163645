"""The hook's on-disk session state: concurrent hook processes, corrupt and stale files, bounds, pruning."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("planguard_claude_code")
from claude_hook_support import SCRIPT, daemon_sandbox, post_tool_use, pre_tool_use
from planguard_claude_code import client
from planguard_claude_code.hook import read_summary, run_hook
from planguard_claude_code.state import FORMAT, Op, SessionStore, file_name

from planguard.events import ToolEvent

SID = "0a4f9a5e-3f3e-4b8e-9d61-3d8f2b9c1e77"
CONFIG = """\
plan: plan
telemetry: {enabled: false}
store: {enabled: false}
policies:
  reminder: {enabled: false}
"""


def _pre(tid: str, tool: str, tool_input: dict[str, Any], sid: str = SID) -> dict[str, Any]:
    return pre_tool_use(tid, tool, tool_input, sid)


def _post(tid: str, tool: str, tool_input: dict[str, Any], sid: str = SID) -> dict[str, Any]:
    return post_tool_use(tid, tool, tool_input, sid)


@pytest.fixture
def setup(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "pg.yaml").write_text(CONFIG)
    return {"config": str(tmp_path / "pg.yaml"), "state_dir": str(tmp_path / "state")}


def _feed(setup: dict[str, str], script: list[tuple[str, dict[str, Any]]] = SCRIPT, start: int = 1) -> None:
    for n, (tool, inp) in enumerate(script, start):
        run_hook(_pre(f"toolu_{n:02d}", tool, inp), **setup)
        run_hook(_post(f"toolu_{n:02d}", tool, inp), **setup)


def _paths(setup: dict[str, str], sid: str = SID) -> tuple[Path, Path]:
    base = Path(setup["state_dir"]) / file_name(sid)
    return base.with_name(base.name + ".snap"), base.with_name(base.name + ".log")


def _errors(setup: dict[str, str]) -> str:
    path = Path(setup["state_dir"]) / "hook-errors.log"
    return path.read_text() if path.exists() else ""


def test_state_survives_across_calls_and_matches_in_memory(setup: dict[str, str]) -> None:
    _feed(setup)
    shown = read_summary(SID, **setup)
    assert shown is not None
    assert (shown["letters"], shown["n_steps"], shown["journal_complete"]) == ("NRRPV", 5, True)
    assert _errors(setup) == ""
    snap, log = _paths(setup)
    assert oct(Path(setup["state_dir"]).stat().st_mode & 0o777) == "0o700"
    assert snap.stat().st_mode & 0o077 == 0 and log.stat().st_mode & 0o077 == 0
    ops = [Op.from_json(line).kind for line in log.read_text().splitlines()]
    assert ops == ["pre", "post", "model"] * 5


@pytest.mark.parametrize("daemon", [True, False], ids=["daemon", "no-daemon"])
def test_concurrent_hook_processes_lose_no_event(setup: dict[str, str], daemon: bool) -> None:
    """Parallel tool calls: Claude Code runs their hooks as concurrent processes on one session. With the
    daemon, twelve hook processes arriving at once start exactly one and all are answered by it."""
    n = 12

    def one(i: int) -> int:
        payload = _pre(f"toolu_c{i:02d}", "Grep", {"pattern": f"p{i}", "path": "/tmp/w"})
        cmd = [
            sys.executable,
            "-m",
            "planguard",
            "hook",
            "claude-code",
            "--config",
            setup["config"],
            "--state-dir",
            setup["state_dir"],
        ]
        env = {**os.environ, client.ENV_DAEMON: "1" if daemon else "0"}
        return subprocess.run(
            cmd, input=json.dumps(payload), capture_output=True, text=True, timeout=120, env=env
        ).returncode

    with daemon_sandbox(Path(setup["state_dir"])) as run_dir:
        with ThreadPoolExecutor(max_workers=n) as pool:
            assert list(pool.map(one, range(n))) == [0] * n
        daemons = client.daemon_status(setup["state_dir"])
        if daemon:
            assert len(daemons) == 1 and daemons[0]["served"] == n, daemons
            assert len(list(run_dir.glob("*.sock"))) == 1
        else:
            assert daemons == [] and not run_dir.exists()
    shown = read_summary(SID, **setup)
    assert shown is not None and shown["n_steps"] == n
    _, log = _paths(setup)
    assert len(log.read_text().splitlines()) == n
    assert _errors(setup) == ""


@pytest.mark.parametrize("garbage", [b"", b"\x80\x04not a pickle", b"x" * 10_000])
def test_corrupt_snapshot_is_rebuilt_from_the_journal(setup: dict[str, str], garbage: bytes) -> None:
    _feed(setup, SCRIPT[:3])
    snap, _ = _paths(setup)
    snap.write_bytes(garbage)
    _feed(setup, [("Read", {"file_path": "/tmp/w/x.py"})], start=4)  # goes on working
    shown = read_summary(SID, **setup)
    assert shown is not None
    assert shown["letters"] == "NRRN" and shown["n_steps"] == 4
    assert "snapshot corrupt" in _errors(setup)


def test_corrupt_journal_lines_are_skipped_and_reported(setup: dict[str, str]) -> None:
    _feed(setup, SCRIPT[:2])
    snap, log = _paths(setup)
    snap.unlink()
    with open(log, "a") as f:
        f.write('{"op": "pre", "e": \n')  # a torn line
    shown = read_summary(SID, **setup)
    assert shown is not None and shown["letters"] == "NR" and shown["journal_complete"] is False
    assert "skipped unreadable journal line" in _errors(setup)


def test_both_files_corrupt_starts_afresh_without_failing(setup: dict[str, str]) -> None:
    _feed(setup, SCRIPT[:2])
    snap, log = _paths(setup)
    snap.write_bytes(b"junk")
    log.write_text("junk\n")
    answer = run_hook(_pre("toolu_09", "Read", {"file_path": "/a.py"}), **setup)
    assert answer == {}
    shown = read_summary(SID, **setup)
    assert shown is not None and shown["n_steps"] == 1


def test_stale_snapshot_after_config_change_is_rebuilt(setup: dict[str, str], tmp_path: Path) -> None:
    _feed(setup, SCRIPT[:4])
    Path(setup["config"]).write_text(CONFIG.replace("plan: plan", "plan: no_reproduce"))
    run_hook(_pre("toolu_05", "Bash", {"command": "python3 test_calc.py"}), **setup)
    run_hook(_post("toolu_05", "Bash", {"command": "python3 test_calc.py"}), **setup)
    shown = read_summary(SID, **setup)
    assert shown is not None and shown["letters"] == "NRRPV"
    assert list(shown["metrics"]) == ["no_reproduce"]
    assert "snapshot stale" in _errors(setup)


def test_snapshot_from_another_format_version_is_rebuilt(setup: dict[str, str]) -> None:
    _feed(setup, SCRIPT[:2])
    snap, _ = _paths(setup)
    old = pickle.loads(snap.read_bytes())
    old.format = FORMAT + 99
    snap.write_bytes(pickle.dumps(old))
    shown = read_summary(SID, **setup)
    assert shown is not None and shown["letters"] == "NR"


def test_state_is_bounded(setup: dict[str, str], tmp_path: Path) -> None:
    big = "x = 1\n" * 200_000  # a 1.2 MB file written with Write
    run_hook(_pre("toolu_01", "Write", {"file_path": "/tmp/w/gen.py", "content": big}), **setup)
    snap, log = _paths(setup)
    assert snap.stat().st_size < 64_000
    # The journal has a byte budget; past it the snapshot carries on alone.
    store = SessionStore(setup["state_dir"], max_log_bytes=log.stat().st_size + 10)
    with store.open(SID) as stored:
        stored.record(Op("pre", ToolEvent("Read", {"file_path": "/a"})))
        stored.save("fp", {}, {}, True)
        assert stored.journal()[1] is False


def test_prune_drops_idle_and_excess_sessions(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s", max_sessions=3, ttl_s=3600)
    for i in range(6):
        with store.open(f"s{i}") as stored:
            stored.record(Op("model"))
            stored.save("fp", {}, {}, True)
    old = time.time() - 7200
    for p in (tmp_path / "s").glob("s0.*"):
        os.utime(p, (old, old))
    for i, p in enumerate(sorted((tmp_path / "s").glob("s[1-5].*"))):
        os.utime(p, (time.time() - 10 * (10 - i), time.time() - 10 * (10 - i)))
    store.prune(keep=["s1"])
    left = {p.name.split(".")[0] for p in (tmp_path / "s").iterdir()}
    assert "s0" not in left and "s1" in left and len(left) <= 4


def test_lock_wait_is_bounded(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s", lock_timeout_s=0.2)
    with store.open("k"), pytest.raises(TimeoutError, match="lock held"), store.open("k"):
        pass


def test_state_directory_must_be_private(tmp_path: Path) -> None:
    d = tmp_path / "shared"
    d.mkdir(mode=0o777)
    d.chmod(0o777)
    with pytest.raises(PermissionError, match="not writable by others"), SessionStore(d).open("k"):
        pass


def _store_records(store_dir: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line) for f in sorted(store_dir.glob("*.jsonl")) for line in f.read_text().splitlines()
    ]


def test_sessions_with_sinks_are_saved_and_sinks_see_every_call(tmp_path: Path) -> None:
    """With telemetry and the local store on (the defaults), a session's snapshot holds its state, not its
    sinks (they have locks and threads), and a session rebuilt from its journal reports to the sinks."""
    store_dir = tmp_path / "store"
    config = tmp_path / "pg.yaml"
    config.write_text(
        CONFIG.replace("store: {enabled: false}", f"store: {{enabled: true, path: '{store_dir}'}}").replace(
            "telemetry: {enabled: false}", "telemetry: {enabled: true}"
        )
    )
    setup = {"config": str(config), "state_dir": str(tmp_path / "state")}
    _feed(setup, SCRIPT[:3])
    snap, _ = _paths(setup)
    assert 0 < snap.stat().st_size < 64_000
    snap.write_bytes(b"junk")  # the next call rebuilds the session from its journal
    _feed(setup, SCRIPT[3:], start=4)
    assert "cannot pickle" not in _errors(setup) and "snapshot corrupt" in _errors(setup)
    shown = read_summary(SID, **setup)
    assert shown is not None and (shown["letters"], shown["n_steps"]) == ("NRRPV", 5)
    steps = [r["index"] for r in _store_records(store_dir) if r["type"] == "step"]
    assert sorted(steps) == [0, 1, 2, 3, 4]  # each step reached the store once, rebuilt or not
