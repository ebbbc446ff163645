"""The ``policies:`` section of the config file and how it becomes policy objects."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from ..plan import Plan
from ..plugins import PluginSpec, load_plugin
from ..stages import Policy
from .escalation import DetectorResponses, ResponsesConfig
from .gates import Gate, GateConfig
from .reminder import PeriodicReminder, ReminderConfig
from .todo import TodoConfig, TodoPolicy
from .violations import PlanViolations, ViolationsConfig

__all__ = ["PluginSpec", "PoliciesConfig", "build_policies"]


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
    custom: list[PluginSpec] = Field(
        default_factory=list,
        description="Your own Policy subclasses (import path or entry-point name), after the built-ins.",
    )


def build_policies(
    config: PoliciesConfig,
    plan: Plan,
    *,
    fail_closed_gates: bool = False,
    experiment: Policy | None = None,
) -> list[Policy]:
    """Policies in the order they are asked before a call: a stop first, then gates, then the rest.

    The first blocking decision wins, so a gate and the finish check never both answer one call.
    ``experiment``: a running plan experiment's policy (:func:`planguard.experiment.build_experiment`). It
    goes first, so it sees every attempted call, and it reminds each arm of the arm's own plan in place of
    the periodic reminder.
    """
    policies: list[Policy] = [experiment] if experiment is not None else []
    if config.responses.enabled:
        policies.append(DetectorResponses(config.responses))
    policies.extend(Gate(g, plan, fail_closed=fail_closed_gates) for g in config.gates)
    if config.violations.enabled and plan.phases:
        policies.append(PlanViolations(plan, config.violations))
    if config.todo.enabled:
        policies.append(TodoPolicy(config.todo))
    if config.reminder.enabled and plan.phases and experiment is None:
        policies.append(PeriodicReminder(plan, config.reminder))
    for i, spec in enumerate(config.custom):
        policies.append(load_plugin("policies", spec, f"policies.custom.{i}"))
    return policies
