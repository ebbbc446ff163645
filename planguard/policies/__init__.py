"""Policies turn what the pipeline saw into decisions: reminders, nudges, denials, stops, notifications.

One module per policy: ``reminder`` (periodic plan reminder), ``violations`` (targeted reminders when the
plan is departed from), ``escalation`` (responses to detector findings), ``gates`` (deny a tool until
conditions hold), ``todo`` (the agent's own todo list). ``config`` holds the ``policies:`` config section and
builds them.
"""

from ..stages import Policy
from .config import PluginSpec, PoliciesConfig, build_policies
from .escalation import DetectorResponses, Ladder, PatternSpec, ResponseConfig, ResponsesConfig
from .gates import Gate, GateCondition, GateConfig, PhaseAfter
from .match import ToolMatcher, ToolPattern
from .reminder import PeriodicReminder, ReminderConfig
from .todo import TodoConfig, TodoPolicy
from .violations import PlanViolations, ViolationMessages, ViolationsConfig

__all__ = [
    "DetectorResponses",
    "Gate",
    "GateCondition",
    "GateConfig",
    "Ladder",
    "PatternSpec",
    "PeriodicReminder",
    "PhaseAfter",
    "PlanViolations",
    "PluginSpec",
    "PoliciesConfig",
    "Policy",
    "ReminderConfig",
    "ResponseConfig",
    "ResponsesConfig",
    "ToolMatcher",
    "TodoConfig",
    "TodoPolicy",
    "ToolPattern",
    "ViolationMessages",
    "ViolationsConfig",
    "build_policies",
]
