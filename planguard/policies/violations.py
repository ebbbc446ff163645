"""Violation reminders: targeted messages when the agent departs from its plan.

* **skipped** — a phase begins while an earlier plan phase has not happened: names the missed phase(s);
* **out of order** — a phase happens for the first time after a later one (and was not already reported
  as skipped: doing a skipped phase late is the remedy, not a new offence);
* **out of plan** — a phase the plan does not contain (once per phase type);
* **finish** — a finish/submit call (or the end of the session) with plan phases missing. A finish call is
  denied with the message at most ``max_finish_denials`` times, so an agent that cannot comply still ends.

Each kind is reported once per phase; ``max_per_session`` caps the total. Only the plan's scored phases
count as skippable or missing (the summary phase S is never produced by the classifier).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..decisions import Decision, DecisionKind
from ..plan import Plan, PlanPhase
from ..stages import Policy
from ._plan_view import REMINDER_PREFIX, PlanView, described, role_name
from .match import ToolMatcher, ToolPattern
from .reminder import check_template

if TYPE_CHECKING:
    from ..events import MessageEvent
    from ..phases.base import Classification
    from ..session import Session
    from ..step import Step

__all__ = [
    "DEFAULT_FINISH_TOOLS",
    "VIOLATION_FIELDS",
    "PlanViolations",
    "ViolationMessages",
    "ViolationsConfig",
]

_SHELL_TOOLS = ["bash", "execute_bash", "shell", "run_shell_command"]
#: A shell ``submit`` as a command of its own: ``submit`` between the start of the line or a command
#: separator (``&&``, ``;``, ``||``) and the end of the line or a separator. One pattern per separator
#: that can precede it, each starting with that literal (or anchored at the start), rather than one
#: pattern that starts with an alternation: ``re`` then finds the candidates with a literal scan instead
#: of trying the whole pattern at every character of a long command (searched on every shell call).
_SHELL_SUBMIT = tuple(before + r"\s*submit\s*(?:$|&&|;|\|\|)" for before in ("^", "&&", ";", r"\|\|"))

#: Calls that end a run in common scaffolds: a submit/finish tool, SWE-agent's ``submit`` command, and
#: mini-swe-agent's final echo. (Any one pattern matching is a match, so together they equal the single
#: ``(?:^|&&|;|\|\|)\s*submit\s*(?:$|&&|;|\|\|)|COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`` they replace.)
DEFAULT_FINISH_TOOLS: tuple[ToolPattern, ...] = (
    ToolPattern(tool=["submit", "finish", "final_answer", "task_complete"]),
    *(ToolPattern(tool=_SHELL_TOOLS, arguments={"command": rx}) for rx in _SHELL_SUBMIT),
    ToolPattern(tool=_SHELL_TOOLS, arguments={"command": "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}),
)

VIOLATION_FIELDS: dict[str, str] = {
    "phase": "the phase that just started",
    "missed": "the missed phase(s) with what each asks for",
    "later": "the furthest plan phase reached so far",
    "order": "the plan's phase names in order, joined by arrows",
    "plan": "the whole plan as a numbered list",
}


def _template(v: str) -> str:
    return check_template(v, VIOLATION_FIELDS)


class ViolationMessages(BaseModel):
    """Message templates (str.format; fields: {phase} {missed} {later} {order} {plan})."""

    model_config = ConfigDict(extra="forbid")

    skipped: str = "you started {phase} without doing {missed} first. The plan's order is {order}."
    out_of_order: str = "you started {phase} after {later}, but the plan puts {phase} first ({order})."
    out_of_plan: str = "{phase} is not a phase of your plan ({order}); stay with the plan's phases."
    finish: str = "before you finish, do the plan phases not done yet: {missed}."

    _check = field_validator("skipped", "out_of_order", "out_of_plan", "finish")(_template)


class ViolationsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(True, description="Send targeted reminders when the agent departs from the plan.")
    skipped: bool = Field(
        True, description="Remind when a phase begins while an earlier plan phase was skipped."
    )
    out_of_order: bool = Field(
        True, description="Remind when a phase first happens after a later plan phase."
    )
    out_of_plan: bool = Field(True, description="Remind when a phase the plan does not contain happens.")
    missing_at_finish: bool = Field(
        True,
        description="Remind when the agent tries to finish (finish call or session end) with phases missing.",
    )
    finish_tools: list[ToolPattern] | None = Field(
        None,
        description="Tool calls that mean 'I am done': patterns ({tool, arguments}) or bare tool names "
        "(finish_tools: submit, or [submit, final_answer]). null: built-in patterns for submit/finish "
        "tools, a shell 'submit' and mini-swe-agent's final echo, plus the canonical action's completion "
        "flag.",
    )

    @field_validator("finish_tools", mode="before")
    @classmethod
    def _bare_names(cls, v: Any) -> Any:
        """A tool name (or a list mixing names and patterns) stands for ``{tool: name}``."""
        if isinstance(v, str):
            v = [v]
        if isinstance(v, list):
            return [{"tool": item} if isinstance(item, str) else item for item in v]
        return v

    on_finish: Literal["deny", "remind"] = Field(
        "deny",
        description="deny: the finish call fails with the reminder as its error (the model sees it at once); "
        "remind: the call runs and the reminder goes into the next model request.",
    )
    max_finish_denials: int = Field(
        1, ge=0, description="Deny a finish call at most this many times per session."
    )
    delivery: Literal["ephemeral", "persisted"] = Field(
        "ephemeral", description="How reminders reach the model (see policies.reminder.delivery)."
    )
    max_per_session: int | None = Field(
        6, ge=0, description="At most this many violation reminders per session."
    )
    messages: ViolationMessages = Field(default_factory=ViolationMessages)


@dataclass(slots=True)
class _State:
    seen: int = 0  # bitmask over plan.phases: phases that have happened
    max_idx: int = -1  # furthest plan phase reached
    reported_skip: int = 0  # bitmask: phases already named as skipped
    extras: tuple[str, ...] = ()  # out-of-plan roles already reported (a tiny vocabulary: a tuple)
    sent: int = 0
    finish_denials: int = 0
    finish_told: bool = False


class PlanViolations(Policy):
    name = "violations"

    def __init__(self, plan: Plan, config: ViolationsConfig | None = None):
        self.plan = plan
        self.config = config = config or ViolationsConfig()
        self._active = config.enabled and bool(plan.phases)
        # Skippable/missing phases: scored ones only, as a bitmask over plan.phases.
        self._tracked = sum(1 << i for i, p in enumerate(plan.phases) if p.scored)
        self._check_finish = config.missing_at_finish
        self._by_action = config.finish_tools is None
        self._finish = ToolMatcher(
            DEFAULT_FINISH_TOOLS if config.finish_tools is None else config.finish_tools
        )
        self.tool_matchers = (self._finish,)
        self._ephemeral = config.delivery == "ephemeral"
        self.view = PlanView(plan)

    def new_state(self) -> _State:
        return _State()

    # ------------------------------------------------------------------ hooks

    def is_finish(self, step: Step) -> bool:
        """The call ends the run: the configured patterns; by default also the canonical action's flag."""
        if self._by_action and getattr(step.action, "is_completion", False):
            return True
        return self._finish.matches(step.event)

    def before_tool(self, step: Step, session: Session, state: _State) -> Decision | None:
        if not self._active or not self._check_finish or not self.is_finish(step):
            return None
        if session.phases_unobserved() is not None:
            return None  # phases the run's tools do not show are not missing
        missing = self._missing(state)
        if not missing:
            return None
        text = self._finish_text(missing)
        if self.config.on_finish == "deny":
            if state.finish_denials >= self.config.max_finish_denials:
                return None
            state.finish_denials += 1
            state.finish_told = True
            return Decision(DecisionKind.DENY, text, self.name)
        if state.finish_told:
            return None
        state.finish_told = True
        d = Decision(DecisionKind.REMIND, text, self.name, None, self._ephemeral)
        session.queue(d)
        return d

    def after_tool(self, step: Step, session: Session, state: _State) -> Iterable[Decision]:
        return self._observe(step.classification.roles, session, state)

    def on_message(
        self, message: MessageEvent, classification: Classification, session: Session, state: _State
    ) -> Iterable[Decision]:
        return self._observe(classification.roles, session, state)

    def _observe(self, roles: tuple[str, ...], session: Session, state: _State) -> Iterable[Decision]:
        """The plan phases a call or a conversation turn showed: reminders for phases skipped, out of order
        or out of plan."""
        if not self._active or not roles:
            return ()
        lines: list[str] | None = None
        cfg = self.config
        index = self.view.index
        for role in roles:
            j = index(role)
            if j < 0:
                if cfg.out_of_plan and role not in state.extras and len(state.extras) < 64:
                    state.extras = (*state.extras, role)
                    lines = lines or []
                    lines.append(self._fmt(cfg.messages.out_of_plan, phase=role_name(role, self.plan)))
                continue
            bit = 1 << j
            if state.seen & bit:
                continue
            phase = self.plan.phases[j]
            if cfg.out_of_order and j < state.max_idx and not state.reported_skip & bit:
                lines = lines or []
                later = self.plan.phases[state.max_idx].name
                lines.append(self._fmt(cfg.messages.out_of_order, phase=phase.name, later=later))
            elif cfg.skipped:
                skipped = [
                    k
                    for k in range(j)
                    if (self._tracked >> k) & 1
                    and not (state.seen >> k) & 1
                    and not (state.reported_skip >> k) & 1
                ]
                if skipped:
                    for k in skipped:
                        state.reported_skip |= 1 << k
                    lines = lines or []
                    lines.append(
                        self._fmt(
                            cfg.messages.skipped,
                            phase=phase.name,
                            missed=_join([self.plan.phases[k] for k in skipped]),
                        )
                    )
            state.seen |= bit
            if j > state.max_idx:
                state.max_idx = j
        if lines is None or session.phases_unobserved() is not None:
            return ()  # (most of the run's calls use unknown tools: its phases are not seen, so not judged)
        if cfg.max_per_session is not None and state.sent >= cfg.max_per_session:
            return ()
        state.sent += 1
        text = REMINDER_PREFIX + " " + "\n".join(lines)
        return (Decision(DecisionKind.REMIND, text, self.name, None, self._ephemeral),)

    def on_end(self, session: Session, state: _State) -> Iterable[Decision]:
        if not self._active or not self.config.missing_at_finish or state.finish_told:
            return ()
        if session.phases_unobserved() is not None:
            return ()
        missing = self._missing(state)
        if not missing:
            return ()
        return (Decision(DecisionKind.REMIND, self._finish_text(missing), self.name, None, self._ephemeral),)

    # ------------------------------------------------------------------ helpers

    def _missing(self, state: _State) -> list[PlanPhase]:
        todo = self._tracked & ~state.seen
        return [p for i, p in enumerate(self.plan.phases) if (todo >> i) & 1]

    def _finish_text(self, missing: list[PlanPhase]) -> str:
        return REMINDER_PREFIX + " " + self._fmt(self.config.messages.finish, missed=_join(missing))

    def _fmt(self, template: str, **fields: str) -> str:
        values = {"phase": "", "missed": "", "later": "", "order": self.view.order, "plan": self.view.text}
        values.update(fields)
        return template.format_map(values)


def _join(phases: list[PlanPhase]) -> str:
    parts = [described(p) for p in phases]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
