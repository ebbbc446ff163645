"""End to end against a real Arize Phoenix (started by ``.ci/services/phoenix.sh``): a monitored session is
exported over OTLP/HTTP from the standard ``OTEL_*`` variables and read back through Phoenix's REST API
(``GET /v1/projects/{project}/spans``) — names, parentage, GenAI and planguard attributes, events, and the
evaluation results (compliance, findings) of a ``planguard demo`` run."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from planguard.decisions import Decision, DecisionKind
from planguard.events import ToolEvent
from planguard.session import Pipeline, Session
from planguard.sinks.store.config import StoreConfig
from planguard.sinks.telemetry import attributes as A
from planguard.sinks.telemetry import build_sinks
from planguard.sinks.telemetry.config import TelemetryConfig
from planguard.sinks.telemetry.otel import OTelSink
from planguard.stages import Policy
from planguard.step import Step
from planguard.testing import ScriptedDetector

PHOENIX_URL = os.environ.get("PHOENIX_URL")
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        not PHOENIX_URL,
        reason="PHOENIX_URL is not set: start Phoenix with "
        '`eval "$(bash .ci/services/phoenix.sh start)"` (.ci/run does)',
    ),
]

SECRET = "ghp_" + "Z" * 36


class Policies(Policy):
    name = "e2e-policy"

    def before_tool(self, step: Step, session: Session, state: Any) -> Decision | None:
        if "rm -rf" in (step.event.action or ""):
            return Decision(DecisionKind.DENY, "refused", self.name)
        return None

    def after_tool(self, step: Step, session: Session, state: Any) -> list[Decision]:
        out = [Decision(DecisionKind.NUDGE, "reproduce before patching", self.name, f) for f in step.findings]
        if step.index == 0:
            out.append(
                Decision(DecisionKind.REMIND, "PLAN REMINDER: 1. Navigation 2. Reproduction", self.name)
            )
        return out

    def on_end(self, session: Session, state: Any) -> list[Decision]:
        return [Decision(DecisionKind.STOP, "done", self.name)]


EVENTS = [
    ToolEvent.shell("cat /testbed/src/mod.py", call_id="call-0"),
    ToolEvent(
        tool="str_replace_editor",
        call_id="call-1",
        arguments={"command": "create", "path": "/testbed/reproduce_bug.py", "file_text": "import mod\n"},
    ),
    ToolEvent.shell(f"GITHUB_TOKEN={SECRET} python /testbed/reproduce_bug.py", call_id="call-2"),
    ToolEvent.shell("rm -rf /testbed", call_id="call-rm"),
    ToolEvent(
        tool="str_replace_editor",
        call_id="call-3",
        arguments={"command": "str_replace", "path": "/testbed/src/mod.py", "old_str": "a", "new_str": "b"},
    ),
    ToolEvent.shell("python /testbed/reproduce_bug.py", call_id="call-4"),
]


def fetch_spans(project: str, expected: int, timeout_s: float = 60) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout_s
    spans: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        r = httpx.get(f"{PHOENIX_URL}/v1/projects/{project}/spans", params={"limit": 1000}, timeout=10)
        if r.status_code == 200:
            spans = r.json()["data"]
            if len(spans) >= expected:
                return spans
        time.sleep(0.5)
    raise AssertionError(f"Phoenix has {len(spans)} spans for {project}, expected {expected}")


def test_session_round_trip_through_phoenix(monkeypatch: pytest.MonkeyPatch) -> None:
    project = f"planguard-e2e-{uuid.uuid4().hex[:10]}"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", str(PHOENIX_URL))
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")  # Phoenix takes traces only
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", f"openinference.project.name={project}")
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
    # the OTel sink alone (the store stays on with an endpoint; this test reads Phoenix only)
    (sink,) = build_sinks(TelemetryConfig(agent_name="e2e-agent"), StoreConfig(enabled=False))
    assert isinstance(sink, OTelSink)
    app_tracer = sink._owned[0].get_tracer("e2e-app")

    pipe = Pipeline(
        detectors=(ScriptedDetector("failing_run", lambda s: s.event.failed),),
        policies=(Policies(),),
        sinks=(sink,),
    )
    with app_tracer.start_as_current_span("request"):
        session = pipe.session("conv-e2e")
    for ev in EVENTS:
        session.before_model()
        if session.before_tool(ev).blocks:
            continue
        ev.result = "Traceback: AssertionError" if ev.call_id == "call-2" else "ok"
        ev.exit_code = 1 if ev.call_id == "call-2" else 0
        session.after_tool(ev)
    session.end()
    sink.shutdown()  # flushes the content worker and the OTLP exporter
    assert sink.drops.total == 0

    spans = fetch_spans(project, expected=1 + 1 + 6)
    by_name: dict[str, list[dict[str, Any]]] = {}
    for s in spans:
        by_name.setdefault(s["name"], []).append(s)
    (request,) = by_name["request"]
    (agent,) = by_name["invoke_agent e2e-agent"]
    tools = by_name["execute_tool bash"] + by_name["execute_tool str_replace_editor"]
    assert len(tools) == 6

    # parentage: request → invoke_agent → execute_tool, one trace
    assert request["parent_id"] is None
    assert agent["parent_id"] == request["context"]["span_id"]
    assert all(t["parent_id"] == agent["context"]["span_id"] for t in tools)
    assert {s["context"]["trace_id"] for s in spans} == {agent["context"]["trace_id"]}

    a = agent["attributes"]
    assert a[A.GEN_AI_OPERATION_NAME] == "invoke_agent"
    assert a[A.GEN_AI_AGENT_NAME] == "e2e-agent"
    assert a[A.GEN_AI_CONVERSATION_ID] == "conv-e2e"
    assert a[A.SESSION_STEPS] == 5 and a[A.LANGUTORY] == "NRRPV"
    assert a[A.PC] == pytest.approx(1.0)
    assert agent["span_kind"] == "AGENT"  # Phoenix understood the GenAI operation
    assert [e["attributes"][A.DECISION_KIND] for e in agent["events"] if e["name"] == A.EVENT_DECISION] == [
        "stop"
    ]

    steps = {t["attributes"][A.STEP_INDEX]: t for t in tools if not t["attributes"].get(A.BLOCKED)}
    assert [steps[i]["attributes"][A.PHASE] for i in range(5)] == ["N", "R", "R", "P", "V"]
    for i, call in enumerate(["call-0", "call-1", "call-2", "call-3", "call-4"]):
        t = steps[i]["attributes"]
        assert t[A.GEN_AI_OPERATION_NAME] == "execute_tool"
        assert t[A.GEN_AI_TOOL_CALL_ID] == call
        assert t[A.GEN_AI_CONVERSATION_ID] == "conv-e2e"
        assert A.PPC in t and A.PC in t and A.LANGUTORY_TAIL in t
    assert steps[3]["attributes"][A.PPC] == pytest.approx(0.75)

    failed = steps[2]
    assert failed["status_code"] == "ERROR"
    assert failed["attributes"][A.ERROR_TYPE] == A.ERROR_EXIT_CODE
    # content was captured (SPAN_ONLY) and redacted before it left the process
    args = failed["attributes"][A.GEN_AI_TOOL_CALL_ARGUMENTS]
    assert "reproduce_bug.py" in args and SECRET not in args and "[REDACTED]" in args
    assert failed["attributes"][A.GEN_AI_TOOL_CALL_RESULT] == "Traceback: AssertionError"
    events = {e["name"]: e["attributes"] for e in failed["events"]}
    assert events[A.EVENT_FINDING][A.FINDING_DETECTOR] == "failing_run"
    assert events[A.EVENT_DECISION][A.DECISION_KIND] == "nudge"
    assert events[A.EVENT_DECISION][A.DECISION_MESSAGE] == "reproduce before patching"
    remind = [e["attributes"] for e in steps[0]["events"] if e["name"] == A.EVENT_DECISION]
    assert [(r[A.DECISION_KIND], r[A.DECISION_MESSAGE][:14]) for r in remind] == [
        ("remind", "PLAN REMINDER:")
    ]

    (blocked,) = [t for t in tools if t["attributes"].get(A.BLOCKED)]
    assert blocked["status_code"] == "ERROR"
    assert blocked["attributes"][A.ERROR_TYPE] == A.ERROR_BLOCKED
    assert [e["attributes"][A.DECISION_KIND] for e in blocked["events"]] == ["deny"]


def test_a_demo_run_shows_its_evaluation_results_in_phoenix(tmp_path: Path) -> None:
    """``planguard demo`` exported to Phoenix from the standard variables: the session's compliance scores
    and the run's findings are ``gen_ai.evaluation.result`` events Phoenix returns through its API."""
    project = f"planguard-demo-{uuid.uuid4().hex[:10]}"
    env = {
        **os.environ,
        "OTEL_EXPORTER_OTLP_ENDPOINT": str(PHOENIX_URL),
        "OTEL_METRICS_EXPORTER": "none",
        "OTEL_RESOURCE_ATTRIBUTES": f"openinference.project.name={project}",
    }
    done = subprocess.run(
        [sys.executable, "-m", "planguard", "demo", "--no-color", "--store", str(tmp_path / "store")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    spans = fetch_spans(project, expected=2)
    deadline = time.monotonic() + 60
    while not any(s["name"].startswith("invoke_agent") for s in spans) and time.monotonic() < deadline:
        time.sleep(0.5)
        spans = fetch_spans(project, expected=2)
    (agent,) = [s for s in spans if s["name"].startswith("invoke_agent")]
    assert agent["span_kind"] == "AGENT"
    assert agent["attributes"][A.GEN_AI_PROVIDER_NAME]
    results = {
        e["attributes"][A.GEN_AI_EVALUATION_NAME]: e["attributes"]
        for e in agent["events"]
        if e["name"] == A.EVENT_EVALUATION_RESULT
    }
    assert set(results) == {"PC", "PPC", "POC", "PPF"}
    for name, r in results.items():
        assert 0.0 <= r[A.GEN_AI_EVALUATION_SCORE_VALUE] <= 1.0
        assert r[A.GEN_AI_EVALUATION_SCORE_LABEL] in (A.LABEL_COMPLETE, A.LABEL_PARTIAL, A.LABEL_NONE)
        assert A.EVALUATIONS[name].split(":")[0] in r[A.GEN_AI_EVALUATION_EXPLANATION]
    assert results["PC"][A.GEN_AI_EVALUATION_SCORE_VALUE] == pytest.approx(agent["attributes"][A.PC])
    # the demo's findings, on the tool spans of the calls that completed them
    findings = [
        e["attributes"][A.GEN_AI_EVALUATION_NAME]
        for s in spans
        if s["name"].startswith("execute_tool")
        for e in s["events"]
        if e["name"] == A.EVENT_EVALUATION_RESULT
    ]
    assert findings and all(f.startswith(A.FINDING_EVALUATION_PREFIX) for f in findings)
    tools = [s for s in spans if s["name"].startswith("execute_tool")]
    assert tools and all(t["attributes"][A.GEN_AI_TOOL_TYPE] == A.TOOL_TYPE_FUNCTION for t in tools)
