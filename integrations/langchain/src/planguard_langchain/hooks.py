"""``GuardHooks``: the one place that drives a planguard ``Guard`` from LangGraph's tool and model hooks.

The ``create_agent`` middleware and the custom-graph helpers both delegate here, so a ``ToolNode`` in a
hand-built ``StateGraph`` behaves exactly like an agent built with ``create_agent``. Each hook translates
(:mod:`planguard_langchain.translate`), asks the guard, and applies the answer; the guard owns all state that
matters and serialises access per session, so parallel tool calls (threads or tasks) are safe.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, cast

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.errors import GraphBubbleUp
from langgraph.types import Command
from planguard.decisions import ALLOW, Decision, DecisionKind
from planguard.errors import ErrorCounter
from planguard.events import ASSISTANT, USER

from .tool_spans import handing_over_tool_spans
from .translate import (
    DEFAULT_SESSION,
    ActionRenderer,
    SessionKey,
    decision_messages,
    denial_message,
    record_exception,
    record_result,
    safe_insert_index,
    stop_message,
    thread_id_of,
    tool_event,
)

if TYPE_CHECKING:
    from langgraph.prebuilt.tool_node import ToolCallRequest
    from planguard.events import ToolEvent

__all__ = ["SESSION_STATE_KEY", "GuardAPI", "GuardHooks", "ModelCall"]

#: Agent-state key holding the session id of a run started without a ``thread_id`` (see ``session_for``).
SESSION_STATE_KEY = "planguard_session"
#: Interrupted tool calls (and pending stops) remembered at most; the oldest are forgotten first.
_MAX_SUSPENDED = 1024

ToolResult = ToolMessage | Command[Any]


class GuardAPI(Protocol):
    """The part of :class:`planguard.guard.Guard` the integration uses."""

    def session(self, session_id: str, **metadata: Any) -> Any: ...
    def before_tool(self, session_id: str, event: ToolEvent) -> Decision: ...
    def after_tool(self, session_id: str, event: ToolEvent) -> Any: ...
    def before_model(self, session_id: str) -> list[Decision]: ...
    def end(self, session_id: str) -> Any: ...
    async def abefore_tool(self, session_id: str, event: ToolEvent) -> Decision: ...
    async def aafter_tool(self, session_id: str, event: ToolEvent) -> Any: ...
    async def abefore_model(self, session_id: str) -> list[Decision]: ...
    async def aend(self, session_id: str) -> Any: ...


@dataclass(slots=True)
class ModelCall:
    """How to make one model call: the messages to send, messages to add to the agent's history before the
    model's answer (non-ephemeral reminders), or — instead of calling the model — the final answer."""

    messages: list[BaseMessage]
    persist: list[BaseMessage] = field(default_factory=list)
    final: AIMessage | None = None


