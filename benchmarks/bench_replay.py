"""Offline replay of the 81 real SWE-agent runs against bare ``json.loads`` of the same file.

    python benchmarks/bench_replay.py [PATH] [--repeat 7] [--instructions] | --stages
    python benchmarks/bench_replay.py --parallel | --loaders | --report | --from-store | --experiment

Acceptance: replaying the JSONL file (load + phase classification + metrics, all 7 paper plans scored)
takes at most twice as long as ``json.loads`` of its lines.

* **per event**: ``Session.observe`` timed per event, median / mean / p99 µs (per-event minimum over the
  repeats), for phases + metrics and with the diagnostics (canonical actions + all detectors);
* **whole file**: ``replay()`` of the file, best of ``--repeat``, against ``json.loads`` of its lines (the
  acceptance yardstick: every ratio is to it) and against the loader alone (``iter_trajectories``, which
  replay includes); ``orjson.loads`` of the lines, which the loader uses when orjson is installed, is a
  second reference line.

``--instructions`` (needs valgrind) adds the whole-file ratios as instructions executed, counted by callgrind:
deterministic where the wall clock of a shared machine is not (~2 minutes). ``--stages`` (valgrind) counts
where a cold replay with diagnostics spends: the loader, the paper rules alone, the action classifier alone,
the whole replay of the loaded runs, and the rest (detectors, metrics, session), each against ``json.loads``.

**cold** replays start from new stage objects (empty parse memos), as ``planguard replay`` in a new
process does; **warm** replays reuse one pipeline, so every action after the first repeat is a memo hit.

Other figures, one flag each:

* ``--parallel [--runs 17000] [--jobs N]`` — ``planguard replay -j`` on every core: a corpus of ``--runs``
  runs made by duplicating the shared runs (new ids) into one JSONL file in a temporary folder, replayed by
  the CLI with ``-j 1`` and ``-j N`` (default: every core), output discarded; wall time, runs per second
  per core, the speed-up (target ≥ 1.8× on 2 cores), the largest process' resident set, and what that rate
  makes of a million runs on 64 cores. Wall time: the load average is printed beside it;
* ``--loaders [--rounds 15]`` — the loader (``iter_trajectories``) against ``json.loads`` of the file's
  lines (budget ≤ 2×);
* ``--report [--runs 10000] [--shards 8] [--jobs N]`` — ``planguard report``'s build over a synthetic corpus
  (runs spliced from two real runs of the same model), from trajectories and from ``replay --format jsonl``
  output (budget: ≤ 30 s, HTML < 5 MB);
* ``--from-store`` — how much a metadata-only store (the default) keeps for replay: the runs driven live
  through a ``Guard``, replayed from its store, compared with a replay of the originals;
* ``--experiment [--coverage]`` — the experiment analysis' cluster bootstrap (10,000 resamples over 1,000
  tasks × 3 conditions × 3 repeats in ≤ 2 s), or its confidence intervals' coverage over simulations.
"""

from __future__ import annotations

import argparse
import collections
import gc
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import _callgrind  # noqa: E402

from planguard.actions import ActionClassifier  # noqa: E402
from planguard.detectors import default_detectors  # noqa: E402
from planguard.offline.loaders import Trajectory, iter_trajectories  # noqa: E402
from planguard.offline.replay import replay, replay_items, resolve_plans  # noqa: E402
from planguard.phases import PaperRules  # noqa: E402
from planguard.session import Pipeline  # noqa: E402

DEFAULT = ROOT.parent / "shared" / "data" / "swe-agent" / "trajectories.jsonl"
PLANS = resolve_plans("paper-settings")
clock = time.perf_counter_ns


def fresh_pipeline(diagnostics: bool) -> Pipeline:
    """``replay_pipeline(PLANS, diagnostics=...)`` with new stage objects: empty parse memos."""
    if diagnostics:
        return Pipeline(
            rules=PaperRules(), plans=PLANS, actions=ActionClassifier(), detectors=default_detectors()
        )
    return Pipeline(rules=PaperRules(), plans=PLANS)


