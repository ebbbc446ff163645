"""End to end against a real Arize Phoenix (started by ``.ci/services/phoenix.sh``): a monitored session is
exported over OTLP/HTTP from the standard ``OTEL_*`` variables and read back through Phoenix's REST API
(``GET /v1/projects/{project}/spans``) — names, parentage, GenAI and planguard attributes, events, and the
evaluation results (compliance, findings) of a ``planguard demo`` run."""

from __future__ import annotations

import json
import os
import shutil
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
from planguard.sinks.otel import attributes as A
from planguard.sinks.otel import build_sinks
from planguard.sinks.otel.config import TelemetryConfig
from planguard.sinks.otel.otel import OTelSink
from planguard.sinks.store.config import StoreConfig
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


def fetch_spans(
    project: str, expected: int = 0, names: frozenset[str] = frozenset(), timeout_s: float = 60
) -> list[dict[str, Any]]:
    """The project's spans once Phoenix has ``expected`` of them and every one of ``names``."""
    deadline = time.monotonic() + timeout_s
    spans: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        r = httpx.get(f"{PHOENIX_URL}/v1/projects/{project}/spans", params={"limit": 1000}, timeout=10)
        if r.status_code == 200:
            spans = r.json()["data"]
            if len(spans) >= expected and names <= {s["name"] for s in spans}:
                return spans
        time.sleep(0.5)
    found = sorted(s["name"] for s in spans)
    raise AssertionError(f"Phoenix has {found} for {project}, expected {expected} spans and {sorted(names)}")


def test_session_round_trip_through_phoenix(monkeypatch: pytest.MonkeyPatch) -> None:
    project = f"planguard-e2e-{uuid.uuid4().hex[:10]}"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", str(PHOENIX_URL))
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")  # Phoenix takes traces only
    monkeypatch.setenv("OTEL_LOGS_EXPORTER", "none")
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
        "OTEL_LOGS_EXPORTER": "none",
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


# ------------------------------------------------------------------- the application's own pipeline
# planguard never touches the application's telemetry pipeline: an application configures OpenTelemetry the
# documented ways (Phoenix's register() with OpenInference's LangChain auto-instrumentation, and
# opentelemetry-instrument), runs a LangChain agent under planguard's middleware inside a request span of its
# own, and every span it exports still reaches Phoenix: one trace, planguard's session span under the
# request, one tool span per call; the provider's span processors are the same before and after.

APP = """
import json, os, sys
from langchain.agents import create_agent
from langchain_core.tools import tool
from opentelemetry import trace
from planguard_langchain import PlanGuardMiddleware
from planguard_langchain.testing import ScriptedChatModel, call, turn
from planguard import Config, Guard
from planguard.sinks.otel.config import TelemetryConfig
from planguard.sinks.store.config import StoreConfig

if sys.argv[1] == "register":
    from phoenix.otel import register
    project = os.environ["PROJECT"]
    register(project_name=project, protocol="http/protobuf", auto_instrument=True, verbose=False)

ASYNC = sys.argv[2:] == ["ainvoke"]  # the async agent with async def tools

if ASYNC:
    @tool
    async def read_file(path: str) -> str:
        \"\"\"Read a file of the repository.\"\"\"
        return "contents of " + path

    @tool
    async def bash(command: str) -> str:
        \"\"\"Run a shell command.\"\"\"
        return "1 failed"
else:
    @tool
    def read_file(path: str) -> str:
        \"\"\"Read a file of the repository.\"\"\"
        return "contents of " + path

    @tool
    def bash(command: str) -> str:
        \"\"\"Run a shell command.\"\"\"
        return "1 failed"

provider = trace.get_tracer_provider()
processors = lambda: list(provider._active_span_processor._span_processors)
before = processors()
guard = Guard(Config(telemetry=TelemetryConfig(agent_name="coder"), store=StoreConfig(enabled=False)))
model = ScriptedChatModel(turns=[
    turn(call("read_file", path="src/app.py")),
    turn(call("bash", command="python -m pytest tests/test_app.py")),
    turn(text="The test fails; done."),
])
agent = create_agent(model, [read_file, bash], middleware=[PlanGuardMiddleware(guard)])
app = trace.get_tracer("the-app")
with app.start_as_current_span("handle_request"):
    request = ({"messages": [("user", "fix the bug")]}, {"configurable": {"thread_id": "t-1"}})
    if ASYNC:
        import asyncio
        asyncio.run(agent.ainvoke(*request))
    else:
        agent.invoke(*request)
    with app.start_as_current_span("after_agent"):
        pass
guard.shutdown()
after = processors()
provider.force_flush()
print(json.dumps({"same_processors": before == after, "processors": [type(p).__name__ for p in after],
                  "errors": guard.errors.total}))
"""


