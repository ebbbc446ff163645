"""The OpenTelemetry sink: one ``invoke_agent`` span per session, one ``execute_tool`` span per tool call.

Spans follow the GenAI semantic conventions and carry planguard's view of each call (phase, action,
compliance so far, Langutory tail); findings and decisions become span events; counts become metrics.

Context: the session span is a child of whatever span is current when the session starts (the caller's
request span, say), and every tool span is a child of the session span. Parents are passed explicitly
as ``context=``; nothing is attached to the thread's context, so sessions served by the same threads
never see each other's spans.

Hot path: a tool call's span is recorded, not built, while the call runs — its attributes (from
precomputed keys and per-session caches) when the call is accepted, its findings and decisions (with their
timestamps) as they come — and created when the call ends, with its recorded start time, in one
``start_span`` carrying every attribute, then its events, status and end. That is the least the SDK can be
asked to do for the span (no ``set_attribute`` calls, no span lock taken again); exporters see exactly
what a span opened at the call's start would have shown them, since only ended spans are exported (span
kind: the API's default, INTERNAL). Counts are plain integers in each session's tally, read by observable
instruments at collection time; nothing is serialised and planguard takes no lock per call (the SDK's
span and queue locks remain).

Untraced sessions: until the application configures OpenTelemetry, the global API's tracer records nothing.
A session that starts then is untraced (its span is the API's no-op one): its hooks only keep the counts —
metrics read them whenever a meter provider appears — and build no attributes, events or spans. Sessions that
start after the app has configured the SDK are traced; a session that started before stays untraced (its
tool spans would have no session span to belong to).

Spans are built on a worker thread instead when content capture is on (content is rendered and redacted
there) or with ``defer_spans=True``: the agent's thread then pays only for the record (a few µs); the
worker pays for the span, on the same CPU budget, while the agent waits for its model or tool.
"""

from __future__ import annotations

import atexit
import time
import weakref
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry import metrics as otel_metrics
from opentelemetry import trace
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import Span, Status, StatusCode, TracerProvider

from .. import __version__
from ..actions.types import PLAN
from ..detectors.todo import todo_state
from ..errors import ErrorCounter
from ..sinks import SessionRegistry, Sink
from . import attributes as A
from .capture import CaptureMode, capture_mode_from_env
from .drops import DropCounter
from .instruments import Counts, count_calls, instruments_for
from .nesting import current_parent, is_tool_span_for, watch_tool_spans
from .redact import Redactor, redact_value, render_content
from .worker import EXIT_FLUSH_TIMEOUT_S, BackgroundWorker

if TYPE_CHECKING:
    from ..decisions import Decision
    from ..events import ToolEvent
    from ..findings import Finding
    from ..metrics import Scores
    from ..session import Session, SessionSummary
    from ..step import Step

__all__ = ["OTelSink"]

_ERROR = StatusCode.ERROR
_FAILED = Status(_ERROR)
_BLOCKED = Status(_ERROR, "blocked by planguard")
#: Sessions the sink tracks at once; past this the least recently started one is closed as evicted.
MAX_SESSIONS = 10_000
#: Open tool calls per session (mirrors the session's own bound on pending calls).
MAX_OPEN_TOOLS = 1024
#: Entries at most in each of the sink's text memos (span names, letters, enum values); then text is built.
MAX_MEMO = 4096
#: Session-span events a session holds for the worker (a reminder every few model calls, with no cap per
#: session, adds one without end); past this the oldest goes, as the SDK drops a span's oldest events.
MAX_DEFERRED_EVENTS = 1024
#: Langutory runs in ``planguard.langutory.tail`` (``Langutory.tail()``'s default).
TAIL_RUNS = 5

# A recorded span event: (name, attributes, timestamp ns or None (now), content key or None, content or None)
_Deferred = tuple[str, dict[str, Any], int | None, str | None, Any]


def _ns(seconds: float | None) -> int | None:
    return None if seconds is None else int(seconds * 1e9)


#: An ``execute_tool`` span in the making, recorded when the call is accepted: (span name, attributes, start
#: ns or None, live). ``live``: recorded while the call ran (False: replayed after the fact). A plain tuple,
#: built per call (an object with an ``__init__`` costs as much as the rest of the record); the few calls
#: that get span events keep them apart, in ``_SessionState.events``.
_ToolCall = tuple[str, dict[str, Any], int | None, bool]
#: The record of an open call in a session whose spans go nowhere (``_SessionState.untraced``).
_UNTRACED: _ToolCall = ("", {}, None, False)


