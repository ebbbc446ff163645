"""planguard for LangChain v1 agents and LangGraph graphs.

* ``PlanGuardMiddleware`` — add to ``create_agent(..., middleware=[...])``.
* ``GuardHooks`` + ``guarded_tool_node`` / ``tool_wrappers`` / ``guarded_model_node`` / ``session_end_node`` —
  the same logic for a hand-built ``StateGraph`` with ``langgraph.prebuilt.ToolNode``.
* ``planguard_langchain.testing.ScriptedChatModel`` — a scripted chat model for tests and demos.
"""

from __future__ import annotations

from .graph import guarded_model_node, guarded_tool_node, session_end_node, tool_wrappers
from .hooks import SESSION_STATE_KEY, GuardAPI, GuardHooks, ModelCall
from .middleware import PlanGuardMiddleware, PlanGuardState
from .translate import DEFAULT_SESSION, ActionRenderer, SessionKey, is_planguard_message

__all__ = [
    "DEFAULT_SESSION",
    "SESSION_STATE_KEY",
    "ActionRenderer",
    "GuardAPI",
    "GuardHooks",
    "ModelCall",
    "PlanGuardMiddleware",
    "PlanGuardState",
    "SessionKey",
    "guarded_model_node",
    "guarded_tool_node",
    "is_planguard_message",
    "session_end_node",
    "tool_wrappers",
]
__version__ = "0.1.0"
