"""The three extension points of the pipeline, in one place: ``Detector``, ``Policy`` and ``Sink``.

Each is a small class a user subclasses, in the manner of OpenTelemetry's ``SpanProcessor``: one instance
serves every session, and whatever it remembers about a session lives in the object its ``new_state()``
returns (the session keeps it, so state is per session, explicit and bounded). Name a subclass in config
(``detectors.custom``, ``policies.custom``, ``sinks.custom``), register it as an entry point (groups
``planguard.detectors``, ``planguard.policies``, ``planguard.sinks``), or pass it to
``Guard(config, detectors=…, policies=…, sinks=…)``; :mod:`planguard.plugins` resolves the names.

A detector whose state is a fact of the run other stages read (the agent's todo list, the effect labels)
says so with ``provides``; a stage reads it by name, ``session.facts("todo")``, and so depends on the fact,
not on which class keeps it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .actions.types import ActionType
    from .decisions import Decision
    from .events import MessageEvent
    from .findings import Finding
    from .phases.base import Classification
    from .session import Session, SessionSummary
    from .step import Step

__all__ = ["Detector", "Policy", "Sink"]


class Detector(ABC):
    """Implement ``observe`` (called once per executed step, result known) and optionally ``finish``.

    State lives in the object ``new_state`` returns, one per session, so one detector instance serves
    every session. ``observe`` must be amortised O(1) and must return a finding only when the predicate
    first holds or holds again after a reset — never once per step.
    """

    name: str = "detector"
    #: Action types of the steps the predicate needs (``None``: every step). When the pipeline classifies
    #: actions, the session shows the detector only those steps: most predicates concern two or three.
    types: frozenset[ActionType] | None = None
    #: The run fact this detector's state is, by name (``"todo"``, ``"effects"``): other stages read it with
    #: ``session.facts(name)``. ``None``: its state is its own.
    provides: str | None = None

    def new_state(self) -> Any:
        return None

    @abstractmethod
    def observe(self, step: Step, state: Any) -> Finding | None: ...

    def finish(self, session: Session, state: Any) -> Finding | None:
        """Predicates judged at the end of the run."""
        return None


class Policy:
    """Override the hooks you need. State lives in ``new_state()``'s object, one per session.

    ``before_tool`` may return a blocking decision (deny/stop) for the call about to run; the other hooks
    return decisions to deliver (reminders and nudges reach the model at its next request).
    """

    name: str = "policy"
    #: The tool patterns (``ToolMatcher`` s) the policy judges calls by. A store kept without content records
    #: their argument predicates' verdicts for each call, so that a replay decides as the live run did.
    tool_matchers: tuple[Any, ...] = ()

    def new_state(self) -> Any:
        return None

    def before_tool(self, step: Step, session: Session, state: Any) -> Decision | None:
        return None

    def after_tool(self, step: Step, session: Session, state: Any) -> Iterable[Decision]:
        return ()

    def before_model(self, session: Session, state: Any) -> Iterable[Decision]:
        return ()

    def on_message(
        self, message: MessageEvent, classification: Classification, session: Session, state: Any
    ) -> Iterable[Decision]:
        """A conversation turn the plan matched (``classification`` holds its phase): a phase seen outside
        any tool call, such as the user's confirmation. Decisions are delivered as ``after_tool``'s are."""
        return ()

    def on_end(self, session: Session, state: Any) -> Iterable[Decision]:
        return ()


class Sink:
    """Where a session's record goes (telemetry, the local store, a console timeline, your own).

    One instance serves every session. What it keeps about one session (its span, its file, the decisions
    waiting for a call's end) lives in the object ``new_state(session)`` returns: the session creates it
    when it starts (or is restored in another process), passes it to every hook, and drops it when it ends,
    so a sink needs no table of sessions and no bound of its own. ``new_state`` gets the session because a
    sink's state usually begins its record (the session span, the file's header); ``on_session_start``
    is the event "a new run began", which a restored session does not repeat. A sink that keeps nothing per
    session leaves ``new_state`` as it is (``None``).

    Each hook runs inline on the agent's path, so a sink does only cheap work there and hands anything slow
    (I/O, exporting) to a bounded queue and a background worker, as OpenTelemetry's batch processor does.
    """

    def new_state(self, session: Session) -> Any:
        return None

    def on_session_start(self, session: Session, state: Any) -> None: ...

    def on_tool_start(self, session: Session, step: Step, state: Any) -> None: ...

    def on_tool_end(self, session: Session, step: Step, state: Any) -> None: ...

    def on_finding(self, session: Session, step: Step | None, finding: Finding, state: Any) -> None: ...

    def on_decision(self, session: Session, step: Step | None, decision: Decision, state: Any) -> None: ...

    def on_message(
        self, session: Session, message: MessageEvent, classification: Classification, state: Any
    ) -> None:
        """A conversation turn the plan matched. Its text is content: keep it only where content may go."""

    def on_session_end(self, session: Session, summary: SessionSummary, state: Any) -> None: ...

    def shutdown(self) -> None:
        """Flush and stop background work."""
