"""The OpenTelemetry sink with a real SDK: span names and parentage, GenAI and planguard attributes,
finding/decision events, metrics, context isolation across threads, and the no-op global API."""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap
import threading
import weakref
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import Decision as Decision_
from opentelemetry.sdk.trace.sampling import Sampler, SamplingResult
from opentelemetry.trace import NoOpTracerProvider, SpanKind, StatusCode

from planguard.decisions import Decision, DecisionKind
from planguard.events import ToolEvent
from planguard.findings import Finding
from planguard.phases import get_rules
from planguard.session import Pipeline, Session
from planguard.sinks import Sink
from planguard.sinks.otel import attributes as A
from planguard.sinks.otel.testing import TelemetryCapture
from planguard.stages import Detector, Policy
from planguard.step import Step
from planguard.testing import ScriptedDetector

REPO = Path(__file__).resolve().parents[3]

NAVIGATE = ToolEvent.shell("cat /testbed/src/mod.py", call_id="c0")
CREATE = ToolEvent(
    tool="str_replace_editor",
    call_id="c1",
    arguments={"command": "create", "path": "/testbed/reproduce_bug.py", "file_text": "import mod\n"},
)
RUN_FAIL = ToolEvent.shell("python /testbed/reproduce_bug.py", call_id="c2")
PATCH = ToolEvent(
    tool="str_replace_editor",
    call_id="c3",
    arguments={"command": "str_replace", "path": "/testbed/src/mod.py", "old_str": "a", "new_str": "b"},
)
VALIDATE = ToolEvent.shell("python /testbed/reproduce_bug.py", call_id="c4")


def fresh(ev: ToolEvent) -> ToolEvent:
    return ToolEvent(tool=ev.tool, arguments=ev.arguments, call_id=ev.call_id, action=ev.action)


class RemindAfterFirst(Policy):
    name = "remind-first"

    def after_tool(self, step: Step, session: Session, state: Any) -> Iterable[Decision]:
        if step.index == 0:
            return [Decision(DecisionKind.REMIND, "PLAN REMINDER: follow the plan", self.name)]
        return ()


class DenyRm(Policy):
    name = "deny-rm"

    def before_tool(self, step: Step, session: Session, state: Any) -> Decision | None:
        if "rm -rf" in (step.event.action or ""):
            return Decision(DecisionKind.DENY, "destructive command refused", self.name)
        return None


class NudgeOnFinding(Policy):
    name = "nudge"

    def after_tool(self, step: Step, session: Session, state: Any) -> Iterable[Decision]:
        return [Decision(DecisionKind.NUDGE, f"about {f.detector}", self.name, f) for f in step.findings]


class StopAtEnd(Policy):
    name = "stop-end"

    def on_end(self, session: Session, state: Any) -> Iterable[Decision]:
        return [Decision(DecisionKind.STOP, "run over", self.name)]


class ModelNudge(Policy):
    name = "model-nudge"

    def before_model(self, session: Session, state: Any) -> Iterable[Decision]:
        if session.n_steps == 5:
            return [Decision(DecisionKind.NUDGE, "validate now", self.name)]
        return ()


def pipeline(cap: TelemetryCapture, **kw: Any) -> Pipeline:
    kw.setdefault("detectors", (ScriptedDetector("failed_run", lambda s: s.event.failed),))
    kw.setdefault("policies", (RemindAfterFirst(), DenyRm(), NudgeOnFinding(), ModelNudge(), StopAtEnd()))
    return Pipeline(sinks=(cap.sink,), **kw)


def run_live(session: Session, events: list[ToolEvent], exit_codes: dict[str, int] | None = None) -> None:
    for ev in events:
        ev = fresh(ev)
        session.before_model()
        decision = session.before_tool(ev)
        if decision.blocks:
            continue
        ev.result = "ok"
        ev.exit_code = (exit_codes or {}).get(ev.call_id or "", 0) if ev.tool == "bash" else None
        session.after_tool(ev)


def scenario(cap: TelemetryCapture, session_id: str = "s1") -> Session:
    s = pipeline(cap).session(session_id)
    events = [NAVIGATE, CREATE, RUN_FAIL, ToolEvent.shell("rm -rf /testbed", call_id="rm"), PATCH, VALIDATE]
    run_live(s, events, exit_codes={"c2": 1})
    s.before_model()
    s.end()
    cap.flush()
    return s


def by_index(spans: list[ReadableSpan]) -> dict[int, ReadableSpan]:
    return {int(s.attributes[A.STEP_INDEX]): s for s in spans if not s.attributes.get(A.BLOCKED)}  # type: ignore[arg-type,index]


def event_names(span: ReadableSpan) -> list[str]:
    return [e.name for e in span.events]


def events_of(span: ReadableSpan, name: str) -> list[dict[str, Any]]:
    return [dict(e.attributes or {}) for e in span.events if e.name == name]