def modes(diagnostics: bool) -> list[tuple[str, Callable[[], Pipeline]]]:
    """``cold``: new stage objects for every replay; ``warm``: one pipeline for all of them."""
    warm = fresh_pipeline(diagnostics)
    return [("cold", lambda: fresh_pipeline(diagnostics)), ("warm", lambda: warm)]


def event_times(trajs: list[Trajectory], pipeline: Pipeline) -> list[int]:
    out: list[int] = []
    for t in trajs:
        observe = pipeline.session(t.id).observe
        for e in t.events:
            t0 = clock()
            observe(e)
            out.append(clock() - t0)
    return out


def replay_file(path: Path, make: Callable[[], Pipeline]) -> int:
    return sum(1 for _ in replay([path], make()))


def timed(fn: Callable[[], object]) -> float:
    gc.collect()
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def whole_file_items(path: Path, lines: list[bytes]) -> dict[str, Callable[[], object]]:
    items: dict[str, Callable[[], object]] = {
        "json.loads of the lines": lambda: [json.loads(line) for line in lines],
        "load only (iter_trajectories)": lambda: sum(1 for _ in iter_trajectories([path])),
    }
    try:
        import orjson

        items["orjson.loads of the lines"] = lambda: [orjson.loads(line) for line in lines]
    except ImportError:
        print("(orjson is not installed: the loader parses with json.loads)")
    for diagnostics in (False, True):
        label = "replay, phases + metrics" if not diagnostics else "replay, with diagnostics"
        for mode, make in modes(diagnostics):
            items[f"{label} {mode}"] = partial(replay_file, path, make)
    return items


def instructions(path: Path, repeat: int) -> None:
    t0 = time.perf_counter()
    counts = _callgrind.run(__file__, [str(path), "--repeat", str(repeat)])
    best = {name: min(ns) for name, ns in counts.items()}
    base = best["json.loads of the lines"]
    took = time.perf_counter() - t0
    print(f"[whole file, instructions executed (callgrind), least of {repeat}; {took:.0f} s under valgrind]")
    for name, n in best.items():
        print(f"  {name:<33} {n / 1e6:8.1f} M   {n / base:.2f}×")


def stage_items(path: Path) -> dict[str, Callable[[], object]]:
    """Where a cold replay with diagnostics spends, stage by stage, each over the same loaded runs (the
    loader itself measured apart): the paper rules alone (classify and apply every call), the action
    classifier alone, and the whole replay of the loaded runs (the rest beyond those two is the
    detectors, the metrics and the session's own work)."""
    lines = path.read_bytes().splitlines()
    trajs = [t for t in iter_trajectories([path]) if isinstance(t, Trajectory)]

    def paper_rules() -> None:
        rules = PaperRules()
        for t in trajs:
            state = rules.new_state()
            for e in t.events:
                state.apply(rules.classify(e, state))

    def actions() -> None:
        classify = ActionClassifier()
        for t in trajs:
            for e in t.events:
                classify(e)

    return {
        "json.loads of the lines": lambda: [json.loads(line) for line in lines],
        "load only (iter_trajectories)": lambda: sum(1 for _ in iter_trajectories([path])),
        "paper rules alone": paper_rules,
        "action classifier alone": actions,
        "replay of the loaded runs": lambda: sum(1 for _ in replay_items(trajs, fresh_pipeline(True))),
    }


def stages(path: Path) -> None:
    counts = _callgrind.run(__file__, [str(path), "--stages", "--repeat", "1"])
    best = {name: min(ns) for name, ns in counts.items()}
    base = best["json.loads of the lines"]
    print("[stages of a cold replay with diagnostics, instructions (callgrind); the loaded runs frozen]")
    for name, n in best.items():
        print(f"  {name:<33} {n / 1e6:8.1f} M   {n / base:.2f}×")
    rest = best["replay of the loaded runs"] - best["paper rules alone"] - best["action classifier alone"]
    print(f"  {'(detectors, metrics, session)':<33} {rest / 1e6:8.1f} M   {rest / base:.2f}×")


