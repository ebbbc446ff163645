"""Detector responses: per finding kind, an escalation ladder log → warn → nudge → block → stop.

Each time a detector fires (a new episode of its pattern), the kind's fire count rises and picks a rung —
the highest whose threshold is at most the count:

* **log**   — a LOG decision (telemetry only);
* **warn**  — a NOTIFY decision: operators hear of it (webhook, console); the agent is untouched;
* **nudge** — a NUDGE: a labelled hint in the next model request;
* **block** — the next call that *continues the pattern* (e.g. another search while a search loop is
  active) is denied with a reason the model sees; a call that breaks the pattern disarms the block;
* **stop**  — the next call gets a STOP decision, which integrations turn into a graceful end.

Against loop guards that fire falsely, responses above *log* respect a per-kind cooldown (steps since the
previous response), calls to exempt tools neither count nor get blocked, and block/stop are off unless
configured.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..decisions import Decision, DecisionKind
from ..detectors.repeats import call_key
from ..events import ToolEvent
from ..findings import Finding
from ..stages import Policy
from ._plan_view import NOTE_PREFIX
from .match import compile_globs
from .reminder import check_template

if TYPE_CHECKING:
    from ..session import Session
    from ..step import Step

__all__ = [
    "ADVICE",
    "RESPONSE_FIELDS",
    "RUNGS",
    "DetectorResponses",
    "Ladder",
    "PatternSpec",
    "ResponseConfig",
    "ResponsesConfig",
]

RUNGS: tuple[str, ...] = ("log", "warn", "nudge", "block", "stop")

#: What the model is told for the known finding kinds (TraceProbe's structural predicates).
ADVICE: dict[str, str] = {
    "search_loop": "You have searched and read for many steps in a row without editing or running anything. "
    "Decide what to change, or write a test that reproduces the problem.",
    "redundant_search": "You already ran this search; use its earlier result instead of repeating it.",
    "reread_churn": "You have re-read the same file several times without changing it; take what you need "
    "from it and move on.",
    "tool_oscillation": "Your edits to this file keep failing or being reverted; read it once more and make "
    "one careful edit.",
    "no_tail_validation": "Run your tests after your last edit before you finish.",
    "unsupported_completion": "You said the work is done, but nothing has validated it since your last edit; "
    "run a test first.",
    "shell_over_tool": "Use the structured read and search tools rather than shell commands for reading "
    "and searching files.",
    "plan_absence": "Write down a short plan before making more edits.",
    "repeated_call": "You have made the same call several times; its result will not change. Try something "
    "different.",
    "todo_done_without_work": "You marked a todo item done with no edit or test run since you started it; "
    "check that it really is done.",
}

#: Calls that continue the pattern of the known finding kinds (unlisted kinds: the same tool/action). The
#: loop-like kinds end, as their detectors do, only on progress (a file write or a validation run).
_DEFAULT_PATTERNS: dict[str, dict[str, Any]] = {
    "search_loop": {"actions": ["SEARCH", "FILE_READ"], "roles": ["L_navigate"], "ends_on": "progress"},
    "redundant_search": {"actions": ["SEARCH"], "ends_on": "progress"},
    "reread_churn": {"actions": ["FILE_READ"], "ends_on": "progress"},
    "repeated_call": {"same_call": True},
}

RESPONSE_FIELDS: dict[str, str] = {
    "kind": "the finding kind (detector name)",
    "evidence": "the detector's evidence text",
    "advice": "built-in advice for known kinds (else the evidence)",
    "count": "how many times this kind has fired in the session",
    "steps": "number of steps the finding spans",
    "tool": "the tool of the call concerned",
}

_DEFAULT_NUDGE = NOTE_PREFIX + " (automatic, from the run monitor) {advice}"
_DEFAULT_BLOCK = NOTE_PREFIX + " this {tool} call was not run (it continues a {kind} pattern). {advice}"
_DEFAULT_STOP = (
    "Run stopped by planguard: the {kind} pattern persisted ({count} times). Last evidence: {evidence}"
)


def _template(v: str | None) -> str | None:
    return None if v is None else check_template(v, RESPONSE_FIELDS)


class Ladder(BaseModel):
    """Fire count at which each rung starts (null: never). Thresholds must not decrease along the ladder."""

    model_config = ConfigDict(extra="forbid")

    log: int | None = Field(1, ge=1)
    warn: int | None = Field(None, ge=1)
    nudge: int | None = Field(None, ge=1)
    block: int | None = Field(None, ge=1)
    stop: int | None = Field(None, ge=1)

    @model_validator(mode="after")
    def _monotonic(self) -> Ladder:
        prev: tuple[str, int] | None = None
        for rung in RUNGS:
            t = getattr(self, rung)
            if t is None:
                continue
            if prev is not None and t < prev[1]:
                raise ValueError(
                    f"thresholds must not decrease along log → warn → nudge → block → stop "
                    f"(got {rung}={t} after {prev[0]}={prev[1]})"
                )
            prev = (rung, t)
        return self

    def rung(self, count: int) -> str | None:
        """The highest rung whose threshold is reached at fire ``count``."""
        best = None
        for rung in RUNGS:
            t = getattr(self, rung)
            if t is not None and t <= count:
                best = rung
        return best


class PatternSpec(BaseModel):
    """Which calls continue a pattern (for 'block'): any listed tool, canonical action type or role prefix,
    or (``same_call``) exactly the call that triggered the finding. None given: the trigger's tool/action."""

    model_config = ConfigDict(extra="forbid")

    tools: list[str] = Field(default_factory=list, description="fnmatch globs on the tool name.")
    actions: list[str] = Field(
        default_factory=list, description="Canonical action types, e.g. SEARCH, FILE_READ."
    )
    roles: list[str] = Field(default_factory=list, description="Phase role prefixes, e.g. L_navigate.")
    same_call: bool = Field(False, description="The same tool with the same (normalised) arguments.")
    ends_on: Literal["other", "progress"] = Field(
        "other",
        description="What ends the pattern (disarming a block): any call that does not continue it, or only "
        "progress — a file write, a validation run, or a patch/validation phase.",
    )


class ResponseConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ladder: Ladder = Field(default_factory=Ladder, description="Fire count at which each rung starts.")
    cooldown_steps: int = Field(
        5, ge=0, description="Steps after a response (warn and above) during which new fires are only logged."
    )
    exempt_tools: list[str] = Field(
        default_factory=list, description="fnmatch globs: findings on these tools are ignored; never blocked."
    )
    block_calls: int = Field(1, ge=1, description="Continuing calls denied per 'block' response.")
    pattern: PatternSpec | None = Field(
        None,
        description="Calls that continue the pattern (default: built-in for known kinds, else same tool).",
    )
    delivery: Literal["ephemeral", "persisted"] = "ephemeral"
    message: str | None = Field(
        None, description="Nudge text template (fields: " + ", ".join(RESPONSE_FIELDS) + ")."
    )
    block_message: str | None = Field(None, description="Reason shown to the model for a blocked call.")
    stop_message: str | None = Field(None, description="Final answer text of a stopped run.")

    _check = field_validator("message", "block_message", "stop_message")(_template)


def _default_findings() -> dict[str, ResponseConfig]:
    # Conservative: nudge once a search loop is seen, tell operators when it recurs; no block/stop by default.
    return {"search_loop": ResponseConfig(ladder=Ladder(log=1, nudge=1, warn=None))}


class ResponsesConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(True, description="Respond to detector findings.")
    default: ResponseConfig = Field(
        default_factory=ResponseConfig, description="Response for finding kinds not listed under 'findings'."
    )
    findings: dict[str, ResponseConfig] = Field(
        default_factory=_default_findings, description="Per finding kind (detector name): its response."
    )


