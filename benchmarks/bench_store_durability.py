"""What ``store.durability`` costs the agent per tool call: ``drop`` and ``block`` (records queued for the
background writer) against ``write`` (each record built and written on the agent's thread before the call
returns), and the store off, as the baseline.

    python benchmarks/bench_store_durability.py [--calls 2000] [--rounds 7]

Each round times ``Guard.after_tool`` over ``--calls`` first-seen shell calls of one session per mode, the
modes interleaved round by round (the machine's load moves them alike); reported: the median per call over
the rounds, in microseconds, and what the store adds over the store off. The load average is printed: on a
busy machine the figures are only comparable with others taken under similar load.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from typing import Any

from planguard.config import Config
from planguard.events import ToolEvent
from planguard.guard import Guard

MODES = ("off", "drop", "block", "write")


def _guard(mode: str, store: str) -> Guard:
    settings: dict[str, Any] = {"enabled": False} if mode == "off" else {"path": store, "durability": mode}
    return Guard(Config.model_validate({"telemetry": {"enabled": False}, "store": settings}))


def _round(mode: str, calls: int, store: str, round_no: int) -> float:
    """Seconds per call of one session of ``calls`` calls (the guard's shutdown, which drains the queue, is
    not counted: the agent does not wait for it)."""
    guard = _guard(mode, store)
    sid = f"{mode}-{round_no}"
    events = [
        ToolEvent("bash", {"command": f"grep -n p{i} src/mod_{i % 37}.py"}, call_id=f"c{i}", result="ok")
        for i in range(calls)
    ]
    start = time.perf_counter()
    for event in events:
        guard.after_tool(sid, event)
    elapsed = time.perf_counter() - start
    guard.end(sid)
    guard.shutdown()
    return elapsed / calls


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    per_call: dict[str, list[float]] = {m: [] for m in MODES}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for mode in MODES:
                per_call[mode].append(_round(mode, args.calls, os.path.join(tmp, mode), r))
    base = statistics.median(per_call["off"])
    for mode in MODES:
        med = statistics.median(per_call[mode])
        extra = "" if mode == "off" else f"  (+{(med - base) * 1e6:.1f} µs over the store off)"
        print(f"{mode:>6}: {med * 1e6:8.1f} µs per call{extra}")
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
