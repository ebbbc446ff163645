"""Reading the embedded store (:mod:`planguard.sinks.store`) back: stored sessions → the step records
the writer wrote → ``ToolEvent``s.

Bad input never stops a read: a line that is not JSON or not a record of the expected shape becomes a
:class:`StoreReadError` (``"FILE:LINE: what is wrong; expected …"``) collected on the session, and the
rest of the file is still read. A file that is not a planguard session at all is yielded as an error.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...documents import loads_json
from ...events import MessageEvent, ToolEvent
from ...sinks.store.config import DEFAULT_STORE_PATH
from ...sinks.store.records import (
    HEADER_TYPE,
    RECORDED_KEY,
    BlockedRecord,
    DecisionRecord,
    FindingRecord,
    MessageRecord,
    RecordError,
    SessionEnd,
    SessionHeader,
    StepRecord,
)
from ._base import STANDARD_META_KEYS, LoadError, LoadNote, Trajectory

__all__ = [
    "FORMAT",
    "StoreReadError",
    "StoredSession",
    "is_store_header",
    "iter_sessions",
    "iter_trajectories",
    "read_session",
    "trajectories_from_records",
]

#: The loaders' name for this format.
FORMAT = "planguard-store"


class StoreReadError(Exception):
    """A store file or line that could not be read. ``str()`` is ``"PATH[:LINE]: problem; expected …"``."""

    def __init__(self, path: str, message: str, line: int | None = None) -> None:
        super().__init__(path, message, line)
        self.path = path
        self.message = message
        self.line = line

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return f"{where}: {self.message}"


@dataclass(slots=True)
class StoredSession:
    """One session file, parsed. ``complete`` is False when the run never reached its end record."""

    path: Path
    header: SessionHeader
    steps: list[StepRecord] = field(default_factory=list)
    blocked: list[BlockedRecord] = field(default_factory=list)
    findings: list[FindingRecord] = field(default_factory=list)  # session-level (no step)
    decisions: list[DecisionRecord] = field(default_factory=list)  # session-level (no step)
    #: The conversation turns the plan matched, each with the calls (steps and blocked) recorded before it.
    messages: list[tuple[int, MessageRecord]] = field(default_factory=list)
    end: SessionEnd | None = None
    errors: list[StoreReadError] = field(default_factory=list)

    @property
    def id(self) -> str:
        return self.header.session_id

    @property
    def complete(self) -> bool:
        return self.end is not None

    @property
    def missing_steps(self) -> int:
        """Steps the end record counts that the file does not hold (the writer dropped them: a full queue,
        a failed write); 0 for a session without its end record, whose count is unknown."""
        return max(0, self.end.n_steps - len(self.steps)) if self.end is not None else 0

    @property
    def dropped(self) -> int:
        """Records of the session the writer dropped (a full queue), as its end record counts them."""
        return self.end.dropped if self.end is not None else 0

    def incompleteness(self) -> StoreReadError | None:
        """The error that says the session is partial, or None when nothing of it was lost."""
        missing, dropped = self.missing_steps, self.dropped
        if not missing and not dropped:
            return None
        return StoreReadError(
            str(self.path),
            f"session {self.id!r} is partial: {missing} of its {self.end.n_steps if self.end else 0} steps "
            f"are missing, {dropped} records were dropped while recording; replayed from the rest",
        )

    def unended(self) -> str | None:
        """What to say of a session whose file has no end record (None when it has one): its process was
        killed or ended before the session did (with ``durability: write``, every call recorded before
        that is in the file), or it is still running."""
        if self.end is not None:
            return None
        return (
            f"session {self.id!r} has no end record: {len(self.steps)} steps and {len(self.blocked)} denied "
            "calls were read, and what came after them is not known (the process was killed or ended before "
            "the session did, or the session is still running); replayed from what was read"
        )

    def events(self) -> list[ToolEvent]:
        """The accepted tool calls in order, ready to replay (blocked calls never ran and are left out).

        A session kept without content has no arguments to classify again: each event then carries its
        step's recorded commands and action (``RECORDED_KEY`` in its metadata), which replay takes instead,
        and its call's digest as its only argument.
        """
        events = [s.event.to_event() for s in self.steps]
        if not self.header.content:
            for step, event in zip(self.steps, events, strict=True):
                recorded = {"commands": [list(c) for c in step.commands], "action": step.action}
                if step.event.facts:  # what decisions read of the arguments (see StoreSink.event_json)
                    recorded.update(step.event.facts)
                event.metadata = {**event.metadata, RECORDED_KEY: recorded}
                if step.event.digest is not None:  # the same calls stay the same for the detectors
                    event.arguments = {RECORDED_KEY: step.event.digest}
        return events

    def replay_events(self) -> list[ToolEvent]:
        """Every call the agent made, in order: the accepted ones, and the blocked ones (``blocked`` set to
        the denial the model saw) where they were attempted, so a replay counts them as denials, not steps.
        Each event's metadata holds ``n_model_calls``, the model calls made by then, so a replay can put the
        model calls (and what policies did at them) where they happened. Accepted calls are as
        :meth:`events` gives them (recorded commands and action when the session was kept without content)."""
        blocked = sorted(self.blocked, key=lambda b: b.at_step)
        out: list[ToolEvent] = []
        i = 0
        for s, event in zip(self.steps, self.events(), strict=True):
            while i < len(blocked) and blocked[i].at_step <= s.index:
                out.append(_blocked_event(blocked[i]))
                i += 1
            out.append(_with_model_calls(event, s.n_model_calls))
        out.extend(_blocked_event(b) for b in blocked[i:])
        return out

    @property
    def all_findings(self) -> list[FindingRecord]:
        return [f for s in self.steps for f in s.findings] + self.findings


def _with_model_calls(event: ToolEvent, n_model_calls: int | None) -> ToolEvent:
    if n_model_calls is not None:
        event.metadata = {**event.metadata, "n_model_calls": n_model_calls}
    return event


def _blocked_event(b: BlockedRecord) -> ToolEvent:
    event = _with_model_calls(b.event.to_event(), b.n_model_calls)
    if b.event.facts:  # kept without content: what the gates read of its arguments (not a classification)
        event.metadata = {**event.metadata, RECORDED_KEY: dict(b.event.facts)}
    denial = next((d for d in b.decisions if d.kind in ("deny", "stop")), None)
    event.blocked = (denial.message if denial is not None else "") or "denied"
    return event


def is_store_header(obj: Any) -> bool:
    """Whether a parsed JSON line is a store file's first record (for format sniffing)."""
    return isinstance(obj, dict) and obj.get("type") == HEADER_TYPE


