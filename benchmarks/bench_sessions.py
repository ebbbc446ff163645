"""Tail latency under many sessions (issue #17): 1,000 concurrent async sessions on one event loop, and
the live objects each session holds.

    python benchmarks/bench_sessions.py [--sessions 1000] [--pace-ms 0] [--otel-sdk] [--skip-objects]
                                        [--no-freeze-row]
    python benchmarks/bench_sessions.py --tight-loop [--calls 100000] [--otel-sdk]

1. **Latency.** ``--sessions`` asyncio tasks, one session each, start together on one ``Guard`` with the
   default config (telemetry on the process's providers — no-ops unless ``--otel-sdk`` installs an SDK
   ``TracerProvider`` with a ``BatchSpanProcessor`` to an exporter that discards — and the local store in a
   temporary folder). Task ``i`` replays the tool calls of the corpus's run ``i mod 81`` (the 81 real
   SWE-agent runs) as an integration makes them: ``await guard.abefore_tool``, the tool "runs" (the task
   yields to the loop), ``await guard.aafter_tool`` with the recorded result, the model "runs" (yields
   again), next call; at the end ``await guard.aend``. Every session therefore has a call open at once,
   and the hooks of 1,000 sessions interleave. Each hook call's wall time is recorded; a tool call's time
   is its ``abefore_tool`` plus its ``aafter_tool``. Printed: p50 / p99 / max per tool call (and per hook),
   what the slowest 1 % of calls by CPU are (the share of calls of ≥ 1,000 characters among them, against
   their share of all calls: a tail made of long calls is per-call cost, not the sessions' number;
   ``--sessions 100`` beside ``--sessions 1000`` shows what grows with live sessions),
   the gen-2 garbage collections (``gc.callbacks``: how many, their longest) and how many tool calls
   overlapped one, and how many objects the collector tracked before the sessions started (the process's
   own: modules, the ``Guard``, the loaded corpus — every gen-2 pass walks them too). The run is made
   twice: as CPython leaves the collector, and then — a separate row, labelled — after ``gc.freeze()``
   at start-up, which is what an application that freezes its start-up objects gets (a gen-2 pass then
   walks only what came later: the sessions and the calls in flight). planguard itself never calls
   ``gc.freeze``, ``gc.disable`` or ``gc.set_threshold``: the application owns its collector. A third
   row, also after ``gc.freeze()``, drives the same tasks through hooks that do nothing (no planguard):
   what the driver itself costs, and the collections its own objects bring about.
2. **Live objects per session.** ``gc.get_objects()`` counts (objects the collector tracks, which is
   what a gen-2 collection walks) of ``--sessions`` sessions, each driven to the end of its run but not
   ended, minus the count before they were made, divided by the number of sessions, and the CPU time of
   a full collection (``gc.collect()``, best of 5) before and with them; the store is flushed
   first, so queued records are not counted. The biggest types are listed, and the process's own tracked
   objects by the package of their type.

3. **One session in a tight loop** (``--tight-loop``): the default ``Guard()`` (telemetry off unless
   ``--otel-sdk``; the store on) fed the corpus' calls back to back in one session with no sleep — the worst
   case for the store's background writer, which must win the GIL from the agent's thread. Prints the
   records dropped because the writer's queue was full (``store_queue_full``), the records written, and the
   agent's time per call over each tenth of the run (flat: a call's cost does not grow with the run).
   Under ``valgrind --tool=none -q`` (one thread at a time, as under callgrind) it shows with fewer calls.

Apart from the labelled ``gc.freeze()`` row, the application's GC settings are left as CPython sets
them. Prints; asserts nothing. Targets (issue
#17): p99 ≤ 0.5 ms per call, no call over 20 ms. Wall time on a shared machine: the load average is
printed; compare figures from runs under similar load.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from planguard import ALLOW, Config, Decision, Guard, ToolEvent  # noqa: E402
from planguard.offline.loaders import Trajectory, iter_trajectories  # noqa: E402

CORPUS = ROOT.parent / "shared" / "data" / "swe-agent" / "trajectories.jsonl"
#: Wall clock and the calling thread's CPU clock (what the OS ran of this thread: on a shared machine the
#: wall clock also counts the time other processes ran instead).
wall = time.perf_counter
cpu = time.thread_time


#: A call this long (its action or arguments, in characters) is a long call (bench_guard's ``long`` stream).
LONG_CALL = 1000


def load_runs() -> list[list[ToolEvent]]:
    runs = [t.events for t in iter_trajectories([CORPUS]) if isinstance(t, Trajectory) and t.events]
    if not runs:
        sys.exit(f"no runs in {CORPUS}")
    return runs


def fresh(src: ToolEvent, call_id: str) -> ToolEvent:
    """The call as an integration has it before it runs."""
    return ToolEvent(tool=src.tool, arguments=src.arguments, call_id=call_id, action=src.action)


def finish(ev: ToolEvent, src: ToolEvent) -> None:
    ev.result, ev.is_error, ev.exit_code = src.result, src.is_error, src.exit_code


class Gen2Watch:
    """Every gen-2 collection while installed in ``gc.callbacks``: its start and end (wall clock) and the
    CPU time it took (the collecting thread's)."""

    def __init__(self) -> None:
        self.spans: list[tuple[float, float]] = []
        self.cpu: list[float] = []
        self._start = (0.0, 0.0)

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if info.get("generation") != 2:
            return
        if phase == "start":
            self._start = (wall(), cpu())
        else:
            self.spans.append((self._start[0], wall()))
            self.cpu.append(cpu() - self._start[1])

    def overlapping(self, hooks: list[tuple[float, float]]) -> set[int]:
        """Indices of the ``hooks`` (start, end; sorted by start) that overlap a collection."""
        out, j, spans = set(), 0, self.spans
        for i, (start, end) in enumerate(hooks):
            while j < len(spans) and spans[j][1] < start:
                j += 1
            if j < len(spans) and spans[j][0] <= end:
                out.add(i)
        return out


class Timings:
    """Per tool call: wall time and the agent thread's CPU time of its two hooks, and the hooks' wall
    intervals (to find the calls a collection overlapped)."""

    def __init__(self) -> None:
        self.wall: list[float] = []
        self.cpu: list[float] = []
        self.hooks: list[tuple[float, float, int]] = []  # start, end, tool call number
        self.chars: list[int] = []  # the call's text (the action, else the arguments), in characters


async def drive(
    guard: Guard | NoMonitor, sid: str, events: list[ToolEvent], pace: float, rng: random.Random, t: Timings
) -> None:
    """One session: each call as an integration makes it, the tool and the model taking ``pace`` seconds
    on average between the hooks (0: just a yield to the loop)."""
    for k, src in enumerate(events):
        ev = fresh(src, f"{sid}-{k}")
        n = len(t.wall)
        t.wall.append(0.0)
        t.cpu.append(0.0)
        t.chars.append(len(src.action or str(src.arguments)))
        w0, c0 = wall(), cpu()
        decision = await guard.abefore_tool(sid, ev)
        w1, c1 = wall(), cpu()
        t.hooks.append((w0, w1, n))
        spent_wall, spent_cpu = w1 - w0, c1 - c0
        if not decision.blocks:
            await asyncio.sleep(rng.uniform(0, pace / 2))  # the tool runs; other sessions go on
            finish(ev, src)
            w2, c2 = wall(), cpu()
            await guard.aafter_tool(sid, ev)
            w3, c3 = wall(), cpu()
            t.hooks.append((w2, w3, n))
            spent_wall += w3 - w2
            spent_cpu += c3 - c2
        t.wall[n], t.cpu[n] = spent_wall, spent_cpu
        await asyncio.sleep(rng.uniform(0, pace * 3 / 2))  # the model answers
    await guard.aend(sid)


async def all_sessions(
    guard: Guard | NoMonitor, runs: list[list[ToolEvent]], args: argparse.Namespace
) -> Timings:
    t = Timings()
    rng = random.Random(17)
    pace = args.pace_ms / 1000
    await asyncio.gather(
        *(drive(guard, f"s{i}", runs[i % len(runs)], pace, rng, t) for i in range(args.sessions))
    )
    return t


class NoMonitor:
    """The hooks of a ``Guard`` doing nothing: the driver alone (the bare row)."""

    async def abefore_tool(self, session_id: str, event: ToolEvent) -> Decision:
        return ALLOW

    async def aafter_tool(self, session_id: str, event: ToolEvent) -> None:
        return None

    async def aend(self, session_id: str) -> None:
        return None


def pct(sorted_values: list[float], p: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(p * len(sorted_values)))]


