"""planguard in a hand-built LangGraph ``StateGraph``: the same hooks as the middleware, as graph parts.

    hooks = GuardHooks(Guard.from_file("planguard.yaml"))
    builder = StateGraph(MessagesState)
    builder.add_node("model", guarded_model_node(model.bind_tools(tools), hooks))
    builder.add_node("tools", guarded_tool_node(tools, hooks))  # or ToolNode(tools, **tool_wrappers(hooks))
    builder.add_node("end", session_end_node(hooks))
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", tools_condition, {"tools": "tools", END: "end"})
    builder.add_edge("tools", "model")
    builder.add_edge("end", END)

The session is the run's ``thread_id``; it opens at its first model or tool call and closes in
``session_end_node`` (or on ``guard.end(thread_id)`` / idle eviction). A stop decision makes the model node
answer with the policy's final message, which carries no tool call, so ``tools_condition`` ends the run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import LanguageModelInput
from langchain_core.messages import BaseMessage, SystemMessage
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from langchain_core.tools import BaseTool
from langgraph.prebuilt import ToolNode

from .hooks import GuardHooks

__all__ = ["guarded_model_node", "guarded_tool_node", "session_end_node", "tool_wrappers"]


def tool_wrappers(hooks: GuardHooks) -> dict[str, Any]:
    """``ToolNode`` keyword arguments: ``ToolNode(tools, **tool_wrappers(hooks))``."""
    return {"wrap_tool_call": hooks.wrap_tool_call, "awrap_tool_call": hooks.awrap_tool_call}


def guarded_tool_node(tools: Sequence[BaseTool | Any], hooks: GuardHooks, **kwargs: Any) -> ToolNode:
    """A ``ToolNode`` whose every call goes through planguard (gates, phases, results)."""
    return ToolNode(tools, **tool_wrappers(hooks), **kwargs)


def guarded_model_node(
    model: Runnable[LanguageModelInput, BaseMessage],
    hooks: GuardHooks,
    *,
    messages_key: str = "messages",
    system_prompt: str | None = None,
) -> Runnable[Any, dict[str, Any]]:
    """A model node (``state -> {messages_key: [answer]}``) that counts each model call, adds due reminders
    and nudges to the request, and answers with the final message after a stop decision."""

    def _messages(state: Any) -> list[BaseMessage]:
        msgs = state[messages_key] if isinstance(state, dict) else getattr(state, messages_key)
        if system_prompt is not None:
            return [SystemMessage(content=system_prompt), *msgs]
        return list(msgs)

    def call(state: Any, config: RunnableConfig) -> dict[str, Any]:
        sid = hooks.session_for(config, state)
        plan = hooks.before_model(sid, _messages(state))
        if plan.final is not None:
            return {messages_key: [plan.final]}
        answer = model.invoke(plan.messages, config)
        return {messages_key: [*plan.persist, answer]}

    async def acall(state: Any, config: RunnableConfig) -> dict[str, Any]:
        sid = hooks.session_for(config, state)
        plan = await hooks.abefore_model(sid, _messages(state))
        if plan.final is not None:
            return {messages_key: [plan.final]}
        answer = await model.ainvoke(plan.messages, config)
        return {messages_key: [*plan.persist, answer]}

    return RunnableLambda(call, afunc=acall, name="planguard_model")


def session_end_node(hooks: GuardHooks) -> Runnable[Any, dict[str, Any]]:
    """A node that closes the run's session (final detectors, metrics, store record); place it before END."""

    def end(state: Any, config: RunnableConfig) -> dict[str, Any]:
        hooks.end(hooks.session_for(config, state))
        return {}

    async def aend(state: Any, config: RunnableConfig) -> dict[str, Any]:
        await hooks.aend(hooks.session_for(config, state))
        return {}

    return RunnableLambda(end, afunc=aend, name="planguard_end")
