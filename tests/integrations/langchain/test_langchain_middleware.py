"""PlanGuardMiddleware on real ``create_agent`` agents and the custom-graph helpers on a real ``StateGraph``.

The agents are real LangChain v1 / LangGraph agents; only the chat model is scripted
(``ScriptedChatModel``), and the tools really run. The tools use SWE-agent's names and argument shapes
(``bash``, ``str_replace_editor``, ``submit``), whose phases the paper's rules define exactly.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

pytest.importorskip("langchain.agents", reason="the LangChain integration needs langchain>=1")

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, ToolException, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command, interrupt
from planguard_langchain import (
    GuardHooks,
    PlanGuardMiddleware,
    guarded_model_node,
    guarded_tool_node,
    is_planguard_message,
    session_end_node,
    tool_wrappers,
)
from planguard_langchain.testing import ScriptedChatModel, call, turn
from planguard_langchain.translate import safe_insert_index

from planguard.guard import Guard
from planguard.testing import RecordingSink, guard_for_tests

REMINDER = "PLAN REMINDER:"
SEARCH = "grep -rn 'def parse' /testbed/pkg"
PARALLEL = "# parallel"
PATCH = {"command": "str_replace", "path": "/testbed/pkg/core.py", "old_str": "a", "new_str": "b"}


# ---------------------------------------------------------------------------------------------- fixtures


class Workspace:
    """Real tools with SWE-agent's names; records what actually ran (thread-safe)."""

    def __init__(self, *, delay_s: float = 0.0, barrier: int = 0) -> None:
        self.ran: list[tuple[str, dict[str, Any]]] = []
        self.lock = threading.Lock()
        self.delay_s = delay_s
        self.barrier = threading.Barrier(barrier, timeout=10) if barrier else None
        self.abarrier = asyncio.Barrier(barrier) if barrier else None
        self.tools = self._make()

    def _note(self, name: str, args: dict[str, Any]) -> None:
        with self.lock:
            self.ran.append((name, args))

    def _make(self) -> list[BaseTool]:
        ws = self

        @tool
        def bash(command: str) -> str:
            """Run a shell command."""
            ws._note("bash", {"command": command})
            if ws.barrier is not None and PARALLEL in command:
                ws.barrier.wait()  # passes only if the parallel calls really run at the same time
            if ws.delay_s:
                time.sleep(ws.delay_s)
            if "exit 3" in command:
                raise ToolException("command failed with exit code 3")
            return f"ran: {command}"

        async def abash(command: str) -> str:
            ws._note("bash", {"command": command})
            if ws.abarrier is not None and PARALLEL in command:
                await asyncio.wait_for(ws.abarrier.wait(), 10)
            if ws.delay_s:
                await asyncio.sleep(ws.delay_s)
            return f"ran: {command}"

        bash.coroutine = abash
        bash.handle_tool_error = True

        @tool
        def str_replace_editor(
            command: str,
            path: str,
            file_text: str | None = None,
            old_str: str | None = None,
            new_str: str | None = None,
        ) -> str:
            """View, create and edit files."""
            ws._note("str_replace_editor", {"command": command, "path": path})
            return f"{command} {path}: ok"

        @tool
        def submit() -> str:
            """Submit the work."""
            ws._note("submit", {})
            return "submitted"

        return [bash, str_replace_editor, submit]

    def names(self) -> list[str]:
        with self.lock:
            return [n for n, _ in self.ran]


def _config(**policies: Any) -> dict[str, Any]:
    """Policies off unless asked for, so each test sees only the behaviour it is about."""
    base: dict[str, Any] = {
        "reminder": {"enabled": False},
        "violations": {"enabled": False},
        "responses": {"enabled": False},
        "gates": [],
    }
    base.update(policies)
    return {"plan": "plan", "policies": base}


REMIND_EVERY_5 = {"reminder": {"enabled": True, "every_model_calls": 5, "min_gap_model_calls": 0}}
SUBMIT_GATE = {
    "gates": [
        {
            "name": "validate-before-submit",
            "tool": "submit",
            "until": {"phase_after": {"phase": "V", "after": "P"}},
        }
    ]
}