def count_segments(lib: str, path: Path, repeat: int, by_stage: bool = False) -> None:
    """Runs inside callgrind: one counter segment per whole-file item and repeat, round-robin."""
    cg = _callgrind.Segments(lib)
    items = stage_items(path) if by_stage else whole_file_items(path, path.read_bytes().splitlines())
    if by_stage:  # the loaded runs are input, not replay state: keep the collector from re-walking them
        gc.collect()
        gc.freeze()
    for fn in items.values():  # uninstrumented warm-up of the interpreter
        fn()
    cg.start()
    for fn in items.values():  # instrumented warm-up: callgrind's own first-translation costs
        fn()
    for _ in range(repeat):
        for name, fn in items.items():
            gc.collect()
            cg.zero()
            fn()
            cg.dump(name)


# ------------------------------------------------------------------------------------ every core (-j)


def duplicated_corpus(runs: int, out: Path) -> Path:
    """``runs`` runs in one JSONL file: the shared runs over and over, each copy with an id of its own."""
    real = DEFAULT.read_bytes().splitlines()
    path = out / "corpus.jsonl"
    with path.open("wb") as f:
        for i in range(runs):
            record = json.loads(real[i % len(real)])
            record["id"] = f"{record['id']}#{i // len(real)}"
            f.write(json.dumps(record).encode() + b"\n")
    return path


def cli_run(argv: list[str]) -> tuple[float, float, float]:
    """(wall s, CPU s of the process and its workers, their largest resident set in MB) of ``python -m
    planguard argv``."""
    probe = (
        "import resource, subprocess, sys, time; t = time.perf_counter(); "
        "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL); "
        "r = resource.getrusage(resource.RUSAGE_CHILDREN); "
        "print(time.perf_counter() - t, r.ru_utime + r.ru_stime, r.ru_maxrss)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, sys.executable, "-m", "planguard", *argv],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
    ).stdout.split()
    return float(out[0]), float(out[1]), int(out[2]) / 1024


def parallel(runs: int, jobs: int) -> None:
    """Wall time on a shared machine moves with its load (printed beside it); CPU time does not much: the
    rate per core is runs per CPU second of ``-j 1``, the efficiency that CPU time against ``-j N``'s."""
    with tempfile.TemporaryDirectory(prefix="planguard-bench-parallel-") as tmp:
        corpus = duplicated_corpus(runs, Path(tmp))
        size = corpus.stat().st_size / 1e6
        print(f"{runs} runs in one JSONL file ({size:.0f} MB); {os.cpu_count()} CPUs")
        walls, cpus = {}, {}
        for j in (1, jobs):
            load = os.getloadavg()[0]
            argv = ["replay", str(corpus), "--format", "jsonl", "-o", os.devnull, "-j", str(j)]
            walls[j], cpus[j], rss = cli_run(argv)
            print(
                f"  replay -j {j}: {walls[j]:6.1f} s wall, {cpus[j]:6.1f} s CPU, {runs / cpus[j]:5.0f} runs "
                f"per CPU second; largest process {rss:.0f} MB; load average {load:.2f} -> "
                f"{os.getloadavg()[0]:.2f}"
            )
        speedup = walls[1] / walls[jobs]
        efficiency = cpus[1] / cpus[jobs]
        per_core = runs / cpus[1]
        print(f"  speed-up {speedup:.2f}× wall on {jobs} workers; CPU efficiency {efficiency:.0%}")
        million = 1e6 / (per_core * 64 * efficiency)
        print(
            f"  a million runs on 64 cores at {per_core:.0f} runs per CPU second and this efficiency: "
            f"{million / 60:.1f} min"
        )


# ------------------------------------------------------------------------------------------- loaders


