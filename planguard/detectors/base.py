"""The detector extension point: a streaming predicate over steps with explicit, bounded state."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

from ..findings import Finding

if TYPE_CHECKING:
    from ..actions.types import ActionType
    from ..session import Session
    from ..step import Step

__all__ = ["Detector"]


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

    def new_state(self) -> Any:
        return None

    @abstractmethod
    def observe(self, step: Step, state: Any) -> Finding | None: ...

    def finish(self, session: Session, state: Any) -> Finding | None:
        """Predicates judged at the end of the run."""
        return None
