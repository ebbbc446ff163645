"""Does the store's writer keep up with one session in a tight loop? (issue #17)

    python benchmarks/bench_store_writer.py [--calls 100000] [--telemetry]

The default ``Guard()`` (telemetry off unless ``--telemetry``; the local store on, in a temporary folder)
is fed the 81 real SWE-agent runs' tool calls back to back in one session, with no sleep, as fast as the
agent's thread can go: the worst case for a background writer, which must win the GIL from that thread.
Prints the records dropped because the writer's queue was full (``store_queue_full``), the records
written, and the agent's wall time per call over each tenth of the run (flat: the cost of a call does not
grow with the run's length).

Under ``valgrind --tool=none`` (one thread runs at a time, as under callgrind, so every hand-over of the
GIL is slow) the starving of the writer shows with fewer calls::

    valgrind --tool=none -q python benchmarks/bench_store_writer.py --calls 20000
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_telemetry import finish, load_runs

from planguard import Config, Guard, ToolEvent
from planguard.sinks.store.writer import StoreSink


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=100_000)
    ap.add_argument("--telemetry", action="store_true", help="keep telemetry on (the process's providers)")
    args = ap.parse_args()
    stream = [ev for run in load_runs(10**9) for ev in run]
    with tempfile.TemporaryDirectory() as tmp:
        cfg: dict[str, object] = {"store": {"path": tmp}, "sessions": {"idle_timeout_s": None}}
        if not args.telemetry:
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
    telemetry = "on" if args.telemetry else "off"
    print(f"{args.calls:,} calls, one session, default Guard() (telemetry {telemetry})")
    print(f"  store records dropped (store_queue_full): {drops.get('store_queue_full', 0):,}")
    print(f"  longest writer queue: {longest:,} records (max_queue {store.config.max_queue:,})")
    print(f"  other drops: {({k: v for k, v in drops.items() if k != 'store_queue_full'}) or 'none'}")
    print(f"  lines written: {lines:,} (header + a step per call + the end)")
    print("  µs per call, each tenth of the run: " + " ".join(f"{t * 1e6:.0f}" for t in times))


if __name__ == "__main__":
    main()
