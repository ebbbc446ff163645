"""The embedded store: every session recorded as a JSONL file, written by a background worker.

The sink's hooks hand a bounded queue what a record needs (of a finished call, a :class:`TakenStep`, not
the step); building records, redacting, digesting, serialising and writing all happen on the worker
thread. When the queue is full a record is dropped and counted (``store_queue_full``) — the agent never
waits for the disk — unless ``store.durability`` is ``block``: the agent's thread then waits for the writer;
with ``write`` there is no queue, and the agent's thread builds and writes each record itself.
Each session's lines of a batch are written whole or not at all: a failed write (a full disk) is cut back
to where it began, so a file never holds a partial line, and a session file that got nothing is removed.

Private by default: what a record may carry of tool-call content is the sink's :class:`ContentPolicy`
(metadata only unless ``store.content`` or ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` opts in;
content is then redacted before it is cut). The directory is created 0700 with a ``.gitignore`` of ``*``,
and session files 0600.
"""

from __future__ import annotations

import contextlib
import enum
import hashlib
import itertools
import json
import math
import os
import re
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import orjson

from ..._version import __version__
from ...actions.types import ActionType, label_of
from ...detectors.repeats import call_key
from ...errors import ErrorCounter
from ...phases import LETTER_OF
from ...plan import PRESETS
from ...tools.todo import todo_reading
from .. import Sink, forget_oldest_call
from ..capture import ContentPolicy
from ..drops import DropCounter
from ..redact import Redactor, redact
from ..worker import BackgroundWorker
from . import records
from .config import StoreConfig
from .records import DecisionRecord, FindingRecord, SessionEnd, SessionHeader

if TYPE_CHECKING:
    from ...decisions import Decision
    from ...events import MessageEvent, ToolEvent
    from ...findings import Finding
    from ...metrics import Compliance, Scores
    from ...phases.base import Classification
    from ...session import Session, SessionSummary
    from ...step import Step

__all__ = ["StoreSink", "session_file_name"]

#: Session files kept open at once by the writer; older ones are closed and reopened on demand.
MAX_OPEN_FILES = 64
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
#: A canonical action's fields as a step line keeps them, and how: "label", a value of planguard's own
#: vocabulary (the type, the write kind, the scaffold), as it is; "text", text taken from the call (a tool
#: name), redacted; "word", a program name (+ subcommand), as "text" when it is bare words (``pytest``,
#: ``git commit``), else — a script's path or name, ``/srv/acme/run_payroll.sh`` — as "content";
#: "content", argument text (a path, a query, a URL), redacted with content, else its digest in its place
#: (``<field>_id``).
_ACTION_FIELDS = (
    ("type", "label"),
    ("target", "content"),
    ("tool", "text"),
    ("path", "content"),
    ("intent", "word"),
    ("write", "label"),
    ("shell", "word"),
    ("scaffold", "label"),
)
#: A program (+ subcommand, flags) named by bare words: no path, no file name.
_BARE_WORDS = re.compile(r"[A-Za-z0-9_+-]{1,64}(?: [A-Za-z0-9_+-]{1,64}){0,3}")
_ACTION_FLAGS = ("is_validation", "is_source_write", "is_completion", "structured")
#: Modes of what the store creates: only the user may read the sessions (tool calls, perhaps secrets).
DIR_MODE = 0o700
FILE_MODE = 0o600


# Lines are orjson's JSON. Values JSON has no form for follow the standard library's conventions (see
# _default: ``str()`` for other objects, tuples as arrays), except two orjson decides itself: NaN and
# infinities are written as null (strict JSON: json's ``NaN`` token is not JSON, and other readers reject it)
# and an Enum as its value. What orjson refuses — non-string keys, integers beyond 64 bits, lone surrogates,
# nesting deeper than 255 — goes to the standard library's encoder after _json_safe has made the same two
# choices (and turned a key json cannot write into its str()), so every line is strict JSON whichever encoder
# wrote it. Records are trees of fresh dicts and lists; a cycle could only come from a tool's arguments, and
# then fails that one record (RecursionError, counted), so the fallback skips the per-container cycle
# bookkeeping.
_ENCODER = json.JSONEncoder(ensure_ascii=False, default=str, separators=(",", ":"), check_circular=False)
_ASCII_ENCODER = json.JSONEncoder(ensure_ascii=True, default=str, separators=(",", ":"), check_circular=False)
_ORJSON_OPTIONS = (
    orjson.OPT_APPEND_NEWLINE | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
)


