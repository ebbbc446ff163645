"""The speed guard: what planguard costs per tool call, in instructions, against one bare OpenTelemetry span
per call, on calls seen for the first time, in the configurations users run.

    python benchmarks/bench_guard.py [--streams shared,long] [--variants bare,sdk,noop,pipeline]
                                     [--telemetry] [--long 100000] [--window 200] [--procs 2]
    python benchmarks/bench_guard.py --modules [--streams ...]   # where the SDK variant's calls go, by module
    python benchmarks/bench_guard.py --langchain [...]            # what PlanGuardMiddleware adds to a step

Every (variant, stream) pair runs in a process of its own under callgrind (valgrind), so every call is
first-seen (no process-wide memo warmed by another variant) and the figures are instruction counts of the
same interpreter: deterministic where wall time on a shared machine is not. Each run is one session, start
and end included; every thread is counted (the store's writer, the span and metric exporters) and flushed
before the count stops; each count starts from an empty collector (``gc.collect()``, uncounted).

Variants:

* **bare** — one span per call under a parent, carrying the attributes and events planguard's own
  ``execute_tool`` span has for that call (recorded first in the same process, uncounted), through a
  ``BatchSpanProcessor`` to an exporter that discards. The yardstick: every figure is in bare spans;
* **sdk** — ``Guard()`` with the default config (telemetry on the process's providers, the local session
  store in a temporary folder) in an application that installed and exports with the OpenTelemetry SDK: a
  ``TracerProvider`` with a ``BatchSpanProcessor``, a ``MeterProvider`` with a
  ``PeriodicExportingMetricReader`` and a ``LoggerProvider`` with a ``BatchLogRecordProcessor``, all to
  exporters that discard; the providers are flushed (a metric collection included) inside the count.
  **The guarded figure** (target ≤ 2 bare spans);
* **noop** — the same ``Guard()`` under the API's no-op providers (OpenTelemetry not configured);
* **telemetry** (``--telemetry``) — ``Guard()`` with the store off under the SDK: the pipeline and the OTel
  sink (issue 4's figure);
* **pipeline** — ``Guard()`` with store and telemetry off: phases, actions, metrics, detectors, policies
  (target ≤ 1.5);
* **idle** (``--variants idle``) — the sdk ``Guard()`` after a session's first calls, then ``--idle``
  seconds with no call, as while the agent waits for its model: instructions per second of waiting (every
  thread: planguard's background workers and the SDK's own);
* **flat** — the sdk ``Guard()`` fed the shared runs' calls back to back in one session: a window of
  ``--window`` calls starting at call 100, 10,000 and ``--long`` (the calls between run uncounted; the
  store's writer is drained and the meter provider flushed before each window, uncounted, and again inside
  it). Target: the last window within 10 % of the first.

Streams: **shared** — the 81 real SWE-agent runs (``../shared/data/swe-agent``, 2,497 calls);
**long** — the same corpus' longest actions (those of ``LONG_CHARS`` characters or more: heredocs of
kilobytes, file writes, long chained commands), each run's in their order, one session per run.

``--modules`` runs the sdk variant natively under ``cProfile`` (every thread) and prints each part's share
of the time per call: reading, phases, actions, detectors, policies, store, telemetry (planguard's sink),
the OpenTelemetry SDK, the rest of planguard, other. A builtin's time is charged to the module calling it.

``--langchain`` measures what ``PlanGuardMiddleware`` adds to a real LangGraph agent step (issue 5).

Prints; asserts nothing (``tests/e2e/test_speed_guard.py`` asserts the sdk target).
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _callgrind  # noqa: E402
from opentelemetry import trace  # noqa: E402
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import (  # noqa: E402
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402
from opentelemetry.trace import Status, StatusCode  # noqa: E402

from planguard import Config, Guard, ToolEvent  # noqa: E402

CORPUS = ROOT.parent / "shared" / "data" / "swe-agent" / "trajectories.jsonl"
#: A call of the long stream: its action has at least this many characters.
LONG_CHARS = 1000
POSITIONS = (100, 10_000)
STREAMS = ("shared", "long")
VARIANTS = {
    "sdk": "Guard(), exporting OTel SDK installed",
    "noop": "Guard(), OTel API no-op (not configured)",
    "telemetry": "Guard(), store off, exporting OTel SDK",
    "pipeline": "Guard(), store and telemetry off",
}
DEFAULT_VARIANTS = ("bare", "sdk", "noop", "pipeline", "flat")
STORE_OFF = {"store": {"enabled": False}}
PIPELINE = {"telemetry": {"enabled": False}, "store": {"enabled": False}}


# ---------------------------------------------------------------------------------------------- the calls


def load_runs(stream: str = "shared") -> list[list[ToolEvent]]:
    """The corpus' runs as ToolEvents (``long``: only each run's long actions; runs left empty go)."""
    from planguard.offline.loaders import Trajectory, iter_trajectories

    runs = [t.events for t in iter_trajectories([CORPUS]) if isinstance(t, Trajectory) and t.events]
    if stream == "long":
        runs = [[ev for ev in run if len(ev.action or "") >= LONG_CHARS] for run in runs]
    return [run for run in runs if run]


def finish(ev: ToolEvent, src: ToolEvent) -> None:
    ev.result, ev.is_error, ev.exit_code = src.result, src.is_error, src.exit_code


def drive(guard: Guard, sid: str, events: Sequence[ToolEvent], first_id: int = 0) -> None:
    """Each call as an integration makes it: before_tool, then (unless denied) after_tool with the result."""
    for k, src in enumerate(events):
        ev = ToolEvent(tool=src.tool, arguments=src.arguments, call_id=f"c{first_id + k}", action=src.action)
        if not guard.before_tool(sid, ev).blocks:
            finish(ev, src)
            guard.after_tool(sid, ev)


def drain(guard: Guard) -> None:
    """Wait until the guard's sinks that write in the background (the store) have written everything."""
    for sink in guard.pipeline.sinks:
        flush = getattr(sink, "flush", None)
        if flush is not None:
            flush(600.0)


