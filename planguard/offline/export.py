"""Stored sessions → the generic trajectory format (:mod:`planguard.offline.loaders.generic`), one line per
call.

Every call the session saw is written in call order, the ones a policy refused to run included (with the
denial text as ``blocked``), so ``planguard replay`` of the export counts the same steps and denials as
the live run did; the conversation turns the plan matched go where they came, as ``{"session", "role",
"text", "recorded"}`` lines. Content is what the store kept: secrets redacted and long results cut when the
store was configured so.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..sinks.store.records import RECORDED_KEY, MessageRecord
from .loaders.planguard_store import StoredSession

__all__ = ["generic_records"]


def generic_records(session: StoredSession) -> Iterator[dict[str, Any]]:
    """The session's calls as generic-format records, in call order (see :meth:`StoredSession.replay_events`:
    refused calls where they were attempted; a call stored without content carries its recorded
    classification as ``recorded``)."""
    turns = session.messages
    told = 0
    for index, event in enumerate(session.replay_events()):
        while told < len(turns) and turns[told][0] <= index:
            yield _turn_record(session.id, turns[told][1])
            told += 1
        record: dict[str, Any] = {
            "session": session.id,
            "tool": event.tool,
            "arguments": event.arguments if isinstance(event.arguments, (dict, str)) else {},
            "result": event.result,
            "is_error": event.is_error,
        }
        optional = {
            "call_id": event.call_id,
            "time": event.start_time,
            "exit_code": event.exit_code,
            "blocked": event.blocked,
            "recorded": (event.metadata or {}).get(RECORDED_KEY),
        }
        record.update((key, value) for key, value in optional.items() if value is not None)
        yield record
    for _, turn in turns[told:]:
        yield _turn_record(session.id, turn)


def _turn_record(session_id: str, turn: MessageRecord) -> dict[str, Any]:
    """A conversation turn the plan matched: its role, its text when the store kept it, and the phase it
    showed (``recorded``), which replay takes."""
    record: dict[str, Any] = {"session": session_id, "role": turn.role, "text": turn.text or ""}
    if turn.time is not None:
        record["time"] = turn.time
    record["recorded"] = {"commands": [list(c) for c in turn.commands]}
    return record
