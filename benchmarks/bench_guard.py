"""The speed guard (issue #17): what a ``Guard`` costs per tool call, in instructions, against one bare
OpenTelemetry span per call, and whether that cost stays flat over a long session.

    python benchmarks/bench_guard.py [--long 100000] [--window 200]

Everything runs under callgrind (valgrind) in one process, so the figures are instruction counts of the
same interpreter in the same run — deterministic where wall time on a shared machine is not. Counted per
variant, over the tool calls of the 81 real SWE-agent runs (``../shared/data/swe-agent``), each run one
session, start and end included, every thread included (the store's writer, the span exporter), flushed
before the count stops:

* **bare span** — one span per call under a parent, carrying the attributes and events planguard's own
  ``execute_tool`` span for that call has, through a ``BatchSpanProcessor`` to an exporter that discards;
* **Guard(), default sinks** — ``Guard`` with the default config: telemetry on (the process's providers),
  the local session store writing to a temporary folder;
* **Guard(), store and telemetry off** — the pipeline alone: phases, actions, metrics, detectors, policies;
* **one long session** — the default ``Guard`` fed the corpus's calls back to back in one session: the
  instructions per call of a window of ``--window`` calls starting at call 100, 10,000 and ``--long``. The
  store's writer is drained before each window (uncounted) and again before its count stops, so a window
  counts the writing of its own records: a backlog the writer carries into a window from the uncounted
  calls before it (the agent's thread outruns it in this loop) would otherwise land in whichever window
  it happens to be drained in.

Each count starts from an empty collector (``gc.collect()``, uncounted): a full collection that the garbage
of what ran before sets up (the bare spans' leave the youngest generations one collection short of it) would
otherwise land in whichever variant runs next, and be charged to it (~11k instructions per call of the
default ``Guard``'s figure were the bare spans' collection).

Prints; asserts nothing. Targets (issue #17): default ≤ 2 bare spans per call, store and telemetry off ≤ 1.5,
and the long session's last window within 10 % of its first.
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _callgrind  # noqa: E402
from bench_telemetry import bare_span, finish, load_runs, record_spans  # noqa: E402
from opentelemetry import trace  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult  # noqa: E402

from planguard import Config, Guard, ToolEvent  # noqa: E402

POSITIONS = (100, 10_000)
VARIANTS = (
    ("default", "Guard(), default sinks (store + telemetry)"),
    ("off", "Guard(), store and telemetry off"),
)


class _Discard(SpanExporter):
    def export(self, spans: object) -> SpanExportResult:
        return SpanExportResult.SUCCESS


def _drive(guard: Guard, sid: str, events: list[ToolEvent], first_id: int = 0) -> None:
    """Each call as an integration makes it: before_tool, then (unless denied) after_tool with the result."""
    for k, src in enumerate(events):
        ev = ToolEvent(tool=src.tool, arguments=src.arguments, call_id=f"c{first_id + k}", action=src.action)
        if not guard.before_tool(sid, ev).blocks:
            finish(ev, src)
            guard.after_tool(sid, ev)


def _drain(guard: Guard) -> None:
    """Wait until the guard's sinks that write in the background (the store) have written everything."""
    for sink in guard.pipeline.sinks:
        flush = getattr(sink, "flush", None)
        if flush is not None:
            flush(600.0)


def inner(args: argparse.Namespace) -> None:
    seg = _callgrind.Segments(args.segments)
    runs = load_runs(10**9)
    calls = sum(len(r) for r in runs)
    recorded = record_spans(runs)
    tmp = tempfile.mkdtemp(prefix="planguard-bench-guard-")

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(_Discard()))
    tracer = provider.get_tracer("bench")
    default = Guard(Config.model_validate({"store": {"path": f"{tmp}/default"}}))
    off = Guard(Config.model_validate({"telemetry": {"enabled": False}, "store": {"enabled": False}}))
    long = Guard(Config.model_validate({"store": {"path": f"{tmp}/long"}}))
    stream = [ev for run in runs for ev in run]

    gc.collect()
    seg.start()
    seg.zero()
    for spans in recorded.values():
        parent = tracer.start_span("invoke_agent")
        ctx = trace.set_span_in_context(parent)
        for rec in spans:
            bare_span(tracer, ctx, rec)
        parent.end()
    provider.force_flush()
    seg.dump(f"bare {sum(len(s) for s in recorded.values())}")

    for label, guard in (("default", default), ("off", off)):
        gc.collect()
        seg.zero()
        for i, events in enumerate(runs):
            _drive(guard, f"run-{i}", events)
            guard.end(f"run-{i}")
        _drain(guard)  # shutdown() gives the writer 5 s, too little under valgrind to write every record
        guard.shutdown()
        seg.dump(f"{label} {calls}")

    seg.stop()
    done = 0
    for at in (*POSITIONS, args.long):
        while done < at:  # uncounted calls up to the window
            n = min(at - done, len(stream))
            _drive(long, "long", stream[:n], done)
            done += n
        window = stream[: args.window]
        _drain(long)
        gc.collect()
        seg.start()
        seg.zero()
        _drive(long, "long", window, done)
        _drain(long)
        seg.dump(f"at{at} {len(window)}")
        seg.stop()
        done += len(window)
    long.shutdown()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--long", type=int, default=100_000, help="the last window's call index (default 100000)")
    ap.add_argument("--window", type=int, default=200, help="calls per long-session window (default 200)")
    ap.add_argument("--segments", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.segments:
        inner(args)
        return
    counts = _callgrind.run(__file__, sys.argv[1:])
    per_call = {}
    for key, values in counts.items():
        label, n = key.rsplit(" ", 1)
        per_call[label] = values[0] / int(n)
    bare = per_call["bare"]
    print(f"instructions per tool call (callgrind, one process, Python {sys.version.split()[0]})")
    print(f"  {'bare OpenTelemetry span':<44}{bare:>10,.0f}   1.00 span")
    for label, name in VARIANTS:
        print(f"  {name:<44}{per_call[label]:>10,.0f}   {per_call[label] / bare:.2f} spans")
    first = per_call[f"at{POSITIONS[0]}"]
    print("  one long session, default Guard():")
    for at in (*POSITIONS, args.long):
        v = per_call[f"at{at}"]
        calls = f"calls {at:,}..{at + args.window - 1:,}"
        change = f"{v / first - 1:+.1%} vs call {POSITIONS[0]}"
        print(f"    {calls:<42}{v:>10,.0f}   {v / bare:.2f} spans  ({change})")


if __name__ == "__main__":
    main()
