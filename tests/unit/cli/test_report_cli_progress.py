"""``planguard report``'s progress line: runs and the input's bytes on standard error, on a terminal or with
``--progress``, and nothing there otherwise."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
RUNS = REPO / "examples" / "trajectories" / "example_runs.jsonl"


def _report(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "planguard", "report", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_progress_counts_runs_and_bytes_when_asked(tmp_path: Path) -> None:
    for name in ("a.jsonl", "b.jsonl"):
        (tmp_path / name).write_bytes(RUNS.read_bytes())
    n_runs = 2 * sum(1 for line in RUNS.read_text().splitlines() if line.strip())
    proc = _report(str(tmp_path), "-o", str(tmp_path / "r.html"), "--progress", "-j", "1")
    assert proc.returncode == 0, proc.stderr
    total_kb = 2 * RUNS.stat().st_size / 1000
    assert f"/{total_kb:.1f} kB" in proc.stderr  # the input's bytes
    counts = [int(n) for n in re.findall(r"replayed (\d+) runs", proc.stderr)]
    assert counts and counts == sorted(counts) and counts[-1] == n_runs
    assert "<html" in (tmp_path / "r.html").read_text()


def test_no_progress_when_standard_error_is_not_a_terminal(tmp_path: Path) -> None:
    proc = _report(str(RUNS), "-o", str(tmp_path / "r.html"), "-j", "1")
    assert proc.returncode == 0
    assert proc.stderr == f"planguard report: 2 runs → {tmp_path / 'r.html'} (0.03 MB)\n"  # the summary only
