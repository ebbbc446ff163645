"""Task-relevant progress milestones (TraceProbe §III-E): when a run first reaches the task's files.

Given an anchor set (the files a gold patch touches; :meth:`AnchorSet.parse` takes a unified diff or a
file list):

* **M1** first read of an anchor file (a FILE_READ that did not fail),
* **M2** first successful write to an anchor file,
* **M3** the step at which every anchor file has been written successfully,
* **M4** first passing validation command (a validation COMMAND that did not fail),
* **M5** first justified action (effect ``JUSTIFIED``).

Each milestone is ``reached`` with the 0-based step of first reach, or right-censored at the run's
length (``censored_at``) — not reached *within the observed steps*, which is not "never". M4 and M5 do
not need anchors; M1–M3 without anchors are reported as unavailable (``reached=False``, ``step=None``,
``available=False``). The tracker is O(1) per step with state bounded by the anchor set.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..actions.anchors import AnchorSet
from ..actions.effects import EffectLabeler, WriteLedger
from ..actions.types import Action, ActionType, Effect
from ..events import ToolEvent

__all__ = ["MILESTONES", "Milestone", "MilestoneTracker", "milestones"]

MILESTONES: tuple[tuple[str, str], ...] = (
    ("M1", "first anchor read"),
    ("M2", "first anchor write"),
    ("M3", "all anchors written"),
    ("M4", "first passing validation"),
    ("M5", "first justified action"),
)


@dataclass(frozen=True, slots=True)
class Milestone:
    name: str
    description: str
    reached: bool
    step: int | None  # 0-based step of first reach
    n_steps: int  # steps observed (the censoring point when not reached)
    available: bool = True  # False when the milestone needs anchors and none were given

    @property
    def censored_at(self) -> int | None:
        """Right-censoring point: the run length, when the milestone was not reached."""
        return None if self.reached else self.n_steps

    @property
    def fraction(self) -> float | None:
        """Steps to first reach over run length (the paper's length-normalised timing, Fig. 6)."""
        if self.step is None or not self.n_steps:
            return None
        return (self.step + 1) / self.n_steps

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "reached": self.reached,
            "step": self.step,
            "censored_at": self.censored_at,
            "available": self.available,
        }


class MilestoneTracker:
    """Streaming milestone extraction: feed each step's action and effect with :meth:`observe`."""

    __slots__ = ("_unwritten", "anchors", "first", "n")

    def __init__(self, anchors: AnchorSet | None = None) -> None:
        self.anchors = anchors
        self.first: dict[str, int] = {}
        self._unwritten: set[str] | None = set(anchors.files) if anchors is not None else None
        self.n = 0

    def observe(self, index: int, action: Action, effect: Effect) -> None:
        self.n = max(self.n, index + 1)
        first = self.first
        if len(first) == 5 or (self.anchors is None and len(first) == 2):
            return  # everything that can be reached has been
        t = action.type
        if effect is Effect.JUSTIFIED and "M5" not in first:
            first["M5"] = index
        if effect is Effect.FAILED:
            return
        if t is ActionType.COMMAND:
            if action.is_validation and "M4" not in first:
                first["M4"] = index
            return
        anchors = self.anchors
        if anchors is None or action.target is None:
            return
        if t is ActionType.FILE_READ:
            if "M1" not in first and action.target in anchors:
                first["M1"] = index
        elif t is ActionType.FILE_WRITE:
            for target in (action.target, *action.also_written):  # ``rm a b c`` writes each file
                if target not in anchors:
                    continue
                first.setdefault("M2", index)
                unwritten = self._unwritten
                if unwritten:
                    for f in [f for f in unwritten if target == f or target.endswith("/" + f)]:
                        unwritten.discard(f)
                    if not unwritten:
                        first.setdefault("M3", index)

    def result(self, n_steps: int | None = None) -> tuple[Milestone, ...]:
        n = self.n if n_steps is None else n_steps
        out = []
        for name, desc in MILESTONES:
            available = self.anchors is not None or name in ("M4", "M5")
            step = self.first.get(name)
            out.append(Milestone(name, desc, step is not None, step, n, available))
        return tuple(out)


def milestones(
    actions: Sequence[Action],
    events: Sequence[ToolEvent],
    anchors: AnchorSet | str | Iterable[str] | None = None,
    effects: Sequence[Effect] | None = None,
) -> tuple[Milestone, ...]:
    """Milestones of a finished run (offline). ``effects`` default to labels computed with ``anchors``."""
    anchor_set = anchors if isinstance(anchors, AnchorSet) or anchors is None else AnchorSet.parse(anchors)
    if effects is None:
        n = len(actions) + 1
        labeler = EffectLabeler(anchor_set, max_revisions=n, max_pending_reads=n, ledger=WriteLedger(n, n))
        effects = [labeler.label(i, a, e) for i, (a, e) in enumerate(zip(actions, events, strict=True))]
        # Milestones record first reach as it happened, so provisional labels are the right ones here.
    tracker = MilestoneTracker(anchor_set)
    for i, (a, eff) in enumerate(zip(actions, effects, strict=True)):
        tracker.observe(i, a, eff)
    return tracker.result(len(actions))
