"""Helpers the built-in sinks share; the ``Sink`` extension point itself is in :mod:`planguard.stages`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..stages import Sink

if TYPE_CHECKING:
    from ..decisions import Decision

__all__ = ["MAX_OPEN_CALLS", "Sink", "forget_oldest_call"]

#: Calls per session whose decisions a sink holds until the call ends: as many as the session itself keeps
#: pending (``session.MAX_PENDING``), since a call the session forgot unfinished never ends.
MAX_OPEN_CALLS = 1024


def forget_oldest_call(waiting: dict[int, list[Decision]]) -> None:
    """Past ``MAX_OPEN_CALLS`` calls in ``waiting`` (call index → decisions held for it, in insertion order),
    drop the decisions of the call that has waited longest."""
    if len(waiting) > MAX_OPEN_CALLS:
        del waiting[next(iter(waiting))]