def _guard(**policies: Any) -> tuple[Guard, RecordingSink]:
    return guard_for_tests(_config(**policies))


def _run(agent: Any, thread: str | None, mode: str, text: str = "Fix the bug.") -> dict[str, Any]:
    inputs = {"messages": [HumanMessage(text)]}
    config = {"configurable": {"thread_id": thread}} if thread is not None else None
    if mode == "async":
        out: dict[str, Any] = asyncio.run(agent.ainvoke(inputs, config))
    else:
        out = agent.invoke(inputs, config)
    return out


def _searches(n: int) -> list[AIMessage]:
    return [turn(call("bash", command=f"{SEARCH}{i}")) for i in range(n)]


def _injected(messages: Sequence[BaseMessage]) -> list[str]:
    return [str(m.content) for m in messages if isinstance(m, HumanMessage) and is_planguard_message(m)]


MODES = ["sync", "async"]


# ---------------------------------------------------------------------------------------------- reminders


@pytest.mark.parametrize("mode", MODES)
def test_reminders_reach_every_fifth_model_request_and_not_the_history(mode: str) -> None:
    guard, rec = _guard(**REMIND_EVERY_5)
    ws = Workspace()
    model = ScriptedChatModel(turns=_searches(11))  # 12 model calls: 11 tool turns + the final answer
    saver = InMemorySaver()
    agent = create_agent(model, ws.tools, middleware=[PlanGuardMiddleware(guard)], checkpointer=saver)

    out = _run(agent, "t-remind", mode)

    requests = model.requests_for("t-remind")
    assert len(requests) == 12
    with_reminder = [i + 1 for i, msgs in enumerate(requests) if any(REMINDER in t for t in _injected(msgs))]
    assert with_reminder == [5, 10]
    # Ephemeral: in the request, at its end (after the last tool result), never in the persisted state.
    fifth = requests[4]
    assert isinstance(fifth[-1], HumanMessage) and str(fifth[-1].content).startswith(REMINDER)
    assert isinstance(fifth[-2], ToolMessage)
    assert not _injected(out["messages"])
    checkpoint = agent.get_state({"configurable": {"thread_id": "t-remind"}})
    assert len(checkpoint.values["messages"]) == 24 and not _injected(checkpoint.values["messages"])
    assert rec.summaries["t-remind"].n_model_calls == 12
    assert len(rec.decisions_of("remind", session_id="t-remind")) == 2


def test_persisted_reminder_is_stored_right_before_the_models_answer() -> None:
    guard, _ = _guard(
        reminder={"enabled": True, "every_model_calls": 2, "min_gap_model_calls": 0, "delivery": "persisted"}
    )
    ws = Workspace()
    model = ScriptedChatModel(turns=_searches(3))
    agent = create_agent(model, ws.tools, middleware=[PlanGuardMiddleware(guard)])

    out = _run(agent, "t-persist", "sync")

    msgs = out["messages"]
    stored = [i for i, m in enumerate(msgs) if _injected([m])]
    assert len(stored) == 2  # model calls 2 and 4
    for i in stored:
        assert isinstance(msgs[i - 1], ToolMessage)  # after the tool round, never inside it
        assert isinstance(msgs[i + 1], AIMessage)  # the answer to the request that carried it
    _assert_provider_valid(msgs)


# ---------------------------------------------------------------------------------------------- nudges


