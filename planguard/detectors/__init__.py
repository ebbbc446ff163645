"""Streaming process detectors: TraceProbe's structural anti-patterns, identical-call repeats, and the
effect-label stage.

``default_detectors()`` is the full set with the paper's frozen thresholds; ``build_detectors(config)``
returns the configured detectors for a ``Pipeline`` (the canonical actions they read are the tool
vocabulary's, ``tools:``)::

    detectors = build_detectors(config.detectors, scaffold=config.tools.scaffold)
    Pipeline(actions=build_classifier(config.tools), detectors=tuple(detectors), ...)

==========================  =================================================================  =========
finding (detector name)     predicate (defaults)                                               when
==========================  =================================================================  =========
``search_loop``             ≥10 SEARCH/FILE_READ with no FILE_WRITE and no validation between  live
``reread_churn``            same file read ≥3× within 10 actions, no write to it between       live
``tool_oscillation``        ≥2 read–write–read cycles on a file, write failed or reverted      live
``redundant_search``        same normalised search query ≥2× within 10 actions                 live
``plan_absence``            ≥5 FILE_WRITE before any plan/TODO call (scaffolds with one)       live
``shell_over_tool``         shell cat/head/…/grep/rg/find while structured tools exist         live
``repeated_call``           same call 4× in a row, or A-B alternation for 3 cycles             live
``no_tail_validation``      no validation in (after last source write) ∩ (final 5 actions)     end
``unsupported_completion``  final text says fixed/done/resolved, no passing validation after   end
                            the last source write
``todo_done_without_work``  a todo item marked completed with no write or test since started   live
==========================  =================================================================  =========
"""

from __future__ import annotations

from ..plugins import load_plugin
from ..stages import Detector
from .config import DetectorsConfig
from .effects import EffectState, EffectTracker, set_anchors
from .repeats import RepeatedCall, call_key
from .structural import (
    NoTailValidation,
    PlanAbsence,
    RedundantSearch,
    RereadChurn,
    SearchLoop,
    ShellOverTool,
    ToolOscillation,
    UnsupportedCompletion,
)
from .todo import TodoState, TodoTracker

__all__ = [
    "Detector",
    "DetectorsConfig",
    "EffectState",
    "EffectTracker",
    "NoTailValidation",
    "PlanAbsence",
    "RedundantSearch",
    "RepeatedCall",
    "RereadChurn",
    "SearchLoop",
    "ShellOverTool",
    "TodoState",
    "TodoTracker",
    "ToolOscillation",
    "UnsupportedCompletion",
    "FINDING_KINDS",
    "build_detectors",
    "call_key",
    "custom_detectors",
    "default_detectors",
    "set_anchors",
]


#: The finding kinds of the built-in detectors (a detector's ``name`` is the kind of its findings).
FINDING_KINDS: tuple[str, ...] = tuple(
    d.name
    for d in (
        SearchLoop,
        RereadChurn,
        ToolOscillation,
        RedundantSearch,
        PlanAbsence,
        ShellOverTool,
        RepeatedCall,
        NoTailValidation,
        UnsupportedCompletion,
    )
)


def custom_detectors(config: DetectorsConfig) -> list[Detector]:
    """The ``detectors.custom`` entries, built (a bad entry raises ValueError naming its key)."""
    return [load_plugin("detectors", spec, f"detectors.custom.{i}") for i, spec in enumerate(config.custom)]


def default_detectors(
    config: DetectorsConfig | None = None, *, scaffold: str | None = None
) -> tuple[Detector, ...]:
    """Every built-in detector the config enables (all, with the paper's thresholds, by default).

    The effect tracker comes first; with it, the end-of-run detectors read the run facts it keeps instead
    of observing every step themselves. ``scaffold`` (the config's ``tools.scaffold``) fixes the tool
    surface for the tool-gated detectors; without it they learn it from the run's tool names.
    """
    cfg = config or DetectorsConfig()
    if not cfg.enabled:
        return ()
    sc = scaffold
    out: list[Detector] = []
    tracker = EffectTracker() if cfg.effects.enabled else None
    if tracker is not None:
        out.append(tracker)
    if cfg.search_loop.enabled:
        out.append(SearchLoop(cfg.search_loop.threshold, strict=cfg.search_loop.strict))
    if cfg.reread_churn.enabled:
        out.append(RereadChurn(cfg.reread_churn.reads, cfg.reread_churn.window))
    if cfg.tool_oscillation.enabled:
        out.append(ToolOscillation(cfg.tool_oscillation.cycles))
    if cfg.redundant_search.enabled:
        out.append(RedundantSearch(cfg.redundant_search.repeats, cfg.redundant_search.window))
    if cfg.plan_absence.enabled:
        out.append(PlanAbsence(cfg.plan_absence.writes, scaffold=sc))
    if cfg.shell_over_tool.enabled:
        out.append(ShellOverTool(scaffold=sc))
    if cfg.repeated_call.enabled:
        out.append(RepeatedCall(cfg.repeated_call.repeats, cfg.repeated_call.cycles))
    if cfg.no_tail_validation.enabled:
        out.append(NoTailValidation(cfg.no_tail_validation.tail, effects=tracker))
    if cfg.unsupported_completion.enabled:
        out.append(UnsupportedCompletion(cfg.unsupported_completion.pattern, effects=tracker))
    if cfg.todo.enabled:
        out.append(TodoTracker())
    return tuple(out)


def build_detectors(config: DetectorsConfig | None = None, *, scaffold: str | None = None) -> list[Detector]:
    """The detectors a config asks for (none when disabled): the configured built-ins, then ``custom``.
    ``scaffold``: see :func:`default_detectors`."""
    cfg = config or DetectorsConfig()
    if not cfg.enabled:
        return []
    return [*default_detectors(cfg, scaffold=scaffold), *custom_detectors(cfg)]