def test_spans_follow_genai_conventions() -> None:
    cap = TelemetryCapture(agent_name="coder")
    scenario(cap)
    (agent,) = cap.spans("invoke_agent coder")
    assert agent.kind is SpanKind.INTERNAL
    assert agent.parent is None
    a = agent.attributes
    assert a[A.GEN_AI_OPERATION_NAME] == "invoke_agent"
    assert a[A.GEN_AI_AGENT_NAME] == "coder"
    assert a[A.GEN_AI_CONVERSATION_ID] == "s1"
    assert a[A.PLAN] == "plan"
    assert a[A.RULES] == "live"
    assert a[A.SESSION_STEPS] == 5
    assert a[A.LANGUTORY] == "NRRPV"
    assert a[A.PC] == pytest.approx(1.0)
    assert a[A.SESSION_MISSING] == ()

    tools = cap.spans("execute_tool bash") + cap.spans("execute_tool str_replace_editor")
    assert len(tools) == 6  # five accepted calls and the blocked one
    for span in tools:
        assert span.kind is SpanKind.INTERNAL
        assert span.parent is not None and span.parent.span_id == agent.context.span_id
        assert span.context.trace_id == agent.context.trace_id
        assert span.attributes[A.GEN_AI_OPERATION_NAME] == "execute_tool"
        assert span.attributes[A.GEN_AI_CONVERSATION_ID] == "s1"
        assert A.GEN_AI_AGENT_NAME not in span.attributes  # it is on the parent invoke_agent span
    steps = by_index(tools)
    assert [steps[i].attributes[A.PHASE] for i in range(5)] == ["N", "R", "R", "P", "V"]
    assert steps[1].attributes[A.GEN_AI_TOOL_NAME] == "str_replace_editor"
    assert steps[1].attributes[A.GEN_AI_TOOL_CALL_ID] == "c1"
    assert steps[0].attributes[A.PPC] == pytest.approx(0.25)
    assert steps[3].attributes[A.PPC] == pytest.approx(0.75)
    assert steps[4].attributes[A.PC] == pytest.approx(1.0)
    assert steps[3].attributes[A.LANGUTORY_TAIL] == "N1 R2 P1"
    assert steps[0].attributes[A.EFFECT] == "SUCCEEDED"
    # no content by default
    for span in [agent, *tools]:
        assert A.GEN_AI_TOOL_CALL_ARGUMENTS not in span.attributes
        assert A.GEN_AI_TOOL_CALL_RESULT not in span.attributes


def test_failures_blocks_findings_and_decisions() -> None:
    cap = TelemetryCapture()
    scenario(cap)
    (agent,) = cap.spans("invoke_agent")
    steps = by_index(cap.spans("execute_tool bash") + cap.spans("execute_tool str_replace_editor"))

    failed = steps[2]
    assert failed.status.status_code is StatusCode.ERROR
    assert failed.attributes[A.ERROR_TYPE] == A.ERROR_EXIT_CODE
    assert failed.attributes[A.EXIT_CODE] == 1
    assert failed.attributes[A.EFFECT] == "FAILED"
    assert failed.attributes[A.FINDINGS_COUNT] == 1
    (finding,) = events_of(failed, A.EVENT_FINDING)
    assert finding == {
        A.FINDING_DETECTOR: "failed_run",
        A.FINDING_FIRST_STEP: 2,
        A.FINDING_LAST_STEP: 2,
        A.FINDING_AT_END: False,
    }
    (nudge,) = events_of(failed, A.EVENT_DECISION)
    assert nudge == {A.DECISION_KIND: "nudge", A.DECISION_POLICY: "nudge", A.DECISION_FINDING: "failed_run"}
    assert events_of(steps[0], A.EVENT_DECISION) == [
        {A.DECISION_KIND: "remind", A.DECISION_POLICY: "remind-first"}
    ]
    assert event_names(steps[1]) == []
    # the blocked call: its own span, error, the deny decision as an event
    (blocked,) = [s for s in cap.spans("execute_tool bash") if s.attributes.get(A.BLOCKED)]
    assert blocked.attributes[A.ERROR_TYPE] == A.ERROR_BLOCKED
    assert blocked.status.status_code is StatusCode.ERROR
    assert events_of(blocked, A.EVENT_DECISION) == [{A.DECISION_KIND: "deny", A.DECISION_POLICY: "deny-rm"}]
    # session-level decisions: the before_model nudge and the stop at the end
    kinds = [e[A.DECISION_KIND] for e in events_of(agent, A.EVENT_DECISION)]
    assert kinds == ["nudge", "stop"]
    # events are stamped inside their spans
    for span in [agent, *steps.values()]:
        for e in span.events:
            assert span.start_time <= e.timestamp <= span.end_time  # type: ignore[operator]


def test_metrics() -> None:
    cap = TelemetryCapture()
    s = scenario(cap)
    scenario(cap, "s2")
    assert cap.metric(A.METRIC_TOOL_CALLS, **{A.M_PHASE: "R"}) == 4
    assert cap.metric(A.METRIC_TOOL_CALLS, **{A.M_PHASE: "N"}) == 2
    assert cap.metric(A.METRIC_FINDINGS, **{A.M_DETECTOR: "failed_run"}) == 2
    assert cap.metric(A.METRIC_REMINDERS, **{A.M_DECISION: "remind"}) == 2
    assert cap.metric(A.METRIC_REMINDERS, **{A.M_DECISION: "nudge"}) == 4
    assert cap.metric(A.METRIC_BLOCKS, **{A.M_DECISION: "deny"}) == 2
    assert cap.metric(A.METRIC_BLOCKS, **{A.M_DECISION: "stop"}) == 2
    assert cap.metric(A.METRIC_DECISIONS, **{A.M_DECISION: "deny"}) == 2
    assert cap.metric(A.METRIC_INTERNAL_ERRORS) == 0
    hist = cap.metric(A.METRIC_SESSION_PC, **{A.M_PLAN: "plan"})
    assert hist.count == 2 and hist.sum == pytest.approx(2 * s.scores().PC)  # type: ignore[union-attr]


