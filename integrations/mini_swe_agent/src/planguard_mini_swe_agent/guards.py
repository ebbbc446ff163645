"""One Guard per config file per process: ``mini`` builds the environment, model and agent separately from
their own config sections, and they must meet in the same Guard and session."""

from __future__ import annotations

import atexit
import os
import threading
import uuid
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from planguard.guard import Guard

__all__ = ["default_session_id", "get_guard"]

_guards: dict[str, Guard] = {}
_lock = threading.Lock()
_session_id = f"mini-{uuid.uuid4().hex[:12]}"


def get_guard(config: str | os.PathLike[str] | None = None) -> Guard:
    """The process's Guard for ``config`` (None: ``$PLANGUARD_CONFIG``, else defaults), shut down at exit."""
    key = str(config) if config is not None else ""
    with _lock:
        guard = _guards.get(key)
        if guard is None:
            from planguard.guard import Guard

            guard = Guard.from_file(os.fspath(config)) if config is not None else Guard()
            _guards[key] = guard
            atexit.register(guard.shutdown)
        return guard


def default_session_id() -> str:
    """The process's session id for classes given none (one ``mini`` run per process)."""
    return _session_id
