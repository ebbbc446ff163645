"""What ``PlanGuardMiddleware`` adds to a LangGraph agent step (issue 5 acceptance: ≤ 5 % of a bare step).

One agent step = one model call + one tool call, on a real ``create_agent`` agent with the same scripted
model and the same tools in every variant:

* ``bare``      — ``create_agent(model, tools)``, no middleware;
* ``null``      — a plain middleware with the four hooks ``before_agent`` / ``after_agent`` /
                  ``wrap_model_call`` / ``wrap_tool_call`` that only call the handler: what LangChain itself
                  charges for those hooks (a fixed reference: planguard's hook set has changed);
* ``null-pg``   — ``PlanGuardMiddleware`` with its hooks doing nothing: the same hooks (``after_agent``,
                  ``wrap_model_call``, ``wrap_tool_call``), the same state key, the same precomputed hook
                  signatures: what LangChain charges for exactly what planguard registers;
* ``default``   — ``PlanGuardMiddleware(Guard(examples/planguard.yaml))``, the README's configuration as a
                  user gets it: policies and detectors on, OpenTelemetry on with the *global* providers
                  (no-ops until the application configures OpenTelemetry), the local session store on (JSONL
                  files in a temp directory, written by its background thread), console off. **The headline
                  figure.**
* ``core``      — the same with telemetry and store off: the middleware and the core pipeline only;
* ``otel-sdk``  — ``default`` in an application that configured the OpenTelemetry SDK (spans recorded by an
                  SDK ``TracerProvider``, metrics by an SDK ``MeterProvider``; no exporter);
* ``console``   — ``default`` plus the demo's console timeline (written to /dev/null); opt-in;
* ``core+otel``, ``core+store`` — ``core`` with one of the two default sinks back on; opt-in, to split
                  ``default − core`` between them;
* ``null-model``, ``null-tool``, ``null-agent`` — ``null`` with only its ``wrap_model_call``, only its
                  ``wrap_tool_call``, only its ``before_agent``/``after_agent``; ``null-untraced`` — ``null``
                  built with LangSmith's ``traceable`` (which create_agent wraps every ``wrap_*`` hook in)
                  replaced by the identity; opt-in, to split LangChain's own price.

Every variant's agent is built once; each round runs every variant once (a run = ``--steps`` steps on a
fresh thread id), in an order rotated per round so machine noise and drift hit all alike. Per run we take
wall-clock time and the process's CPU time (all threads: the store's writer thread counts). The figures:

* median µs/step of each variant;
* **added** = median over rounds of (variant − bare) in the same round: paired, so a machine that slows down
  for a while slows both members of a pair;
* **%** = added / median bare step.

The fake model answers instantly, so every µs planguard spends — on the agent's threads or its own, which
compete for the GIL — shows up in the wall clock; with a real model the background work overlaps the model's
network wait. ``--account`` adds a breakdown of planguard's time inside its hooks (thread CPU time, measured
by a timing subclass in separate runs) and LangChain's price per hook.

On a shared machine wall-clock differences of a few % drown in other processes' noise, so
``--instructions`` measures the same A/B as *instructions executed* per step, under valgrind's callgrind
(every run of every variant is one counter segment, all threads included; deterministic to ~0.1 %). It
needs ``valgrind`` and a C compiler with ``valgrind/callgrind.h`` (a 4-line helper is compiled to switch
counters from Python) and takes a few minutes.

Run: ``python benchmarks/bench_langchain.py [--steps 40] [--rounds 60] [--async] [--variants ...]
[--account] [--instructions [--icount-rounds 3]]``. Prints figures (and the load average); asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import gc
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import _callgrind
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from planguard_langchain import PlanGuardMiddleware
from planguard_langchain.testing import ScriptedChatModel, call, turn

from planguard.config import Config, load_config
from planguard.guard import Guard

EXAMPLE_CONFIG = Path(__file__).resolve().parents[1] / "examples" / "planguard.yaml"
VARIANTS = (
    "bare",
    "null",
    "null-pg",
    "default",
    "core",
    "otel-sdk",
    "console",
    "core+otel",
    "core+store",
    "null-model",
    "null-tool",
    "null-agent",
    "null-untraced",
)
DEFAULT_VARIANTS = ("bare", "null", "null-pg", "default", "core", "otel-sdk")

# A realistic mix: searches and reads, a patch, test runs (no submit: the gate would deny it).
_CYCLE = [
    ("bash", {"command": "grep -rn 'def parse' /testbed/pkg"}),
    ("str_replace_editor", {"command": "view", "path": "/testbed/pkg/core.py"}),
    ("bash", {"command": "find /testbed -name '*.py' | head"}),
    (
        "str_replace_editor",
        {"command": "str_replace", "path": "/testbed/pkg/core.py", "old_str": "a", "new_str": "b"},
    ),
    ("bash", {"command": "cd /testbed && python -m pytest tests/test_core.py -q"}),
]


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


TOOLS = [bash, str_replace_editor]


class NullMiddleware(AgentMiddleware):
    """Same hooks as PlanGuardMiddleware, no work: isolates LangChain's cost of hooking."""

    def before_agent(self, state: Any, runtime: Any) -> None:
        return None

    async def abefore_agent(self, state: Any, runtime: Any) -> None:
        return None

    def after_agent(self, state: Any, runtime: Any) -> None:
        return None

    async def aafter_agent(self, state: Any, runtime: Any) -> None:
        return None

    def wrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        return handler(request)

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        return await handler(request)

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        return handler(request)

    async def awrap_tool_call(self, request: Any, handler: Any) -> Any:
        return await handler(request)


