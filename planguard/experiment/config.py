"""The ``experiment:`` config section: arms (plan A, plan B, no plan), targets, the decision window."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..policies.reminder import ReminderConfig
from .endpoints import ToolMatcher

__all__ = [
    "ARM_KEY",
    "CONDITIONS",
    "ArmConfig",
    "ExperimentConfig",
    "TargetsConfig",
    "WindowConfig",
    "assign_arm",
]

#: Session metadata key through which a caller assigns an arm explicitly (``guard.session(sid, arm="B")``).
ARM_KEY = "arm"
#: The three input conditions of the paired-priority design (paper §3.1).
CONDITIONS: tuple[str, ...] = ("A", "B", "none")


class ArmConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Arm name, recorded with every result.")
    condition: Literal["A", "B", "none"] = Field(
        description="A: the plan prioritises target A; B: target B; none: no plan is shown."
    )
    plan: str | None = Field(None, description="Plan text shown to the agent (not for condition none).")
    plan_file: str | None = Field(None, description="File holding the plan text (instead of ``plan``).")
    text: str | None = Field(
        None, description="Text-condition label: one wording of the A/B pair (paired arms share it)."
    )
    weight: float = Field(1.0, gt=0, description="Relative share of hash-assigned sessions.")

    @model_validator(mode="after")
    def _plan_matches_condition(self) -> ArmConfig:
        if self.condition == "none" and (self.plan is not None or self.plan_file is not None):
            raise ValueError("condition none shows no plan: expected neither plan nor plan_file")
        if self.condition != "none" and (self.plan is None) == (self.plan_file is None):
            raise ValueError(f"condition {self.condition}: expected exactly one of plan, plan_file")
        if self.plan_file is not None and not Path(self.plan_file).is_file():
            raise ValueError(f"plan_file: expected a readable file (not found: {self.plan_file})")
        return self

    def plan_text(self, base: Path | None = None) -> str | None:
        if self.plan is not None:
            return self.plan
        if self.plan_file is None:
            return None
        path = Path(self.plan_file)
        if base is not None and not path.is_absolute():
            path = base / path
        try:
            return path.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise ValueError(f"experiment.arms[{self.name}].plan_file: cannot read {path} ({exc})") from exc


class TargetsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    a: list[ToolMatcher] = Field(alias="A", min_length=1, description="Calls that read target A.")
    b: list[ToolMatcher] = Field(alias="B", min_length=1, description="Calls that read target B.")


class WindowConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    budget: int = Field(10, ge=1, description="Model responses in the window (the paper: 10).")
    stop_agent: bool = Field(
        True,
        description="Stop the run when the window closes (a decision-window study); false lets the episode "
        "continue so task success and cost are measured on the same episode.",
    )
    block_writes: bool = Field(
        True, description="Deny a WRITE call (stopped before it changes state, as in the paper)."
    )
    retry_errors: bool = Field(
        False,
        description="A failed call does not close the window (the agent may retry); ERROR is then "
        "recorded only when the window ends on a failed call.",
    )


class ExperimentConfig(BaseModel):
    """Paired-priority plan experiment (Default-Trap paper §3): each session runs one arm."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(True, description="Run the experiment (assign arms, inject plans, record).")
    name: str = Field("experiment", description="Experiment name, recorded with every result.")
    seed: int = Field(0, description="Seed of the hash assignment of sessions to arms.")
    arms: list[ArmConfig] = Field(min_length=1, description="The arms; usually plan A, plan B and none.")
    targets: TargetsConfig = Field(description="Information targets A and B as tool-call matchers.")
    reads: list[ToolMatcher] | None = Field(
        None, description="The approved read set; a call outside it is WRITE (null: every non-write call)."
    )
    writes: list[ToolMatcher] = Field(default_factory=list, description="Calls that change state (WRITE).")
    ignore: list[ToolMatcher] = Field(
        default_factory=list,
        description="Preparation calls (identity lookups, …) that neither end the window nor count as OTHER.",
    )
    window: WindowConfig = Field(default_factory=WindowConfig)
    reminder: ReminderConfig = Field(
        default_factory=ReminderConfig, description="Re-showing the arm's plan (the runtime's reminder)."
    )
    results: str = Field(
        ".planguard/experiment/results.jsonl", description="JSONL file receiving one record per session."
    )

    @model_validator(mode="after")
    def _unique_arms(self) -> ExperimentConfig:
        names = [a.name for a in self.arms]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"arms: names must be unique (repeated: {', '.join(dup)})")
        return self

    def arm(self, name: str) -> ArmConfig | None:
        return next((a for a in self.arms if a.name == name), None)


def assign_arm(config: ExperimentConfig, session_id: str, explicit: str | None = None) -> ArmConfig:
    """The arm of a session: ``explicit`` (an arm name) when given, else a deterministic hash of
    ``seed:session_id`` over the arms' weights (the same id always gets the same arm)."""
    if explicit is not None:
        arm = config.arm(explicit)
        if arm is None:
            raise ValueError(
                f"unknown arm {explicit!r}; expected one of: {', '.join(a.name for a in config.arms)}"
            )
        return arm
    digest = hashlib.sha256(f"{config.seed}:{session_id}".encode()).digest()
    u = int.from_bytes(digest[:8], "big") / 2**64  # uniform on [0, 1)
    total = sum(a.weight for a in config.arms)
    acc = 0.0
    for arm in config.arms:
        acc += arm.weight / total
        if u < acc:
            return arm
    return config.arms[-1]
