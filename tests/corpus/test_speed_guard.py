"""The speed guard: the default ``Guard()`` under an installed, exporting OpenTelemetry SDK, on the 81 shared
runs' first-seen calls, in instructions per call against a bare span carrying the same attributes
(``benchmarks/bench_guard.py``'s ``sdk`` and ``bare`` figures, counted by callgrind: load-independent).

The issue-34 target is 2 bare spans per call; the code measures 4.87 (runs differ by about 1 %: the
background threads' batches follow the wall clock) after the merge of the one reading, the run model,
conversation turns, the store's completeness records (4.64-4.75 up to there, 4.14 before them; see README,
Cost) and the store's argument facts for metadata-only replays (about 29k instructions a call, on the
writer's thread), so this guards against regressions from there, not the target."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
#: Bare spans per call the sdk variant may cost: the measured figure and 5 % of room for interpreter builds.
CEILING = 5.11

pytestmark = pytest.mark.slow


def test_default_guard_under_an_exporting_sdk_stays_under_its_ceiling(shared: Path) -> None:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import _callgrind
        import bench_guard
    finally:
        sys.path.remove(str(BENCHMARKS))
    reason = _callgrind.missing()
    if reason is not None:
        pytest.skip(f"counting instructions needs valgrind and a C compiler: {reason}")
    figures = bench_guard.per_call(["bare", "sdk"], ["shared"])["shared"]
    spans = figures["sdk"] / figures["bare"]
    assert spans <= CEILING, f"{spans:.2f} bare spans per call ({figures})"
