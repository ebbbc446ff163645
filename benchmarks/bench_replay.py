"""Core hot-path figures on the 81 real SWE-agent runs (issue 2 acceptance):

* median / mean µs per event for classification + metrics (Session.observe, all 7 paper settings scored);
* the same with the full diagnostics pipeline (canonical actions + all detectors);
* in-process replay of the JSONL file (load + session) versus bare ``json.loads`` of the same lines.

Run: ``python benchmarks/bench_replay.py [PATH]``. Prints figures; asserts nothing.
"""

from __future__ import annotations

import gc
import json
import statistics
import sys
import time
from pathlib import Path

from planguard.loaders import Trajectory, iter_trajectories
from planguard.replay import replay, replay_pipeline, resolve_plans

DEFAULT = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "swe-agent" / "trajectories.jsonl"


def per_event(trajs: list[Trajectory], diagnostics: bool, repeats: int = 5) -> list[float]:
    pipeline = replay_pipeline(resolve_plans("paper-settings"), diagnostics=diagnostics)
    samples: list[float] = []
    clock = time.perf_counter_ns
    for _ in range(repeats):
        for t in trajs:
            session = pipeline.session(t.id)
            observe = session.observe
            for e in t.events:
                t0 = clock()
                observe(e)
                samples.append((clock() - t0) / 1000)
    return samples


def best_of(fn, n: int = 7) -> float:
    best = float("inf")
    for _ in range(n):
        gc.collect()
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    lines = path.read_bytes().splitlines()
    trajs = [t for t in iter_trajectories([path]) if isinstance(t, Trajectory)]
    n_events = sum(len(t.events) for t in trajs)
    print(f"{path.name}: {len(trajs)} runs, {n_events} events, {sum(map(len, lines)) / 1e6:.1f} MB")

    for diagnostics in (False, True):
        s = per_event(trajs, diagnostics)
        label = "phases+metrics+actions+detectors" if diagnostics else "phases+metrics (7 plans)"
        print(f"per event, {label:34s}: median {statistics.median(s):6.2f} µs   mean {statistics.fmean(s):6.2f} µs"
              f"   p99 {statistics.quantiles(s, n=100)[98]:6.2f} µs")

    t_json = best_of(lambda: [json.loads(line) for line in lines])
    plans = resolve_plans("paper-settings")
    for diagnostics in (False, True):
        pipeline = replay_pipeline(plans, diagnostics=diagnostics)
        t_replay = best_of(lambda p=pipeline: sum(1 for _ in replay([path], p)))
        label = "with diagnostics" if diagnostics else "phases+metrics"
        print(f"replay of the file ({label:16s}): {t_replay * 1e3:7.1f} ms  vs json.loads {t_json * 1e3:6.1f} ms"
              f"  → {t_replay / t_json:.2f}×")


if __name__ == "__main__":
    main()
