"""``planguard replay``'s progress line (on standard error whenever it is a terminal, whatever the output
format: runs replayed and the input's bytes) and its answer to an input with no trajectories."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

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
    total_kb = 2 * RUNS.stat().st_size / 1000
    assert "replayed" in err and " runs" in err and f"/{total_kb:.1f} kB" in err  # the input's bytes


def test_one_large_file_advances_with_the_line_its_runs_reached(tmp_path: Path) -> None:
    """Runs named by their line of one JSON Lines file (SWE-agent, OpenHands) move the bar through that
    file's bytes, instead of a full bar from its first run."""
    from planguard.cli.progress import RunProgress

    big = tmp_path / "runs.jsonl"
    big.write_text("".join(f'{{"run": {i}, "pad": "{"x" * 90}"}}\n' for i in range(100)))
    progress = RunProgress([str(big)])
    seen = []
    for line in (1, 10, 50, 99, 100):
        progress.advance(f"run-{line}", f"{big}:{line}")
        seen.append(progress._progress.tasks[0].completed)
    total = progress._progress.tasks[0].total
    progress.close()
    assert total == big.stat().st_size
    assert seen == sorted(seen) and seen[0] < total / 50 and seen[2] == pytest.approx(total / 2, rel=0.02)
    assert seen[-1] == total


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
