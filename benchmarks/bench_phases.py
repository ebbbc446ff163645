"""Benchmark of phase classification over the 81 real SWE-agent runs (shared test data).

Usage: ``python benchmarks/bench_phases.py [--repeat N] [--rules v351278e|v8ec988e|corrected]``

Prints, per event, the median and mean time of ``classify`` + ``apply`` with a cold parse cache
(every action seen for the first time, as in a live session) and with a warm one, and compares the
total classification time of all steps with the time ``json.loads`` takes for the file's lines: a
replay must stay within twice that.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from planguard.events import ToolEvent  # noqa: E402
from planguard.phases import PaperRules, PhaseRules, get_rules  # noqa: E402
from planguard.phases.paper import CorrectedRules  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "swe-agent" / "trajectories.jsonl"


def event_of(step: dict[str, Any]) -> ToolEvent:
    action = step["action"]
    if step["tool_calls"] is None:
        return ToolEvent.shell(action) if action else ToolEvent(tool="", arguments={}, action="")
    call = step["tool_calls"][0]["function"] if step["tool_calls"] else {"name": "", "arguments": {}}
    return ToolEvent(tool=call["name"], arguments=call["arguments"], action=action)


def fresh_rules(name: str) -> PhaseRules:
    # A new instance has an empty parse cache: every action is parsed as if seen for the first time.
    if name == "corrected":
        return CorrectedRules()
    return PaperRules(name)


def time_pass(rules: PhaseRules, runs: list[list[ToolEvent]]) -> list[float]:
    per_event: list[float] = []
    clock = time.perf_counter
    for events in runs:
        state = rules.new_state()
        for event in events:
            t0 = clock()
            state.apply(rules.classify(event, state))
            per_event.append(clock() - t0)
    return per_event


def elementwise_min(passes: list[list[float]]) -> list[float]:
    # The machine may be shared: the fastest of several identical passes is the cost of the code,
    # the rest is preemption.
    return [min(times) for times in zip(*passes, strict=True)]


def report(name: str, per_event: list[float], loads: float) -> None:
    us = 1e6
    total = sum(per_event)
    ordered = sorted(per_event)
    print(
        f"{name}: median {statistics.median(per_event) * us:.2f} us, "
        f"mean {statistics.fmean(per_event) * us:.2f} us, "
        f"p99 {ordered[int(0.99 * len(ordered))] * us:.1f} us, max {ordered[-1] * us:.0f} us; "
        f"total {total * 1e3:.2f} ms = {total / loads:.2f}x json.loads"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--rules", default="v351278e")
    opts = parser.parse_args()
    get_rules(opts.rules)  # validates the name
    if not DATA.exists():
        sys.exit(f"shared data not found: {DATA}")

    lines = DATA.read_text(encoding="utf-8").splitlines()
    loads_passes: list[list[float]] = []
    trajectories: list[dict[str, Any]] = []
    for _ in range(opts.repeat):
        per_line = []
        trajectories = []
        for line in lines:
            t0 = time.perf_counter()
            trajectories.append(json.loads(line))
            per_line.append(time.perf_counter() - t0)
        loads_passes.append(per_line)
    loads = sum(elementwise_min(loads_passes))
    runs = [[event_of(s) for s in t["steps"]] for t in trajectories]
    # The decoded input lives for the whole replay; keep the collector from re-scanning it.
    gc.collect()
    gc.freeze()
    n_events = sum(len(r) for r in runs)

    cold = []
    for _ in range(opts.repeat):
        cold.append(time_pass(fresh_rules(opts.rules), runs))
    warm_rules = fresh_rules(opts.rules)
    time_pass(warm_rules, runs)
    warm = [time_pass(warm_rules, runs) for _ in range(opts.repeat)]

    # The whole replay from decoded lines: building the events and classifying them, cold cache.
    replay_times = []
    for _ in range(opts.repeat):
        rules = fresh_rules(opts.rules)
        t0 = time.perf_counter()
        for t in trajectories:
            state = rules.new_state()
            for s in t["steps"]:
                state.apply(rules.classify(event_of(s), state))
        replay_times.append(time.perf_counter() - t0)

    print(
        f"rules={opts.rules} runs={len(runs)} events={n_events} repeat={opts.repeat}, "
        "per-event times are the best of the repeats"
    )
    print(f"json.loads of the {len(lines)} lines: {loads * 1e3:.2f} ms")
    report("cold cache (every action parsed anew) classify+apply per event", elementwise_min(cold), loads)
    report("warm cache (actions seen before)       classify+apply per event", elementwise_min(warm), loads)
    replay = min(replay_times)
    print(
        f"replay incl. building events, cold, best pass: {replay * 1e3:.2f} ms = "
        f"{replay / loads:.2f}x json.loads; "
        f"json.loads + replay = {(replay + loads) / loads:.2f}x json.loads"
    )


if __name__ == "__main__":
    main()
