"""The OpenTelemetry sink: one ``invoke_agent`` span per session, one ``execute_tool`` span per tool call.

Spans follow the GenAI semantic conventions. A tool call's span starts when the call is accepted (at the
call's own start time), with the attributes the call has then (phase, action, compliance so far, Langutory
tail); findings and decisions about it become its events as they come, and its outcome is set when it ends.
Counts are plain integers in each session's tally, read by observable instruments at collection time.

Context: the session span is a child of whatever span is current when the session starts (the caller's
request span, say), and every tool span is a child of the session span. Parents are passed explicitly
as ``context=``; nothing is attached to the thread's context, so sessions served by the same threads
never see each other's spans.

Untraced sessions: until the application configures OpenTelemetry, the global API's tracer records nothing.
A session that starts then is untraced (its span is the API's no-op one): its hooks only keep the counts —
metrics read them whenever a meter provider appears — and build no attributes, events or spans. Sessions that
start after the app has configured the SDK are traced; a session that started before stays untraced (its
tool spans would have no session span to belong to).

With content capture on, arguments, results, evidence and messages are rendered and redacted on a worker
thread: a tool span's events then wait on the call until it ends, and the worker adds them and the content,
then ends the span.
"""

from __future__ import annotations

import atexit
import time
import weakref
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry import metrics as otel_metrics
from opentelemetry import trace
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import Span, Status, StatusCode, TracerProvider

from ..._version import __version__
from ...actions.types import ActionType, label_of
from ...errors import ErrorCounter
from .. import Sink
from ..capture import CaptureMode, capture_mode_from_env
from ..drops import DropCounter
from ..redact import Redactor, redact_value, render_content
from ..worker import EXIT_FLUSH_TIMEOUT_S, BackgroundWorker
from . import attributes as A
from .env import shutdown_providers
from .evaluations import EvaluationEvents, finding_evaluation, score_evaluation
from .instruments import Counts, count_calls, instruments_for
from .nesting import current_parent, is_tool_span_for
from .providers import app_logger_provider

if TYPE_CHECKING:
    from opentelemetry._logs import LoggerProvider

    from ...decisions import Decision
    from ...events import ToolEvent
    from ...findings import Finding
    from ...metrics import Scores
    from ...session import Session, SessionSummary
    from ...step import Step

__all__ = ["OTelSink", "session_span_context"]

_FAILED = Status(StatusCode.ERROR)
_BLOCKED = Status(StatusCode.ERROR, "blocked by planguard")
#: Live calls at most waiting for a framework's tool span (``tool_spans``); past this the oldest is forgotten.
MAX_SCOPED_CALLS = 10_000
#: Open tool calls per session (mirrors the session's own bound on pending calls).
MAX_OPEN_TOOLS = 1024
#: Session-span events a session holds for the worker (a reminder every few model calls, with no cap per
#: session, adds one without end); past this the oldest goes, as the SDK drops a span's oldest events.
MAX_DEFERRED_EVENTS = 1024
#: Langutory runs in ``planguard.langutory.tail`` (``Langutory.tail()``'s default).
TAIL_RUNS = 5


def _ns(seconds: float | None) -> int | None:
    return None if seconds is None else int(seconds * 1e9)


#: A span event waiting for the worker (content capture) or for its call's span to open: (name,
#: attributes, timestamp ns or None (now), content key or None, content or None).
_Deferred = tuple[str, dict[str, Any], int | None, str | None, Any]


class _ToolCall:
    """One open tool call: the span planguard started for it, or the framework's tool span it enriches
    (``host``), or — while a framework may still open one (``tool_spans`` adoption) — neither yet."""

    __slots__ = ("attrs", "events", "host", "live", "name", "outcome", "span", "start_ns")

    def __init__(self, name: str, attrs: dict[str, Any], start_ns: int | None, live: bool) -> None:
        self.name = name
        self.attrs = attrs  # every attribute of the call: those it started with, then its outcome's
        # The attributes known only when the call ends (error, effect, findings, todo list): the span has the
        # others from its start, so only these are set on it then (the SDK cleans each value it is given).
        self.outcome: dict[str, Any] = {}
        self.start_ns = start_ns
        self.live = live  # recorded while the call ran (False: replayed after the fact)
        self.span: Span | None = None
        self.host: Span | None = None
        # Events held for the worker (content capture), or until the call's span exists.
        self.events: list[_Deferred] = []


