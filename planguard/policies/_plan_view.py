"""What reminders say about a plan and where the agent is in it.

A :class:`PlanView` precomputes everything about the plan once (rendered text, names, role → phase index),
and :meth:`PlanView.fields` hands templates every field, the progress texts remembered per (current role,
missing phases), so rendering a reminder costs microseconds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..plan import Plan, PlanPhase

if TYPE_CHECKING:
    from ..session import Session

__all__ = ["NOTE_PREFIX", "REMINDER_PREFIX", "PlanView", "described", "role_name"]

#: Reminder messages start with this (the paper's protocol); integrations and users rely on the label.
REMINDER_PREFIX = "PLAN REMINDER:"
#: Nudges from detector responses carry this label so the model can tell them from user text.
NOTE_PREFIX = "PLANGUARD NOTE:"

# Human names of the classifier roles that may appear without a plan phase to name them.
_ROLE_NAMES = {
    "L_navigate": "Navigation",
    "L_reproduce": "Reproduction",
    "L_reproduce_newly_generated_test": "Reproduction (new test)",
    "L_reproduce_regression_test": "Regression tests before the patch",
    "P": "Patch",
    "V": "Validation",
    "V_newly_generated_test": "Validation (new test)",
    "V_regression_test": "Regression tests after the patch",
}

#: Distinct roles a view remembers (classifier roles are a handful; the bound guards odd classifiers).
_MAX_ROLES = 256
#: Distinct (current role, missing phases) pairs a view remembers the rendered fields of.
_MAX_PROGRESS = 1024


def role_name(role: str, plan: Plan | None = None) -> str:
    """The plan's name for the phase accepting ``role``, else a built-in name, else the role itself."""
    if plan is not None:
        p = plan.phase_for(role)
        if p is not None:
            return p.name
    return _ROLE_NAMES.get(role, role)


def described(p: PlanPhase) -> str:
    """``Name (what the phase asks for)``."""
    return f"{p.name} ({p.description.rstrip('.')})" if p.description else p.name


class PlanView:
    """Read-only facts about one plan, computed once and shared by every session."""

    def __init__(self, plan: Plan):
        self.plan = plan
        self.phases = plan.phases
        self.text = plan.render()
        self.order = " → ".join(p.name for p in plan.phases)
        # plan.expected (the compliance order) as indices into plan.phases
        self.expected_idx = [i for i, p in enumerate(plan.phases) if p.scored]
        self._index: dict[str, int] = {}
        # (current role, missing phases) -> the fields that depend on them: a run passes through a handful
        self._progress: dict[tuple[str | None, tuple[int, ...]], dict[str, str]] = {}

    def index(self, role: str) -> int:
        """Position of the plan phase accepting ``role``; -1 when the role is out of plan."""
        i = self._index.get(role)
        if i is None:
            p = self.plan.phase_for(role)
            i = -1 if p is None else self.phases.index(p)
            if len(self._index) < _MAX_ROLES:
                self._index[role] = i
        return i

    def missing(self, session: Session) -> list[int]:
        """Scored plan phases the session has not reached yet (indices into ``phases``)."""
        comp = session.compliance.get(self.plan.name)
        if comp is None:
            return list(self.expected_idx)
        return [self.expected_idx[j] for j, first in enumerate(comp.first) if first is None]

    def current(self, session: Session) -> str:
        return self._phase(session.langutory.current)

    def _phase(self, role: str | None) -> str:
        if role is None:
            return "not started"
        i = self.index(role)
        return self.phases[i].name if i >= 0 else f"{role_name(role)} (not in the plan)"

    def fields(self, session: Session, **given: Any) -> dict[str, Any]:
        """Every template field (``REMINDER_FIELDS`` but ``count``) for ``session`` now; ``given`` on top."""
        key = (session.langutory.current, tuple(self.missing(session)))
        progress = self._progress.get(key)
        if progress is None:
            progress = self._describe(*key)
            if len(self._progress) < _MAX_PROGRESS:
                self._progress[key] = progress
        return {**progress, "model_calls": session.n_model_calls, "steps": session.n_steps, **given}

    def _describe(self, role: str | None, missing: tuple[int, ...]) -> dict[str, str]:
        """The fields that depend only on where the agent is: its current role and the phases missing."""
        phase = self._phase(role)
        not_done = _names(self, missing)
        return {
            "plan": self.text,
            "plan_name": self.plan.name,
            "order": self.order,
            "phase": phase,
            "missing": not_done,
            "next": described(self.phases[missing[0]]) if missing else "none",
            "done": _names(self, [i for i in self.expected_idx if i not in missing]),
            "status": f"Current phase: {phase}." + (f" Not done yet: {not_done}." if missing else ""),
        }


def _names(view: PlanView, idx: Sequence[int]) -> str:
    return ", ".join(view.phases[i].name for i in idx) or "none"