@pytest.mark.parametrize("mode", MODES)
def test_search_loop_nudge_at_the_threshold_reaches_the_next_request(mode: str) -> None:
    cfg = _config(
        responses={"enabled": True, "findings": {"search_loop": {"ladder": {"log": 1, "nudge": 1}}}}
    )
    cfg["detectors"] = {"search_loop": {"threshold": 6}}
    guard, rec = guard_for_tests(cfg)
    ws = Workspace()
    model = ScriptedChatModel(turns=_searches(9))
    agent = create_agent(model, ws.tools, middleware=[PlanGuardMiddleware(guard)])

    _run(agent, "t-loop", mode)

    (finding,) = rec.findings_of("search_loop", session_id="t-loop")
    assert (finding.first_step, finding.last_step) == (0, 5)  # the 6th search in a row crosses the threshold
    requests = model.requests_for("t-loop")
    nudged = [i for i, msgs in enumerate(requests) if _injected(msgs)]
    assert nudged == [6]  # the model request right after the 6th call, and only that one (ephemeral)
    (text,) = _injected(requests[6])
    assert "searched and read for many steps" in text
    assert isinstance(requests[6][-2], ToolMessage)  # after the last tool result
    assert len(rec.decisions_of("nudge", session_id="t-loop")) == 1


# ---------------------------------------------------------------------------------------------- gates


@pytest.mark.parametrize("mode", MODES)
def test_gate_denial_is_a_tool_error_the_model_sees_and_the_tool_never_runs(mode: str) -> None:
    guard, rec = _guard(**SUBMIT_GATE)
    ws = Workspace()
    model = ScriptedChatModel(
        turns=[
            turn(call("str_replace_editor", **PATCH)),
            turn(call("submit")),  # patch but no validation yet: denied
            turn(
                call("str_replace_editor", command="create", path="/testbed/reproduce_bug.py", file_text="x")
            ),
            turn(call("bash", command="python /testbed/reproduce_bug.py")),
            turn(call("submit")),  # validated after the patch: allowed
        ]
    )
    agent = create_agent(model, ws.tools, middleware=[PlanGuardMiddleware(guard)])

    out = _run(agent, "t-gate", mode)

    assert ws.names().count("submit") == 1
    denials = [m for m in out["messages"] if isinstance(m, ToolMessage) and m.status == "error"]
    assert len(denials) == 1
    assert denials[0].name == "submit" and "validate-before-submit" in str(denials[0].content)
    # The model's next request holds the denial as the answer to its submit call.
    third = model.requests_for("t-gate")[2]
    assert isinstance(third[-1], ToolMessage) and third[-1].status == "error"
    assert third[-1].tool_call_id == third[-2].tool_calls[0]["id"]  # type: ignore[attr-defined]
    assert len(rec.decisions_of("deny", session_id="t-gate")) == 1
    # Patch, then the reproduction script created and run after it (validation); the denied submit is no step.
    assert rec.summaries["t-gate"].letters == "PVV"
    assert [s.event.tool for s in rec.steps_of("t-gate")] == [
        "str_replace_editor",
        "str_replace_editor",
        "bash",
        "submit",
    ]


# ---------------------------------------------------------------------------------------------- stop


@pytest.mark.parametrize("mode", MODES)
def test_stop_ends_the_run_gracefully_and_keeps_the_work(mode: str) -> None:
    guard, rec = _guard(
        responses={
            "enabled": True,
            "findings": {
                "search_loop": {"ladder": {"log": 1, "stop": 1}, "stop_message": "STOPPED: {kind} persisted."}
            },
        }
    )
    ws = Workspace()
    model = ScriptedChatModel(turns=_searches(30))
    agent = create_agent(model, ws.tools, middleware=[PlanGuardMiddleware(guard)])

    out = _run(agent, "t-stop", mode)  # no exception, no recursion limit

    msgs = out["messages"]
    final = msgs[-1]
    assert isinstance(final, AIMessage) and not final.tool_calls
    assert str(final.content) == "STOPPED: search_loop persisted."
    ran = ws.names()
    (finding,) = rec.findings_of("search_loop", session_id="t-stop")
    assert len(ran) == finding.last_step + 1  # every call before the stop ran; none after
    assert sum(isinstance(m, ToolMessage) and m.status == "success" for m in msgs) == len(ran)
    # The model is not asked again once the stop is known.
    assert len(model.requests_for("t-stop")) == len(ran) + 1
    assert rec.decisions_of("stop", session_id="t-stop")
    assert "t-stop" in rec.summaries  # after_agent still closed the session