def read_session(path: str | os.PathLike[str]) -> StoredSession:
    """Parse one session file. Raises :class:`StoreReadError` only when the file cannot be read or is not
    a planguard session; problems with individual lines are collected in ``.errors``."""
    p = Path(path)
    try:
        handle = p.open("rb")
    except OSError as exc:
        raise StoreReadError(
            str(p), f"cannot read file ({exc.strerror or exc}); expected a session file"
        ) from None
    with handle:
        session = _parse(str(p), _lines(str(p), handle))
    session.path = p
    return session


def iter_sessions(
    path: str | os.PathLike[str] = DEFAULT_STORE_PATH,
) -> Iterator[StoredSession | StoreReadError]:
    """Every session in a store directory (or one file), oldest first by file name."""
    root = Path(path)
    if root.is_file():
        files = [root]
    elif root.is_dir():
        files = sorted(p for p in root.iterdir() if p.suffix == ".jsonl" and not p.name.startswith("."))
    else:
        yield StoreReadError(str(root), "no such file or directory; expected a planguard store directory")
        return
    for f in files:
        try:
            yield read_session(f)
        except StoreReadError as exc:
            yield exc


def iter_trajectories(path: str | os.PathLike[str] = DEFAULT_STORE_PATH) -> Iterator[Trajectory | LoadError]:
    """The store as the loaders' ``Trajectory``/``LoadError`` items (for ``planguard replay``)."""
    for item in iter_sessions(path):
        if isinstance(item, StoreReadError):
            yield LoadError(item.path, item.message, item.line)
            continue
        yield from (LoadError(e.path, e.message, e.line) for e in item.errors)
        partial = item.incompleteness()
        if partial is not None:
            yield LoadError(partial.path, partial.message)
        unended = item.unended()
        if unended is not None:
            yield LoadNote(str(item.path), unended)
        yield _trajectory(item, str(item.path))


