"""planguard — live plan monitoring for LLM agents.

The pipeline, one stage per module::

    events.ToolEvent → actions.Action → phases.Classification → metrics (Langutory, Compliance)
        → detectors (Finding) → policies (Decision) → sinks (telemetry, store, console)

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
    "Config": "config",
    "load_config": "config",
}

__all__ = [
    "ALLOW",
    "PRESETS",
    "Config",
    "Decision",
    "DecisionKind",
    "Finding",
    "Guard",
    "Pipeline",
    "Plan",
    "PlanPhase",
    "Session",
    "SessionSummary",
    "Step",
    "ToolEvent",
    "__version__",
    "load_config",
]

if TYPE_CHECKING:
    from .config import Config, load_config
    from .decisions import ALLOW, Decision, DecisionKind
    from .events import ToolEvent
    from .findings import Finding
    from .guard import Guard
    from .plan import PRESETS, Plan, PlanPhase
    from .session import Pipeline, Session, SessionSummary
    from .step import Step


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'planguard' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
