"""planguard's metrics: plain per-session counts on the hot path, read by observable instruments later.

Counting a tool call is a dict increment in its session's own tally — no lock, no thread lookup: a
session's hooks never run concurrently (callers serialise access to a session), so each tally has one
writer at a time. Nothing touches the metrics SDK until a reader collects (and copies the tallies).
The SDK hands back the *existing* instrument (and ignores the new callbacks) when one with the same name
is created twice on a meter provider, so instruments are created once per provider and their callbacks
sum the counts of every live sink attached to it (two guards in one process both report).
"""

from __future__ import annotations

import threading
import weakref
from collections import deque
from collections.abc import Iterable
from typing import Any, NamedTuple, TypeVar

from opentelemetry.metrics import CallbackOptions, Histogram, MeterProvider, Observation

from ..._version import __version__
from ...errors import ErrorCounter
from ..drops import DropCounter
from . import attributes as A

__all__ = [
    "MAX_CALL_KEYS",
    "OVERFLOW",
    "Counts",
    "Instruments",
    "Snapshot",
    "Tally",
    "count_calls",
    "instruments_for",
]

_REMINDERS = ("remind", "nudge")
_BLOCKS = ("deny", "stop")
#: Distinct (phase letters, action type) pairs a tally counts apart. Neither part is few by construction (a
#: chained command has a letter per sub-command; a custom classifier's types are its own), so past this a new
#: pair is counted under ``OVERFLOW``, reported with OpenTelemetry's overflow attribute as the SDK does.
MAX_CALL_KEYS = 1024
OVERFLOW: tuple[str, str] = ("otel.metric.overflow", "")  # no phase letters look like this
_OVERFLOW_ATTRS: dict[str, bool] = {"otel.metric.overflow": True}
#: Tallies of sessions gone that wait to be folded into the totals. A collection folds them; with no metric
#: reader nothing ever collects, so past this a new session's tally folds them first.
MAX_RETIRING = 1024
#: Tool durations waiting for the next collection (a histogram's ``record`` costs several microseconds, so
#: the agent's thread only queues the value; the reader's thread records it). With no reader collecting
#: (no metrics configured) nothing ever drains the queue: it keeps the newest this many.
MAX_PENDING_DURATIONS = 16_384


class Snapshot(NamedTuple):
    tool_calls: dict[tuple[str, str], int]
    findings: dict[str, int]
    decisions: dict[str, int]
    errors: int
    drops: dict[str, int]


class Tally:
    """One session's counts, written by that session's hooks only (``d[k] = d.get(k, 0) + 1``, no lock);
    a collector copies the dicts (a ``dict`` copy is atomic under the GIL)."""

    __slots__ = ("decisions", "findings", "tool_calls")

    def __init__(self) -> None:
        self.tool_calls: dict[tuple[str, str], int] = {}  # (phase letters, action type) -> calls
        self.findings: dict[str, int] = {}
        self.decisions: dict[str, int] = {}

    def add(self, other: Tally) -> None:
        calls = self.tool_calls
        for key, n in dict(other.tool_calls).items():  # the copy first: the owner may be adding a key
            count_calls(calls, key, n)
        _merge(self.findings, other.findings)
        _merge(self.decisions, other.decisions)


K = TypeVar("K")


def count_calls(calls: dict[tuple[str, str], int], key: tuple[str, str], n: int = 1) -> None:
    """Add ``n`` calls under ``key``, or under ``OVERFLOW`` when ``key`` is new and ``MAX_CALL_KEYS`` pairs
    are counted already (a session's tally, and the totals of every session gone, would grow without end)."""
    if key not in calls and len(calls) >= MAX_CALL_KEYS:
        key = OVERFLOW
    calls[key] = calls.get(key, 0) + n


def _merge(into: dict[K, int], counts: dict[K, int]) -> None:
    for key, n in dict(counts).items():  # the copy first: the owner may be adding a key
        into[key] = into.get(key, 0) + n