def test_sinks_sharing_a_meter_provider_both_report() -> None:
    from planguard.sinks.otel.otel import OTelSink

    cap = TelemetryCapture()
    other = OTelSink(tracer_provider=cap.tracer_provider, meter_provider=cap.meter_provider)
    for sink, n in ((cap.sink, 2), (other, 3)):
        s = Pipeline(sinks=(sink,)).session(f"share-{n}")
        for _ in range(n):
            s.observe(fresh(NAVIGATE))
        s.end()
    assert cap.metric(A.METRIC_TOOL_CALLS, **{A.M_PHASE: "N"}) == 5
    assert cap.metric(A.METRIC_SESSION_PC, **{A.M_PLAN: "plan"}).count == 2


def test_session_pc_is_labelled_by_agent() -> None:
    """``gen_ai.agent.name`` on the PC histogram (the dashboard's "PC by agent"): the sink's agent name, else
    the session's ``agent_name`` metadata; no label when neither names one."""
    from planguard.sinks.otel.otel import OTelSink

    cap = TelemetryCapture()
    named = OTelSink(
        tracer_provider=cap.tracer_provider, meter_provider=cap.meter_provider, agent_name="coder"
    )
    for sink, sid, meta in (
        (named, "a", {}),
        (cap.sink, "b", {"agent_name": "triager"}),
        (cap.sink, "c", {"agent_name": "triager"}),
        (cap.sink, "d", {}),
    ):
        s = Pipeline(sinks=(sink,)).session(sid, **meta)
        s.observe(fresh(NAVIGATE))
        s.end()
    by_agent = {
        attrs.get(A.GEN_AI_AGENT_NAME): hist.count for attrs, hist in cap.metrics()[A.METRIC_SESSION_PC]
    }
    assert by_agent == {"coder": 1, "triager": 2, None: 1}


def test_internal_errors_are_counted() -> None:
    class Broken(Detector):
        name = "broken"

        def observe(self, step: Step, state: Any) -> Finding | None:
            raise RuntimeError("boom")

    cap = TelemetryCapture()
    s = Pipeline(detectors=(Broken(),), sinks=(cap.sink,)).session("e")
    run_live(s, [NAVIGATE, PATCH])
    s.end()
    assert cap.metric(A.METRIC_INTERNAL_ERRORS) == 2
    assert len(cap.spans("invoke_agent")) == 1


def test_session_span_is_child_of_the_callers_span_and_nothing_is_attached() -> None:
    cap = TelemetryCapture()
    tracer = cap.tracer_provider.get_tracer("app")
    with tracer.start_as_current_span("request") as request:
        s = pipeline(cap).session("child")
        assert trace.get_current_span() is request
        run_live(s, [NAVIGATE])
        assert trace.get_current_span() is request
    run_live(s, [PATCH])  # outside the request: still under the session span
    assert trace.get_current_span() is trace.INVALID_SPAN
    s.end()
    cap.flush()
    (agent,) = cap.spans("invoke_agent")
    (req,) = cap.spans("request")
    assert agent.parent is not None and agent.parent.span_id == req.context.span_id
    assert {c.name for c in cap.children(agent)} == {"execute_tool bash", "execute_tool str_replace_editor"}