@pytest.mark.parametrize("setup", ["register", "register-ainvoke", "opentelemetry-instrument"])
def test_every_application_span_reaches_phoenix_in_one_trace(setup: str, tmp_path: Path) -> None:
    project = f"planguard-app-{setup}-{uuid.uuid4().hex[:8]}"
    script = tmp_path / "app.py"
    script.write_text(APP)
    env = {
        **os.environ,
        "PROJECT": project,
        "PHOENIX_COLLECTOR_ENDPOINT": str(PHOENIX_URL),
        "OTEL_RESOURCE_ATTRIBUTES": f"openinference.project.name={project}",
    }
    if setup.startswith("register"):  # (register-ainvoke: the async agent, async def tools)
        cmd = [sys.executable, str(script), "register", *setup.split("-")[1:]]
    else:
        instrument = shutil.which("opentelemetry-instrument", path=str(Path(sys.executable).parent))
        assert instrument, "opentelemetry-instrument (opentelemetry-distro) is not installed"
        env.update(
            OTEL_EXPORTER_OTLP_ENDPOINT=str(PHOENIX_URL),
            OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf",
            OTEL_TRACES_EXPORTER="otlp",
            OTEL_METRICS_EXPORTER="none",
            OTEL_LOGS_EXPORTER="none",
        )
        cmd = [instrument, sys.executable, str(script), "instrument"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["same_processors"], report  # nothing added to the application's provider
    assert report["errors"] == 0

    expected = {"handle_request", "after_agent", "invoke_agent coder"}
    if setup.startswith("register"):
        expected |= {"LangGraph", "read_file", "bash"}  # OpenInference's spans, tool spans included
    spans = fetch_spans(project, names=frozenset(expected))
    names = [s["name"] for s in spans]
    assert len({s["context"]["trace_id"] for s in spans}) == 1, names  # one trace
    by_id = {s["context"]["span_id"]: s for s in spans}
    (request,) = [s for s in spans if s["name"] == "handle_request"]
    (session,) = [s for s in spans if s["name"] == "invoke_agent coder"]
    ancestor = session
    while ancestor.get("parent_id"):
        ancestor = by_id[ancestor["parent_id"]]
    assert ancestor is request  # planguard's session span is inside the application's request
    tool_spans = [
        s
        for s in spans
        if s["attributes"].get("openinference.span.kind") == "TOOL"
        or s["attributes"].get("gen_ai.operation.name") == "execute_tool"
    ]
    assert sorted(s["attributes"].get("gen_ai.tool.name") for s in tool_spans) == ["bash", "read_file"]
    if setup.startswith("register"):  # OpenInference's tool spans carry planguard's attributes, none its own
        assert not [n for n in names if n.startswith("execute_tool")], names
        assert all("planguard.phase" in s["attributes"] for s in tool_spans)


# ------------------------------------------------------------------- scores as Phoenix annotations


def test_scores_are_annotations_on_the_agents_span(monkeypatch: pytest.MonkeyPatch) -> None:
    from planguard.sinks.scores import PhoenixAnnotations

    project = f"planguard-scores-{uuid.uuid4().hex[:10]}"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", str(PHOENIX_URL))
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")
    monkeypatch.setenv("OTEL_LOGS_EXPORTER", "none")
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", f"openinference.project.name={project}")
    monkeypatch.setenv("PHOENIX_COLLECTOR_ENDPOINT", f"{PHOENIX_URL}/v1/traces")
    (otel,) = build_sinks(TelemetryConfig(agent_name="scored-agent"), StoreConfig(enabled=False))
    annotations = PhoenixAnnotations()  # from PHOENIX_COLLECTOR_ENDPOINT, as configured by name
    pipe = Pipeline(
        detectors=(ScriptedDetector("failing_run", lambda s: s.event.failed),),
        policies=(Policies(),),
        sinks=(otel, annotations),
    )
    session = pipe.session("conv-scored")
    for ev in EVENTS:
        if session.before_tool(ev).blocks:
            continue
        ev.result, ev.exit_code = ("Traceback", 1) if ev.call_id == "call-2" else ("ok", 0)
        session.after_tool(ev)
    summary = session.end()
    otel.shutdown()
    assert annotations.flush(30)
    annotations.shutdown()
    assert annotations.drops.total == 0 and annotations.errors.total == 0, annotations.errors.counts

    name = "invoke_agent scored-agent"
    (agent,) = [s for s in fetch_spans(project, names=frozenset({name})) if s["name"] == name]
    span_id, trace_id = agent["context"]["span_id"], agent["context"]["trace_id"]
    got = annotations_of(project, "span", span_id, 5)
    scores = summary.scores[pipe.plan.name]
    for name in ("PC", "PPC", "POC", "PPF"):
        assert got[name]["result"]["score"] == pytest.approx(getattr(scores, name))
        assert got[name]["annotator_kind"] == "CODE"
        assert "higher is better" in got[name]["result"]["explanation"]
    finding = got["planguard.finding.failing_run"]
    assert finding["result"]["score"] == 0 and finding["result"]["label"] == "detected"
    assert set(annotations_of(project, "trace", trace_id, 4)) == {"PC", "PPC", "POC", "PPF"}


def annotations_of(project: str, kind: str, ident: str, expected: int) -> dict[str, dict[str, Any]]:
    """Phoenix's annotations of one span or trace, by name, once it has ``expected`` of them (it stores
    annotations sent without ``sync`` in the background)."""
    got: dict[str, dict[str, Any]] = {}
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(got) < expected:
        r = httpx.get(
            f"{PHOENIX_URL}/v1/projects/{project}/{kind}_annotations",
            params={f"{kind}_ids": ident},
            timeout=10,
        )
        r.raise_for_status()
        got = {a["name"]: a for a in r.json()["data"]}
        time.sleep(0.3)
    return got
