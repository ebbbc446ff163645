"""Offline replay: recorded trajectories through the very same ``Session`` the live integrations drive."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from .actions.types import Action, ActionType, WriteKind
from .events import ToolEvent
from .loaders import LoadError, Trajectory, iter_trajectories
from .phases import PhaseRules, get_rules
from .phases.roles import GENERAL, Classification, Command
from .plan import PRESETS, SCORED_SETTINGS, Plan, resolve_plan
from .session import Pipeline, SessionSummary
from .step import Step
from .store.records import RECORDED_KEY

__all__ = [
    "PAPER_SETTINGS",
    "RecordedActions",
    "RecordedRules",
    "ReplayResult",
    "replay",
    "replay_pipeline",
    "resolve_plans",
]

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
    plans: Sequence[Plan] = (PRESETS["plan"],), rules: str = "v351278e", *, diagnostics: bool = True
) -> Pipeline:
    """The offline pipeline: phases and metrics, plus canonical actions and detectors when ``diagnostics``.

    A step recorded without content (a store kept metadata only) is taken as recorded — its commands'
    roles and its action type — since there is nothing to classify again; every other step is classified.
    """
    kwargs: dict[str, Any] = {}
    if diagnostics:
        from .actions import classify_action
        from .detectors import default_detectors

        kwargs = {"actions": RecordedActions(classify_action), "detectors": default_detectors()}
    # (the pipeline asks its rules only for new_state() and classify(), and reads their name)
    recorded_first = cast(PhaseRules, RecordedRules(get_rules(rules)))
    return Pipeline(rules=recorded_first, plans=tuple(plans), **kwargs)


def _recorded(event: ToolEvent) -> dict[str, Any] | None:
    meta = event.metadata
    recorded = meta.get(RECORDED_KEY) if meta else None
    return recorded if isinstance(recorded, dict) else None


class RecordedRules:
    """Phase rules that take a step's recorded commands (see ``RECORDED_KEY``) when it has them."""

    def __init__(self, rules: PhaseRules) -> None:
        self.rules = rules
        self.name = getattr(rules, "name", None)

    def new_state(self) -> Any:
        return self.rules.new_state()

    def classify(self, event: ToolEvent, state: Any) -> Classification:
        recorded = _recorded(event)
        if recorded is None:
            return self.rules.classify(event, state)
        commands = tuple(Command(str(label), str(role)) for label, role in recorded.get("commands") or ())
        return Classification(commands or (Command(event.tool or "unknown", GENERAL),))


class RecordedActions:
    """An action classifier that rebuilds a step's recorded action (its type, tool, intent, write kind
    and flags; for target and path, their digests: the texts were content) when it has one."""

    def __init__(self, classify: Callable[[ToolEvent], Any]) -> None:
        self.classify = classify

    def __call__(self, event: ToolEvent) -> Any:
        recorded = _recorded(event)
        if recorded is None:
            return self.classify(event)
        fields = recorded.get("action")
        if not isinstance(fields, dict) or fields.get("type") not in _ACTION_TYPES:
            return None
        write = fields.get("write")
        return Action(
            ActionType(fields["type"]),
            target=fields.get("target") or _digest(fields.get("target_id")),
            tool=str(fields.get("tool") or event.tool),
            path=fields.get("path") or _digest(fields.get("path_id")),
            intent=fields.get("intent"),
            is_validation=bool(fields.get("is_validation")),
            is_source_write=bool(fields.get("is_source_write")),
            is_completion=bool(fields.get("is_completion")),
            write=WriteKind(write) if write in _WRITE_KINDS else None,
            shell=fields.get("shell"),
            structured=bool(fields.get("structured")),
            scaffold=fields.get("scaffold"),
        )


def _digest(value: Any) -> str | None:
    """A recorded target's or path's digest, as the text detectors compare (``#`` marks it one)."""
    return f"#{value}" if isinstance(value, str) and value else None


_ACTION_TYPES = frozenset(t.value for t in ActionType)
_WRITE_KINDS = frozenset(k.value for k in WriteKind)


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