def loaders(path: Path, rounds: int) -> int:
    """The loader against json.loads of the file's lines, best of ``rounds`` each (budget ≤ 2×)."""

    def bare_json() -> int:
        with path.open("rb") as handle:
            return sum(1 for raw in handle if not raw.isspace() and json.loads(raw) is not None)

    def loader() -> int:
        return sum(len(t.events) for t in iter_trajectories([path]) if isinstance(t, Trajectory))

    loader()  # warm the page cache and the imports
    t_json = min(timed(bare_json) for _ in range(rounds))
    t_load = min(timed(loader) for _ in range(rounds))
    ratio = t_load / t_json
    print(f"corpus        {path} ({path.stat().st_size / 1e6:.1f} MB, {loader()} events)")
    print(f"json.loads    {t_json * 1e3:8.1f} ms  (best of {rounds})")
    print(f"loader        {t_load * 1e3:8.1f} ms  (best of {rounds})")
    print(f"ratio         {ratio:8.2f}x  (budget 2.0x: {'ok' if ratio <= 2.0 else 'OVER'})")
    return 0 if ratio <= 2.0 else 1


# -------------------------------------------------------------------------------------------- report


def synthesise(n: int, shards: int, out_dir: Path, seed: int = 7) -> list[Path]:
    """``n`` runs in ``shards`` files, each the first k steps of a real run and the steps after k of
    another of the same run set (model), so step counts, tool mixes and phase patterns stay realistic."""
    real = [json.loads(line) for line in DEFAULT.open(encoding="utf-8") if line.strip()]
    by_run: dict[str, list[dict[str, Any]]] = {}
    for r in real:
        by_run.setdefault(r["run"], []).append(r)
    rng = random.Random(seed)
    paths = [out_dir / f"synthetic-{i:02d}.jsonl" for i in range(shards)]
    handles = [p.open("w", encoding="utf-8") for p in paths]
    try:
        for i in range(n):
            a = rng.choice(real)
            b = rng.choice(by_run[a["run"]])
            k = rng.randint(1, max(1, len(a["steps"]) - 1))
            steps = [dict(s) for s in a["steps"][:k] + b["steps"][k:]] or [dict(s) for s in a["steps"]]
            for j, s in enumerate(steps):
                s["i"] = j
            rec = dict(a, id=f"{a['run']}/synthetic-{i:05d}", instance_id=f"synthetic-{i:05d}", steps=steps)
            rec["n_steps"] = len(steps)
            handles[i % shards].write(json.dumps(rec) + "\n")
    finally:
        for h in handles:
            h.close()
    return paths


def report(runs: int, shards: int, jobs: int) -> None:
    from planguard.cli import main as cli
    from planguard.offline.report import build_report, collect, render_html
    from planguard.offline.report.records import RunRecord

    with tempfile.TemporaryDirectory(prefix="planguard-bench-report-") as tmp:
        work = Path(tmp)
        inputs = synthesise(runs, shards, work)
        print(
            f"corpus: {runs} synthetic runs in {shards} shards "
            f"({sum(p.stat().st_size for p in inputs) / 1e6:.1f} MB)"
        )

        def build(files: list[Path], name: str) -> None:
            t = time.perf_counter()
            records = [r for r in collect(files, jobs=jobs) if isinstance(r, RunRecord)]
            t_collect = time.perf_counter() - t
            html = render_html(build_report(records, group_by="model"))
            total = time.perf_counter() - t
            size = len(html.encode("utf-8"))
            verdict = "OK" if total <= 30 and size < 5e6 else "OVER BUDGET"
            print(
                f"{name:>13}: {len(records)} runs · jobs {jobs} · collect {t_collect:.1f} s · "
                f"total {total:.1f} s "
                f"· {size / 1e6:.2f} MB · {verdict} · load average {os.getloadavg()[0]:.2f}"
            )

        build(inputs, "trajectories")
        replayed = work / "replayed.jsonl"
        cli(["replay", *map(str, inputs), "--format", "jsonl", "-o", str(replayed), "-j", str(jobs)])
        build([replayed], "replay-jsonl")


# ------------------------------------------------------------------------------------ from the store


