"""planguard in the application's trace: a real ``create_agent`` run (scripted model) under OpenInference's
LangChain instrumentation is one trace, planguard's session span sits under the agent's LangGraph span, and
each tool call has one span — OpenInference's, carrying planguard's attributes and events. Plus the generic
case: a GenAI tool span that is current when planguard's hooks run is enriched, not duplicated."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.tools import tool
from openinference.instrumentation.langchain import LangChainInstrumentor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from planguard_langchain import PlanGuardMiddleware
from planguard_langchain.testing import ScriptedChatModel, call, turn

from planguard.config import Config
from planguard.events import ToolEvent
from planguard.guard import Guard
from planguard.sinks.otel import attributes as A
from planguard.sinks.otel.config import TelemetryConfig
from planguard.sinks.store.config import StoreConfig


@tool
def read_file(path: str) -> str:
    """Read a file of the repository."""
    return f"contents of {path}"


@tool
def bash(command: str) -> str:
    """Run a shell command."""
    return "1 failed" if "pytest" in command else "ok"


@pytest.fixture
def traced() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    yield provider, exporter
    instrumentor.uninstrument()
    provider.shutdown()


def guard_for(provider: TracerProvider, tool_spans: str = "auto") -> Guard:
    config = Config(
        telemetry=TelemetryConfig(agent_name="coder", tool_spans=tool_spans),  # type: ignore[arg-type]
        store=StoreConfig(enabled=False),
    )
    return Guard(
        config,
        tracer_provider=provider,
        meter_provider=MeterProvider(metric_readers=[InMemoryMetricReader()]),
    )


def run_agent(guard: Guard) -> None:
    model = ScriptedChatModel(
        turns=[
            turn(call("read_file", path="src/app.py")),
            turn(call("bash", command="python -m pytest tests/test_app.py")),
            turn(text="The test fails; done."),
        ]
    )
    agent = create_agent(model, [read_file, bash], middleware=[PlanGuardMiddleware(guard)])
    agent.invoke({"messages": [("user", "fix the bug")]}, {"configurable": {"thread_id": "nest-1"}})


def tool_spans(spans: list[ReadableSpan]) -> list[ReadableSpan]:
    return [
        s
        for s in spans
        if (s.attributes or {}).get("openinference.span.kind") == "TOOL"
        or (s.attributes or {}).get(A.GEN_AI_OPERATION_NAME) == A.OP_EXECUTE_TOOL
    ]


def test_one_trace_and_one_span_per_tool_call(traced: tuple[TracerProvider, InMemorySpanExporter]) -> None:
    provider, exporter = traced
    guard = guard_for(provider)
    run_agent(guard)
    guard.shutdown()
    spans = list(exporter.get_finished_spans())
    assert guard.errors.total == 0, guard.errors.counts

    assert len({s.context.trace_id for s in spans}) == 1  # one trace
    by_id = {s.context.span_id: s for s in spans}
    (root,) = [s for s in spans if s.parent is None]
    assert root.name == "LangGraph"
    (agent,) = [s for s in spans if s.name == "invoke_agent coder"]
    assert agent.parent is not None and agent.parent.span_id == root.context.span_id
    # the provider and model named by the LangChain chat model (its LangSmith parameters)
    assert (agent.attributes or {})[A.GEN_AI_PROVIDER_NAME] == "scriptedchatmodel"
    assert (agent.attributes or {})[A.GEN_AI_REQUEST_MODEL] == "scripted"

    tools = tool_spans(spans)
    assert sorted(s.name for s in tools) == ["bash", "read_file"]  # OpenInference's, no second one
    assert not [s for s in spans if s.name.startswith("execute_tool")]
    for span in tools:
        attrs = span.attributes or {}
        assert attrs["openinference.span.kind"] == "TOOL"
        assert attrs[A.GEN_AI_TOOL_NAME] == span.name
        assert attrs[A.GEN_AI_TOOL_TYPE] == A.TOOL_TYPE_FUNCTION
        assert attrs[A.GEN_AI_CONVERSATION_ID] == "nest-1"
        assert A.PHASE in attrs and A.STEP_INDEX in attrs and A.GEN_AI_TOOL_CALL_ID in attrs
        parent = by_id[span.parent.span_id]  # type: ignore[union-attr]
        assert parent.name == "tools"  # where LangGraph runs it, not under planguard's span
    # what is known only after OpenInference ended the tool span is on the session span, naming the call
    outcomes = [e for e in agent.events if e.name == A.EVENT_TOOL_OUTCOME]
    assert sorted((e.attributes or {})[A.STEP_INDEX] for e in outcomes) == [0, 1]
    assert all((e.attributes or {})[A.EFFECT] for e in outcomes)
    evaluations = {
        (e.attributes or {})[A.GEN_AI_EVALUATION_NAME]
        for e in agent.events
        if e.name == A.EVENT_EVALUATION_RESULT
    }
    assert {"PC", "PPC", "POC", "PPF"} <= evaluations


@tool
async def aread_file(path: str) -> str:
    """Read a file of the repository."""
    return f"contents of {path}"


@tool
async def abash(command: str) -> str:
    """Run a shell command."""
    return "1 failed" if "pytest" in command else "ok"


@pytest.mark.parametrize("tools", ["sync", "async"])
def test_ainvoke_gives_one_annotated_span_per_tool_call_in_one_trace(
    traced: tuple[TracerProvider, InMemorySpanExporter], tools: str
) -> None:
    """The async agent (``ainvoke``), with sync tools (run in LangChain's executor) and ``async def`` tools
    (run on the loop, through the async callback manager): as with ``invoke``, OpenInference's tool span
    carries planguard's attributes and no second tool span is made."""
    import asyncio

    provider, exporter = traced
    read_tool, bash_tool = (read_file, bash) if tools == "sync" else (aread_file, abash)
    guard = guard_for(provider)
    model = ScriptedChatModel(
        turns=[
            turn(call(read_tool.name, path="src/app.py")),
            turn(call(bash_tool.name, command="python -m pytest tests/test_app.py")),
            turn(text="The test fails; done."),
        ]
    )
    agent = create_agent(model, [read_tool, bash_tool], middleware=[PlanGuardMiddleware(guard)])
    config = {"configurable": {"thread_id": "nest-async"}}
    asyncio.run(agent.ainvoke({"messages": [("user", "fix the bug")]}, config))  # type: ignore[arg-type]
    guard.shutdown()
    spans = list(exporter.get_finished_spans())
    assert guard.errors.total == 0, guard.errors.counts
    assert len({s.context.trace_id for s in spans}) == 1
    tools = tool_spans(spans)
    assert sorted(s.name for s in tools) == sorted([bash_tool.name, read_tool.name]), [s.name for s in spans]
    assert not [s for s in spans if s.name.startswith("execute_tool")]
    for span in tools:
        attrs = span.attributes or {}
        assert attrs["openinference.span.kind"] == "TOOL"
        assert A.PHASE in attrs and A.STEP_INDEX in attrs and attrs[A.GEN_AI_CONVERSATION_ID] == "nest-async"


def test_own_tool_spans_when_asked(traced: tuple[TracerProvider, InMemorySpanExporter]) -> None:
    provider, exporter = traced
    guard = guard_for(provider, tool_spans="own")
    run_agent(guard)
    guard.shutdown()
    spans = list(exporter.get_finished_spans())
    names = sorted(s.name for s in tool_spans(spans))
    assert names == ["bash", "execute_tool bash", "execute_tool read_file", "read_file"]
    (agent,) = [s for s in spans if s.name == "invoke_agent coder"]
    own = [s for s in spans if s.name.startswith("execute_tool")]
    assert all(s.parent is not None and s.parent.span_id == agent.context.span_id for s in own)


def test_a_current_genai_tool_span_is_enriched_not_duplicated() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    guard = guard_for(provider)
    app = provider.get_tracer("app")
    for i, command in enumerate(["cat /testbed/src/mod.py", "python /testbed/reproduce.py"]):
        ev = ToolEvent.shell(command, call_id=f"call-{i}")
        attrs: dict[str, Any] = {
            A.GEN_AI_OPERATION_NAME: A.OP_EXECUTE_TOOL,
            A.GEN_AI_TOOL_NAME: "bash",
            A.GEN_AI_TOOL_CALL_ID: f"call-{i}",
        }
        with app.start_as_current_span("execute_tool bash", attributes=attrs):
            guard.before_tool("s1", ev)
            ev.result, ev.exit_code = "ok", 0
            guard.after_tool("s1", ev)
    guard.end("s1")
    guard.shutdown()
    spans = list(exporter.get_finished_spans())
    tools = [s for s in spans if s.name == "execute_tool bash"]
    assert len(tools) == 2  # the application's, enriched
    for i, span in enumerate(tools):
        attrs = span.attributes or {}
        assert attrs[A.STEP_INDEX] == i and attrs[A.EFFECT] and A.PHASE in attrs
    assert [s.name for s in spans].count("invoke_agent coder") == 1
    # a span for another call is not taken for this one
    ev = ToolEvent.shell("ls", call_id="mine")
    guard2 = guard_for(provider)
    with app.start_as_current_span(
        "execute_tool bash",
        attributes={A.GEN_AI_OPERATION_NAME: A.OP_EXECUTE_TOOL, A.GEN_AI_TOOL_CALL_ID: "other"},
    ):
        guard2.before_tool("s2", ev)
        ev.exit_code = 0
        guard2.after_tool("s2", ev)
    guard2.shutdown()
    mine = [
        s for s in exporter.get_finished_spans() if (s.attributes or {}).get(A.GEN_AI_TOOL_CALL_ID) == "mine"
    ]
    assert len(mine) == 1 and mine[0].attributes[A.STEP_INDEX] == 0  # type: ignore[index]
