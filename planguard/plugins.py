"""One registry for the pipeline's extension points: built-in names, import paths and entry points.

A config names a detector, policy or sink the way OpenTelemetry's SDK names an exporter
(``OTEL_TRACES_EXPORTER=otlp`` loads the entry point ``otlp`` of group ``opentelemetry_traces_exporter``)::

    detectors:
      custom:
        - {class: search_loop, options: {threshold: 20}}       # a built-in, by name
        - {class: my_company_detector}                         # an entry point in group planguard.detectors
        - {class: "my_pkg.checks:NoDeployOnFriday"}             # an import path

A package registers its stages in its ``pyproject.toml``::

    [project.entry-points."planguard.detectors"]
    my_company_detector = "my_pkg.checks:MyCompanyDetector"

Built-in policies are configured by their own sections (``policies.reminder``, ``policies.gates``, …), so
the registry's built-in names are the detectors and the console sink; entry points and import paths work
for all three kinds.
"""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .stages import Detector, Policy, Sink

__all__ = ["BUILTINS", "GROUPS", "Kind", "PluginSpec", "load_plugin", "resolve_class"]

Kind = Literal["detectors", "policies", "sinks"]

#: The entry-point group of each kind.
GROUPS: dict[str, str] = {
    "detectors": "planguard.detectors",
    "policies": "planguard.policies",
    "sinks": "planguard.sinks",
}

_BASES: dict[str, type] = {"detectors": Detector, "policies": Policy, "sinks": Sink}

#: Built-in stages by name (import paths, so that naming one imports only its module).
BUILTINS: dict[str, dict[str, str]] = {
    "detectors": {
        "search_loop": "planguard.detectors.structural:SearchLoop",
        "reread_churn": "planguard.detectors.structural:RereadChurn",
        "tool_oscillation": "planguard.detectors.structural:ToolOscillation",
        "redundant_search": "planguard.detectors.structural:RedundantSearch",
        "plan_absence": "planguard.detectors.structural:PlanAbsence",
        "shell_over_tool": "planguard.detectors.structural:ShellOverTool",
        "no_tail_validation": "planguard.detectors.structural:NoTailValidation",
        "unsupported_completion": "planguard.detectors.structural:UnsupportedCompletion",
        "repeated_call": "planguard.detectors.repeats:RepeatedCall",
    },
    "policies": {},
    "sinks": {
        "console": "planguard.sinks.console:ConsoleSink",
        "phoenix_annotations": "planguard.sinks.scores:PhoenixAnnotations",
        "langfuse_scores": "planguard.sinks.scores:LangfuseScores",
    },
}


class PluginSpec(BaseModel):
    """A stage named in config, built with ``options`` as keyword arguments."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    class_: str = Field(
        alias="class",
        pattern=r"^[A-Za-z_][\w.-]*(?::[A-Za-z_][\w.]*)?$",
        description="A built-in name, an entry-point name of the kind's group (planguard.detectors, "
        "planguard.policies, planguard.sinks), or an import path 'package.module:ClassName'.",
    )
    options: dict[str, Any] = Field(
        default_factory=dict, description="Keyword arguments for the constructor."
    )


def _import(path: str, where: str) -> Any:
    module_name, _, attr = path.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"{where}.class: cannot import {path!r} ({exc})") from exc
    return obj


def resolve_class(kind: Kind, name: str, where: str) -> type:
    """The class ``name`` stands for: an import path, a built-in, or an entry point of the kind's group.

    Errors name the config key (``where``) and what was expected."""
    if ":" in name:
        obj = _import(name, where)
    elif name in BUILTINS[kind]:
        obj = _import(BUILTINS[kind][name], where)
    else:
        found = entry_points(group=GROUPS[kind], name=name)
        if not found:
            known = sorted(BUILTINS[kind]) + sorted(ep.name for ep in entry_points(group=GROUPS[kind]))
            raise ValueError(
                f"{where}.class: no built-in and no entry point in group {GROUPS[kind]!r} is named "
                f"{name!r} (known: {', '.join(known) or 'none'}; or give 'package.module:ClassName')"
            )
        try:
            obj = next(iter(found)).load()
        except Exception as exc:  # a broken plugin package: say which one
            raise ValueError(f"{where}.class: entry point {name!r} failed to load ({exc})") from exc
    base = _BASES[kind]
    if not (isinstance(obj, type) and issubclass(obj, base)):
        raise ValueError(f"{where}.class: expected a {base.__name__} subclass, got {name!r}")
    return obj


def load_plugin(kind: Kind, spec: PluginSpec, where: str) -> Any:
    """Build the stage ``spec`` names; errors say which config key and what was expected."""
    cls = resolve_class(kind, spec.class_, where)
    try:
        return cls(**spec.options)
    except TypeError as exc:
        raise ValueError(f"{where}.options: {spec.class_} does not accept these options ({exc})") from exc