def trajectories_from_records(
    records: Iterable[tuple[int, Any] | Exception], source: str, default_id: str
) -> Iterator[Trajectory | LoadError]:
    """Hook for the loaders: already-parsed ``(line, record)`` pairs of one file → one ``Trajectory``.

    Parse errors the loader found (exceptions in ``records``) are passed through as ``LoadError``s.
    """
    passthrough: list[Exception] = []

    def pairs() -> Iterator[tuple[int, Any]]:
        for item in records:
            if isinstance(item, Exception):
                passthrough.append(item)
            else:
                yield item

    try:
        session = _parse(source, pairs())
    except StoreReadError as exc:
        yield from (e if isinstance(e, LoadError) else LoadError(source, str(e)) for e in passthrough)
        yield LoadError(exc.path, exc.message, exc.line)
        return
    yield from (e if isinstance(e, LoadError) else LoadError(source, str(e)) for e in passthrough)
    yield from (LoadError(e.path, e.message, e.line) for e in session.errors)
    if not session.header.session_id:
        session.header.session_id = default_id
    partial = session.incompleteness()
    if partial is not None:
        yield LoadError(source, partial.message)
    unended = session.unended()
    if unended is not None:
        yield LoadNote(source, unended)
    yield _trajectory(session, source)


# ---------------------------------------------------------------------------------------------------


def _lines(shown: str, handle: Any) -> Iterator[tuple[int, Any] | StoreReadError]:
    for number, raw in enumerate(handle, 1):
        if raw.isspace():
            continue
        try:
            yield number, loads_json(raw)
        except ValueError as exc:
            yield StoreReadError(shown, f"invalid JSON ({exc}); expected one JSON object per line", number)


def _parse(shown: str, lines: Iterable[tuple[int, Any] | StoreReadError]) -> StoredSession:
    session: StoredSession | None = None
    early: list[StoreReadError] = []
    for item in lines:
        if isinstance(item, StoreReadError):
            (session.errors if session is not None else early).append(item)
            continue
        number, obj = item
        if session is None:
            if not is_store_header(obj):
                raise StoreReadError(
                    shown,
                    f"first record is not a session header; expected an object with "
                    f'"type": "{HEADER_TYPE}" (not a planguard session file)',
                    number,
                )
            try:
                header = SessionHeader.from_json(obj)
            except RecordError as exc:
                raise StoreReadError(shown, f"bad session header: {exc}", number) from None
            session = StoredSession(Path(shown), header, errors=early)
            continue
        try:
            _add(session, obj)
        except RecordError as exc:
            session.errors.append(StoreReadError(shown, str(exc), number))
    if session is None:
        if early:
            raise early[0]
        raise StoreReadError(shown, "empty file; expected a planguard session file")
    return session


def _add(session: StoredSession, obj: Any) -> None:
    if not isinstance(obj, dict):
        raise RecordError(f"record is {type(obj).__name__}; expected an object")
    kind = obj.get("type")
    if kind == "step":
        session.steps.append(StepRecord.from_json(obj))
    elif kind == "blocked":
        session.blocked.append(BlockedRecord.from_json(obj))
    elif kind == "message":
        at = len(session.steps) + len(session.blocked)
        session.messages.append((at, MessageRecord.from_json(obj)))
    elif kind == "finding":
        session.findings.append(FindingRecord.from_json(obj))
    elif kind == "decision":
        session.decisions.append(DecisionRecord.from_json(obj))
    elif kind == "end":
        session.end = SessionEnd.from_json(obj)
    elif kind == HEADER_TYPE:
        raise RecordError("a second session header; expected one header per file")
    else:
        raise RecordError(f"'type' is {kind!r}; expected step, blocked, message, finding, decision or end")


def _trajectory(session: StoredSession, source: str) -> Trajectory:
    meta: dict[str, Any] = dict.fromkeys(STANDARD_META_KEYS)
    h = session.header
    for key in (*STANDARD_META_KEYS, "provider"):  # (the provider: a replay's spans name it)
        if key in h.metadata:
            meta[key] = h.metadata[key]
    meta.update(
        n_model_calls=session.end.n_model_calls
        if session.end
        else (session.steps[-1].n_model_calls if session.steps else None),
        plan=h.plan,
        plan_spec=h.plan_spec,
        plans=h.plans,
        rules=h.rules,
        started_at=h.started_at,
        complete=session.complete,
        partial=True
        if session.missing_steps or session.dropped or session.header.partial or session.end is None
        else None,
        missing_steps=session.missing_steps or None,
        dropped_records=session.dropped or None,
        blocked=len(session.blocked),
        stored_letters=session.end.letters if session.end else None,
    )
    events = session.replay_events()
    # A turn carries the phase it showed (RECORDED_KEY), which replay takes: the assistant message an
    # after_assistant condition read was not recorded.
    messages = [
        (
            at,
            MessageEvent(
                m.role, m.text or "", m.time, {RECORDED_KEY: {"commands": [list(c) for c in m.commands]}}
            ),
        )
        for at, m in session.messages
    ]
    return Trajectory(
        id=h.session_id, source=source, format=FORMAT, events=events, meta=meta, messages=messages
    )
