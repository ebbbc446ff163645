"""Gates: deny a tool call (by pattern) until conditions on the run hold.

The example everyone wants: deny ``submit`` until a validation phase (role prefix ``V``) has happened after
the last patch (``P``). A denied call never runs; the model sees the gate's message as the tool's error.

A gate that keeps denying an agent that cannot satisfy it would trap the run, so by default it gives way
after ``max_denials`` denials (set null for a hard gate). Gates are fail-open like everything else unless
``fail_closed`` is set: then an internal error while checking the gate denies the call.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..decisions import Decision, DecisionKind
from ..events import ToolEvent
from ..plan import Plan, phase_matches
from ..stages import Policy
from ._plan_view import role_name
from .match import ToolMatcher, ToolPattern
from .reminder import check_template

if TYPE_CHECKING:
    from ..errors import ErrorCounter
    from ..events import MessageEvent
    from ..phases.base import Classification
    from ..session import Session
    from ..step import Step

__all__ = ["GATE_FIELDS", "Gate", "GateCondition", "GateConfig", "PhaseAfter"]

GATE_FIELDS: dict[str, str] = {
    "gate": "the gate's name",
    "tool": "the denied tool",
    "unmet": "what must happen first",
    "denials": "how many times this gate has denied in the session (this one included)",
    "max_denials": "the gate's max_denials ('unlimited' when null)",
}

_DEFAULT_MESSAGE = "PLANGUARD GATE ({gate}): {tool} is not allowed yet. First {unmet}."


class PhaseAfter(BaseModel):
    """A step with a role matching ``phase`` has happened after the last step matching ``after``."""

    model_config = ConfigDict(extra="forbid")

    phase: str = Field(description="Role prefix that must happen, e.g. 'V' (any validation).")
    after: str = Field(description="Role prefix it must follow the last occurrence of, e.g. 'P' (patch).")
    succeeded: bool = Field(False, description="Count only calls that did not fail (exit code 0, no error).")
    strict: bool = Field(
        False,
        description="Also require that 'after' has happened at all (default: no patch, nothing to validate).",
    )


class GateCondition(BaseModel):
    """Every condition given must hold for the gate to open."""

    model_config = ConfigDict(extra="forbid")

    phase_after: PhaseAfter | None = None
    phases_seen: list[str] = Field(
        default_factory=list, description="Role prefixes that must each have happened."
    )
    plan_complete: bool = Field(False, description="Every scored phase of the plan has happened.")
    min_steps: int = Field(0, ge=0, description="At least this many tool calls have run.")

    @model_validator(mode="after")
    def _something(self) -> GateCondition:
        if (
            self.phase_after is None
            and not self.phases_seen
            and not self.plan_complete
            and not self.min_steps
        ):
            raise ValueError("expected at least one of: phase_after, phases_seen, plan_complete, min_steps")
        return self


class GateConfig(ToolPattern):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="Names the gate in messages and telemetry.")
    until: GateCondition = Field(description="Conditions under which the tool is allowed.")
    message: str | None = Field(
        None,
        description="Denial text template (fields: " + ", ".join("{" + f + "}" for f in GATE_FIELDS) + ").",
    )
    max_denials: int | None = Field(
        3, ge=1, description="Let the call through after this many denials per session (null: always deny)."
    )
    fail_closed: bool | None = Field(
        None, description="Deny on internal error (null: the top-level fail_closed_gates setting)."
    )

    @field_validator("message")
    @classmethod
    def _fields(cls, v: str | None) -> str | None:
        return None if v is None else check_template(v, GATE_FIELDS)


@dataclass(slots=True)
class _State:
    pos: int = 0  # roles seen so far (orders roles within one step too)
    last_phase: int = 0  # position of the last role matching phase_after.phase (0: never)
    last_after: int = 0  # position of the last role matching phase_after.after (0: never)
    seen: int = 0  # bitmask over until.phases_seen
    denials: int = 0


class Gate(Policy):
    def __init__(self, config: GateConfig, plan: Plan | None = None, *, fail_closed: bool = False):
        self.config = config
        self.name = f"gate:{config.name}"
        self.plan = plan
        self.matcher = ToolMatcher([config])
        self.tool_matchers = (self.matcher,)
        self.fail_closed = config.fail_closed if config.fail_closed is not None else fail_closed
        u = config.until
        self._pa = u.phase_after
        self._seen_prefixes = tuple(u.phases_seen)
        self._all_seen = (1 << len(self._seen_prefixes)) - 1
        self._tracks = self._pa is not None or bool(self._seen_prefixes)
        self._need_success = self._pa is not None and self._pa.succeeded
        self._roles: dict[str, tuple[bool, bool, int]] = {}  # role -> (is phase, is after, seen bits)
        self._template = config.message or _DEFAULT_MESSAGE
        self._judges_phases = self._tracks or u.plan_complete

    def new_state(self) -> _State:
        return _State()

    def matches(self, event: ToolEvent) -> bool:
        return self.matcher.matches(event)

    def before_tool(self, step: Step, session: Session, state: _State) -> Decision | None:
        try:
            if not self.matcher.matches(step.event):
                return None
            if step.degraded and self.fail_closed:  # the phases it checks could not be computed
                return self.error_decision(step.event)
            unmet = self.unmet(session, state)
            if not unmet:
                return None
            unobserved = session.phases_unobserved() if self._judges_phases else None
            if unobserved is not None and not self._steps_unmet(session):
                # The run's phases cannot be seen (its tools are unknown): a phase gate does not deny.
                return Decision(
                    DecisionKind.LOG,
                    f"gate {self.config.name} let {step.event.tool} through unchecked: {unobserved}",
                    self.name,
                )
            cap = self.config.max_denials
            if cap is not None and state.denials >= cap:
                return Decision(
                    DecisionKind.LOG,
                    f"gate {self.config.name} let {step.event.tool} through after {cap} denials",
                    self.name,
                )
            state.denials += 1
            text = self._template.format_map(
                {
                    "gate": self.config.name,
                    "tool": step.event.tool or "this call",
                    "unmet": "; ".join(unmet),
                    "denials": state.denials,
                    "max_denials": "unlimited" if cap is None else cap,
                }
            )
            return Decision(DecisionKind.DENY, text, self.name)
        except Exception as exc:  # a gate decides fail-open or fail-closed itself
            return self.on_error(step.event, session.pipeline.errors, exc)

    def on_error(self, event: ToolEvent, errors: ErrorCounter, exc: BaseException) -> Decision | None:
        errors.record(f"{self.name}.before_tool", exc)
        return self.error_decision(event) if self.fail_closed else None

    def error_decision(self, event: ToolEvent) -> Decision:
        return Decision(
            DecisionKind.DENY,
            f"PLANGUARD GATE ({self.config.name}): {event.tool or 'this call'} is blocked: its conditions "
            "could not be checked (planguard internal error; this gate is fail-closed). Try again shortly.",
            self.name,
        )

    def after_tool(self, step: Step, session: Session, state: _State) -> Iterable[Decision]:
        if self._tracks:
            # a phase role here counts as done unless the gate wants success and the call failed
            self._track(step.classification.roles, not self._need_success or not step.event.failed, state)
        return ()

    def on_message(
        self, message: MessageEvent, classification: Classification, session: Session, state: _State
    ) -> Iterable[Decision]:
        if self._tracks:  # a phase a conversation turn showed (the user's confirmation) has happened
            self._track(classification.roles, True, state)
        return ()

    def _track(self, roles: tuple[str, ...], counts: bool, state: _State) -> None:
        for r in roles:
            state.pos += 1
            info = self._roles.get(r)
            if info is None:
                info = self._role_info(r)
            is_phase, is_after, seen_bits = info
            if is_phase and counts:
                state.last_phase = state.pos
            if is_after:
                state.last_after = state.pos
            state.seen |= seen_bits

    def _role_info(self, role: str) -> tuple[bool, bool, int]:
        pa = self._pa
        info = (
            pa is not None and phase_matches(role, pa.phase),
            pa is not None and phase_matches(role, pa.after),
            sum(1 << i for i, p in enumerate(self._seen_prefixes) if phase_matches(role, p)),
        )
        if len(self._roles) < 256:  # roles are a tiny vocabulary; the bound only guards odd classifiers
            self._roles[role] = info
        return info

    def unmet(self, session: Session, state: _State) -> list[str]:
        """Descriptions of the conditions that do not hold yet (empty: the gate is open)."""
        u = self.config.until
        out: list[str] = []
        pa = self._pa
        if pa is not None:
            if state.last_after == 0:
                if pa.strict:
                    out.append(f"do {self._name(pa.after)}, then {self._name(pa.phase)}")
            elif state.last_phase <= state.last_after:
                out.append(f"do {self._name(pa.phase)} after your last {self._name(pa.after)}")
        if state.seen != self._all_seen:
            todo = [p for i, p in enumerate(self._seen_prefixes) if not (state.seen >> i) & 1]
            out.append("do " + ", ".join(self._name(p) for p in todo))
        if u.plan_complete:
            comp = session.primary_compliance
            if comp is not None:
                missing = comp.missing()
                if missing:
                    out.append(
                        "complete the plan phases not done yet: " + ", ".join(self._name(m) for m in missing)
                    )
        if u.min_steps and session.n_steps < u.min_steps:
            out.append(f"work for at least {u.min_steps} tool calls ({session.n_steps} so far)")
        return out

    def _steps_unmet(self, session: Session) -> bool:
        min_steps = self.config.until.min_steps
        return bool(min_steps) and session.n_steps < min_steps

    def _name(self, prefix: str) -> str:
        return role_name(prefix, self.plan)
