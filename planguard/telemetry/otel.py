"""The OpenTelemetry sink: one ``invoke_agent`` span per session, one ``execute_tool`` span per tool call.

Spans follow the GenAI semantic conventions and carry planguard's view of each call (phase, action,
compliance so far, Langutory tail); findings and decisions become span events; counts become metrics.

Context: the session span is a child of whatever span is current when the session starts (the caller's
request span, say), and every tool span is a child of the session span. Parents are passed explicitly
as ``context=``; nothing is attached to the thread's context, so sessions served by the same threads
never see each other's spans.

Hot path: attribute dicts are built once per span from precomputed keys, counts are plain integers read
by observable instruments at collection time, and nothing is serialised. When content capture is on, a
span's content (arguments, results, evidence, messages) is rendered, redacted and attached on a worker
thread, which then ends the span with its original end time.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry import metrics as otel_metrics
from opentelemetry import trace
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, TracerProvider

from .. import __version__
from ..errors import ErrorCounter
from ..phases import LETTER_OF
from ..sinks import Sink
from . import attributes as A
from .capture import CaptureMode, capture_mode_from_env
from .drops import DropCounter
from .instruments import Counts, instruments_for
from .redact import Redactor, render_content
from .worker import BackgroundWorker

if TYPE_CHECKING:
    from ..decisions import Decision
    from ..events import ToolEvent
    from ..findings import Finding
    from ..session import Session, SessionSummary
    from ..step import Step

__all__ = ["OTelSink"]

_INTERNAL = SpanKind.INTERNAL
_ERROR = StatusCode.ERROR
#: Sessions the sink tracks at once; past this the least recently started one is closed as evicted.
MAX_SESSIONS = 10_000
#: Open tool spans per session (mirrors the session's own bound on pending calls).
MAX_OPEN_TOOLS = 1024

# A deferred event: (name, attributes, timestamp ns, content key or None, content or None)
_Deferred = tuple[str, dict[str, Any], int, str | None, Any]


def _ns(seconds: float | None) -> int | None:
    return None if seconds is None else int(seconds * 1e9)


class _ToolSpan:
    __slots__ = ("deferred", "live", "span")

    def __init__(self, span: Span, live: bool) -> None:
        self.span = span
        self.deferred: list[_Deferred] = []
        self.live = live  # started at the call's start (False: replayed after the fact)


class _SessionState:
    __slots__ = (
        "ctx",
        "deferred",
        "ended",
        "pre",
        "pre_step",
        "session",
        "span",
        "tail",
        "tail_len",
        "tools",
    )

    def __init__(self, session: Session, span: Span, ctx: otel_context.Context) -> None:
        self.session = session
        self.span = span
        self.ctx = ctx
        self.tools: dict[int, _ToolSpan] = {}
        # Decisions made in before_tool, before the call is accepted and its span exists.
        self.pre_step: Step | None = None
        self.pre: list[tuple[Decision, int]] = []
        self.deferred: list[_Deferred] = []  # session-span events waiting for the content worker
        self.tail_len = -1
        self.tail = ""
        self.ended = False


class _Job:
    """A span to finish on the content worker: attach content, add deferred events, end it."""

    __slots__ = ("arguments", "deferred", "end_ns", "result", "span")

    def __init__(
        self, span: Span, deferred: list[_Deferred], arguments: Any, result: Any, end_ns: int | None
    ) -> None:
        self.span = span
        self.deferred = deferred
        self.arguments = arguments
        self.result = result
        self.end_ns = end_ns


class OTelSink(Sink):
    """Spans, span events and metrics for every session of a pipeline.

    ``tracer_provider``/``meter_provider`` default to the global ones, which are no-ops until the
    application configures OpenTelemetry; planguard never installs global providers itself.
    """

    def __init__(
        self,
        *,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        agent_name: str | None = None,
        capture: CaptureMode | None = None,
        max_content_chars: int = 4096,
        max_queue_size: int = 2048,
        drops: DropCounter | None = None,
        errors: ErrorCounter | None = None,
        redactor: Redactor | None = None,
        owned: Iterable[Any] = (),
        max_sessions: int = MAX_SESSIONS,
    ) -> None:
        tp = tracer_provider if tracer_provider is not None else trace.get_tracer_provider()
        mp = meter_provider if meter_provider is not None else otel_metrics.get_meter_provider()
        self._tracer = tp.get_tracer(A.TRACER_NAME, __version__)
        self.agent_name = agent_name
        self.capture = capture if capture is not None else capture_mode_from_env()
        self._capture_on = self.capture.enabled
        self._max_content = max_content_chars
        self._redactor = redactor
        self.drops = drops if drops is not None else DropCounter()
        self.errors = errors if errors is not None else ErrorCounter()
        self._owned = list(owned)  # providers built for this sink: flushed and shut down with it
        self._max_sessions = max_sessions
        self._session_span_name = f"{A.SPAN_INVOKE_AGENT} {agent_name}" if agent_name else A.SPAN_INVOKE_AGENT
        self._tool_span_names: dict[str, str] = {}
        self._letters: dict[tuple[str, ...], str] = {}
        self._action_names: dict[Any, str] = {}  # enum member → its value (action types, effects)
        self._step_has_effect: bool | None = None
        self._states: OrderedDict[int, _SessionState] = OrderedDict()
        self._states_lock = threading.Lock()
        self._content = (
            BackgroundWorker(
                "otel-content",
                self._finish_jobs,
                drops=self.drops,
                drop_reason="content_queue_full",
                max_queue=max_queue_size,
                max_batch=64,
                interval_s=0.05,
                errors=self.errors,
            )
            if self._capture_on
            else None
        )
        # Counts, read by the observable instruments at collection time.
        self._counts = Counts(self.drops, self.errors)
        self._metrics = instruments_for(mp)
        self._metrics.attach(self._counts)

    # ------------------------------------------------------------------ session hooks

    def on_session_start(self, session: Session) -> None:
        self._state(session)

    def on_tool_start(self, session: Session, step: Step) -> None:
        st = self._state(session)
        self._open_tool(st, session, step, live=True)

    def on_tool_end(self, session: Session, step: Step) -> None:
        st = self._state(session)
        rec = st.tools.pop(step.index, None)
        if rec is None:  # offline observe(): the call is reported once, finished
            rec = self._open_tool(st, session, step, live=False)
            st.tools.pop(step.index, None)
        ev = step.event
        span = rec.span
        effect = self._effect(step)
        if ev.failed:
            if ev.is_error:
                span.set_attributes({A.ERROR_TYPE: A.ERROR_TOOL, A.EFFECT: effect or "FAILED"})
            else:
                span.set_attributes(
                    {
                        A.ERROR_TYPE: A.ERROR_EXIT_CODE,
                        A.EXIT_CODE: ev.exit_code or 0,
                        A.EFFECT: effect or "FAILED",
                    }
                )
            span.set_status(Status(_ERROR))
        else:
            span.set_attribute(A.EFFECT, effect or "SUCCEEDED")
        if step.findings:
            span.set_attribute(A.FINDINGS_COUNT, len(step.findings))
        # Live spans end now, after the findings and decisions about the call; replayed ones at the
        # recorded end, where their events were stamped.
        self._end(rec.span, rec.deferred, ev, time.time_ns() if rec.live else _ns(ev.end_time))

    def on_finding(self, session: Session, step: Step | None, finding: Finding) -> None:
        st = self._state(session)
        self._counts.finding(finding.detector)
        attrs = {
            A.FINDING_DETECTOR: finding.detector,
            A.FINDING_FIRST_STEP: finding.first_step,
            A.FINDING_LAST_STEP: finding.last_step,
            A.FINDING_AT_END: finding.at_end,
        }
        if step is None:
            self._event(
                st.span, st.deferred, A.EVENT_FINDING, attrs, None, A.FINDING_EVIDENCE, finding.evidence
            )
            return
        rec = self._tool_for(st, session, step)
        self._event(
            rec.span,
            rec.deferred,
            A.EVENT_FINDING,
            attrs,
            self._event_time(rec, step),
            A.FINDING_EVIDENCE,
            finding.evidence,
        )

    def on_decision(self, session: Session, step: Step | None, decision: Decision) -> None:
        st = self._state(session)
        kind = decision.kind.value
        self._counts.decision(kind)
        if kind not in A.REPORTED_DECISIONS:
            return
        if step is None:
            self._event(
                st.span,
                st.deferred,
                A.EVENT_DECISION,
                self._decision_attrs(decision),
                None,
                A.DECISION_MESSAGE,
                decision.message,
            )
            return
        if step.index >= session.n_steps:  # before_tool: the call is not accepted (yet)
            if st.pre_step is not step:
                st.pre_step, st.pre = step, []
            st.pre.append((decision, time.time_ns()))
            if decision.blocks:
                self._blocked(st, session, step)
            return
        rec = self._tool_for(st, session, step)
        self._event(
            rec.span,
            rec.deferred,
            A.EVENT_DECISION,
            self._decision_attrs(decision),
            self._event_time(rec, step),
            A.DECISION_MESSAGE,
            decision.message,
        )

    def on_session_end(self, session: Session, summary: SessionSummary) -> None:
        with self._states_lock:
            st = self._states.pop(id(session), None)
        if st is None or st.ended:
            return
        self._close(st, summary, evicted=False)

    def shutdown(self) -> None:
        with self._states_lock:
            states = list(self._states.values())
            self._states.clear()
        for st in states:  # sessions nobody ended: close their spans so they are not lost
            self._close(st, st.session.summary(), evicted=True)
        if self._content is not None:
            self._content.shutdown()
        from .export import shutdown_provider

        for provider in self._owned:
            try:
                shutdown_provider(provider)
            except Exception as exc:
                self.errors.record("OTelSink.shutdown", exc)

    def force_flush(self, timeout_s: float = 10.0) -> bool:
        """Hand every finished span to the exporters (content worker first, then owned providers)."""
        ok = self._content.flush(timeout_s) if self._content is not None else True
        for provider in self._owned:
            flush = getattr(provider, "force_flush", None)
            if flush is not None:
                ok = bool(flush(int(timeout_s * 1000))) and ok
        return ok

    # ------------------------------------------------------------------ spans

    def _state(self, session: Session) -> _SessionState:
        st = self._states.get(id(session))
        if st is not None and st.session is session:
            return st
        return self._start_session(session)

    def _start_session(self, session: Session) -> _SessionState:
        # The caller's current span (if any) becomes the parent; nothing is attached here.
        parent = otel_context.get_current()
        attrs: dict[str, Any] = {
            A.GEN_AI_OPERATION_NAME: A.OP_INVOKE_AGENT,
            A.GEN_AI_CONVERSATION_ID: session.id,
            A.PLAN: session.pipeline.plan.name,
        }
        rules_version = getattr(session.pipeline.rules, "name", None)
        if isinstance(rules_version, str):
            attrs[A.RULES] = rules_version
        if self.agent_name:
            attrs[A.GEN_AI_AGENT_NAME] = self.agent_name
        meta = session.metadata
        for key, attr in (
            (A.GEN_AI_AGENT_NAME, A.GEN_AI_AGENT_NAME),
            ("agent_name", A.GEN_AI_AGENT_NAME),
            ("provider", A.GEN_AI_PROVIDER_NAME),
            ("model", A.GEN_AI_REQUEST_MODEL),
            ("agent_id", A.GEN_AI_AGENT_ID),
        ):
            value = meta.get(key)
            if isinstance(value, str) and value:
                attrs[attr] = value
        span = self._tracer.start_span(
            self._session_span_name,
            context=parent,
            kind=_INTERNAL,
            attributes=attrs,
            start_time=_ns(session.started_at),
        )
        st = _SessionState(session, span, trace.set_span_in_context(span, parent))
        errors = session.pipeline.errors
        evicted: list[_SessionState] = []
        self._counts.watch_errors(errors)
        with self._states_lock:
            old = self._states.pop(id(session), None)
            if old is not None:
                evicted.append(old)  # an ended session whose id() was reused
            self._states[id(session)] = st
            while len(self._states) > self._max_sessions:
                evicted.append(self._states.popitem(last=False)[1])
        for old in evicted:
            self._close(old, old.session.summary(), evicted=True)
        return st

    def _tool_attrs(self, st: _SessionState, session: Session, step: Step) -> dict[str, Any]:
        ev = step.event
        roles = step.classification.roles
        letters = self._letters.get(roles)
        if letters is None:
            letters = self._letters[roles] = "".join(LETTER_OF.get(r, "?") for r in roles)
        attrs: dict[str, Any] = {
            A.GEN_AI_OPERATION_NAME: A.OP_EXECUTE_TOOL,
            A.GEN_AI_TOOL_NAME: ev.tool,
            A.GEN_AI_CONVERSATION_ID: session.id,
            A.STEP_INDEX: step.index,
            A.PHASE: letters,
        }
        if ev.call_id is not None:
            attrs[A.GEN_AI_TOOL_CALL_ID] = ev.call_id
        action = step.action
        action_name = ""
        if action is not None:
            kind = getattr(action, "type", None)
            action_name = self._action_names.get(kind, "")
            if not action_name and kind is not None:
                action_name = self._action_names[kind] = str(getattr(kind, "value", kind))
            if action_name:
                attrs[A.ACTION_TYPE] = action_name
        scores = session.scores()
        if scores is not None:
            attrs[A.PPC] = scores.PPC
            attrs[A.POC] = scores.POC
            attrs[A.PPF] = scores.PPF
            attrs[A.PC] = scores.PC
        lang = session.langutory
        if lang.length != st.tail_len:
            st.tail_len, st.tail = lang.length, lang.tail()
        if st.tail:
            attrs[A.LANGUTORY_TAIL] = st.tail
        return attrs

    def _tool_name(self, tool: str) -> str:
        name = self._tool_span_names.get(tool)
        if name is None:
            name = f"{A.SPAN_EXECUTE_TOOL} {tool}" if tool else A.SPAN_EXECUTE_TOOL
            if len(self._tool_span_names) < 4096:
                self._tool_span_names[tool] = name
        return name

    def _open_tool(self, st: _SessionState, session: Session, step: Step, *, live: bool) -> _ToolSpan:
        ev = step.event
        attrs = self._tool_attrs(st, session, step)
        key = (attrs[A.PHASE], attrs.get(A.ACTION_TYPE, ""))
        self._counts.tool_call(key)
        span = self._tracer.start_span(
            self._tool_name(ev.tool),
            context=st.ctx,
            kind=_INTERNAL,
            attributes=attrs,
            start_time=_ns(ev.start_time),
        )
        rec = _ToolSpan(span, live)
        tools = st.tools
        if len(tools) >= MAX_OPEN_TOOLS:  # calls that never finished: close the oldest unfinished
            old = tools.pop(next(iter(tools)))
            self._end(old.span, old.deferred, None, time.time_ns())
        tools[step.index] = rec
        if st.pre and st.pre_step is step:  # decisions made while the call was being gated
            for decision, ts in st.pre:
                self._event(
                    span,
                    rec.deferred,
                    A.EVENT_DECISION,
                    self._decision_attrs(decision),
                    ts,
                    A.DECISION_MESSAGE,
                    decision.message,
                )
            st.pre_step, st.pre = None, []
        return rec

    def _tool_for(self, st: _SessionState, session: Session, step: Step) -> _ToolSpan:
        rec = st.tools.get(step.index)
        if rec is None:
            rec = self._open_tool(st, session, step, live=False)
        return rec

    def _blocked(self, st: _SessionState, session: Session, step: Step) -> None:
        """A call a policy denied/stopped: a short span of its own, so the block is visible in the trace."""
        ev = step.event
        attrs = self._tool_attrs(st, session, step)
        attrs[A.BLOCKED] = True
        attrs[A.ERROR_TYPE] = A.ERROR_BLOCKED
        span = self._tracer.start_span(
            self._tool_name(ev.tool),
            context=st.ctx,
            kind=_INTERNAL,
            attributes=attrs,
            start_time=_ns(ev.start_time),
        )
        span.set_status(Status(_ERROR, "blocked by planguard"))
        deferred: list[_Deferred] = []
        for decision, ts in st.pre:
            self._event(
                span,
                deferred,
                A.EVENT_DECISION,
                self._decision_attrs(decision),
                ts,
                A.DECISION_MESSAGE,
                decision.message,
            )
        st.pre_step, st.pre = None, []
        self._end(span, deferred, ev, time.time_ns())

    def _close(self, st: _SessionState, summary: SessionSummary, *, evicted: bool) -> None:
        st.ended = True
        now = time.time_ns()
        for rec in list(st.tools.values()):
            self._end(rec.span, rec.deferred, None, now)
        st.tools.clear()
        span = st.span
        attrs: dict[str, Any] = {
            A.SESSION_STEPS: summary.n_steps,
            A.SESSION_MODEL_CALLS: summary.n_model_calls,
            A.LANGUTORY: summary.letters[-A.MAX_LETTERS :],
        }
        if summary.finding_counts:
            attrs[A.SESSION_FINDINGS] = sorted(summary.finding_counts)
        if summary.decision_counts:
            attrs[A.SESSION_DECISIONS] = sorted(summary.decision_counts)
        primary = summary.scores.get(st.session.pipeline.plan.name)
        if primary is not None:
            attrs[A.PPC] = primary.PPC
            attrs[A.POC] = primary.POC
            attrs[A.PPF] = primary.PPF
            attrs[A.PC] = primary.PC
            comp = st.session.primary_compliance
            if comp is not None:
                attrs[A.SESSION_MISSING] = list(comp.missing())
            self._metrics.record_pc(primary.PC, st.session.pipeline.plan.name)
        if evicted:
            attrs[A.SESSION_EVICTED] = True
        span.set_attributes(attrs)
        self._end(span, st.deferred, None, time.time_ns())

    def _end(
        self, span: Span, deferred: list[_Deferred], event: ToolEvent | None, end_ns: int | None
    ) -> None:
        if self._content is None:
            span.end(end_ns)
            return
        job = _Job(
            span,
            deferred,
            event.arguments if event is not None else None,
            event.result if event is not None else None,
            end_ns,
        )
        if not self._content.submit(job):  # queue full: the span goes out now, without its content
            for name, attrs, ts, _key, _content in deferred:
                span.add_event(name, attrs, ts)
            span.end(end_ns)

    def _event(
        self,
        span: Span,
        deferred: list[_Deferred],
        name: str,
        attrs: dict[str, Any],
        ts: int | None,
        content_key: str,
        content: Any,
    ) -> None:
        if self._content is not None:
            deferred.append((name, attrs, ts if ts is not None else time.time_ns(), content_key, content))
        else:
            span.add_event(name, attrs, ts)

    def _effect(self, step: Step) -> str | None:
        """The effect tracker's label for the step (``SURVIVED``, ``REVERTED``, …), when there is one."""
        if self._step_has_effect is None:  # whether the Step type carries an ``effect`` (checked once)
            self._step_has_effect = hasattr(type(step), "effect")
        if not self._step_has_effect:
            return None
        effect = getattr(step, "effect", None)
        if effect is None:
            return None
        name = self._action_names.get(effect)
        if name is None:
            name = self._action_names[effect] = str(getattr(effect, "value", effect))
        return name

    @staticmethod
    def _event_time(rec: _ToolSpan, step: Step) -> int | None:
        # Replayed calls: stamp events at the call's own end, inside the span, not at replay time.
        return None if rec.live else _ns(step.event.end_time)

    @staticmethod
    def _decision_attrs(decision: Decision) -> dict[str, Any]:
        attrs: dict[str, Any] = {A.DECISION_KIND: decision.kind.value, A.DECISION_POLICY: decision.policy}
        if decision.finding is not None:
            attrs[A.DECISION_FINDING] = decision.finding.detector
        return attrs

    # ------------------------------------------------------------------ content worker

    def _finish_jobs(self, jobs: list[_Job]) -> None:
        mode, limit, redactor = self.capture, self._max_content, self._redactor
        for job in jobs:
            try:
                span = job.span
                for name, attrs, ts, key, content in job.deferred:
                    if key is not None and content:
                        attrs = {**attrs, key: render_content(content, limit, redactor)}
                    span.add_event(name, attrs, ts)
                if job.arguments is not None or job.result is not None:
                    content = {}
                    if job.arguments is not None:
                        content[A.GEN_AI_TOOL_CALL_ARGUMENTS] = render_content(job.arguments, limit, redactor)
                    if job.result is not None:
                        content[A.GEN_AI_TOOL_CALL_RESULT] = render_content(job.result, limit, redactor)
                    if mode.on_span:
                        span.set_attributes(content)
                    if mode.as_event:
                        span.add_event(A.EVENT_TOOL_CONTENT, content, job.end_ns)
            except Exception as exc:
                self.errors.record("OTelSink.content", exc)
            job.span.end(job.end_ns)