class NullPlanGuardMiddleware(PlanGuardMiddleware):
    """PlanGuardMiddleware's hooks, state key and hook signatures, without a guard: LangChain's price for
    exactly what planguard registers."""

    def __init__(self) -> None:
        AgentMiddleware.__init__(self)
        self.tools = []

    def after_agent(self, state: Any, runtime: Any) -> None:
        return None

    async def aafter_agent(self, state: Any, runtime: Any) -> None:
        return None

    def wrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        return handler(request)

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        return await handler(request)

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        return handler(request)

    async def awrap_tool_call(self, request: Any, handler: Any) -> Any:
        return await handler(request)


# CPU time of the calling thread: a hook's own cost, unaffected by preemption on a busy machine.
_thread_ns = time.thread_time_ns


class TimedPlanGuardMiddleware(PlanGuardMiddleware):
    """PlanGuardMiddleware that adds up the time spent in its hooks, minus the wrapped model/tool calls
    (``--account`` only: the probes cost a few µs themselves, so the A/B runs use the plain middleware)."""

    def __init__(self, guard: Guard) -> None:
        super().__init__(guard)
        self.samples: dict[str, list[int]] = {"tool": [], "model": [], "run": []}

    def _timed(self, kind: str, fn: Callable[..., Any], request: Any, handler: Callable[[Any], Any]) -> Any:
        inner = [0]

        def timed_handler(req: Any) -> Any:
            t = _thread_ns()
            try:
                return handler(req)
            finally:
                inner[0] += _thread_ns() - t

        t0 = _thread_ns()
        out = fn(request, timed_handler)
        self.samples[kind].append(_thread_ns() - t0 - inner[0])
        return out

    async def _atimed(
        self, kind: str, fn: Callable[..., Any], request: Any, handler: Callable[[Any], Any]
    ) -> Any:
        inner = [0]

        async def timed_handler(req: Any) -> Any:
            t = _thread_ns()
            try:
                return await handler(req)
            finally:
                inner[0] += _thread_ns() - t

        t0 = _thread_ns()
        out = await fn(request, timed_handler)
        self.samples[kind].append(_thread_ns() - t0 - inner[0])
        return out

    def wrap_tool_call(self, request: Any, handler: Any) -> Any:
        return self._timed("tool", super().wrap_tool_call, request, handler)

    async def awrap_tool_call(self, request: Any, handler: Any) -> Any:
        return await self._atimed("tool", super().awrap_tool_call, request, handler)

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        return self._timed("model", super().wrap_model_call, request, handler)

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        return await self._atimed("model", super().awrap_model_call, request, handler)

    def after_agent(self, state: Any, runtime: Any) -> Any:
        t0 = _thread_ns()
        out = super().after_agent(state, runtime)
        self.samples["run"].append(_thread_ns() - t0)
        return out

    async def aafter_agent(self, state: Any, runtime: Any) -> Any:
        t0 = _thread_ns()
        out = await super().aafter_agent(state, runtime)
        self.samples["run"].append(_thread_ns() - t0)
        return out


class _PassThrough(PlanGuardMiddleware):
    """PlanGuardMiddleware's class machinery (precomputed hook signatures) with hooks that do nothing."""

    def wrap_tool_call(self, request: Any, handler: Any) -> Any:
        return handler(request)