#: Every open call of an untraced session: it is only counted (at its start, or at its end when reported
#: finished), and nothing is ever recorded on it (the hooks of an untraced session return before they would).
_UNTRACED_CALL = _ToolCall("", {}, None, live=True)


class _SessionState:
    __slots__ = (
        "__weakref__",
        "agent_name",
        "calls",
        "conversation_id",
        "ctx",
        "deferred",
        "ended",
        "gate_decisions",
        "gated",
        "live_seen",
        "recorded_end",
        "session",
        "span",
        "tally",
        "untraced",
    )

    def __init__(
        self, session: Session, span: Span, ctx: otel_context.Context, counts: Counts, untraced: bool
    ) -> None:
        self.session = session
        self.conversation_id = session.id  # as the spans carry it: redacted (see OTelSink.new_state)
        self.agent_name: str | None = None  # gen_ai.agent.name, the label of the session metrics
        self.tally = counts.tally(self)  # this session's metric counts (see instruments.Counts)
        self.span = span
        self.ctx = ctx
        # The tracer started no span for the session: it is a no-op (OpenTelemetry not configured), and so
        # are the session's tool spans. Only the counts are kept (metrics are read from them later).
        self.untraced = untraced
        self.calls: dict[int, _ToolCall] = {}  # open calls by step index
        # Decisions made while a call is gated, before it is accepted and its span exists.
        self.gated: Step | None = None
        # Decisions of the gated call, in order; most sessions never have one.
        self.gate_decisions: tuple[tuple[Decision, int], ...] = ()
        self.deferred: list[_Deferred] | tuple[()] = ()  # session-span events waiting for the worker
        self.ended = False
        # Replayed sessions (only calls reported after the fact) end at their last recorded call, and their
        # session-span events are stamped then, not at replay time.
        self.recorded_end = 0
        self.live_seen = False

    def now_ns(self) -> int:
        """Now, on the session's clock: a replayed session's last recorded time."""
        return self.recorded_end if self.recorded_end and not self.live_seen else time.time_ns()


#: Work for the worker: render the content, add the events, set the status and end the span. (span, events,
#: status, arguments, result, end ns); the session span's job has no arguments or result.
_Job = tuple[Span, Sequence[_Deferred], Status | None, Any, Any, int]


