"""Experiment analysis benchmark and simulation coverage study.

    python benchmarks/bench_experiment.py              # bootstrap timing, 1000 tasks × 3 conds × 3 repeats
    python benchmarks/bench_experiment.py --coverage   # full coverage study (--sims N, --clusters N)

Target: 10,000 cluster-bootstrap resamples over 1,000 tasks × 3 conditions × 3 repeats in ≤ 2 s.
"""

from __future__ import annotations

import argparse
import time

from planguard.experiment.analysis import analyze
from planguard.experiment.simulate import SimSpec, simulate, true_effects

NAMES = ("D_A", "R_A", "G_A", "D_B", "R_B", "G_B")


def bench(resamples: int, rounds: int) -> None:
    # 1000 tasks in 250 clusters (4 tasks each), 3 repeats per task and condition.
    spec = SimSpec(clusters=250, tasks_per_cluster=4, plan_repeats=3, none_repeats=3)
    episodes = simulate(spec, seed=1)
    print(f"{len(episodes)} episodes, 1000 tasks × 3 conditions × 3 repeats, 250 clusters")
    for cluster in ("cluster", "task"):
        times = []
        for i in range(rounds):
            t0 = time.perf_counter()
            r = analyze(episodes, cluster=cluster, resamples=resamples, seed=i)
            times.append(time.perf_counter() - t0)
        times.sort()
        print(
            f"  analyze (clusters by {cluster}: {r.n_clusters}), {resamples} resamples: "
            f"median {times[len(times) // 2]:.3f} s, min {times[0]:.3f} s, max {times[-1]:.3f} s"
        )


def coverage(sims: int, clusters: int, resamples: int) -> None:
    spec = SimSpec(clusters=clusters)
    truth = true_effects(spec)
    covered = dict.fromkeys(NAMES, 0)
    t0 = time.perf_counter()
    for s in range(sims):
        r = analyze(simulate(spec, seed=10_000 + s), resamples=resamples, seed=s)
        for n in NAMES:
            e = r.get(n)
            covered[n] += e.lo is not None and e.hi is not None and e.lo <= truth[n] <= e.hi
    print(
        f"coverage over {sims} simulations, {clusters} clusters × 2 tasks, plans ×2 / none ×1, "
        f"{resamples} resamples ({time.perf_counter() - t0:.1f} s)"
    )
    for n in NAMES:
        k = covered[n]
        se = (k / sims * (1 - k / sims) / sims) ** 0.5
        share = f"{100 * k / sims:.1f} % (± {100 * 1.96 * se:.1f})"
        print(f"  {n}: true {truth[n]:.2f} pp, covered {k}/{sims} = {share}")


def hot_path(n: int = 20_000) -> None:
    """Per-call cost of the experiment policy on the live path (window open: matchers run on every call)."""
    from planguard.config import Config
    from planguard.events import ToolEvent
    from planguard.experiment import ExperimentConfig, ExperimentPolicy
    from planguard.guard import Guard

    exp = ExperimentConfig.model_validate(
        {
            "arms": [
                {"name": "a", "condition": "A", "plan": "orders first"},
                {"name": "n", "condition": "none"},
            ],
            "targets": {
                "A": [{"tool": "list_orders", "args": [{"key": "user", "glob": "u*"}]}],
                "B": [{"tool": "list_payment*"}],
            },
            "ignore": [{"tool": "find_*"}],
            "writes": [{"tool": "cancel*"}],
            "window": {"budget": 10**9},
            "results": "/tmp/planguard-bench-experiment.jsonl",
        }
    )
    base = {"telemetry": {"enabled": False}, "store": {"enabled": False}}
    for label, cfg in (
        ("without experiment", Config(**base)),
        ("with experiment", Config(experiment=exp, **base)),
    ):
        guard = Guard(cfg)
        guard.session("s", arm="a")
        ev = ToolEvent("find_user", {"email": "a@b"})  # preparation: the window stays open
        times = []
        for _ in range(n):
            t0 = time.perf_counter_ns()
            guard.before_tool("s", ev)
            guard.after_tool("s", ev)
            times.append(time.perf_counter_ns() - t0)
        times.sort()
        print(
            f"  before_tool+after_tool {label}: median {times[n // 2] / 1000:.2f} µs, "
            f"p99 {times[int(n * 0.99)] / 1000:.2f} µs"
        )
        policy = guard.pipeline.policies[0]
        if isinstance(policy, ExperimentPolicy):  # the policy's own share, without the pipeline around it
            session, state = guard.session("s"), policy.new_state()
            step = guard.after_tool("s", ev)
            assert step is not None
            t0 = time.perf_counter_ns()
            for _ in range(n):
                policy.before_tool(step, session, state)
                policy.after_tool(step, session, state)
            per_call = (time.perf_counter_ns() - t0) / n / 1000
            print(f"  ExperimentPolicy.before_tool+after_tool alone: {per_call:.2f} µs")
        guard.shutdown()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--coverage", action="store_true")
    ap.add_argument("--sims", type=int, default=1000)
    ap.add_argument("--clusters", type=int, default=30)
    ap.add_argument("--resamples", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    if args.coverage:
        coverage(args.sims, args.clusters, min(args.resamples, 2000))
    else:
        bench(args.resamples, args.rounds)
        hot_path()


if __name__ == "__main__":
    main()
