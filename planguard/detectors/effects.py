"""The effect-tracker stage: labels each step's effect and tracks milestones; never reports a finding.

It is a :class:`Detector` because that is the pipeline's per-session, post-result extension point. Put
it first in the detector tuple. Each step gets its provisional effect (``step.effect`` when the ``Step``
type has that field; always via :meth:`EffectTracker.effect_of`); when a later write reverts an earlier
one, or the run ends and a read turns out task-relevant, the earlier step is re-labelled in place
(bounded: the tracker keeps references only to steps it may still re-label).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..actions.anchors import AnchorSet
from ..actions.effects import EffectLabeler
from ..actions.types import Action, Effect
from ..findings import Finding
from ..milestones import Milestone, MilestoneTracker
from ._common import action_of
from .base import Detector

if TYPE_CHECKING:
    from ..session import Session
    from ..step import Step

__all__ = ["EffectState", "EffectTracker", "effect_state", "set_anchors"]


class EffectState:
    __slots__ = ("labeler", "last", "milestones", "n", "recent")

    RECENT = 64

    def __init__(self, anchors: AnchorSet | None, max_pending_reads: int = 512) -> None:
        self.labeler = EffectLabeler(anchors, max_pending_reads=max_pending_reads)
        self.milestones = MilestoneTracker(anchors)
        self.recent: deque[tuple[int, Effect]] = deque(maxlen=self.RECENT)
        self.last: Effect | None = None
        self.n = 0

    def set_anchors(self, anchors: AnchorSet | None) -> None:
        """Use ``anchors`` from now on (call before the first step to cover the whole run)."""
        self.labeler.anchors = anchors
        self.milestones.anchors = anchors
        self.milestones._unwritten = set(anchors.files) if anchors is not None else None

    def effect_of(self, index: int) -> Effect | None:
        """Current label of a recent step (the last 64), revisions included."""
        revised = self.labeler.revisions.get(index)
        if revised is not None:
            return revised
        for i, eff in reversed(self.recent):
            if i == index:
                return eff
        return None

    @property
    def revisions(self) -> dict[int, Effect]:
        return self.labeler.revisions

    def milestone_result(self) -> tuple[Milestone, ...]:
        return self.milestones.result(self.n)


class EffectTracker(Detector):
    """Effect labels and milestones as a pipeline stage. ``anchors`` apply to every session (rarely what
    you want live; use :func:`set_anchors` per session)."""

    name = "effects"

    def __init__(
        self, anchors: AnchorSet | str | Iterable[str] | None = None, *, max_pending_reads: int = 512
    ) -> None:
        self.max_pending_reads = max_pending_reads
        self.anchors = (
            anchors if anchors is None or isinstance(anchors, AnchorSet) else AnchorSet.parse(anchors)
        )
        self._settable: bool | None = None

    def new_state(self) -> EffectState:
        return EffectState(self.anchors, self.max_pending_reads)

    def observe(self, step: Step, state: EffectState) -> Finding | None:
        action = step.action
        if action.__class__ is not Action:
            action = action_of(step)
        index = step.index
        effect = state.labeler.label(index, action, step.event, step)
        state.recent.append((index, effect))
        state.last = effect
        if index >= state.n:
            state.n = index + 1
        milestones = state.milestones
        first = milestones.first
        # Once every milestone that can be reached has been (M4 and M5 without anchors, all five with),
        # the tracker would only count steps; count them here and skip the call.
        if len(first) == 5 or (len(first) == 2 and milestones.anchors is None):
            if index >= milestones.n:
                milestones.n = index + 1
        else:
            milestones.observe(index, action, effect)
        settable = self._settable
        if settable is None:  # whether the Step type has an ``effect`` field (checked once)
            settable = self._settable = hasattr(type(step), "effect")
        if settable:
            step.effect = effect
        return None

    def finish(self, session: Session, state: EffectState) -> Finding | None:
        state.labeler.finish()
        return None


def effect_state(session: Session) -> EffectState | None:
    """The session's effect-tracker state, when its pipeline has an :class:`EffectTracker`."""
    for det, st in zip(session.pipeline.detectors, session.detector_states, strict=False):
        if isinstance(det, EffectTracker):
            return st  # type: ignore[no-any-return]
    return None


def set_anchors(session: Session, anchors: AnchorSet | str | Iterable[str] | None) -> bool:
    """Give one session its anchor set (gold-patch files: a unified diff or a file list).

    Enables ``OFF_ANCHOR`` labels and milestones M1–M3 for that session. Returns False when the pipeline
    has no effect tracker.
    """
    st = effect_state(session)
    if st is None:
        return False
    parsed: Any = anchors if anchors is None or isinstance(anchors, AnchorSet) else AnchorSet.parse(anchors)
    st.set_anchors(parsed)
    return True
