"""Content capture: the OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT forms, off by default, and when on,
content that is redacted and attached on a worker thread, never on the agent's."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from pydantic import ValidationError

from planguard.decisions import Decision, DecisionKind
from planguard.events import ToolEvent
from planguard.session import Pipeline, Session
from planguard.sinks.capture import ENV_CAPTURE, CaptureMode, capture_mode_from_env, parse_capture_mode
from planguard.sinks.redact import Redactor
from planguard.sinks.telemetry import attributes as A
from planguard.sinks.telemetry.config import TelemetryConfig
from planguard.sinks.telemetry.testing import TelemetryCapture
from planguard.stages import Policy
from planguard.step import Step
from planguard.testing import ScriptedDetector

SECRET = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2"
GH = "ghp_" + "x" * 36


@pytest.mark.parametrize(
    ("raw", "mode"),
    [
        ("true", CaptureMode.SPAN_ONLY),
        ("True", CaptureMode.SPAN_ONLY),
        ("false", CaptureMode.NO_CONTENT),
        ("NO_CONTENT", CaptureMode.NO_CONTENT),
        ("SPAN_ONLY", CaptureMode.SPAN_ONLY),
        ("event_only", CaptureMode.EVENT_ONLY),
        (" SPAN_AND_EVENT ", CaptureMode.SPAN_AND_EVENT),
        ("", CaptureMode.NO_CONTENT),
    ],
)
def test_env_forms(raw: str, mode: CaptureMode) -> None:
    assert capture_mode_from_env({ENV_CAPTURE: raw}) is mode


def test_unset_or_unknown_is_off(caplog: pytest.LogCaptureFixture) -> None:
    assert capture_mode_from_env({}) is CaptureMode.NO_CONTENT
    assert capture_mode_from_env({ENV_CAPTURE: "everything"}) is CaptureMode.NO_CONTENT
    assert ENV_CAPTURE in caplog.text
    assert parse_capture_mode("everything") is None


def test_config_value_wins_over_env_and_is_validated() -> None:
    env = {ENV_CAPTURE: "SPAN_AND_EVENT"}
    assert TelemetryConfig().capture_mode(env) is CaptureMode.SPAN_AND_EVENT
    assert TelemetryConfig(capture_content="false").capture_mode(env) is CaptureMode.NO_CONTENT
    assert TelemetryConfig(capture_content=True).capture_mode({}) is CaptureMode.SPAN_ONLY  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="SPAN_ONLY"):
        TelemetryConfig(capture_content="sometimes")


class Remind(Policy):
    name = "remind"

    def after_tool(self, step: Step, session: Session, state: Any) -> list[Decision]:
        return [Decision(DecisionKind.REMIND, f"PLAN REMINDER: key {SECRET}", self.name)]


def run(cap: TelemetryCapture, arguments: Any = None, result: str = "done") -> None:
    detector = ScriptedDetector("leak", [0], evidence=f"saw token={GH} in output")
    s = Pipeline(detectors=(detector,), policies=(Remind(),), sinks=(cap.sink,)).session("cap")
    ev = ToolEvent.shell(f"curl -H 'Authorization: Bearer {SECRET}' https://api/x", call_id="k")
    if arguments is not None:
        ev.arguments = arguments
    s.before_tool(ev)
    ev.result, ev.exit_code = result, 0
    s.after_tool(ev)
    s.end()
    assert cap.flush()


def only_tool(cap: TelemetryCapture) -> Any:
    (span,) = cap.spans("execute_tool bash")
    return span


def test_off_by_default_nothing_leaves(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_CAPTURE, raising=False)
    from planguard.sinks.telemetry.otel import OTelSink

    assert OTelSink().capture is CaptureMode.NO_CONTENT
    cap = TelemetryCapture()
    run(cap, result=f"password={SECRET}")
    span = only_tool(cap)
    assert A.GEN_AI_TOOL_CALL_ARGUMENTS not in span.attributes
    assert A.GEN_AI_TOOL_CALL_RESULT not in span.attributes
    for s in cap.spans():
        for e in s.events:
            assert A.FINDING_EVIDENCE not in e.attributes and A.DECISION_MESSAGE not in e.attributes
            assert e.name != A.EVENT_TOOL_CONTENT
        assert "curl" not in repr(dict(s.attributes))


def test_span_only_content_is_redacted() -> None:
    cap = TelemetryCapture(capture=CaptureMode.SPAN_ONLY)
    run(cap, result=f"ok\nexport AWS_SECRET_ACCESS_KEY=abc123def\nGITHUB_TOKEN={GH}")
    span = only_tool(cap)
    args = span.attributes[A.GEN_AI_TOOL_CALL_ARGUMENTS]
    result = span.attributes[A.GEN_AI_TOOL_CALL_RESULT]
    assert "curl" in args and SECRET not in args and "[REDACTED]" in args
    assert "abc123def" not in result and GH not in result and result.startswith("ok")
    assert A.EVENT_TOOL_CONTENT not in [e.name for e in span.events]
    (finding,) = [e for e in span.events if e.name == A.EVENT_FINDING]
    assert finding.attributes[A.FINDING_EVIDENCE] == "saw token=[REDACTED] in output"
    (decision,) = [e for e in span.events if e.name == A.EVENT_DECISION]
    assert decision.attributes[A.DECISION_MESSAGE] == "PLAN REMINDER: key [REDACTED]"


def test_event_only_and_span_and_event() -> None:
    cap = TelemetryCapture(capture=CaptureMode.EVENT_ONLY)
    run(cap, arguments={"command": "deploy", "password": "hunter2"})
    span = only_tool(cap)
    assert A.GEN_AI_TOOL_CALL_ARGUMENTS not in span.attributes
    (content,) = [e for e in span.events if e.name == A.EVENT_TOOL_CONTENT]
    assert (
        content.attributes[A.GEN_AI_TOOL_CALL_ARGUMENTS] == '{"command": "deploy", "password": "[REDACTED]"}'
    )
    assert content.attributes[A.GEN_AI_TOOL_CALL_RESULT] == "done"
    assert span.start_time <= content.timestamp <= span.end_time

    both = TelemetryCapture(capture=CaptureMode.SPAN_AND_EVENT)
    run(both)
    span = only_tool(both)
    assert A.GEN_AI_TOOL_CALL_ARGUMENTS in span.attributes
    assert [e.name for e in span.events].count(A.EVENT_TOOL_CONTENT) == 1


def test_content_is_cut_to_the_limit() -> None:
    cap = TelemetryCapture(capture=CaptureMode.SPAN_ONLY, max_content_chars=50)
    run(cap, result="x" * 10_000)
    result = only_tool(cap).attributes[A.GEN_AI_TOOL_CALL_RESULT]
    assert result.startswith("x" * 50) and len(result) < 100 and "truncated" in result


class GatedRedactor(Redactor):
    """Blocks until released and records the threads it ran on."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.entered = threading.Event()
        self.threads: set[str] = set()

    def __call__(self, text: str) -> str:
        self.threads.add(threading.current_thread().name)
        self.entered.set()
        self.release.wait(10)
        return super().__call__(text)


