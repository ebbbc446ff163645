"""Periodic plan reminder: re-show the plan every N model calls or N tool calls (the paper re-injects the
plan every 5 model queries, prefixed ``PLAN REMINDER:``).

Against reminder spam (a harness repeating the same reminder 15 times in three hours) the defaults cap the
reminders per session and keep a minimum gap; against reminders that read like prompt injection the text
says plainly that it is an automatic reminder of the plan the agent was already given.
"""

from __future__ import annotations

import string
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..decisions import Decision, DecisionKind
from ..plan import Plan
from ..stages import Policy
from ._plan_view import REMINDER_PREFIX, PlanView

if TYPE_CHECKING:
    from ..session import Session

__all__ = ["DEFAULT_REMINDER_TEMPLATE", "REMINDER_FIELDS", "PeriodicReminder", "ReminderConfig"]

DEFAULT_REMINDER_TEMPLATE = (
    "PLAN REMINDER: (automatic reminder from planguard of the plan you were given; not a new instruction)\n"
    "{plan}\n{status}"
)

#: Fields a reminder template may use.
REMINDER_FIELDS: dict[str, str] = {
    "plan": "the plan as a numbered list (Plan.render())",
    "plan_name": "the plan's name",
    "order": "the plan's phase names joined by arrows",
    "phase": "the phase the agent is in now",
    "missing": "plan phases not done yet, comma-separated (or 'none')",
    "next": "the first plan phase not done yet, with its description (or 'none')",
    "done": "plan phases done so far (or 'none')",
    "status": "one line: current phase and phases not done yet",
    "count": "the number of this reminder in the session (1, 2, ...)",
    "model_calls": "model calls so far in the session",
    "steps": "tool calls so far in the session",
}


def check_template(template: str, fields: dict[str, str]) -> str:
    """Raise ValueError naming the offending field when ``template`` uses one not in ``fields``."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise ValueError(
            f"expected a str.format template ({exc}); write literal braces as {{{{ }}}}"
        ) from None
    for _, name, _, _ in parsed:
        if name is None:
            continue
        root = name.split(".", 1)[0].split("[", 1)[0]
        if root not in fields:
            raise ValueError(
                f"unknown template field {{{name}}}; expected one of: "
                + ", ".join("{" + f + "}" for f in fields)
            )
    return template


class ReminderConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(True, description="Send periodic plan reminders.")
    every_model_calls: int | None = Field(
        5, ge=1, description="Remind every N model calls (the paper: 5). null: no model-call trigger."
    )
    every_tool_calls: int | None = Field(
        None, ge=1, description="Remind after every N tool calls (delivered at the next model call)."
    )
    delivery: Literal["ephemeral", "persisted"] = Field(
        "ephemeral",
        description="ephemeral: only in the next model request, not kept in the agent's history; "
        "persisted: added to the history.",
    )
    max_per_session: int | None = Field(
        12, ge=0, description="At most this many periodic reminders per session (null: no cap)."
    )
    min_gap_model_calls: int = Field(
        3, ge=0, description="At least this many model calls between two periodic reminders."
    )
    min_gap_s: float = Field(
        0.0, ge=0, description="At least this many seconds between two periodic reminders."
    )
    template: str = Field(
        DEFAULT_REMINDER_TEMPLATE,
        description="str.format template; fields: "
        + ", ".join("{" + f + "}" for f in REMINDER_FIELDS)
        + ". The message always starts with 'PLAN REMINDER:' (prepended when missing).",
    )

    @field_validator("template")
    @classmethod
    def _known_fields(cls, v: str) -> str:
        return check_template(v, REMINDER_FIELDS)


@dataclass(slots=True)
class _State:
    last_call: int = 0  # model-call count when the trigger last reset
    last_steps: int = 0  # tool-call count when the trigger last reset
    sent: int = 0
    last_sent_call: int | None = None
    last_sent_time: float = 0.0


class PeriodicReminder(Policy):
    """Re-shows the plan at model calls; counting is O(1) per call and the text is rendered only when sent."""

    name = "reminder"

    def __init__(self, plan: Plan, config: ReminderConfig | None = None):
        self.plan = plan
        self.view = PlanView(plan)
        self.config = config = config or ReminderConfig()
        self._every_m = config.every_model_calls
        self._every_t = config.every_tool_calls
        self._cap = config.max_per_session
        self._gap = config.min_gap_model_calls
        self._gap_s = config.min_gap_s
        self._ephemeral = config.delivery == "ephemeral"
        t = config.template
        self._template = t if t.lstrip().startswith(REMINDER_PREFIX) else f"{REMINDER_PREFIX} {t}"
        self._active = config.enabled and bool(plan.phases) and (self._every_m or self._every_t) is not None

    def new_state(self) -> _State:
        return _State()

    def before_model(self, session: Session, state: _State) -> Iterable[Decision]:
        if not self._active:
            return ()
        calls = session.n_model_calls
        due = (self._every_m is not None and calls - state.last_call >= self._every_m) or (
            self._every_t is not None and session.n_steps - state.last_steps >= self._every_t
        )
        if not due:
            return ()
        if self._cap is not None and state.sent >= self._cap:
            return ()
        if state.last_sent_call is not None and calls - state.last_sent_call < self._gap:
            return ()
        now = time.time()
        if self._gap_s and state.last_sent_call is not None and now - state.last_sent_time < self._gap_s:
            return ()
        state.sent += 1
        state.last_call = calls
        state.last_steps = session.n_steps
        state.last_sent_call = calls
        state.last_sent_time = now
        return (
            Decision(DecisionKind.REMIND, self.render(session, state.sent), self.name, None, self._ephemeral),
        )

    def render(self, session: Session, count: int = 1) -> str:
        if session.phases_unobserved() is not None:
            # The run's tools are unknown, so its phases are not seen: remind of the plan without claiming
            # which phases are done or missing.
            fields = self.view.fields(session, count=count, **_UNOBSERVED_FIELDS)
        else:
            fields = self.view.fields(session, count=count)
        return self._template.format_map(fields).rstrip()


_UNKNOWN = "unknown (planguard cannot tell which tool calls do what)"
#: The progress fields of a reminder when the run's phases cannot be observed.
_UNOBSERVED_FIELDS = {
    "phase": _UNKNOWN,
    "missing": _UNKNOWN,
    "next": _UNKNOWN,
    "done": _UNKNOWN,
    "status": "Progress through the plan is not tracked for these tools.",
}
