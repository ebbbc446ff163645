"""What ``PlanGuardMiddleware`` adds to a LangGraph agent step (issue 5 acceptance: ≤ 5 % of a bare step).

One agent step = one model call + one tool call, on a real ``create_agent`` agent with the same scripted
model and the same tools in every variant:

* ``bare``       — ``create_agent(model, tools)``, no middleware;
* ``null``       — a middleware with the same hooks that only calls the handler: LangChain's own price of
                   having ``wrap_model_call`` / ``wrap_tool_call`` / ``before_agent`` / ``after_agent`` hooks;
* ``planguard``  — ``PlanGuardMiddleware`` with the example config's policies and detectors, telemetry and
                   store off (what the middleware and the core pipeline cost);
* ``planguard+otel`` — the same with the OpenTelemetry sink on (SDK tracer, no exporter).

Each run makes ``STEPS`` steps; variants are interleaved round-robin so machine noise hits them alike, and
the figure per variant is the median over rounds of (run time / steps). Sync ``invoke`` by default,
``--async`` for ``ainvoke``.

A/B differences of a few hundred µs drown in a busy machine's noise (a bare step starts a thread for its
tool call), so the script also accounts for the added time directly:

* **in-hook** — CPU time (of the calling thread) spent inside PlanGuardMiddleware's hooks minus that of the
  model/tool they wrap, measured in the running agent (planguard's whole per-step work: translation +
  the guard's pipeline),
  plus session start/end spread over the run's steps;
* **hooking** — what LangChain's wrapper around each ``wrap_*`` hook costs (it builds a LangSmith run
  context per call), timed on the exact wrappers ``create_agent`` builds, × 2 hooks per step.

Run: ``python benchmarks/bench_langchain.py [--steps 40] [--rounds 30] [--async]``. Prints figures; asserts
nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from planguard_langchain import PlanGuardMiddleware
from planguard_langchain.testing import ScriptedChatModel, call, turn

from planguard.config import load_config
from planguard.guard import Guard

EXAMPLE_CONFIG = Path(__file__).resolve().parents[1] / "examples" / "planguard.yaml"

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


# CPU time of the calling thread: a hook's own cost, unaffected by preemption on a busy machine.
_thread_ns = time.thread_time_ns


class TimedPlanGuardMiddleware(PlanGuardMiddleware):
    """PlanGuardMiddleware that adds up the time spent in its hooks, minus the wrapped model/tool calls."""

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

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        return await self._atimed("model", super().awrap_model_call, request, handler)

    async def abefore_agent(self, state: Any, runtime: Any) -> Any:
        t0 = _thread_ns()
        out = await super().abefore_agent(state, runtime)
        self.samples["run"].append(_thread_ns() - t0)
        return out

    async def aafter_agent(self, state: Any, runtime: Any) -> Any:
        t0 = _thread_ns()
        out = await super().aafter_agent(state, runtime)
        self.samples["run"].append(_thread_ns() - t0)
        return out

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        return self._timed("model", super().wrap_model_call, request, handler)

    def before_agent(self, state: Any, runtime: Any) -> Any:
        t0 = _thread_ns()
        out = super().before_agent(state, runtime)
        self.samples["run"].append(_thread_ns() - t0)
        return out

    def after_agent(self, state: Any, runtime: Any) -> Any:
        t0 = _thread_ns()
        out = super().after_agent(state, runtime)
        self.samples["run"].append(_thread_ns() - t0)
        return out


def hooking_cost_us(n: int = 20_000) -> float:
    """µs LangChain's per-call wrapper adds to one ``wrap_*`` hook (as create_agent wraps them)."""
    from langchain.agents.factory import _wrap_trace_kwargs
    from langsmith import traceable

    m = NullMiddleware()
    wrapped = traceable(name="planguard.wrap_tool_call", **_wrap_trace_kwargs(m))(m.wrap_tool_call)

    def handler(r: Any) -> Any:
        return r

    def med(fn: Callable[..., Any]) -> float:
        ts = []
        for _ in range(n):
            t = _thread_ns()
            fn("request", handler)
            ts.append(_thread_ns() - t)
        return statistics.median(ts) / 1000

    return med(wrapped) - med(m.wrap_tool_call)


def _script(steps: int) -> list[Any]:
    return [turn(call(name, **args)) for name, args in (_CYCLE[i % len(_CYCLE)] for i in range(steps))]


def _guard(otel: bool) -> Guard:
    cfg = load_config(EXAMPLE_CONFIG) if EXAMPLE_CONFIG.is_file() else None
    data = cfg.model_dump(by_alias=True, exclude_unset=True) if cfg is not None else {}
    data["store"] = {"enabled": False}
    data["telemetry"] = {"enabled": otel}
    from planguard.config import Config

    kw: dict[str, Any] = {}
    if otel:
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.trace import TracerProvider

        kw = {"tracer_provider": TracerProvider(), "meter_provider": MeterProvider()}
    return Guard(Config.model_validate(data), **kw)


