"""The ``policies:`` section of the config file and how it becomes policy objects."""

from __future__ import annotations

import importlib
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..notify import NotifyConfig
from ..plan import Plan
from .base import Policy
from .escalation import DetectorResponses, ResponsesConfig
from .gates import Gate, GateConfig
from .reminder import PeriodicReminder, ReminderConfig
from .todo import TodoConfig, TodoPolicy
from .violations import PlanViolations, ViolationsConfig

__all__ = ["PluginSpec", "PoliciesConfig", "build_policies", "load_plugin"]


class PluginSpec(BaseModel):
    """A user extension named in config: ``class: "package.module:ClassName"`` built with ``options``."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    class_: str = Field(
        alias="class",
        pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$",
        description="Import path 'package.module:ClassName'.",
    )
    options: dict[str, Any] = Field(
        default_factory=dict, description="Keyword arguments for the constructor."
    )


class PoliciesConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reminder: ReminderConfig = Field(default_factory=ReminderConfig, description="Periodic plan reminder.")
    violations: ViolationsConfig = Field(
        default_factory=ViolationsConfig, description="Targeted violation reminders."
    )
    responses: ResponsesConfig = Field(
        default_factory=ResponsesConfig, description="Escalating responses to detector findings."
    )
    gates: list[GateConfig] = Field(
        default_factory=list, description="Deny tool calls until conditions hold."
    )
    todo: TodoConfig = Field(
        default_factory=TodoConfig,
        description="The agent's own todo list: stale-list reminder and finish check (active once the agent "
        "writes a list with its todo tool).",
    )
    notify: NotifyConfig = Field(default_factory=NotifyConfig, description="Webhook notifications.")
    custom: list[PluginSpec] = Field(
        default_factory=list, description="Your own Policy subclasses, run after the built-in ones."
    )


def load_plugin(spec: PluginSpec, base: type, where: str) -> Any:
    """Import and build ``spec``; errors say which config key and what was expected."""
    module_name, _, attr = spec.class_.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"{where}.class: cannot import {spec.class_!r} ({exc})") from exc
    if not (isinstance(obj, type) and issubclass(obj, base)):
        raise ValueError(f"{where}.class: expected a {base.__name__} subclass, got {spec.class_!r}")
    try:
        return obj(**spec.options)
    except TypeError as exc:
        raise ValueError(f"{where}.options: {spec.class_} does not accept these options ({exc})") from exc


def build_policies(config: PoliciesConfig, plan: Plan, *, fail_closed_gates: bool = False) -> list[Policy]:
    """Policies in the order they are asked before a call: a stop first, then gates, then the rest.

    The first blocking decision wins, so a gate and the finish check never both answer one call.
    """
    policies: list[Policy] = []
    if config.responses.enabled:
        policies.append(DetectorResponses(config.responses))
    policies.extend(Gate(g, plan, fail_closed=fail_closed_gates) for g in config.gates)
    if config.violations.enabled and plan.phases:
        policies.append(PlanViolations(plan, config.violations))
    if config.todo.enabled:
        policies.append(TodoPolicy(config.todo))
    if config.reminder.enabled and plan.phases:
        policies.append(PeriodicReminder(plan, config.reminder))
    for i, spec in enumerate(config.custom):
        policies.append(load_plugin(spec, Policy, f"policies.custom.{i}"))
    return policies
