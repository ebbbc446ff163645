"""A session's journal: what a host fed one session (tool calls, their results, model requests, the end), as
JSON lines, and its replay into a :class:`~planguard.session.Session` with the sinks muted.

Hosts that answer a session's calls from more than one process keep one: the coding-CLI hook service (a
process per hook call; ``planguard_hooks.state`` rebuilds a session from its journal when its snapshot
cannot be used) and the model-API proxy (replicas sharing a conversation's log in Redis; a replica that is
behind feeds the entries it missed to its session with :func:`apply`). Replaying a journal runs the same
pipeline on the same events, so the rebuilt session is the one that was live; the sinks heard all of it
already, so they hear none of it again (:func:`replay` builds the session on a pipeline without them, and
the host binds it to its live pipeline afterwards; the proxy mutes its sinks while it catches up).

An entry is ``{"op": "pre"|"post"|"model"|"end"|"refused", "event": {...}}``; the event's keys are
:class:`~planguard.events.ToolEvent`'s field names. A conversation turn is ``{"op": "message", "message":
{"role": ..., "match": ...}}``: the match the plan's rules made of it (``RECORDED_KEY``), never its text.
Journals written by the hook service before this module (short keys ``t``, ``a``, ``id``, … under ``e``)
are read as well.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from .documents import loads_json
from .events import RECORDED_KEY, MessageEvent, ToolEvent

if TYPE_CHECKING:
    from .session import Pipeline, Session

__all__ = [
    "OP_KINDS",
    "Op",
    "OpKind",
    "apply",
    "clip_value",
    "event_dict",
    "event_from",
    "muted",
    "replay",
]

OpKind = Literal["pre", "post", "model", "end", "message", "refused"]
#: ``refused``: a call the session let run that the agent's harness then refused (it never ran; its
#: ``call_id`` and ``blocked`` reason): replayed, its ``pre`` is a recorded denial instead of a step.
OP_KINDS: tuple[OpKind, ...] = ("pre", "post", "model", "end", "message", "refused")
#: Strings in a journaled event's arguments are cut past this (a Write's file body need not travel twice).
MAX_ARGUMENT_CHARS = 65_536
#: ToolEvent fields a journal entry keeps, with the short keys hook journals before this module used.
_FIELDS = {
    "tool": "t",
    "arguments": "a",
    "call_id": "id",
    "action": "x",
    "result": "r",
    "is_error": "err",
    "exit_code": "rc",
    "start_time": "t0",
    "end_time": "t1",
    "metadata": "m",
    "blocked": "b",
}


@dataclass(slots=True)
class Op:
    """One journal entry: what the host fed the session."""

    kind: OpKind
    event: ToolEvent | None = None
    #: A ``message`` entry's turn: ``{"role": ..., "match": {"commands": ..., "hits": ...}}``.
    message: Mapping[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {"op": self.kind}
        if self.event is not None:
            body["event"] = event_dict(self.event)
        if self.message is not None:
            body["message"] = dict(self.message)
        return body

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":"), default=str)

    @classmethod
    def from_dict(cls, body: Any, **metadata: Any) -> Op:
        """The entry ``body`` (a host may keep keys of its own beside ``op`` and ``event``); ``metadata``,
        when given, replaces the event's recorded metadata."""
        if not isinstance(body, Mapping) or body.get("op") not in OP_KINDS:
            raise ValueError(f"expected {{'op': {'|'.join(map(repr, OP_KINDS))}, ...}}")
        raw = body.get("event", body.get("e"))
        message = body.get("message")
        return cls(
            body["op"],
            event_from(raw, **metadata) if isinstance(raw, Mapping) else None,
            message if isinstance(message, Mapping) else None,
        )

    @classmethod
    def from_json(cls, line: str) -> Op:
        return cls.from_dict(loads_json(line))