def hooking_cost_us(n: int = 20_000) -> tuple[float, float]:
    """µs LangChain's per-call wrapper adds to one ``wrap_*`` hook, as create_agent wraps them: for a plain
    middleware method, and for PlanGuardMiddleware's (whose signature is precomputed)."""
    from langchain.agents.factory import _wrap_trace_kwargs
    from langsmith import traceable

    def handler(r: Any) -> Any:
        return r

    def med(fn: Callable[..., Any]) -> float:
        ts = []
        for _ in range(n):
            t = _thread_ns()
            fn("request", handler)
            ts.append(_thread_ns() - t)
        return statistics.median(ts) / 1000

    out = []
    for m in (NullMiddleware(), _PassThrough(Guard(_config("core")))):
        wrapped = traceable(name="x.wrap_tool_call", **_wrap_trace_kwargs(m))(m.wrap_tool_call)
        out.append(med(wrapped) - med(m.wrap_tool_call))
    return out[0], out[1]


def _script(steps: int) -> list[Any]:
    return [turn(call(name, **args)) for name, args in (_CYCLE[i % len(_CYCLE)] for i in range(steps))]


_STORE_DIR = tempfile.mkdtemp(prefix="planguard-bench-store-")
atexit.register(shutil.rmtree, _STORE_DIR, True)


def _config(variant: str) -> Config:
    cfg = load_config(EXAMPLE_CONFIG) if EXAMPLE_CONFIG.is_file() else Config()
    data = cfg.model_dump(by_alias=True, exclude_unset=True)
    store = dict(data.get("store") or {})
    store["path"] = _STORE_DIR  # same store as the example's, in a temp directory
    telemetry = dict(data.get("telemetry") or {})
    if variant.startswith("core"):  # core+otel / core+store: one sink back on (to split the sinks' cost)
        store["enabled"] = variant == "core+store"
        telemetry["enabled"] = variant == "core+otel"
    data["store"] = store
    data["telemetry"] = telemetry
    return Config.model_validate(data)


def _guard(variant: str) -> Guard:
    kw: dict[str, Any] = {}
    if variant == "otel-sdk":
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.trace import TracerProvider

        kw = {"tracer_provider": TracerProvider(), "meter_provider": MeterProvider()}
    if variant == "console":
        from planguard.sinks.console import ConsoleSink

        kw = {"sinks": [ConsoleSink(open(os.devnull, "w"), color=False)]}  # noqa: SIM115 (closed at exit)
    return Guard(_config(variant), **kw)


class _NullModel(AgentMiddleware):
    def wrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        return handler(request)


class _NullTool(AgentMiddleware):
    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        return handler(request)


class _NullAgent(AgentMiddleware):
    def before_agent(self, state: Any, runtime: Any) -> None:
        return None

    def after_agent(self, state: Any, runtime: Any) -> None:
        return None


_NULLS: dict[str, type[AgentMiddleware]] = {
    "null": NullMiddleware,
    "null-pg": NullPlanGuardMiddleware,
    "null-model": _NullModel,
    "null-tool": _NullTool,
    "null-agent": _NullAgent,
}


def _untraced_agent(model: Any) -> Any:
    import langchain.agents.factory as factory

    traceable = getattr(factory, "traceable")  # noqa: B009 (not re-exported: mypy wants getattr)
    setattr(factory, "traceable", lambda **kw: lambda fn: fn)  # noqa: B010
    try:
        return create_agent(model, TOOLS, middleware=[NullMiddleware()])
    finally:
        setattr(factory, "traceable", traceable)  # noqa: B010


def build(variant: str, steps: int, timed: bool = False) -> tuple[Any, Guard | None, Any]:
    model = ScriptedChatModel(turns=_script(steps), record=False)
    guard = None
    middleware: list[Any] = []
    if variant == "null-untraced":
        return _untraced_agent(model), None, None
    if variant in _NULLS:
        middleware = [_NULLS[variant]()]
    elif variant != "bare":
        guard = _guard(variant)
        middleware = [TimedPlanGuardMiddleware(guard) if timed else PlanGuardMiddleware(guard)]
    return create_agent(model, TOOLS, middleware=middleware), guard, (middleware or [None])[0]


def run_once(
    agent: Any, n: int, use_async: bool, guard: Guard | None = None, *, collect: bool = True
) -> tuple[float, float]:
    """(wall s, process CPU s) of one run, including the time the guard's sinks take to write out what the
    run gave them (so background work is charged to the run that caused it, not to whichever comes next)."""
    inputs = {"messages": [HumanMessage("Fix the bug.")]}
    config = {"configurable": {"thread_id": f"bench-{n}"}, "recursion_limit": 100_000}
    if collect:
        gc.collect()
    c0, t0 = time.process_time(), time.perf_counter()
    if use_async:
        asyncio.run(agent.ainvoke(inputs, config))
    else:
        agent.invoke(inputs, config)
    if guard is not None:
        _flush(guard)
    return time.perf_counter() - t0, time.process_time() - c0


