"""Canonical actions (TraceProbe Table I): every agent's tool calls in one nine-type vocabulary.

``classify_action(event) -> Action`` is the pipeline stage (``Pipeline(actions=classify_action)``);
:class:`ActionClassifier` over an :class:`ActionVocabulary` is the configurable form (user mapping rules,
work-directory roots, known scaffold). Effect labels are computed after the call ran, by the effect
tracker stage (:class:`planguard.detectors.EffectTracker`) with :class:`EffectLabeler`.
"""

from __future__ import annotations

from typing import Any

from ..tools.paths import DEFAULT_ROOTS, PathNormaliser, is_test_path
from ..tools.vocabulary import (
    BUILTIN_RULES,
    DEFAULT_VOCABULARY,
    SURFACES,
    ActionVocabulary,
    MappingRule,
    ToolSurface,
)
from .anchors import AnchorSet, files_of_diff
from .classify import DEFAULT_CLASSIFIER, ActionClassifier, classify_action
from .effects import EffectLabeler, WriteLedger, label_effects, outcome_failed
from .types import Action, ActionType, Effect, WriteKind

__all__ = [
    "BUILTIN_RULES",
    "DEFAULT_CLASSIFIER",
    "DEFAULT_ROOTS",
    "DEFAULT_VOCABULARY",
    "SURFACES",
    "Action",
    "ActionClassifier",
    "ActionType",
    "ActionVocabulary",
    "AnchorSet",
    "Effect",
    "EffectLabeler",
    "MappingRule",
    "PathNormaliser",
    "ToolSurface",
    "WriteKind",
    "WriteLedger",
    "action_dict",
    "classify_action",
    "files_of_diff",
    "is_test_path",
    "label_effects",
    "outcome_failed",
]


def action_dict(step_or_action: Any, effect: Effect | str | None = None) -> dict[str, Any]:
    """``{"type", "target", "effect"}`` of a step (or of an action plus its effect), for JSON output.

    Given a pipeline ``Step``, the effect is the step's current label (provisional while the run goes
    on, final once the session has ended); ``None`` when the pipeline has no effect tracker.
    """
    action = step_or_action
    if not isinstance(action, Action):
        if effect is None:
            effect = getattr(step_or_action, "effect", None)
        action = getattr(step_or_action, "action", None)
    if not isinstance(action, Action):
        return {"type": None, "target": None, "effect": None if effect is None else str(effect)}
    return {
        "type": action.type.value,
        "target": action.target,
        "effect": None if effect is None else str(effect),
    }