class _SessionState:
    __slots__ = (
        "__weakref__",
        "compliance",
        "conversation_id",
        "ctx",
        "deferred",
        "ended",
        "events",
        "hosts",
        "pre",
        "pre_step",
        "recorded_end",
        "live_seen",
        "score_attrs",
        "scores",
        "session",
        "span",
        "tail",
        "tail_letter",
        "tail_head",
        "tail_len",
        "tail_parts",
        "tail_runs",
        "tally",
        "tools",
        "untraced",
    )

    def __init__(
        self, session: Session, span: Span, ctx: otel_context.Context, counts: Counts, untraced: bool
    ) -> None:
        self.session = session
        self.conversation_id = session.id  # as the spans carry it: redacted (see OTelSink._start_session)
        self.tally = counts.tally(self)  # this session's metric counts (see instruments.Counts)
        self.span = span
        self.ctx = ctx
        # The tracer started no span for the session: it is a no-op (OpenTelemetry not configured), and so
        # are the session's tool spans. Only the counts are kept (metrics are read from them later).
        self.untraced = untraced
        self.tools: dict[int, _ToolCall] = {}
        self.events: dict[int, list[_Deferred]] = {}  # span events of open calls, for those that have any
        # Open calls whose tool span a framework opened: planguard enriches it instead of opening one.
        self.hosts: dict[int, Span] = {}
        # Decisions made in before_tool, before the call is accepted and its record exists.
        self.pre_step: Step | None = None
        self.pre: list[tuple[Decision, int]] = []
        self.deferred: list[_Deferred] = []  # session-span events waiting for the worker
        # What the tool-span attributes are built from, cached between calls (see OTelSink.on_tool_start).
        self.compliance = session.primary_compliance
        self.scores: Scores | None = None
        self.score_attrs: dict[str, float] = {}
        self.tail_len = -1
        self.tail = ""
        self.tail_runs = -1
        self.tail_parts: list[str] = []  # texts of the finished runs in the tail
        self.tail_head = ""  # the tail up to the last run's count: finished runs, then the last run's letter
        self.tail_letter = ""  # the last run's letter
        self.ended = False
        # Replayed sessions (only calls reported after the fact) end at their last recorded call, and their
        # session-span events are stamped then, not at replay time.
        self.recorded_end = 0
        self.live_seen = False

    def now_ns(self) -> int:
        """Now, on the session's clock: a replayed session's last recorded end."""
        return self.recorded_end if self.recorded_end and not self.live_seen else time.time_ns()


