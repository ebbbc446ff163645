"""planguard — live plan monitoring for LLM agents.

The pipeline, one stage per module::

    events.ToolEvent → actions.Action → phases.Classification → metrics (Langutory, Compliance)
        → detectors (Finding) → policies (Decision) → sinks (telemetry, store, console)

The three extension points (``Detector``, ``Policy``, ``Sink``) are in ``stages``; ``plugins`` resolves
the ones a config names.

``session.Session`` runs it for one agent run; ``guard.Guard`` owns config, sessions and telemetry for a
process. Names resolve lazily so that importing one piece (e.g. for a short-lived hook process) does not
import them all.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__

_EXPORTS = {
    "ToolEvent": "events",
    "Action": "actions.types",
    "ActionType": "actions.types",
    "Effect": "actions.types",
    "Plan": "plan",
    "PlanPhase": "plan",
    "PRESETS": "plan",
    "Finding": "findings",
    "Decision": "decisions",
    "DecisionKind": "decisions",
    "ALLOW": "decisions",
    "Step": "step",
    "Pipeline": "session",
    "Session": "session",
    "SessionSummary": "session",
    "Guard": "guard",
    "Detector": "stages",
    "Policy": "stages",
    "Sink": "stages",
    "Config": "config",
    "ConfigError": "config",
    "load_config": "config",
    "default_config": "config",
}

__all__ = [
    "ALLOW",
    "PRESETS",
    "Action",
    "ActionType",
    "Config",
    "ConfigError",
    "Decision",
    "DecisionKind",
    "Detector",
    "Effect",
    "Finding",
    "Guard",
    "Pipeline",
    "Plan",
    "PlanPhase",
    "Policy",
    "Session",
    "SessionSummary",
    "Sink",
    "Step",
    "ToolEvent",
    "__version__",
    "default_config",
    "load_config",
]

if TYPE_CHECKING:
    from .actions.types import Action, ActionType, Effect
    from .config import Config, ConfigError, default_config, load_config
    from .decisions import ALLOW, Decision, DecisionKind
    from .events import ToolEvent
    from .findings import Finding
    from .guard import Guard
    from .plan import PRESETS, Plan, PlanPhase
    from .session import Pipeline, Session, SessionSummary
    from .stages import Detector, Policy, Sink
    from .step import Step


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'planguard' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
