"""``Guard``: the one object an integration holds. It owns the config, the pipeline and the live sessions.

Integrations call four hooks per session id, sync or async::

    decision = guard.before_tool(sid, event)      # Decision: allow, or deny/stop with a message for the model
    step = guard.after_tool(sid, event)           # record the result (detectors and policies run)
    messages = guard.before_model(sid)            # reminders/nudges to add to the model request
    summary = guard.end(sid)                      # final findings and metrics

Every hook is fail-open: an internal error is counted in ``guard.errors`` (logged once per kind) and the
hook answers as if planguard were absent (ALLOW / None / []), except that a gate configured fail-closed
denies its tool. Sessions are kept in a registry bounded by ``sessions.max_sessions`` (least recently used
ended first, by the CLOCK approximation of LRU); one idle for ``sessions.idle_timeout_s`` (wall clock) is
ended (its summary still reaches the sinks, marked ``planguard.evicted``) and dropped.

Concurrency: a registry lock guards changes to the session table (lookups are lock-free) and a per-session
lock serialises each session's hooks; neither is held across I/O or ``await``. The async hooks take the
session lock without blocking when it is free (the normal case; the work is microseconds) and otherwise
wait in a worker thread, so the event loop is never blocked behind another thread.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any, TypeVar

from .actions.config import build_classifier
from .config import Config, default_config, load_config
from .decisions import ALLOW, Decision, is_reserved_policy_name
from .detectors import build_detectors
from .errors import ErrorCounter
from .events import MessageEvent, ToolEvent
from .experiment import build_experiment
from .phases import Classification, get_rules
from .phases.registry import rules_for
from .plugins import load_plugin
from .policies.config import build_policies
from .policies.gates import Gate
from .session import Pipeline, Session, SessionSummary
from .sinks.drops import DropCounter
from .sinks.webhook import WebhookSink
from .sinks.worker import restart_in_forked_child, set_sigterm_flush
from .stages import Detector, Policy, Sink
from .step import Step

__all__ = ["EVICTED_KEY", "Guard"]

#: Session metadata key set (to "idle", "capacity" or "shutdown") before a session the guard ends itself.
EVICTED_KEY = "planguard.evicted"

_T = TypeVar("_T")
#: The clock idle timeouts are measured with; sessions stamp ``last_activity`` with it in every hook.
_now = time.time
_BUSY: Any = object()
#: Hook calls between two checks whether an idle sweep is due (keeps the clock read off the hot path).
_SWEEP_CHECK_EVERY = 64


class _Entry:
    __slots__ = ("lock", "session", "used")

    def __init__(self, session: Session, now: float = 0.0):
        self.session = session
        self.lock = threading.Lock()
        self.used = False  # CLOCK reference bit: set on every use after the first, cleared by the hand


class Guard:
    """Live plan monitoring for many concurrent agent sessions (see the module docstring).

    ``tracer_provider`` / ``meter_provider``: where planguard's spans and metrics go. Omitted, planguard uses
    the application's global providers once it has set them, and otherwise builds its own from the
    standard ``OTEL_*`` variables (see :func:`planguard.sinks.otel.build_sinks`); pass the application's
    providers to keep planguard's telemetry with the rest of it without making them global.
    """

    def __init__(
        self,
        config: Config | None = None,
        *,
        detectors: Sequence[Detector] = (),
        policies: Sequence[Policy] = (),
        sinks: Sequence[Sink] = (),
        tracer_provider: Any = None,
        meter_provider: Any = None,
    ):
        """``detectors``, ``policies`` and ``sinks`` run after the ones the config builds (built-ins, then
        ``custom`` entries), in the order given."""
        self.config = config if config is not None else default_config()
        self.errors = ErrorCounter()
        self.enabled = self.config.enabled
        self.evicted = 0  # sessions ended by the guard (idle or over capacity)
        self._sessions: OrderedDict[str, _Entry] = OrderedDict()
        self._lock = threading.Lock()
        self._closed = False
        self._max = self.config.sessions.max_sessions
        self._idle = self.config.sessions.idle_timeout_s
        # When an idle sweep is next due (never without an idle timeout); hook calls since the last check.
        self._sweep_at = float("inf") if self._idle is None else 0.0
        self._ticks = 0
        if not self.config.flush_on_sigterm:  # before the sinks' workers are made (they install it)
            set_sigterm_flush(False)
        self.pipeline = self._build_pipeline(tracer_provider, meter_provider, detectors, policies, sinks)
        self._tool_span_sinks: tuple[Any, ...] = tuple(
            s for s in self.pipeline.sinks if getattr(s, "adopts_tool_spans", False)
        )
        self._watching_tools = False
        self._fail_closed: tuple[Gate, ...] = tuple(
            p for p in self.pipeline.policies if isinstance(p, Gate) and p.fail_closed
        )

        restart_in_forked_child(self)

    def after_fork_in_child(self) -> None:
        """A forked child starts with no sessions: the ones it inherited are the parent's to record and end
        (ended in the child too, each got a second store file and end record)."""
        self._sessions = OrderedDict()
        self._lock = threading.Lock()

    @classmethod
    def from_file(cls, path: str | Path, **kw: Any) -> Guard:
        """A guard configured from a YAML/TOML/JSON file (environment overrides applied)."""
        return cls(load_config(path), **kw)

    # ------------------------------------------------------------------ construction

    def _build_pipeline(
        self,
        tracer_provider: Any,
        meter_provider: Any,
        user_detectors: Sequence[Detector],
        user_policies: Sequence[Policy],
        user_sinks: Sequence[Sink],
    ) -> Pipeline:
        cfg = self.config
        plans = cfg.plans
        if not cfg.enabled:
            return Pipeline(rules=get_rules(cfg.rules), plans=plans, errors=self.errors)
        # The tool vocabulary reads every call once, for actions, phases and detectors alike: a plan that
        # declares its phases is classified by its matchers over it too.
        actions = build_classifier(cfg.tools)
        detectors = build_detectors(cfg.detectors, scaffold=cfg.tools.scaffold)
        rules = rules_for(plans[0], cfg.rules, actions)
        experiment = cfg.experiment
        exp_policy, exp_sink = (
            build_experiment(
                experiment, errors=self.errors, tracer_provider=tracer_provider, spans=cfg.telemetry.enabled
            )
            if experiment is not None and experiment.enabled
            else (None, None)
        )
        policies = build_policies(
            cfg.policies, plans[0], fail_closed_gates=cfg.fail_closed_gates, experiment=exp_policy
        )
        sinks: list[Sink] = [exp_sink] if exp_sink is not None else []
        if cfg.telemetry.enabled or cfg.store.enabled:
            try:
                from .sinks.otel import build_sinks

                sinks.extend(
                    build_sinks(cfg.telemetry, cfg.store, tracer_provider, meter_provider, errors=self.errors)
                )
            except Exception as exc:  # telemetry must never stop the agent
                self.errors.record("Guard.build_sinks", exc)
        webhook = cfg.webhook
        if webhook.enabled and webhook.url:
            sinks.append(WebhookSink(webhook))
        sinks.extend(
            load_plugin("sinks", spec, f"sinks.custom.{i}") for i, spec in enumerate(cfg.sinks.custom)
        )
        sinks.extend(user_sinks)

        for policy in (*policies[len(policies) - len(cfg.policies.custom) :], *user_policies):
            name = getattr(policy, "name", "")
            if isinstance(name, str) and is_reserved_policy_name(name):
                # Sinks tell planguard's own messages from content by the policy's name.
                kind = type(policy).__name__
                raise ValueError(f"custom policy {kind}: the name {name!r} is one of planguard's own")
        return Pipeline(
            rules=rules,
            plans=plans,
            actions=actions,
            detectors=(*detectors, *user_detectors),
            policies=(*policies, *user_policies),
            sinks=tuple(sinks),
            errors=self.errors,
        )

    # ------------------------------------------------------------------ registry

    def session(self, session_id: str, **metadata: Any) -> Session:
        """The live session ``session_id``, created on first use (with ``metadata``).

        The returned object is not thread-safe by itself; call the guard's hooks to use it concurrently.
        """
        entry = self._entry(session_id, metadata)
        if metadata:
            with entry.lock:
                entry.session.metadata.update(metadata)
        return entry.session

    # The registry is an OrderedDict managed as a CLOCK (second-chance) approximation of LRU: a hook only
    # sets the entry's reference bit — a lock-free dict read and an attribute store, atomic under the GIL —
    # and the eviction hand, under the registry lock, moves referenced entries to the back (clearing the
    # bit) and ends the first unreferenced one. Amortised O(1); no lock and no clock read per hook.

    def _entry(self, session_id: str, metadata: dict[str, Any] | None = None) -> _Entry:
        entry = self._sessions.get(session_id)
        if entry is not None:
            entry.used = True
            self._ticks += 1  # racy increments only shift when the next sweep check happens
            if self._ticks % _SWEEP_CHECK_EVERY:
                return entry
        return self._entry_slow(session_id, metadata)

    def _entry_slow(self, session_id: str, metadata: dict[str, Any] | None) -> _Entry:
        """Create the session if needed; end sessions over capacity, and idle ones when a sweep is due."""
        evicted: list[tuple[_Entry, str]] = []
        now = _now()
        with self._lock:
            sessions = self._sessions
            entry = sessions.get(session_id)
            if entry is None:
                entry = _Entry(self.pipeline.session(session_id, **(metadata or {})))
                sessions[session_id] = entry
                self._evict_over_capacity(evicted, session_id)
            else:
                entry.used = True
            if now >= self._sweep_at and self._idle is not None:
                cutoff = now - self._idle
                for sid in [sid for sid, e in sessions.items() if e.session.last_activity <= cutoff]:
                    if sid != session_id:
                        evicted.append((sessions.pop(sid), "idle"))
                # A scan is O(sessions): do it at most every idle/10 (at least every 60 s, at most every 1 s).
                self._sweep_at = now + min(60.0, max(1.0, self._idle / 10))
        for old, reason in evicted:
            self._end_entry(old, reason)
        return entry

    def _evict_over_capacity(self, evicted: list[tuple[_Entry, str]], keep: str) -> None:
        sessions = self._sessions
        while len(sessions) > self._max:
            sid, first = next(iter(sessions.items()))
            if first.used or sid == keep:  # the session being created or adopted is never the victim
                first.used = False
                sessions.move_to_end(sid)
            else:
                del sessions[sid]
                evicted.append((first, "capacity"))

    def _end_entry(self, entry: _Entry, reason: str | None) -> SessionSummary | None:
        try:
            with entry.lock:
                if entry.session.ended:
                    return None
                if reason is not None:
                    entry.session.metadata[EVICTED_KEY] = reason
                    self.evicted += 1
                return entry.session.end()
        except Exception as exc:
            self.errors.record("Guard.end", exc)
            return None

    def adopt(self, session: Session) -> None:
        """Register an existing session (e.g. restored from a snapshot) under its id.

        A live session with the same id is replaced without being ended. Capacity is enforced as for new
        sessions. ``session.pipeline`` should be this guard's pipeline (stage states are positional).
        """
        evicted: list[tuple[_Entry, str]] = []
        with self._lock:
            self._sessions.pop(session.id, None)
            self._sessions[session.id] = _Entry(session)
            self._evict_over_capacity(evicted, session.id)
        for old, reason in evicted:
            self._end_entry(old, reason)

    def forget(self, session_id: str, session: Session | None = None) -> Session | None:
        """Take a session out of the registry without ending it (its owner keeps it elsewhere, e.g. the
        Claude Code hook on disk); only if it is ``session``, when given. Returns what was removed."""
        with self._lock:
            entry = self._sessions.get(session_id)
            if entry is None or (session is not None and entry.session is not session):
                return None
            del self._sessions[session_id]
        return entry.session

    def sweep(self) -> int:
        """End and drop idle sessions now (the hooks also do this as they run). Returns how many."""
        before = self.evicted
        if self._idle is not None:
            with self._lock:
                cutoff = _now() - self._idle
                idle = [sid for sid, e in self._sessions.items() if e.session.last_activity <= cutoff]
                entries = [self._sessions.pop(sid) for sid in idle]
            for e in entries:
                self._end_entry(e, "idle")
        return self.evicted - before

    def __len__(self) -> int:
        return len(self._sessions)

    def __contains__(self, session_id: object) -> bool:
        return session_id in self._sessions

    # ------------------------------------------------------------------ sync hooks

    def _call(self, session_id: str, op: Callable[[Session, Any], _T], arg: Any, blocking: bool = True) -> _T:
        for _ in range(3):
            entry = self._entry(session_id)
            if not entry.lock.acquire(blocking):
                return _BUSY  # type: ignore[no-any-return]
            try:
                if not entry.session.ended:  # else: ended (evicted) between lookup and lock: look up again
                    return op(entry.session, arg)
            finally:
                entry.lock.release()
        raise RuntimeError(f"session {session_id!r} kept ending concurrently")

    def before_tool(self, session_id: str, event: ToolEvent) -> Decision:
        """Ask before a tool call runs. A blocking decision (``decision.blocks``) means: do not run it."""
        if not self.enabled:
            return ALLOW
        try:
            return self._call(session_id, Session.before_tool, event)
        except Exception as exc:  # fail-open is the contract
            return self._failed("Guard.before_tool", exc, event)

    def after_tool(self, session_id: str, event: ToolEvent) -> Step | None:
        """Record a finished tool call (with its result)."""
        if not self.enabled:
            return None
        try:
            return self._call(session_id, Session.after_tool, event)
        except Exception as exc:
            self.errors.record("Guard.after_tool", exc)
            return None

    def before_model(self, session_id: str) -> list[Decision]:
        """Reminders and nudges to add to the model request about to be sent (counts the model call)."""
        if not self.enabled:
            return []
        try:
            return self._call(session_id, _before_model, None)
        except Exception as exc:
            self.errors.record("Guard.before_model", exc)
            return []

    def observe_message(
        self, session_id: str, role: str, text: str, **metadata: Any
    ) -> Classification | None:
        """A conversation turn of the session: ``role`` ``user`` (the user's or a simulated user's reply) or
        ``assistant`` (its text to the user). Not a step; when the plan matches it (``match: {message:
        ...}``), the phase it shows is observed and returned. Integrations call it only when
        :attr:`observes_messages`."""
        if not self.enabled:
            return None
        try:
            return self._call(session_id, _observe_message, MessageEvent(role, text, _now(), metadata))
        except Exception as exc:
            self.errors.record("Guard.observe_message", exc)
            return None

    async def aobserve_message(
        self, session_id: str, role: str, text: str, **metadata: Any
    ) -> Classification | None:
        if not self.enabled:
            return None
        message = MessageEvent(role, text, _now(), metadata)
        try:
            out = self._call(session_id, _observe_message, message, blocking=False)
        except Exception as exc:
            self.errors.record("Guard.observe_message", exc)
            return None
        if out is _BUSY:
            return await asyncio.to_thread(self.observe_message, session_id, role, text, **metadata)
        return out

    @property
    def observes_messages(self) -> bool:
        """Whether the plan matches conversation turns: integrations hand over the conversation only then."""
        return self.enabled and bool(getattr(self.pipeline.rules, "matches_messages", False))

    def end(self, session_id: str) -> SessionSummary | None:
        """End the session: final findings and metrics. None if there is no such live session."""
        if not self.enabled:
            return None
        try:
            with self._lock:
                entry = self._sessions.pop(session_id, None)
            return None if entry is None else self._end_entry(entry, None)
        except Exception as exc:
            self.errors.record("Guard.end", exc)
            return None

    def tool_scope(self, event: ToolEvent) -> AbstractContextManager[None]:
        """Wrap a tool call's execution in this (between ``before_tool`` and ``after_tool``) so that a tool
        span an instrumented framework opens for it, handed to
        :func:`planguard.sinks.otel.nesting.adopt_tool_span` while it records, carries planguard's
        attributes and events instead of planguard opening a second one (``telemetry.tool_spans``). A no-op
        when no sink wants it."""
        if not self._watching_tools:
            return nullcontext()
        from .sinks.otel.nesting import tool_scope

        return tool_scope(event, self._tool_span_sinks)

    def watch_tool_spans(self) -> None:
        """Called once by an integration that runs its tools in :meth:`tool_scope` and hands over its
        framework's tool spans (the LangChain one does). Integrations that never use scopes leave this off
        and pay nothing for it. Nothing is added to the application's providers."""
        if self._watching_tools or not self._tool_span_sinks:
            return
        for sink in self._tool_span_sinks:
            sink.watch_tool_spans()
        self._watching_tools = True

    def _failed(self, where: str, exc: BaseException, event: ToolEvent) -> Decision:
        self.errors.record(where, exc)
        return self.failure_decision(event)

    @property
    def fails_closed(self) -> bool:
        """Whether some gate denies its calls when planguard cannot evaluate them."""
        return bool(self._fail_closed)

    def failure_decision(self, event: ToolEvent | None) -> Decision:
        """What a call gets when planguard could not evaluate it (its own error, or a caller's — a hook
        whose state cannot be loaded): the denial of a fail-closed gate matching it, else ALLOW. ``None``:
        the call itself could not be read, so any fail-closed gate might cover it and denies it."""
        for gate in self._fail_closed:
            if event is None:
                return gate.error_decision(ToolEvent(tool=""))
            try:
                if not gate.matches(event):
                    continue
            except Exception as match_exc:  # cannot tell: a closed gate stays closed
                self.errors.record(f"{gate.name}.matches", match_exc)
            return gate.error_decision(event)
        return ALLOW

    # ------------------------------------------------------------------ async hooks

    async def abefore_tool(self, session_id: str, event: ToolEvent) -> Decision:
        if not self.enabled:
            return ALLOW
        try:
            d = self._call(session_id, Session.before_tool, event, blocking=False)
        except Exception as exc:
            return self._failed("Guard.before_tool", exc, event)
        return await asyncio.to_thread(self.before_tool, session_id, event) if d is _BUSY else d

    async def aafter_tool(self, session_id: str, event: ToolEvent) -> Step | None:
        if not self.enabled:
            return None
        try:
            s = self._call(session_id, Session.after_tool, event, blocking=False)
        except Exception as exc:
            self.errors.record("Guard.after_tool", exc)
            return None
        return await asyncio.to_thread(self.after_tool, session_id, event) if s is _BUSY else s

    async def abefore_model(self, session_id: str) -> list[Decision]:
        if not self.enabled:
            return []
        try:
            out = self._call(session_id, _before_model, None, blocking=False)
        except Exception as exc:
            self.errors.record("Guard.before_model", exc)
            return []
        return await asyncio.to_thread(self.before_model, session_id) if out is _BUSY else out

    async def aend(self, session_id: str) -> SessionSummary | None:
        if not self.enabled:
            return None
        try:
            with self._lock:
                entry = self._sessions.pop(session_id, None)
            if entry is None:
                return None
            if entry.lock.acquire(blocking=False):
                entry.lock.release()  # free now; _end_entry takes it again at once
                return self._end_entry(entry, None)
            return await asyncio.to_thread(self._end_entry, entry, None)
        except Exception as exc:
            self.errors.record("Guard.end", exc)
            return None

    # ------------------------------------------------------------------ lifecycle

    def shutdown(self, *, end_sessions: bool = True) -> None:
        """End the live sessions (their summaries reach the sinks), then flush and stop every sink."""
        if self._closed:
            return
        self._closed = True
        if end_sessions:
            with self._lock:
                entries = list(self._sessions.values())
                self._sessions.clear()
            for e in entries:
                self._end_entry(e, "shutdown")
        for sink in self.pipeline.sinks:
            try:
                sink.shutdown()
            except Exception as exc:
                self.errors.record(f"{type(sink).__name__}.shutdown", exc)

    def __enter__(self) -> Guard:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.shutdown()

    def stats(self) -> dict[str, Any]:
        """Live sessions, sessions evicted, internal errors, what the sinks dropped (by reason: a full store
        queue, a failed write, an export that failed), and each sink's counters when it has them."""
        out: dict[str, Any] = {
            "sessions": len(self._sessions),
            "evicted": self.evicted,
            "errors": self.errors.total,
        }
        dropped: dict[str, int] = {}
        counters = {
            id(d): d
            for sink in self.pipeline.sinks
            if isinstance(d := getattr(sink, "drops", None), DropCounter)
        }
        for counter in counters.values():
            for reason, n in counter.counts.items():
                dropped[reason] = dropped.get(reason, 0) + n
        out["dropped"] = dropped
        for sink in self.pipeline.sinks:
            s = getattr(sink, "stats", None)
            if isinstance(s, dict):
                out[type(sink).__name__] = dict(s)
        return out


def _before_model(session: Session, _: Any) -> list[Decision]:
    return session.before_model()


def _observe_message(session: Session, message: MessageEvent) -> Classification | None:
    return session.observe_message(message)