def from_store(path: Path) -> None:
    """Runs driven live through a Guard whose store keeps no content, replayed from the store, against a
    replay of the originals: letters, scores and finding counts per detector."""
    from planguard.config import Config
    from planguard.guard import Guard
    from planguard.offline.replay import replay_pipeline

    runs = [t for t in iter_trajectories([path]) if isinstance(t, Trajectory)]
    with tempfile.TemporaryDirectory() as store:
        cfg = {"telemetry": {"enabled": False}, "store": {"path": store, "content": False}}
        guard = Guard(Config.model_validate({**cfg, "sessions": {"idle_timeout_s": None}}))
        for t in runs:
            for ev in t.events:
                guard.before_model(t.id)
                guard.before_tool(t.id, ev)
                guard.after_tool(t.id, ev)
            guard.end(t.id)
        guard.shutdown()
        stored = {
            r.trajectory.id: r.summary for r in replay([store], replay_pipeline()) if hasattr(r, "summary")
        }
    offline = replay_pipeline()
    original = {}
    for t in runs:
        session = offline.session(t.id)
        for ev in t.events:
            session.observe(ev)
        original[t.id] = session.end()
    n = len(original)
    letters = sum(stored[k].letters == original[k].letters for k in original)
    scores = sum(
        all(stored[k].scores[p].as_dict() == s.as_dict() for p, s in original[k].scores.items())
        for k in original
    )
    findings = sum(dict(stored[k].finding_counts) == dict(original[k].finding_counts) for k in original)
    print(
        f"{n} runs: letters equal {letters}/{n}, scores equal {scores}/{n}, "
        f"finding counts equal {findings}/{n}"
    )
    by_orig: collections.Counter[str] = collections.Counter()
    by_store: collections.Counter[str] = collections.Counter()
    for k in original:
        by_orig.update(original[k].finding_counts)
        by_store.update(stored[k].finding_counts)
    print(f"  {'detector':28s} {'original':>9s} {'metadata-only store':>20s}")
    for d in sorted(set(by_orig) | set(by_store)):
        print(f"  {d:28s} {by_orig[d]:9d} {by_store[d]:20d}")


# ---------------------------------------------------------------------------------------- experiment