def test_redaction_runs_off_the_agents_thread() -> None:
    redactor = GatedRedactor()
    cap = TelemetryCapture(capture=CaptureMode.SPAN_ONLY, redactor=redactor)
    s = Pipeline(sinks=(cap.sink,)).session("hot")
    ev = ToolEvent.shell(f"echo {SECRET}", call_id="1")
    s.before_tool(ev)
    ev.result = SECRET
    s.after_tool(ev)  # returns although redaction is blocked
    assert cap.spans("execute_tool bash") == []  # the span waits for its content, off the hot path
    redactor.release.set()
    s.end()
    assert cap.flush()
    span = only_tool(cap)
    assert SECRET not in span.attributes[A.GEN_AI_TOOL_CALL_RESULT]
    assert redactor.threads and threading.current_thread().name not in redactor.threads
    # the parent ends after its child: the worker keeps submission order
    (agent,) = cap.spans("invoke_agent")
    assert cap.spans().index(span) < cap.spans().index(agent)


def test_full_content_queue_drops_content_not_spans() -> None:
    redactor = GatedRedactor()
    cap = TelemetryCapture(capture=CaptureMode.SPAN_ONLY, redactor=redactor, max_queue_size=2)
    s = Pipeline(sinks=(cap.sink,)).session("full")
    for i in range(6):
        ev = ToolEvent.shell(f"ls {i}", call_id=str(i))
        s.before_tool(ev)
        ev.result = "r"
        s.after_tool(ev)
        if i == 0:  # the worker holds the first call (blocked in redaction); the queue takes two more
            assert redactor.entered.wait(10)
    dropped = cap.sink.drops["content_queue_full"]
    assert dropped == 3
    assert len(cap.spans("execute_tool bash")) == dropped  # ended at once, without content
    assert all(A.GEN_AI_TOOL_CALL_RESULT not in sp.attributes for sp in cap.spans("execute_tool bash"))
    redactor.release.set()
    s.end()
    assert cap.flush()
    assert len(cap.spans("execute_tool bash")) == 6
    total = cap.sink.drops["content_queue_full"]  # the session span may have been dropped too
    assert cap.metric(A.METRIC_DROPPED, **{A.M_REASON: "content_queue_full"}) == total >= dropped