class _Rule:
    """A kind's response config, compiled."""

    __slots__ = (
        "actions",
        "block",
        "cfg",
        "ephemeral",
        "exempt",
        "nudge",
        "on_progress",
        "roles",
        "same_as_trigger",
        "same_call",
        "stop",
        "tools",
    )

    def __init__(self, kind: str, cfg: ResponseConfig):
        self.cfg = cfg
        self.exempt = compile_globs(cfg.exempt_tools) if cfg.exempt_tools else None
        pattern = cfg.pattern
        if pattern is None and kind in _DEFAULT_PATTERNS:
            pattern = PatternSpec(**_DEFAULT_PATTERNS[kind])
        self.same_call = pattern is not None and pattern.same_call
        self.on_progress = pattern is not None and pattern.ends_on == "progress"
        self.same_as_trigger = not self.same_call and (
            pattern is None or not (pattern.tools or pattern.actions or pattern.roles)
        )
        self.tools = compile_globs(pattern.tools) if pattern is not None and pattern.tools else None
        self.actions: frozenset[str] = (
            frozenset(a.upper() for a in pattern.actions) if pattern else frozenset()
        )
        self.roles: tuple[str, ...] = tuple(pattern.roles) if pattern else ()
        self.ephemeral = cfg.delivery == "ephemeral"
        self.nudge = cfg.message or _DEFAULT_NUDGE
        self.block = cfg.block_message or _DEFAULT_BLOCK
        self.stop = cfg.stop_message or _DEFAULT_STOP

    def is_exempt(self, tool: str) -> bool:
        return self.exempt is not None and self.exempt.fullmatch(tool) is not None


@dataclass(slots=True)
class _KindState:
    fires: int = 0
    last_response: int | None = None  # step index of the last response above 'log'
    block_left: int = 0
    trigger_tool: str = ""
    trigger_action: str | None = None
    trigger_call: Any = None
    finding: Finding | None = None


@dataclass(slots=True)
class _State:
    kinds: dict[str, _KindState] = field(default_factory=dict)
    armed: int = 0  # kinds with block_left > 0 (fast path: nothing to check before a call)
    stop: Decision | None = None


#: Distinct finding kinds a session tracks (detectors are a fixed, small set; this bounds memory anyway).
_MAX_KINDS = 64


def _call_key(event: ToolEvent) -> Any:
    try:
        return call_key(event)
    except TypeError:  # unhashable argument values: fall back to the tool and the raw text
        return (event.tool, repr(event.arguments))


def _is_progress(step: Step) -> bool:
    """A file write, a validation run, or a patch/validation phase: what ends loop-like patterns."""
    a = step.action
    if a is not None and (action_type(step) == "FILE_WRITE" or getattr(a, "is_validation", False)):
        return True
    return any(r == "P" or r.startswith("V_") for r in step.classification.roles)


def action_type(step: Step) -> str | None:
    """The canonical action type of a step (e.g. ``SEARCH``) when the pipeline classifies actions."""
    a = step.action
    if a is None:
        return None
    t = getattr(a, "type", None)
    if t is None:
        return None
    name = getattr(t, "name", None)
    return (name if isinstance(name, str) else str(t)).upper()


