"""Fail-open bookkeeping: an internal error is counted and logged once per kind, never raised to the agent."""

from __future__ import annotations

import logging
import threading
from collections import Counter

__all__ = ["ErrorCounter", "logger"]

logger = logging.getLogger("planguard")


class ErrorCounter:
    """Counts internal errors by ``where:ExceptionType``; logs the first of each kind with its traceback."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def record(self, where: str, exc: BaseException) -> None:
        key = f"{where}:{type(exc).__name__}"
        with self._lock:
            self.counts[key] += 1
            first = self.counts[key] == 1
        if first:
            logger.warning(
                "planguard internal error in %s (continuing; logged once): %r", where, exc, exc_info=exc
            )

    @property
    def total(self) -> int:
        return sum(self.counts.values())
