"""``planguard replay``'s progress line (on standard error whenever it is a terminal, whatever the output
format, with the number of input files as its total) and its answer to an input with no trajectories."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
RUNS = REPO / "examples" / "trajectories" / "example_runs.jsonl"


def _replay_with_a_terminal_on_stderr(*args: str) -> tuple[int, str, str]:
    leader, follower = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TERM")} | {"TERM": "xterm"}
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "planguard", "replay", *args],
            stdout=subprocess.PIPE,
            stderr=follower,
            text=True,
            env=env,
            timeout=300,
            check=False,
        )
    finally:
        os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # the terminal is closed and drained
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    return proc.returncode, proc.stdout, b"".join(chunks).decode("utf-8", "replace")


def test_progress_with_a_total_on_a_terminal_even_for_jsonl_output(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    for name in ("a.jsonl", "b/c.jsonl"):
        (tmp_path / name).write_bytes(RUNS.read_bytes())
    code, out, err = _replay_with_a_terminal_on_stderr(str(tmp_path), "--format", "jsonl")
    assert code == 0, err
    assert out.count("\n") == 2 * RUNS.read_text().count("\n")  # every run of both files, as JSON Lines
    assert "replayed" in err and "/2" in err and "files" in err  # the total is the number of input files


def test_no_progress_when_standard_error_is_not_a_terminal(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "planguard", "replay", str(RUNS), "--format", "jsonl"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0 and proc.stderr == ""


def test_an_empty_directory_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not a trajectory")
    proc = subprocess.run(
        [sys.executable, "-m", "planguard", "replay", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert f"planguard replay: no trajectories found in {tmp_path}" in proc.stderr
