"""Stored sessions → the generic trajectory format (:mod:`planguard.loaders.generic`), one line per call.

Every call the session saw is written in call order, the ones a policy refused to run included (with the
denial text as ``blocked``), so ``planguard replay`` of the export counts the same steps and denials as
the live run did. Content is what the store kept: secrets redacted and long results cut when the store
was configured so.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .reader import StoredSession
from .records import BlockedRecord, DecisionRecord, EventRecord, StepRecord

__all__ = ["generic_records"]


def generic_records(session: StoredSession) -> Iterator[dict[str, Any]]:
    """The session's calls as generic-format records, in call order."""
    # A refused call got no index; ``at_step`` is the index the next accepted call took, so it sorts just
    # before that call. Steps are ordered by index (parallel calls may have been written out of order).
    calls: list[tuple[int, int, StepRecord | BlockedRecord]] = [(s.index, 1, s) for s in session.steps]
    calls += [(b.at_step, 0, b) for b in session.blocked]
    calls.sort(key=lambda c: (c[0], c[1]))  # stable: refusals at one index keep their file order
    for _, _, call in calls:
        record = _record(session.id, call.event)
        if isinstance(call, BlockedRecord):
            record["blocked"] = _denial(call.decisions)
        yield record


def _record(session_id: str, event: EventRecord) -> dict[str, Any]:
    record: dict[str, Any] = {
        "session": session_id,
        "tool": event.tool,
        "arguments": event.arguments if isinstance(event.arguments, (dict, str)) else {},
        "result": event.result,
        "is_error": event.is_error,
    }
    if event.call_id is not None:
        record["call_id"] = event.call_id
    if event.start_time is not None:
        record["time"] = event.start_time
    if event.exit_code is not None:
        record["exit_code"] = event.exit_code
    return record


def _denial(decisions: list[DecisionRecord]) -> str:
    for d in decisions:
        if d.kind in ("deny", "stop"):
            return d.message or "denied"
    return "denied"