# ---------------------------------------------------------------------------------------------- concurrency


@pytest.mark.parametrize("mode", MODES)
def test_parallel_tool_calls_run_concurrently_and_are_all_recorded(mode: str) -> None:
    guard, rec = _guard(**REMIND_EVERY_5)
    ws = Workspace(barrier=4)
    four = turn(*[call("bash", command=f"grep -rn x{i} /testbed/pkg {PARALLEL}") for i in range(4)])
    model = ScriptedChatModel(turns=[four, four, four])
    agent = create_agent(model, ws.tools, middleware=[PlanGuardMiddleware(guard)])

    out = _run(agent, "t-par", mode)

    assert len(ws.ran) == 12
    steps = rec.steps_of("t-par")
    assert sorted(s.index for s in steps) == list(range(12))
    assert all(s.done and s.event.result and s.event.result.startswith("ran: ") for s in steps)
    summary = rec.summaries["t-par"]
    assert summary.n_steps == 12 and summary.letters == "N" * 12
    assert sum(isinstance(m, ToolMessage) for m in out["messages"]) == 12
    _assert_provider_valid(out["messages"])


@pytest.mark.parametrize("mode", MODES)
def test_several_threads_at_once_keep_separate_sessions(mode: str) -> None:
    guard, rec = _guard(**REMIND_EVERY_5, **SUBMIT_GATE)
    ws = Workspace(delay_s=0.002)

    def script(thread: int) -> list[AIMessage]:
        # Thread k: k+3 searches, a patch, a submit (denied), a validation, a submit (allowed).
        return [
            *_searches(thread + 3),
            turn(call("str_replace_editor", **PATCH)),
            turn(call("submit")),
            turn(call("bash", command="cd /testbed && python -m pytest tests/test_core.py")),
            turn(call("submit")),
        ]

    scripts = {f"t{k}": script(k) for k in range(4)}
    model = ScriptedChatModel(turns=[lambda msgs: _by_task(scripts, msgs)] * 20)
    agent = create_agent(model, ws.tools, middleware=[PlanGuardMiddleware(guard)])

    if mode == "async":

        async def all_runs() -> list[Any]:
            return await asyncio.gather(  # type: ignore[no-any-return]
                *(
                    agent.ainvoke({"messages": [HumanMessage(t)]}, {"configurable": {"thread_id": t}})
                    for t in scripts
                )
            )

        asyncio.run(all_runs())
    else:
        with ThreadPoolExecutor(4) as pool:
            list(
                pool.map(
                    lambda t: agent.invoke(
                        {"messages": [HumanMessage(t)]}, {"configurable": {"thread_id": t}}
                    ),
                    scripts,
                )
            )

    for k, t in enumerate(scripts):
        s = rec.summaries[t]
        assert s.letters == "N" * (k + 3) + "P" + "v", (t, s.letters)
        assert s.n_steps == k + 6  # the denied submit is not a step
        assert len(rec.decisions_of("deny", session_id=t)) == 1
        reminded = [i + 1 for i, m in enumerate(model.requests_for(t)) if _injected(m)]
        assert reminded == [n for n in (5, 10) if n <= k + 8]


def _by_task(scripts: dict[str, list[AIMessage]], msgs: list[BaseMessage]) -> AIMessage | None:
    task = str(msgs[0].content)
    k = sum(isinstance(m, AIMessage) for m in msgs)
    s = scripts[task]
    return s[k] if k < len(s) else None


# ---------------------------------------------------------------------------------------------- sessions


def test_run_without_thread_id_gets_a_session_of_its_own() -> None:
    guard, rec = _guard()
    ws = Workspace()
    model = ScriptedChatModel(turns=_searches(2))
    agent = create_agent(model, ws.tools, middleware=[PlanGuardMiddleware(guard)])

    _run(agent, None, "sync")
    _run(agent, None, "async")

    assert len(rec.summaries) == 2
    assert all(sid.startswith("run-") and s.n_steps == 2 for sid, s in rec.summaries.items())
    assert len(guard) == 0  # both ended