def _flush(guard: Guard) -> None:
    for sink in guard.pipeline.sinks:
        flush = getattr(sink, "flush", None) or getattr(sink, "force_flush", None)
        if flush is not None:
            flush()


def _report(title: str, per_step: dict[str, list[float]], variants: list[str]) -> None:
    bare = per_step["bare"]
    base = statistics.median(bare)
    print(f"\n{title}")
    print(
        f"  {'variant':10s} {'median µs/step':>15s} {'p25':>9s} {'p75':>9s} {'added µs':>9s} {'added %':>8s}"
    )
    for v in variants:
        s = per_step[v]
        q = statistics.quantiles(s, n=4) if len(s) > 1 else [s[0], s[0], s[0]]  # (one round: no spread)
        added = statistics.median(a - b for a, b in zip(s, bare, strict=True)) if v != "bare" else 0.0
        print(
            f"  {v:10s} {statistics.median(s):15.1f} {q[0]:9.1f} {q[2]:9.1f} {added:9.1f} "
            f"{100 * added / base:7.2f}%"
        )


def account(steps: int, runs: int, use_async: bool) -> None:
    """planguard's own time per step inside its hooks, by variant (timing subclass, separate runs)."""
    plain, presigned = hooking_cost_us()
    print(
        "\nLangChain's wrapper around each wrap_* hook (LangSmith traceable, tracing off), per call, outside "
        f"a run: {plain:.1f} µs for a plain middleware, {presigned:.1f} µs for PlanGuardMiddleware "
        "(precomputed signatures); inside a run it also copies the run's callback config, see "
        "--instructions --variants null,null-model,null-tool,null-agent,null-untraced"
    )
    print("planguard's CPU time inside its hooks per step (agent threads only; medians):")
    for v in ("core", "default", "otel-sdk"):
        agent, guard, mw = build(v, steps, timed=True)
        run_once(agent, -1, use_async, guard)
        for samples in mw.samples.values():
            samples.clear()
        for r in range(runs):
            run_once(agent, r, use_async, guard)
        tool_us = statistics.median(mw.samples["tool"]) / 1000
        model_us = statistics.median(mw.samples["model"]) / 1000
        run_us = sum(mw.samples["run"]) / 1000 / runs / steps
        own = tool_us + model_us + run_us
        print(
            f"  {v:10s} tool {tool_us:6.1f} + model {model_us:5.1f} + run end {run_us:4.1f} "
            f"= {own:6.1f} µs (+ hooking {2 * presigned:.1f})"
        )
        assert guard is not None
        guard.shutdown()


def instructions(steps: int, rounds: int, variants: list[str], use_async: bool) -> None:
    """The A/B in instructions: this script re-run under callgrind with ``--segments`` (see below)."""
    reason = _callgrind.missing()
    if reason is not None:
        print(f"--instructions needs valgrind and a C compiler: {reason}", file=sys.stderr)
        return
    t0 = time.perf_counter()
    args = ["--steps", str(steps), "--rounds", str(rounds), "--variants", ",".join(variants)]
    by_variant = _callgrind.run(__file__, [*args, *(["--async"] if use_async else [])])
    counts = {v: by_variant.get(v, []) for v in variants}
    if os.environ.get("BENCH_VERBOSE"):
        print({v: [f"{c / steps:,.0f}" for c in counts[v]] for v in variants})
    per_step = {v: [c / steps for c in counts[v]] for v in variants}
    bare = per_step["bare"]
    base = statistics.median(bare)
    print(
        f"\ninstructions executed per step (callgrind, all threads; {rounds} rounds; "
        f"{time.perf_counter() - t0:.0f} s under valgrind)"
    )
    print(
        f"  {'variant':10s} {'median instr/step':>18s} {'min':>11s} {'max':>11s} {'added':>10s} "
        f"{'added %':>8s}"
    )
    for v in variants:
        s = per_step[v]
        added = statistics.median(a - b for a, b in zip(s, bare, strict=True)) if v != "bare" else 0.0
        print(
            f"  {v:10s} {statistics.median(s):18,.0f} {min(s):11,.0f} {max(s):11,.0f} {added:10,.0f} "
            f"{100 * added / base:7.2f}%"
        )


