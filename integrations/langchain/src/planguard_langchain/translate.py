"""The translation layer, and nothing else: LangChain objects in, planguard objects out, and back.

* a LangChain tool call (``{"name", "args", "id"}``) → :class:`planguard.events.ToolEvent`
* the tool's ``ToolMessage`` (or the exception it raised) → the event's ``result``/``is_error``/``exit_code``
* a blocking :class:`planguard.decisions.Decision` → ``ToolMessage(status="error")``
* reminder/nudge decisions → ``HumanMessage`` s placed where providers accept them
* a stop decision → the run's final ``AIMessage``

No classification, metric or policy logic lives here: every judgement is made by the core ``Session``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolCall, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.types import Command
from planguard.decisions import Decision
from planguard.events import ToolEvent

__all__ = [
    "DEFAULT_SESSION",
    "MESSAGE_ID_PREFIX",
    "ActionRenderer",
    "SessionKey",
    "decision_messages",
    "denial_message",
    "is_planguard_message",
    "record_exception",
    "record_result",
    "safe_insert_index",
    "stop_message",
    "thread_id_of",
    "tool_event",
]

#: Renders one tool's arguments as the scaffold's own action text (``ToolEvent.action``); ``None`` = no text.
ActionRenderer = Callable[[Mapping[str, Any]], "str | None"]
#: Maps a run's ``RunnableConfig`` to a session id; ``None`` means "not known here, use the fallback".
SessionKey = Callable[[RunnableConfig], "str | None"]

#: Session id used when neither the run config nor the agent state names one (custom graphs run without a
#: ``thread_id``): every such run shares this one session, so give your runs a ``thread_id``.
DEFAULT_SESSION = "default"
#: Every message planguard adds to a conversation has an id with this prefix (tests and UIs can spot them).
MESSAGE_ID_PREFIX = "planguard-"


def tool_event(
    call: ToolCall | Mapping[str, Any], actions: Mapping[str, ActionRenderer] | None = None
) -> ToolEvent:
    """The event for a tool call about to run: tool name, argument object, call id (and action text if the
    tool has a renderer)."""
    name = str(call.get("name") or "")
    args = call.get("args")
    arguments: Mapping[str, Any] | str = (
        args if type(args) is dict or isinstance(args, Mapping | str) else {}  # (dict: no ABC check)
    )
    action = None
    if actions:
        render = actions.get(name)
        if render is not None and isinstance(arguments, Mapping):
            action = render(arguments)
    return ToolEvent(name, arguments, call.get("id"), action)  # (positional: keywords cost as much again)


def record_result(event: ToolEvent, result: ToolMessage | Command[Any] | Any) -> None:
    """Copy what the tool returned onto ``event``: text, error status and, when the tool reports one in its
    artifact (``{"exit_code": n}``), the exit code."""
    message = result if isinstance(result, ToolMessage) else _tool_message_of(result, event.call_id)
    if message is None:
        return
    # A plain ``str``, as a loader gives offline (``message.text`` is a ``str`` subclass, which the core does
    # not judge outputs from); for str content that is the content itself.
    content = message.content
    event.result = content if type(content) is str else str(message.text)
    event.is_error = message.status == "error"
    artifact = message.artifact
    if artifact is not None and isinstance(artifact, Mapping):
        code = artifact.get("exit_code")
        if isinstance(code, int) and not isinstance(code, bool):
            event.exit_code = code


def record_exception(event: ToolEvent, exc: BaseException) -> None:
    event.result = f"{type(exc).__name__}: {exc}"
    event.is_error = True


def denial_message(call: ToolCall | Mapping[str, Any], decision: Decision) -> ToolMessage:
    """What the model sees instead of the tool's output when a gate blocks the call."""
    text = decision.message or f"planguard blocked this call ({decision.policy or decision.kind.value})."
    return ToolMessage(
        content=text,
        tool_call_id=str(call.get("id") or ""),
        name=str(call.get("name") or ""),
        status="error",
        id=_message_id(str(decision.kind)),
    )


def decision_messages(decisions: Sequence[Decision]) -> list[HumanMessage]:
    """Reminders and nudges for one model request, one user-role message each, in order (the paper's protocol
    re-inserts the plan as a user turn starting ``PLAN REMINDER:``; a system message mid-conversation is
    rejected by some providers, and consecutive user messages are accepted or merged by all)."""
    return [
        HumanMessage(content=d.message, id=_message_id(str(d.kind)))
        for d in decisions
        if d.injects and d.message
    ]


def stop_message(decision: Decision) -> AIMessage:
    """The final answer of a run a policy stopped: it carries no tool call, so every agent loop ends on it."""
    text = decision.message or f"Run stopped by planguard ({decision.policy or 'policy'})."
    return AIMessage(content=text, id=_message_id("stop"))


def safe_insert_index(messages: Sequence[BaseMessage]) -> int:
    """Where extra messages may go in a model request: the end, unless the conversation ends inside a tool
    round (an ``AIMessage`` whose calls are not all answered yet) — then just before that ``AIMessage``, since
    providers reject anything between a tool call and its result."""
    answered: set[str] = set()
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if isinstance(m, ToolMessage):
            answered.add(m.tool_call_id)
            continue
        if isinstance(m, AIMessage) and m.tool_calls:
            if all(c.get("id") in answered for c in m.tool_calls):
                return len(messages)
            return i
        return len(messages)
    return len(messages)


def thread_id_of(config: RunnableConfig | Mapping[str, Any] | None) -> str | None:
    """The ``thread_id`` of a run config (``config["configurable"]["thread_id"]``), as text."""
    if not config:
        return None
    configurable = config.get("configurable")
    if type(configurable) is not dict and not isinstance(configurable, Mapping):
        return None
    tid = configurable.get("thread_id")
    return None if tid is None else str(tid)


def _message_id(kind: str) -> str:
    """``planguard-<kind>-<12 random hex digits>``: the 48 random bits ``uuid4().hex[:12]`` gave, for less."""
    return f"{MESSAGE_ID_PREFIX}{kind}-{os.urandom(6).hex()}"


def is_planguard_message(message: BaseMessage) -> bool:
    return isinstance(message.id, str) and message.id.startswith(MESSAGE_ID_PREFIX)


def _tool_message_of(result: Any, call_id: str | None) -> ToolMessage | None:
    if isinstance(result, ToolMessage):
        return result
    if isinstance(result, Command):
        update = result.update
        msgs = update.get("messages") if isinstance(update, Mapping) else None
        if isinstance(msgs, Sequence):
            fallback = None
            for m in msgs:
                if isinstance(m, ToolMessage):
                    if m.tool_call_id == call_id:
                        return m
                    fallback = fallback or m
            return fallback
    return None
