"""Offline replay: recorded trajectories through the very same ``Session`` the live integrations drive."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .loaders import LoadError, Trajectory, iter_trajectories
from .phases import DEFAULT_VERSION, get_rules
from .plan import PRESETS, SCORED_SETTINGS, Plan, resolve_plan
from .session import Pipeline, SessionSummary
from .step import Step

__all__ = ["ReplayResult", "replay", "replay_pipeline", "resolve_plans", "PAPER_SETTINGS"]

#: ``--plan paper-settings``: score every run against all seven scored settings of the paper.
PAPER_SETTINGS = "paper-settings"


@dataclass(slots=True)
class ReplayResult:
    trajectory: Trajectory
    summary: SessionSummary
    steps: list[Step] = field(default_factory=list)  # kept only when asked for (per-step output)


def resolve_plans(spec: str | Sequence[str] | None) -> tuple[Plan, ...]:
    """``None`` → the standard plan; ``paper-settings`` → the seven scored settings; else presets/files."""
    if spec is None:
        return (PRESETS["plan"],)
    specs = [spec] if isinstance(spec, str) else list(spec)
    plans: list[Plan] = []
    for s in specs:
        if s == PAPER_SETTINGS:
            plans.extend(PRESETS[name] for name in SCORED_SETTINGS)
        else:
            plans.append(resolve_plan(s))
    return tuple(plans)


def replay_pipeline(
    plans: Sequence[Plan] = (PRESETS["plan"],), rules: str = DEFAULT_VERSION, *, diagnostics: bool = True
) -> Pipeline:
    """The offline pipeline: phases and metrics, plus canonical actions and detectors when ``diagnostics``."""
    kwargs: dict[str, Any] = {}
    if diagnostics:
        from .actions import classify_action
        from .detectors import default_detectors

        kwargs = {"actions": classify_action, "detectors": default_detectors()}
    return Pipeline(rules=get_rules(rules), plans=tuple(plans), **kwargs)


def replay(
    paths: Iterable[str | Path],
    pipeline: Pipeline,
    *,
    source_format: str | None = None,
    keep_steps: bool = False,
) -> Iterator[ReplayResult | LoadError]:
    """Replay every trajectory under ``paths`` in input order; load errors are yielded, not raised."""
    for item in iter_trajectories(paths, source_format=source_format):
        if isinstance(item, LoadError):
            yield item
            continue
        session = pipeline.session(item.id, **item.meta)
        steps: list[Step] = []
        observe = session.observe
        if keep_steps:
            for event in item.events:
                steps.append(observe(event))
        else:
            for event in item.events:
                observe(event)
        yield ReplayResult(item, session.end(), steps)
