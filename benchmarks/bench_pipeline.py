"""Per-event cost of the per-tool-call pipeline, stage by stage, and its memory over a long session.

    python benchmarks/bench_pipeline.py [--corpus PATH] [--passes 9] [--events 100000] [--skip-memory]
                                        [--instructions] [--rules live|v351278e|v8ec988e]

``--rules`` picks the phase rules measured (default: ``live``, the default of ``Guard`` and ``replay``).

The budget line is ``+ default policies``: canonical actions + phase classification + Langutory and
compliance + every default detector + the default policies, per ``Session.observe``, ≤ 10 µs median on
the 81 real SWE-agent runs.

1. **Latency** of ``Session.observe`` per event, in µs (median / mean / p99), for cumulative pipelines
   (each line adds one stage to the line above it). Every event is timed on its own; the figure kept per
   event is its minimum over ``--passes`` identical passes, taken round-robin across the lines: the
   machine may be shared, and other processes' load only ever adds time.

   * **cold**: every pass starts from new stage objects with empty memos (fresh phase rules and
     ``ActionClassifier``; the live rules read calls through that same classifier, as in ``Guard``), so
     each action is classified as if seen for the first time in the process — what a live session sees
     for most of its calls. Memos still fill within the pass.
   * **warm**: the same stage objects pass after pass, so every repeated action is a memo hit — what a
     long-lived process sees for calls it has classified before.

   ``live`` times ``before_tool`` + ``after_tool`` (the integrations' path) instead of ``observe``.
2. **Stage breakdown** inside the full cold pipeline: timers around the action classifier and the phase
   rules (each adds ~0.1 µs of its own); the rest is the session, metrics, detectors and policies.
3. **Detectors alone**, on the steps of the corpus: all of them, then one at a time.
4. **Instructions** (``--instructions``, needs valgrind): the cold per-event figures of the first and the
   budget line as instructions executed per ``Session.observe``, counted by callgrind — deterministic where
   the wall clock of a shared machine is not, and comparable across machines (µs ≈ instructions / the
   machine's instructions per µs). Takes ~2–3 minutes.
5. **Memory** of one 100k-event session (tracemalloc): the corpus replayed back to back into one session,
   once as is and once with every path made unique (so every bounded table fills to its cap). Memory is
   split into the Langutory (planguard/metrics.py — the only structure allowed to grow with run length,
   one entry per phase run) and everything else, which must stay flat.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import _callgrind  # noqa: E402

from planguard.actions import ActionClassifier  # noqa: E402
from planguard.config import Config  # noqa: E402
from planguard.detectors import default_detectors  # noqa: E402
from planguard.events import ToolEvent  # noqa: E402
from planguard.offline.loaders import Trajectory, iter_trajectories  # noqa: E402
from planguard.offline.replay import resolve_plans  # noqa: E402
from planguard.phases import LIVE, LiveRules, PaperRules, PhaseClassifier  # noqa: E402
from planguard.plan import PRESETS  # noqa: E402
from planguard.policies import build_policies  # noqa: E402
from planguard.session import Pipeline  # noqa: E402

DEFAULT_CORPUS = ROOT.parent / "shared" / "data" / "swe-agent" / "trajectories.jsonl"
clock = time.perf_counter_ns
#: The phase rules measured (``--rules``).
RULES = LIVE


def new_rules(actions: ActionClassifier) -> PhaseClassifier:
    """Fresh phase rules (empty memos); the live ones read calls through ``actions``, as in a Guard."""
    return LiveRules(actions) if RULES == LIVE else PaperRules(RULES)


def load(corpus: Path) -> list[Trajectory]:
    runs = [t for t in iter_trajectories([corpus]) if isinstance(t, Trajectory)]
    if not runs:
        sys.exit(f"no runs in {corpus}")
    return runs


# ------------------------------------------------------------------------------------------- stages

#: Cumulative pipelines: (label, stages). Stages: plans7, actions, detectors, policies.
STAGES: tuple[tuple[str, frozenset[str]], ...] = (
    ("session + phases + metrics (1 plan)", frozenset()),
    ("  + 7 paper plans scored", frozenset({"plans7"})),
    ("  + canonical actions", frozenset({"plans7", "actions"})),
    ("  + default detectors", frozenset({"plans7", "actions", "detectors"})),
    ("  + default policies  [budget]", frozenset({"plans7", "actions", "detectors", "policies"})),
)
FULL = STAGES[-1][1]


def make_pipeline(stages: frozenset[str], **overrides: Any) -> Pipeline:
    """A pipeline with brand-new stage objects: empty parse memos (cold)."""
    classifier = ActionClassifier()
    kwargs: dict[str, Any] = {
        "rules": new_rules(classifier),
        "plans": resolve_plans("paper-settings") if "plans7" in stages else (PRESETS["plan"],),
    }
    if "actions" in stages:
        kwargs["actions"] = classifier
    if "detectors" in stages:
        kwargs["detectors"] = default_detectors()
    if "policies" in stages:
        config = Config()
        kwargs["policies"] = tuple(build_policies(config.policies, config.plans[0]))
    kwargs.update(overrides)
    return Pipeline(**kwargs)


def time_pass(runs: list[Trajectory], pipe: Pipeline, live: bool = False) -> list[int]:
    """Nanoseconds per event, one session per run."""
    out: list[int] = []
    append = out.append
    for t in runs:
        s = pipe.session(t.id)
        if live:
            before, after = s.before_tool, s.after_tool
            for e in t.events:
                t0 = clock()
                before(e)
                after(e)
                append(clock() - t0)
        else:
            observe = s.observe
            for e in t.events:
                t0 = clock()
                observe(e)
                append(clock() - t0)
        s.end()
    assert pipe.errors.total == 0, pipe.errors.counts
    return out


def per_event_min(passes: Iterator[list[int]]) -> list[int]:
    best: list[int] | None = None
    for xs in passes:
        best = xs if best is None else [min(a, b) for a, b in zip(best, xs, strict=True)]
    assert best is not None
    return best


def stats(ns: list[int]) -> tuple[float, float, float]:
    us = sorted(x / 1000 for x in ns)
    return statistics.median(us), statistics.fmean(us), us[min(len(us) - 1, int(0.99 * len(us)))]


def line(label: str, ns: list[int]) -> str:
    med, mean, p99 = stats(ns)
    return f"  {label:<40} median {med:6.2f}   mean {mean:6.2f}   p99 {p99:7.2f}"


def latency(runs: list[Trajectory], passes: int) -> None:
    """Every line's passes are taken round-robin with the other lines', so a slow spell of a shared
    machine costs all of them a pass, not one of them its figure."""
    lines = [(label, stages, False) for label, stages in STAGES]
    lines.append(("  live: before_tool + after_tool", FULL, True))
    print("[latency per event, µs; per-event minimum over passes]")
    for mode in ("cold", "warm"):
        warm_pipes = [make_pipeline(stages) for _, stages, _ in lines] if mode == "warm" else []
        for pipe, (_, _, live) in zip(warm_pipes, lines, strict=False):
            time_pass(runs, pipe, live)  # fills the memos
        best: list[list[int] | None] = [None] * len(lines)
        for _ in range(passes):
            for k, (_, stages, live) in enumerate(lines):
                pipe = warm_pipes[k] if warm_pipes else make_pipeline(stages)
                xs = time_pass(runs, pipe, live)
                prev = best[k]
                best[k] = xs if prev is None else [min(a, b) for a, b in zip(prev, xs, strict=True)]
        print(f" {mode}:")
        for (label, _, _), ns in zip(lines, best, strict=True):
            assert ns is not None
            print(line(label, ns), flush=True)


def breakdown(runs: list[Trajectory], passes: int) -> None:
    """The full cold pipeline with timers around the action classifier and the phase rules."""
    per_pass: list[tuple[list[int], list[int], list[int]]] = []
    for _ in range(passes):
        acts: list[int] = []
        phases: list[int] = []
        classify_action = ActionClassifier()
        rules = new_rules(classify_action)
        classify = rules.classify

        def timed_actions(event: ToolEvent, _a: list[int] = acts, _c: Any = classify_action) -> Any:
            t0 = clock()
            action = _c(event)
            _a.append(clock() - t0)
            return action

        def timed_classify(event: ToolEvent, state: Any, _p: list[int] = phases, _c: Any = classify) -> Any:
            t0 = clock()
            c = _c(event, state)
            _p.append(clock() - t0)
            return c

        rules.classify = timed_classify  # type: ignore[method-assign]
        total = time_pass(runs, make_pipeline(FULL, rules=rules, actions=timed_actions))
        per_pass.append((acts, phases, total))
    acts, phases, total = (per_event_min(iter([p[k] for p in per_pass])) for k in range(3))
    print("[stage breakdown of the full cold pipeline, µs per event]")
    rest = [t - a - p for t, a, p in zip(total, acts, phases, strict=True)]
    print(line("canonical actions", acts))
    print(line("phase classification", phases))
    print(line("session + metrics + detectors + policies", rest))
    print(line("total (incl. ~0.2 µs of timers)", total))


def detectors_alone(runs: list[Trajectory], passes: int) -> None:
    # The steps of the full pipeline (canonical actions set), fed to fresh detector states.
    pipe = make_pipeline(frozenset({"actions"}))
    steps_by_run = []
    for t in runs:
        s = pipe.session(t.id)
        steps_by_run.append([s.observe(e) for e in t.events])

    def run(names: set[str] | None) -> list[int]:
        out: list[int] = []
        for steps in steps_by_run:
            dets = [d for d in default_detectors() if names is None or d.name in names]
            pairs = [(d.observe, d.new_state()) for d in dets]
            for step in steps:
                t0 = clock()
                for observe, state in pairs:
                    observe(step, state)
                out.append(clock() - t0)
        return out

    print("[detectors alone, on the corpus steps, µs per step]")
    print(line("all default detectors", per_event_min(run(None) for _ in range(passes))))
    for d in default_detectors():
        print(line(f"  {d.name}", per_event_min(run({d.name}) for _ in range(passes))))


# ------------------------------------------------------------------------------------------- instructions

#: The lines counted under callgrind: the phases + metrics figure of issue 2 and the budget line.
COUNTED = (STAGES[0], STAGES[-1])


def instructions(corpus: Path) -> None:
    t0 = time.perf_counter()
    per_label = _callgrind.run(__file__, ["--corpus", str(corpus), "--rules", RULES])
    # What a segment costs with nothing in it (the switches' own calls and the loop): taken off every event.
    empty = statistics.median(per_label.pop("empty"))
    print(
        f"[instructions per event, cold, callgrind; {time.perf_counter() - t0:.0f} s under valgrind; "
        f"an empty segment's {empty:,.0f} taken off]"
    )
    for k, (label, _) in enumerate(COUNTED):
        xs = sorted(n - empty for n in per_label[str(k)])
        print(
            f"  {label:<40} median {statistics.median(xs):8,.0f}   mean {statistics.fmean(xs):8,.0f}   "
            f"p90 {xs[int(0.9 * len(xs))]:8,.0f}"
        )


def count_segments(lib: str, runs: list[Trajectory]) -> None:
    """Runs inside callgrind: one counter segment per event of one cold pass of each counted line."""
    cg = _callgrind.Segments(lib)
    for _, stages in COUNTED:  # uninstrumented warm-up of the interpreter (not of planguard: see below)
        time_pass(runs, make_pipeline(stages))
    cg.start()
    for _, stages in COUNTED:  # instrumented warm-up: callgrind's own first-translation costs
        time_pass(runs, make_pipeline(stages))
    gc.collect()
    gc.disable()  # a collection would land on whichever event allocates past the threshold
    zero, dump = cg.zero, cg.dump
    for _ in range(500):
        zero()
        dump(b"empty")
    for k, (_, stages) in enumerate(COUNTED):
        label = str(k).encode()
        pipe = make_pipeline(stages)  # new stage objects: cold
        for t in runs:
            s = pipe.session(t.id)
            observe = s.observe
            for e in t.events:
                zero()
                observe(e)
                dump(label)
            s.end()
    gc.enable()


# ------------------------------------------------------------------------------------------- memory


def stream(runs: list[Trajectory], unique: bool) -> Iterator[ToolEvent]:
    i = 0
    while True:
        for t in runs:
            for e in t.events:
                i += 1
                if unique and isinstance(e.action, str) and "/testbed/" in e.action:
                    cmd = e.action.replace("/testbed/", f"/testbed/u{i}/")
                    yield ToolEvent.shell(cmd, result=e.result)
                else:
                    yield e


def memory(runs: list[Trajectory], total: int, unique: bool) -> None:
    label = "unique paths" if unique else "corpus replayed"
    gc.collect()
    pipe = make_pipeline(FULL)
    tracemalloc.start(1)
    s = pipe.session("long")
    base = tracemalloc.take_snapshot()
    events = stream(runs, unique)
    rows = []
    here = str(Path(__file__).resolve())
    last: Any = None
    for k in range(1, total + 1):
        s.observe(next(events))
        if k % (total // 10) == 0:
            gc.collect()
            last = tracemalloc.take_snapshot().compare_to(base, "filename")
            lang = other = 0
            for d in last:
                name = d.traceback[0].filename
                if name.endswith(("planguard/metrics.py",)):
                    lang += d.size_diff
                elif name != here and "tracemalloc" not in name:  # the benchmark's own event strings
                    other += d.size_diff
            rows.append((k, len(s.langutory.runs), lang, other))
    tracemalloc.stop()
    assert pipe.errors.total == 0, pipe.errors.counts
    print(f"memory, one {total}-event session ({label}):")
    print("    events   langutory runs   langutory KiB   everything else KiB")
    for k, runs_n, lang, other in rows:
        print(f"  {k:>8}   {runs_n:>14}   {lang / 1024:>13.1f}   {other / 1024:>19.1f}")
    growth = (rows[-1][3] - rows[len(rows) // 2 - 1][3]) / 1024
    print(f"  everything else, {rows[len(rows) // 2 - 1][0]} → {rows[-1][0]} events: {growth:+.1f} KiB")
    top = sorted((d for d in last if d.traceback[0].filename != here), key=lambda d: -d.size_diff)[:6]
    print(
        "  largest holders at the end: "
        + ", ".join(f"{Path(d.traceback[0].filename).name} {d.size_diff / 1024:.0f} KiB" for d in top)
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--passes", type=int, default=9)
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--skip-memory", action="store_true")
    ap.add_argument("--instructions", action="store_true", help="also count instructions per event")
    ap.add_argument(
        "--rules", default=LIVE, choices=(LIVE, "v351278e", "v8ec988e"), help="phase rules measured"
    )
    ap.add_argument("--segments", metavar="LIB", help=argparse.SUPPRESS)  # internal: run under callgrind
    args = ap.parse_args()
    global RULES
    RULES = args.rules
    runs = load(args.corpus)
    if args.segments:
        count_segments(args.segments, runs)
        return
    n = sum(len(t.events) for t in runs)
    print(
        f"python {sys.version.split()[0]}; rules {RULES}; corpus: {len(runs)} runs, {n} events; "
        f"{args.passes} passes; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs"
    )
    # The loaded corpus is input data, not pipeline state: keep the collector from re-scanning it (its
    # full collections otherwise show up as multi-millisecond outliers on arbitrary events).
    gc.collect()
    gc.freeze()
    latency(runs, args.passes)
    breakdown(runs, args.passes)
    detectors_alone(runs, args.passes)
    if args.instructions:
        reason = _callgrind.missing()
        if reason is None:
            instructions(args.corpus)
        else:
            print(f"--instructions needs valgrind and a C compiler: {reason}", file=sys.stderr)
    if not args.skip_memory:
        memory(runs, args.events, unique=False)
        memory(runs, args.events, unique=True)


if __name__ == "__main__":
    main()
