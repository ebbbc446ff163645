"""``PlanGuardMiddleware``: planguard for ``langchain.agents.create_agent``, in one line.

    agent = create_agent(model, tools, middleware=[PlanGuardMiddleware(Guard.from_file("planguard.yaml"))])
    agent.invoke({"messages": [...]}, {"configurable": {"thread_id": "run-42"}})

Hooks, named for when they run (sync and async twins):

* ``after_agent`` — close the run's session (the ``thread_id``'s), which its first model call opened. There
  is no ``before_agent``: a node hook is a graph node, and LangGraph pays for each node at every step of a
  run, not only when it runs (~0.7 % of a bare step, see benchmarks/bench_guard.py --langchain).
* ``wrap_tool_call`` — classify the call, let gates deny it (the model gets ``ToolMessage(status="error")``
  and the tool does not run), record its result.
* ``wrap_model_call`` — open the session at the run's first model call, count the model call and add due
  reminders and nudges to *this request only* (``request.override(messages=...)``) unless a policy asked for
  them to persist; after a stop decision, answer with the policy's final message instead of calling the
  model and jump to the end. Work done so far stays in the agent's state: nothing is raised, no recursion
  limit is hit.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Annotated, Any, NotRequired, cast

from langchain.agents.middleware.types import (
    AgentMiddleware,
    AgentState,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
    PrivateStateAttr,
    TracePolicy,
    omit_payload,
)
from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langchain_core.runnables.config import var_child_runnable_config
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.runtime import Runtime
from langgraph.types import Command

from .hooks import SESSION_STATE_KEY, GuardAPI, GuardHooks, ModelCall
from .translate import ActionRenderer, SessionKey

__all__ = ["PlanGuardMiddleware", "PlanGuardState"]


class PlanGuardState(AgentState[Any]):
    # Session id of a run invoked without a thread_id (one session per invocation then), set by the run's
    # first model call.
    planguard_session: NotRequired[Annotated[str, PrivateStateAttr]]


class PlanGuardMiddleware(AgentMiddleware[PlanGuardState, Any, Any]):
    """Live plan monitoring for a LangChain v1 agent. Put it first in ``middleware=[...]`` so that it sees
    (and gates) every tool call the other middleware let through and counts every model call.

    Args:
        guard: the :class:`planguard.guard.Guard` to report to; omitted → built from ``config`` (a
            planguard YAML/TOML/JSON file) or the defaults.
        actions: per-tool renderers of arguments as action text (see :class:`GuardHooks`).
        session_key: run config → session id; default the ``thread_id``. Runs without one get a fresh
            session per invocation (its id is kept in the agent state under ``planguard_session``).
        end_on_finish: close the session when the agent finishes (``after_agent``); set False to keep one
            session across several invocations of a thread (it then ends on ``guard.end`` or idle eviction).
        work_dir: the repository the agent works in; default the process's working directory. The live
            phase rules judge the tools' file paths against it (a repository under ``/tmp`` included).

    A run's session opens at its first model call (with ``integration="langchain"`` in its metadata); a run
    that finishes before any model call (another middleware jumped to the end) gets its empty session opened
    and closed in ``after_agent``.
    """

    state_schema = PlanGuardState
    # With LangSmith tracing on, LangChain records a span per hook call with the hook's input and output:
    # the whole model request (every message) and the tool call and its result, serialised again for each
    # hook. The model and tool spans inside record those already, and planguard keeps tool content out of
    # telemetry unless asked: its own hook spans keep their timing and drop the payload.
    trace_policy = TracePolicy(process_inputs=omit_payload, process_outputs=omit_payload)

    def __init__(
        self,
        guard: GuardAPI | None = None,
        *,
        config: str | Path | None = None,
        actions: Mapping[str, ActionRenderer] | None = None,
        session_key: SessionKey | None = None,
        end_on_finish: bool = True,
        work_dir: str | Path | None = None,
    ) -> None:
        super().__init__()
        if guard is None:
            from planguard.guard import Guard

            guard = Guard.from_file(config) if config is not None else Guard()
        self.guard = guard
        self.hooks = GuardHooks(guard, actions=actions, session_key=session_key, work_dir=work_dir)
        self.end_on_finish = end_on_finish
        self.tools = []

    @property
    def name(self) -> str:
        return "planguard"

    # ------------------------------------------------------------------ run end

    def after_agent(self, state: PlanGuardState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        sid, _ = self.hooks.open_session(_current_config(), state, **_METADATA)
        if self.end_on_finish:
            self.hooks.end(sid)
        return None

    async def aafter_agent(self, state: PlanGuardState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        sid, _ = self.hooks.open_session(_current_config(), state, **_METADATA)
        if self.end_on_finish:
            await self.hooks.aend(sid)
        return None

    # ------------------------------------------------------------------ tools

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]],
    ) -> ToolMessage | Command[Any]:
        return self.hooks.wrap_tool_call(request, handler)

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        return await self.hooks.awrap_tool_call(request, handler)

    # ------------------------------------------------------------------ model

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        sid, generated = self.hooks.open_session(_current_config(), request.state, request.model, **_METADATA)
        if self.hooks.observes_messages:  # the plan matches conversation turns: hand them over
            self.hooks.observe_turns(sid, request.messages)
            handler = functools.partial(_observing, self.hooks, sid, handler)
        call = self.hooks.model_call(sid, request.messages)
        if call is None and not generated:  # nothing to add (most calls)
            return handler(request)
        update = _keep_session_id(request, sid) if generated else None
        if call is None:
            return _updating(handler(request), update)
        if call.final is not None:
            return _stopped(call.final, update)
        if call.messages is not request.messages:
            request = request.override(messages=cast("list[AnyMessage]", call.messages))
        return _updating(_persisting(handler(request), call), update)

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        sid, generated = self.hooks.open_session(_current_config(), request.state, request.model, **_METADATA)
        if self.hooks.observes_messages:
            await self.hooks.aobserve_turns(sid, request.messages)
            handler = functools.partial(_aobserving, self.hooks, sid, handler)
        call = await self.hooks.amodel_call(sid, request.messages)
        if call is None and not generated:
            return await handler(request)
        update = _keep_session_id(request, sid) if generated else None
        if call is None:
            return _updating(await handler(request), update)
        if call.final is not None:
            return _stopped(call.final, update)
        if call.messages is not request.messages:
            request = request.override(messages=cast("list[AnyMessage]", call.messages))
        return _updating(_persisting(await handler(request), call), update)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _presign(cls)  # a subclass overriding a sync wrap_* hook gets the same treatment


# create_agent wraps every wrap_* hook in LangSmith's ``traceable``, whose sync wrapper calls
# ``inspect.signature(hook)`` at *every call*, tracing on or off. For a bound method that means deriving the
# signature from the function's annotations and rebuilding it without ``self`` — about 3 % of a bare agent
# step for the two hooks (measured with callgrind, see benchmarks/bench_guard.py --langchain). So the sync
# hooks are looked up through a descriptor that hands out the function bound with ``functools.partial`` (which
# adds no Python frame per call, unlike a closure) carrying a precomputed ``__signature__``, which
# ``inspect.signature`` returns as is. Class-level access still gives the function itself (LangChain tells
# overridden hooks from the base class's by comparing those). The async wrapper computes what it needs
# once, so the async hooks stay ordinary methods.
_SYNC_WRAP_HOOKS = ("wrap_tool_call", "wrap_model_call")


class _PresignedHook:
    __slots__ = ("fn", "signature")

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        sig = inspect.signature(fn)
        self.signature = sig.replace(parameters=list(sig.parameters.values())[1:])

    def __get__(self, obj: object, owner: type | None = None) -> Callable[..., Any]:
        fn = self.fn
        if obj is None:
            return fn

        hook = functools.partial(fn, obj)
        hook.__signature__ = self.signature  # type: ignore[attr-defined]
        for attr in ("__name__", "__qualname__", "__doc__"):
            setattr(hook, attr, getattr(fn, attr))
        return hook


def _presign(cls: type) -> None:
    for name in _SYNC_WRAP_HOOKS:
        fn = cls.__dict__.get(name)
        if inspect.isfunction(fn) and not inspect.iscoroutinefunction(fn):
            with contextlib.suppress(TypeError, ValueError):  # an unusual signature: leave it be
                setattr(cls, name, _PresignedHook(fn))


_presign(PlanGuardMiddleware)


#: Session metadata the middleware opens sessions with.
_METADATA: dict[str, Any] = {"integration": "langchain"}


def _current_config() -> Any:
    # What ``langgraph.config.get_config()`` returns, without its exception when called outside a graph run
    # (a unit test driving a hook directly): None then.
    return var_child_runnable_config.get()


def _observing(
    hooks: GuardHooks,
    sid: str,
    handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    request: ModelRequest[Any],
) -> ModelResponse[Any]:
    response = handler(request)
    hooks.observe_answer(sid, response.result)
    return response


async def _aobserving(
    hooks: GuardHooks,
    sid: str,
    handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    request: ModelRequest[Any],
) -> ModelResponse[Any]:
    response = await handler(request)
    await hooks.aobserve_answer(sid, response.result)
    return response


def _keep_session_id(request: ModelRequest[Any], sid: str) -> dict[str, Any]:
    """The state update that keeps a session id made up for a run without a thread_id, for the run's later
    hooks. It is also written into this request's state, which another middleware retrying the call hands
    back to this hook, so that the retry does not make up a second id."""
    state: Any = request.state
    if isinstance(state, dict):
        state[SESSION_STATE_KEY] = sid
    return {SESSION_STATE_KEY: sid}


def _updating(
    response: ModelResponse[Any], update: dict[str, Any] | None
) -> ModelResponse[Any] | ExtendedModelResponse[Any]:
    return response if update is None else ExtendedModelResponse(response, Command(update=update))


def _stopped(final: AIMessage, update: dict[str, Any] | None = None) -> ExtendedModelResponse[Any]:
    # The answer has no tool call, so the loop would end anyway; jump_to makes it explicit for other
    # middleware's after_model hooks.
    jump: dict[str, Any] = {"jump_to": "end"}
    return ExtendedModelResponse(ModelResponse(result=[final]), Command(update={**jump, **(update or {})}))


def _persisting(response: ModelResponse[Any], call: ModelCall) -> ModelResponse[Any]:
    if not call.persist:
        return response
    return ModelResponse(
        result=[*call.persist, *response.result], structured_response=response.structured_response
    )
