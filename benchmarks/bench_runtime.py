"""Live runtime cost per tool call (issue 4 acceptance): ``before_model + before_tool + after_tool`` through
a ``Guard`` with every policy on and the default detectors, telemetry and store off — target ≤ 10 µs median.

Events are the 81 real SWE-agent runs in the shared data (synthetic runs when it is absent); each run is one
live session driven as an agent loop would drive it. Also reported, to show where the time goes:

* the same without the Guard (the bare Session: no registry, locks or fail-open wrapper);
* the async hooks (event loop, fast path);
* without policies, and without detectors/actions (classification + metrics only);
* with a webhook sink subscribed to every finding and decision (endpoint on 127.0.0.1);
* with OpenTelemetry spans (SDK TracerProvider, batch processor, discarding exporter) — informational;
  the telemetry figures proper are ``bench_telemetry.py``'s.

All variants run interleaved, run by run, so they see the same machine conditions; ``--clock cpu`` times
with the thread's CPU clock, which a busy machine disturbs less than wall time.

Run: ``python benchmarks/bench_runtime.py [PATH] [--repeats N] [--clock wall|cpu]``. Prints figures only.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import gc
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from planguard.config import Config, load_config
from planguard.events import ToolEvent
from planguard.guard import Guard

REPO = Path(__file__).resolve().parents[1]
DEFAULT = REPO.parent / "shared" / "data" / "swe-agent" / "trajectories.jsonl"
EXAMPLE = REPO / "examples" / "planguard.yaml"
OFF = {"PLANGUARD_TELEMETRY": "0", "PLANGUARD_STORE": "0"}

#: Set by --clock: wall time (perf_counter) or this thread's CPU time.
CLOCK: Callable[[], int] = time.perf_counter_ns

Driver = Callable[[Guard, list[ToolEvent], str, list[float]], None]


def load_runs(path: Path) -> list[list[ToolEvent]]:
    if path.is_file():
        from planguard.offline.loaders import Trajectory, iter_trajectories

        return [list(t.events) for t in iter_trajectories([path]) if isinstance(t, Trajectory)]
    print(f"({path} not found: synthetic runs)")
    cmds = [
        "cat /testbed/src/mod.py",
        "grep -rn foo /testbed/src",
        "python /testbed/reproduce_bug.py",
        "sed -i s/a/b/ /testbed/src/mod.py",
        "python /testbed/reproduce_bug.py",
        "submit",
    ]
    return [[ToolEvent.shell(cmds[(i + j) % len(cmds)]) for j in range(60)] for i in range(80)]


def sync_run(guard: Guard, run: list[ToolEvent], sid: str, samples: list[float]) -> None:
    clock = CLOCK
    bm, bt, at = guard.before_model, guard.before_tool, guard.after_tool
    for e in run:
        t0 = clock()
        bm(sid)
        if not bt(sid, e).blocks:
            at(sid, e)
        samples.append((clock() - t0) / 1000)
    guard.end(sid)


def bare_run(guard: Guard, run: list[ToolEvent], sid: str, samples: list[float]) -> None:
    clock = CLOCK
    s = guard.pipeline.session(sid)
    bm, bt, at = s.before_model, s.before_tool, s.after_tool
    for e in run:
        t0 = clock()
        bm()
        if not bt(e).blocks:
            at(e)
        samples.append((clock() - t0) / 1000)
    s.end()


def async_run(guard: Guard, run: list[ToolEvent], sid: str, samples: list[float]) -> None:
    clock = CLOCK

    async def agent() -> None:
        for e in run:
            t0 = clock()
            await guard.abefore_model(sid)
            if not (await guard.abefore_tool(sid, e)).blocks:
                await guard.aafter_tool(sid, e)
            samples.append((clock() - t0) / 1000)
        await guard.aend(sid)

    asyncio.run(agent())


def measure(
    variants: list[tuple[str, Guard, Driver]], runs: list[list[ToolEvent]], repeats: int
) -> list[float]:
    """Every variant on every run, interleaved run by run (order rotated), so all see the same conditions."""
    samples: list[list[float]] = [[] for _ in variants]
    for _, guard, drive in variants:  # warm caches (classifier memo tables, compiled regexes)
        for i, run in enumerate(runs[:5]):
            drive(guard, [copy.copy(e) for e in run], f"warm-{i}", [])
    gc.collect()
    for r in range(repeats):
        for i, run in enumerate(runs):
            for k in range(len(variants)):
                j = (k + i + r) % len(variants)
                _, guard, drive = variants[j]
                # the hooks stamp times and merge results into events: every pass gets its own copies
                drive(guard, [copy.copy(e) for e in run], f"r{r}-{i}", samples[j])
    meds = []
    for (label, guard, _), s in zip(variants, samples, strict=True):
        meds.append(report(label, s))
        if guard.errors.total:
            print(f"   internal errors: {dict(guard.errors.counts)}")
        guard.shutdown()
    return meds


def report(label: str, s: Sequence[float]) -> float:
    med = statistics.median(s)
    q = statistics.quantiles(s, n=100)
    print(
        f"{label:56s} median {med:6.2f} µs   mean {statistics.fmean(s):6.2f}   p90 {q[89]:6.2f}   "
        f"p99 {q[98]:7.2f} µs"
    )
    return med


class _Receiver(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # http.server's naming
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def variants_for(full: Config, url: str) -> list[tuple[str, Guard, Driver]]:
    p = full.policies
    no_pol = full.model_copy(
        update={
            "policies": p.model_copy(
                update={
                    "reminder": p.reminder.model_copy(update={"enabled": False}),
                    "violations": p.violations.model_copy(update={"enabled": False}),
                    "responses": p.responses.model_copy(update={"enabled": False}),
                    "gates": [],
                }
            )
        }
    )
    bare = no_pol.model_copy(update={"detectors": no_pol.detectors.model_copy(update={"enabled": False})})
    notify = full.model_copy(
        update={
            "webhook": full.webhook.model_copy(
                update={"url": url, "events": ["finding", "decision:*", "session_end"], "queue_size": 100_000}
            )
        }
    )
    out: list[tuple[str, Guard, Driver]] = [
        ("Guard, all policies + default detectors (sync)", Guard(full), sync_run),
        ("  same, bare Session (no Guard wrapper)", Guard(full), bare_run),
        ("  same, async hooks", Guard(full), async_run),
        ("  no policies (detectors + actions)", Guard(no_pol), sync_run),
        ("  no policies, no detectors/actions (phases + metrics)", Guard(bare), sync_run),
        ("  + webhook on every finding/decision (127.0.0.1)", Guard(notify), sync_run),
    ]
    try:
        from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

        class _Discard(SpanExporter):
            def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
                return SpanExportResult.SUCCESS

        tp = TracerProvider()
        # as in the acceptance benchmark (bench_telemetry.py): batch processor, exporter that discards
        tp.add_span_processor(BatchSpanProcessor(_Discard(), max_queue_size=1 << 17))
        tel = full.model_copy(update={"telemetry": full.telemetry.model_copy(update={"enabled": True})})
        out.append(
            (
                "  + OTel sink (SDK spans, batch processor, discard)",
                Guard(tel, tracer_provider=tp),
                sync_run,
            )
        )
    except Exception as exc:  # informational row only
        print(f"  (OpenTelemetry row skipped: {exc!r})")
    return out


def main() -> None:
    global CLOCK
    ap = argparse.ArgumentParser()
    ap.add_argument("path", nargs="?", type=Path, default=DEFAULT)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="wall: perf_counter; cpu: thread CPU time (use on a busy machine)",
    )
    args = ap.parse_args()
    CLOCK = time.thread_time_ns if args.clock == "cpu" else time.perf_counter_ns
    runs = load_runs(args.path)
    print(
        f"{len(runs)} runs, {sum(map(len, runs))} tool calls; {args.repeats} repeats; {args.clock} clock; "
        "per tool call = before_model + before_tool + after_tool"
    )
    full = load_config(EXAMPLE, env=OFF)
    p = full.policies
    print(
        f"policies ({EXAMPLE.name}): reminder every {p.reminder.every_model_calls} model calls, violations, "
        f"responses ({', '.join(p.responses.findings)}), {len(p.gates)} gates; detectors: all defaults\n"
    )

    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    try:
        meds = measure(
            variants_for(full, f"http://127.0.0.1:{server.server_address[1]}/hook"), runs, args.repeats
        )
    finally:
        server.shutdown()
    print()
    print(
        f"policies + Guard wrapper: +{meds[0] - meds[3]:.2f} µs median (Guard over bare Session: "
        f"+{meds[0] - meds[1]:.2f} µs); detectors + actions: +{meds[3] - meds[4]:.2f} µs; "
        f"phases + metrics: {meds[4]:.2f} µs"
    )
    print(
        f"target ≤ 10 µs median without telemetry: {'met' if meds[0] <= 10 else 'NOT met'} ({meds[0]:.2f} µs)"
    )


if __name__ == "__main__":
    main()
