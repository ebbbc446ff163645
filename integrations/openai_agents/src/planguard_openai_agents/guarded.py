"""The guardrail, run hooks and model input filter (see the package docstring)."""

from __future__ import annotations

import dataclasses
import inspect
import json
import os
import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from agents import (
    Agent,
    FunctionTool,
    RunConfig,
    RunHooks,
    Runner,
    ToolGuardrailFunctionOutput,
    ToolInputGuardrail,
    ToolInputGuardrailData,
)
from agents.run_config import CallModelData, ModelInputData

from planguard.decisions import Decision, DecisionKind
from planguard.documents import loads_json
from planguard.events import ASSISTANT, USER, ToolEvent

if TYPE_CHECKING:
    from agents.result import RunResult, RunResultStreaming

    from planguard.guard import Guard
    from planguard.session import SessionSummary

__all__ = ["GUARDRAIL_NAME", "Planguard", "PlanguardModelInputFilter", "PlanguardRunHooks", "tool_event"]

GUARDRAIL_NAME = "planguard"
#: Tool calls whose decision is remembered (the SDK may run input guardrails twice for one call).
MAX_REMEMBERED_CALLS = 4096


def tool_event(
    tool_name: str, arguments: str | None, call_id: str | None, work_dir: str | None = None
) -> ToolEvent:
    """A function call as a ToolEvent: arguments parsed when they are a JSON object, else kept raw.
    ``work_dir`` (the repository the agent works in) is recorded as the call's ``cwd``."""
    parsed: dict[str, Any] | str = {}
    if arguments:
        try:
            value = loads_json(arguments)
        except ValueError:  # not JSON, or hostile (deep nesting): kept as the raw string
            value = None
        parsed = value if isinstance(value, dict) else arguments
    metadata = {"source": "openai-agents"}
    if work_dir:
        metadata["cwd"] = work_dir
    return ToolEvent(tool=tool_name, arguments=parsed, call_id=call_id or None, metadata=metadata)


