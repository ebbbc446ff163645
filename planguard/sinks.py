"""Helpers the built-in sinks share; the ``Sink`` extension point itself is in :mod:`planguard.stages`."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Generic, TypeVar

from .stages import Sink

if TYPE_CHECKING:
    from .decisions import Decision
    from .session import Session

__all__ = ["MAX_OPEN_CALLS", "SessionRegistry", "Sink", "forget_oldest_call"]

#: Calls per session whose decisions a sink holds until the call ends: as many as the session itself keeps
#: pending (``session.MAX_PENDING``), since a call the session forgot unfinished never ends.
MAX_OPEN_CALLS = 1024


def forget_oldest_call(waiting: dict[int, list[Decision]]) -> None:
    """Past ``MAX_OPEN_CALLS`` calls in ``waiting`` (call index → decisions held for it, in insertion order),
    drop the decisions of the call that has waited longest."""
    if len(waiting) > MAX_OPEN_CALLS:
        del waiting[next(iter(waiting))]


S = TypeVar("S")


class SessionRegistry(Generic[S]):
    """A sink's per-session states, at most ``max_sessions`` (the least recently added go first).

    ``last`` is the last session looked up and its state, as one tuple (read atomically): an agent loop
    calls the hooks of one session several times in a row, so a hook reads it first —
    ``last = reg.last; st = last[1] if last is not None and last[0] is session else ...`` — and calls
    :meth:`get` only on a miss. Lookups take no lock; adding and removing take one, and reset ``last``.
    """

    __slots__ = ("_lock", "_max", "_states", "last")

    def __init__(self, max_sessions: int) -> None:
        self._states: OrderedDict[int, tuple[Session, S]] = OrderedDict()
        self._lock = threading.Lock()
        self._max = max_sessions
        self.last: tuple[Session, S] | None = None

    def get(self, session: Session) -> S | None:
        last = self.last
        if last is not None and last[0] is session:
            return last[1]
        entry = self._states.get(id(session))
        if entry is None or entry[0] is not session:
            return None
        self._remember(entry)
        return entry[1]

    def add(self, session: Session, state: S) -> list[S]:
        """Register ``state`` for ``session``; returns the states that left: one registered under the same
        ``id()`` (an ended session's, reused), and the oldest ones past ``max_sessions``."""
        entry = (session, state)
        left: list[S] = []
        with self._lock:
            old = self._states.pop(id(session), None)
            if old is not None:
                left.append(old[1])
            self._states[id(session)] = entry
            while len(self._states) > self._max:
                left.append(self._states.popitem(last=False)[1][1])
            if left:
                self.last = None
        self._remember(entry)
        return left

    def pop(self, session: Session) -> S | None:
        with self._lock:
            entry = self._states.pop(id(session), None)
            self.last = None
        return entry[1] if entry is not None and entry[0] is session else None

    def clear(self) -> list[S]:
        """Empty the registry; returns every state it held."""
        with self._lock:
            states = [state for _, state in self._states.values()]
            self._states.clear()
            self.last = None
        return states

    def _remember(self, entry: tuple[Session, S]) -> None:
        self.last = entry
        if self._states.get(id(entry[0])) is not entry:  # it left the registry meanwhile (another thread)
            self.last = None
