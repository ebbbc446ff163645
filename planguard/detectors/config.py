"""Detector configuration: per detector ``enabled`` plus thresholds (defaults: TraceProbe's frozen ones)."""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..plugins import PluginSpec

__all__ = [
    "DetectorsConfig",
    "EffectsConfig",
    "NoTailValidationConfig",
    "PlanAbsenceConfig",
    "RedundantSearchConfig",
    "RepeatedCallConfig",
    "RereadChurnConfig",
    "SearchLoopConfig",
    "ShellOverToolConfig",
    "TodoTrackerConfig",
    "ToolOscillationConfig",
    "UnsupportedCompletionConfig",
]


class _Base(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(True, description="Run this detector.")


class EffectsConfig(_Base):
    """The effect-label / milestone stage (reports no findings; other detectors do not depend on it)."""


class SearchLoopConfig(_Base):
    threshold: int = Field(
        10, ge=1, description="Searches/reads in a row with no write and no validation run."
    )
    strict: bool = Field(
        True,
        description="Consecutive, as TraceProbe defines it: any other action (navigation, other commands) "
        "breaks the streak; false: only a write or a validation run does.",
    )


class RereadChurnConfig(_Base):
    reads: int = Field(3, ge=2, description="Reads of the same file within the window, with no write to it.")
    window: int = Field(10, ge=1, description="Window length in actions.")


class ToolOscillationConfig(_Base):
    cycles: int = Field(
        2, ge=1, description="Read–write–read cycles on one file whose write failed or was reverted."
    )


class RedundantSearchConfig(_Base):
    repeats: int = Field(
        2, ge=2, description="Occurrences of the same normalised search query within the window."
    )
    window: int = Field(10, ge=1, description="Window length in actions.")


class PlanAbsenceConfig(_Base):
    writes: int = Field(
        5, ge=1, description="File writes with no earlier plan/TODO tool call (scaffolds with one)."
    )


class ShellOverToolConfig(_Base):
    """Shell cat/head/tail/less/more or grep/rg/ag/find while structured read/search tools exist."""


class NoTailValidationConfig(_Base):
    tail: int = Field(
        5, ge=1, description="Final actions that must contain a validation after the last source write."
    )


class UnsupportedCompletionConfig(_Base):
    pattern: str = Field(
        r"\b(?:fixed|done|resolved)\b",
        description="Completion-claim regex searched in the final message (case-insensitive).",
    )

    @field_validator("pattern")
    @classmethod
    def _regex(cls, v: str) -> str:
        try:
            re.compile(v)
        except re.error as exc:
            raise ValueError(f"expected a valid regular expression, got {v!r} ({exc})") from None
        return v


class RepeatedCallConfig(_Base):
    repeats: int = Field(
        4, ge=2, description="The same call (tool + normalised arguments) this many times in a row."
    )
    cycles: int = Field(3, ge=2, description="A-B-A-B alternation of two calls for this many cycles.")


class TodoTrackerConfig(_Base):
    """The agent's own todo list, read from its todo tool (reports todo_done_without_work)."""


class DetectorsConfig(BaseModel):
    """The streaming process detectors (TraceProbe Table II plus repeated calls) and the effect tracker."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(
        True, description="false: no effects or detectors at all (canonical actions stay: see tools)."
    )
    effects: EffectsConfig = Field(default_factory=EffectsConfig)
    search_loop: SearchLoopConfig = Field(default_factory=SearchLoopConfig)
    reread_churn: RereadChurnConfig = Field(default_factory=RereadChurnConfig)
    tool_oscillation: ToolOscillationConfig = Field(default_factory=ToolOscillationConfig)
    redundant_search: RedundantSearchConfig = Field(default_factory=RedundantSearchConfig)
    plan_absence: PlanAbsenceConfig = Field(default_factory=PlanAbsenceConfig)
    shell_over_tool: ShellOverToolConfig = Field(default_factory=ShellOverToolConfig)
    no_tail_validation: NoTailValidationConfig = Field(default_factory=NoTailValidationConfig)
    unsupported_completion: UnsupportedCompletionConfig = Field(default_factory=UnsupportedCompletionConfig)
    repeated_call: RepeatedCallConfig = Field(default_factory=RepeatedCallConfig)
    custom: list[PluginSpec] = Field(
        default_factory=list,
        description="Further detectors (a built-in name, an entry-point name or an import path), run after "
        "the configured built-ins; each one's name is a finding kind policies.responses.findings may "
        "respond to.",
    )
    todo: TodoTrackerConfig = Field(default_factory=TodoTrackerConfig)