def test_sessions_on_threads_do_not_leak_context() -> None:
    cap = TelemetryCapture()
    pipe = pipeline(cap, policies=(), detectors=())
    tracer = cap.tracer_provider.get_tracer("app")
    barrier = threading.Barrier(4)
    failures: list[str] = []

    def agent(name: str) -> None:
        with tracer.start_as_current_span(f"request-{name}") as request:
            s = pipe.session(name)
            for i in range(20):
                barrier.wait()  # interleave the sessions' calls step by step
                ev = ToolEvent.shell(f"cat /testbed/f{i}.py", call_id=f"{name}-{i}")
                s.before_tool(ev)
                if trace.get_current_span() is not request:
                    failures.append(f"{name}: current span changed at step {i}")
                s.after_tool(ev)
            s.end()

    threads = [threading.Thread(target=agent, args=(f"t{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not failures
    cap.flush()
    for i in range(4):
        (agent_span,) = [
            s for s in cap.spans("invoke_agent") if s.attributes[A.GEN_AI_CONVERSATION_ID] == f"t{i}"
        ]
        (req,) = cap.spans(f"request-t{i}")
        assert agent_span.parent is not None and agent_span.parent.span_id == req.context.span_id
        kids = cap.children(agent_span)
        assert len(kids) == 20
        assert all(k.attributes[A.GEN_AI_CONVERSATION_ID] == f"t{i}" for k in kids)
        assert all(str(k.attributes[A.GEN_AI_TOOL_CALL_ID]).startswith(f"t{i}-") for k in kids)


def test_offline_observe_uses_the_recorded_times() -> None:
    cap = TelemetryCapture()
    s = pipeline(cap).session("offline")
    t0 = 1_700_000_000.0
    for i, ev in enumerate([NAVIGATE, CREATE, RUN_FAIL, PATCH, VALIDATE]):
        ev = fresh(ev)
        ev.start_time, ev.end_time = t0 + 10 * i, t0 + 10 * i + 3
        ev.exit_code = 1 if ev.call_id == "c2" else 0
        s.observe(ev)
    s.end()
    cap.flush()
    steps = by_index(cap.spans("execute_tool bash") + cap.spans("execute_tool str_replace_editor"))
    assert [steps[i].attributes[A.PHASE] for i in range(5)] == ["N", "R", "R", "P", "V"]
    for i, span in steps.items():
        assert span.start_time == int((t0 + 10 * i) * 1e9)
        assert span.end_time == int((t0 + 10 * i + 3) * 1e9)
    assert event_names(steps[2]) == [A.EVENT_FINDING, A.EVENT_EVALUATION_RESULT, A.EVENT_DECISION]
    assert all(e.timestamp == steps[2].end_time for e in steps[2].events)


def test_unfinished_sessions_are_closed_on_shutdown_and_dropped_ones_take_their_state() -> None:
    cap = TelemetryCapture()
    pipe = pipeline(cap, policies=(), detectors=())
    sessions = [pipe.session(f"e{i}") for i in range(3)]
    for s in sessions:
        s.before_tool(fresh(NAVIGATE))  # a call that never returns
    states = [weakref.ref(state) for s in sessions for _, state in s.sink_states]
    del sessions[0]  # the application dropped it unended: its state (and open spans) go with it
    gc.collect()
    assert states[0]() is None
    assert cap.spans("invoke_agent") == []
    cap.sink.shutdown()
    assert sorted(sp.attributes[A.GEN_AI_CONVERSATION_ID] for sp in cap.spans("invoke_agent")) == ["e1", "e2"]
    assert all(sp.attributes[A.SESSION_EVICTED] for sp in cap.spans("invoke_agent"))
    assert len(cap.spans("execute_tool bash")) == 2  # open tool spans are ended, not lost


def test_counts_of_sessions_gone_are_kept_and_their_tallies_folded() -> None:
    """A tally lives while its owner does; the counts of owners freed are folded into the totals, once,
    and the registry does not keep a tally per session gone."""
    from planguard.errors import ErrorCounter
    from planguard.sinks.drops import DropCounter
    from planguard.sinks.otel.instruments import MAX_RETIRING, Counts

    class Owner:
        pass

    counts = Counts(DropCounter(), ErrorCounter())
    owners = [Owner() for _ in range(MAX_RETIRING + 500)]
    for owner in owners:
        counts.tally(owner).findings["loop"] = 2
    assert counts.snapshot().findings == {"loop": 2 * len(owners)}
    kept = Owner()
    counts.tally(kept).findings["loop"] = 1
    del owners, owner
    gc.collect()
    assert counts.snapshot().findings == {"loop": 2 * (MAX_RETIRING + 500) + 1}
    assert counts.snapshot().findings == {"loop": 2 * (MAX_RETIRING + 500) + 1}  # folded once
    assert len(counts._live) == 1  # only the live owner's tally


def test_global_provider_is_a_noop_until_configured_then_used() -> None:
    # Global providers can be set once per process: run this in a fresh interpreter.
    code = textwrap.dedent("""
        from opentelemetry import metrics, trace
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        from planguard.events import ToolEvent
        from planguard.session import Pipeline
        from planguard.sinks.otel.otel import OTelSink

        sink = OTelSink()                       # global API, nothing configured: no-op
        pipe = Pipeline(sinks=(sink,))
        s = pipe.session("before")
        s.observe(ToolEvent.shell("ls"))
        s.end()
        straddling = pipe.session("straddling")  # starts before the app configures OTel
        straddling.before_tool(ToolEvent.shell("ls", call_id="1"))
        assert pipe.errors.total == 0, pipe.errors.counts
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)     # the app configures OTel later
        reader = InMemoryMetricReader()
        metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
        straddling.after_tool(ToolEvent.shell("ls", call_id="1"))
        straddling.observe(ToolEvent.shell("ls"))
        straddling.end()
        s = pipe.session("after")
        s.observe(ToolEvent.shell("ls"))
        s.end()
        assert pipe.errors.total == 0, pipe.errors.counts
        finished = exporter.get_finished_spans()
        spans = sorted((sp.name, sp.attributes["gen_ai.conversation.id"]) for sp in finished)
        # a session started before the SDK existed has no span to hang its calls on: it stays untraced
        assert spans == [("execute_tool bash", "after"), ("invoke_agent", "after")], spans
        (calls,) = [
            m
            for rm in reader.get_metrics_data().resource_metrics
            for sm in rm.scope_metrics
            for m in sm.metrics
            if m.name == "planguard.tool.calls"
        ]
        # but every call is counted, whenever its session started
        assert sum(dp.value for dp in calls.data.data_points) == 4, calls
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_user_provider_with_in_memory_exporter_sees_spans_without_capture_helper() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    from planguard.sinks.otel.otel import OTelSink

    sink = OTelSink(tracer_provider=provider)
    s = Pipeline(sinks=(sink,)).session("u")
    s.observe(fresh(NAVIGATE))
    s.end()
    assert [sp.name for sp in exporter.get_finished_spans()] == ["execute_tool bash", "invoke_agent"]


# ------------------------------------------------------------------------------------------- hot-path caches

COMMANDS = [
    "cat /testbed/src/mod.py",
    "grep -rn foo /testbed/src",
    "python /testbed/reproduce_bug.py",
    "python -m pytest /testbed/tests/test_mod.py",
    "sed -i 's/a/b/' /testbed/src/mod.py",
    "echo hi",
    "ls /testbed",
    # compound commands: one step, several roles (the Langutory gains more than one run at once)
    "sed -i 's/a/b/' /testbed/src/mod.py && python /testbed/reproduce_bug.py",
    "cat /testbed/src/mod.py; python -m pytest /testbed/tests/test_mod.py",
]


class TailProbe(Sink):
    """Records the Langutory tail as the session has it when the call is accepted."""

    def __init__(self) -> None:
        self.tails: dict[tuple[str, int], str] = {}

    def on_tool_start(self, session: Session, step: Step, state: Any) -> None:
        self.tails[(session.id, step.index)] = session.langutory.tail()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(commands=st.lists(st.sampled_from(COMMANDS), min_size=1, max_size=60))
def test_span_tail_is_the_langutory_tail_when_the_call_was_accepted(commands: list[str]) -> None:
    cap = TelemetryCapture()
    probe = TailProbe()
    s = Pipeline(sinks=(cap.sink, probe)).session("tail")
    run_live(s, [ToolEvent.shell(c, call_id=f"c{i}") for i, c in enumerate(commands)])
    s.end()
    spans = by_index(cap.spans("execute_tool bash"))
    assert len(spans) == len(commands)
    for i, span in spans.items():
        expected = probe.tails[("tail", i)]
        assert span.attributes.get(A.LANGUTORY_TAIL, "") == expected
        scores = span.attributes
        assert 0.0 <= scores[A.PPC] <= 1.0 and 0.0 <= scores[A.PC] <= 1.0  # type: ignore[operator]


def test_counts_from_many_threads_add_up_and_survive_the_threads() -> None:
    cap = TelemetryCapture()
    pipe = Pipeline(sinks=(cap.sink,))

    def agent(name: str, n: int) -> None:
        s = pipe.session(name)
        for i in range(n):
            ev = ToolEvent.shell(f"cat /testbed/f{i}.py", call_id=str(i))
            s.before_tool(ev)
            s.after_tool(ev)
        s.end()

    threads = [threading.Thread(target=agent, args=(f"t{i}", 25)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert cap.metric(A.METRIC_TOOL_CALLS, **{A.M_PHASE: "N"}) == 100
    # the ended threads' counts are folded into the sink's totals, once: the counter never goes back
    assert cap.metric(A.METRIC_TOOL_CALLS, **{A.M_PHASE: "N"}) == 100
    late = threading.Thread(target=agent, args=("late", 5))
    late.start()
    late.join(30)
    agent("main", 3)  # and the calling thread's own shard
    assert cap.metric(A.METRIC_TOOL_CALLS, **{A.M_PHASE: "N"}) == 108


class ThreadProbe(SpanProcessor):
    """Records the thread each span ends on."""

    def __init__(self) -> None:
        self.threads: dict[str, set[str]] = {}

    def on_end(self, span: Any) -> None:
        self.threads.setdefault(span.name, set()).add(threading.current_thread().name)


def shape(cap: TelemetryCapture) -> list[tuple[Any, ...]]:
    """Everything about the spans but their ids and clock readings, in a stable order."""
    names = {s.context.span_id: s.name for s in cap.spans()}  # type: ignore[union-attr]
    out = []
    for s in cap.spans():
        parent = names.get(s.parent.span_id) if s.parent is not None else None
        events = tuple((e.name, tuple(sorted(e.attributes.items()))) for e in s.events)  # type: ignore[union-attr]
        out.append((s.name, parent, tuple(sorted(s.attributes.items())), events, s.status.status_code))  # type: ignore[union-attr]
    return sorted(out, key=repr)


def test_deferred_spans_are_the_same_spans_ended_off_the_agents_thread() -> None:
    inline = TelemetryCapture(agent_name="coder")
    scenario(inline)
    deferred = TelemetryCapture(agent_name="coder", defer_spans=True)
    probe = ThreadProbe()
    deferred.tracer_provider.add_span_processor(probe)
    s = pipeline(deferred).session("s1")
    run_live(s, [NAVIGATE, CREATE])
    assert deferred.spans("execute_tool bash") == []  # started, not yet ended
    run_live(s, [RUN_FAIL, ToolEvent.shell("rm -rf /testbed", call_id="rm"), PATCH, VALIDATE], {"c2": 1})
    s.before_model()
    s.end()
    assert deferred.flush()
    assert shape(deferred) == shape(inline)
    me = threading.current_thread().name
    assert me not in probe.threads["execute_tool bash"] | probe.threads["execute_tool str_replace_editor"]
    assert me not in probe.threads["invoke_agent coder"]
    for span in deferred.spans():
        for e in span.events:
            assert span.start_time <= e.timestamp <= span.end_time  # type: ignore[operator]
    (agent,) = deferred.spans("invoke_agent coder")
    assert deferred.spans().index(agent) == len(deferred.spans()) - 1  # children end first


def test_deferred_spans_with_a_full_queue_are_ended_inline_not_dropped() -> None:
    cap = TelemetryCapture(defer_spans=True, max_queue_size=1)
    s = Pipeline(sinks=(cap.sink,)).session("q")
    run_live(s, [NAVIGATE, PATCH, VALIDATE])
    s.end()
    assert cap.flush()
    assert len(cap.spans("execute_tool bash")) + len(cap.spans("execute_tool str_replace_editor")) == 3
    assert cap.sink.drops.total == 0


def test_deferred_spans_reach_the_exporter_at_exit_without_shutdown(tmp_path: Path) -> None:
    # An app that never calls shutdown: the SDK's exit hook shuts its provider down, after which a real
    # exporter refuses spans; planguard's worker must hand its queue over before that.
    out = tmp_path / "exported.txt"
    code = textwrap.dedent(f"""
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
        from planguard.events import ToolEvent
        from planguard.session import Pipeline
        from planguard.sinks.otel.otel import OTelSink

        class FileExporter(SpanExporter):
            stopped = False
            def export(self, spans):
                if self.stopped:
                    return SpanExportResult.FAILURE
                with open({str(out)!r}, "a") as f:
                    f.writelines(s.name + "\\n" for s in spans)
                return SpanExportResult.SUCCESS
            def shutdown(self):
                self.stopped = True

        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(FileExporter()))
        sink = OTelSink(tracer_provider=provider, defer_spans=True)
        s = Pipeline(sinks=(sink,)).session("exit")
        for i in range(3):
            s.observe(ToolEvent.shell(f"cat /testbed/f{{i}}.py"))
        s.end()
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert sorted(out.read_text().split("\n")[:-1]) == ["execute_tool bash"] * 3 + ["invoke_agent"]


# ------------------------------------------------------------------------------- untraced sessions


def metric_points(reader: InMemoryMetricReader) -> dict[str, list[tuple[tuple[Any, ...], Any]]]:
    """Metric name → its data points (attributes, value or histogram counts), ids and clocks left out."""
    out: dict[str, list[tuple[tuple[Any, ...], Any]]] = {}
    data = reader.get_metrics_data()
    assert data is not None
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                # (tool durations are clock readings: their counts are compared, not their sums)
                timed = m.name == A.METRIC_TOOL_DURATION
                points = [
                    (
                        tuple(sorted((dp.attributes or {}).items())),
                        dp.value
                        if hasattr(dp, "value")
                        else (
                            dp.count,
                            None if timed else dp.sum,
                            None if timed else tuple(dp.bucket_counts),
                        ),
                    )
                    for dp in m.data.data_points
                ]
                out[m.name] = sorted(points, key=repr)
    return out


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    calls=st.lists(
        st.tuples(st.sampled_from([*COMMANDS, "rm -rf /testbed", "python /testbed/fails.py"]), st.booleans()),
        min_size=1,
        max_size=30,
    ),
    end=st.booleans(),
)
def test_untraced_sessions_count_what_traced_ones_count(calls: list[tuple[str, bool]], end: bool) -> None:
    # A tracer that records nothing (the global API before the app configures OpenTelemetry) makes the
    # sink skip its spans: the metrics must not notice. Live and offline calls, blocked calls, findings,
    # decisions, and sessions ended or left open.
    from planguard.sinks.otel.otel import OTelSink

    reader = InMemoryMetricReader()
    untraced = OTelSink(
        tracer_provider=NoOpTracerProvider(), meter_provider=MeterProvider(metric_readers=[reader])
    )
    traced = TelemetryCapture()
    for cap_sink in (traced.sink, untraced):
        s = Pipeline(
            sinks=(cap_sink,),
            detectors=(ScriptedDetector("failed_run", lambda s: s.event.failed),),
            policies=(RemindAfterFirst(), DenyRm(), NudgeOnFinding(), ModelNudge(), StopAtEnd()),
        ).session("u")
        for i, (command, live) in enumerate(calls):
            ev = ToolEvent.shell(command, call_id=f"c{i}")
            if live:
                run_live(s, [ev], exit_codes={f"c{i}": 1 if "fails" in command else 0})
            else:
                ev.exit_code = 1 if "fails" in command else 0
                s.observe(ev)
        if end:
            s.end()
        assert s.pipeline.errors.total == 0, s.pipeline.errors.counts
    traced.flush()
    assert traced.spans()  # the traced sink did make spans
    assert metric_points(reader) == metric_points(traced.reader)


class DropSessionSpans(Sampler):
    """Samples tool spans, never session spans: not parent-based, so a tool span's fate is its own."""

    def should_sample(
        self, parent_context: Any, trace_id: int, name: str, *args: Any, **kw: Any
    ) -> SamplingResult:
        return SamplingResult(
            Decision_.DROP if name.startswith("invoke_agent") else Decision_.RECORD_AND_SAMPLE
        )

    def get_description(self) -> str:
        return "DropSessionSpans"


def test_a_sampled_out_session_span_does_not_make_the_session_untraced() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(sampler=DropSessionSpans())
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    from planguard.sinks.otel.otel import OTelSink

    s = Pipeline(sinks=(OTelSink(tracer_provider=provider),)).session("sampled")
    run_live(s, [NAVIGATE, PATCH])
    s.end()
    names = [sp.name for sp in exporter.get_finished_spans()]
    assert names == ["execute_tool bash", "execute_tool str_replace_editor"]


def test_span_names_phases_and_action_types_of_any_tool_role_tuple_and_action() -> None:
    """Tool names, role tuples and action types are the user's and the agent's to vary without end (a custom
    classifier's types need not be an enum): each span's text is its own call's."""
    from types import SimpleNamespace

    cap = TelemetryCapture()
    s = Pipeline(
        rules=get_rules("v351278e"),
        sinks=(cap.sink,),
        actions=lambda ev: SimpleNamespace(type=f"kind-{ev.call_id}"),
    ).session("m")
    n = 8
    # k navigations in one call: a role tuple of length k, new for every k.
    run_live(
        s,
        [ToolEvent(tool=f"tool{k}", action=" && ".join(["ls"] * k), call_id=f"{k}") for k in range(1, n + 1)],
    )
    s.end()
    cap.flush()
    spans = {
        int(sp.attributes[A.STEP_INDEX]): sp for sp in cap.spans() if A.STEP_INDEX in (sp.attributes or {})
    }  # type: ignore[arg-type]
    assert len(spans) == n
    for i, span in spans.items():
        k = i + 1
        assert span.name == f"execute_tool tool{k}"
        assert span.attributes[A.PHASE] == "N" * k  # type: ignore[index]
        assert span.attributes[A.ACTION_TYPE] == f"kind-{k}"  # type: ignore[index]


def test_session_events_waiting_for_the_worker_stay_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """A reminder at every model call, with no cap per session, is a session-span event each time; when the
    worker builds the spans, a session holds at most ``MAX_DEFERRED_EVENTS`` of them: the newest, as the SDK
    keeps a span's newest events. The rest are counted as dropped."""
    from planguard.sinks.capture import CaptureMode
    from planguard.sinks.otel import otel

    class EveryModelCall(Policy):
        name = "every"

        def before_model(self, session: Session, state: Any) -> Iterable[Decision]:
            return [Decision(DecisionKind.REMIND, f"reminder {session.n_model_calls}", self.name)]

    monkeypatch.setattr(otel, "MAX_DEFERRED_EVENTS", 3)
    cap = TelemetryCapture(capture=CaptureMode.SPAN_AND_EVENT)
    s = Pipeline(policies=(EveryModelCall(),), sinks=(cap.sink,)).session("reminded")
    n = 8
    for _ in range(n):
        s.before_model()
        ((_, st),) = s.sink_states
        assert len(st.deferred) <= 3
    s.end()
    assert cap.flush()
    (agent,) = cap.spans("invoke_agent")
    assert [
        e.attributes[A.DECISION_MESSAGE]  # type: ignore[index]
        for e in agent.events
        if e.name == A.EVENT_DECISION
    ] == [f"reminder {i}" for i in range(n - 2, n + 1)]
    # the session's evaluation results are never what makes room
    assert [e.name for e in agent.events].count(A.EVENT_EVALUATION_RESULT) == 4
    assert cap.sink.drops["session_events_full"] == n - 3


def test_tool_call_counts_stay_bounded_and_count_every_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """Phase letters have one letter per sub-command, so chained commands make new (letters, action type)
    pairs without end: a session's tally, and the sink's totals over its sessions, count at most
    ``MAX_CALL_KEYS`` pairs apart and the rest under OpenTelemetry's overflow attribute. Every call is still
    counted."""
    from planguard.sinks.otel import instruments

    monkeypatch.setattr(instruments, "MAX_CALL_KEYS", 3)
    cap = TelemetryCapture()

    def chains(sid: str, lengths: range) -> None:
        s = Pipeline(sinks=(cap.sink,)).session(sid)
        run_live(s, [ToolEvent(tool="bash", action=" && ".join(["ls"] * k), call_id=f"{k}") for k in lengths])
        ((_, st),) = s.sink_states
        assert len(st.tally.tool_calls) <= 3 + 1
        s.end()

    chains("short", range(1, 4))  # N, NN, NNN: within the bound
    chains("longer", range(4, 7))  # three more pairs: the totals overflow, this session's tally does not
    chains("long", range(1, 9))  # eight pairs in one session
    points = cap.metrics()[A.METRIC_TOOL_CALLS]
    assert sum(value for _, value in points) == 3 + 3 + 8
    by_phase = {attrs.get(A.M_PHASE): value for attrs, value in points if A.M_PHASE in attrs}
    assert by_phase == {"N": 2, "NN": 2, "NNN": 2}
    assert [value for attrs, value in points if attrs.get("otel.metric.overflow") is True] == [3 + 5]


def test_tallies_of_sessions_gone_are_folded_without_a_collection(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing collects metrics until the app configures a reader (maybe never): the tallies of ended sessions
    are folded into the totals once ``MAX_RETIRING`` of them wait, not kept one per session; a later
    collection still counts every call."""
    import gc

    from planguard.sinks.otel import instruments

    monkeypatch.setattr(instruments, "MAX_RETIRING", 3)
    cap = TelemetryCapture()
    pipe = Pipeline(sinks=(cap.sink,))
    n = 8
    for i in range(n):
        s = pipe.session(f"gone{i}")
        run_live(s, [NAVIGATE])
        s.end()
        del s
        gc.collect()
        counts = cap.sink._counts
        assert len(counts._retiring) <= 3 and len(counts._live) <= 3 + 1
    assert cap.metric(A.METRIC_TOOL_CALLS, **{A.M_PHASE: "N"}) == n


# ------------------------------------------------------------------- evaluation results, provider, latency


def without_event_name(attributes: Any) -> dict[str, Any]:
    """A record's attributes less ``event.name`` (where SDKs before 1.35 put the event's name)."""
    return {k: v for k, v in attributes.items() if k != "event.name"}


def test_compliance_and_findings_are_evaluation_results() -> None:
    cap = TelemetryCapture()
    s = pipeline(cap).session("evaluated")
    run_live(s, [fresh(e) for e in (NAVIGATE, CREATE, RUN_FAIL)], {"c2": 1})
    summary = s.end()
    cap.flush()
    (agent,) = cap.spans("invoke_agent")
    results = {r[A.GEN_AI_EVALUATION_NAME]: r for r in events_of(agent, A.EVENT_EVALUATION_RESULT)}
    scores = summary.scores[s.pipeline.plan.name]
    for name in ("PC", "PPC", "POC", "PPF"):
        r = results[name]
        assert r[A.GEN_AI_EVALUATION_SCORE_VALUE] == pytest.approx(getattr(scores, name))
        assert r[A.GEN_AI_EVALUATION_SCORE_LABEL] in (A.LABEL_COMPLETE, A.LABEL_PARTIAL, A.LABEL_NONE)
        assert A.EVALUATIONS[name].split(":")[0] in r[A.GEN_AI_EVALUATION_EXPLANATION]
    # the run never patched: PPC < 1, and the explanation names what is missing
    assert results["PPC"][A.GEN_AI_EVALUATION_SCORE_LABEL] == A.LABEL_PARTIAL
    assert "missing phases" in results["PPC"][A.GEN_AI_EVALUATION_EXPLANATION]
    # a finding: an evaluation result on the span of the call that completed it
    failed = by_index(cap.spans("execute_tool bash"))[2]
    (finding,) = events_of(failed, A.EVENT_EVALUATION_RESULT)
    assert finding[A.GEN_AI_EVALUATION_NAME] == A.FINDING_EVALUATION_PREFIX + "failed_run"
    assert finding[A.GEN_AI_EVALUATION_SCORE_LABEL] == A.LABEL_DETECTED
    # the same results as log-based events (the GenAI conventions' form), parented to the span they evaluate
    logged = cap.events(A.EVENT_EVALUATION_RESULT)
    on_agent = {
        r.attributes[A.GEN_AI_EVALUATION_NAME]: r for r in logged if r.span_id == agent.context.span_id
    }
    for name in ("PC", "PPC", "POC", "PPF"):
        assert without_event_name(on_agent[name].attributes) == results[name]
        assert on_agent[name].trace_id == agent.context.trace_id
    (on_call,) = [r for r in logged if r.span_id == failed.context.span_id]
    assert without_event_name(on_call.attributes) == finding
    assert "higher is better" in finding[A.GEN_AI_EVALUATION_EXPLANATION]
    assert "python" not in finding[A.GEN_AI_EVALUATION_EXPLANATION]  # steps, not content


def test_provider_name_and_tool_type() -> None:
    cap = TelemetryCapture()
    s = pipeline(cap).session("p1")
    run_live(s, [fresh(NAVIGATE)])
    s.end()
    s = pipeline(cap).session("p2", provider="anthropic")
    s.end()
    cap.flush()
    by_conv = {a.attributes[A.GEN_AI_CONVERSATION_ID]: a.attributes for a in cap.spans("invoke_agent")}  # type: ignore[index]
    assert by_conv["p1"][A.GEN_AI_PROVIDER_NAME] == A.PROVIDER_UNKNOWN
    assert by_conv["p2"][A.GEN_AI_PROVIDER_NAME] == "anthropic"
    (tool_span,) = cap.spans("execute_tool bash")
    assert tool_span.attributes[A.GEN_AI_TOOL_TYPE] == A.TOOL_TYPE_FUNCTION  # type: ignore[index]

    configured = TelemetryCapture(provider_name="openai")
    s = pipeline(configured).session("p3", provider="anthropic")
    s.end()
    configured.flush()
    (agent,) = configured.spans("invoke_agent")
    assert agent.attributes[A.GEN_AI_PROVIDER_NAME] == "openai"  # type: ignore[index]


def test_tool_latency_histogram() -> None:
    cap = TelemetryCapture()
    s = pipeline(cap).session("timed")
    t0 = 1_700_000_000.0
    for i, (ev, seconds) in enumerate([(NAVIGATE, 0.5), (RUN_FAIL, 3.0)]):
        ev = fresh(ev)
        ev.start_time, ev.end_time = t0 + 10 * i, t0 + 10 * i + seconds
        ev.exit_code = 1 if ev.call_id == "c2" else 0
        s.observe(ev)
    s.end()
    points = {tuple(sorted(a.items())): v for a, v in cap.metrics()[A.METRIC_TOOL_DURATION]}
    by_error = {dict(k).get(A.M_ERROR, ""): v for k, v in points.items()}
    assert by_error[""].count == 1 and by_error[""].sum == pytest.approx(0.5)
    assert by_error[A.ERROR_EXIT_CODE].count == 1 and by_error[A.ERROR_EXIT_CODE].sum == pytest.approx(3.0)