class OTelSink(Sink):
    """Spans, span events and metrics for every session of a pipeline.

    ``tracer_provider``/``meter_provider`` default to the global ones, which are no-ops until the
    application configures OpenTelemetry (sessions started before that are untraced, see the module
    docstring); planguard never installs global providers itself.
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
        defer_spans: bool = False,
        shutdown_timeout_s: float = 2.0,
        provider_name: str | None = None,
        tool_spans: str = "auto",
        logger_provider: LoggerProvider | None = None,
        recorded: bool = False,
    ) -> None:
        tp = tracer_provider if tracer_provider is not None else trace.get_tracer_provider()
        mp = meter_provider if meter_provider is not None else otel_metrics.get_meter_provider()
        self._tracer = tp.get_tracer(A.TRACER_NAME, __version__)
        self.agent_name = agent_name
        self.provider_name = provider_name
        # Every session is a recording being replayed (``planguard replay --export``): its spans, the
        # refused calls' included, start and end at the recorded times, never at replay time.
        self.recorded = recorded
        if tool_spans not in ("auto", "own", "enrich"):
            raise ValueError(f"tool_spans: expected auto, own or enrich, got {tool_spans!r}")
        self.tool_spans = tool_spans
        self._enrich = tool_spans != "own"
        # Tool spans a framework starts inside a tool_scope are handed to adopt_tool_span by the integration,
        # once it has said it runs its calls in scopes (see watch_tool_spans).
        self._adopting = False
        # Live calls that may still get a framework's tool span: id(event) -> (session state, step index).
        self._scoped: dict[int, tuple[_SessionState, int]] = {}
        self.capture = capture if capture is not None else capture_mode_from_env()
        self._capture_on = self.capture.enabled
        self._max_content = max_content_chars
        self._redactor = redactor
        # Ids and names (call ids, session ids, tool names: any may hold a secret) are redacted as the span
        # is recorded, on the agent's thread, by the built-in patterns only: an id is short, and one
        # holding no needle (nearly all) costs a substring scan (~1 µs).
        self._redact_id = Redactor()
        self.drops = drops if drops is not None else DropCounter()
        self.errors = errors if errors is not None else ErrorCounter()
        self._owned = list(owned)  # providers built for this sink: flushed and shut down with it
        self._shutdown_timeout = shutdown_timeout_s  # for the worker and the owned providers together
        self._session_span_name = f"{A.SPAN_INVOKE_AGENT} {agent_name}" if agent_name else A.SPAN_INVOKE_AGENT
        # The states of sessions not ended yet, for shutdown to close their spans. Weak: a state lives as
        # long as its session, and one dropped unended takes its open spans with it.
        self._open: weakref.WeakSet[_SessionState] = weakref.WeakSet()
        # Tool spans are finished on this worker when content is captured (rendering and redaction stay off
        # the agent's thread) or when asked to (``defer_spans``: their events, status and end).
        self._max_queue = max_queue_size
        self._worker = (
            BackgroundWorker(
                "otel-content" if self._capture_on else "otel-spans",
                self._finish_jobs,
                drops=self.drops,
                drop_reason="content_queue_full",
                max_queue=max_queue_size,
                max_batch=256,
                interval_s=0.05,
                errors=self.errors,
                # Content is waited for by nobody, but its tests and users expect it promptly; deferred
                # spans wake the worker once a batch is worth it (waking it is what costs).
                wake_at=1 if self._capture_on else 256,
            )
            if self._capture_on or defer_spans
            else None
        )
        if self._worker is not None:
            # The worker ends spans of the provider passed in, which exists already, so its own exit hook
            # (the SDK's shutdown) was registered before this one and runs after it: spans still queued
            # here are ended and handed over while the provider can take them.
            atexit.register(_flush_at_exit, weakref.ref(self))
        # gen_ai.evaluation.result log records: to the logger provider passed in, else the application's
        # once it has set one (none: the span events of the same name only).
        if logger_provider is None:
            logger_provider = app_logger_provider()
        self._evaluations = EvaluationEvents(logger_provider) if logger_provider is not None else None
        # Counts, read by the observable instruments at collection time.
        self._counts = Counts(self.drops, self.errors)
        self._metrics = instruments_for(mp)
        self._metrics.attach(self._counts)

    # ------------------------------------------------------------------ session hooks

    def new_state(self, session: Session) -> _SessionState:
        # The caller's current span (if any; OpenInference's LangChain run span first) becomes the parent;
        # nothing is attached here.
        parent = current_parent() if self._enrich else otel_context.get_current()
        attrs: dict[str, Any] = {
            A.GEN_AI_OPERATION_NAME: A.OP_INVOKE_AGENT,
            A.GEN_AI_PROVIDER_NAME: A.PROVIDER_UNKNOWN,
            A.GEN_AI_CONVERSATION_ID: self._redact_id(session.id),
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
        if self.provider_name:
            attrs[A.GEN_AI_PROVIDER_NAME] = self.provider_name
        elif attrs[A.GEN_AI_PROVIDER_NAME] == A.PROVIDER_UNKNOWN and A.GEN_AI_REQUEST_MODEL in attrs:
            # a recording that names its model only (every replayed format but planguard's own store)
            attrs[A.GEN_AI_PROVIDER_NAME] = (
                A.provider_for_model(attrs[A.GEN_AI_REQUEST_MODEL]) or A.PROVIDER_UNKNOWN
            )
        span = self._tracer.start_span(
            self._session_span_name,
            context=parent,
            attributes=attrs,
            start_time=_ns(session.started_at),
        )
        # A tracer that records nothing hands back a span with its parent's context (the API's no-op
        # tracer: what the global API gives until the app configures OpenTelemetry); a real one always
        # starts a new span (context), sampled or not.
        untraced = (
            not span.is_recording()
            and span.get_span_context() == trace.get_current_span(parent).get_span_context()
        )
        st = _SessionState(session, span, trace.set_span_in_context(span, parent), self._counts, untraced)
        if self.recorded:
            st.recorded_end = _ns(session.started_at) or 0
        st.conversation_id = attrs[A.GEN_AI_CONVERSATION_ID]
        st.agent_name = attrs.get(A.GEN_AI_AGENT_NAME)
        self._counts.watch_errors(session.pipeline.errors)
        self._open.add(st)
        return st

    def on_tool_start(self, session: Session, step: Step, state: _SessionState) -> None:
        self._open_call(state, session, step, live=True)

    def on_tool_end(self, session: Session, step: Step, state: _SessionState) -> None:
        st = state
        ev = step.event
        if self._scoped:
            self._scoped.pop(id(ev), None)
        error = _error_of(ev)
        call = st.calls.pop(step.index, None)
        if call is None:  # offline observe(): the call is reported once, finished
            call = self._open_call(st, session, step, live=False)
            st.calls.pop(step.index, None)
        if ev.duration is not None:
            self._counts.add_duration(ev.duration, _label(_action_type(step)), error)
        if st.untraced:  # only counted
            return
        outcome = call.outcome
        status = None
        if error:
            outcome[A.ERROR_TYPE] = error
            if error == A.ERROR_EXIT_CODE:
                outcome[A.EXIT_CODE] = ev.exit_code or 0
            status = _FAILED
        effect = getattr(step, "effect", None)  # the effect tracker's label (SURVIVED, REVERTED, …), if any
        outcome[A.EFFECT] = _label(effect) if effect is not None else "FAILED" if error else "SUCCEEDED"
        if step.findings:
            outcome[A.FINDINGS_COUNT] = len(step.findings)
        if step.action is not None and step.action.type is ActionType.PLAN:  # a todo call: the list now
            self._todo_attrs(session, outcome, at_end=False)
        call.attrs.update(outcome)
        # Live calls end now, after the findings and decisions about them; replayed ones at the recorded
        # end, where their events were stamped.
        end_ns = _stamp(call, step)
        if not call.live and end_ns is not None and end_ns > st.recorded_end:
            st.recorded_end = end_ns
        if call.host is not None:
            self._enrich_host(st, call, status)
            return
        self._end_call(st, call, status, ev, end_ns)

    def on_finding(self, session: Session, step: Step | None, finding: Finding, state: _SessionState) -> None:
        st = state
        findings = st.tally.findings
        findings[finding.detector] = findings.get(finding.detector, 0) + 1
        if st.untraced:
            return
        attrs = {
            A.FINDING_DETECTOR: finding.detector,
            A.FINDING_FIRST_STEP: finding.first_step,
            A.FINDING_LAST_STEP: finding.last_step,
            A.FINDING_AT_END: finding.at_end,
        }
        evaluation = finding_evaluation(finding)
        if step is None:
            self._session_event(st, A.EVENT_FINDING, attrs, A.FINDING_EVIDENCE, finding.evidence)
            self._session_event(st, A.EVENT_EVALUATION_RESULT, evaluation, A.FINDING_EVIDENCE, None)
            self._evaluation_event(st.span, evaluation, st.now_ns())
            return
        call = self._call_for(st, session, step)
        stamp = _stamp(call, step)
        self._call_event(call, A.EVENT_FINDING, attrs, stamp, A.FINDING_EVIDENCE, finding.evidence)
        self._call_event(call, A.EVENT_EVALUATION_RESULT, evaluation, stamp, None, None)
        # parented to the call's span (planguard's, or the framework's it enriches), else the session's
        self._evaluation_event(call.span or call.host or st.span, evaluation, stamp)

    def on_decision(
        self, session: Session, step: Step | None, decision: Decision, state: _SessionState
    ) -> None:
        st = state
        kind = decision.kind.value
        decisions = st.tally.decisions
        decisions[kind] = decisions.get(kind, 0) + 1
        if st.untraced or kind not in A.REPORTED_DECISIONS:
            return
        if step is None:
            self._session_event(
                st, A.EVENT_DECISION, _decision_attrs(decision), A.DECISION_MESSAGE, decision.message
            )
            return
        if step.index >= session.n_steps:  # before_tool: the call is not accepted (yet)
            if st.gated is not step:
                st.gated, st.gate_decisions = step, ()
            st.gate_decisions = (*st.gate_decisions, (decision, self._gate_ns(st, step.event)))
            if decision.blocks:  # a short span of its own, so the block is visible in the trace
                call = self._open_call(st, session, step, live=not self.recorded, blocked=True)
                st.calls.pop(step.index, None)
                end_ns = self._gate_ns(st, step.event, end=True)
                self._end_call(st, call, _BLOCKED, step.event, end_ns)
            return
        call = self._call_for(st, session, step)
        self._decision_event(call, decision, _stamp(call, step))

    def on_session_end(self, session: Session, summary: SessionSummary, state: _SessionState) -> None:
        self._open.discard(state)
        self._close(state, summary, evicted=False)

    def shutdown(self) -> None:
        for st in list(self._open):  # sessions nobody ended: close their spans so they are not lost
            self._open.discard(st)
            self._close(st, st.session.summary(), evicted=True)
        deadline = time.monotonic() + self._shutdown_timeout
        if self._worker is not None:
            self._worker.shutdown(self._shutdown_timeout)
        try:
            shutdown_providers(self._owned, deadline - time.monotonic())
        except Exception as exc:
            self.errors.record("OTelSink.shutdown", exc)

    def force_flush(self, timeout_s: float = 10.0) -> bool:
        """Hand every finished span to the exporters (the worker first, then owned providers)."""
        ok = self._worker.flush(timeout_s) if self._worker is not None else True
        for provider in self._owned:
            flush = getattr(provider, "force_flush", None)
            if flush is not None:
                ok = bool(flush(int(timeout_s * 1000))) and ok
        return ok

    # ------------------------------------------------------------------ framework tool spans

    @property
    def adopts_tool_spans(self) -> bool:
        """Tool spans a framework opens inside :meth:`Guard.tool_scope` can become the calls' spans
        (``tool_spans`` other than ``own``)."""
        return self._enrich

    def watch_tool_spans(self) -> None:
        """An integration runs its calls in tool scopes and hands over the tool spans its framework opens
        there: a live call's span then waits for the framework's. Nothing is added to any provider."""
        self._adopting = self._enrich

    def adopt_tool_span(self, event: ToolEvent, span: Span) -> None:
        """A framework started ``span`` for ``event``'s call inside :func:`~.nesting.tool_scope`: it becomes
        the call's span (planguard's attributes now, its events and outcome when the call ends)."""
        entry = self._scoped.pop(id(event), None)
        if entry is None:
            return
        st, index = entry
        call = st.calls.get(index)
        if call is None or call.span is not None or call.host is not None or st.ended:
            return
        try:
            span.set_attributes(call.attrs)
        except Exception as exc:
            self.errors.record("OTelSink.adopt_tool_span", exc)
            return
        call.host = span

    def _enrich_host(self, st: _SessionState, call: _ToolCall, status: Status | None) -> None:
        """Put a finished call's outcome and events on the framework's tool span while it is open; once the
        framework has ended it, on the session span, naming the call. Content is never added here (it is
        rendered and redacted on the worker, after the host span may have ended)."""
        host, attrs = call.host, call.attrs
        assert host is not None
        try:
            if host.is_recording():  # (it has the call's other attributes since the call started)
                host.set_attributes(call.outcome)
                _add_events(host, call.events)
                if status is not None:
                    host.set_status(status)
                return
            call_attrs = {k: attrs[k] for k in _CALL_KEYS if k in attrs}
            self._session_event(st, A.EVENT_TOOL_OUTCOME, call_attrs, A.DECISION_MESSAGE, None)
            ref: dict[str, Any] = {k: attrs[k] for k in (A.STEP_INDEX, A.GEN_AI_TOOL_CALL_ID) if k in attrs}
            for ev_name, ev_attrs, _ts, _key, _content in call.events:
                self._session_event(st, ev_name, {**ev_attrs, **ref}, A.DECISION_MESSAGE, None)
        except Exception as exc:
            self.errors.record("OTelSink.enrich", exc)

    # ------------------------------------------------------------------ spans

    def _open_call(
        self, st: _SessionState, session: Session, step: Step, *, live: bool, blocked: bool = False
    ) -> _ToolCall:
        """Count the call and open its span with the attributes it has now (later calls change the session's
        compliance and Langutory tail). Also how the sink opens calls reported only once finished
        (``live=False``: offline ``observe()``) and calls a gate refused (``blocked``)."""
        ev = step.event
        letter_of = session.pipeline.letter_of
        letters = "".join([letter_of.get(r, "?") for r in step.classification.roles])
        kind = _action_type(step)
        action_type = _label(kind)
        if not blocked:
            count_calls(st.tally.tool_calls, (letters, action_type))
        calls = st.calls
        if len(calls) >= MAX_OPEN_TOOLS and not blocked:  # calls that never finished: close the oldest
            oldest = calls.pop(next(iter(calls)))
            if oldest.host is None:
                self._end_call(st, oldest, None, None, time.time_ns())
        if st.untraced:  # no span of this session goes anywhere: the call is only counted
            calls[step.index] = _UNTRACED_CALL
            return _UNTRACED_CALL
        tool = self._redact_id(ev.tool) if ev.tool else ev.tool
        attrs: dict[str, Any] = {
            A.GEN_AI_OPERATION_NAME: A.OP_EXECUTE_TOOL,
            A.GEN_AI_TOOL_NAME: tool,
            A.GEN_AI_TOOL_TYPE: A.TOOL_TYPE_FUNCTION,
            A.GEN_AI_CONVERSATION_ID: st.conversation_id,
            A.STEP_INDEX: step.index,
            A.PHASE: letters,
        }
        if ev.call_id is not None:  # an id the model made up: redacted, as it may hold anything
            attrs[A.GEN_AI_TOOL_CALL_ID] = self._redact_id(ev.call_id)
        if kind is not None:
            attrs[A.ACTION_TYPE] = action_type
        scores = session.scores()
        if scores is not None:
            attrs.update(_score_attrs(scores))
        tail = session.langutory.tail(TAIL_RUNS, letter_of)
        if tail:
            attrs[A.LANGUTORY_TAIL] = tail
        if blocked:
            attrs[A.BLOCKED] = True
            attrs[A.ERROR_TYPE] = A.ERROR_BLOCKED
        if live:
            st.live_seen = True
        name = f"{A.SPAN_EXECUTE_TOOL} {tool}" if tool else A.SPAN_EXECUTE_TOOL
        call = _ToolCall(name, attrs, _ns(ev.start_time), live)
        calls[step.index] = call
        host = trace.get_current_span() if self._enrich and live and not blocked else None
        if host is not None and is_tool_span_for(host, ev, strict=self.tool_spans == "auto"):
            host.set_attributes(attrs)
            call.host = host
        elif host is not None and self._adopting:  # a framework may open the call's span: wait for it
            scoped = self._scoped
            if len(scoped) >= MAX_SCOPED_CALLS:  # calls whose end never came: forget the oldest
                del scoped[next(iter(scoped))]
            scoped[id(ev)] = (st, step.index)
        else:
            self._start_span(st, call)
        if st.gated is step:  # decisions made while the call was being gated
            for decision, ts in st.gate_decisions:
                self._decision_event(call, decision, ts)
            st.gated, st.gate_decisions = None, ()
        return call

    def _start_span(self, st: _SessionState, call: _ToolCall) -> None:
        call.span = self._tracer.start_span(
            call.name, context=st.ctx, attributes=call.attrs, start_time=call.start_ns
        )
        if self._worker is None:  # events held until the span existed (a framework's that never came)
            _add_events(call.span, call.events)
            call.events = []

    def _call_for(self, st: _SessionState, session: Session, step: Step) -> _ToolCall:
        call = st.calls.get(step.index)
        if call is None:  # offline: findings and decisions come before the call's end
            call = self._open_call(st, session, step, live=False)
        elif call.span is None and call.host is None:  # the call ran and no framework span came
            self._scoped.pop(id(step.event), None)
            self._start_span(st, call)
        return call

    def _call_event(
        self, call: _ToolCall, name: str, attrs: dict[str, Any], ts: int | None, key: str | None, content: Any
    ) -> None:
        """An event of the call's span: added now, or held (for the worker, or until the span opens)."""
        if call.span is not None and self._worker is None:
            call.span.add_event(name, attrs, ts)
        else:
            call.events.append((name, attrs, ts, key, content if self._capture_on else None))

    def _decision_event(self, call: _ToolCall, decision: Decision, ts: int | None) -> None:
        attrs = _decision_attrs(decision)
        self._call_event(call, A.EVENT_DECISION, attrs, ts, A.DECISION_MESSAGE, decision.message)

    def _end_call(
        self,
        st: _SessionState,
        call: _ToolCall,
        status: Status | None,
        event: ToolEvent | None,
        end_ns: int | None,
    ) -> None:
        """End the call's span (here, or on the worker when content is captured); ``event``: the call, for
        its content."""
        if st.untraced:
            return
        if call.span is None:
            self._start_span(st, call)  # with every attribute, the outcome's included
        elif call.outcome:
            call.span.set_attributes(call.outcome)
        span = call.span
        assert span is not None
        if self._worker is not None:
            arguments = result = None
            if self._capture_on and event is not None:
                arguments, result = event.arguments, event.result
            job = (span, call.events, status, arguments, result, end_ns or time.time_ns())
            if self._submit(job):
                return
            # queue full: the span goes out now, without its content
            _add_events(span, call.events)
        if status is not None:
            span.set_status(status)
        span.end(end_ns)

    def _todo_attrs(self, session: Session, attrs: dict[str, Any], *, at_end: bool) -> None:
        todo = session.facts("todo")
        if todo is None or not todo.active:
            return
        attrs[A.TODO_DONE] = todo.done
        attrs[A.TODO_TOTAL] = todo.total
        if at_end:
            attrs[A.TODO_UPDATES] = todo.updates
            attrs[A.TODO_CALLS_SINCE_UPDATE] = todo.calls_since_update(session.n_steps)
        current = todo.current
        if current is not None and self._capture_on:
            attrs[A.TODO_ACTIVE] = redact_value(current.text, self._redactor)

    def _close(self, st: _SessionState, summary: SessionSummary, *, evicted: bool) -> None:
        st.ended = True
        plan = st.session.pipeline.plan.name
        primary = summary.scores.get(plan)
        if primary is not None:
            self._metrics.record_pc(primary.PC, plan, st.agent_name)
        if st.untraced:
            return
        now = time.time_ns()
        for call in st.calls.values():
            if call.host is None:  # (the framework's span: it ends it)
                self._end_call(st, call, None, None, now)
        st.calls.clear()
        if self._scoped:  # calls of this session still waiting for a framework's span
            for key, (owner, _index) in list(self._scoped.items()):
                if owner is st:
                    self._scoped.pop(key, None)
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
        if summary.unclassified:  # tool names only: never arguments
            attrs[A.SESSION_UNCLASSIFIED] = summary.unclassified
            attrs[A.SESSION_UNKNOWN_TOOLS] = sorted(self._redact_id(t) for t in summary.unknown_tools)
        if primary is not None:
            attrs.update(_score_attrs(primary))
            comp = st.session.primary_compliance
            missing = list(comp.missing()) if comp is not None else []
            if comp is not None:
                attrs[A.SESSION_MISSING] = missing
            for name in ("PC", "PPC", "POC", "PPF"):
                evaluation = score_evaluation(name, getattr(primary, name), plan, missing)
                self._session_event(st, A.EVENT_EVALUATION_RESULT, evaluation, "", None, bounded=False)
                self._evaluation_event(span, evaluation, st.now_ns())
        if evicted:
            attrs[A.SESSION_EVICTED] = True
        if summary.todo is not None:
            self._todo_attrs(st.session, attrs, at_end=True)
        span.set_attributes(attrs)
        end_ns = st.now_ns()
        if not self._submit((span, st.deferred, None, None, None, end_ns)):
            _add_events(span, st.deferred)  # no worker, or its queue is full: the span goes out now
            span.end(end_ns)

    def _session_event(
        self,
        st: _SessionState,
        name: str,
        attrs: dict[str, Any],
        content_key: str,
        content: Any,
        bounded: bool = True,
    ) -> None:
        """``bounded=False``: an event that must not be dropped to make room (the session's few final
        evaluation results), added past ``MAX_DEFERRED_EVENTS``."""
        if self._worker is not None:
            deferred = st.deferred
            if not isinstance(deferred, list):
                deferred = st.deferred = []
            if bounded and len(deferred) >= MAX_DEFERRED_EVENTS:
                del deferred[0]
                self.drops.add("session_events_full")
            deferred.append((name, attrs, st.now_ns(), content_key, content if self._capture_on else None))
        else:
            st.span.add_event(name, attrs, st.now_ns())

    def _gate_ns(self, st: _SessionState, ev: ToolEvent, *, end: bool = False) -> int:
        """When a call was gated: now, or for a recording the call's recorded time (its end, when ``end``
        and recorded; else its start; else the session's last recorded time), which moves the session's
        recorded end along."""
        if not self.recorded:
            return time.time_ns()
        recorded = _ns(ev.end_time if end and ev.end_time is not None else ev.start_time)
        if recorded is None:
            return st.now_ns()
        st.recorded_end = max(st.recorded_end, recorded)
        return recorded

    def _evaluation_event(self, span: Span, attrs: dict[str, Any], ts: int | None) -> None:
        if self._evaluations is None:
            return
        try:
            self._evaluations.emit(span, attrs, ts)
        except Exception as exc:  # the span events still carry it
            self.errors.record("OTelSink.evaluation", exc)

    def _submit(self, job: _Job) -> bool:
        worker = self._worker
        if worker is None:
            return False
        # Without content nothing is lost when the queue is full (the span is built here instead), so
        # that is not counted as a drop; with content, the content is what gets dropped.
        if not self._capture_on and worker.pending >= self._max_queue:
            return False
        return worker.submit(job)

    # ------------------------------------------------------------------ worker (content, deferred spans)

    def _finish_jobs(self, jobs: list[_Job]) -> None:
        for job in jobs:
            try:
                self._finish_job(job)
            except Exception as exc:
                self.errors.record("OTelSink.worker", exc)

    def _finish_job(self, job: _Job) -> None:
        span, events, status, arguments, result, end_ns = job
        mode, limit, redactor = self.capture, self._max_content, self._redactor
        content: dict[str, Any] = {}
        try:
            if arguments is not None:
                content[A.GEN_AI_TOOL_CALL_ARGUMENTS] = render_content(arguments, limit, redactor)
            if result is not None:
                content[A.GEN_AI_TOOL_CALL_RESULT] = render_content(result, limit, redactor)
        except Exception as exc:  # the span still goes out, without its content
            self.errors.record("OTelSink.content", exc)
            content = {}
        try:
            if content and mode.on_span:
                span.set_attributes(content)
            for name, ev_attrs, ts, key, value in events:
                if key is not None and value:
                    ev_attrs = {**ev_attrs, key: render_content(value, limit, redactor)}
                span.add_event(name, ev_attrs, ts)
            if content and mode.as_event:
                span.add_event(A.EVENT_TOOL_CONTENT, content, end_ns)
            if status is not None:
                span.set_status(status)
        finally:
            span.end(end_ns)