def _default(value: Any) -> Any:
    """What orjson cannot write itself, as ``_ENCODER`` writes it."""
    if isinstance(value, tuple):  # a namedtuple or other tuple subclass: an array
        return list(value)
    if isinstance(value, float):  # a float subclass: the number
        return float(value)
    return str(value)


def _json_safe(value: Any) -> Any:
    """``value`` for the standard library's encoder, written as orjson would write it: NaN and infinities as
    None, an Enum as its value, and a dict key json cannot write as its ``str()``."""
    if isinstance(value, dict):
        writable = (str, int, float)
        return {
            k if k is None or isinstance(k, writable) else str(k): _json_safe(v) for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    if isinstance(value, enum.Enum):
        return _json_safe(value.value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _encode(record: dict[str, Any]) -> bytes:
    """The line for ``record``, UTF-8 encoded, with a newline (see above).

    A lone surrogate (which a model's JSON may carry as an escape) cannot be written as UTF-8: such a line is
    written with every non-ASCII character escaped, as the JSON it came from had it, and reads back equal.
    tests/unit/sinks/test_store_encode.py checks every line reads back as the standard library's would.
    """
    try:
        return orjson.dumps(record, default=_default, option=_ORJSON_OPTIONS)
    except orjson.JSONEncodeError:
        pass
    record = _json_safe(record)  # rare: only what orjson refused comes here
    text = _ENCODER.encode(record) + "\n"
    try:
        return text.encode()
    except UnicodeEncodeError:
        return (_ASCII_ENCODER.encode(record) + "\n").encode()


def session_file_name(session_id: str, started_at: float) -> str:
    """``20250101T120000-<id>-<random>.jsonl``: sorts by start time; ids may repeat across runs."""
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(started_at))
    safe = _UNSAFE.sub("_", redact(session_id)).strip("._")[:80] or "session"  # (an id may hold anything)
    return f"{stamp}-{safe}-{os.urandom(4).hex()}.jsonl"


@dataclass(slots=True)
class TakenStep:
    """What a finished call's line needs, taken from its step on the agent's thread (:meth:`StoreSink.take`)
    for the writer to build the line from: what the line needs, as it was when the call ended."""

    index: int
    event: ToolEvent
    roles: tuple[str, ...]
    commands: tuple[Any, ...]  # the classification's sub-commands (label, role)
    action: Any
    findings: tuple[Finding, ...]
    matchers: tuple[Any, ...] = ()  # the session's policies' tool patterns (see StoreSink.event_json)


@dataclass(slots=True)
class _State:
    """One session's record in the making: its file's key, and the decisions waiting for their call."""

    key: int
    compliance: Compliance | None  # the session's primary compliance: its scores go with each step
    # The tool patterns the session's policies judge calls by (ToolMatcher): without content, each call's
    # record keeps their argument predicates' verdicts, so that a replay decides as the live run did.
    matchers: tuple[Any, ...] = ()
    # Decisions made while a call was being gated (before it was accepted); they join the call's own once
    # it is (see StoreSink._settle).
    pre_step: Step | None = None
    pre: tuple[Decision, ...] = ()
    decisions: dict[int, list[Decision]] = field(default_factory=dict)
    lost: int = 0  # records of this session the full queue dropped (its end record says how many)


class StoreSink(Sink):
    """Writes each session to ``<path>/<start>-<id>-<rand>.jsonl`` (see
    :mod:`planguard.sinks.store.records`)."""

    def __init__(
        self,
        config: StoreConfig | None = None,
        *,
        drops: DropCounter | None = None,
        errors: ErrorCounter | None = None,
        redactor: Redactor | None = None,
    ) -> None:
        self.config = config if config is not None else StoreConfig()
        self.path = Path(self.config.path)
        self.drops = drops if drops is not None else DropCounter()
        self.errors = errors if errors is not None else ErrorCounter()
        self._redactor = redactor
        self.content = ContentPolicy.resolve(
            self.config.content,
            max_chars=self.config.max_result_chars,
            redact=self.config.redact,
            redactor=redactor,
        )
        # Without content, a call's identity is kept as a keyed digest (of what the repeat detectors compare,
        # and of its action's target and path), so that replay still sees which calls were the same. The key
        # is this sink's own and is never written: digests compare within a run, and reveal nothing.
        # ``_keyed`` is the hash keyed with it and fed nothing yet; each digest continues a copy of it.
        self._keyed = _keyed_hash(os.urandom(16))
        self._seq = itertools.count(1)  # file keys; next() is atomic
        self._worker: BackgroundWorker[tuple[Any, ...]] = BackgroundWorker(
            "store",
            self._write,
            drops=self.drops,
            drop_reason="store_queue_full",
            max_queue=self.config.max_queue,
            max_batch=1024,
            interval_s=0.2,
            errors=self.errors,
            # Nobody waits for the file: the writer drains every interval_s (or after 256 records) rather
            # than being woken per record, which would cost the agent a thread wake-up and a GIL hand-over
            # per tool call. flush()/shutdown() still write everything at once.
            wake_at=256,
            block=self.config.durability == "block",
            inline=self.config.durability == "write",
        )
        # Sessions to be recorded on in a file another sink began (see resume_in), by session id.
        self._resume: dict[str, Path] = {}
        # Writer-thread state.
        self._files: OrderedDict[int, IO[bytes]] = OrderedDict()
        self._dir_made = False  # the folder was made (or found) by this sink's first write
        # The file name of each session being written (its file may be closed, past MAX_OPEN_FILES): a
        # session's entry goes with its end record.
        self._names: dict[int, str] = {}

    # ------------------------------------------------------------------ hooks (agent's thread)

    # No on_tool_start: a call's gate decisions are moved to it lazily (_settle), which saves every call a
    # hook on the agent's thread.

    def new_state(self, session: Session) -> _State:
        """The session's file key; its header goes to the writer (a session restored in another process
        begins a file of its own, unless :meth:`resume_in` named the file to go on in)."""
        matchers = tuple(m for p in session.pipeline.policies for m in getattr(p, "tool_matchers", ()))
        st = _State(next(self._seq), session.primary_compliance, matchers)
        resumed = self._resume.pop(session.id, None)
        if resumed is not None:
            self._worker.submit(("resume", st.key, session.id, resumed))
            return st
        rules = session.pipeline.rules
        rules_version = getattr(rules, "name", None)
        header = SessionHeader(
            session_id=session.id,
            started_at=session.started_at,
            plan=session.pipeline.plan.name,
            plans=[p.name for p in session.pipeline.plans],
            rules=rules_version if isinstance(rules_version, str) else None,
            metadata=dict(session.metadata),
            planguard_version=__version__,
            content=self.content.include,
        )
        # The header is written now, on the agent's thread (once per session): a process killed before the
        # writer's next batch still leaves the session's file, which replay reports as having no end record.
        if not self._worker.write_now(("start", st.key, session.id, header, session.pipeline.plan)):
            st.lost += 1
        return st

    def on_tool_end(self, session: Session, step: Step, state: _State) -> None:
        st = state
        if st.pre_step is step:
            self._settle(st)
        decisions = st.decisions.pop(step.index, None)
        comp = st.compliance
        submitted = self._worker.submit(
            (
                "step",
                st.key,
                session.id,
                self.take(step, st.matchers),
                decisions,
                comp.scores() if comp is not None else None,
                session.n_model_calls,
                session.pipeline.letter_of,
            )
        )
        if not submitted:
            st.lost += 1

    def on_finding(self, session: Session, step: Step | None, finding: Finding, state: _State) -> None:
        if step is None and not self._worker.submit(("finding", state.key, session.id, finding)):
            state.lost += 1  # (step findings travel with their step record)

    def on_decision(self, session: Session, step: Step | None, decision: Decision, state: _State) -> None:
        st = state
        if step is None:
            if not self._worker.submit(("decision", st.key, session.id, decision)):
                st.lost += 1
        elif step.index >= session.n_steps:  # gating: the call is not accepted (yet)
            if st.pre_step is not step:
                self._settle(st)
                st.pre_step = step
            st.pre = (*st.pre, decision)
            if decision.blocks:
                blocked = (
                    "blocked",
                    st.key,
                    session.id,
                    step.event,
                    st.pre,
                    step.index,
                    session.n_model_calls,
                    st.matchers,
                )
                if not self._worker.submit(blocked):
                    st.lost += 1
                st.pre_step, st.pre = None, ()
        else:
            if st.pre_step is step:
                self._settle(st)
            waiting = st.decisions.get(step.index)
            if waiting is None:
                waiting = st.decisions[step.index] = []
                forget_oldest_call(st.decisions)
            waiting.append(decision)

    @staticmethod
    def _settle(st: _State) -> None:
        """Hand the gate decisions of the last gated call to it. A gated call that was not blocked was
        accepted (a gate that does not block lets the call through), so by the time anything else happens
        — its own later decisions, its end, another call's gate — it is a step with its final index; its
        gate decisions come first among its decisions."""
        step = st.pre_step
        if step is not None and st.pre:
            st.decisions[step.index] = list(st.pre)
            forget_oldest_call(st.decisions)
            st.pre = ()
        st.pre_step = None

    def on_message(
        self, session: Session, message: MessageEvent, classification: Classification, state: _State
    ) -> None:
        self._worker.submit(
            (
                "message",
                state.key,
                session.id,
                message,
                tuple(classification.commands),
                session.n_steps,
                session.n_model_calls,
            )
        )

    def on_session_end(self, session: Session, summary: SessionSummary, state: _State) -> None:
        # Never dropped (one record past the bound per ending session): it says what the session lost.
        self._worker.submit(("end", state.key, session.id, summary, state.lost), force=True)

    def flush(self, timeout_s: float = 5.0) -> bool:
        """Wait until everything recorded so far is on disk (tests, reports)."""
        return self._worker.flush(timeout_s)

    # ------------------------------------------------------------------ one session, several processes

    # A hook process per call (the Claude Code hook) records one session through many sinks in turn: each
    # goes on in the file the first one began, and they share the key calls are digested with.

    def resume_in(self, session_id: str, path: str | os.PathLike[str]) -> None:
        """Record the session ``session_id`` in ``path`` (a file of this store another sink began) when it
        next begins here (restored from a checkpoint): no second header; its records are appended there."""
        self._resume[session_id] = Path(path)
        while len(self._resume) > MAX_OPEN_FILES:  # never taken up: only the latest matter
            del self._resume[next(iter(self._resume))]

    def file_of(self, session: Session) -> Path | None:
        """The file ``session`` is recorded in once a record of it is written (after :meth:`flush`); None
        before, once its end is written, or when this sink does not record it."""
        state = self._state_of(session)
        name = None if state is None else self._names.get(state.key)
        return None if name is None else self.path / name

    def forget(self, session: Session) -> None:
        """Stop recording ``session`` without an end record: it goes on elsewhere (another process)."""
        state = self._state_of(session)
        if state is not None:
            self._worker.submit(("forget", state.key, session.id))

    def _state_of(self, session: Session) -> _State | None:
        return next((state for sink, state in session.sink_states if sink is self), None)

    def use_digest_key(self, key: bytes) -> None:
        """Digest calls with ``key`` rather than this sink's random one, so that the sinks recording one
        session in turn give its same calls the same digests. Before anything is recorded."""
        self._keyed = _keyed_hash(bytes(key))

    def files(self) -> list[Path]:
        """The session files in the store's folder, oldest first (a name starts with its start time)."""
        return sorted(self.path.glob("*.jsonl")) if self.path.is_dir() else []

    def shutdown(self) -> None:
        self._worker.shutdown(5.0)
        for f in self._files.values():
            with contextlib.suppress(OSError):
                f.close()
        self._files.clear()

    # ------------------------------------------------------------------ writer thread

    def _write(self, batch: list[tuple[Any, ...]]) -> None:
        """Format the batch's records, then write each session's lines with one system call. The write
        releases the GIL, and taking it back from a busy agent's thread can take the interpreter's switch
        interval (5 ms): one write per 8 KB buffer, as a buffered file makes, let an agent in a tight loop
        outrun the writer until its queue overflowed."""
        lines: dict[int, list[bytes]] = {}  # file key -> its lines in this batch, in order
        first: dict[int, tuple[str, SessionHeader | None]] = {}  # file key -> (session id, header)
        ended: list[int] = []
        for item in batch:
            kind, key, session_id = item[0], item[1], item[2]
            if kind == "resume":  # no record: the file already has the session's header
                self._names[key] = item[3].name
                continue
            if kind == "forget":
                ended.append(key)
                continue
            try:
                line = self._line(item)
            except Exception as exc:  # one bad record must not cost the rest of the batch
                self.drops.add("store_record_failed")
                self.errors.record("StoreSink.record", exc)
                continue
            if key not in lines:
                lines[key] = []
                first[key] = (session_id, item[3] if kind == "start" else None)
            lines[key].append(line)
            if kind == "end":
                ended.append(key)
        for key, session_lines in lines.items():
            session_id, header = first[key]
            try:
                handle, made_up = self._handle(key, session_id, header)
                self._append(key, handle, made_up + b"".join(session_lines))
            except OSError as exc:
                self.drops.add("store_write_failed", len(session_lines))
                self.errors.record("StoreSink.write", exc)
        for key in ended:
            if key in self._files:
                with contextlib.suppress(OSError):
                    self._files.pop(key).close()
            self._names.pop(key, None)

    def _append(self, key: int, handle: IO[bytes], data: bytes) -> None:
        """Append ``data`` to the session's file, all of it or none: a write that fails part-way (a full
        disk, a file size limit) is cut back to where it began, and a file left empty is removed (the
        session's next batch begins a new one, its header made up)."""
        fd = handle.fileno()
        size = os.fstat(fd).st_size
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(fd, view) :]
        except OSError:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, size)
            if size == 0:
                self._files.pop(key, None)
                with contextlib.suppress(OSError):
                    handle.close()
                name = self._names.pop(key, None)
                if name is not None:
                    with contextlib.suppress(OSError):
                        (self.path / name).unlink()
            raise

    def _handle(self, key: int, session_id: str, header: SessionHeader | None) -> tuple[IO[bytes], bytes]:
        """The session's file, open, and the header line it still needs (made up when the session's start
        record was dropped), if any."""
        handle = self._files.get(key)
        if handle is not None:
            self._files.move_to_end(key)
            return handle, b""
        made_up = b""
        name = self._names.get(key)
        if name is None:  # a new session (or its start record was dropped: make the header up)
            started = header.started_at if header is not None else time.time()
            name = self._names[key] = session_file_name(session_id, started)
            handle = self._open_new(self.path / name)
            if header is None:
                made_up = _encode(
                    SessionHeader(
                        session_id=self.content.clean(session_id),
                        started_at=started,
                        plan="",
                        partial=True,
                        planguard_version=__version__,
                        content=self.content.include,
                    ).to_json()
                )
        else:
            handle = _open_private(self.path / name)
        self._files[key] = handle
        while len(self._files) > MAX_OPEN_FILES:
            _, old = self._files.popitem(last=False)
            old.close()
        return handle, made_up

    def _open_new(self, path: Path) -> IO[bytes]:
        """A new session file. The folder is made when the sink first writes, and again when it has been
        removed since (checking for it and every parent per session cost more than writing the session)."""
        if not self._dir_made:
            self._make_dir()
            self._dir_made = True
        try:
            return _open_private(path)
        except FileNotFoundError:
            self._make_dir()
            return _open_private(path)

    def _make_dir(self) -> None:
        """The store directory (and missing parents) 0700, with a ``.gitignore`` that keeps it out of git."""
        missing = [p for p in (self.path, *self.path.parents) if not p.exists()]
        for p in reversed(missing):
            with contextlib.suppress(FileExistsError):  # (another writer made it meanwhile)
                p.mkdir(mode=DIR_MODE)
        ignore = self.path / ".gitignore"
        if not ignore.exists():
            with contextlib.suppress(FileExistsError):
                fd = os.open(ignore, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
                with os.fdopen(fd, "w") as f:
                    f.write("# planguard session store: tool calls, never to be committed\n*\n")

    def _line(self, item: tuple[Any, ...]) -> bytes:
        return _encode(self._record(item))

    def _record(self, item: tuple[Any, ...]) -> dict[str, Any]:
        kind = item[0]
        if kind == "step":
            _, _, _, step, decisions, scores, n_model_calls, letter_of = item
            return self.step_json(step, decisions, scores, n_model_calls, letter_of)
        if kind == "start":
            header: SessionHeader = item[3]
            header.session_id = self.content.clean(header.session_id)
            header.metadata = self.content.clean(header.metadata)
            plan = item[4]
            if PRESETS.get(plan.name) != plan:  # a plan of the config's own: replay needs its definition
                header.plan_spec = plan.model_dump(mode="json")
            return header.to_json()
        c = self.content
        if kind == "blocked":
            _, _, _, event, decisions, at_step, n_model_calls, matchers = item
            return {
                "type": "blocked",
                "at_step": at_step,
                "event": self.event_json(event, matchers),
                "decisions": [_decision(d, c).to_json() for d in decisions],
                "n_model_calls": n_model_calls,
            }
        if kind == "message":
            _, _, _, message, commands, at_step, n_model_calls = item
            return records.MessageRecord(
                role=message.role,
                commands=[(str(x.label), str(x.role)) for x in commands],  # (the label is "message")
                at_step=at_step,
                n_model_calls=n_model_calls,
                text=c.text(message.text),  # content: None without it, else redacted and cut
                time=message.time,
            ).to_json()
        if kind == "finding":
            return {"type": "finding", **_finding(item[3], c).to_json()}
        if kind == "decision":
            return {"type": "decision", **_decision(item[3], c).to_json()}
        if kind == "end":
            s: SessionSummary = item[3]
            return SessionEnd(
                n_steps=s.n_steps,
                n_model_calls=s.n_model_calls,
                letters=s.letters,
                langutory=s.langutory,
                scores={plan: sc.as_dict() for plan, sc in s.scores.items()},
                finding_counts=dict(s.finding_counts),
                decision_counts=dict(s.decision_counts),
                duration=s.duration,
                dropped=item[4],
            ).to_json()
        raise ValueError(f"unknown store item {kind!r}")

    # ------------------------------------------------------------------ record building (writer thread)

    def take(self, step: Step, matchers: tuple[Any, ...] = ()) -> TakenStep:
        """What the line of ``step`` needs (on the agent's thread)."""
        cls = step.classification
        commands = getattr(cls, "commands", ())
        return TakenStep(step.index, step.event, cls.roles, commands, step.action, step.findings, matchers)

    def step_json(
        self,
        step: TakenStep,
        decisions: Any,
        scores: Scores | None,
        n_model_calls: int,
        letter_of: Mapping[str, str] = LETTER_OF,
    ) -> dict[str, Any]:
        """The line of an accepted call, its content as this sink may keep it (see ``ContentPolicy``)."""
        c = self.content
        roles = list(step.roles)
        plan = getattr(step.action, "type", None) is ActionType.PLAN  # (what the todo tracker reads)
        event = self.event_json(step.event, step.matchers, todo=plan)
        return records.step_json(
            step.index,
            event,
            roles=roles,
            letters="".join([letter_of.get(r, "?") for r in roles]),
            commands=self._commands(step.commands, event),
            action=_action(step.action, c, self.digest),
            findings=[_finding(f, c).to_json() for f in step.findings],
            decisions=[_decision(x, c).to_json() for x in decisions] if decisions else [],
            scores=scores.as_dict() if scores is not None else None,
            n_model_calls=n_model_calls,
        )

    def _commands(self, commands: tuple[Any, ...], event: dict[str, Any]) -> list[list[str]]:
        """Each sub-command's ``[label, role]``. A label is a word of the call — a command word, and a
        multi-line command makes every line's first word one, a key's body included — so it is kept only
        with content, and only where the redacted call still shows it. Replay needs only the roles."""
        if not self.content.include:
            return [["", str(x.role)] for x in commands]
        shown = f"{event.get('tool')} {event.get('action') or ''} {event.get('arguments')}"
        clean = self.content.clean_text  # a label is a program or tool name, shown in the call: redacted
        return [[clean(label) if (label := str(x.label)) in shown else "", str(x.role)] for x in commands]

    def event_json(
        self, ev: ToolEvent, matchers: tuple[Any, ...] = (), *, todo: bool = False
    ) -> dict[str, Any]:
        """The call as this sink may keep it: with content, its texts redacted (the result then cut to
        ``max_result_chars``); without, ids and numbers only, the call's keyed digest, and the facts that
        decisions read of its arguments (``facts``): the verdict of each argument predicate of ``matchers``
        and, for a ``todo`` call, the list it wrote with its texts digested."""
        c = self.content
        arguments = action = result = metadata = digest = facts = None
        if c.include:
            args = ev.arguments
            # (a copy either way: the event's dict stays the agent's)
            arguments = c.value(args) if isinstance(args, str) or c.redact else dict(args)
            action = c.text(ev.action, 0) if ev.action is not None else None
            result = c.text(ev.result) if ev.result is not None else None  # redacted, then cut
            if ev.metadata:  # (free-form: loaders keep thoughts and tool output there)
                metadata = c.clean(dict(ev.metadata))
        else:
            digest = self.digest(call_key(ev))
            facts = self._facts(ev, matchers, todo)
        # A name or an id may hold anything: written as its redacted text, the string the reader expects.
        return records.event_json(
            c.clean_text(str(ev.tool)),
            arguments=arguments,
            digest=digest,
            call_id=c.clean_text(str(ev.call_id)) if ev.call_id is not None else None,
            action=action,
            result=result,
            exit_code=ev.exit_code,
            start_time=ev.start_time,
            end_time=ev.end_time,
            is_error=ev.is_error,
            metadata=metadata,
            facts=facts,
        )

    def _facts(self, ev: ToolEvent, matchers: tuple[Any, ...], todo: bool) -> dict[str, Any] | None:
        facts: dict[str, Any] = {}
        verdicts: dict[str, bool] = {}
        for m in matchers:
            m.argument_facts(ev, verdicts)
        if verdicts:
            facts["args"] = verdicts
        reading = todo_reading(ev, self.digest) if todo else None
        if reading is not None:
            facts["todo"] = reading
        return facts or None

    def digest(self, value: Any) -> str:
        """``value``'s keyed digest (see ``_keyed``): equal values, equal digests, within this sink. The
        value is hashed as its JSON (orjson's: a call's key is a tuple of texts, which ``repr()`` escapes
        character by character at ten times the cost), or as its ``repr()`` where JSON has no form for it;
        a call's key, a tuple, is a JSON array or a ``repr()`` in parentheses, so the two never meet."""
        try:
            data = orjson.dumps(value)
        except orjson.JSONEncodeError:
            data = repr(value).encode()
        h = self._keyed.copy()  # (keying a hash compresses a whole block: done once, in _keyed_hash)
        h.update(data)
        return h.hexdigest()


def _keyed_hash(key: bytes) -> hashlib.blake2b:
    """A 9-byte BLAKE2b hash keyed with ``key``, fed nothing yet (``digest`` copies it per value)."""
    return hashlib.blake2b(key=key, digest_size=9)


def _finding(f: Finding, c: ContentPolicy) -> FindingRecord:
    if c.include:
        return FindingRecord(
            f.detector, f.first_step, f.last_step, c.text(f.evidence) or "", c.clean(dict(f.data)), f.at_end
        )
    # Without content: counts and step numbers only (the data's texts are paths, queries, commands).
    data = {k: v for k, v in f.data.items() if _is_number_data(v)}
    return FindingRecord(f.detector, f.first_step, f.last_step, "", data, f.at_end)


def _is_number_data(value: Any) -> bool:
    if isinstance(value, (list, tuple)):
        return all(isinstance(v, (int, float)) for v in value)
    return isinstance(value, (int, float))


def _decision(d: Decision, c: ContentPolicy) -> DecisionRecord:
    return DecisionRecord(
        str(d.kind),
        c.message(d, 0) or "",  # (one answering a finding quotes the calls: content)
        d.policy,
        d.finding.detector if d.finding is not None else None,
        d.ephemeral,
    )


def _open_private(path: Path) -> IO[bytes]:
    """``path`` opened for appending (unbuffered: the writer makes one write per session and batch), created
    0600 when new."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE)
    return os.fdopen(fd, "ab", buffering=0)


def _action(action: Any, c: ContentPolicy, digest: Callable[[Any], str]) -> dict[str, Any] | None:
    """The canonical action's fields (``Action``'s, or any action-like object's); ``target`` and ``path``
    (argument text) only with content, and redacted (a URL's credentials), else their digests
    (``target_id``, ``path_id``); ``intent`` and ``shell`` (a program name) always, redacted, unless they name
    a script (a path, a file name): then as ``target``."""
    if action is None:
        return None
    out: dict[str, Any] = {}
    # A file's action has the same text as its target and its path: digested once.
    digested: tuple[str, str] | None = None  # (text, its digest)
    for name, how in _ACTION_FIELDS:
        value = getattr(action, name, None)
        if value is None or value == "":
            continue
        if how == "label":
            out[name] = label_of(value)
            continue
        text = str(value)
        if how == "text" or c.include or (how == "word" and _BARE_WORDS.fullmatch(text)):
            out[name] = c.clean_text(text)
        else:
            if digested is None or digested[0] != text:
                digested = (text, digest(text))
            out[name + "_id"] = digested[1]
    for name in _ACTION_FLAGS:
        if getattr(action, name, False):
            out[name] = True
    if out:
        return out
    return {"repr": c.clean(repr(action))} if c.include else {"type": type(action).__name__}