class GuardHooks:
    """Tool and model hooks for a :class:`planguard.guard.Guard`.

    ``actions`` maps a tool name to a renderer of its arguments as action text (``ToolEvent.action``), for
    tools whose phase is best judged from a scaffold's own command text; tools without one are classified from
    their name and arguments. ``session_key`` maps a run config to a session id (default: its ``thread_id``).
    ``work_dir`` is the repository the agent works in (default: the process's working directory), recorded
    as each session's ``cwd``: the live phase rules judge file paths against it, wherever it lives.
    """

    def __init__(
        self,
        guard: GuardAPI,
        *,
        actions: Mapping[str, ActionRenderer] | None = None,
        session_key: SessionKey | None = None,
        work_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        self.guard = guard
        self.work_dir = os.fspath(work_dir) if work_dir is not None else os.getcwd()
        # The guard's error counter when it has one, so that planguard's health is read in one place.
        errors = getattr(guard, "errors", None)
        self.errors: ErrorCounter = errors if isinstance(errors, ErrorCounter) else ErrorCounter()
        self.actions: dict[str, ActionRenderer] = dict(actions or {})
        self._session_key: SessionKey = session_key or thread_id_of
        self._default_key = session_key is None
        # Whether a session is live, when the guard can tell (planguard's ``Guard`` can): ``open_session``
        # then touches the guard only for a session that is not open yet.
        contains = getattr(guard, "__contains__", None)
        self._is_live: Callable[[str], bool] | None = contains if callable(contains) else None
        self._lock = threading.Lock()
        # Stop decisions made on a tool call, applied at the session's next model call.
        self._stops: dict[str, Decision] = {}
        self._suspended: OrderedDict[tuple[str, str], None] = OrderedDict()
        # Tools run in the guard's tool scope and hand over the tool span OpenInference's LangChain tracer
        # opens for a call (see _scope): it is then the call's span, enriched by planguard, not duplicated.
        watch = getattr(guard, "watch_tool_spans", None)
        if callable(watch):
            try:
                watch()
            except Exception as exc:  # fail-open
                self.errors.record("GuardHooks.watch_tool_spans", exc)

    # ------------------------------------------------------------------ sessions

    def session_for(self, config: RunnableConfig | None, state: Any = None) -> str:
        """The session id of a run: ``session_key(config)`` (the ``thread_id``), else the id the agent state
        carries under ``planguard_session`` (set at the run's first model call when it has no ``thread_id``),
        else :data:`DEFAULT_SESSION`."""
        sid = self._key(config)
        if sid:
            return sid
        held = _state_get(state, SESSION_STATE_KEY)
        return str(held) if held else DEFAULT_SESSION

    def _key(self, config: RunnableConfig | None) -> str | None:
        if not config:
            return None
        try:
            if self._default_key:  # thread_id_of's common case, inline: this runs on every hook call
                configurable = config.get("configurable")
                if type(configurable) is dict:
                    tid = configurable.get("thread_id")
                    return None if tid is None else str(tid)
            sid = self._session_key(config)
        except Exception as exc:  # a failing session_key falls back like a missing one
            self.errors.record("GuardHooks.session_key", exc)
            return None
        return None if sid is None else str(sid)

    def open_session(
        self, config: RunnableConfig | None, state: Any = None, model: Any = None, **metadata: Any
    ) -> tuple[str, bool]:
        """Open (or resume) the run's session. Returns ``(session_id, generated)``: ``generated`` is true when
        the run had no id and one was made up for it, to be kept in the agent state.

        Called by hooks that run many times per run: the guard is asked to open the session (with
        ``metadata``) only if it is not live yet, so a run's session opens at its first model call and every
        later call costs one lookup. (Sinks read a session's metadata when it opens, so re-applying it to a
        live session would change nothing they record.) ``model``: the chat model of the call, whose
        LangSmith parameters name the session's ``provider`` and ``model`` (``gen_ai.provider.name``,
        ``gen_ai.request.model``) when it opens."""
        sid = self._key(config)
        generated = False
        if not sid:
            held = _state_get(state, SESSION_STATE_KEY)
            if held:
                sid = str(held)
            else:
                sid, generated = f"run-{uuid.uuid4().hex}", True
        is_live = self._is_live
        if generated or is_live is None or not is_live(sid):
            metadata = {"cwd": self.work_dir, **metadata}
            if model is not None:
                metadata = {**self._model_metadata(model), **metadata}
            self._guarded("session", self.guard.session, sid, **metadata)
        return sid, generated

    def _model_metadata(self, model: Any) -> dict[str, str]:
        try:
            params = model._get_ls_params()  # what LangSmith records: ls_provider, ls_model_name
        except Exception as exc:  # not a LangChain chat model (or another version): no metadata
            self.errors.record("GuardHooks.model_metadata", exc)
            return {}
        out = {}
        for key, name in (("ls_provider", "provider"), ("ls_model_name", "model")):
            value = params.get(key) if isinstance(params, dict) else None
            if isinstance(value, str) and value:
                out[name] = value
        return out

    def end(self, session_id: str) -> Any:
        self._forget(session_id)
        return self._guarded("end", self.guard.end, session_id)

    async def aend(self, session_id: str) -> Any:
        self._forget(session_id)
        return await self._aguarded("end", self.guard.aend, session_id)

    # ------------------------------------------------------------------ tools

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], ToolResult]
    ) -> ToolResult:
        """A ``ToolNode`` ``wrap_tool_call``: gate the call, run it, record its result."""
        sid, event, resumed = self._prepare(request)
        if event is not None and not resumed:
            try:
                decision = self.guard.before_tool(sid, event)
            except Exception as exc:  # fail-open
                self.errors.record("GuardHooks.before_tool", exc)
                decision = ALLOW
            if decision is not ALLOW and decision.blocks:
                return self._blocked(sid, request, decision)
        try:
            with self._scope(event):
                result = handler(request)
        except GraphBubbleUp:
            self._suspend(sid, event)
            raise
        except Exception as exc:
            if self._record(event, None, exc):
                self._guarded("after_tool", self.guard.after_tool, sid, event)
            raise
        if event is not None:
            self._take_result(event, result)
            try:
                self.guard.after_tool(sid, event)
            except Exception as exc:  # fail-open
                self.errors.record("GuardHooks.after_tool", exc)
        return result

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[ToolResult]]
    ) -> ToolResult:
        """A ``ToolNode`` ``awrap_tool_call``: the async twin of :meth:`wrap_tool_call`."""
        sid, event, resumed = self._prepare(request)
        if event is not None and not resumed:
            try:
                decision = await self.guard.abefore_tool(sid, event)
            except Exception as exc:  # fail-open
                self.errors.record("GuardHooks.before_tool", exc)
                decision = ALLOW
            if decision is not ALLOW and decision.blocks:
                return self._blocked(sid, request, decision)
        try:
            with self._scope(event):
                result = await handler(request)
        except GraphBubbleUp:
            self._suspend(sid, event)
            raise
        except Exception as exc:
            if self._record(event, None, exc):
                await self._aguarded("after_tool", self.guard.aafter_tool, sid, event)
            raise
        if event is not None:
            self._take_result(event, result)
            try:
                await self.guard.aafter_tool(sid, event)
            except Exception as exc:  # fail-open
                self.errors.record("GuardHooks.after_tool", exc)
        return result

    @contextmanager
    def _scope(self, event: ToolEvent | None) -> Iterator[None]:
        """The tool's execution runs in the guard's tool scope, handing over the tool span OpenInference's
        LangChain tracer opens for the call (:mod:`planguard_langchain.tool_spans`): that span then carries
        planguard's attributes instead of planguard opening a second one."""
        scope = getattr(self.guard, "tool_scope", None)
        entered: AbstractContextManager[None] = nullcontext()
        if event is not None and scope is not None:
            try:
                entered = cast(AbstractContextManager[None], scope(event))
            except Exception as exc:  # fail-open
                self.errors.record("GuardHooks.tool_scope", exc)
        with entered, handing_over_tool_spans():
            yield

    def _take_result(self, event: ToolEvent, result: ToolResult) -> None:
        try:
            record_result(event, result)
        except Exception as err:  # fail-open
            self.errors.record("GuardHooks.record_result", err)

    # Everything planguard does around a call is fail-open: its own errors are counted (``errors``) and the
    # call runs as if planguard were absent. Only the tool's own exception propagates.

    def _prepare(self, request: ToolCallRequest) -> tuple[str, ToolEvent | None, bool]:
        try:
            runtime = request.runtime
            sid = self.session_for(runtime.config if runtime else None, request.state)
            event = tool_event(request.tool_call, self.actions)
        except Exception as exc:  # fail-open
            self.errors.record("GuardHooks.tool_event", exc)
            return DEFAULT_SESSION, None, False
        # (a call is only ever resumed after an interrupt suspended it: skip the lookup otherwise)
        return sid, event, bool(self._suspended) and self._resume(sid, event)

    def _record(self, event: ToolEvent | None, result: Any, exc: Exception | None) -> bool:
        if event is None:
            return False
        try:
            if exc is not None:
                record_exception(event, exc)
            else:
                record_result(event, result)
        except Exception as err:  # fail-open
            self.errors.record("GuardHooks.record_result", err)
        return True

    def _guarded(self, where: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # fail-open
            self.errors.record(f"GuardHooks.{where}", exc)
            return None

    async def _aguarded(self, where: str, fn: Callable[..., Awaitable[Any]], *args: Any) -> Any:
        try:
            return await fn(*args)
        except Exception as exc:  # fail-open
            self.errors.record(f"GuardHooks.{where}", exc)
            return None

    def _blocked(self, sid: str, request: ToolCallRequest, decision: Decision) -> ToolMessage:
        if decision.kind is DecisionKind.STOP:
            with self._lock:
                if sid not in self._stops and len(self._stops) >= _MAX_SUSPENDED:
                    del self._stops[next(iter(self._stops))]  # runs that died before their next model call
                self._stops.setdefault(sid, decision)
        return denial_message(request.tool_call, decision)

    # An interrupt (human-in-the-loop) raised inside a tool re-runs the whole call on resume: the first pass
    # already classified it, so the second one must only record the result.
    def _suspend(self, sid: str, event: ToolEvent | None) -> None:
        if event is None or event.call_id is None:
            return
        with self._lock:
            self._suspended[(sid, event.call_id)] = None
            while len(self._suspended) > _MAX_SUSPENDED:
                self._suspended.popitem(last=False)

    def _resume(self, sid: str, event: ToolEvent) -> bool:
        if event.call_id is None or not self._suspended:
            return False
        with self._lock:
            return self._suspended.pop((sid, event.call_id), 0) is None

    # ------------------------------------------------------------------ conversation

    @property
    def observes_messages(self) -> bool:
        """The guard's plan matches conversation turns (``match: {message: ...}``): hand them over."""
        return bool(getattr(self.guard, "observes_messages", False))

    def observe_turns(self, session_id: str, messages: Sequence[BaseMessage]) -> None:
        """The user's turns since the assistant's last message (at a model call: the reply the model is about
        to read), handed to the guard. The assistant's own messages are handed over as they are answered."""
        for text in _user_turns(messages):
            self._guarded("observe_message", self._observe, session_id, USER, text)

    async def aobserve_turns(self, session_id: str, messages: Sequence[BaseMessage]) -> None:
        for text in _user_turns(messages):
            await self._aguarded("observe_message", self._aobserve, session_id, USER, text)

    def observe_answer(self, session_id: str, answer: Sequence[BaseMessage]) -> None:
        """The model's answer: its text to the user (tool calls are hooked where they run)."""
        for text in _assistant_texts(answer):
            self._guarded("observe_message", self._observe, session_id, ASSISTANT, text)

    async def aobserve_answer(self, session_id: str, answer: Sequence[BaseMessage]) -> None:
        for text in _assistant_texts(answer):
            await self._aguarded("observe_message", self._aobserve, session_id, ASSISTANT, text)

    def _observe(self, session_id: str, role: str, text: str) -> Any:
        return self.guard.observe_message(session_id, role, text)  # type: ignore[attr-defined]

    async def _aobserve(self, session_id: str, role: str, text: str) -> Any:
        return await self.guard.aobserve_message(session_id, role, text)  # type: ignore[attr-defined]

    # ------------------------------------------------------------------ model

    def before_model(self, session_id: str, messages: Sequence[BaseMessage]) -> ModelCall:
        """Ask the guard about the model call about to be made (this counts the call)."""
        call = self.model_call(session_id, messages)
        return call if call is not None else ModelCall(_as_list(messages))

    async def abefore_model(self, session_id: str, messages: Sequence[BaseMessage]) -> ModelCall:
        call = await self.amodel_call(session_id, messages)
        return call if call is not None else ModelCall(_as_list(messages))

    # The hooks' own entry points: ``None`` means "send the request as it is", which is what nearly every
    # model call gets — no object is built for it.

    def model_call(self, session_id: str, messages: Sequence[BaseMessage]) -> ModelCall | None:
        """Like :meth:`before_model`, but ``None`` when the request goes out unchanged."""
        try:
            decisions = self.guard.before_model(session_id)
        except Exception as exc:  # fail-open
            self.errors.record("GuardHooks.before_model", exc)
            decisions = None
        if not decisions and not self._stops:
            return None
        return self._plan_model_call(session_id, messages, decisions or ())

    async def amodel_call(self, session_id: str, messages: Sequence[BaseMessage]) -> ModelCall | None:
        try:
            decisions = await self.guard.abefore_model(session_id)
        except Exception as exc:  # fail-open
            self.errors.record("GuardHooks.before_model", exc)
            decisions = None
        if not decisions and not self._stops:
            return None
        return self._plan_model_call(session_id, messages, decisions or ())

    def _plan_model_call(
        self, session_id: str, messages: Sequence[BaseMessage], decisions: Sequence[Decision]
    ) -> ModelCall:
        same = _as_list(messages)
        try:
            return self._apply(session_id, same, decisions)
        except Exception as exc:  # fail-open: the request goes out unchanged
            self.errors.record("GuardHooks.before_model", exc)
            return ModelCall(same)

    def _apply(
        self, session_id: str, messages: list[BaseMessage], decisions: Sequence[Decision]
    ) -> ModelCall:
        stop = None
        if self._stops:  # a stop decided on a tool call of this session is applied now
            with self._lock:
                stop = self._stops.pop(session_id, None)
        if stop is None and decisions:
            stop = next((d for d in decisions if d.kind is DecisionKind.STOP), None)
        if stop is not None:
            return ModelCall(messages, final=stop_message(stop))
        extra = decision_messages(decisions) if decisions else []
        if not extra:
            return ModelCall(messages)
        at = safe_insert_index(messages)
        # Kept in the history only where it sits right before the model's answer; a request that ends inside
        # an unanswered tool round gets every message ephemerally rather than storing one out of order.
        lasting = {id(d) for d in decisions if not d.ephemeral}
        persist: list[BaseMessage] = []
        if lasting and at == len(messages):
            shown = [d for d in decisions if d.injects and d.message]
            persist = [m for d, m in zip(shown, extra, strict=True) if id(d) in lasting]
        return ModelCall([*messages[:at], *extra, *messages[at:]], persist=persist)

    def _forget(self, session_id: str) -> None:
        with self._lock:
            self._stops.pop(session_id, None)
            if self._suspended:
                for key in [k for k in self._suspended if k[0] == session_id]:
                    del self._suspended[key]


def _user_turns(messages: Sequence[BaseMessage]) -> list[str]:
    """The texts of the human messages after the last AI message, in order."""
    turns: list[str] = []
    for m in reversed(messages):
        if isinstance(m, AIMessage):
            break
        if isinstance(m, HumanMessage):
            text = m.text
            if text.strip():
                turns.append(text)
    turns.reverse()
    return turns


def _assistant_texts(answer: Sequence[BaseMessage]) -> list[str]:
    return [m.text for m in answer if isinstance(m, AIMessage) and m.text.strip()]


def _as_list(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    return messages if isinstance(messages, list) else list(messages)


def _state_get(state: Any, key: str) -> Any:
    if state is None:
        return None
    if isinstance(state, Mapping):
        return state.get(key)
    return getattr(state, key, None)