@pytest.mark.parametrize("thread", ["t-early", None])
def test_a_run_ended_before_its_first_model_call_still_records_its_session(thread: str | None) -> None:
    from langchain.agents.middleware import AgentMiddleware, hook_config

    class Refuse(AgentMiddleware):  # e.g. an input guardrail
        @hook_config(can_jump_to=["end"])
        def before_agent(self, state: Any, runtime: Any) -> dict[str, Any]:
            return {"jump_to": "end"}

    guard, rec = _guard()
    model = ScriptedChatModel(turns=_searches(2))
    agent = create_agent(model, Workspace().tools, middleware=[PlanGuardMiddleware(guard), Refuse()])

    _run(agent, thread, "sync")

    assert not model.requests  # the model was never called
    ((sid, summary),) = rec.summaries.items()
    assert summary.n_steps == summary.n_model_calls == 0 and rec.started == [sid]
    assert sid == thread or sid.startswith("run-")
    assert len(guard) == 0


def test_sessions_open_at_the_first_model_call_with_the_integrations_metadata() -> None:
    guard, rec = _guard()
    seen: list[dict[str, Any]] = []
    start = rec.on_session_start
    rec.on_session_start = lambda session, state: (seen.append(dict(session.metadata)), start(session, state))  # type: ignore[method-assign]
    agent = create_agent(
        ScriptedChatModel(turns=_searches(2)), Workspace().tools, middleware=[PlanGuardMiddleware(guard)]
    )

    _run(agent, "t-meta", "sync")
    _run(agent, None, "async")

    # the integration, and the provider and model its LangChain chat model names (LangSmith parameters)
    meta = {"integration": "langchain", "provider": "scriptedchatmodel", "model": "scripted"}
    assert seen == [meta] * 2
    assert len(rec.started) == len(rec.summaries) == 2


def test_tool_results_reach_the_core_as_plain_str() -> None:
    # ``ToolMessage.text`` is a str subclass; the core judges outputs only from plain str, as loaders give.
    guard, rec = _guard()

    @tool
    def blocks(path: str) -> list[dict[str, str]]:
        """Returns content blocks."""
        return [{"type": "text", "text": "ERROR: "}, {"type": "text", "text": f"{path} not found"}]

    ws = Workspace()
    model = ScriptedChatModel(
        turns=[turn(call("bash", command="ls /testbed")), turn(call("blocks", path="x"))]
    )
    agent = create_agent(model, [*ws.tools, blocks], middleware=[PlanGuardMiddleware(guard)])

    _run(agent, "t-str", "sync")

    results = [s.event.result for s in rec.steps_of("t-str")]
    assert results == ["ran: ls /testbed", "ERROR: x not found"]
    assert all(type(r) is str for r in results)


def test_one_session_across_turns_of_a_thread_when_asked() -> None:
    guard, rec = _guard()
    ws = Workspace()
    model = ScriptedChatModel(turns=[*_searches(2), turn(text="first turn done"), *_searches(1)])
    mw = PlanGuardMiddleware(guard, end_on_finish=False)
    agent = create_agent(model, ws.tools, middleware=[mw], checkpointer=InMemorySaver())

    _run(agent, "t-multi", "sync")
    _run(agent, "t-multi", "sync", "and more")
    assert "t-multi" not in rec.summaries  # still open across both invocations
    summary = guard.end("t-multi")

    assert summary is not None and summary.n_steps == 3 and summary.n_model_calls == 5


def test_session_key_can_come_from_elsewhere_in_the_config() -> None:
    guard, rec = _guard()
    ws = Workspace()
    model = ScriptedChatModel(turns=_searches(1))
    mw = PlanGuardMiddleware(guard, session_key=lambda cfg: cfg.get("configurable", {}).get("user"))
    agent = create_agent(model, ws.tools, middleware=[mw])

    agent.invoke({"messages": [HumanMessage("go")]}, {"configurable": {"user": "alice", "thread_id": "x"}})

    assert list(rec.summaries) == ["alice"]


