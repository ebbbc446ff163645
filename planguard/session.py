"""``Pipeline`` (what to run, shared) and ``Session`` (one agent run's state, explicit and bounded).

A session consumes tool calls one at a time, live (``before_tool`` → the call runs → ``after_tool``) or
offline (``observe``), and runs every stage of the pipeline on each:

    ToolEvent → Action → phase Classification → Langutory + Compliance → Detectors → Policies → Sinks

Every stage keeps per-session state of bounded size, so the cost of an event does not depend on how long
the run has been going. Offline replay, live middleware and the proxy all drive this same class.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, cast

from .actions.types import Action
from .decisions import ALLOW, RECORDED_POLICY, Decision, DecisionKind
from .errors import ErrorCounter
from .events import MessageEvent, ToolEvent
from .findings import Finding
from .metrics import Compliance, Langutory, PlanLayout, Scores
from .phases import GENERAL, Classification, Command, get_rules
from .phases.base import CallReader, CallRules, PhaseClassifier, letter_map
from .plan import PRESETS, Plan
from .stages import Detector, Policy, Sink
from .step import Step
from .unclassified import Unclassified

__all__ = ["RECORDED_POLICY", "Pipeline", "Session", "SessionSummary"]

#: Calls started but not finished that a session remembers; past this the oldest is closed unrecorded.
MAX_PENDING = 1024
#: Findings a session keeps for its summary (counts are kept for all).
MAX_KEPT_FINDINGS = 256
#: Undelivered reminders/nudges a session queues for the next model request (past this the oldest goes; a STOP
#: is never the one to go).
MAX_QUEUED_MESSAGES = 16
#: Roles a session remembers as settled in every plan's compliance (the role vocabulary is tiny).
MAX_SCORED_ROLES = 256
#: Slots bound from the pipeline, not state: rebuilt by ``Session.bind``, never saved. The sinks' states are
#: their record of the session in this process (an open span, a file being written): a session restored
#: elsewhere starts its own.
_DERIVED = frozenset({"pipeline", "_compliances", "sink_states"})


@dataclass(frozen=True)
class Pipeline:
    """Everything that is the same for every session: rules, plans, stages, sinks.

    ``plans[0]`` is the plan the agent follows (reminders and gates use it); further plans are only scored,
    as the paper scores one run against each of its settings.
    """

    rules: PhaseClassifier = field(default_factory=get_rules)
    plans: tuple[Plan, ...] = (PRESETS["plan"],)
    actions: Callable[[ToolEvent], Any] | None = None
    detectors: tuple[Detector, ...] = ()
    policies: tuple[Policy, ...] = ()
    sinks: tuple[Sink, ...] = ()
    errors: ErrorCounter = field(default_factory=ErrorCounter)

    @property
    def plan(self) -> Plan:
        return self.plans[0]

    def session(self, session_id: str, /, **metadata: Any) -> Session:
        return Session(session_id, self, metadata=metadata)

    # Per-pipeline work, done once rather than for every session.

    @cached_property
    def layouts(self) -> tuple[PlanLayout, ...]:
        """One scoring layout per scored plan, shared by every session."""
        return tuple(PlanLayout(p) for p in self.plans if p.scored)

    @cached_property
    def letter_of(self) -> Mapping[str, str]:
        """Role -> Langutory letter (a declared plan's phase symbols, else the coding letters)."""
        return letter_map(self.rules)

    @cached_property
    def providers(self) -> Mapping[str, int]:
        """Run fact name -> the position of the first detector that provides it (``Detector.provides``)."""
        out: dict[str, int] = {}
        for i, det in enumerate(self.detectors):
            if det.provides is not None:
                out.setdefault(det.provides, i)
        return out

    @cached_property
    def one_reading(self) -> tuple[CallReader, CallRules] | None:
        """The action classifier and the phase rules when the rules read calls through it (the same
        ``call_reader``, :class:`~planguard.phases.base.CallRules`): a session then reads each call once
        and hands the one :class:`~planguard.tools.vocabulary.ToolCall` to the rules."""
        actions, rules = self.actions, self.rules
        reader = getattr(rules, "call_reader", None)
        if reader is not None and getattr(actions, "call_reader", None) is reader:
            return cast(CallReader, actions), cast(CallRules, rules)
        return None

    @cached_property
    def defers_phases(self) -> bool:
        """The rules read the call's result, so a live call's phase is decided when the result arrives."""
        return bool(getattr(self.rules, "needs_result", False))


@dataclass(slots=True)
class SessionSummary:
    session_id: str
    n_steps: int
    n_model_calls: int
    letters: str
    langutory: list[str]
    scores: dict[str, Scores]
    finding_counts: dict[str, int]
    findings: list[Finding]
    decision_counts: dict[str, int]
    duration: float
    #: The agent's own todo list at the end (done, total, active, open, updates, calls_since_update); None
    #: when it wrote none (or the pipeline has no todo tracker).
    todo: dict[str, Any] | None = None
    #: Calls whose tool no mapping rule knows, and those tools' names with their call counts.
    unclassified: int = 0
    unknown_tools: dict[str, int] = field(default_factory=dict)

    @property
    def primary(self) -> Scores | None:
        return next(iter(self.scores.values()), None)


class Session:
    """One agent run. Not thread-safe on its own: callers serialise access (the ``Guard`` holds a lock)."""

    __slots__ = (
        "id",
        "pipeline",
        "metadata",
        "phase_state",
        "langutory",
        "compliance",
        "_compliances",
        "_scored_roles",
        "n_steps",
        "n_model_calls",
        "detector_states",
        "policy_states",
        "sink_states",
        "_pending",
        "_queued",
        "findings",
        "finding_counts",
        "decision_counts",
        "started_at",
        "last_activity",
        "ended",
        "unclassified",
    )

    def __init__(
        self,
        session_id: str,
        pipeline: Pipeline,
        *,
        metadata: Mapping[str, Any] | None = None,
        started_at: float | None = None,
    ):
        """``started_at``: when the run started, if not now (a recorded run being replayed)."""
        self.id = session_id
        self.pipeline = pipeline
        self.metadata: dict[str, Any] = dict(metadata or {})
        self.phase_state = pipeline.rules.new_state()
        self.phase_state.root = _work_dir(self.metadata)
        self.langutory = Langutory()
        self.compliance: dict[str, Compliance] = {
            layout.plan.name: Compliance(layout) for layout in pipeline.layouts if layout.plan is not None
        }
        self._compliances = tuple(self.compliance.values())
        self._scored_roles: set[str] = set()
        self.n_steps = 0
        self.n_model_calls = 0
        self.detector_states = [d.new_state() for d in pipeline.detectors]
        self.policy_states = [p.new_state() for p in pipeline.policies]
        # Calls awaiting their result: by call id, or by step index (an int, so no id can equal it) when the
        # call has none. Id-less results are matched in call order.
        self._pending: dict[str | int, Step] = {}
        self._queued: deque[Decision] = deque(maxlen=MAX_QUEUED_MESSAGES)
        self.findings: deque[Finding] = deque(maxlen=MAX_KEPT_FINDINGS)
        self.finding_counts: dict[str, int] = {}
        self.decision_counts: dict[str, int] = {}
        self.started_at = self.last_activity = time.time()
        if started_at is not None:
            self.started_at = started_at
        self.ended = False
        self.unclassified = Unclassified()
        self.sink_states = self._new_sink_states()
        for sink, state in self.sink_states:
            self._guarded(sink.on_session_start, self, state)

    # ------------------------------------------------------------------ live hooks

    def before_tool(self, event: ToolEvent) -> Decision:
        """Classify the call about to run and ask the policies; a blocking decision means: do not run it."""
        self.last_activity = time.time()
        if event.start_time is None:
            event.start_time = self.last_activity
        step = self._classify(event)
        decision = self._ask_policies(step)
        step.decision = decision
        if decision is not ALLOW:  # a blocking decision replaced it
            return decision
        self._commit(step, phases=not self.pipeline.defers_phases)
        key = event.call_id if event.call_id is not None else step.index
        if len(self._pending) >= MAX_PENDING:
            self._pending.pop(next(iter(self._pending)))
        self._pending[key] = step
        self._tool_start(step)
        return decision

    def _ask_policies(self, step: Step) -> Decision:
        """The policies' verdict on the call about to run: every non-allow decision is recorded, and the first
        blocking one (if any) is returned."""
        for policy, state in zip(self.pipeline.policies, self.policy_states, strict=True):
            try:
                d = policy.before_tool(step, self, state)
            except Exception as exc:  # fail-open is the contract
                self.pipeline.errors.record(_where(policy.before_tool), exc)
                continue
            if d is not None and d.kind is not DecisionKind.ALLOW:
                self._record_decision(step, d)
                if d.blocks:
                    return d
        return ALLOW

    def after_tool(self, event: ToolEvent) -> Step:
        """Record the call's result and run detectors and policies on it."""
        self.last_activity = time.time()
        if event.end_time is None:
            event.end_time = self.last_activity
        step = self._take_pending(event)
        if step is None:  # the integration saw only the result: classify now, without a gate
            step = self._classify(event)
            self._commit(step)
            self._tool_start(step)
        else:
            _merge_result(step.event, event)
            if self.pipeline.defers_phases:  # the phase depends on the result, known only now
                self._reclassify(step)
        self._finish(step)
        return step

    def observe(self, event: ToolEvent) -> Step:
        """Offline: a call that has already run, start to finish. The policies are asked about it as they
        would be live and their decisions are recorded (what this pipeline would have decided), but nothing
        is blocked: the call ran, and counts as a step. A call the recording shows was blocked
        (``event.blocked``) is a recorded denial, not a step, as it was live: this pipeline's own blocking
        decision when it would block it too (so the denial is counted once), else one by the recording."""
        step = self._classify(event)
        decision = self._ask_policies(step)
        if event.blocked is not None:
            if not decision.blocks:
                decision = Decision(DecisionKind.DENY, event.blocked, RECORDED_POLICY)
                self._record_decision(step, decision)
            step.decision = decision
            return step
        self._commit(step)
        self._finish(step)
        return step

    def observe_message(self, message: MessageEvent) -> Classification | None:
        """A conversation turn (the assistant's text to the user, the user's reply). Not a step: it counts
        no tool call and no model call. When the plan matches it (``match: {message: ...}``) its phase is
        observed — in the Langutory, compliance, the ordering conditions and the policies (a gate waiting on
        ``phases_seen: [confirm]``) — and the sinks hear it; the phase's classification is returned."""
        self.last_activity = time.time()
        pipeline = self.pipeline
        observe = getattr(pipeline.rules, "observe_message", None)
        if observe is None:
            return None
        try:
            classification: Classification | None = observe(message, self.phase_state)
        except Exception as exc:  # a custom rule set failed: the turn shows no phase
            pipeline.errors.record(_where(observe), exc)
            return None
        if classification is None or not classification.roles:
            return None
        self._score(classification)
        for policy, state in zip(pipeline.policies, self.policy_states, strict=True):
            for d in self._guarded(policy.on_message, message, classification, self, state) or ():
                self._record_decision(None, d)
                if d.injects or d.kind is DecisionKind.STOP:
                    self.queue(d)
        for sink, sstate in self.sink_states:
            self._guarded(sink.on_message, self, message, classification, sstate)
        return classification

    def before_model(self) -> list[Decision]:
        """What the model request about to be sent needs (counts the model call): reminders and nudges to
        add, and a STOP when a policy has ended the run (the integration then ends it instead of calling the
        model)."""
        self.n_model_calls += 1
        self.last_activity = time.time()
        out = list(self._queued)
        self._queued.clear()
        for policy, state in zip(self.pipeline.policies, self.policy_states, strict=True):
            for d in self._guarded(policy.before_model, self, state) or ():
                self._record_decision(None, d)
                if d.injects or d.kind is DecisionKind.STOP:
                    out.append(d)
        return out

    def end(self) -> SessionSummary:
        """Close the run: end-of-run detectors and policies, final metrics. Idempotent."""
        if not self.ended:
            self.ended = True
            for step in list(self._pending.values()):
                if self.pipeline.defers_phases:  # no result came: its phase is what the call showed
                    self._score(step.classification)
                self._finish(step)
            self._pending.clear()
            for det, state in zip(self.pipeline.detectors, self.detector_states, strict=True):
                f = self._guarded(det.finish, self, state)
                if f is not None:
                    self._record_finding(None, f)
            for policy, pstate in zip(self.pipeline.policies, self.policy_states, strict=True):
                for d in self._guarded(policy.on_end, self, pstate) or ():
                    self._record_decision(None, d)
        summary = self.summary()
        # The sinks' records of the run close with it: each hears the end once, and its state goes.
        sink_states, self.sink_states = self.sink_states, ()
        for sink, state in sink_states:
            self._guarded(sink.on_session_end, self, summary, state)
        return summary

    # ------------------------------------------------------------------ views

    def scores(self, plan: str | None = None) -> Scores | None:
        """Compliance so far against ``plan`` (default: the plan the agent follows)."""
        c = self.compliance.get(plan or self.pipeline.plan.name)
        return c.scores() if c is not None else None

    @property
    def primary_compliance(self) -> Compliance | None:
        return self.compliance.get(self.pipeline.plan.name)

    def facts(self, name: str) -> Any:
        """The run fact ``name`` (``"todo"``, ``"effects"``): the state of the pipeline's detector that
        provides it, or None when none does."""
        i = self.pipeline.providers.get(name)
        return None if i is None else self.detector_states[i]

    def summary(self) -> SessionSummary:
        todo = self.facts("todo")
        return SessionSummary(
            session_id=self.id,
            n_steps=self.n_steps,
            n_model_calls=self.n_model_calls,
            letters=self.langutory.letters(self.pipeline.letter_of),
            langutory=self.langutory.rle(),
            scores={name: c.scores() for name, c in self.compliance.items()},
            finding_counts=dict(self.finding_counts),
            findings=list(self.findings),
            decision_counts=dict(self.decision_counts),
            duration=self.last_activity - self.started_at,
            todo=todo.summary(self.n_steps) if todo is not None and todo.active else None,
            unclassified=self.unclassified.calls,
            unknown_tools=dict(self.unclassified.tools),
        )

    def phases_unobserved(self) -> str | None:
        """Why the run's phases cannot be judged (most calls use tools no mapping rule knows), or None.
        Policies that judge phases stand down while this is set."""
        return self.unclassified.reason(self.n_steps) if self.unclassified.calls else None

    # ------------------------------------------------------------------ persistence

    def state(self) -> dict[str, Any]:
        """The session's explicit state, without the pipeline and what is bound from it: what a process that
        handles one call at a time (the Claude Code hook) saves between calls. Picklable when the stages'
        states are (the built-in ones are)."""
        return {name: getattr(self, name) for name in self.__slots__ if name not in _DERIVED}

    @classmethod
    def restore(cls, pipeline: Pipeline, state: Mapping[str, Any]) -> Session:
        """A session with ``state`` (from :meth:`state`) put back and bound to ``pipeline``, whose stages must
        be those the state was made with. Does not run ``__init__``, so the sinks see no new session (each
        begins its record of it here, from ``new_state``)."""
        missing = set(cls.__slots__) - _DERIVED - set(state)
        if missing:
            raise ValueError(f"session state lacks {sorted(missing)}")
        session = cls.__new__(cls)
        for name in cls.__slots__:
            if name not in _DERIVED:
                setattr(session, name, state[name])
        session.bind(pipeline)
        return session

    def bind(self, pipeline: Pipeline) -> None:
        """Run this session on ``pipeline`` from now on (same stages; e.g. with other sinks, which begin
        their record of the session here)."""
        self.pipeline = pipeline
        self._compliances = tuple(self.compliance.values())
        self.sink_states = self._new_sink_states()

    def queue(self, decision: Decision) -> None:
        """Hold a reminder, nudge or STOP for the next model request."""
        queued = self._queued
        if len(queued) >= MAX_QUEUED_MESSAGES and queued[0].kind is DecisionKind.STOP:
            # Full, and the oldest (which the deque would drop) ends the run: drop the oldest message instead.
            for old in queued:
                if old.kind is not DecisionKind.STOP:
                    queued.remove(old)
                    break
        queued.append(decision)

    # ------------------------------------------------------------------ internals

    def _classify(self, event: ToolEvent) -> Step:
        pipeline = self.pipeline
        action = call = None
        degraded = False
        one = pipeline.one_reading
        if one is not None:  # one reading of the call, for the action and the phases
            try:
                action, call = one[0].read(event, getattr(self.phase_state, "run", None))
            except Exception as exc:  # fail-open
                pipeline.errors.record(_where(one[0].read), exc)
                degraded = True
        elif pipeline.actions is not None:
            try:
                action = pipeline.actions(event)
            except Exception as exc:  # fail-open
                pipeline.errors.record(_where(pipeline.actions), exc)
                degraded = True
        try:
            if one is not None:
                classification = one[1].classify(event, self.phase_state, call)
            else:
                classification = pipeline.rules.classify(event, self.phase_state)
        except Exception as exc:  # a custom rule set failed: the call counts as general
            pipeline.errors.record(_where(pipeline.rules.classify), exc)
            classification = Classification((Command(event.tool or "unknown", GENERAL),))
            degraded = True
        step = Step(self.n_steps, event, classification, action)
        if degraded:
            step.degraded = True
        return step

    def _reclassify(self, step: Step) -> None:
        try:
            step.classification = self.pipeline.rules.classify(step.event, self.phase_state)
        except Exception as exc:  # keep the classification made before the call ran
            self.pipeline.errors.record(_where(self.pipeline.rules.classify), exc)
        self._score(step.classification)

    def _commit(self, step: Step, *, phases: bool = True) -> None:
        """Count the call as a step; with ``phases``, also commit its phase (else :meth:`_reclassify` does,
        once the result is known)."""
        if phases:
            self._score(step.classification)
        self.n_steps += 1
        if step.classification.unknown:
            self.unclassified.add(step.event.tool)
        if self.unclassified.calls:
            self.unclassified.notice(self.id, self.n_steps)

    def _score(self, classification: Classification) -> None:
        self.phase_state.apply(classification)
        roles = classification.roles
        if roles:
            lang = self.langutory
            at = lang.length
            lang.extend(roles)
            # A role every plan has seen before changes no score: skip the per-plan work (the usual case).
            seen = self._scored_roles
            for r in roles:
                if r not in seen:
                    for c in self._compliances:
                        c.add(r, at)
                    if len(seen) < MAX_SCORED_ROLES:
                        seen.add(r)
                at += 1

    def _finish(self, step: Step) -> None:
        step.done = True
        pipeline = self.pipeline
        errors = pipeline.errors
        # A detector sees only the steps of the action types it asks for (all, without a canonical action).
        t = step.action.type if isinstance(step.action, Action) else None
        for det, state in zip(pipeline.detectors, self.detector_states, strict=True):
            types = det.types
            if types is not None and t is not None and t not in types:
                continue
            try:
                f = det.observe(step, state)
            except Exception as exc:  # fail-open is the contract
                errors.record(_where(det.observe), exc)
                continue
            if f is not None:
                self._record_finding(step, f)
        for policy, pstate in zip(pipeline.policies, self.policy_states, strict=True):
            try:
                decisions = policy.after_tool(step, self, pstate)
            except Exception as exc:  # fail-open is the contract
                errors.record(_where(policy.after_tool), exc)
                continue
            if decisions:
                for d in decisions:
                    self._record_decision(step, d)
                    if d.injects or d.kind is DecisionKind.STOP:
                        self.queue(d)
        for sink, state in self.sink_states:
            try:
                sink.on_tool_end(self, step, state)
            except Exception as exc:  # fail-open is the contract
                errors.record(_where(sink.on_tool_end), exc)

    def _tool_start(self, step: Step) -> None:
        for sink, state in self.sink_states:
            try:
                sink.on_tool_start(self, step, state)
            except Exception as exc:  # fail-open is the contract
                self.pipeline.errors.record(_where(sink.on_tool_start), exc)

    def _new_sink_states(self) -> tuple[tuple[Sink, Any], ...]:
        """Each sink with its new state for this session. A sink whose ``new_state`` fails (counted) sits
        the session out: its hooks would only fail on the state it does not have."""
        states = []
        for sink in self.pipeline.sinks:
            try:
                states.append((sink, sink.new_state(self)))
            except Exception as exc:  # fail-open is the contract
                self.pipeline.errors.record(_where(sink.new_state), exc)
        return tuple(states)

    def _take_pending(self, event: ToolEvent) -> Step | None:
        if event.call_id is not None:
            return self._pending.pop(event.call_id, None)
        for key in self._pending:  # no ids: results arrive in call order
            if isinstance(key, int):
                return self._pending.pop(key)
        return None

    def _record_finding(self, step: Step | None, finding: Finding) -> None:
        if step is not None:
            step.findings = (*step.findings, finding)
        self.findings.append(finding)
        self.finding_counts[finding.detector] = self.finding_counts.get(finding.detector, 0) + 1
        for sink, state in self.sink_states:
            self._guarded(sink.on_finding, self, step, finding, state)

    def _record_decision(self, step: Step | None, decision: Decision) -> None:
        kind = str(decision.kind)  # the StrEnum's value (``.value`` runs Python code)
        self.decision_counts[kind] = self.decision_counts.get(kind, 0) + 1
        for sink, state in self.sink_states:
            self._guarded(sink.on_decision, self, step, decision, state)

    def _guarded(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run one stage; an internal error is counted and logged once, and the run goes on (fail-open)."""
        try:
            return fn(*args)
        except Exception as exc:  # fail-open is the contract
            self.pipeline.errors.record(_where(fn), exc)
            return None


#: Session metadata keys that name the run's working directory (loaders: ``cwd``; the Claude Code hook).
_WORK_DIR_KEYS = ("cwd", "claude_code.cwd")


def _work_dir(metadata: Mapping[str, Any]) -> str | None:
    for key in _WORK_DIR_KEYS:
        value = metadata.get(key)
        if isinstance(value, str) and value.startswith("/") and len(value) > 1:
            return value.rstrip("/")
    return None


def _where(fn: Callable[..., Any]) -> str:
    return getattr(fn, "__qualname__", None) or repr(fn)


def _merge_result(into: ToolEvent, src: ToolEvent) -> None:
    if src is into:
        return
    into.result = src.result if src.result is not None else into.result
    into.is_error = into.is_error or src.is_error
    into.exit_code = src.exit_code if src.exit_code is not None else into.exit_code
    into.end_time = src.end_time
    if src.metadata:
        into.metadata = {**into.metadata, **src.metadata}


def replay_events(
    events: Iterable[ToolEvent],
    pipeline: Pipeline,
    session_id: str = "replay",
    metadata: Mapping[str, Any] | None = None,
) -> Session:
    """Feed a finished run through a fresh session (offline); ``metadata``: the run's (its ``cwd`` is the
    directory the live rules judge paths against)."""
    session = pipeline.session(session_id, **(metadata or {}))
    for e in events:
        session.observe(e)
    return session
