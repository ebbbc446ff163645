"""Stored sessions → the generic trajectory format (:mod:`planguard.offline.loaders.generic`), one line per
call.

Every call the session saw is written in call order, the ones a policy refused to run included (with the
denial text as ``blocked``), so ``planguard replay`` of the export counts the same steps and denials as
the live run did. Content is what the store kept: secrets redacted and long results cut when the store
was configured so.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..sinks.store.records import RECORDED_KEY
from .loaders.planguard_store import StoredSession

__all__ = ["generic_records"]


def generic_records(session: StoredSession) -> Iterator[dict[str, Any]]:
    """The session's calls as generic-format records, in call order (see :meth:`StoredSession.replay_events`:
    refused calls where they were attempted; a call stored without content carries its recorded
    classification as ``recorded``)."""
    for event in session.replay_events():
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