def ms(v: float) -> str:
    return f"{v * 1000:.3f}"


def run_latency(
    args: argparse.Namespace,
    runs: list[list[ToolEvent]],
    tmp: str,
    *,
    freeze: bool = False,
    bare: bool = False,
) -> None:
    tracer_provider = None
    if args.otel_sdk:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

        class Discard(SpanExporter):
            def export(self, spans: object) -> SpanExportResult:
                return SpanExportResult.SUCCESS

        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(BatchSpanProcessor(Discard()))
    config = Config.model_validate({"store": {"path": f"{tmp}/latency{'-frozen' if freeze else ''}"}})
    guard: Guard | NoMonitor = NoMonitor() if bare else Guard(config, tracer_provider=tracer_provider)
    watch = Gen2Watch()
    gc.collect()
    if (
        freeze
    ):  # the application's choice, shown as its own row: everything so far leaves the collector's view
        gc.freeze()
    walked = len(gc.get_objects())  # (frozen objects are not listed: a collection no longer walks them)
    gc.callbacks.append(watch)
    t0 = wall()
    try:
        t = asyncio.run(all_sessions(guard, runs, args))
    finally:
        gc.callbacks.remove(watch)
        if freeze:
            gc.unfreeze()
    elapsed = wall() - t0
    if isinstance(guard, Guard):
        guard.shutdown()
    if tracer_provider is not None:
        tracer_provider.shutdown()
    t.hooks.sort()
    in_gc = {t.hooks[i][2] for i in watch.overlapping([(h[0], h[1]) for h in t.hooks])}
    label = "AFTER gc.freeze() AT START-UP (the application's choice)" if freeze else "GC as CPython sets it"
    if bare:
        label = "NO PLANGUARD: the same driver through hooks that do nothing, after gc.freeze()"
    print(
        f"[{label}] {args.sessions} concurrent sessions, {len(t.wall):,} tool calls in {elapsed:.1f} s"
        f" (pace {args.pace_ms:g} ms), per tool call (abefore_tool + aafter_tool), ms:"
    )
    for name, values in (("wall", t.wall), ("cpu", t.cpu)):
        v = sorted(values)
        slow = sum(1 for x in v if x > 0.020)
        print(
            f"  {name:<5} p50 {ms(pct(v, 0.5))}  p99 {ms(pct(v, 0.99))}  p99.9 {ms(pct(v, 0.999))}"
            f"  max {ms(v[-1])}  over 20 ms: {slow}"
        )
    # What the CPU tail is made of: a call's own work grows with its text (a created file's content is
    # read), so the slowest 1 % against the share of long calls tells per-call cost from per-session cost.
    by_cpu = sorted(range(len(t.cpu)), key=t.cpu.__getitem__)
    tail = by_cpu[-max(1, len(by_cpu) // 100) :]
    long_calls = sum(1 for c in t.chars if c >= LONG_CALL)
    long_tail = sum(1 for i in tail if t.chars[i] >= LONG_CALL)
    print(
        f"  the 1 % slowest (CPU): {long_tail / len(tail):.0%} are calls of ≥ {LONG_CALL:,} characters "
        f"({long_calls / max(1, len(t.chars)):.0%} of all calls)"
    )
    worst = sorted(range(len(t.wall)), key=t.wall.__getitem__)[-10:]
    print(f"  the 10 slowest calls (wall) inside a gen-2 collection: {sum(1 for i in worst if i in in_gc)}")
    if watch.cpu:
        print(
            f"  gen-2 collections: {len(watch.cpu)}, CPU ms each: "
            + " ".join(ms(c) for c in watch.cpu[:12])
            + (" …" if len(watch.cpu) > 12 else "")
            + f"; tool calls overlapping one: {len(in_gc)}"
        )
    else:
        print("  gen-2 collections: 0")
    print(f"  objects the collector tracked before the sessions started: {walked:,}")


def run_objects(args: argparse.Namespace, runs: list[list[ToolEvent]], tmp: str) -> None:
    guard = Guard(Config.model_validate({"store": {"path": f"{tmp}/objects"}}))
    store = next((s for s in guard.pipeline.sinks if type(s).__name__ == "StoreSink"), None)
    # Warm up: one session per run, ended, so module-level memos are filled before the count.
    for i, events in enumerate(runs):
        sync_drive(guard, f"warm{i}", events)
        guard.end(f"warm{i}")
    if store is not None:
        store.flush()
    gc.collect()
    before = gc.get_objects()
    before_ids = {id(o) for o in before}
    n_before = len(before)
    held = Counter(str(type(o).__module__).split(".")[0] for o in before)
    del before
    idle_gc = full_collection_cpu()
    print(
        f"the process's own tracked objects (modules, Guard, corpus, warm-up memos): {n_before:,}; by the"
        " package of their type: " + ", ".join(f"{name} {n:,}" for name, n in held.most_common(8))
    )
    for i in range(args.sessions):
        sync_drive(guard, f"o{i}", runs[i % len(runs)])
    if store is not None:
        store.flush()
    gc.collect()
    after = gc.get_objects()
    grown = Counter(type(o).__name__ for o in after if id(o) not in before_ids)
    n_after = len(after)
    del after
    live_gc = full_collection_cpu()
    steps = sum(len(runs[i % len(runs)]) for i in range(args.sessions))
    per_session = (n_after - n_before) / args.sessions
    print(
        f"live objects (gc-tracked) per session at the end of its run: {per_session:,.0f}"
        f"  ({n_after - n_before:,} for {args.sessions} sessions, {steps / args.sessions:.0f} calls each)"
    )
    print("  by type: " + ", ".join(f"{name} {n / args.sessions:.1f}" for name, n in grown.most_common(12)))
    print(
        f"  a full collection (gc.collect(), CPU, best of 5): {ms(idle_gc)} ms before the sessions were"
        f" made, {ms(live_gc)} ms with them live: {ms(live_gc - idle_gc)} ms for {args.sessions} sessions"
    )
    for i in range(args.sessions):
        guard.end(f"o{i}")
    guard.shutdown()
    gc.collect()
    print(
        f"  after the sessions ended: {(len(gc.get_objects()) - n_before) / args.sessions:,.1f} per session"
    )


def full_collection_cpu(repeat: int = 5) -> float:
    """The CPU time of a full collection of what is live now (the best of ``repeat``)."""
    best = float("inf")
    for _ in range(repeat):
        c0 = cpu()
        gc.collect()
        best = min(best, cpu() - c0)
    return best


def sync_drive(guard: Guard, sid: str, events: list[ToolEvent]) -> None:
    for k, src in enumerate(events):
        ev = fresh(src, f"{sid}-{k}")
        if not guard.before_tool(sid, ev).blocks:
            finish(ev, src)
            guard.after_tool(sid, ev)


def tight_loop(args: argparse.Namespace, runs: list[list[ToolEvent]]) -> None:
    """``--tight-loop``: does the store's writer keep up with one session fed back to back? (issue #17)"""
    from planguard.sinks.store.writer import StoreSink

    stream = [ev for run in runs for ev in run]
    with tempfile.TemporaryDirectory() as tmp:
        cfg: dict[str, object] = {"store": {"path": tmp}, "sessions": {"idle_timeout_s": None}}
        if not args.otel_sdk:
            cfg["telemetry"] = {"enabled": False}
        guard = Guard(Config.model_validate(cfg))
        (store,) = [s for s in guard.pipeline.sinks if isinstance(s, StoreSink)]
        tenth = max(1, args.calls // 10)
        times: list[float] = []
        longest = 0  # the writer's queue at its longest
        t0 = time.perf_counter()
        for k in range(args.calls):
            src = stream[k % len(stream)]
            ev = ToolEvent(tool=src.tool, arguments=src.arguments, call_id=f"c{k}", action=src.action)
            if not guard.before_tool("long", ev).blocks:
                finish(ev, src)
                guard.after_tool("long", ev)
            longest = max(longest, store._worker.pending)
            if (k + 1) % tenth == 0:
                now = time.perf_counter()
                times.append((now - t0) / tenth)
                t0 = now
        guard.end("long")
        store.flush(600)
        guard.shutdown()
        lines = sum(1 for p in Path(tmp).glob("*.jsonl") for _ in p.open("rb"))
    drops = dict(store.drops.counts)
    telemetry = "on" if args.otel_sdk else "off"
    print(f"{args.calls:,} calls, one session, default Guard() (telemetry {telemetry})")
    print(f"  store records dropped (store_queue_full): {drops.get('store_queue_full', 0):,}")
    print(f"  longest writer queue: {longest:,} records (max_queue {store.config.max_queue:,})")
    print(f"  other drops: {({k: v for k, v in drops.items() if k != 'store_queue_full'}) or 'none'}")
    print(f"  lines written: {lines:,} (header + a step per call + the end)")
    print("  µs per call, each tenth of the run: " + " ".join(f"{t * 1e6:.0f}" for t in times))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=1000, help="concurrent sessions (default 1000)")
    ap.add_argument(
        "--pace-ms", type=float, default=0.0, help="mean time a tool call and a model call take (default 0)"
    )
    ap.add_argument("--otel-sdk", action="store_true", help="spans through an SDK TracerProvider")
    ap.add_argument("--skip-objects", action="store_true", help="latency only")
    ap.add_argument("--skip-latency", action="store_true", help="live objects only")
    ap.add_argument(
        "--no-freeze-row", action="store_true", help="skip the second latency run after gc.freeze()"
    )
    ap.add_argument(
        "--tight-loop",
        action="store_true",
        help="one session fed the calls back to back: the store's drops and the cost per call over the run",
    )
    ap.add_argument("--calls", type=int, default=100_000, help="--tight-loop: calls (default 100000)")
    args = ap.parse_args()
    runs = load_runs()
    if args.tight_loop:
        tight_loop(args, runs)
        return
    print(
        f"Python {sys.version.split()[0]}, gc thresholds {gc.get_threshold()}, load {os.getloadavg()[0]:.1f}"
    )
    with tempfile.TemporaryDirectory(prefix="planguard-bench-sessions-") as tmp:
        if not args.skip_latency:
            run_latency(args, runs, tmp)
            if not args.no_freeze_row:
                gc.collect()
                run_latency(args, runs, tmp, freeze=True)
                gc.collect()
                run_latency(args, runs, tmp, freeze=True, bare=True)
        if not args.skip_objects:
            run_objects(args, runs, tmp)


if __name__ == "__main__":
    main()