# ---------------------------------------------------------------------------------------------- results


def test_tool_errors_and_exit_codes_reach_the_step() -> None:
    guard, rec = _guard()
    ws = Workspace()

    @tool(response_format="content_and_artifact")
    def run_tests(target: str) -> tuple[str, dict[str, int]]:
        """Run tests."""
        return "1 failed", {"exit_code": 1}

    model = ScriptedChatModel(
        turns=[turn(call("bash", command="ls /testbed; exit 3")), turn(call("run_tests", target="tests"))]
    )
    agent = create_agent(model, [*ws.tools, run_tests], middleware=[PlanGuardMiddleware(guard)])

    _run(agent, "t-err", "sync")

    failed, tests = rec.steps_of("t-err")
    assert failed.event.is_error and "exit code 3" in (failed.event.result or "")
    assert tests.event.exit_code == 1 and not tests.event.is_error and tests.event.failed


def test_interrupted_tool_call_is_counted_once_after_resume() -> None:
    guard, rec = _guard()

    @tool
    def bash(command: str) -> str:
        """Run a shell command after a human approves it."""
        approved = interrupt({"command": command})
        return f"ran {command} ({approved})"

    model = ScriptedChatModel(turns=[turn(call("bash", command="grep -rn x /testbed/pkg"))])
    agent = create_agent(model, [bash], middleware=[PlanGuardMiddleware(guard)], checkpointer=InMemorySaver())
    cfg: RunnableConfig = {"configurable": {"thread_id": "t-hitl"}}

    first = agent.invoke({"messages": [HumanMessage("go")]}, cfg)
    assert "__interrupt__" in first
    agent.invoke(Command(resume="yes"), cfg)

    (step,) = rec.steps_of("t-hitl")
    assert step.event.result == "ran grep -rn x /testbed/pkg (yes)"
    assert rec.summaries["t-hitl"].n_steps == 1


