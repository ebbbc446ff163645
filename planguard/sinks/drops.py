"""Counts of telemetry that was dropped instead of slowing the agent down (full queues, dead exporters)."""

from __future__ import annotations

import logging
import threading
from collections import Counter

__all__ = ["DropCounter"]

_log = logging.getLogger("planguard.sinks.otel")


class DropCounter:
    """Thread-safe counts by reason (``span_queue_full``, ``span_export_failed``, ``store_queue_full``, …).

    The first drop of each reason is logged once; after that only the count rises.
    """

    __slots__ = ("_counts", "_lock")

    def __init__(self) -> None:
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def add(self, reason: str, n: int = 1) -> None:
        if n <= 0:
            return
        with self._lock:
            first = reason not in self._counts
            self._counts[reason] += n
        if first:
            _log.warning("planguard telemetry dropping data (%s); counting further drops silently", reason)

    @property
    def counts(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)

    @property
    def total(self) -> int:
        with self._lock:
            return sum(self._counts.values())

    def __getitem__(self, reason: str) -> int:
        with self._lock:
            return self._counts.get(reason, 0)