def session_span_context(session: Session) -> trace.SpanContext | None:
    """The context of ``session``'s recorded ``invoke_agent`` span (the first OpenTelemetry sink's), or
    ``None`` when no sink of its pipeline records one (telemetry off, or OpenTelemetry not configured)."""
    for sink, state in session.sink_states:
        if isinstance(sink, OTelSink) and isinstance(state, _SessionState) and not state.untraced:
            ctx = state.span.get_span_context()
            return ctx if ctx.is_valid else None
    return None


def _flush_at_exit(ref: weakref.ReferenceType[OTelSink]) -> None:
    sink = ref()
    if sink is not None and sink._worker is not None:
        sink._worker.flush(EXIT_FLUSH_TIMEOUT_S)


def _stamp(call: _ToolCall, step: Step) -> int | None:
    # Live calls: now. Replayed calls: the call's own end (else its start), inside the span, not replay time.
    if call.live:
        return time.time_ns()
    ev = step.event
    return _ns(ev.end_time if ev.end_time is not None else ev.start_time)


def _action_type(step: Step) -> Any:
    """The canonical action's type (an enum member, or a custom classifier's value), or None."""
    action = step.action
    return None if action is None else getattr(action, "type", None)


def _label(member: Any) -> str:
    """An enum member's value as text (action types, effects); "" for none."""
    return "" if member is None else label_of(member)


