"""Plans: the ordered phases an agent is told to follow, and the paper's eight plan settings.

A plan phase names the classifier roles it accepts by *prefix* (PHASE_RULES §5): the phase ``L_reproduce``
accepts ``L_reproduce_newly_generated_test`` and ``L_reproduce_regression_test``. Its ``description`` is
what reminders tell the agent.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .documents import DocumentError, check_depth, decode_utf8, loads_json, loads_yaml

__all__ = ["PlanPhase", "Plan", "PRESETS", "SCORED_SETTINGS", "phase_matches", "load_plan", "resolve_plan"]


def phase_matches(actual: str, expected: str) -> bool:
    """``actual`` (a classifier role) satisfies ``expected`` (a plan phase id) — equal, or a ``_``-prefix."""
    return actual == expected or actual.startswith(expected + "_")


class PlanPhase(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(description="Classifier role (or role prefix) this phase accepts, e.g. 'L_navigate'.")
    symbol: str = Field(description="Short symbol used in Langutory strings, e.g. 'N'.")
    name: str = Field(description="Human name, e.g. 'Navigation'.")
    description: str = Field("", description="What the agent is told to do in this phase (reminder text).")
    scored: bool = Field(
        True, description="Whether compliance metrics expect this phase (the paper's scorer skips some)."
    )


class Plan(BaseModel):
    """An ordered plan. ``expected`` is the phase order compliance is scored against."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    phases: tuple[PlanPhase, ...] = ()
    description: str = ""

    @field_validator("phases")
    @classmethod
    def _unique_ids(cls, phases: tuple[PlanPhase, ...]) -> tuple[PlanPhase, ...]:
        seen: set[str] = set()
        for p in phases:
            if p.id in seen:
                raise ValueError(f"phase id {p.id!r} appears twice; each phase id must be unique")
            seen.add(p.id)
        return phases

    @property
    def expected(self) -> tuple[str, ...]:
        return tuple(p.id for p in self.phases if p.scored)

    @property
    def scored(self) -> bool:
        """A plan with no expected phases (no plan at all) has no compliance score."""
        return bool(self.expected)

    def phase_for(self, role: str) -> PlanPhase | None:
        """The first plan phase that accepts ``role``, scored or not."""
        for p in self.phases:
            if phase_matches(role, p.id):
                return p
        return None

    def render(self) -> str:
        """The plan as the numbered list an agent is shown."""
        lines = [self.description] if self.description else []
        lines += [f"{i}. {p.name}: {p.description}".rstrip(": ") for i, p in enumerate(self.phases, 1)]
        return "\n".join(lines)


_N = PlanPhase(
    id="L_navigate",
    symbol="N",
    name="Navigation",
    description="Search for, open and read the files relevant to the issue to localise the bug.",
)
_R = PlanPhase(
    id="L_reproduce",
    symbol="R",
    name="Reproduction",
    description="Write a new test script that reproduces the bug and run it to confirm it fails.",
)
_P = PlanPhase(id="P", symbol="P", name="Patch", description="Edit the source code to fix the bug.")
_V = PlanPhase(
    id="V_newly_generated_test",
    symbol="V",
    name="Validation",
    description="Rerun your reproduction script and new edge-case tests to confirm the fix.",
)
_RG = PlanPhase(
    id="L_reproduce_regression_test",
    symbol="R_G",
    name="Regression tests (before)",
    description="Run the project's existing tests relevant to the issue before changing anything.",
)
_RN = PlanPhase(
    id="L_reproduce_newly_generated_test",
    symbol="R",
    name="Reproduction",
    description="Write a new test script that reproduces the bug and run it to confirm it fails.",
)
_VG = PlanPhase(
    id="V_regression_test",
    symbol="V_G",
    name="Regression tests (after)",
    description="Run the project's existing tests again to check the fix breaks nothing.",
)
_S = PlanPhase(
    id="S",
    symbol="S",
    name="Summary",
    scored=False,
    description="Summarise your changes in a PR-style description before submitting.",
)

PRESETS: dict[str, Plan] = {
    "plan": Plan(name="plan", phases=(_N, _R, _P, _V), description="Follow these phases in order:"),
    "no_plan": Plan(name="no_plan"),
    "no_reproduce": Plan(
        name="no_reproduce", phases=(_N, _P, _V), description="Follow these phases in order:"
    ),
    "no_validation": Plan(
        name="no_validation", phases=(_N, _R, _P), description="Follow these phases in order:"
    ),
    "plan_and_regression": Plan(
        name="plan_and_regression",
        phases=(_RG, _N, _RN, _P, _V, _VG),
        description="Follow these phases in order:",
    ),
    "plan_and_summary": Plan(
        name="plan_and_summary", phases=(_N, _R, _P, _V, _S), description="Follow these phases in order:"
    ),
    # The paper tells the agent N-P-R-V but its scorer expects only N-P-V here (PHASE_RULES §5).
    "plan_reordered": Plan(
        name="plan_reordered",
        phases=(_N, _P, _R.model_copy(update={"scored": False}), _V),
        description="Follow these phases in order:",
    ),
    "plan_reminded": Plan(
        name="plan_reminded", phases=(_N, _R, _P, _V), description="Follow these phases in order:"
    ),
}
PRESETS["standard"] = PRESETS["plan"]

#: The paper's seven scored settings, in the order its tables use.
SCORED_SETTINGS: tuple[str, ...] = (
    "plan",
    "no_reproduce",
    "no_validation",
    "plan_and_regression",
    "plan_and_summary",
    "plan_reordered",
    "plan_reminded",
)


def load_plan(path: str | Path) -> Plan:
    """Read a plan from a YAML, TOML or JSON file; errors name the file and the offending key."""
    p = Path(path)
    data: Any
    try:
        text = decode_utf8(p.read_bytes())
        if p.suffix == ".toml":
            data = check_depth(tomllib.loads(text))
        elif p.suffix == ".json":
            data = loads_json(text)
        else:
            data = loads_yaml(text)  # aliases and deep nesting refused
    except DocumentError as exc:
        where = f"{p}:{exc.line}" if exc.line else str(p)
        raise ValueError(f"{where}: {exc.problem}") from None
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"{p}: not valid {p.suffix.lstrip('.') or 'YAML'}: {exc}") from None
    if isinstance(data, dict) and "plan" in data and isinstance(data["plan"], dict):
        data = data["plan"]
    if not isinstance(data, dict):
        raise ValueError(f"{p}: expected a mapping with 'name' and 'phases', got {type(data).__name__}")
    data.setdefault("name", p.stem)
    try:
        return Plan.model_validate(data)
    except ValidationError as exc:
        raise ValueError(f"{p}: {_describe(exc)}") from exc


def resolve_plan(spec: str) -> Plan:
    """A preset name or a plan file path."""
    if spec in PRESETS:
        return PRESETS[spec]
    if Path(spec).is_file():
        return load_plan(spec)
    raise ValueError(
        f"unknown plan {spec!r}: expected a preset ({', '.join(sorted(PRESETS))}) or a plan file"
    )


def _describe(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(x) for x in e['loc']) or '<root>'}: {e['msg']}" for e in exc.errors())
