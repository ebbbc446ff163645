"""A scripted chat model for tests, demos and benchmarks: real LangChain/LangGraph machinery, no API key.

    model = ScriptedChatModel(turns=[
        turn(call("read_file", path="app.py")),
        turn(call("grep", pattern="parse"), call("grep", pattern="format")),   # parallel tool calls
        turn(text="All done."),                                                 # no call: the run ends
    ])
    agent = create_agent(model, tools, middleware=[PlanGuardMiddleware(guard)])

The answer to a request is the turn numbered by how many ``AIMessage`` the request already holds, so a
conversation's position comes from its own history: several threads can share one model concurrently, and
messages planguard adds (user-role reminders) do not shift the script. Every request is kept in
``requests`` (with its thread id) so tests can assert on exactly what the model was sent.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, ToolCall
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from pydantic import ConfigDict, PrivateAttr

from .translate import thread_id_of

__all__ = ["ModelRequestRecord", "ScriptedChatModel", "call", "turn"]

#: A turn: a fixed answer, or a function of the request's messages (``None`` = end of script).
Turn = AIMessage | Callable[[list[BaseMessage]], "AIMessage | None"]


def call(name: str, /, **args: Any) -> ToolCall:
    """One tool call for :func:`turn` (its id is assigned when the turn is played)."""
    return ToolCall(name=name, args=args, id=None, type="tool_call")


def turn(*calls: ToolCall, text: str = "") -> AIMessage:
    """A model answer: ``text`` plus zero or more tool calls (several = parallel calls)."""
    return AIMessage(content=text, tool_calls=list(calls))


@dataclass(frozen=True, slots=True)
class ModelRequestRecord:
    thread_id: str | None
    messages: list[BaseMessage]


class ScriptedChatModel(BaseChatModel):
    """Plays ``turns`` in order per conversation; past the end it answers ``final`` (no tool call)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    turns: Sequence[Any] = ()
    final: str = "Done."
    model_name: str = "scripted"
    record: bool = True  # keep every request in ``requests`` (benchmarks turn it off)
    _requests: list[ModelRequestRecord] = PrivateAttr(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "planguard-scripted"

    @property
    def requests(self) -> list[ModelRequestRecord]:
        with self._lock:
            return list(self._requests)

    def requests_for(self, thread_id: str | None) -> list[list[BaseMessage]]:
        return [r.messages for r in self.requests if r.thread_id == thread_id]

    def bind_tools(
        self,
        tools: Sequence[Any],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        # The script already knows which tools it calls; binding changes nothing.
        return self

    def answer(self, messages: list[BaseMessage]) -> AIMessage:
        """The scripted answer to ``messages`` (a fresh message object each time)."""
        k = sum(1 for m in messages if isinstance(m, AIMessage))
        planned: Any = self.turns[k] if k < len(self.turns) else None
        if callable(planned):
            planned = planned(messages)
        if planned is None:
            return AIMessage(content=self.final)
        if not isinstance(planned, AIMessage):
            raise TypeError(f"turn {k}: expected an AIMessage or a callable returning one, got {planned!r}")
        calls = [
            ToolCall(
                name=c["name"], args=dict(c["args"]), id=c.get("id") or f"call_{k}_{j}", type="tool_call"
            )
            for j, c in enumerate(planned.tool_calls)
        ]
        return AIMessage(content=planned.content, tool_calls=calls)

    def _record(self, messages: list[BaseMessage], kwargs: dict[str, Any]) -> None:
        if not self.record:
            return
        thread = None
        try:
            from langgraph.config import get_config

            thread = thread_id_of(get_config())
        except RuntimeError:
            pass
        with self._lock:
            self._requests.append(ModelRequestRecord(thread, list(messages)))

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self._record(messages, kwargs)
        return ChatResult(generations=[ChatGeneration(message=self.answer(messages))])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return self._generate(messages, stop, None, **kwargs)
