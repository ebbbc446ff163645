"""planguard's metrics: plain per-sink counts on the hot path, read by observable instruments at collection.

Counting a tool call is a dict increment in the calling thread's own shard — no lock, so agent threads
never contend on it; nothing touches the metrics SDK until a reader collects (and copies the shards).
The SDK hands back the *existing* instrument (and ignores the new callbacks) when one with the same name
is created twice on a meter provider, so instruments are created once per provider and their callbacks
sum the counts of every live sink attached to it (two guards in one process both report).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable
from typing import Any, NamedTuple, TypeVar

from opentelemetry.metrics import CallbackOptions, Histogram, MeterProvider, Observation

from .. import __version__
from ..errors import ErrorCounter
from . import attributes as A
from .drops import DropCounter

__all__ = ["Counts", "Instruments", "Snapshot", "instruments_for"]

_REMINDERS = ("remind", "nudge")
_BLOCKS = ("deny", "stop")


class Snapshot(NamedTuple):
    tool_calls: dict[tuple[str, str], int]
    findings: dict[str, int]
    decisions: dict[str, int]
    errors: int
    drops: dict[str, int]


class _Shard:
    """One thread's counts. Only that thread writes them, so increments need no lock; a collector copies
    them (a ``dict`` copy is atomic under the GIL) and folds a shard away once its thread has ended."""

    __slots__ = ("decisions", "findings", "thread", "tool_calls")

    def __init__(self, thread: threading.Thread | None) -> None:
        self.thread = thread
        self.tool_calls: dict[tuple[str, str], int] = {}
        self.findings: dict[str, int] = {}
        self.decisions: dict[str, int] = {}

    def add(self, other: _Shard) -> None:
        _merge(self.tool_calls, other.tool_calls)
        _merge(self.findings, other.findings)
        _merge(self.decisions, other.decisions)


K = TypeVar("K")


def _merge(into: dict[K, int], counts: dict[K, int]) -> None:
    for key, n in dict(counts).items():  # the copy first: the owner thread may be adding a key
        into[key] = into.get(key, 0) + n


class Counts:
    """One sink's counters. Thread-safe; ``tool_call``/``finding``/``decision`` are the hot-path entries."""

    __slots__ = ("__weakref__", "_errors", "_local", "_lock", "_retired", "_shards", "drops")

    def __init__(self, drops: DropCounter, errors: ErrorCounter) -> None:
        self._lock = threading.Lock()  # guards the shard list and the error counters, not the counts
        self._local = threading.local()
        self._shards: list[_Shard] = []
        self._retired = _Shard(None)  # counts of threads that have ended
        self._errors: dict[int, ErrorCounter] = {id(errors): errors}
        self.drops = drops

    def _new_shard(self) -> _Shard:
        shard = _Shard(threading.current_thread())
        self._local.shard = shard
        with self._lock:
            self._shards.append(shard)
        return shard

    def tool_call(self, phase: str, action: str) -> None:
        try:
            calls = self._local.shard.tool_calls
        except AttributeError:  # this thread's first count
            calls = self._new_shard().tool_calls
        key = (phase, action)
        calls[key] = calls.get(key, 0) + 1

    def finding(self, detector: str) -> None:
        try:
            findings = self._local.shard.findings
        except AttributeError:
            findings = self._new_shard().findings
        findings[detector] = findings.get(detector, 0) + 1

    def decision(self, kind: str) -> None:
        try:
            decisions = self._local.shard.decisions
        except AttributeError:
            decisions = self._new_shard().decisions
        decisions[kind] = decisions.get(kind, 0) + 1

    def watch_errors(self, errors: ErrorCounter) -> None:
        """Report a pipeline's internal-error counter too (each counted once however many sessions)."""
        if id(errors) not in self._errors:
            with self._lock:
                self._errors.setdefault(id(errors), errors)

    def snapshot(self) -> Snapshot:
        total = _Shard(None)
        with self._lock:
            live: list[_Shard] = []
            for shard in self._shards:
                thread = shard.thread
                if thread is not None and not thread.is_alive():  # it writes no more: fold it once
                    self._retired.add(shard)
                else:
                    live.append(shard)
            self._shards = live
            total.add(self._retired)
            for shard in live:
                total.add(shard)
            counters = list(self._errors.values())
        return Snapshot(
            total.tool_calls,
            total.findings,
            total.decisions,
            sum(c.total for c in counters),
            self.drops.counts,
        )