def experiment(coverage: bool, resamples: int = 10_000, rounds: int = 5) -> None:
    from planguard.experiment.analysis import analyze
    from planguard.experiment.simulate import SimSpec, simulate, true_effects

    if coverage:
        names = ("D_A", "R_A", "G_A", "D_B", "R_B", "G_B")
        spec = SimSpec(clusters=30)
        truth = true_effects(spec)
        covered = dict.fromkeys(names, 0)
        sims = 1000
        for s in range(sims):
            r = analyze(simulate(spec, seed=10_000 + s), resamples=2000, seed=s)
            for n in names:
                e = r.get(n)
                covered[n] += e.lo is not None and e.hi is not None and e.lo <= truth[n] <= e.hi
        print(f"coverage over {sims} simulations, 30 clusters × 2 tasks, plans ×2 / none ×1, 2000 resamples")
        for n in names:
            k = covered[n]
            se = (k / sims * (1 - k / sims) / sims) ** 0.5
            print(
                f"  {n}: true {truth[n]:.2f} pp, covered {k}/{sims} = {100 * k / sims:.1f} % "
                f"(± {196 * se:.1f})"
            )
        return
    # 1000 tasks in 250 clusters (4 tasks each), 3 repeats per task and condition.
    episodes = simulate(SimSpec(clusters=250, tasks_per_cluster=4, plan_repeats=3, none_repeats=3), seed=1)
    print(f"{len(episodes)} episodes, 1000 tasks × 3 conditions × 3 repeats, 250 clusters (target ≤ 2 s)")
    for cluster in ("cluster", "task"):
        times = sorted(
            timed(partial(analyze, episodes, cluster=cluster, resamples=resamples, seed=i))
            for i in range(rounds)
        )
        print(
            f"  analyze (clusters by {cluster}), {resamples} resamples: median {times[len(times) // 2]:.3f} s"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("path", nargs="?", type=Path, default=DEFAULT)
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--instructions", action="store_true", help="also count instructions (callgrind)")
    ap.add_argument("--parallel", action="store_true", help="planguard replay -j on every core")
    ap.add_argument("--runs", type=int, help="--parallel / --report: runs in the corpus (17000 / 10000)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="--parallel / --report: workers")
    ap.add_argument("--loaders", action="store_true", help="the loader against json.loads")
    ap.add_argument("--rounds", type=int, default=15, help="--loaders: rounds (default 15)")
    ap.add_argument("--report", action="store_true", help="planguard report's build over a synthetic corpus")
    ap.add_argument("--shards", type=int, default=8, help="--report: files of the corpus (default 8)")
    ap.add_argument("--from-store", action="store_true", help="replay from a metadata-only store")
    ap.add_argument("--experiment", action="store_true", help="the experiment analysis' bootstrap")
    ap.add_argument("--coverage", action="store_true", help="--experiment: the intervals' coverage study")
    ap.add_argument(
        "--stages", action="store_true", help="instructions of a cold replay's stages (callgrind)"
    )
    ap.add_argument("--segments", metavar="LIB", help=argparse.SUPPRESS)  # internal: run under callgrind
    args = ap.parse_args()
    path: Path = args.path
    if args.segments:
        count_segments(args.segments, path, args.repeat, args.stages)
        return
    if args.stages:
        stages(path)
        return
    if args.parallel:
        parallel(args.runs or 17_000, args.jobs)
        return
    if args.loaders:
        raise SystemExit(loaders(path, args.rounds))
    if args.report:
        report(args.runs or 10_000, args.shards, args.jobs)
        return
    if args.from_store:
        from_store(path)
        return
    if args.experiment:
        experiment(args.coverage)
        return
    lines = path.read_bytes().splitlines()
    n_events = sum(len(t.events) for t in iter_trajectories([path]) if isinstance(t, Trajectory))
    print(
        f"{path.name}: {n_events} events, {sum(map(len, lines)) / 1e6:.1f} MB; "
        f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs"
    )

    # Whole-file figures first, with nothing else alive: the collector's full passes traverse every live
    # object, so a process holding the decoded corpus slows json.loads and replay alike. The items are
    # timed round-robin, so a slow spell of a shared machine hits all of them, not one.
    items = whole_file_items(path, lines)
    best = dict.fromkeys(items, float("inf"))
    for _ in range(args.repeat):
        for name, fn in items.items():
            best[name] = min(best[name], timed(fn))
    t_json, t_load = best["json.loads of the lines"], best["load only (iter_trajectories)"]
    print(f"[whole file, best of {args.repeat}]")
    for name, t in best.items():
        beyond = (
            f"   (beyond loading: {(t - t_load) * 1e6 / n_events:.2f} µs per event)"
            if "replay" in name
            else ""
        )
        print(f"  {name:<33} {t * 1e3:7.1f} ms   {t / t_json:.2f}×{beyond}")

    trajs = [t for t in iter_trajectories([path]) if isinstance(t, Trajectory)]
    # The decoded corpus is input, not pipeline state: keep the collector from re-scanning it.
    gc.collect()
    gc.freeze()
    print("[per event, µs; per-event minimum over the repeats, taken round-robin]")
    variants: dict[str, Callable[[], Pipeline]] = {}
    for diagnostics in (False, True):
        label = "phases + metrics (7 plans)" if not diagnostics else "  + actions + detectors"
        for mode, make in modes(diagnostics):
            variants[f"{label} {mode}"] = make
    per_event: dict[str, list[int]] = {}
    for _ in range(args.repeat):
        for name, make in variants.items():
            xs = event_times(trajs, make())
            prev = per_event.get(name)
            per_event[name] = xs if prev is None else [min(a, b) for a, b in zip(prev, xs, strict=True)]
    for name, ns in per_event.items():
        us = sorted(x / 1000 for x in ns)
        print(
            f"  {name:<33} median {statistics.median(us):6.2f}   mean {statistics.fmean(us):6.2f}"
            f"   p99 {us[int(0.99 * len(us))]:7.2f}"
        )
    if args.instructions:
        reason = _callgrind.missing()
        if reason is None:
            instructions(path, min(args.repeat, 3))
        else:
            print(f"--instructions needs valgrind and a C compiler: {reason}", file=sys.stderr)


if __name__ == "__main__":
    main()