def _add_events(span: Span, deferred: Sequence[_Deferred]) -> None:
    for name, attrs, ts, _key, _content in deferred:
        span.add_event(name, attrs, ts)


def _decision_attrs(decision: Decision) -> dict[str, Any]:
    attrs: dict[str, Any] = {A.DECISION_KIND: str(decision.kind), A.DECISION_POLICY: decision.policy}
    if decision.finding is not None:
        attrs[A.DECISION_FINDING] = decision.finding.detector
    return attrs


#: A call's keys repeated on the session-span events of a call whose framework span had ended.
_CALL_KEYS = (
    A.GEN_AI_TOOL_NAME,
    A.GEN_AI_TOOL_CALL_ID,
    A.STEP_INDEX,
    A.PHASE,
    A.ACTION_TYPE,
    A.EFFECT,
    A.ERROR_TYPE,
    A.EXIT_CODE,
    A.FINDINGS_COUNT,
)


def _error_of(ev: ToolEvent) -> str:
    if ev.is_error:
        return A.ERROR_TOOL
    if ev.exit_code is not None and ev.exit_code != 0:
        return A.ERROR_EXIT_CODE
    return ""


def _score_attrs(scores: Scores) -> dict[str, float]:
    return {A.PPC: scores.PPC, A.POC: scores.POC, A.PPF: scores.PPF, A.PC: scores.PC}
