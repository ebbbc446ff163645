"""Shared by the Claude Code hook tests: hook payloads of a small scripted run, and a private runtime
directory per test for the hook daemons they start, with a teardown that stops those daemons (and checks
they are gone)."""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from planguard_claude_code import client

#: A run as (tool, input) pairs: navigate, write a test, run it (reproduce), patch, run it (validate).
SCRIPT: list[tuple[str, dict[str, Any]]] = [
    ("Read", {"file_path": "/tmp/w/calc.py"}),
    ("Bash", {"command": "cat > test_calc.py <<'EOF'\nassert 1\nEOF"}),
    ("Bash", {"command": "python3 test_calc.py"}),
    ("Edit", {"file_path": "/tmp/w/calc.py", "old_string": "-", "new_string": "+"}),
    ("Bash", {"command": "python3 test_calc.py"}),
]


def pre_tool_use(tool_use_id: str, tool: str, tool_input: dict[str, Any], sid: str) -> dict[str, Any]:
    """The stdin payload of a PreToolUse hook call."""
    return {
        "session_id": sid,
        "transcript_path": "/x.jsonl",
        "cwd": "/tmp/w",
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_use_id": tool_use_id,
    }


def post_tool_use(tool_use_id: str, tool: str, tool_input: dict[str, Any], sid: str) -> dict[str, Any]:
    """The stdin payload of the PostToolUse hook call that follows it."""
    return {
        **pre_tool_use(tool_use_id, tool, tool_input, sid),
        "hook_event_name": "PostToolUse",
        "tool_response": {"stdout": "", "stderr": ""},
        "duration_ms": 3,
    }


def lock_is_held(lock: Path) -> bool:
    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


def live_daemon_locks(run_dir: Path) -> list[Path]:
    """The lock files of daemons alive in ``run_dir`` (a daemon holds its lock exactly while it lives)."""
    if not run_dir.is_dir():
        return []
    return [p for p in sorted(run_dir.glob("cc-*.lock")) if lock_is_held(p)]


@contextmanager
def daemon_sandbox(*state_dirs: Path) -> Iterator[Path]:
    """A short private ``XDG_RUNTIME_DIR`` (socket paths are limited to ~100 bytes) for the daemons a
    test starts; on exit every daemon there is stopped and must be gone. Sets the variable in
    ``os.environ`` for the duration (subprocesses inherit it)."""
    runtime = Path(tempfile.mkdtemp(prefix="pgrt-"))
    runtime.chmod(0o700)
    saved = {k: os.environ.get(k) for k in ("XDG_RUNTIME_DIR", client.ENV_DAEMON, client.ENV_WATCH)}
    os.environ["XDG_RUNTIME_DIR"] = str(runtime)
    os.environ.pop(client.ENV_DAEMON, None)
    # Source files edited while tests run (a shared working tree) would restart the daemons mid-test;
    # test_code_change_makes_the_daemon_hand_over turns the watch back on.
    os.environ[client.ENV_WATCH] = "0"
    try:
        yield runtime / "planguard"
    finally:
        for state in (*state_dirs, runtime / "unused-state"):
            client.stop_daemons(str(state), wait_s=15.0)
        left = live_daemon_locks(runtime / "planguard")
        for state in state_dirs:
            left += live_daemon_locks(state / "run")
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        shutil.rmtree(runtime, ignore_errors=True)
        assert not left, f"hook daemons still running: {left}"
