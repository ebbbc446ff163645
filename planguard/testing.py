"""Helpers for testing code that uses planguard — what ``structlog.testing`` and OpenTelemetry's
``InMemorySpanExporter`` give their users.

* :class:`RecordingSink` keeps every step, finding, decision and summary in memory, thread-safe, with
  small query helpers;
* :func:`guard_for_tests` builds a :class:`~planguard.guard.Guard` with telemetry and the store off and a
  ``RecordingSink`` attached;
* :class:`ScriptedDetector` produces findings on chosen steps, to test responses without real patterns;
* :func:`drive` runs a scripted agent loop (model call, tool call, result) through a guard.

Example::

    guard, rec = guard_for_tests(plan="plan")
    drive(guard, "s1", [ToolEvent.shell("submit")])
    assert rec.decisions_of("deny")
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from .config import Config
from .decisions import Decision, DecisionKind
from .events import ToolEvent
from .findings import Finding
from .guard import Guard
from .session import Session, SessionSummary
from .sinks import Sink
from .stages import Detector
from .step import Step

__all__ = ["Recorded", "RecordingSink", "ScriptedDetector", "Turn", "drive", "guard_for_tests"]


@dataclass(frozen=True, slots=True)
class Recorded:
    """One finding or decision as a sink saw it."""

    session_id: str
    step: int | None  # step index, None for session-level (before_model, end)
    item: Finding | Decision


class RecordingSink(Sink):
    """Captures everything in memory. Safe to share across threads; ``clear()`` between test phases."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.started: list[str] = []
        self.steps: list[tuple[str, Step]] = []
        self.findings: list[Recorded] = []
        self.decisions: list[Recorded] = []
        self.summaries: dict[str, SessionSummary] = {}
        self.shut_down = False

    def on_session_start(self, session: Session, state: None) -> None:
        with self._lock:
            self.started.append(session.id)

    def on_tool_end(self, session: Session, step: Step, state: None) -> None:
        with self._lock:
            self.steps.append((session.id, step))

    def on_finding(self, session: Session, step: Step | None, finding: Finding, state: None) -> None:
        with self._lock:
            self.findings.append(Recorded(session.id, None if step is None else step.index, finding))

    def on_decision(self, session: Session, step: Step | None, decision: Decision, state: None) -> None:
        with self._lock:
            self.decisions.append(Recorded(session.id, None if step is None else step.index, decision))

    def on_session_end(self, session: Session, summary: SessionSummary, state: None) -> None:
        with self._lock:
            self.summaries[session.id] = summary

    def shutdown(self) -> None:
        self.shut_down = True

    # ------------------------------------------------------------------ queries

    def decisions_of(
        self,
        kind: DecisionKind | str | None = None,
        *,
        session_id: str | None = None,
        policy: str | None = None,
    ) -> list[Decision]:
        """Decisions recorded, filtered by kind (``"deny"``), session and deciding policy."""
        with self._lock:
            items = list(self.decisions)
        return [
            d
            for r in items
            if isinstance(d := r.item, Decision)
            and (kind is None or d.kind == kind)
            and (session_id is None or r.session_id == session_id)
            and (policy is None or d.policy == policy)
        ]

    def findings_of(self, kind: str | None = None, *, session_id: str | None = None) -> list[Finding]:
        """Findings recorded, filtered by kind (detector name) and session."""
        with self._lock:
            items = list(self.findings)
        return [
            f
            for r in items
            if isinstance(f := r.item, Finding)
            and (kind is None or f.detector == kind)
            and (session_id is None or r.session_id == session_id)
        ]

    def steps_of(self, session_id: str) -> list[Step]:
        with self._lock:
            return [s for sid, s in self.steps if sid == session_id]

    def clear(self) -> None:
        with self._lock:
            self.started.clear()
            self.steps.clear()
            self.findings.clear()
            self.decisions.clear()
            self.summaries.clear()


def guard_for_tests(
    config: Config | dict[str, Any] | None = None,
    *,
    detectors: Sequence[Detector] | None = None,
    sinks: Sequence[Sink] = (),
    **overrides: Any,
) -> tuple[Guard, RecordingSink]:
    """A guard for tests: telemetry and store off, a :class:`RecordingSink` attached.

    ``config`` is a :class:`Config` or a config dict (as in the YAML file); ``overrides`` set top-level keys
    (``plan="no_reproduce"``, ``policies={...}``). ``detectors`` replaces the configured detectors (e.g. with
    :class:`ScriptedDetector` s). The environment is not read.
    """
    if isinstance(config, Config):
        data = config.model_dump(by_alias=True, exclude_unset=True)
    else:
        data = dict(config or {})
    data.update(overrides)
    for section in ("telemetry", "store"):
        given = data.setdefault(section, {})
        if isinstance(given, dict):
            data[section] = {**given, "enabled": False}
    cfg = Config.model_validate(data)
    rec = RecordingSink()
    guard = Guard(cfg, sinks=[rec, *sinks])
    if detectors is not None:
        guard.pipeline = replace(guard.pipeline, detectors=tuple(detectors))
    return guard, rec


class ScriptedDetector(Detector):
    """Fires a finding of kind ``name`` on each step where ``when(step)`` is true (or at the listed indices).

    Like a real detector it fires once per episode: after firing it stays quiet until ``when`` has been false
    for a step (set ``episodes=False`` to fire on every matching step).
    """

    def __init__(
        self,
        name: str,
        when: Callable[[Step], bool] | Iterable[int],
        *,
        evidence: str = "scripted finding",
        episodes: bool = True,
    ):
        self.name = name
        if callable(when):
            self._when: Callable[[Step], bool] = when
        else:
            at = frozenset(when)
            self._when = lambda step: step.index in at
        self._evidence = evidence
        self._episodes = episodes

    def new_state(self) -> list[bool]:
        return [False]  # inside an episode

    def observe(self, step: Step, state: list[bool]) -> Finding | None:
        if not self._when(step):
            state[0] = False
            return None
        if self._episodes and state[0]:
            return None
        state[0] = True
        return Finding(self.name, step.index, step.index, self._evidence)


@dataclass(slots=True)
class Turn:
    """What one scripted agent turn produced."""

    messages: list[Decision]  # injected before the model call
    decision: Decision  # the answer to the tool call
    step: Step | None  # None when the call was blocked (it never ran)


def drive(
    guard: Guard,
    session_id: str,
    events: Iterable[ToolEvent],
    *,
    results: Callable[[ToolEvent], ToolEvent | None] | None = None,
    end: bool = False,
) -> list[Turn]:
    """Run ``events`` as an agent loop: ``before_model``, ``before_tool``, then (if allowed) ``after_tool``.

    ``results(event)`` may return the event with its result filled in (default: the event as given).
    A STOP decision ends the loop, as an integration would end the run. ``end=True`` ends the session.
    """
    turns: list[Turn] = []
    for ev in events:
        messages = guard.before_model(session_id)
        decision = guard.before_tool(session_id, ev)
        step = None
        if not decision.blocks:
            done = results(ev) if results is not None else None
            step = guard.after_tool(session_id, done if done is not None else ev)
        turns.append(Turn(messages, decision, step))
        if decision.kind is DecisionKind.STOP:
            break
    if end:
        guard.end(session_id)
    return turns
