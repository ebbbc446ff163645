"""One Claude Code hook call → Guard calls → the hook's JSON answer.

The same adapter serves the ``planguard hook claude-code`` command (one process per hook call, session
state on disk) and the Claude Agent SDK's in-process Python hooks (``HookMatcher``, state in memory).

When the model is asked again is not a hook of its own, so it is inferred: at ``UserPromptSubmit`` (the
turn's first request), and after a tool result once no other call of the same turn is still running
(Claude Code sends all results of parallel calls in one request). That is where ``before_model`` runs and
reminders go out, as ``additionalContext`` of that last result. A denied call has no result hook, so when
it was the last call outstanding its denial reason carries the reminders instead.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from planguard.decisions import Decision
from planguard.events import USER

from .translate import (
    POST_TOOL_USE,
    POST_TOOL_USE_FAILURE,
    PRE_TOOL_USE,
    SESSION_END,
    UNDELIVERED_CONTEXT,
    USER_PROMPT_SUBMIT,
    call_event,
    context_answer,
    deny_answer,
    result_event,
    session_key,
)

__all__ = ["ClaudeCodeAdapter", "GuardLike", "HookState"]

#: Calls of one session remembered as running; past this the oldest is forgotten.
MAX_RUNNING = 64
#: A call with no result hook after this long (interrupted, killed) no longer holds back model calls.
RUNNING_EXPIRY_S = 900.0
#: Answers remembered per session by request id (see :meth:`HookState.remember`).
MAX_ANSWERED = 32


class GuardLike(Protocol):
    """The part of :class:`planguard.guard.Guard` the adapter uses."""

    def before_tool(self, session_id: str, event: Any) -> Decision: ...

    def after_tool(self, session_id: str, event: Any) -> Any: ...

    def before_model(self, session_id: str) -> list[Decision]: ...

    def end(self, session_id: str) -> Any: ...

    def observe_message(self, session_id: str, role: str, text: str) -> Any: ...

    @property
    def observes_messages(self) -> bool: ...

    def session(self, session_id: str) -> Any: ...


@dataclass(slots=True)
class HookState:
    """The adapter's own per-session bookkeeping: calls allowed to run whose result has not arrived, and
    the answers to the latest hook requests by request id."""

    running: dict[str, float] = field(default_factory=dict)  # tool_use_id -> start time
    answered: dict[str, dict[str, Any]] = field(default_factory=dict)  # request id -> answer, oldest first

    def start(self, call_id: str | None, now: float) -> None:
        if call_id is None:
            return
        if len(self.running) >= MAX_RUNNING:
            self.running.pop(next(iter(self.running)))
        self.running[call_id] = now

    def finish(self, call_id: str | None, now: float) -> None:
        if call_id is not None:
            self.running.pop(call_id, None)
        for cid, started in list(self.running.items()):
            if now - started > RUNNING_EXPIRY_S:
                del self.running[cid]

    def remember(self, request_id: str | None, answer: Mapping[str, Any]) -> None:
        """Keep the answer to a hook request that carries an id. A hook process that gave up waiting for
        the daemon answers the call itself; if the daemon did apply it, the repeat finds its answer here
        instead of being applied twice."""
        if request_id is None:
            return
        self.answered.pop(request_id, None)
        self.answered[request_id] = dict(answer)
        while len(self.answered) > MAX_ANSWERED:
            del self.answered[next(iter(self.answered))]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"running": dict(self.running)}
        if self.answered:
            out["answered"] = [[rid, answer] for rid, answer in self.answered.items()]
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> HookState:
        if not isinstance(data, Mapping):
            return cls()
        running = data.get("running")
        answered = data.get("answered")
        state = cls()
        if isinstance(running, dict):
            state.running = {str(k): float(v) for k, v in running.items() if isinstance(v, (int, float))}
        if isinstance(answered, list):
            for item in answered[-MAX_ANSWERED:]:
                if isinstance(item, (list, tuple)) and len(item) == 2 and isinstance(item[1], dict):
                    state.answered[str(item[0])] = item[1]
        return state


class ClaudeCodeAdapter:
    """Translates hook payloads for one :class:`~planguard.guard.Guard` (or anything :class:`GuardLike`).

    ``handle`` returns the JSON object to answer with (``{}``: no answer). Per-session bookkeeping is kept
    in memory (bounded) unless the caller passes a :class:`HookState` it persists itself.
    """

    def __init__(self, guard: GuardLike, *, max_sessions: int = 1024, source: str = "claude-code") -> None:
        self.guard = guard
        self.source = source  # the CLI the payloads come from (their hook dialect), kept on every event
        self._states: OrderedDict[str, HookState] = OrderedDict()
        self._max_sessions = max_sessions

    def state(self, key: str) -> HookState:
        st = self._states.get(key)
        if st is None:
            st = self._states[key] = HookState()
            if len(self._states) > self._max_sessions:
                self._states.popitem(last=False)
        else:
            self._states.move_to_end(key)
        return st

    def handle(self, payload: Mapping[str, Any], state: HookState | None = None) -> dict[str, Any]:
        hook = payload.get("hook_event_name")
        key = session_key(payload)
        if state is None:
            state = self.state(key)
        now = time.time()
        if hook == PRE_TOOL_USE:
            event = call_event(payload, self.source)
            decision = self.guard.before_tool(key, event)
            if decision.blocks:
                injected = self.guard.before_model(key) if not state.running else []
                return deny_answer(decision, injected)
            state.start(event.call_id, now)
            return {}
        if hook in (POST_TOOL_USE, POST_TOOL_USE_FAILURE):
            event = result_event(payload, now, self.source)
            self.guard.after_tool(key, event)
            state.finish(event.call_id, now)
            if state.running:
                return {}
            due = self.guard.before_model(key)
            if payload.get(UNDELIVERED_CONTEXT):
                # The CLI drops this result's context: reminders due now go with the next request's
                # instead of being counted as sent and lost.
                session = self.guard.session(key)
                for decision in due:
                    if decision.injects:
                        session.queue(decision)
                return {}
            return context_answer(str(hook), due)
        if hook == USER_PROMPT_SUBMIT:
            state.running.clear()  # a new turn: nothing of the last one is still running
            prompt = payload.get("prompt")
            if isinstance(prompt, str) and prompt.strip() and self.guard.observes_messages:
                self.guard.observe_message(key, USER, prompt)  # the plan matches turns (a user's yes)
            return context_answer(USER_PROMPT_SUBMIT, self.guard.before_model(key))
        if hook == SESSION_END:
            self.guard.end(key)
            self._states.pop(key, None)
            return {}
        return {}