class DetectorResponses(Policy):
    name = "responses"

    def __init__(self, config: ResponsesConfig | None = None):
        self.config = config = config or ResponsesConfig()
        self._active = config.enabled
        self._rules = {k: _Rule(k, c) for k, c in config.findings.items()}
        self._default = config.default

    def new_state(self) -> _State:
        return _State()

    def rule(self, kind: str) -> _Rule:
        r = self._rules.get(kind)
        if r is None:
            r = _Rule(kind, self._default)
            if len(self._rules) < 4 * _MAX_KINDS:
                self._rules[kind] = r
        return r

    # ------------------------------------------------------------------ hooks

    def before_tool(self, step: Step, session: Session, state: _State) -> Decision | None:
        if state.stop is not None:
            return state.stop
        if not state.armed:
            return None
        tool = step.event.tool
        for kind, ks in state.kinds.items():
            if ks.block_left <= 0:
                continue
            rule = self.rule(kind)
            if rule.is_exempt(tool):
                continue
            if self._continues(rule, ks, step):
                ks.block_left -= 1
                if ks.block_left == 0:
                    state.armed -= 1
                return Decision(
                    DecisionKind.DENY, self._fmt(rule.block, kind, ks, tool), self.name, ks.finding
                )
            if not rule.on_progress or _is_progress(step):
                ks.block_left = 0  # the agent broke the pattern: nothing left to block
                state.armed -= 1
        return None

    def after_tool(self, step: Step, session: Session, state: _State) -> Iterable[Decision]:
        if not step.findings or not self._active:
            return ()
        out: list[Decision] = []
        for f in step.findings:
            d = self._respond(f, step, state)
            if d is not None:
                out.append(d)
        return out

    # ------------------------------------------------------------------ internals

    def _respond(self, f: Finding, step: Step, state: _State) -> Decision | None:
        kind = f.detector
        rule = self.rule(kind)
        tool = step.event.tool
        if rule.is_exempt(tool):
            return None
        ks = state.kinds.get(kind)
        if ks is None:
            if len(state.kinds) >= _MAX_KINDS:
                return None
            ks = state.kinds[kind] = _KindState()
        ks.fires += 1
        ks.finding = f
        ks.trigger_tool = tool
        ks.trigger_action = action_type(step)
        if rule.same_call:
            ks.trigger_call = _call_key(step.event)
        rung = rule.cfg.ladder.rung(ks.fires)
        if rung is None:
            return None
        log = Decision(DecisionKind.LOG, f"{kind}: {f.evidence}", self.name, f)
        if rung == "log":
            return log
        if ks.last_response is not None and step.index - ks.last_response < rule.cfg.cooldown_steps:
            return log
        ks.last_response = step.index
        if rung == "warn":
            return Decision(DecisionKind.NOTIFY, f"{kind}: {f.evidence}", self.name, f)
        if rung == "nudge":
            return Decision(
                DecisionKind.NUDGE, self._fmt(rule.nudge, kind, ks, tool), self.name, f, rule.ephemeral
            )
        if rung == "block":
            if ks.block_left <= 0:
                state.armed += 1
            ks.block_left = rule.cfg.block_calls
            return log
        # stop: every later call is answered with STOP until the integration ends the run
        state.stop = Decision(DecisionKind.STOP, self._fmt(rule.stop, kind, ks, tool), self.name, f)
        return log

    @staticmethod
    def _continues(rule: _Rule, ks: _KindState, step: Step) -> bool:
        tool = step.event.tool
        if rule.same_call:
            return ks.trigger_call is not None and _call_key(step.event) == ks.trigger_call
        if rule.same_as_trigger:
            act = action_type(step)
            if ks.trigger_action is not None and act is not None:
                return act == ks.trigger_action
            return tool == ks.trigger_tool
        if rule.tools is not None and rule.tools.fullmatch(tool):
            return True
        if rule.actions:
            act = action_type(step)
            if act is not None and act in rule.actions:
                return True
        if rule.roles:
            for r in step.classification.roles:
                for prefix in rule.roles:
                    if r == prefix or r.startswith(prefix + "_"):
                        return True
        return False

    @staticmethod
    def _fmt(template: str, kind: str, ks: _KindState, tool: str) -> str:
        f = ks.finding
        evidence = f.evidence if f is not None else ""
        steps = (f.last_step - f.first_step + 1) if f is not None else 0
        return template.format_map(
            {
                "kind": kind,
                "evidence": evidence,
                "advice": ADVICE.get(kind, evidence),
                "count": ks.fires,
                "steps": steps,
                "tool": tool or "tool",
            }
        )
