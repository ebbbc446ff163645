"""Plan experiments: plan A / plan B / no plan as live arms, reported default-trap-safe.

Live: :class:`ExperimentPolicy` (assigns the arm, injects its plan, labels the decision-window endpoint)
and :class:`ResultRecorder` (one JSONL record per session). Offline: :func:`read_results` and
``planguard.experiment.analysis.analyze`` (needs numpy: ``pip install 'planguard-agents[experiment]'``).
"""

from __future__ import annotations

from pathlib import Path

from ..errors import ErrorCounter
from .config import ARM_KEY, ArmConfig, ExperimentConfig, TargetsConfig, WindowConfig, assign_arm
from .endpoints import ENDPOINTS, ArgPredicate, Endpoint, ToolMatcher
from .policy import RESULT_KEY, ExperimentPolicy
from .records import Episode, ReadProblem, ResultRecorder, read_results, record_outcome

__all__ = [
    "ARM_KEY",
    "ENDPOINTS",
    "RESULT_KEY",
    "ArgPredicate",
    "ArmConfig",
    "Endpoint",
    "Episode",
    "ExperimentConfig",
    "ExperimentPolicy",
    "ReadProblem",
    "ResultRecorder",
    "TargetsConfig",
    "ToolMatcher",
    "WindowConfig",
    "assign_arm",
    "build_experiment",
    "read_results",
    "record_outcome",
]


def build_experiment(
    config: ExperimentConfig,
    *,
    base_dir: str | None = None,
    errors: object = None,
    tracer_provider: object = None,
    spans: bool = False,
) -> tuple[ExperimentPolicy, ResultRecorder]:
    """The policy and the result sink of an experiment (the guard puts the policy first)."""

    results = Path(config.results)
    if base_dir is not None and not results.is_absolute():
        results = Path(base_dir) / results
    return (
        ExperimentPolicy(config, base_dir=base_dir),
        ResultRecorder(
            results,
            errors=errors if isinstance(errors, ErrorCounter) else None,
            tracer_provider=tracer_provider,
            spans=spans,
        ),
    )