def segments(lib_path: str, steps: int, rounds: int, variants: list[str], use_async: bool) -> None:
    """Runs inside callgrind: one counter segment per (variant, round), labelled with the variant."""
    cg = _callgrind.Segments(lib_path)
    agents = {v: build(v, steps) for v in variants}
    for v in variants:
        run_once(agents[v][0], -1, use_async, agents[v][1])
    cg.start()
    for v in variants:  # instrumented warm-up: callgrind's own first-translation costs
        run_once(agents[v][0], -2, use_async, agents[v][1])
    # The first counter segment of a process comes out ~7 % high whatever it runs: a discarded one.
    gc.collect()
    cg.zero()
    run_once(agents[variants[0]][0], -3, use_async, agents[variants[0]][1], collect=False)
    cg.dump("discarded")
    for r in range(rounds):
        k = r % len(variants)
        for v in variants[k:] + variants[:k]:
            gc.collect()
            cg.zero()
            run_once(agents[v][0], r, use_async, agents[v][1], collect=False)
            cg.dump(v)
    for _, guard, _ in agents.values():
        if guard is not None:
            guard.shutdown()


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--steps", type=int, default=40, help="agent steps per run (default 40)")
    ap.add_argument("--rounds", type=int, default=60, help="interleaved rounds (default 60)")
    ap.add_argument("--async", dest="use_async", action="store_true", help="measure ainvoke, not invoke")
    ap.add_argument(
        "--variants",
        default=",".join(DEFAULT_VARIANTS),
        help=f"comma-separated, from {', '.join(VARIANTS)} (bare is always run)",
    )
    ap.add_argument("--account", action="store_true", help="also break planguard's in-hook time down")
    ap.add_argument(
        "--instructions", action="store_true", help="also count instructions per step under callgrind"
    )
    ap.add_argument("--icount-rounds", type=int, default=3, help="rounds under callgrind (default 3)")
    ap.add_argument("--segments", metavar="LIB", help=argparse.SUPPRESS)  # internal: run under callgrind
    args = ap.parse_args()
    variants = ["bare", *(v for v in args.variants.split(",") if v and v != "bare")]
    unknown = set(variants) - set(VARIANTS)
    if unknown:
        ap.error(f"unknown variants: {', '.join(sorted(unknown))}")
    if args.segments:
        segments(args.segments, args.steps, args.rounds, variants, args.use_async)
        return
    for key in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        if os.environ.get(key):
            print(
                f"note: {key} is set: planguard exports over OTLP and keeps no local store", file=sys.stderr
            )

    if args.rounds > 0:
        wall_clock(args.steps, args.rounds, variants, args.use_async)
    if args.account:
        account(args.steps, max(5, args.rounds // 4), args.use_async)
    if args.instructions:
        instructions(args.steps, args.icount_rounds, variants, args.use_async)


def wall_clock(steps: int, rounds: int, variants: list[str], use_async: bool) -> None:
    agents = {v: build(v, steps) for v in variants}
    for v in variants:  # warm-up: imports, caches, first-call costs
        run_once(agents[v][0], -1, use_async, agents[v][1])
    wall: dict[str, list[float]] = {v: [] for v in variants}
    cpu: dict[str, list[float]] = {v: [] for v in variants}
    load0 = os.getloadavg()
    for r in range(rounds):
        k = r % len(variants)
        for v in variants[k:] + variants[:k]:
            w, c = run_once(agents[v][0], r, use_async, agents[v][1])
            wall[v].append(w / steps * 1e6)
            cpu[v].append(c / steps * 1e6)
    load1 = os.getloadavg()
    for v, (_, guard, _) in agents.items():
        if guard is not None:
            if guard.errors.total:
                print(f"warning: {v}: planguard internal errors during the run: {dict(guard.errors.counts)}")
            guard.shutdown()
            for sink in guard.pipeline.sinks:
                drops = getattr(sink, "drops", None)
                if drops is not None and drops.total:
                    print(f"warning: {v}: {type(sink).__name__} dropped {drops.counts}")

    mode = "ainvoke" if use_async else "invoke"
    print(
        f"create_agent step = 1 model call + 1 tool call (scripted model, trivial tools) · {steps} "
        f"steps/run · {rounds} rounds · {mode} · {os.cpu_count()} CPUs · load average "
        f"{load0[0]:.2f} → {load1[0]:.2f}"
    )
    _report("wall clock (the acceptance figure: added = paired median of variant − bare)", wall, variants)
    _report("process CPU time, all threads", cpu, variants)


if __name__ == "__main__":
    main()