class Instruments:
    """The instruments of one meter provider."""

    def __init__(self, provider: MeterProvider) -> None:
        meter = provider.get_meter(A.METER_NAME, __version__)
        self._counts: weakref.WeakSet[Counts] = weakref.WeakSet()
        self._lock = threading.Lock()
        self._plan_attrs: dict[str, dict[str, str]] = {}
        for name, callback, unit, description in (
            (
                A.METRIC_TOOL_CALLS,
                self._tool_calls,
                "{call}",
                "Tool calls seen, by plan phase letters and canonical action type.",
            ),
            (A.METRIC_FINDINGS, self._findings, "{finding}", "Detector findings, by detector."),
            (
                A.METRIC_DECISIONS,
                self._decisions,
                "{decision}",
                "Policy decisions other than allow, by kind.",
            ),
            (A.METRIC_REMINDERS, self._reminders, "{decision}", "Reminders and nudges queued for the model."),
            (A.METRIC_BLOCKS, self._blocks, "{decision}", "Tool calls denied or runs stopped by a policy."),
            (
                A.METRIC_INTERNAL_ERRORS,
                self._errors,
                "{error}",
                "planguard internal errors caught (fail-open).",
            ),
            (A.METRIC_DROPPED, self._drops, "{item}", "Telemetry dropped instead of delaying the agent."),
        ):
            meter.create_observable_counter(name, [callback], unit=unit, description=description)
        self.session_pc: Histogram = meter.create_histogram(
            A.METRIC_SESSION_PC,
            unit="1",
            description="Plan compliance (PC) of finished sessions.",
            explicit_bucket_boundaries_advisory=list(A.PC_BUCKETS),
        )

    def attach(self, counts: Counts) -> None:
        with self._lock:
            self._counts.add(counts)

    def record_pc(self, pc: float, plan: str) -> None:
        attrs = self._plan_attrs.get(plan)
        if attrs is None:
            attrs = self._plan_attrs[plan] = {A.M_PLAN: plan}
        self.session_pc.record(pc, attrs)

    # ------------------------------------------------------------------ collection (reader's thread)

    def _snapshots(self) -> list[Snapshot]:
        with self._lock:
            counts = list(self._counts)
        return [c.snapshot() for c in counts]

    def _tool_calls(self, options: CallbackOptions) -> Iterable[Observation]:
        total: dict[tuple[str, str], int] = {}
        for snap in self._snapshots():
            for key, n in snap.tool_calls.items():
                total[key] = total.get(key, 0) + n
        return [
            Observation(n, {A.M_PHASE: phase or "-", A.M_ACTION: action or "unknown"})
            for (phase, action), n in total.items()
        ]

    def _findings(self, options: CallbackOptions) -> Iterable[Observation]:
        return self._by("findings", A.M_DETECTOR, None)

    def _decisions(self, options: CallbackOptions) -> Iterable[Observation]:
        return [
            o
            for o in self._by("decisions", A.M_DECISION, None)
            if (o.attributes or {}).get(A.M_DECISION) != "allow"
        ]

    def _reminders(self, options: CallbackOptions) -> Iterable[Observation]:
        return self._by("decisions", A.M_DECISION, _REMINDERS)

    def _blocks(self, options: CallbackOptions) -> Iterable[Observation]:
        return self._by("decisions", A.M_DECISION, _BLOCKS)

    def _drops(self, options: CallbackOptions) -> Iterable[Observation]:
        return self._by("drops", A.M_REASON, None)

    def _errors(self, options: CallbackOptions) -> Iterable[Observation]:
        return [Observation(sum(snap.errors for snap in self._snapshots()))]

    def _by(self, field: str, key: str, only: tuple[str, ...] | None) -> list[Observation]:
        total: dict[str, int] = dict.fromkeys(only, 0) if only else {}
        for snap in self._snapshots():
            counts: dict[str, int] = getattr(snap, field)
            for name, n in counts.items():
                if only is None or name in total:
                    total[name] = total.get(name, 0) + n
        return [Observation(n, {key: name}) for name, n in total.items()]


_by_provider: weakref.WeakKeyDictionary[Any, Instruments] = weakref.WeakKeyDictionary()
_registry_lock = threading.Lock()


def instruments_for(provider: MeterProvider) -> Instruments:
    """The planguard instruments of ``provider``, created on first use."""
    with _registry_lock:
        inst = _by_provider.get(provider)
        if inst is None:
            inst = _by_provider[provider] = Instruments(provider)
        return inst