def _result_text(result: object) -> str:
    if isinstance(result, str):
        return result
    try:
        return json.dumps(result, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(result)


class PlanguardModelInputFilter:
    """``RunConfig.call_model_input_filter`` for one session; chains an existing filter first."""

    def __init__(self, owner: Planguard, session_id: str, inner: Any = None) -> None:
        self.owner = owner
        self.session_id = session_id
        self.inner = inner

    async def __call__(self, data: CallModelData[Any]) -> ModelInputData:
        model_data = data.model_data
        if self.inner is not None:
            out = self.inner(data)
            model_data = await out if inspect.isawaitable(out) else out
        decisions = await self.owner.guard.abefore_model(self.session_id)
        text = "\n\n".join(d.message for d in decisions if d.injects and d.message)
        if not text:
            return model_data
        reminder: Any = {"role": "user", "content": text}
        return ModelInputData(input=[*model_data.input, reminder], instructions=model_data.instructions)


class PlanguardRunHooks(RunHooks[Any]):
    """Observation: records each tool call's start (unless the guardrail already did) and its result."""

    def __init__(self, owner: Planguard, session_id: str) -> None:
        self.owner = owner
        self.session_id = session_id

    async def on_llm_start(
        self, context: Any, agent: Any, system_prompt: str | None, input_items: list[Any]
    ) -> None:
        """The user's turns since the assistant's last message, when the plan matches turns."""
        if self.owner.guard.observes_messages:
            for text in _user_turns(input_items):
                await self.owner.guard.aobserve_message(self.session_id, USER, text)

    async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
        """The model's text to the user (its tool calls are hooked where they run)."""
        if self.owner.guard.observes_messages:
            for item in getattr(response, "output", None) or ():
                if _field(item, "type") == "message" and _field(item, "role") == ASSISTANT:
                    text = _content_text(_field(item, "content"))
                    if text.strip():
                        await self.owner.guard.aobserve_message(self.session_id, ASSISTANT, text)

    async def on_tool_start(self, context: Any, agent: Any, tool: Any) -> None:
        call_id = getattr(context, "tool_call_id", None)
        if call_id is not None and self.owner.seen(self.session_id, call_id):
            return
        event = tool_event(
            getattr(tool, "name", ""), getattr(context, "tool_arguments", None), call_id, self.owner.work_dir
        )
        await self.owner.guard.abefore_tool(self.session_id, event)  # observation only: it runs anyway

    async def on_tool_end(self, context: Any, agent: Any, tool: Any, result: object) -> None:
        call_id = getattr(context, "tool_call_id", None)
        event = tool_event(
            getattr(tool, "name", ""), getattr(context, "tool_arguments", None), call_id, self.owner.work_dir
        )
        event.result = _result_text(result)
        await self.owner.guard.aafter_tool(self.session_id, event)


class Planguard:
    """planguard for Agents SDK runs under one :class:`~planguard.guard.Guard`. ``work_dir`` is the repository
    the agents work in (default: the process's working directory): the live phase rules judge the tools'
    file paths against it, wherever it lives."""

    def __init__(self, guard: Guard, *, work_dir: str | os.PathLike[str] | None = None) -> None:
        self.guard = guard
        self.work_dir = os.fspath(work_dir) if work_dir is not None else os.getcwd()
        self._decisions: OrderedDict[tuple[str, str], Decision] = OrderedDict()
        self._lock = threading.Lock()
        self.guardrail: ToolInputGuardrail[Any] = ToolInputGuardrail(
            guardrail_function=self._check, name=GUARDRAIL_NAME
        )

    # ------------------------------------------------------------------ wiring

    def guard_tools(self, agents: Agent[Any] | Iterable[Agent[Any]]) -> None:
        """Add the guardrail to every function tool of ``agents`` and of the agents they hand off to."""
        todo = [agents] if isinstance(agents, Agent) else list(agents)
        done: set[int] = set()
        while todo:
            agent = todo.pop()
            if id(agent) in done:
                continue
            done.add(id(agent))
            for tool in agent.tools:
                if isinstance(tool, FunctionTool):
                    guardrails = list(tool.tool_input_guardrails or [])
                    if not any(g is self.guardrail for g in guardrails):
                        tool.tool_input_guardrails = [self.guardrail, *guardrails]
            for handoff in agent.handoffs:
                if isinstance(handoff, Agent):
                    todo.append(handoff)

    def hooks(self, session_id: str) -> PlanguardRunHooks:
        return PlanguardRunHooks(self, session_id)

    def run_config(self, session_id: str, base: RunConfig | None = None) -> RunConfig:
        """``base`` (or a default RunConfig) with planguard's model input filter for ``session_id``."""
        base = base if base is not None else RunConfig()
        inner = base.call_model_input_filter
        if isinstance(inner, PlanguardModelInputFilter):
            inner = inner.inner
        return dataclasses.replace(
            base, call_model_input_filter=PlanguardModelInputFilter(self, session_id, inner)
        )

    async def run(
        self,
        agent: Agent[Any],
        input: Any,
        *,
        session_id: str,
        run_config: RunConfig | None = None,
        end: bool = True,
        **kwargs: Any,
    ) -> RunResult:
        """``Runner.run`` with the guardrail, hooks and filter in place; the session ends with the run."""
        self.guard_tools(agent)
        try:
            return await Runner.run(
                agent,
                input,
                hooks=self.hooks(session_id),
                run_config=self.run_config(session_id, run_config),
                **kwargs,
            )
        finally:
            if end:
                await self.guard.aend(session_id)

    def run_sync(
        self,
        agent: Agent[Any],
        input: Any,
        *,
        session_id: str,
        run_config: RunConfig | None = None,
        end: bool = True,
        **kwargs: Any,
    ) -> RunResult:
        """``Runner.run_sync`` with the guardrail, hooks and filter in place; the session ends with it."""
        self.guard_tools(agent)
        try:
            return Runner.run_sync(
                agent,
                input,
                hooks=self.hooks(session_id),
                run_config=self.run_config(session_id, run_config),
                **kwargs,
            )
        finally:
            if end:
                self.guard.end(session_id)

    def run_streamed(
        self,
        agent: Agent[Any],
        input: Any,
        *,
        session_id: str,
        run_config: RunConfig | None = None,
        end: bool = True,
        **kwargs: Any,
    ) -> RunResultStreaming:
        """``Runner.run_streamed`` with the guardrail, hooks and filter in place; the session ends when the
        run does (its streamed events consumed, an error, or cancelled)."""
        self.guard_tools(agent)
        result = Runner.run_streamed(
            agent,
            input,
            hooks=self.hooks(session_id),
            run_config=self.run_config(session_id, run_config),
            **kwargs,
        )
        # The task running the agent loop (``_run_impl_task`` before openai-agents 0.25).
        task = getattr(result, "run_loop_task", None) or getattr(result, "_run_impl_task", None)
        if end and task is not None:
            task.add_done_callback(lambda _task: self.guard.end(session_id))
        return result

    async def end(self, session_id: str) -> SessionSummary | None:
        return await self.guard.aend(session_id)

    # ------------------------------------------------------------------ guardrail

    def seen(self, session_id: str, call_id: str) -> bool:
        with self._lock:
            return (session_id, call_id) in self._decisions

    async def _check(self, data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
        ctx = data.context
        session_id = _session_of(ctx)
        if session_id is None:
            # Not a planguard run (no filter in its RunConfig): nothing to gate against.
            return ToolGuardrailFunctionOutput.allow()
        call_id = getattr(ctx, "tool_call_id", None) or ""
        key = (session_id, call_id)
        with self._lock:
            decision = self._decisions.get(key) if call_id else None
        if decision is None:
            event = tool_event(
                getattr(ctx, "tool_name", ""), getattr(ctx, "tool_arguments", None), call_id, self.work_dir
            )
            decision = await self.guard.abefore_tool(session_id, event)
            if call_id:
                with self._lock:
                    self._decisions[key] = decision
                    while len(self._decisions) > MAX_REMEMBERED_CALLS:
                        self._decisions.popitem(last=False)
        if not decision.blocks:
            return ToolGuardrailFunctionOutput.allow()
        info = {"planguard": decision.kind.value, "policy": decision.policy, "message": decision.message}
        if decision.kind is DecisionKind.STOP:
            return ToolGuardrailFunctionOutput.raise_exception(output_info=info)
        return ToolGuardrailFunctionOutput.reject_content(decision.message, output_info=info)


def _field(item: Any, key: str) -> Any:
    """A Responses item's field, whether the item is a dict (input) or a model object (output)."""
    return item.get(key) if isinstance(item, dict) else getattr(item, key, None)


def _content_text(content: Any) -> str:
    """A message's text: a string, or its text parts (``input_text``/``output_text``) joined."""
    if isinstance(content, str):
        return content
    parts = [_field(part, "text") for part in content or ()]
    return "\n".join(p for p in parts if isinstance(p, str))


def _user_turns(items: list[Any]) -> list[str]:
    """The user messages after the model's last output item (its message, tool call or reasoning); tool
    outputs (``*_output`` items) between them are skipped."""
    turns: list[str] = []
    for item in reversed(items):
        role = _field(item, "role")
        kind = _field(item, "type")
        if role != USER and not (isinstance(kind, str) and kind.endswith("_output")):
            break  # the model's own output: what came before it was read at an earlier call
        if role == USER:
            text = _content_text(_field(item, "content"))
            if text.strip():
                turns.append(text)
    turns.reverse()
    return turns


def _session_of(ctx: Any) -> str | None:
    run_config = getattr(ctx, "run_config", None)
    flt = getattr(run_config, "call_model_input_filter", None)
    return flt.session_id if isinstance(flt, PlanguardModelInputFilter) else None