# ------------------------------------------------------------------------------------- the bare yardstick


class Discard(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


_ERROR = Status(StatusCode.ERROR)
#: One execute_tool span as planguard emitted it: (name, attributes, events, error).
Recorded = tuple[str, dict[str, Any], list[tuple[str, dict[str, Any]]], bool]


def record_spans(runs: list[list[ToolEvent]]) -> list[list[Recorded]]:
    """Every execute_tool span planguard makes for these runs, run by run, in the order they end."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    from opentelemetry.sdk.metrics import MeterProvider

    from planguard.sinks.otel.otel import OTelSink

    sink = OTelSink(tracer_provider=provider, meter_provider=MeterProvider())
    guard = Guard(Config.model_validate(PIPELINE), sinks=[sink])
    out: dict[str, list[Recorded]] = {}
    for i, events in enumerate(runs):
        drive(guard, f"run-{i}", events)
        guard.end(f"run-{i}")
    for s in exporter.get_finished_spans():
        attrs = dict(s.attributes or {})
        if s.name.startswith("execute_tool"):
            events = [(e.name, dict(e.attributes or {})) for e in s.events]
            rec = (s.name, attrs, events, s.status.status_code is StatusCode.ERROR)
            out.setdefault(str(attrs["gen_ai.conversation.id"]), []).append(rec)
    return [out.get(f"run-{i}", []) for i in range(len(runs))]


def bare_spans(tracer: trace.Tracer, recorded: list[list[Recorded]]) -> None:
    for spans in recorded:
        parent = tracer.start_span("invoke_agent")
        ctx = trace.set_span_in_context(parent)
        for name, attrs, events, error in spans:
            span = tracer.start_span(name, context=ctx, attributes=attrs)
            for event, event_attrs in events:
                span.add_event(event, event_attrs)
            if error:
                span.set_status(_ERROR)
            span.end()
        parent.end()


# ------------------------------------------------------------------------------ the application's OTel SDK


def install_sdk() -> list[Any]:
    """Install an exporting SDK as an application does (global providers); the providers, to flush."""
    from opentelemetry import metrics
    from opentelemetry._logs import set_logger_provider

    providers = sdk_providers()
    trace.set_tracer_provider(providers[0])
    metrics.set_meter_provider(providers[1])
    set_logger_provider(providers[2])
    return providers


def sdk_providers() -> list[Any]:
    """Tracer, meter and logger providers as an application sets them up (batch processors, a periodic
    reader), every exporter discarding."""
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor, LogExporter, LogExportResult
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import (
        MetricExporter,
        MetricExportResult,
        PeriodicExportingMetricReader,
    )

    class DiscardMetrics(MetricExporter):
        def export(
            self, metrics_data: Any, timeout_millis: float = 10_000, **kwargs: Any
        ) -> MetricExportResult:
            return MetricExportResult.SUCCESS

        def force_flush(self, timeout_millis: float = 10_000) -> bool:
            return True

        def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
            pass

    class DiscardLogs(LogExporter):
        def export(self, batch: Any) -> LogExportResult:
            return LogExportResult.SUCCESS

        def force_flush(self, timeout_millis: int = 30_000) -> bool:
            return True

        def shutdown(self) -> None:
            pass

    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(BatchSpanProcessor(Discard()))
    meter_provider = MeterProvider(metric_readers=[PeriodicExportingMetricReader(DiscardMetrics())])
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(BatchLogRecordProcessor(DiscardLogs()))
    return [tracer_provider, meter_provider, logger_provider]


def flush(providers: list[Any]) -> None:
    for provider in providers:
        provider.force_flush()


# -------------------------------------------------------------------------------------- the inner runs


def _guard(variant: str, tmp: str) -> Guard:
    if variant == "pipeline":
        return Guard(Config.model_validate(PIPELINE))
    if variant == "telemetry":
        return Guard(Config.model_validate(STORE_OFF))
    return Guard(Config.model_validate({"store": {"path": f"{tmp}/store"}}))


def inner(args: argparse.Namespace) -> None:
    seg = _callgrind.Segments(args.segments)
    variant, stream = args.inner_variant, args.inner_stream
    runs = load_runs(stream)
    calls = sum(len(r) for r in runs)
    tmp = tempfile.mkdtemp(prefix="planguard-bench-guard-")
    if variant == "bare":
        recorded = record_spans(runs)
        provider = TracerProvider()
        provider.add_span_processor(BatchSpanProcessor(Discard()))
        tracer = provider.get_tracer("bench")
        gc.collect()
        seg.start()
        seg.zero()
        bare_spans(tracer, recorded)
        provider.force_flush()
        seg.dump(f"bare {calls}")
        seg.stop()
        return
    providers = install_sdk() if variant in ("sdk", "telemetry", "flat", "idle") else []
    guard = _guard("sdk" if variant == "idle" else variant, tmp)
    if variant == "flat":
        flat(args, seg, guard, [ev for run in runs for ev in run], providers)
        return
    if variant == "idle":
        idle(args, seg, guard, runs[0], providers)
        return
    gc.collect()
    seg.start()
    seg.zero()
    for i, events in enumerate(runs):
        drive(guard, f"run-{i}", events)
        guard.end(f"run-{i}")
    drain(guard)  # shutdown() gives the writer 5 s, too little under valgrind to write every record
    guard.shutdown()
    flush(providers)
    seg.dump(f"{variant} {calls}")
    seg.stop()


def flat(
    args: argparse.Namespace,
    seg: _callgrind.Segments,
    guard: Guard,
    stream: list[ToolEvent],
    providers: list[Any],
) -> None:
    done = 0
    for at in (*POSITIONS, args.long):
        while done < at:  # uncounted calls up to the window
            n = min(at - done, len(stream))
            drive(guard, "long", stream[:n], done)
            done += n
        window = stream[: args.window]
        drain(guard)
        flush(providers)
        gc.collect()
        seg.start()
        seg.zero()
        drive(guard, "long", window, done)
        drain(guard)
        flush(providers)
        seg.dump(f"at{at} {len(window)}")
        seg.stop()
        done += len(window)
    guard.shutdown()


def idle(
    args: argparse.Namespace,
    seg: _callgrind.Segments,
    guard: Guard,
    run: list[ToolEvent],
    providers: list[Any],
) -> None:
    """What a Guard costs while the agent waits for its model: a session that made a few calls, then
    ``--idle`` seconds with none (every thread counted: planguard's workers and the SDK's own)."""
    drive(guard, "waiting", run[:3])
    drain(guard)
    flush(providers)
    gc.collect()
    seg.start()
    seg.zero()
    time.sleep(args.idle)
    seg.dump(f"idle {args.idle}")  # (per_call divides by the seconds: instructions per second)
    seg.stop()
    guard.shutdown()


# -------------------------------------------------------------------------------------------- by module

#: (part, path fragments of the modules it covers), first match wins.
PARTS = (
    (
        "reading",
        (
            "planguard/tools/",
            "planguard/shell/",
            "planguard/actions/lexer.py",
            "planguard/actions/vocabulary.py",
        ),
    ),
    ("phases", ("planguard/phases/",)),
    ("actions", ("planguard/actions/",)),
    ("detectors", ("planguard/detectors/", "planguard/milestones.py", "planguard/todo.py")),
    ("policies", ("planguard/policies/",)),
    ("store", ("planguard/sinks/store/", "planguard/sinks/redact.py")),
    ("telemetry", ("planguard/sinks/telemetry/", "planguard/sinks/otel/")),
    ("OTel SDK", ("opentelemetry/",)),
    ("planguard, rest", ("planguard/",)),
)


def _part(filename: str) -> str:
    for part, fragments in PARTS:
        if any(f in filename for f in fragments):
            return part
    return "other"


def modules(args: argparse.Namespace) -> None:
    """The sdk variant natively under cProfile, every thread; each part's share of the time. One process
    per stream (the SDK's threads live on)."""
    import cProfile
    import pstats
    import subprocess
    import threading

    if len(args.streams) > 1:
        for stream in args.streams:
            subprocess.run([sys.executable, __file__, "--modules", "--streams", stream], check=True)
        return
    stream = args.streams[0]
    profilers: list[cProfile.Profile] = []
    run = threading.Thread.run

    def profiled(self: threading.Thread) -> None:
        profiler = cProfile.Profile(time.thread_time)  # CPU time: a thread waiting costs nothing
        profilers.append(profiler)
        profiler.enable()
        try:
            run(self)
        finally:
            profiler.disable()

    threading.Thread.run = profiled  # type: ignore[method-assign]
    runs = load_runs(stream)
    calls = sum(len(r) for r in runs)
    providers = install_sdk()
    guard = _guard("sdk", tempfile.mkdtemp(prefix="planguard-bench-guard-"))
    main = cProfile.Profile(time.thread_time)
    main.enable()
    for i, events in enumerate(runs):
        drive(guard, f"run-{i}", events)
        guard.end(f"run-{i}")
    drain(guard)
    guard.shutdown()
    flush(providers)
    main.disable()
    for provider in providers:
        provider.shutdown()  # (its threads end: their profiles are complete)
    stats = pstats.Stats(main)
    for profiler in profilers:
        stats.add(profiler)
    shares: dict[str, float] = {}
    for (filename, _line, _name), (_cc, _nc, tt, _ct, callers) in stats.stats.items():  # type: ignore[attr-defined]
        if filename == "~" and callers:  # a builtin: charged to its callers, by their share of its time
            for (caller_file, _l, _n), caller_stats in callers.items():
                part = _part(caller_file)
                shares[part] = shares.get(part, 0.0) + caller_stats[2]
        else:
            shares[_part(filename)] = shares.get(_part(filename), 0.0) + tt
    total = sum(shares.values())
    print(f"{stream}: {calls} calls, {total / calls * 1e6:.0f} µs per call under cProfile (all threads)")
    for part, t in sorted(shares.items(), key=lambda kv: -kv[1]):
        print(f"  {part:<18}{t / total:>7.1%}")


# ------------------------------------------------------------------------------------ a LangChain step

#: What PlanGuardMiddleware adds to a ``create_agent`` step (one model call + one tool call, scripted model,
#: trivial tools): ``bare`` no middleware; ``null-pg`` PlanGuardMiddleware's hooks doing nothing (what
#: LangChain charges for the hooks planguard registers); ``default`` the README's config
#: (examples/planguard.yaml: store in a temp folder, telemetry on the no-op API); ``core`` the same with
#: store and telemetry off; ``otel-sdk`` ``default`` with an exporting SDK (issue 5: ≤ 5 % of a bare step).
LANGCHAIN_VARIANTS = ("bare", "null-pg", "default", "core", "otel-sdk")
EXAMPLE_CONFIG = ROOT / "examples" / "planguard.yaml"
_CYCLE = [  # a realistic mix: searches and reads, a patch, test runs (no submit: the gate would deny it)
    ("bash", {"command": "grep -rn 'def parse' /testbed/pkg"}),
    ("str_replace_editor", {"command": "view", "path": "/testbed/pkg/core.py"}),
    ("bash", {"command": "find /testbed -name '*.py' | head"}),
    (
        "str_replace_editor",
        {"command": "str_replace", "path": "/testbed/pkg/core.py", "old_str": "a", "new_str": "b"},
    ),
    ("bash", {"command": "cd /testbed && python -m pytest tests/test_core.py -q"}),
]


def _langchain_agent(variant: str, steps: int, tmp: str, providers: list[Any]) -> tuple[Any, Guard | None]:
    from langchain.agents import create_agent
    from langchain.agents.middleware import AgentMiddleware
    from langchain_core.tools import tool
    from planguard_langchain import PlanGuardMiddleware
    from planguard_langchain.testing import ScriptedChatModel, call, turn

    from planguard.config import load_config

    @tool
    def bash(command: str) -> str:
        """Run a shell command."""
        return "ok"

    @tool
    def str_replace_editor(
        command: str, path: str, old_str: str | None = None, new_str: str | None = None
    ) -> str:
        """View and edit files."""
        return "ok"

    class NullPlanGuardMiddleware(PlanGuardMiddleware):
        def __init__(self) -> None:
            AgentMiddleware.__init__(self)
            self.tools = []

        def after_agent(self, state: Any, runtime: Any) -> None:
            return None

        def wrap_model_call(self, request: Any, handler: Any) -> Any:
            return handler(request)

        def wrap_tool_call(self, request: Any, handler: Any) -> Any:
            return handler(request)

    script = [turn(call(name, **a)) for name, a in (_CYCLE[i % len(_CYCLE)] for i in range(steps))]
    model = ScriptedChatModel(turns=script, record=False)
    guard = None
    middleware: list[Any] = []
    if variant == "null-pg":
        middleware = [NullPlanGuardMiddleware()]
    elif variant != "bare":
        data = load_config(EXAMPLE_CONFIG).model_dump(by_alias=True, exclude_unset=True)
        data["store"] = {**(data.get("store") or {}), "path": f"{tmp}/{variant}"}
        if variant == "core":
            data["store"]["enabled"] = False
            data["telemetry"] = {**(data.get("telemetry") or {}), "enabled": False}
        kw: dict[str, Any] = {}
        if variant == "otel-sdk":
            kw = {"tracer_provider": providers[0], "meter_provider": providers[1]}
        guard = Guard(Config.model_validate(data), **kw)
        middleware = [PlanGuardMiddleware(guard)]
    return create_agent(model, [bash, str_replace_editor], middleware=middleware), guard


def _langchain_run(agent: Any, n: int, guard: Guard | None, providers: list[Any]) -> None:
    from langchain_core.messages import HumanMessage

    config = {"configurable": {"thread_id": f"bench-{n}"}, "recursion_limit": 100_000}
    agent.invoke({"messages": [HumanMessage("Fix the bug.")]}, config)
    if guard is not None:
        drain(guard)
        flush(providers)


def langchain_segments(args: argparse.Namespace) -> None:
    """Runs inside callgrind: one counter segment per (variant, round), rounds rotated."""
    seg = _callgrind.Segments(args.segments)
    tmp = tempfile.mkdtemp(prefix="planguard-bench-langchain-")
    providers = sdk_providers()  # given to the otel-sdk variant only: the others see the API's no-ops
    agents = {v: _langchain_agent(v, args.steps, tmp, providers) for v in LANGCHAIN_VARIANTS}
    for agent, guard in agents.values():
        _langchain_run(agent, -1, guard, providers)
    seg.start()
    for agent, guard in agents.values():  # instrumented warm-up: callgrind's first-translation costs
        _langchain_run(agent, -2, guard, providers)
    # The first counter segment of a process comes out ~7 % high whatever it runs: a discarded one.
    gc.collect()
    seg.zero()
    _langchain_run(agents["bare"][0], -3, None, providers)
    seg.dump("discarded")
    for r in range(args.rounds):
        k = r % len(LANGCHAIN_VARIANTS)
        for v in LANGCHAIN_VARIANTS[k:] + LANGCHAIN_VARIANTS[:k]:
            agent, guard = agents[v]
            gc.collect()
            seg.zero()
            _langchain_run(agent, r, guard, providers)
            seg.dump(v)


def langchain(args: argparse.Namespace) -> None:
    counts = _callgrind.run(
        __file__, ["--langchain", "--steps", str(args.steps), "--rounds", str(args.rounds)]
    )
    per_step = {v: sorted(c / args.steps for c in counts[v]) for v in LANGCHAIN_VARIANTS}
    base = per_step["bare"][len(per_step["bare"]) // 2]
    print(
        "instructions per create_agent step (1 model call + 1 tool call; callgrind, all threads, "
        f"median of {args.rounds} rounds)"
    )
    for v, values in per_step.items():
        mid = values[len(values) // 2]
        print(f"  {v:<10}{mid:>12,.0f}   {mid / base - 1:+7.2%} of a bare step")


# ------------------------------------------------------------------------------------------------ main


def per_call(
    variants: Sequence[str],
    streams: Sequence[str],
    procs: int = 2,
    long: int = 100_000,
    window: int = 200,
    idle: int = 20,
) -> dict[str, dict[str, float]]:
    """Instructions per call, by stream and label (a variant's name; ``at<N>`` for the flat windows), each
    (variant, stream) counted in a process of its own under callgrind, ``procs`` at once."""
    jobs = [(v, s) for v in variants for s in streams if not (v in ("flat", "idle") and s != "shared")]
    extra = ["--long", str(long), "--window", str(window), "--idle", str(idle)]

    def one(job: tuple[str, str]) -> dict[str, list[int]]:
        counts = _callgrind.run(__file__, ["--inner-variant", job[0], "--inner-stream", job[1], *extra])
        print(f"{job[0]} {job[1]}: {counts}", file=sys.stderr, flush=True)  # (what a later failure keeps)
        return counts

    with ThreadPoolExecutor(procs) as pool:
        results = dict(zip(jobs, pool.map(one, jobs), strict=True))
    out: dict[str, dict[str, float]] = {s: {} for s in streams}
    for (_variant, stream), counts in results.items():
        for key, values in counts.items():
            label, n = key.rsplit(" ", 1)
            out[stream][label] = values[0] / int(n)
    return out


def measure(args: argparse.Namespace) -> None:
    figures = per_call(args.variants, args.streams, args.procs, args.long, args.window, args.idle)
    print(
        f"instructions per tool call (callgrind, first-seen calls, a process per figure, "
        f"Python {sys.version.split()[0]})"
    )
    for stream, by_label in figures.items():
        bare = by_label.get("bare")
        print(f" {stream} stream ({sum(len(r) for r in load_runs(stream))} calls):")

        def row(name: str, value: float, bare: float | None = bare) -> None:
            spans = f"   {value / bare:.2f} spans" if bare else ""
            print(f"  {name:<46}{value:>10,.0f}{spans}")

        if bare:
            row("bare OpenTelemetry span", bare)
        for variant, name in VARIANTS.items():
            if variant in by_label:
                row(name, by_label[variant])
        if "idle" in by_label:
            print(f"  {'Guard() idle under the exporting SDK, per second':<46}{by_label['idle']:>10,.0f}")
        if f"at{POSITIONS[0]}" in by_label:
            first = by_label[f"at{POSITIONS[0]}"]
            print("  one long session, Guard() under the exporting SDK:")
            for at in (*POSITIONS, args.long):
                v = by_label[f"at{at}"]
                change = f"({v / first - 1:+.1%} vs call {POSITIONS[0]})"
                row(f"  calls {at:,}..{at + args.window - 1:,} {change}", v)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--streams", default="shared,long", help="comma-separated: shared, long")
    ap.add_argument("--variants", default=",".join(DEFAULT_VARIANTS), help="comma-separated, see above")
    ap.add_argument("--telemetry", action="store_true", help="add the telemetry variant (store off, SDK)")
    ap.add_argument(
        "--long", type=int, default=100_000, help="the flat variant's last window (default 100000)"
    )
    ap.add_argument("--window", type=int, default=200, help="calls per flat window (default 200)")
    ap.add_argument(
        "--idle", type=int, default=20, help="seconds the idle variant waits with no call (default 20)"
    )
    ap.add_argument("--procs", type=int, default=2, help="callgrind processes at once (default 2)")
    ap.add_argument("--modules", action="store_true", help="where the sdk variant's time goes, by module")
    ap.add_argument("--langchain", action="store_true", help="what PlanGuardMiddleware adds to a step")
    ap.add_argument("--segments", help=argparse.SUPPRESS)
    ap.add_argument("--inner-variant", help=argparse.SUPPRESS)
    ap.add_argument("--inner-stream", help=argparse.SUPPRESS)
    ap.add_argument("--steps", type=int, default=40, help="--langchain: agent steps per run (default 40)")
    ap.add_argument("--rounds", type=int, default=3, help="--langchain: rounds per variant (default 3)")
    args = ap.parse_args()
    args.streams = [s for s in args.streams.split(",") if s]
    args.variants = [v for v in args.variants.split(",") if v]
    if args.telemetry and "telemetry" not in args.variants:
        args.variants.append("telemetry")
    if args.segments and args.langchain:
        langchain_segments(args)
    elif args.segments:
        inner(args)
    elif args.modules:
        modules(args)
    elif args.langchain:
        langchain(args)
    else:
        measure(args)


if __name__ == "__main__":
    main()
