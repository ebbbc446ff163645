"""The effect-tracker stage: labels each step's effect and tracks milestones; never reports a finding.

It is a :class:`Detector` because that is the pipeline's per-session, post-result extension point. Put
it first in the detector tuple. Each step gets its provisional effect (``step.effect`` when the ``Step``
type has that field; always via :meth:`EffectTracker.effect_of`); when a later write reverts an earlier
one, or the run ends and a read turns out task-relevant, the earlier step is re-labelled in place
(bounded: the tracker keeps references only to steps it may still re-label).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..actions.anchors import AnchorSet
from ..actions.effects import EffectLabeler
from ..actions.types import Action, ActionType, Effect, WriteKind
from ..findings import Finding
from ..stages import Detector
from ._common import action_of
from .milestones import Milestone, MilestoneTracker

if TYPE_CHECKING:
    from ..session import Session
    from ..step import Step

__all__ = ["EffectState", "EffectTracker", "RunFacts", "set_anchors"]


#: Files a run writes to hand in its result rather than to change the code: the patch file of a
#: submission (mini-swe-agent's ``git diff > patch.txt``, ``git diff > model.patch``).
_SUBMISSION_FILE = re.compile(r"(?:^|/)(?:[^/]*\.(?:patch|diff)|patch\.txt|diff\.txt)$")
#: Work steps (not submission artifacts) remembered for the final-actions window; a longer tail setting
#: falls back to counting every step.
_RECENT_WORK = 64
_MAX_ARTIFACTS = 32


class RunFacts:
    """What the end-of-run predicates (NoTailValidation, UnsupportedCompletion) decide on, kept per step.

    Submission artifacts are set apart from the run's work (PHASES_LIVE.md §5): a git command's output
    written to a file, or a patch file written (``git diff > patch.txt``), a read of such a file (``cat
    patch.txt``) and
    the completion action itself (``echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT``, ``submit``) are neither
    the last source write nor among the final actions a tail validation is looked for in.
    """

    __slots__ = (
        "_artifacts",
        "last_ok_validation",
        "last_source_write",
        "last_validation",
        "n",
        "recent_work",
        "text",
    )

    def __init__(self) -> None:
        self.n = 0  # steps observed (1 + the highest step index)
        self.last_source_write = -1  # step of the latest source-file write
        self.last_validation = -1  # step of the latest validation command
        self.last_ok_validation = -1  # step of the latest validation command that did not fail (caller sets)
        self.text: str | None = None  # text of the latest reasoning / completion action
        self.recent_work: deque[int] = deque(maxlen=_RECENT_WORK)  # latest steps that are not artifacts
        self._artifacts: set[str] = set()  # submission files written so far

    def is_submission_artifact(self, action: Action) -> bool:
        t = action.type
        target = action.target
        if t is ActionType.FILE_WRITE and target is not None:
            # A git command's output sent to a file (``git diff > x``); ``git checkout -- f`` restores a
            # source file and is a source write like any other.
            redirected_git = action.shell == "git" and (
                action.write is WriteKind.CREATE or action.write is WriteKind.INSERT
            )
            if redirected_git or _SUBMISSION_FILE.search(target) is not None:
                if len(self._artifacts) < _MAX_ARTIFACTS:
                    self._artifacts.add(target)
                return True
            return False
        if t is ActionType.FILE_READ:
            return target is not None and target in self._artifacts
        return action.is_completion

    def tail_start(self, tail: int) -> int:
        """The first step of the final ``tail`` work steps (submission artifacts not counted)."""
        work = self.recent_work
        if tail > _RECENT_WORK:
            return max(self.n - tail, 0)
        if len(work) < tail:  # the deque is not full, so it holds every work step: all are in the tail
            return 0
        return work[-tail]

    def note(self, index: int, action: Action) -> bool:
        """Record step ``index``; True when it is a validation command, whose outcome the caller judges
        (and, when it did not fail, records as ``last_ok_validation``)."""
        if index >= self.n:
            self.n = index + 1
        t = action.type
        if self.is_submission_artifact(action):
            if action.text is not None and action.is_completion:
                self.text = action.text
            return False
        self.recent_work.append(index)
        if action.is_source_write:
            self.last_source_write = index
        elif t is ActionType.COMMAND:
            if action.is_validation:
                self.last_validation = index
                return True
        elif action.text is not None and (t is ActionType.REASON or action.is_completion):
            self.text = action.text
        return False


class EffectState:
    """The tracker's per-session state: labels, milestones, and the run facts the end-of-run detectors
    judge (``facts``), so those need not observe every step themselves."""

    __slots__ = ("facts", "labeler", "milestones", "recent")

    RECENT = 64

    def __init__(self, anchors: AnchorSet | None, max_pending_reads: int = 512) -> None:
        self.labeler = EffectLabeler(anchors, max_pending_reads=max_pending_reads)
        self.milestones = MilestoneTracker(anchors)
        # step -> provisional label of the last RECENT steps, oldest first
        self.recent: dict[int, Effect] = {}
        self.facts = RunFacts()

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
        return self.recent.get(index)

    @property
    def n(self) -> int:
        """Steps observed (1 + the highest step index)."""
        return self.facts.n

    @property
    def last(self) -> Effect | None:
        """Provisional label of the step observed last."""
        return next(reversed(self.recent.values())) if self.recent else None

    @property
    def revisions(self) -> dict[int, Effect]:
        return self.labeler.revisions

    def milestone_result(self) -> tuple[Milestone, ...]:
        milestones = self.milestones
        if self.n > milestones.n:  # the tracker counts steps here, not in the milestone tracker
            milestones.n = self.n
        return milestones.result(self.n)


class EffectTracker(Detector):
    """Effect labels and milestones as a pipeline stage. ``anchors`` apply to every session (rarely what
    you want live; use :func:`set_anchors` per session)."""

    name = "effects"
    provides = "effects"

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
        action = action_of(step)
        index = step.index
        effect = state.labeler.label(index, action, step.event, step)
        recent = state.recent
        recent.pop(index, None)  # (a step observed again becomes the newest)
        recent[index] = effect
        if len(recent) > state.RECENT:
            del recent[next(iter(recent))]
        # A validation command is labelled JUSTIFIED exactly when it did not fail.
        if state.facts.note(index, action) and effect is Effect.JUSTIFIED:
            state.facts.last_ok_validation = index
        # Without anchors only M4 (a passing validation: a JUSTIFIED command) and M5 (a JUSTIFIED step)
        # exist, so only a JUSTIFIED step can reach one; once every milestone that can be reached has been
        # (M4 and M5 without anchors, all five with), there is nothing left to track. The milestone
        # tracker's step count is brought up to date when the milestones are read.
        milestones = state.milestones
        if milestones.anchors is None:
            if effect is Effect.JUSTIFIED:
                k = len(milestones.first)
                if k != 2 and k != 5:
                    milestones.observe(index, action, effect)
        elif len(milestones.first) != 5:
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


def set_anchors(session: Session, anchors: AnchorSet | str | Iterable[str] | None) -> bool:
    """Give one session its anchor set (gold-patch files: a unified diff or a file list).

    Enables ``OFF_ANCHOR`` labels and milestones M1–M3 for that session. Returns False when the pipeline
    has no effect tracker.
    """
    st: EffectState | None = session.facts("effects")
    if st is None:
        return False
    parsed: Any = anchors if anchors is None or isinstance(anchors, AnchorSet) else AnchorSet.parse(anchors)
    st.set_anchors(parsed)
    return True
