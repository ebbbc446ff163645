"""Telemetry cost per tool call (issue 4 acceptance: full pipeline + OTel sink ≤ 1.5× a bare span).

Both sides use the same real SDK ``TracerProvider`` with a ``BatchSpanProcessor`` and an exporter that
discards, so only in-process cost is measured:

* **bare span** — ``start_span`` under a parent, ``set_attributes`` with exactly the attributes planguard
  put on that call's ``execute_tool`` span, ``end``;
* **full** — ``Session.before_tool`` + ``Session.after_tool`` of the default pipeline (phase rules,
  canonical actions, detectors, policies from the default ``Config``) with the ``OTelSink``;
* **pipeline only** — the same without any sink (how much of *full* is planguard's own analysis);
* **OTel sink only** — ``OTelSink.on_tool_start`` + ``on_tool_end`` on the steps the pipeline produced
  (the sink's own cost, span included, against the bare span).

The span queue is sized so nothing is dropped (a full queue would time the drop path instead).

Events are the shared SWE-agent corpus when present (else a synthetic mix). Rounds alternate the three
loops to share the machine's noise; per-call medians are reported as the best round (min) and the median
round. Run: ``python benchmarks/bench_telemetry.py [--rounds N] [--limit EVENTS]``. Prints; asserts nothing.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable, Sequence
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

from planguard.config import Config
from planguard.events import ToolEvent
from planguard.guard import Guard
from planguard.session import Pipeline
from planguard.step import Step
from planguard.telemetry import attributes as A
from planguard.telemetry.otel import OTelSink
from planguard.testing import RecordingSink

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "swe-agent" / "trajectories.jsonl"


class DiscardExporter(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


def load_runs(limit: int) -> list[list[ToolEvent]]:
    runs: list[list[ToolEvent]] = []
    if CORPUS.is_file():
        from planguard.loaders import Trajectory, iter_trajectories

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


def base_pipeline(sinks: tuple[Any, ...]) -> Pipeline:
    cfg = Config.model_validate({"telemetry": {"enabled": False}, "store": {"enabled": False}})
    guard = Guard(cfg, sinks=list(sinks))
    return guard.pipeline


def live_loop(pipeline: Pipeline, runs: list[list[ToolEvent]]) -> list[int]:
    clock = time.perf_counter_ns
    samples: list[int] = []
    for i, events in enumerate(runs):
        s = pipeline.session(f"bench-{i}")
        before, after = s.before_tool, s.after_tool
        for src in events:
            ev = copy(src)
            t0 = clock()
            if not before(ev).blocks:
                finish(ev, src)
                after(ev)
            samples.append(clock() - t0)
        s.end()
    return samples


def recorded_attributes(runs: list[list[ToolEvent]]) -> list[tuple[str, dict[str, Any]]]:
    """The name and final attributes of every execute_tool span the sink produces for these runs."""
    exporter = InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    sink = OTelSink(tracer_provider=tp, meter_provider=MeterProvider())
    live_loop(base_pipeline((sink,)), runs)
    return [
        (s.name, dict(s.attributes or {}))
        for s in exporter.get_finished_spans()
        if s.name.startswith(A.SPAN_EXECUTE_TOOL)
    ]


def bare_loop(tp: TracerProvider, spans: list[tuple[str, dict[str, Any]]]) -> list[int]:
    tracer = tp.get_tracer("bare")
    parent = tracer.start_span("invoke_agent")
    ctx = trace.set_span_in_context(parent)
    clock = time.perf_counter_ns
    samples: list[int] = []
    for name, attrs in spans:
        t0 = clock()
        span = tracer.start_span(name, context=ctx)
        span.set_attributes(attrs)
        span.end()
        samples.append(clock() - t0)
    parent.end()
    return samples


def sink_loop(sink: OTelSink, steps: list[Step]) -> list[int]:
    session = Pipeline().session("sink-only")
    session.n_steps = len(steps) + 1  # every step counts as accepted
    on_start, on_end = sink.on_tool_start, sink.on_tool_end
    clock = time.perf_counter_ns
    samples: list[int] = []
    for step in steps:
        t0 = clock()
        on_start(session, step)
        on_end(session, step)
        samples.append(clock() - t0)
    session.end()
    return samples


def timed(fn: Callable[[], list[int]]) -> float:
    gc.collect()
    return statistics.median(fn()) / 1000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--limit", type=int, default=4000, help="events per round (default 4000)")
    args = ap.parse_args()

    runs = load_runs(args.limit)
    n_events = sum(len(r) for r in runs)
    spans = recorded_attributes(runs)
    n_attrs = statistics.median(len(a) for _, a in spans)
    print(
        f"{n_events} tool calls from {len(runs)} runs "
        f"({'SWE-agent corpus' if CORPUS.is_file() else 'synthetic'})"
        f"; {len(spans)} execute_tool spans, median {n_attrs:.0f} attributes each"
    )

    tp = TracerProvider()
    tp.add_span_processor(BatchSpanProcessor(DiscardExporter(), max_queue_size=1 << 17))
    mp = MeterProvider()
    sink = OTelSink(tracer_provider=tp, meter_provider=mp)
    full_pipeline = base_pipeline((sink,))
    bare_pipeline = base_pipeline(())
    recorder = RecordingSink()
    live_loop(base_pipeline((recorder,)), runs)
    steps = [step for _, step in recorder.steps]
    results: dict[str, list[float]] = {
        "bare span": [],
        "pipeline only": [],
        "full (pipeline + OTel sink)": [],
        "OTel sink only": [],
    }
    for _ in range(args.rounds):
        results["bare span"].append(timed(lambda: bare_loop(tp, spans)))
        results["pipeline only"].append(timed(lambda: live_loop(bare_pipeline, runs)))
        results["full (pipeline + OTel sink)"].append(timed(lambda: live_loop(full_pipeline, runs)))
        results["OTel sink only"].append(timed(lambda: sink_loop(sink, steps)))
        tp.force_flush()
    tp.shutdown()

    print(f"per tool call, median µs over {args.rounds} alternating rounds (best round / median round):")
    for name, medians in results.items():
        print(f"  {name:30s} {min(medians):7.2f}   {statistics.median(medians):7.2f}")
    bare = results["bare span"]
    full = results["full (pipeline + OTel sink)"]
    only = results["pipeline only"]
    ratios = [f / b for f, b in zip(full, bare, strict=True)]
    print(
        f"full / bare span: best rounds {min(full) / min(bare):.2f}×, median of per-round ratios "
        f"{statistics.median(ratios):.2f}× (target ≤ 1.5×)"
    )
    sink_only = results["OTel sink only"]
    print(
        f"OTel sink only / bare span: {min(sink_only) / min(bare):.2f}× (best rounds); "
        f"the rest of *full* is the pipeline ({min(only):.1f} µs best round)"
    )


if __name__ == "__main__":
    main()
