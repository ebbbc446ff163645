"""planguard's generic trajectory format: one JSON object per tool call, in call order.

Any agent can write it from its own log, and ``planguard export`` writes it from the session store::

    {"session": "run-42", "tool": "bash", "arguments": {"command": "pytest -x"},
     "result": "1 failed", "is_error": true}

=============  ========================  =====================================================================
key            type                      meaning
=============  ========================  =====================================================================
``session``    string, required          the run the call belongs to (a file may hold several, interleaved)
``tool``       string, required          the tool's name as the agent called it
``arguments``  object or string          the parsed argument object, or the raw argument text (default ``{}``)
``result``     string or null            what the tool returned (null: unknown or none)
``is_error``   boolean                   the call failed (default false)
``call_id``    string, optional          the framework's id of the call
``time``       number, optional          when the call started, seconds since the epoch
``blocked``    string, optional          the call did not run: the denial text the agent saw
``exit_code``  integer, optional         a shell command's exit status
``recorded``   object, optional          planguard's own classification of a call stored without content
                                         (``planguard export`` of a metadata-only store): replay takes it
                                         instead of classifying the call again
=============  ========================  =====================================================================

A line with ``role`` (``user`` or ``assistant``) and ``text`` instead of ``tool`` is a conversation turn of
the session, where it came among the calls (a plan's ``match: {message: ...}`` reads it; ``planguard export``
writes the turns the plan matched, with their ``recorded`` phase). Other keys are ignored, so producers may
add their own. A line that is not such an object becomes a
:class:`LoadError` naming the file, the line and the key; the other lines still load. Sessions are yielded
in the order they first appear.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from planguard.events import MessageEvent, ToolEvent

from ...sinks.store.records import RECORDED_KEY
from ._base import LoadError, Trajectory, new_meta, type_name

__all__ = ["FORMAT", "is_generic_record", "load_generic"]

FORMAT = "generic"

_SHAPE = 'expected {"session": str, "tool": str, "arguments": object|string, "result": string|null, ...}'


def is_generic_record(obj: dict[str, Any]) -> bool:
    """Whether a parsed JSON line looks like a record of this format (for format sniffing)."""
    return (
        isinstance(obj.get("session"), str)
        and isinstance(obj.get("tool"), str)
        and ("arguments" in obj or "result" in obj)
    )


def load_generic(
    records: Iterable[tuple[int, Any] | LoadError], path: str
) -> Iterator[Trajectory | LoadError]:
    """Parsed ``(line, record)`` pairs of one file → one :class:`Trajectory` per session, bad lines as
    errors (yielded as they are met, before the sessions)."""
    runs: dict[str, Trajectory] = {}
    for item in records:
        if isinstance(item, LoadError):
            yield item
            continue
        line, record = item
        try:
            if _is_turn(record):
                session, turn = _turn(record, path, line)
            else:
                session, event = _event(record, path, line)
                turn = None
        except LoadError as exc:
            yield exc
            continue
        run = runs.get(session)
        if run is None:
            run = runs[session] = Trajectory(id=session, source=path, format=FORMAT, meta=new_meta())
        if turn is not None:
            run.messages.append((len(run.events), turn))
        else:
            run.events.append(event)
    yield from runs.values()


def _is_turn(record: Any) -> bool:
    return isinstance(record, dict) and "tool" not in record and isinstance(record.get("role"), str)


def _turn(record: dict[str, Any], path: str, line: int) -> tuple[str, MessageEvent]:
    """A conversation turn line: ``{"session", "role": "user"|"assistant", "text", "time"?, "recorded"?}``."""
    session = record.get("session")
    if not isinstance(session, str) or not session:
        raise LoadError(path, f"'session' is {_got(record, 'session')}; expected a non-empty string", line)
    text = _optional(record, "text", str, "the turn's text as a string", path, line) or ""
    time = record.get("time")
    recorded = _optional(record, "recorded", dict, "planguard's recorded classification object", path, line)
    return session, MessageEvent(
        str(record["role"]),
        text,
        float(time) if isinstance(time, (int, float)) and not isinstance(time, bool) else None,
        {RECORDED_KEY: recorded} if recorded is not None else {},
    )


def _event(record: Any, path: str, line: int) -> tuple[str, ToolEvent]:
    if not isinstance(record, dict):
        raise LoadError(path, f"record is {type_name(record)}; {_SHAPE}", line)
    session = record.get("session")
    if not isinstance(session, str) or not session:
        raise LoadError(path, f"'session' is {_got(record, 'session')}; expected a non-empty string", line)
    tool = record.get("tool")
    if not isinstance(tool, str):
        raise LoadError(path, f"'tool' is {_got(record, 'tool')}; expected the tool name as a string", line)
    arguments = _optional(record, "arguments", (dict, str), "an object or a string", path, line)
    result = _optional(record, "result", str, "a string or null", path, line)
    is_error = record.get("is_error", False)
    if not isinstance(is_error, bool):
        raise LoadError(path, f"'is_error' is {type_name(is_error)}; expected true or false", line)
    call_id = _optional(record, "call_id", str, "a string", path, line)
    blocked = _optional(record, "blocked", str, "the denial text as a string", path, line)
    started = _optional(record, "time", (int, float), "seconds since the epoch", path, line)
    exit_code = _optional(record, "exit_code", int, "an integer", path, line)
    recorded = _optional(record, "recorded", dict, "an object", path, line)
    event = ToolEvent(
        tool=tool,
        arguments={} if arguments is None else arguments,
        call_id=call_id,
        result=result,
        is_error=is_error,
        exit_code=exit_code,
        start_time=None if started is None else float(started),
        blocked=blocked,
        metadata={RECORDED_KEY: recorded} if recorded is not None else {},
    )
    return session, event


def _optional(
    record: dict[str, Any], key: str, kind: type | tuple[type, ...], what: str, path: str, line: int
) -> Any:
    """``record[key]`` when it is absent or null (None) or a ``kind``; a LoadError otherwise. A JSON
    true/false is never a number here, though Python's bool is an int."""
    value = record.get(key)
    if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
        raise LoadError(path, f"'{key}' is {type_name(value)}; expected {what}", line)
    return value


def _got(record: dict[str, Any], key: str) -> str:
    """What the record has under ``key``, in the words of an error message."""
    if key not in record:
        return "missing"
    return "empty" if record[key] == "" else type_name(record[key])