#: Work for the worker: build and end a recorded tool span (``call``), or add the deferred events to the
#: session span (``span``) and end it; captured content is rendered and redacted there. (call, session span,
#: parent context, deferred events, status, arguments, result, end ns): a plain tuple, like ``_ToolCall``.
_Job = tuple[
    _ToolCall | None,
    Span | None,
    otel_context.Context | None,
    list[_Deferred] | None,
    Status | None,
    Any,
    Any,
    int,
]


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
        max_sessions: int = MAX_SESSIONS,
        defer_spans: bool = False,
        shutdown_timeout_s: float = 2.0,
        provider_name: str | None = None,
        tool_spans: str = "auto",
    ) -> None:
        tp = tracer_provider if tracer_provider is not None else trace.get_tracer_provider()
        mp = meter_provider if meter_provider is not None else otel_metrics.get_meter_provider()
        self._tracer = tp.get_tracer(A.TRACER_NAME, __version__)
        self.agent_name = agent_name
        self.provider_name = provider_name
        if tool_spans not in ("auto", "own", "enrich"):
            raise ValueError(f"tool_spans: expected auto, own or enrich, got {tool_spans!r}")
        self.tool_spans = tool_spans
        self._enrich = tool_spans != "own"
        # Tool spans a framework starts inside a tool_scope are handed to adopt_tool_span (SDK providers),
        # once an integration first runs a call in one (see watch_tool_spans).
        self._tracer_provider = tp
        self._can_adopt = self._enrich and hasattr(tp, "add_span_processor")
        self._adopting = False
        # Live calls that may still get a framework's tool span: id(event) -> (session state, step index).
        self._scoped: dict[int, tuple[_SessionState, int]] = {}
        self.capture = capture if capture is not None else capture_mode_from_env()
        self._capture_on = self.capture.enabled
        self._max_content = max_content_chars
        self._redactor = redactor
        # Ids and names (call ids, session ids, tool names: any may hold a secret) are redacted as the span
        # is recorded, on the agent's thread, by the built-in patterns only: an id is short, and one
        # holding no needle (nearly all) costs a substring scan (~1 µs). Session ids once per session, tool
        # names once per name (kept with the tool's span name).
        self._redact_id = Redactor()
        self.drops = drops if drops is not None else DropCounter()
        self.errors = errors if errors is not None else ErrorCounter()
        self._owned = list(owned)  # providers built for this sink: flushed and shut down with it
        self._shutdown_timeout = shutdown_timeout_s  # for the worker and the owned providers together
        self._session_span_name = f"{A.SPAN_INVOKE_AGENT} {agent_name}" if agent_name else A.SPAN_INVOKE_AGENT
        self._tool_names: dict[str, tuple[str, str]] = {}  # tool -> (its name as shown, its span's name)
        self._letters: dict[tuple[str, ...], str] = {}
        self._action_names: dict[Any, str] = {}  # enum member → its value (action types, effects)
        self._sessions: SessionRegistry[_SessionState] = SessionRegistry(max_sessions)
        # Spans are built on this worker when content is captured (rendering and redaction stay off the
        # agent's thread) or when asked to (``defer_spans``: the agent's thread only records them).
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
                # Content is waited for by nobody either, but its tests and users expect it promptly;
                # deferred spans wake the worker once a batch is worth it (waking it is what costs).
                wake_at=1 if self._capture_on else 256,
            )
            if self._capture_on or defer_spans
            else None
        )
        if self._worker is not None:
            # The worker builds spans on the provider passed in, which exists already, so its own exit
            # hook (the SDK's shutdown) was registered before this one and runs after it: spans still
            # queued here are built and handed over while the provider can take them.
            atexit.register(_flush_at_exit, weakref.ref(self))
        # Counts, read by the observable instruments at collection time.
        self._counts = Counts(self.drops, self.errors)
        self._metrics = instruments_for(mp)
        self._metrics.attach(self._counts)

    # ------------------------------------------------------------------ session hooks

    def on_session_start(self, session: Session) -> None:
        self._state(session)

    def on_tool_start(self, session: Session, step: Step, live: bool = True, blocked: bool = False) -> None:
        """Record the call's span in ``st.tools``: its name and start, and its attributes as they are now —
        later calls change the session's compliance and Langutory tail. Also how the sink records calls
        reported only once finished (``live=False``: offline ``observe()``) and calls a gate refused
        (``blocked``), so that every call takes the same path."""
        last = self._sessions.last
        st = last[1] if last is not None and last[0] is session else self._state(session)
        ev = step.event
        index = step.index
        roles = step.classification.roles
        letters = self._letters.get(roles)
        if letters is None:
            letters = "".join(session.pipeline.letter_of.get(r, "?") for r in roles)
            if len(self._letters) < MAX_MEMO:  # distinct role tuples are few, but not bounded by the rules
                self._letters[roles] = letters
        action = step.action
        kind = None if action is None else getattr(action, "type", None)
        action_type = "" if kind is None else self._action_names.get(kind) or self._label(kind)
        if not blocked:
            calls = st.tally.tool_calls
            key = (letters, action_type)
            n = calls.get(key)
            if n is not None:
                calls[key] = n + 1
            else:
                count_calls(calls, key)  # a new pair: counted apart up to instruments.MAX_CALL_KEYS
        tools = st.tools
        if len(tools) >= MAX_OPEN_TOOLS and not blocked:  # calls that never finished: close the oldest
            oldest = next(iter(tools))
            self._emit_open(st, oldest, tools.pop(oldest))
        if st.untraced:  # no span of this session goes anywhere: the call is only counted
            tools[index] = _UNTRACED
            return
        shown, span_name = self._tool_names.get(ev.tool) or self._tool_name(ev.tool)
        attrs: dict[str, Any] = {
            A.GEN_AI_OPERATION_NAME: A.OP_EXECUTE_TOOL,
            A.GEN_AI_TOOL_NAME: shown,
            A.GEN_AI_TOOL_TYPE: A.TOOL_TYPE_FUNCTION,
            A.GEN_AI_CONVERSATION_ID: st.conversation_id,
            A.STEP_INDEX: index,
            A.PHASE: letters,
        }
        if (
            ev.call_id is not None
        ):  # (an id the model made up: redacted like content, as it may hold anything)
            attrs[A.GEN_AI_TOOL_CALL_ID] = self._redact_id(ev.call_id)
        if kind is not None:
            attrs[A.ACTION_TYPE] = action_type
        comp = st.compliance
        if comp is not None:
            scores = comp.scores()  # cached by Compliance until a plan phase first appears
            if scores is not st.scores:
                st.scores = scores
                st.score_attrs = {A.PPC: scores.PPC, A.POC: scores.POC, A.PPF: scores.PPF, A.PC: scores.PC}
            attrs.update(st.score_attrs)
        lang = session.langutory
        if lang.length != st.tail_len:
            # ``Langutory.tail()``, kept incrementally: a step extends the last run (only its count
            # changes) or starts a new one (see _tail_head).
            st.tail_len = lang.length
            runs = lang.runs
            if len(runs) != st.tail_runs:
                self._tail_head(st, runs)
            st.tail = f"{st.tail_head}{runs[-1][1]}" if runs else ""
        if st.tail:
            attrs[A.LANGUTORY_TAIL] = st.tail
        if blocked:
            attrs[A.BLOCKED] = True
            attrs[A.ERROR_TYPE] = A.ERROR_BLOCKED
        if live:
            st.live_seen = True
        start = ev.start_time
        tools[index] = (
            span_name,
            attrs,
            None if start is None else int(start * 1e9),
            live,
        )
        if self._enrich and live and not blocked:
            host = trace.get_current_span()
            if is_tool_span_for(host, ev, strict=self.tool_spans == "auto"):
                host.set_attributes(attrs)
                st.hosts[index] = host
            elif self._adopting:
                scoped = self._scoped
                if len(scoped) >= MAX_SESSIONS:  # calls whose end never came: forget the oldest
                    scoped.pop(next(iter(scoped), None), None)  # type: ignore[arg-type]
                scoped[id(ev)] = (st, index)
        if st.pre and st.pre_step is step:  # decisions made while the call was being gated
            self._take_pre(st, index)

    @property
    def adopts_tool_spans(self) -> bool:
        """Tool spans a framework opens inside :meth:`Guard.tool_scope` can become the calls' spans (an SDK
        tracer provider and ``tool_spans`` other than ``own``)."""
        return self._can_adopt

    def watch_tool_spans(self) -> None:
        """Start adopting tool spans (called when an integration first runs a call in a tool scope): one
        span processor on the tracer provider; until then no call pays for it."""
        if self._can_adopt and not self._adopting:
            self._adopting = watch_tool_spans(self._tracer_provider, self)

    def adopt_tool_span(self, event: ToolEvent, span: Span) -> None:
        """A framework started ``span`` for ``event``'s call inside :func:`~.nesting.tool_scope`: it becomes
        the call's span (planguard's attributes now, its events and outcome when the call ends)."""
        entry = self._scoped.pop(id(event), None)
        if entry is None:
            return
        st, index = entry
        call = st.tools.get(index)
        if call is None or call is _UNTRACED or st.ended:
            return
        try:
            span.set_attributes(call[1])
        except Exception as exc:
            self.errors.record("OTelSink.adopt_tool_span", exc)
            return
        st.hosts[index] = span

    def on_tool_end(self, session: Session, step: Step) -> None:
        last = self._sessions.last
        st = last[1] if last is not None and last[0] is session else self._state(session)
        index = step.index
        call = st.tools.pop(index, None)
        if call is None:  # offline observe(): the call is reported once, finished
            self.on_tool_start(session, step, False)
            call = st.tools.pop(index)
        ev = step.event
        if self._scoped:
            self._scoped.pop(id(ev), None)
        duration = ev.duration
        if call is _UNTRACED:
            if duration is not None:
                self._counts.add_duration(duration, self._action_of(step), _error_of(ev))
            return
        name, attrs, start_ns, live = call
        # the effect tracker's label (SURVIVED, REVERTED, …), when there is one
        effect = getattr(step, "effect", None)
        if effect is not None:
            effect = self._action_names.get(effect) or self._label(effect)
        status = None
        if ev.is_error or (ev.exit_code is not None and ev.exit_code != 0):  # ToolEvent.failed, inline
            if ev.is_error:
                attrs[A.ERROR_TYPE] = A.ERROR_TOOL
            else:
                attrs[A.ERROR_TYPE] = A.ERROR_EXIT_CODE
                attrs[A.EXIT_CODE] = ev.exit_code or 0
            attrs[A.EFFECT] = effect or "FAILED"
            status = _FAILED
        else:
            attrs[A.EFFECT] = effect or "SUCCEEDED"
        if step.findings:
            attrs[A.FINDINGS_COUNT] = len(step.findings)
        action = step.action
        if action is not None and action.type is PLAN:  # a todo tool call: the list as it now stands
            self._todo_attrs(session, attrs, at_end=False)
        # Live calls end now (None: the SDK reads the clock), after the findings and decisions about them;
        # replayed ones at the recorded end, where their events were stamped.
        end_ns = None if live else _ns(ev.end_time)
        if end_ns is not None and end_ns > st.recorded_end:
            st.recorded_end = end_ns
        events = st.events.pop(index, None) if st.events else None
        if duration is not None:
            self._counts.add_duration(duration, attrs.get(A.ACTION_TYPE, ""), attrs.get(A.ERROR_TYPE, ""))
        host = st.hosts.pop(index, None) if st.hosts else None
        if host is not None:
            self._enrich_host(st, host, attrs, events, status)
            return
        self._emit(st, name, attrs, start_ns, events, status, ev, end_ns)

    def _action_of(self, step: Step) -> str:
        action = step.action
        kind = None if action is None else getattr(action, "type", None)
        return "" if kind is None else self._action_names.get(kind) or self._label(kind)

    def _enrich_host(
        self,
        st: _SessionState,
        host: Span,
        attrs: dict[str, Any],
        events: list[_Deferred] | None,
        status: Status | None,
    ) -> None:
        """Put a finished call's outcome and events on the framework's tool span while it is open; once the
        framework has ended it, on the session span, naming the call. Content is never added here (it is
        rendered and redacted on the worker, after the host span may have ended)."""
        try:
            if host.is_recording():
                host.set_attributes(attrs)
                for ev_name, ev_attrs, ts, _key, _content in events or ():
                    host.add_event(ev_name, ev_attrs, ts)
                if status is not None:
                    host.set_status(status)
                return
            call_attrs = {k: attrs[k] for k in _CALL_KEYS if k in attrs}
            self._session_event(st, A.EVENT_TOOL_OUTCOME, call_attrs, A.DECISION_MESSAGE, None)
            for ev_name, ev_attrs, _ts, _key, _content in events or ():
                self._session_event(st, ev_name, {**ev_attrs, **_call_ref(attrs)}, A.DECISION_MESSAGE, None)
        except Exception as exc:
            self.errors.record("OTelSink.enrich", exc)

    def on_finding(self, session: Session, step: Step | None, finding: Finding) -> None:
        last = self._sessions.last
        st = last[1] if last is not None and last[0] is session else self._state(session)
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
        evaluation = _finding_evaluation(finding)
        if step is None:
            self._session_event(st, A.EVENT_FINDING, attrs, A.FINDING_EVIDENCE, finding.evidence)
            self._session_event(st, A.EVENT_EVALUATION_RESULT, evaluation, A.FINDING_EVIDENCE, None)
            return
        live = self._tool_for(st, session, step)[3]
        stamp = _stamp(live, step)
        _add_event(
            st,
            step.index,
            (
                A.EVENT_FINDING,
                attrs,
                stamp,
                A.FINDING_EVIDENCE,
                finding.evidence if self._capture_on else None,
            ),
        )
        _add_event(st, step.index, (A.EVENT_EVALUATION_RESULT, evaluation, stamp, None, None))

    def on_decision(self, session: Session, step: Step | None, decision: Decision) -> None:
        last = self._sessions.last
        st = last[1] if last is not None and last[0] is session else self._state(session)
        kind = str(decision.kind)  # the StrEnum's value (``.value`` runs Python code)
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
            if st.pre_step is not step:
                st.pre_step, st.pre = step, []
            st.pre.append((decision, time.time_ns()))
            if decision.blocks:
                self._blocked(st, session, step)
            return
        live = self._tool_for(st, session, step)[3]
        _add_event(
            st,
            step.index,
            (
                A.EVENT_DECISION,
                _decision_attrs(decision),
                _stamp(live, step),
                A.DECISION_MESSAGE,
                decision.message if self._capture_on else None,
            ),
        )

    def on_session_end(self, session: Session, summary: SessionSummary) -> None:
        st = self._sessions.pop(session)
        if st is None or st.ended:
            return
        self._close(st, summary, evicted=False)

    def shutdown(self) -> None:
        for st in self._sessions.clear():  # sessions nobody ended: close their spans so they are not lost
            self._close(st, st.session.summary(), evicted=True)
        deadline = time.monotonic() + self._shutdown_timeout
        if self._worker is not None:
            self._worker.shutdown(self._shutdown_timeout)
        from .export import shutdown_providers

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

    # ------------------------------------------------------------------ spans

    def _state(self, session: Session) -> _SessionState:
        st = self._sessions.get(session)
        return st if st is not None else self._start_session(session)

    def _start_session(self, session: Session) -> _SessionState:
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
        st.conversation_id = attrs[A.GEN_AI_CONVERSATION_ID]
        self._counts.watch_errors(session.pipeline.errors)
        for old in self._sessions.add(session, st):  # past max_sessions, or an ended session's id() reused
            self._close(old, old.session.summary(), evicted=True)
        return st

    @staticmethod
    def _tail_head(st: _SessionState, runs: list[tuple[str, int]]) -> None:
        """The tail up to the last run's count. A run before the last never changes, so each is formatted
        once, when the run after it starts (with the letter remembered from when it was the last)."""
        n_runs = len(runs)
        parts = st.tail_parts
        if n_runs == st.tail_runs + 1 and n_runs > 1:  # one run started: the one before it is final now
            parts.append(f"{st.tail_letter}{runs[-2][1]} ")
            if len(parts) >= TAIL_RUNS:
                del parts[0]
        else:
            letter_of = st.session.pipeline.letter_of
            parts[:] = [f"{letter_of.get(str(r), '?')}{n} " for r, n in runs[-TAIL_RUNS:-1]]
        st.tail_runs = n_runs
        st.tail_letter = st.session.pipeline.letter_of.get(str(runs[-1][0]), "?") if runs else ""
        st.tail_head = "".join(parts) + st.tail_letter

    def _tool_name(self, tool: str) -> tuple[str, str]:
        """The tool's name as spans show it (redacted) and its span's name."""
        names = self._tool_names.get(tool)
        if names is None:
            shown = self._redact_id(tool) if tool else tool
            names = (shown, f"{A.SPAN_EXECUTE_TOOL} {shown}" if shown else A.SPAN_EXECUTE_TOOL)
            if len(self._tool_names) < MAX_MEMO:
                self._tool_names[tool] = names
        return names

    def _tool_for(self, st: _SessionState, session: Session, step: Step) -> _ToolCall:
        call = st.tools.get(step.index)
        if call is None:  # offline: findings and decisions come before the call's end
            self.on_tool_start(session, step, False)
            call = st.tools[step.index]
        return call

    def _take_pre(self, st: _SessionState, index: int) -> None:
        capture = self._capture_on
        for decision, ts in st.pre:
            _add_event(
                st,
                index,
                (
                    A.EVENT_DECISION,
                    _decision_attrs(decision),
                    ts,
                    A.DECISION_MESSAGE,
                    decision.message if capture else None,
                ),
            )
        st.pre_step, st.pre = None, []

    def _blocked(self, st: _SessionState, session: Session, step: Step) -> None:
        """A call a policy denied/stopped: a short span of its own, so the block is visible in the trace."""
        index = step.index
        self.on_tool_start(session, step, True, blocked=True)
        name, attrs, start_ns, _live = st.tools.pop(index)
        self._emit(st, name, attrs, start_ns, st.events.pop(index, None), _BLOCKED, step.event, None)

    def _todo_attrs(self, session: Session, attrs: dict[str, Any], *, at_end: bool) -> None:
        todo = todo_state(session)
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

    def _emit_open(self, st: _SessionState, index: int, call: _ToolCall) -> None:
        """End a call that never finished (too many open, or its session closed) as it stands."""
        if call is _UNTRACED:
            return
        name, attrs, start_ns, _live = call
        self._emit(st, name, attrs, start_ns, st.events.pop(index, None), None, None, time.time_ns())

    def _close(self, st: _SessionState, summary: SessionSummary, *, evicted: bool) -> None:
        st.ended = True
        plan = st.session.pipeline.plan.name
        primary = summary.scores.get(plan)
        if primary is not None:
            self._metrics.record_pc(primary.PC, plan)
        if st.untraced:
            return
        now = time.time_ns()
        for index, (name, tool_attrs, start_ns, _live) in list(st.tools.items()):
            if index in st.hosts:  # the framework's span: it ends it
                continue
            self._emit(st, name, tool_attrs, start_ns, st.events.pop(index, None), None, None, now)
        st.tools.clear()
        st.events.clear()
        st.hosts.clear()
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
            attrs[A.SESSION_UNKNOWN_TOOLS] = sorted(self._tool_name(t)[0] for t in summary.unknown_tools)
        if primary is not None:
            attrs[A.PPC] = primary.PPC
            attrs[A.POC] = primary.POC
            attrs[A.PPF] = primary.PPF
            attrs[A.PC] = primary.PC
            comp = st.session.primary_compliance
            missing = list(comp.missing()) if comp is not None else []
            if comp is not None:
                attrs[A.SESSION_MISSING] = missing
            for name, value in (
                ("PC", primary.PC),
                ("PPC", primary.PPC),
                ("POC", primary.POC),
                ("PPF", primary.PPF),
            ):
                evaluation = _score_evaluation(name, value, plan, missing)
                self._session_event(st, A.EVENT_EVALUATION_RESULT, evaluation, "", None, bounded=False)
        if evicted:
            attrs[A.SESSION_EVICTED] = True
        if summary.todo is not None:
            self._todo_attrs(st.session, attrs, at_end=True)
        span.set_attributes(attrs)
        end_ns = st.now_ns()
        if not self._submit((None, span, None, st.deferred, None, None, None, end_ns)):
            _add_events(span, st.deferred)  # no worker, or its queue is full: the span goes out now
            span.end(end_ns)

    def _emit(
        self,
        st: _SessionState,
        name: str,
        attrs: dict[str, Any],
        start_ns: int | None,
        events: list[_Deferred] | None,
        status: Status | None,
        event: ToolEvent | None,
        end_ns: int | None,
    ) -> None:
        """Create, fill and end a recorded tool span (``end_ns`` None: now): here, or on the worker
        (content capture, deferred)."""
        if self._worker is not None:
            arguments = result = None
            if self._capture_on and event is not None:
                arguments, result = event.arguments, event.result
            if end_ns is None:
                end_ns = time.time_ns()
            if self._submit(
                ((name, attrs, start_ns, True), None, st.ctx, events, status, arguments, result, end_ns)
            ):
                return
            # queue full: the span goes out now, without its content
        span = self._tracer.start_span(name, context=st.ctx, attributes=attrs, start_time=start_ns)
        if events:
            _add_events(span, events)
        if status is not None:
            span.set_status(status)
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
            if bounded and len(deferred) >= MAX_DEFERRED_EVENTS:
                del deferred[0]
                self.drops.add("session_events_full")
            deferred.append((name, attrs, st.now_ns(), content_key, content if self._capture_on else None))
        elif st.recorded_end and not st.live_seen:
            st.span.add_event(name, attrs, st.recorded_end)
        else:
            st.span.add_event(name, attrs)

    def _submit(self, job: _Job) -> bool:
        worker = self._worker
        if worker is None:
            return False
        # Without content nothing is lost when the queue is full (the span is built here instead), so
        # that is not counted as a drop; with content, the content is what gets dropped.
        if not self._capture_on and worker.pending >= self._max_queue:
            return False
        return worker.submit(job)

    def _label(self, member: Any) -> str:
        """An enum member's value as text (action types, effects), cached."""
        name = str(getattr(member, "value", member))
        if len(self._action_names) < MAX_MEMO:  # a custom classifier's types need not be an enum
            self._action_names[member] = name
        return name

    # ------------------------------------------------------------------ worker (content, deferred spans)

    def _finish_jobs(self, jobs: list[_Job]) -> None:
        for job in jobs:
            try:
                self._finish_job(job)
            except Exception as exc:
                self.errors.record("OTelSink.worker", exc)

    def _finish_job(self, job: _Job) -> None:
        call, span, ctx, deferred, status, arguments, result, end_ns = job
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
        if call is not None:
            name, attrs, start_ns, _live = call
            if content and mode.on_span:
                attrs = {**attrs, **content}
            span = self._tracer.start_span(name, context=ctx, attributes=attrs, start_time=start_ns)
        if span is None:
            return
        try:
            for name, ev_attrs, ts, key, value in deferred or ():
                if key is not None and value:
                    ev_attrs = {**ev_attrs, key: render_content(value, limit, redactor)}
                span.add_event(name, ev_attrs, ts)
            if content and mode.as_event:
                span.add_event(A.EVENT_TOOL_CONTENT, content, end_ns)
            if status is not None:
                span.set_status(status)
        finally:
            span.end(end_ns)