def event_dict(event: ToolEvent, limit: int = MAX_ARGUMENT_CHARS) -> dict[str, Any]:
    """The event's fields that are set, by name (arguments' long strings cut at ``limit``)."""
    out: dict[str, Any] = {"tool": event.tool, "arguments": clip_value(event.arguments, limit)}
    for name in _FIELDS:
        if name in out:
            continue
        value = getattr(event, name)
        if value is not None and value is not False and value != {}:
            out[name] = dict(value) if name == "metadata" else value
    return out


def event_from(data: Mapping[str, Any], **metadata: Any) -> ToolEvent:
    """The event :func:`event_dict` wrote (or an older hook journal's short-key form); ``metadata``, when
    given, replaces the recorded metadata."""

    def get(name: str) -> Any:
        return data.get(name, data.get(_FIELDS[name]))

    arguments = get("arguments")
    recorded = get("metadata")
    return ToolEvent(
        tool=str(get("tool") or ""),
        arguments=arguments if isinstance(arguments, (dict, str, Mapping)) else {},
        call_id=get("call_id"),
        action=get("action"),
        result=get("result"),
        is_error=bool(get("is_error")),
        exit_code=get("exit_code"),
        start_time=get("start_time"),
        end_time=get("end_time"),
        metadata=dict(metadata) if metadata else dict(recorded) if isinstance(recorded, Mapping) else {},
        blocked=get("blocked"),
    )


def clip_value(value: Any, limit: int) -> Any:
    """``value`` with every string longer than ``limit`` cut (and saying how much was cut)."""
    if isinstance(value, str):
        return value if len(value) <= limit else value[:limit] + f"[… {len(value) - limit} chars cut]"
    if isinstance(value, Mapping):
        return {k: clip_value(v, limit) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clip_value(v, limit) for v in value]
    return value


def apply(session: Session, op: Op) -> Any:
    """Feed one entry to ``session``: what the host's call returned then (the gate's decision for
    ``pre``, the step for ``post``, the decisions due for ``model``, the summary for ``end``)."""
    if op.kind == "pre" and op.event is not None:
        return session.before_tool(op.event)
    if op.kind == "post" and op.event is not None:
        return session.after_tool(op.event)
    if op.kind == "model":
        return session.before_model()
    if op.kind == "end":
        return session.end()
    if op.kind == "message" and op.message is not None:
        turn = MessageEvent(
            str(op.message.get("role")), "", metadata={RECORDED_KEY: op.message.get("match") or {}}
        )
        return session.observe_message(turn)
    return None


def replay(
    pipeline: Pipeline,
    session_id: str,
    ops: Iterable[Op],
    *,
    metadata: Mapping[str, Any] | None = None,
    observe: Callable[[Op, Any], None] | None = None,
) -> Session:
    """A new session ``session_id`` rebuilt from ``ops`` on ``pipeline`` with its sinks muted (they heard
    all of it live); ``observe`` sees each entry with what :func:`apply` returned for it. Bind the session
    to the live pipeline (:meth:`Session.bind`) to go on with it. A call a later ``refused`` entry names is
    replayed as the recorded denial it turned out to be (:meth:`Session.observe` of it, blocked), not as a
    step; ``observe`` sees its ``pre`` with that denial."""
    ops = list(ops)
    refused = {
        op.event.call_id: op.event.blocked or "refused after it was allowed"
        for op in ops
        if op.kind == "refused" and op.event is not None and op.event.call_id is not None
    }
    session = muted(pipeline).session(session_id, **(metadata or {}))
    for op in ops:
        if op.kind == "pre" and op.event is not None and op.event.call_id in refused:
            blocked = dataclasses.replace(op.event, blocked=refused[op.event.call_id])
            result: Any = session.observe(blocked).decision
        else:
            result = apply(session, op)
        if observe is not None:
            observe(op, result)
    return session


def muted(pipeline: Pipeline) -> Pipeline:
    """``pipeline`` without its sinks, for replaying what they have already seen."""
    return dataclasses.replace(pipeline, sinks=())
