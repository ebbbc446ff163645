"""A store that tells the truth (issue #32): a session whose records were dropped replays as partial with
the count and a non-zero exit; ``durability: block`` loses nothing at pace 0; a write that fails on a full
disk (a real tmpfs filled to the last byte) leaves no partial line and no empty file; a ``multiprocessing``
fork Pool's children and a SIGHUP flush what they recorded; a JSONL file with a bad line or a NUL tail keeps
its good lines; a YAML trajectory cut short is reported. Real processes, real files, the real CLI."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from planguard.config import Config
from planguard.events import ToolEvent
from planguard.guard import Guard
from planguard.offline.loaders.planguard_store import iter_sessions
from planguard.sinks.store import StoreSink

N_STEPS = 5


def guard_for(store: Path, **store_settings: Any) -> Guard:
    return Guard(
        Config.model_validate(
            {
                "telemetry": {"enabled": False},
                "policies": {"reminder": {"enabled": False}},
                "store": {"path": str(store), **store_settings},
            }
        )
    )


def record(guard: Guard, sid: str, n: int = N_STEPS) -> None:
    for i in range(n):
        guard.after_tool(
            sid, ToolEvent("bash", {"command": f"cat f{i}.py"}, call_id=f"{sid}-{i}", result="ok")
        )
    guard.end(sid)


def replay(*paths: Path) -> tuple[int, list[dict[str, Any]], str]:
    p = subprocess.run(
        [sys.executable, "-m", "planguard", "replay", *map(str, paths), "--format", "jsonl"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    return p.returncode, [json.loads(line) for line in p.stdout.splitlines()], p.stderr


# --------------------------------------------------------------------------- completeness at replay


def test_a_session_with_dropped_steps_replays_partial_with_the_count_and_fails(tmp_path: Path) -> None:
    store = tmp_path / "s"
    guard = guard_for(store)
    record(guard, "whole")
    record(guard, "dropped")
    guard.shutdown()
    (f,) = [p for p in store.glob("*.jsonl") if "dropped" in p.name]
    lines = f.read_text().splitlines()
    # Two step records lost as a full queue loses them: the end record still counts five steps.
    f.write_text(
        "\n".join(line for line in lines if '"index":1,' not in line and '"index":3,' not in line) + "\n"
    )
    code, records, err = replay(store)
    assert code != 0
    by_id = {r["id"]: r for r in records}
    assert by_id["dropped"]["meta"]["partial"] is True and by_id["dropped"]["meta"]["missing_steps"] == 2
    assert "partial" not in by_id["whole"]["meta"]
    assert f"{f}: session 'dropped' is partial: 2 of its 5 steps are missing" in err


# --------------------------------------------------------------------------- load: block vs drop


@pytest.mark.slow
def test_a_thousand_sessions_at_pace_0_block_loses_nothing_and_drop_shows_every_loss(tmp_path: Path) -> None:
    blocked = guard_for(tmp_path / "block", max_queue=16, durability="block")
    for i in range(1000):
        record(blocked, f"b{i}")
    blocked.shutdown()
    assert blocked.stats()["dropped"] == {}
    sessions = [s for s in iter_sessions(tmp_path / "block") if not isinstance(s, Exception)]
    assert len(sessions) == 1000
    assert all(s.complete and len(s.steps) == N_STEPS and not s.errors for s in sessions)

    dropping = guard_for(tmp_path / "drop", max_queue=16)
    for i in range(1000):
        record(dropping, f"d{i}")
    dropping.shutdown()
    dropped = dropping.stats()["dropped"].get("store_queue_full", 0)
    assert dropped > 0  # pace 0 against a 16-record queue
    code, records, err = replay(tmp_path / "drop")
    assert code != 0
    # Every session is there (its end record is never dropped: it counts what the session lost), and every
    # loss shows in replay: each session short of steps is partial, and the records the sessions say they
    # lost add up to the drop counter.
    assert len(records) == 1000
    for r in records:
        short = N_STEPS - r["n_steps"]
        assert short == r["meta"].get("missing_steps", 0)
        if short or r["meta"].get("dropped_records"):
            assert r["meta"]["partial"] is True
    assert sum(r["meta"].get("dropped_records", 0) for r in records) == dropped
    assert sum(N_STEPS - r["n_steps"] for r in records) > 0
    lossy = [r for r in records if r["meta"].get("missing_steps") or r["meta"].get("dropped_records")]
    assert err.count("is partial") == len(lossy) > 0


# --------------------------------------------------------------------------- a full disk


@pytest.fixture
def full_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A real 64 KiB tmpfs (root only; skipped elsewhere)."""
    mnt = tmp_path / "tmpfs"
    mnt.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], capture_output=True)
    if p.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {p.stderr.decode().strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_a_full_disk_leaves_no_partial_line_and_no_empty_file(full_tmpfs: Path) -> None:
    store = full_tmpfs / "sessions"
    guard = guard_for(store, content=True)  # with content: big lines fill the disk fast
    big = "x" * 3000
    for i in range(60):
        sid = f"s{i}"
        for j in range(4):
            guard.after_tool(
                sid, ToolEvent("bash", {"command": f"echo {j}"}, call_id=f"{sid}-{j}", result=big)
            )
        guard.end(sid)
    guard.shutdown()
    (sink,) = [s for s in guard.pipeline.sinks if isinstance(s, StoreSink)]
    assert sink.drops["store_write_failed"] > 0  # the disk did fill up
    assert guard.stats()["dropped"]["store_write_failed"] == sink.drops["store_write_failed"]
    files = list(store.glob("*.jsonl"))
    assert files
    for f in files:
        data = f.read_bytes()
        assert data, f"{f.name} is empty"
        assert data.endswith(b"\n"), f"{f.name} ends in a partial line"
        for line in data.splitlines():
            json.loads(line)  # every line whole


# --------------------------------------------------------------------------- processes ending


POOL = """\
import multiprocessing, sys
from planguard.config import Config
from planguard.events import ToolEvent
from planguard.guard import Guard

guard = Guard(Config.model_validate({
    "telemetry": {"enabled": False}, "policies": {"reminder": {"enabled": False}},
    "store": {"path": sys.argv[1]},
}))

def work(n):
    sid = f"child-{n}"
    for i in range(5):
        guard.after_tool(sid, ToolEvent("bash", {"command": f"ls {i}"}, call_id=f"{sid}-{i}"))
    guard.end(sid)
    return n

if __name__ == "__main__":
    pool = multiprocessing.get_context("fork").Pool(2)
    assert sorted(pool.map(work, range(8))) == list(range(8))
    pool.close()
    pool.join()  # the children end through os._exit: no atexit
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_multiprocessing_fork_pool_keeps_what_its_children_recorded(tmp_path: Path) -> None:
    script = tmp_path / "pool.py"
    script.write_text(POOL)
    subprocess.run([sys.executable, str(script), str(tmp_path / "s")], check=True, timeout=120)
    sessions = [s for s in iter_sessions(tmp_path / "s") if not isinstance(s, Exception)]
    assert sorted(s.id for s in sessions) == [f"child-{n}" for n in range(8)]
    assert all(s.complete and len(s.steps) == 5 for s in sessions)


HUP = """\
import os, signal, sys
from planguard.config import Config
from planguard.events import ToolEvent
from planguard.guard import Guard

guard = Guard(Config.model_validate({
    "telemetry": {"enabled": False}, "store": {"path": sys.argv[1]},
}))
for i in range(50):
    guard.after_tool("hup", ToolEvent("bash", {"command": f"ls {i}"}, call_id=f"c{i}"))
os.kill(os.getpid(), signal.SIGHUP)
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX signals")
def test_sighup_flushes_the_queue_and_still_ends_the_process(tmp_path: Path) -> None:
    script = tmp_path / "hup.py"
    script.write_text(HUP)
    p = subprocess.run([sys.executable, str(script), str(tmp_path / "s")], timeout=60)
    assert p.returncode == -1  # ended by SIGHUP, as without planguard
    (session,) = [s for s in iter_sessions(tmp_path / "s") if not isinstance(s, Exception)]
    assert len(session.steps) == 50


KILLED = """\
import os, sys
from planguard.config import Config
from planguard.events import ToolEvent
from planguard.guard import Guard

store, durability, how = sys.argv[1:4]
guard = Guard(Config.model_validate({
    "telemetry": {"enabled": False}, "policies": {"reminder": {"enabled": False}},
    "store": {"path": store, "durability": durability},
}))
for i in range(200):
    guard.after_tool("killed", ToolEvent("bash", {"command": f"cat f{i}.py"}, call_id=f"c{i}", result="ok"))
if how == "os._exit":
    os._exit(0)  # no atexit, no finalizer: nothing can run after this
print("recorded", flush=True)
sys.stdin.read()  # until the parent kills this process (SIGKILL)
"""


def run_killed(tmp_path: Path, durability: str, how: str) -> Path:
    """A real process that records 200 calls of one session, then ends by ``os._exit(0)`` or is killed
    by its parent with SIGKILL, before the session ends; its store."""
    script = tmp_path / "killed.py"
    script.write_text(KILLED)
    store = tmp_path / f"s-{durability}-{how}"
    with subprocess.Popen(
        [sys.executable, str(script), str(store), durability, how],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as p:
        if how == "SIGKILL":
            assert p.stdout is not None and p.stdout.readline() == "recorded\n"
            p.kill()
        p.wait(timeout=120)
    assert p.returncode == (-signal.SIGKILL if how == "SIGKILL" else 0)
    return store


@pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX signals")
@pytest.mark.parametrize("how", ["os._exit", "SIGKILL"])
def test_durability_write_keeps_every_call_recorded_before_a_kill(tmp_path: Path, how: str) -> None:
    store = run_killed(tmp_path, "write", how)
    (session,) = [s for s in iter_sessions(store) if not isinstance(s, Exception)]
    assert [s.index for s in session.steps] == list(range(200)) and session.end is None
    # Replay reads every call and says the session has no end record, with what it read (not a failure).
    code, (rec,), err = replay(store)
    assert code == 0 and rec["n_steps"] == 200 and rec["meta"]["partial"] is True
    assert "session 'killed' has no end record: 200 steps and 0 denied calls were read" in err


@pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX signals")
@pytest.mark.parametrize("how", ["os._exit", "SIGKILL"])
def test_a_kill_with_the_default_durability_loses_only_what_was_queued_and_shows_it(
    tmp_path: Path, how: str
) -> None:
    """``durability: drop`` (the default) writes in the background: a kill loses what was still queued
    (at most the queue; here usually all 200 calls, written every 0.2 s). The session's header is written
    when it starts, so the session is in the store all the same, its file whole, and replay says it has no
    end record and how many of its calls it read."""
    store = run_killed(tmp_path, "drop", how)
    (session,) = [s for s in iter_sessions(store) if not isinstance(s, Exception)]
    n = len(session.steps)
    assert session.end is None and [s.index for s in session.steps] == list(range(n))
    code, (rec,), err = replay(store)
    assert code == 0 and rec["meta"]["partial"] is True and rec["n_steps"] == n
    assert f"session 'killed' has no end record: {n} steps and 0 denied calls were read" in err


# --------------------------------------------------------------------------- damaged files


def test_a_bad_line_and_a_nul_tail_cost_only_their_lines(tmp_path: Path) -> None:
    store = tmp_path / "s"
    guard = guard_for(store)
    record(guard, "damaged")
    guard.shutdown()
    (f,) = store.glob("*.jsonl")
    lines = f.read_bytes().splitlines(keepends=True)
    lines.insert(2, b'{"type": "step", "index": \xff\xfe broken\n')  # a bad byte in the first 8 KB
    f.write_bytes(b"".join(lines) + b"\x00" * 4096)  # and the NUL tail a cut write leaves on some filesystems
    code, records, err = replay(f)
    assert code != 0
    (r,) = records
    assert r["id"] == "damaged" and r["n_steps"] == N_STEPS
    assert f"{f}:3:" in err and f"{f}:{len(lines) + 1}:" in err  # each error names the file and line


def test_a_yaml_trajectory_cut_short_is_reported(tmp_path: Path, shared: Path) -> None:
    demo = shared / "data" / "realtraj" / "swe-agent" / "demo_str_replace_anthropic.yaml"
    if not demo.is_file():
        pytest.skip("the SWE-agent demo is not in the shared data")
    text = demo.read_text()
    cut = tmp_path / "demo.yaml"
    at = text.rfind("\n", 0, len(text) * 2 // 3) + 12
    cut.write_text(text[:at])
    code, records, err = replay(cut)
    assert code != 0
    assert "cut short" in err
    assert records and records[0]["meta"].get("partial") is True


# --------------------------------------------------------------------------- replay under the recorded plan

DECLARED = {
    "name": "refund-flow",
    "phases": [
        {"id": "identify", "symbol": "I", "name": "Identify", "match": {"tool": "find_customer*"}},
        {"id": "lookup", "symbol": "L", "name": "Look up", "match": {"tool": "get_order"}},
        {"id": "act", "symbol": "A", "name": "Act", "match": {"tool": "refund_order"}},
    ],
}


def test_a_stored_session_replays_under_the_plan_it_recorded(tmp_path: Path) -> None:
    """``planguard replay .planguard/sessions`` without --config: a declared plan's session gets its own
    letters and scores, not XXX against the coding plan."""
    guard = Guard(
        Config.model_validate(
            {"telemetry": {"enabled": False}, "plan": DECLARED, "store": {"path": str(tmp_path / "s")}}
        )
    )
    for i, tool in enumerate(["find_customer_by_email", "get_order", "refund_order"]):
        guard.after_tool("support", ToolEvent(tool, {"q": "x"}, call_id=f"c{i}"))
    live = guard.end("support")
    guard.shutdown()
    assert live is not None and live.letters == "ILA"
    code, records, err = replay(tmp_path / "s")
    assert code == 0, err
    (r,) = records
    assert r["letters"] == "ILA"
    assert list(r["metrics"]) == ["refund-flow"]
    assert r["metrics"]["refund-flow"] == live.scores["refund-flow"].as_dict()
