"""A ``Step``: one tool call as the pipeline saw it — the event and what each stage made of it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .decisions import ALLOW, Decision
from .events import ToolEvent
from .findings import Finding
from .phases import Classification

__all__ = ["Step"]


@dataclass(slots=True, weakref_slot=True)  # the effect labeller holds steps weakly
class Step:
    index: int  # 0-based position among the session's accepted tool calls
    event: ToolEvent
    classification: Classification
    action: Any = None  # canonical action (planguard.actions.Action) when the pipeline classifies actions
    effect: Any = (
        None  # planguard.actions.Effect, set by detectors.EffectTracker (provisional live, final at end)
    )
    decision: Decision = ALLOW
    findings: tuple[Finding, ...] = ()
    done: bool = False  # the result has been recorded
    degraded: bool = False  # a pipeline stage failed on this call (fail-closed gates deny it)

    @property
    def roles(self) -> tuple[str, ...]:
        """Non-general plan-phase roles of the step, in order."""
        return self.classification.roles
