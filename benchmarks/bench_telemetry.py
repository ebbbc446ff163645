"""Telemetry cost per tool call (issue 4 acceptance: full pipeline + OTel sink ≤ 1.5× a bare span).

Every variant uses the same real SDK ``TracerProvider`` with a ``BatchSpanProcessor`` and an exporter that
discards, so only in-process cost is measured. First the default pipeline runs once with the ``OTelSink``
on an in-memory exporter to record every ``execute_tool`` span planguard makes (name, final attributes,
span events, status); then, per tool call:

* **bare span** — what a hand-written span carrying the same information costs: ``start_span`` under a
  parent with exactly that span's final attributes, one ``add_event`` per event it had (same names and
  attributes), ``set_status`` when it was an error, ``end``. Nothing else runs;
* **pipeline only** — ``Session.before_tool`` + ``Session.after_tool`` of the default pipeline (phase
  rules, canonical actions, detectors, every policy of the default ``Config``), no sink;
* **pipeline + bare span** — the pipeline with a sink that emits the recorded bare span of each call (at
  the same hook where planguard's span ends): the bare span's cost *in situ*, with the pipeline's work
  interleaved, as planguard's own span runs;
* **full** — the pipeline with the ``OTelSink``;
* **full, defer_spans=True** — the same with the sink's ``defer_spans`` mode: the agent's thread starts
  each span and a worker thread adds its events and ends it. Its median time shows what the agent's
  thread pays; the process-CPU column (all threads, the worker drained after each run) shows the rest.

Derived: the sink's cost in situ (full − pipeline), its overhead over a bare span carrying the same data
(full − pipeline + bare span), and the acceptance ratio full / bare span. The core pipeline's share is
reported apart from the sink's: it is the same code with or without telemetry. The process-CPU column
also catches the SDK's export thread, in whichever variant's window it happens to run.

Variants are interleaved run by run (each SWE-agent run is one session, driven once per variant before
the next run), so they share the machine's noise; a round is one pass over all runs, and per-call
medians are reported as the best round (min) and the median round. ``--clock cpu`` times with the
thread's CPU clock, which a busy machine disturbs less than wall time. The load average is printed:
on a loaded 2-CPU machine compare figures from the same invocation only.

Run: ``python benchmarks/bench_telemetry.py [--rounds N] [--limit EVENTS] [--clock wall|cpu]``.
Prints; asserts nothing.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode

from planguard.config import Config
from planguard.decisions import Decision
from planguard.events import ToolEvent
from planguard.guard import Guard
from planguard.session import Pipeline, Session
from planguard.sinks import Sink
from planguard.sinks.otel import attributes as A
from planguard.sinks.otel.otel import OTelSink
from planguard.step import Step

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "swe-agent" / "trajectories.jsonl"

#: Set by --clock: wall time (perf_counter) or this thread's CPU time.
CLOCK: Callable[[], int] = time.perf_counter_ns

BARE = "bare span"
PIPE = "pipeline only"
PBARE = "pipeline + bare span"
FULL = "full (pipeline + OTel sink)"
DEFER = "full, defer_spans=True"


class DiscardExporter(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


@dataclass(frozen=True, slots=True)
class Recorded:
    """One execute_tool span as planguard emitted it."""

    name: str
    attributes: dict[str, Any]
    events: tuple[tuple[str, dict[str, Any]], ...]
    error: bool


def load_runs(limit: int) -> list[list[ToolEvent]]:
    runs: list[list[ToolEvent]] = []
    if CORPUS.is_file():
        from planguard.offline.loaders import Trajectory, iter_trajectories

        n = 0
        for t in iter_trajectories([CORPUS]):
            if isinstance(t, Trajectory) and t.events:
                runs.append(t.events)
                n += len(t.events)
                if n >= limit:
                    break
        return runs
    cmds = [
        "find /testbed -name '*.py' | head",
        "cat /testbed/src/mod.py",
        "grep -rn foo /testbed/src",
        "python /testbed/reproduce_bug.py",
        "sed -i 's/a/b/' /testbed/src/mod.py",
        "python -m pytest /testbed/tests/test_mod.py -x",
        "ls /testbed",
    ]
    return [[ToolEvent.shell(c) for c in cmds * 20] for _ in range(limit // 140 + 1)]


def copy(ev: ToolEvent) -> ToolEvent:
    return ToolEvent(tool=ev.tool, arguments=ev.arguments, call_id=ev.call_id, action=ev.action)


def finish(ev: ToolEvent, src: ToolEvent) -> None:
    ev.result, ev.is_error, ev.exit_code = src.result, src.is_error, src.exit_code


def base_pipeline(sinks: Sequence[Sink]) -> Pipeline:
    cfg = Config.model_validate({"telemetry": {"enabled": False}, "store": {"enabled": False}})
    return Guard(cfg, sinks=list(sinks)).pipeline


def session_id(i: int) -> str:
    return f"bench-{i}"


def live_run(pipeline: Pipeline, sid: str, events: list[ToolEvent], samples: list[int]) -> None:
    clock = CLOCK
    s = pipeline.session(sid)
    before, after = s.before_tool, s.after_tool
    for src in events:
        ev = copy(src)
        t0 = clock()
        if not before(ev).blocks:
            finish(ev, src)
            after(ev)
        samples.append(clock() - t0)
    s.end()


def record_spans(runs: list[list[ToolEvent]]) -> dict[str, list[Recorded]]:
    """Every execute_tool span the sink produces for these runs, by session, in the order they end."""
    exporter = InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    sink = OTelSink(tracer_provider=tp, meter_provider=MeterProvider())
    pipeline = base_pipeline((sink,))
    for i, events in enumerate(runs):
        live_run(pipeline, session_id(i), events, [])
    out: dict[str, list[Recorded]] = {}
    for s in exporter.get_finished_spans():
        if not s.name.startswith(A.SPAN_EXECUTE_TOOL):
            continue
        attrs = dict(s.attributes or {})
        rec = Recorded(
            s.name,
            attrs,
            tuple((e.name, dict(e.attributes or {})) for e in s.events),
            s.status.status_code is StatusCode.ERROR,
        )
        out.setdefault(str(attrs[A.GEN_AI_CONVERSATION_ID]), []).append(rec)
    return out


_ERROR = Status(StatusCode.ERROR)


def bare_span(tracer: trace.Tracer, ctx: Any, rec: Recorded) -> None:
    span = tracer.start_span(rec.name, context=ctx, attributes=rec.attributes)
    for name, attrs in rec.events:
        span.add_event(name, attrs)
    if rec.error:
        span.set_status(_ERROR)
    span.end()


def bare_run(tracer: trace.Tracer, recorded: list[Recorded], samples: list[int]) -> None:
    parent = tracer.start_span("invoke_agent")
    ctx = trace.set_span_in_context(parent)
    clock = CLOCK
    for rec in recorded:
        t0 = clock()
        bare_span(tracer, ctx, rec)
        samples.append(clock() - t0)
    parent.end()


class BareSpanSink(Sink):
    """Emits each call's recorded bare span where planguard's span ends (call end, or the block)."""

    def __init__(self, tracer: trace.Tracer, recorded: dict[str, list[Recorded]]) -> None:
        self.tracer = tracer
        self.recorded = recorded
        self.queue: deque[Recorded] = deque()
        self.ctx: Any = None

    def on_session_start(self, session: Session, state: Any) -> None:
        self.queue = deque(self.recorded.get(session.id, ()))
        self.ctx = trace.set_span_in_context(self.tracer.start_span("invoke_agent"))

    def on_tool_end(self, session: Session, step: Step, state: Any) -> None:
        bare_span(self.tracer, self.ctx, self.queue.popleft())

    def on_decision(self, session: Session, step: Step | None, decision: Decision, state: Any) -> None:
        if decision.blocks and step is not None and step.index >= session.n_steps:
            bare_span(self.tracer, self.ctx, self.queue.popleft())

    def on_session_end(self, session: Session, summary: Any, state: Any) -> None:
        trace.get_current_span(self.ctx).end()


def main() -> None:
    global CLOCK
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--limit", type=int, default=4000, help="events per round (default 4000)")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    args = ap.parse_args()
    CLOCK = time.thread_time_ns if args.clock == "cpu" else time.perf_counter_ns

    runs = load_runs(args.limit)
    n_events = sum(len(r) for r in runs)
    recorded = record_spans(runs)
    all_spans = [r for spans in recorded.values() for r in spans]
    n_attrs = statistics.median(len(r.attributes) for r in all_spans)
    n_ev = sum(len(r.events) for r in all_spans)
    print(
        f"{n_events} tool calls from {len(runs)} runs "
        f"({'SWE-agent corpus' if CORPUS.is_file() else 'synthetic'}); {len(all_spans)} execute_tool spans, "
        f"median {n_attrs:.0f} attributes each, {n_ev} span events in all; load average "
        + " ".join(f"{x:.2f}" for x in os.getloadavg())
    )

    tp = TracerProvider()
    tp.add_span_processor(BatchSpanProcessor(DiscardExporter(), max_queue_size=1 << 17))
    tracer = tp.get_tracer("bare")
    deferred = OTelSink(tracer_provider=tp, meter_provider=MeterProvider(), defer_spans=True)
    # name → (pipeline, what to flush after each run so the run's CPU includes its deferred spans)
    variants: dict[str, tuple[Pipeline, OTelSink | None]] = {
        PIPE: (base_pipeline(()), None),
        PBARE: (base_pipeline((BareSpanSink(tracer, recorded),)), None),
        FULL: (base_pipeline((OTelSink(tracer_provider=tp, meter_provider=MeterProvider()),)), None),
        DEFER: (base_pipeline((deferred,)), deferred),
    }
    names = [BARE, *variants]
    medians: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    cpu_clock = time.process_time_ns
    for _ in range(args.rounds):
        samples: dict[str, list[int]] = {name: [] for name in names}
        used = dict.fromkeys(names, 0)
        gc.collect()
        for i, events in enumerate(runs):
            sid = session_id(i)
            c0 = cpu_clock()
            bare_run(tracer, recorded.get(sid, []), samples[BARE])
            used[BARE] += cpu_clock() - c0
            for name, (pipeline, flush) in variants.items():
                c0 = cpu_clock()
                live_run(pipeline, sid, events, samples[name])
                if flush is not None:
                    flush.force_flush()
                used[name] += cpu_clock() - c0
        tp.force_flush()
        for name in names:
            medians[name].append(statistics.median(samples[name]) / 1000)
            cpu[name].append(used[name] / n_events / 1000)
    tp.shutdown()

    def best_med(values: list[float]) -> str:
        return f"{min(values):7.2f} {statistics.median(values):7.2f}"

    print(
        f"per tool call, µs over {args.rounds} rounds (best round, median round): median {args.clock} time "
        "on the agent's thread | process CPU (all threads)"
    )
    for name in names:
        print(f"  {name:36s} {best_med(medians[name])}   | {best_med(cpu[name])}")
    bare, pipe, pbare, full = (medians[n] for n in (BARE, PIPE, PBARE, FULL))

    def minus(a: list[float], b: list[float]) -> list[float]:
        return [x - y for x, y in zip(a, b, strict=True)]

    print("derived, median time (best round, median of per-round values):")
    derived = {
        "bare span in situ (pipeline + bare span − pipeline)": minus(pbare, pipe),
        "OTel sink in situ (full − pipeline)": minus(full, pipe),
        "sink overhead over a bare span (full − pipeline + bare span)": minus(full, pbare),
    }
    for label, values in derived.items():
        print(f"  {label:62s} {best_med(values)} µs")
    ratios = [f / b for f, b in zip(full, bare, strict=True)]
    print(
        f"full / bare span: best rounds {min(full) / min(bare):.2f}×, median of per-round ratios "
        f"{statistics.median(ratios):.2f}× (target ≤ 1.5×); floor with this pipeline and no sink overhead "
        f"(pipeline + bare span / bare span): {min(pbare) / min(bare):.2f}×"
    )
    print(
        f"deferred spans: {min(medians[DEFER]) / min(bare):.2f}× a bare span on the agent's thread, "
        f"{min(cpu[DEFER]) / min(cpu[BARE]):.2f}× its process CPU (inline sink: "
        f"{min(cpu[FULL]) / min(cpu[BARE]):.2f}×) — the span is built later, on a worker, not for free"
    )
    print("load average at the end " + " ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
