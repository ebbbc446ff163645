"""Shared by the Claude Code hook tests: a private runtime directory per test for the hook daemons they
start, and a teardown that stops those daemons (and checks they are gone)."""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from planguard_claude_code import client


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