def _flush_at_exit(ref: weakref.ReferenceType[OTelSink]) -> None:
    sink = ref()
    if sink is not None and sink._worker is not None:
        sink._worker.flush(EXIT_FLUSH_TIMEOUT_S)


def _stamp(live: bool, step: Step) -> int | None:
    # Live calls: now. Replayed calls: the call's own end, inside the span, not replay time.
    return time.time_ns() if live else _ns(step.event.end_time)


def _add_event(st: _SessionState, index: int, event: _Deferred) -> None:
    events = st.events.get(index)
    if events is None:
        st.events[index] = [event]
    else:
        events.append(event)


def _add_events(span: Span, deferred: list[_Deferred]) -> None:
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


def _call_ref(attrs: dict[str, Any]) -> dict[str, Any]:
    ref = {A.STEP_INDEX: attrs[A.STEP_INDEX]} if A.STEP_INDEX in attrs else {}
    if A.GEN_AI_TOOL_CALL_ID in attrs:
        ref[A.GEN_AI_TOOL_CALL_ID] = attrs[A.GEN_AI_TOOL_CALL_ID]
    return ref


def _error_of(ev: ToolEvent) -> str:
    if ev.is_error:
        return A.ERROR_TOOL
    if ev.exit_code is not None and ev.exit_code != 0:
        return A.ERROR_EXIT_CODE
    return ""