def build(variant: str, steps: int) -> tuple[Any, Guard | None, Any]:
    model = ScriptedChatModel(turns=_script(steps), record=False)
    guard = None
    middleware: list[Any] = []
    if variant == "null":
        middleware = [NullMiddleware()]
    elif variant.startswith("planguard"):
        guard = _guard(otel=variant.endswith("otel"))
        middleware = [TimedPlanGuardMiddleware(guard)]
    return create_agent(model, TOOLS, middleware=middleware), guard, (middleware or [None])[0]


def run_once(agent: Any, n: int, use_async: bool, clock: Callable[[], float] = time.perf_counter) -> float:
    inputs = {"messages": [HumanMessage("Fix the bug.")]}
    config = {"configurable": {"thread_id": f"bench-{n}"}, "recursion_limit": 100_000}
    gc.collect()
    t0 = clock()
    if use_async:
        asyncio.run(agent.ainvoke(inputs, config))
    else:
        agent.invoke(inputs, config)
    return clock() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=40, help="agent steps per run (default 40)")
    ap.add_argument("--rounds", type=int, default=30, help="interleaved rounds (default 30)")
    ap.add_argument(
        "--async", dest="use_async", action="store_true", help="measure ainvoke instead of invoke"
    )
    ap.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="wall: elapsed time; cpu: CPU time of the whole process (all threads), steadier on a "
        "busy machine",
    )
    args = ap.parse_args()
    clock = time.perf_counter if args.clock == "wall" else time.process_time

    variants = ["bare", "null", "planguard", "planguard+otel"]
    agents = {v: build(v, args.steps) for v in variants}
    for v in variants:  # warm-up: imports, caches, first-call costs
        run_once(agents[v][0], -1, args.use_async)
        mw = agents[v][2]
        if isinstance(mw, TimedPlanGuardMiddleware):
            for samples in mw.samples.values():
                samples.clear()
    per_step: dict[str, list[float]] = {v: [] for v in variants}
    for r in range(args.rounds):
        order = variants[r % len(variants) :] + variants[: r % len(variants)]
        for v in order:
            per_step[v].append(run_once(agents[v][0], r, args.use_async, clock) / args.steps * 1e6)
    for _, guard, _mw in agents.values():
        if guard is not None:
            if guard.errors.total:
                print(f"warning: planguard internal errors during the run: {dict(guard.errors.counts)}")
            guard.shutdown()

    mode = "ainvoke" if args.use_async else "invoke"
    print(
        f"create_agent step = 1 model call + 1 tool call · {args.steps} steps/run · {args.rounds} rounds · "
        f"{mode} · "
        f"{args.clock} clock"
    )
    bare = statistics.median(per_step["bare"])
    print(f"{'variant':16s} {'median µs/step':>15s} {'p25':>9s} {'p75':>9s} {'added µs':>9s} {'added %':>8s}")
    for v in variants:
        s = sorted(per_step[v])
        med = statistics.median(s)
        q = statistics.quantiles(s, n=4)
        print(
            f"{v:16s} {med:15.1f} {q[0]:9.1f} {q[2]:9.1f} {med - bare:9.1f} {100 * (med - bare) / bare:7.2f}%"
        )
    pg = statistics.median(per_step["planguard"])
    null = statistics.median(per_step["null"])
    print(f"A/B: planguard - null = {pg - null:.1f} µs/step; null - bare = {null - bare:.1f} µs/step (noisy)")

    hook = hooking_cost_us()
    print(f"\nadded time accounted directly (per step; bare step median {bare:.1f} µs):")
    print(f"  LangChain's wrapper per wrap_* hook call: {hook:.1f} µs × 2 hooks = {2 * hook:.1f} µs")
    for v in ("planguard", "planguard+otel"):
        mw = agents[v][2]
        assert isinstance(mw, TimedPlanGuardMiddleware)
        tool_us = statistics.median(mw.samples["tool"]) / 1000
        model_us = statistics.median(mw.samples["model"]) / 1000
        runs = len(mw.samples["run"]) / 2
        run_us = sum(mw.samples["run"]) / 1000 / max(runs, 1) / args.steps
        own = tool_us + model_us + run_us
        total = own + 2 * hook
        print(
            f"  {v:15s} in-hook: tool {tool_us:6.1f} + model {model_us:5.1f} + start/end {run_us:4.1f} = "
            f"{own:6.1f} µs;  with hooking {total:6.1f} µs = {100 * total / bare:.2f}% of a bare step"
        )


if __name__ == "__main__":
    main()
