"""The embedded session store: JSONL files written in the background, read back for replay and reports."""

from __future__ import annotations

from .config import DEFAULT_STORE_PATH, StoreConfig
from .reader import StoredSession, StoreReadError, iter_sessions, iter_trajectories, read_session
from .records import StepRecord

__all__ = [
    "DEFAULT_STORE_PATH",
    "StepRecord",
    "StoreConfig",
    "StoreReadError",
    "StoreSink",
    "StoredSession",
    "iter_sessions",
    "iter_trajectories",
    "read_session",
]


def __getattr__(name: str) -> object:
    if name == "StoreSink":
        from .writer import StoreSink

        return StoreSink
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
