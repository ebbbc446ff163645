"""The embedded session store: JSONL files written in the background (read back for replay and reports by
:mod:`planguard.offline.loaders.planguard_store`)."""

from __future__ import annotations

from .config import DEFAULT_STORE_PATH, StoreConfig
from .records import StepRecord

__all__ = [
    "DEFAULT_STORE_PATH",
    "StepRecord",
    "StoreConfig",
    "StoreSink",
]


def __getattr__(name: str) -> object:
    if name == "StoreSink":
        from .writer import StoreSink

        return StoreSink
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