@pytest.mark.parametrize("mode", MODES)
def test_a_failing_guard_never_breaks_the_agent(mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    guard, _ = _guard(**SUBMIT_GATE)

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("simulated planguard bug")

    async def abroken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("simulated planguard bug")

    for name in ("before_tool", "before_model", "after_tool"):
        monkeypatch.setattr(guard, name, broken)
        monkeypatch.setattr(guard, "a" + name, abroken)
    ws = Workspace()
    model = ScriptedChatModel(turns=[*_searches(2), turn(call("submit"))])

    def failing_key(config: RunnableConfig) -> str:
        raise ZeroDivisionError("simulated bug in a user's session_key")

    mw = PlanGuardMiddleware(guard, session_key=failing_key)
    agent = create_agent(model, ws.tools, middleware=[mw])

    out = _run(agent, "t-broken", mode)

    assert ws.names() == ["bash", "bash", "submit"]  # fail-open: even the gated submit ran
    assert out["messages"][-1].content == "Done."
    counts = guard.errors.counts
    for where in ("GuardHooks.before_tool", "GuardHooks.before_model", "GuardHooks.session_key"):
        assert counts[where + ":RuntimeError"] > 0 or counts[where + ":ZeroDivisionError"] > 0, counts
    assert any(k.startswith("GuardHooks.") and "after_tool" in k for k in counts), counts


# ---------------------------------------------------------------------------------------------- custom graph


def _custom_graph(model: ScriptedChatModel, tools: list[BaseTool], hooks: GuardHooks, *, helper: bool) -> Any:
    builder = StateGraph(MessagesState)
    builder.add_node("model", guarded_model_node(model.bind_tools(tools), hooks))
    tools_node = guarded_tool_node(tools, hooks) if helper else ToolNode(tools, **tool_wrappers(hooks))
    builder.add_node("tools", tools_node)
    builder.add_node("finish", session_end_node(hooks))
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", tools_condition, {"tools": "tools", END: "finish"})
    builder.add_edge("tools", "model")
    builder.add_edge("finish", END)
    return builder.compile()


@pytest.mark.parametrize("mode", MODES)
def test_custom_stategraph_gets_reminders_gates_and_session_end(mode: str) -> None:
    guard, rec = _guard(**REMIND_EVERY_5, **SUBMIT_GATE)
    ws = Workspace(barrier=2)
    model = ScriptedChatModel(
        turns=[
            *_searches(3),
            turn(
                call("bash", command=f"grep -rn a /testbed/pkg {PARALLEL}"),
                call("bash", command=f"grep -rn b /testbed/pkg {PARALLEL}"),
            ),
            turn(call("str_replace_editor", **PATCH)),
            turn(call("submit")),
        ]
    )
    graph = _custom_graph(model, ws.tools, GuardHooks(guard), helper=mode == "sync")

    out = _run(graph, "t-graph", mode)

    assert "submit" not in ws.names()
    (denial,) = [m for m in out["messages"] if isinstance(m, ToolMessage) and m.status == "error"]
    assert denial.name == "submit"
    reminded = [i + 1 for i, m in enumerate(model.requests_for("t-graph")) if _injected(m)]
    assert reminded == [5]
    assert not _injected(out["messages"])
    summary = rec.summaries["t-graph"]
    assert summary.letters == "NNNNNP" and summary.n_model_calls == 7
    assert len(guard) == 0


def test_custom_stategraph_stop_answers_without_calling_the_model() -> None:
    guard, rec = _guard(
        responses={"enabled": True, "findings": {"search_loop": {"ladder": {"log": 1, "stop": 1}}}}
    )
    ws = Workspace()
    model = ScriptedChatModel(turns=_searches(25))
    graph = _custom_graph(model, ws.tools, GuardHooks(guard), helper=True)

    out = _run(graph, "t-gstop", "sync")

    final = out["messages"][-1]
    assert isinstance(final, AIMessage) and str(final.content).startswith("Run stopped by planguard")
    assert len(model.requests_for("t-gstop")) == len(ws.ran) + 1
    assert "t-gstop" in rec.summaries


# ---------------------------------------------------------------------------------------------- telemetry


@pytest.mark.parametrize("mode", MODES)
def test_spans_nest_under_the_callers_span(mode: str) -> None:
    from planguard.sinks.telemetry.testing import TelemetryCapture

    cap = TelemetryCapture()
    guard, _ = guard_for_tests(_config(**SUBMIT_GATE), sinks=[cap.sink])
    ws = Workspace(barrier=2)
    model = ScriptedChatModel(
        turns=[
            turn(
                call("bash", command=f"grep -rn a /testbed/pkg {PARALLEL}"),
                call("bash", command=f"grep -rn b /testbed/pkg {PARALLEL}"),
            ),
            turn(call("str_replace_editor", **PATCH)),
            turn(call("submit")),
        ]
    )
    agent = create_agent(model, ws.tools, middleware=[PlanGuardMiddleware(guard)])
    tracer = cap.tracer_provider.get_tracer("app")

    with tracer.start_as_current_span("handle-request") as request_span:
        _run(agent, "t-otel", mode)
    cap.flush()

    (caller,) = cap.spans("handle-request")
    (session,) = cap.spans("invoke_agent")
    assert session.parent is not None and session.parent.span_id == caller.context.span_id
    assert session.context.trace_id == request_span.get_span_context().trace_id
    tools = sorted(cap.children(session), key=lambda s: s.start_time or 0)
    assert [t.name for t in tools] == [
        "execute_tool bash",
        "execute_tool bash",
        "execute_tool str_replace_editor",
        "execute_tool submit",
    ]
    blocked = tools[-1]
    assert blocked.attributes is not None and blocked.attributes.get("planguard.blocked") is True
    assert [e.attributes["planguard.decision.kind"] for e in blocked.events if e.attributes] == ["deny"]
    assert not any(t.attributes and t.attributes.get("planguard.blocked") for t in tools[:-1])
    cap.shutdown()


class _LangSmithCapture:
    """A local stand-in for the LangSmith API on 127.0.0.1 that keeps every run the client sends."""

    def __init__(self) -> None:
        import gzip
        import json
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.runs: dict[str, dict[str, Any]] = {}
        lock = threading.Lock()
        runs = self.runs

        class Handler(BaseHTTPRequestHandler):
            def _record(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                if self.headers.get("content-encoding") == "gzip":
                    body = gzip.decompress(body)
                data = json.loads(body) if body else {}
                # POST /runs creates a run, PATCH /runs/<id> finishes it.
                run_id = self.path.rsplit("/", 1)[-1] if self.command == "PATCH" else data.get("id")
                if isinstance(data, dict) and run_id:
                    with lock:
                        runs.setdefault(str(run_id), {}).update(data)
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.end_headers()
                self.wfile.write(b"{}")

            do_POST = do_PATCH = _record

            def do_GET(self) -> None:
                self._record()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def named(self, prefix: str) -> list[dict[str, Any]]:
        return [r for r in self.runs.values() if str(r.get("name", "")).startswith(prefix)]


@pytest.mark.parametrize("mode", MODES)
def test_langsmith_hook_spans_keep_no_payload(mode: str) -> None:
    """With LangSmith tracing on, LangChain records a run per middleware hook call. planguard's carry no
    inputs or outputs (the messages and tool calls are in the model's and tool's own runs)."""
    from langsmith import Client, tracing_context

    capture = _LangSmithCapture()
    client = Client(api_url=capture.url, api_key="test-key", auto_batch_tracing=False)
    guard, _ = _guard()
    ws = Workspace()
    model = ScriptedChatModel(turns=[turn(call("bash", command="cat /testbed/secret-path.py"))])
    agent = create_agent(model, ws.tools, middleware=[PlanGuardMiddleware(guard)])
    try:
        with tracing_context(enabled=True, client=client, project_name="planguard-test"):
            _run(agent, "t-langsmith", mode, text="user-text-7f3a")
        client.flush()
    finally:
        capture.server.shutdown()

    hooks = capture.named("planguard.")
    a = "a" if mode == "async" else ""
    assert {r["name"] for r in hooks} >= {f"planguard.{a}wrap_model_call", f"planguard.{a}wrap_tool_call"}
    for run in hooks:
        assert not run.get("inputs") and not run.get("outputs"), run["name"]
    # The capture does see payloads: the model's own run has the user's text, the tool's its command.
    assert "user-text-7f3a" in str([r.get("inputs") for r in capture.named("ScriptedChatModel")])
    assert "secret-path" in str([r.get("inputs") for r in capture.named("bash")])


# ---------------------------------------------------------------------------------------------- translation


def test_extra_messages_never_split_a_tool_round() -> None:
    ai = AIMessage(
        content="",
        tool_calls=[
            {"name": "bash", "args": {}, "id": "a", "type": "tool_call"},
            {"name": "bash", "args": {}, "id": "b", "type": "tool_call"},
        ],
    )
    done = [HumanMessage("x"), ai, ToolMessage("1", tool_call_id="a"), ToolMessage("2", tool_call_id="b")]
    assert safe_insert_index(done) == 4
    assert safe_insert_index(done[:3]) == 1  # the round is still open: before its AIMessage
    assert safe_insert_index([HumanMessage("x")]) == 1
    assert safe_insert_index([]) == 0


def _assert_provider_valid(messages: Sequence[BaseMessage]) -> None:
    """Every AIMessage's tool calls are answered by the ToolMessages that immediately follow it."""
    i = 0
    while i < len(messages):
        m = messages[i]
        if isinstance(m, AIMessage) and m.tool_calls:
            ids = {c["id"] for c in m.tool_calls}
            j = i + 1
            while j < len(messages) and isinstance(messages[j], ToolMessage):
                ids.discard(messages[j].tool_call_id)  # type: ignore[attr-defined]
                j += 1
            assert not ids, f"tool calls {ids} of message {i} are not answered right after it"
            i = j
        else:
            i += 1
