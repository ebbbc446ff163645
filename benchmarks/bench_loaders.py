"""Replay cost of the shared SWE-agent JSONL corpus: planguard's loader vs a bare ``json.loads`` per line.

The budget is loader <= 2x json.loads: replaying a corpus through the monitors must not be dominated
by reading it. Both sides read the file line by line from the page cache; the best of N rounds is
reported because the minimum is the least noisy estimate of the intrinsic cost.

    python benchmarks/bench_loaders.py [path/to/trajectories.jsonl] [--rounds N]
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from planguard.offline.loaders import LoadError, iter_trajectories  # noqa: E402

DEFAULT = ROOT.parent / "shared" / "data" / "swe-agent" / "trajectories.jsonl"
BUDGET = 2.0


def bare_json(path: Path) -> int:
    count = 0
    with path.open("rb") as handle:
        for raw in handle:
            if not raw.isspace():
                json.loads(raw)
                count += 1
    return count


def loader(path: Path) -> int:
    events = 0
    for item in iter_trajectories([path]):
        if isinstance(item, LoadError):
            raise SystemExit(f"unexpected load error: {item}")
        events += len(item.events)
    return events


def best_of(rounds: int, func: Callable[[Path], int], path: Path) -> tuple[float, int]:
    best = float("inf")
    result = 0
    for _ in range(rounds):
        gc.collect()
        start = time.perf_counter()
        result = func(path)
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("path", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    if not args.path.is_file():
        print(f"corpus not found: {args.path}", file=sys.stderr)
        return 2

    size_mb = args.path.stat().st_size / 1e6
    loader(args.path)  # warm the page cache and the imports
    json_time, n_lines = best_of(args.rounds, bare_json, args.path)
    load_time, n_events = best_of(args.rounds, loader, args.path)
    ratio = load_time / json_time
    print(f"corpus        {args.path} ({size_mb:.1f} MB, {n_lines} runs, {n_events} events)")
    print(f"json.loads    {json_time * 1e3:8.1f} ms  (best of {args.rounds})")
    print(f"loader        {load_time * 1e3:8.1f} ms  (best of {args.rounds})")
    print(f"ratio         {ratio:8.2f}x  (budget {BUDGET:.1f}x: {'ok' if ratio <= BUDGET else 'OVER'})")
    return 0 if ratio <= BUDGET else 1


if __name__ == "__main__":
    raise SystemExit(main())