def _score_label(value: float) -> str:
    if value >= 1.0:
        return A.LABEL_COMPLETE
    return A.LABEL_PARTIAL if value > 0.0 else A.LABEL_NONE


def _score_evaluation(name: str, value: float, plan: str, missing: list[str]) -> dict[str, Any]:
    explanation = f"{A.EVALUATIONS[name]}; plan {plan!r}"
    if missing:
        explanation += f"; missing phases: {', '.join(missing)}"
    return {
        A.GEN_AI_EVALUATION_NAME: name,
        A.GEN_AI_EVALUATION_SCORE_VALUE: float(value),
        A.GEN_AI_EVALUATION_SCORE_LABEL: _score_label(value),
        A.GEN_AI_EVALUATION_EXPLANATION: explanation,
    }


def _finding_evaluation(finding: Finding) -> dict[str, Any]:
    # The explanation names steps only: the finding's evidence is content (exported only with capture on,
    # on the planguard.finding event, redacted).
    where = "at the end of the run" if finding.at_end else f"steps {finding.first_step}-{finding.last_step}"
    return {
        A.GEN_AI_EVALUATION_NAME: A.FINDING_EVALUATION_PREFIX + finding.detector,
        A.GEN_AI_EVALUATION_SCORE_VALUE: 0.0,
        A.GEN_AI_EVALUATION_SCORE_LABEL: A.LABEL_DETECTED,
        A.GEN_AI_EVALUATION_EXPLANATION: f"anti-pattern {finding.detector!r} detected over {where}",
    }
