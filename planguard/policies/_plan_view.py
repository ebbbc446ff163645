"""What reminders say about a plan and where the agent is in it.

A :class:`PlanView` precomputes everything about the plan once (rendered text, names, role → phase index),
and :meth:`PlanView.fields` hands templates a mapping that computes each field only if the template asks
for it, so rendering a reminder costs microseconds.
"""

from __future__ import annotations

from collections.abc import Callable
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
        role = session.langutory.current
        if role is None:
            return "not started"
        i = self.index(role)
        return self.phases[i].name if i >= 0 else f"{role_name(role)} (not in the plan)"

    def fields(self, session: Session, **given: Any) -> _Fields:
        return _Fields(self, session, given)


def _names(view: PlanView, idx: list[int]) -> str:
    return ", ".join(view.phases[i].name for i in idx) or "none"


_COMPUTED: dict[str, Callable[[_Fields], Any]] = {
    "plan": lambda f: f.view.text,
    "plan_name": lambda f: f.view.plan.name,
    "order": lambda f: f.view.order,
    "phase": lambda f: f.view.current(f.session),
    "missing": lambda f: _names(f.view, f.missing_idx),
    "next": lambda f: described(f.view.phases[f.missing_idx[0]]) if f.missing_idx else "none",
    "done": lambda f: _names(f.view, [i for i in f.view.expected_idx if i not in f.missing_idx]),
    "status": lambda f: (
        f"Current phase: {f['phase']}." + (f" Not done yet: {f['missing']}." if f.missing_idx else "")
    ),
    "model_calls": lambda f: f.session.n_model_calls,
    "steps": lambda f: f.session.n_steps,
}


class _Fields(dict[str, Any]):
    """Template fields computed on first use (``str.format_map`` looks each one up once)."""

    view: PlanView
    session: Session

    def __init__(self, view: PlanView, session: Session, given: dict[str, Any]):
        super().__init__(given)
        self.view = view
        self.session = session
        self._missing: list[int] | None = None

    @property
    def missing_idx(self) -> list[int]:
        if self._missing is None:
            self._missing = self.view.missing(self.session)
        return self._missing

    def __missing__(self, key: str) -> Any:
        compute = _COMPUTED.get(key)
        if compute is None:
            raise KeyError(key)
        value = self[key] = compute(self)
        return value