class Counts:
    """One sink's counters: a :class:`Tally` per session, plus the folded tallies of sessions gone.

    A tally is live while its owner (the sink's per-session state) exists; when the owner is freed — and
    so no hook can still be writing to it — the tally is queued for folding, and the next snapshot (or new
    tally, once ``MAX_RETIRING`` wait) moves it into the totals. The owner is watched by a weak reference
    whose callback only appends it to a deque, since it may run on any thread, at any point.
    """

    __slots__ = (
        "__weakref__",
        "_errors",
        "_live",
        "_lock",
        "_owner_freed",
        "_retired",
        "_retiring",
        "drops",
        "durations",
    )

    def __init__(self, drops: DropCounter, errors: ErrorCounter) -> None:
        self._lock = threading.Lock()  # guards the tally registry and the error counters, not the counts
        self._live: dict[weakref.ref[object], Tally] = {}  # by a weak reference to the tally's owner
        self._retiring: deque[weakref.ref[object]] = deque()  # the references of owners freed
        self._owner_freed = self._retiring.append  # (one callback for every reference)
        self._retired = Tally()  # counts of sessions gone
        self._errors: dict[int, ErrorCounter] = {id(errors): errors}
        self.drops = drops
        # (action type, error type, seconds) of finished calls; deque appends and pops are thread-safe.
        self.durations: deque[tuple[str, str, float]] = deque(maxlen=MAX_PENDING_DURATIONS)

    def add_duration(self, seconds: float, action: str, error: str) -> None:
        self.durations.append((action, error, seconds))

    def tally(self, owner: object) -> Tally:
        """A new tally, counted until ``owner`` is freed (then folded into the totals)."""
        tally = Tally()
        with self._lock:
            self._live[weakref.ref(owner, self._owner_freed)] = tally
            if len(self._retiring) >= MAX_RETIRING:
                self._fold()
        return tally

    def _fold(self) -> None:
        """Move the tallies of sessions gone into the totals (the caller holds the lock)."""
        retiring = self._retiring
        while retiring:  # a tally is live until folded here: counted once, either way
            self._retired.add(self._live.pop(retiring.popleft()))

    def watch_errors(self, errors: ErrorCounter) -> None:
        """Report a pipeline's internal-error counter too (each counted once however many sessions)."""
        if id(errors) not in self._errors:
            with self._lock:
                self._errors.setdefault(id(errors), errors)

    def snapshot(self) -> Snapshot:
        total = Tally()
        with self._lock:
            self._fold()
            total.add(self._retired)
            for tally in list(self._live.values()):
                total.add(tally)
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
        self.tool_duration: Histogram = meter.create_histogram(
            A.METRIC_TOOL_DURATION,
            unit="s",
            description="Wall-clock duration of tool calls, by action type (and error.type when failed).",
            explicit_bucket_boundaries_advisory=list(A.DURATION_BUCKETS),
        )

    def record_duration(self, seconds: float, action: str, error: str) -> None:
        attrs = {A.M_ACTION: action or "unknown"}
        if error:
            attrs[A.M_ERROR] = error
        self.tool_duration.record(seconds, attrs)

    def attach(self, counts: Counts) -> None:
        with self._lock:
            self._counts.add(counts)

    def record_pc(self, pc: float, plan: str, agent: str | None = None) -> None:
        """A finished session's PC, by plan and (when named) agent: ``gen_ai.agent.name``."""
        attrs = {A.M_PLAN: plan}
        if agent:
            attrs[A.GEN_AI_AGENT_NAME] = agent
        self.session_pc.record(pc, attrs)

    # ------------------------------------------------------------------ collection (reader's thread)

    def _attached(self) -> list[Counts]:
        with self._lock:
            return list(self._counts)

    def _snapshots(self) -> list[Snapshot]:
        return [c.snapshot() for c in self._attached()]

    def _record_durations(self) -> None:
        """Record the queued tool durations into the histogram (on the reader's thread, as a collection
        starts: the SDK runs observable callbacks before it reads the synchronous instruments)."""
        for c in self._attached():
            queue = c.durations
            for _ in range(len(queue)):
                action, error, seconds = queue.popleft()
                self.record_duration(seconds, action, error)

    def _tool_calls(self, options: CallbackOptions) -> Iterable[Observation]:
        self._record_durations()
        total: dict[tuple[str, str], int] = {}
        for snap in self._snapshots():
            for key, n in snap.tool_calls.items():
                total[key] = total.get(key, 0) + n
        return [
            Observation(
                n,
                _OVERFLOW_ATTRS
                if (phase, action) == OVERFLOW
                else {A.M_PHASE: phase or "-", A.M_ACTION: action or "unknown"},
            )
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
