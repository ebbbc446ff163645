"""``planguard hook claude-code``: the command Claude Code runs for every hook call.

Claude Code starts a new process per hook call and passes the payload on standard input; the answer (if
any) is one JSON object on standard output, and the exit code is always 0 — planguard never breaks the
agent: on any internal failure the call is let through (fail-open), the error is appended to
``<state dir>/hook-errors.log`` (bounded), and a gate configured fail-closed still denies its tool.

Normally the hook process hands the call to a warm daemon (:mod:`planguard_hooks.client`,
:mod:`planguard_hooks.daemon`), which runs the :class:`HookRunner` here; without one, :func:`main`
runs it in the hook process. Per call: build the :class:`~planguard.guard.Guard` from the config (outside
the session lock; a daemon keeps it), lock the session's state files, restore the session (snapshot, else
journal replay, else new — a daemon reuses its copy in memory while the files are as it left them; a
restored session goes on in its session-store file), run the adapter, write its store records, save,
unlock, print the answer, then flush the other sinks. Nothing here imports more than planguard itself.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import sys
import threading
import time
import traceback
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from planguard import journal
from planguard.events import ToolEvent
from planguard.offline.loaders.claude_code import refusal_reason
from planguard.phases.declarative import recorded_turn

from .adapter import ClaudeCodeAdapter, HookState
from .dialects import CLAUDE_CODE, Dialect
from .state import Op, SessionStore, StoredSession, session_state, store_digest_key
from .translate import HOOK_EVENTS, PRE_TOOL_USE, call_event, deny_answer, session_key

if TYPE_CHECKING:
    from planguard.config import Config
    from planguard.decisions import Decision
    from planguard.guard import Guard
    from planguard.session import Session, SessionSummary

__all__ = ["HookRunner", "answer_text", "main", "read_summary", "run_hook"]

#: The error log in the state directory is cut back to its newest half past this size.
MAX_ERROR_LOG_BYTES = 256 * 1024
#: Sessions a long-lived runner keeps in memory (least recently used dropped first; they stay on disk).
MAX_CACHED_SESSIONS = 256
#: How much of a Claude Code transcript's end is read for the results of calls still open.
TRANSCRIPT_TAIL_BYTES = 1 << 20


def main(
    config: str | None = None,
    state_dir: str | None = None,
    *,
    stdin: IO[str] | IO[bytes] | None = None,
    stdout: IO[str] | None = None,
    rid: str | None = None,
    dialect: Dialect = CLAUDE_CODE,
) -> int:
    """Read one hook payload, answer it in this process. Always returns 0 (see the module docstring).

    ``stdin`` gives bytes (standard input's, by default) or text; ``rid``: the request id a hook process
    gave the daemon before answering the call itself; ``dialect``: the CLI's hook contract
    (:mod:`planguard_hooks.dialects`)."""
    stdin = sys.stdin.buffer if stdin is None else stdin
    stdout = sys.stdout if stdout is None else stdout
    store = SessionStore(state_dir)
    runners: list[HookRunner] = []

    def runner() -> HookRunner:
        runners.append(HookRunner(config, store))
        return runners[-1]

    answer = answer_text(stdin.read(), store, runner, rid, dialect)
    if answer:
        stdout.write(json.dumps(answer, ensure_ascii=False))
        stdout.write("\n")
    stdout.flush()
    for r in runners:
        r.close()
    return 0


def answer_text(
    text: str | bytes,
    store: SessionStore,
    runner: Callable[[], HookRunner],
    rid: str | None = None,
    dialect: Dialect = CLAUDE_CODE,
) -> dict[str, Any]:
    """The answer to one hook payload (``{}``: none) in ``dialect``'s idiom. Never raises: what goes wrong
    is logged and the call let through — unless a fail-closed gate covers it, which then denies it
    (:func:`_failure_answer`). ``runner`` is only called for payloads planguard handles.

    ``text``: the payload as read (bytes), or already decoded. Bytes that are not UTF-8 are refused, not
    repaired: the payload is then one planguard cannot read, like invalid or too deeply nested JSON."""
    from planguard.documents import loads_json

    try:
        raw = loads_json(text or "null")
    except ValueError as exc:
        problem = f"standard input is not JSON planguard can read ({exc}); expected one hook payload object"
        if _names_another_event(text, dialect):  # cut, but not a tool call about to run
            _report_error(store, problem)
            return dialect.answer({"systemMessage": _unevaluated(problem, blocked=False)}, {})
        pre = {"hook_event_name": json.loads(dialect.gate_mark())}
        return dialect.answer(_failure_answer(store, problem, runner, None), pre)
    common = dialect.common(raw) if isinstance(raw, dict) else None
    if common is None or common.get("hook_event_name") not in HOOK_EVENTS:
        return {}
    return dialect.answer(_answer_common(common, store, runner, rid, dialect.name), raw)


def _names_another_event(text: str | bytes, dialect: Dialect) -> bool:
    """Whether a payload that cannot be read names one of the dialect's events other than its tool-start
    event, and not that one: then no gate covers it. A payload cut before its event name may be a tool
    call about to run, so a fail-closed gate must treat it as one."""
    raw = text if isinstance(text, str) else text.decode("utf-8", "replace")
    pre = json.loads(dialect.gate_mark())
    if json.dumps(pre) in raw:
        return False
    return any(json.dumps(event) in raw for event in dialect.events if event != pre)


def _answer_common(
    payload: dict[str, Any],
    store: SessionStore,
    runner: Callable[[], HookRunner],
    rid: str | None,
    source: str,
) -> dict[str, Any]:
    from planguard.config import ConfigError

    try:
        built = runner()
    except ConfigError as exc:  # its own message names the file, line and key: no traceback needed
        return _failure_answer(store, f"config unusable: {exc}", None, payload)
    except Exception:
        return _failure_answer(store, traceback.format_exc(), None, payload)
    try:
        return built.handle(payload, rid=rid, source=source)
    except Exception:
        return _failure_answer(store, traceback.format_exc(), built, payload)


def _failure_answer(
    store: SessionStore,
    problem: str,
    runner: HookRunner | Callable[[], HookRunner] | None,
    payload: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The answer to a call planguard could not evaluate. A fail-closed gate stays closed whatever failed
    (the state directory, the session files, the payload): a ``PreToolUse`` call such a gate covers is
    denied (``payload`` None: the payload could not be read, but may be one). Everything else is let
    through. The problem goes to the error log (else standard error), and one line of it to the user, as
    the answer's ``systemMessage`` (every CLI's hook contract shows it; the dialects carry it over)."""
    logged = _report_error(store, problem)
    answer: dict[str, Any] = {}
    if payload is None or payload.get("hook_event_name") == PRE_TOOL_USE:
        decision = _gate_on_failure(runner, payload)
        if decision is not None and decision.blocks:
            answer = deny_answer(decision)
    where = f"; see {Path(store.directory) / 'hook-errors.log'}" if logged else ""
    answer["systemMessage"] = _unevaluated(problem, blocked=bool(answer)) + where
    return answer


def _unevaluated(problem: str, *, blocked: bool) -> str:
    """The one line the user is shown for a call planguard could not evaluate."""
    verdict = "blocked (a gate fails closed)" if blocked else "let through (fail-open)"
    return f"planguard could not evaluate this call ({_last_line(problem)}); {verdict}"


def _gate_on_failure(
    runner: HookRunner | Callable[[], HookRunner] | None, payload: Mapping[str, Any] | None
) -> Decision | None:
    """The fail-closed gates' decision on a call that could not be evaluated; None when no gate fails
    closed, or the configuration itself is unusable and ``PLANGUARD_FAIL_CLOSED_GATES`` is not set."""
    from planguard.decisions import Decision, DecisionKind

    built: HookRunner | None = None
    if isinstance(runner, HookRunner):
        built = runner
    elif runner is not None:
        with contextlib.suppress(Exception):
            built = runner()
    if built is None:
        # Which gates exist is unknown (the config could not be loaded). Asked to fail closed from the
        # environment, every call is denied rather than guessing which tools a gate would have covered.
        if os.environ.get("PLANGUARD_FAIL_CLOSED_GATES", "").strip().lower() in ("1", "true", "yes", "on"):
            return Decision(
                DecisionKind.DENY,
                "PLANGUARD: this call is blocked: planguard's configuration could not be loaded and gates "
                "are fail-closed (PLANGUARD_FAIL_CLOSED_GATES). Fix the configuration, then try again.",
                "fail_closed_gates",
            )
        return None
    if not built.guard.fails_closed:
        return None
    event: ToolEvent | None = None
    if payload is not None:
        with contextlib.suppress(Exception):  # cannot tell what the call is: a closed gate stays closed
            event = call_event(payload)
    return built.guard.failure_decision(event)


def run_hook(
    payload: Mapping[str, Any], config: str | None = None, state_dir: str | None = None
) -> dict[str, Any]:
    """One hook call in-process (what :func:`main` does between reading and printing)."""
    runner = HookRunner(config, SessionStore(state_dir))
    try:
        return runner.handle(payload)
    finally:
        runner.close()


class _Recorder:
    """The guard as the adapter sees it, journalling what the session is fed."""

    def __init__(self, guard: Guard, stored: StoredSession) -> None:
        self.guard = guard
        self.stored = stored

    def before_tool(self, session_id: str, event: ToolEvent) -> Decision:
        self.stored.record(Op("pre", event))
        return self.guard.before_tool(session_id, event)

    def after_tool(self, session_id: str, event: ToolEvent) -> Any:
        self.stored.record(Op("post", event))
        return self.guard.after_tool(session_id, event)

    def before_model(self, session_id: str) -> list[Decision]:
        self.stored.record(Op("model"))
        return self.guard.before_model(session_id)

    def end(self, session_id: str) -> SessionSummary | None:
        self.stored.record(Op("end"))
        return self.guard.end(session_id)

    @property
    def observes_messages(self) -> bool:
        return self.guard.observes_messages

    def observe_message(self, session_id: str, role: str, text: str) -> Any:
        """The turn, journalled as the match the rules made of it (the journal never holds its text)."""
        found = self.guard.observe_message(session_id, role, text)
        match = recorded_turn(found, self.guard.session(session_id).phase_state)
        self.stored.record(Op("message", message={"role": role, "match": match}))
        return found

    def session(self, session_id: str) -> Session:
        return self.guard.session(session_id)


@dataclass(slots=True)
class _Cached:
    session: Session
    hook: HookState
    complete: bool
    signature: tuple[Any, ...]  # of the session's files right after this runner saved them


class HookRunner:
    """A Guard plus the on-disk session store.

    In a hook process (``long_lived=False``) it answers one call and is closed. In the daemon
    (``long_lived=True``) it answers many calls from many threads: calls of one session run one at a time,
    and a session stays in memory between its calls — still saved after every call exactly as in a hook
    process, and read back from disk whenever its files are no longer the ones this runner wrote (another
    process answered a call meanwhile). The guard's own idle and capacity eviction are off then: they would
    end sessions that are merely quiet, which a hook process never does.
    """

    def __init__(self, config: str | None, store: SessionStore, *, long_lived: bool = False) -> None:
        from planguard.config import default_config, load_config
        from planguard.guard import Guard
        from planguard.sinks.store.writer import StoreSink

        self.store = store
        cfg = load_config(config) if config else default_config()
        self.config = cfg
        self.guard = Guard(_long_lived(cfg) if long_lived else cfg)
        self.fingerprint = pipeline_fingerprint(self.guard, cfg)
        self.long_lived = long_lived
        #: The session-store sinks: each session goes on in one file across processes (see
        #: _resume_store_files), with call digests that agree across them.
        self.store_sinks = [s for s in self.guard.pipeline.sinks if isinstance(s, StoreSink)]
        if self.store_sinks:
            try:
                key = store_digest_key(store)
            except Exception as exc:  # the state directory's problem is reported where it is used
                _log_error(store, f"store digest key unusable ({exc}); digests differ between processes")
            else:
                for sink in self.store_sinks:
                    sink.use_digest_key(key)
        self._cache: OrderedDict[str, _Cached] = OrderedDict()
        self._cache_lock = threading.Lock()
        self._key_locks: dict[str, list[Any]] = {}  # session key -> [lock, holders]
        #: Sessions dropped from memory without having ended (their sinks may still hold them).
        self.abandoned = 0

    def handle(
        self, payload: Mapping[str, Any], *, rid: str | None = None, source: str = "claude-code"
    ) -> dict[str, Any]:
        """Answer one hook payload in the common (Claude Code) form; ``source`` names the CLI it came
        from (see :mod:`planguard_hooks.dialects`)."""
        key = session_key(payload)
        with self._one_at_a_time(key):
            return self._handle(key, payload, rid, source)

    def _handle(self, key: str, payload: Mapping[str, Any], rid: str | None, source: str) -> dict[str, Any]:
        with self.store.open(key) as stored:
            new = not stored.exists
            cached = self._cached(key, stored)
            if cached is not None:
                session, hook_state, complete = cached.session, cached.hook, cached.complete
            else:
                session, hook_state, complete = self._load(stored, key, payload, source)
            if rid is not None and rid in hook_state.answered:
                # Already applied (by a daemon this hook process stopped waiting for): same answer again.
                self._keep(key, stored, session, hook_state, complete, saved=True)
                return dict(hook_state.answered[rid])
            refused = _refused_calls(payload, hook_state.running) if source == "claude-code" else {}
            if refused and complete:
                session = self._withdraw(stored, key, session, hook_state, refused)
                if not hook_state.running:
                    # Claude Code asked the model again after the refusal, with no hook call: that request
                    # counts now, and what it would have carried goes with the next one.
                    for decision in _Recorder(self.guard, stored).before_model(key):
                        if decision.injects:
                            session.queue(decision)
            adapter = ClaudeCodeAdapter(_Recorder(self.guard, stored), source=source)
            answer = adapter.handle(payload, hook_state)
            hook_state.remember(rid, answer)
            # The call's records are in the session's store file before its checkpoint says so (see
            # _resume_store_files), and before the lock lets the next call of the session append its own.
            store_files = self._flush_store_files(session)
            saved = False
            try:
                complete = stored.save(
                    self.fingerprint, session_state(session), hook_state.to_dict(), complete, store_files
                )
                saved = True
            except Exception:
                _log_error(self.store, f"session {key}: snapshot not written\n{traceback.format_exc()}")
            if stored.problems:
                _log_error(self.store, f"session {key}: " + "; ".join(stored.problems))
            self._keep(key, stored, session, hook_state, complete, saved=saved)
        if new:
            self.store.prune(keep=[key])
        return answer

    # ------------------------------------------------------------------ long-lived runners

    @contextlib.contextmanager
    def _one_at_a_time(self, key: str) -> Iterator[None]:
        """Threads of one process queue here for a session (the file lock then only waits for other
        processes, and a thread never polls a lock another thread of its own process holds)."""
        if not self.long_lived:
            yield
            return
        with self._cache_lock:
            entry = self._key_locks.get(key)
            if entry is None:
                entry = self._key_locks[key] = [threading.Lock(), 0]
            entry[1] += 1
        lock: threading.Lock = entry[0]
        try:
            with lock:
                yield
        finally:
            with self._cache_lock:
                entry[1] -= 1
                if entry[1] == 0:
                    del self._key_locks[key]

    def _cached(self, key: str, stored: StoredSession) -> _Cached | None:
        if not self.long_lived:
            return None
        with self._cache_lock:
            cached = self._cache.get(key)
            if cached is None:
                return None
            if cached.signature == stored.signature():
                self._cache.move_to_end(key)
                return cached
            del self._cache[key]
        self._abandon(cached.session)
        return None

    def _keep(
        self,
        key: str,
        stored: StoredSession,
        session: Session,
        hook_state: HookState,
        complete: bool,
        *,
        saved: bool,
    ) -> None:
        """After a call: keep the session in memory if it lives on, matching what is on disk."""
        if not self.long_lived:
            return
        dropped: list[Session] = []
        with self._cache_lock:
            old = self._cache.pop(key, None)
            if old is not None and old.session is not session:
                dropped.append(old.session)
            if saved and not session.ended:
                self._cache[key] = _Cached(session, hook_state, complete, stored.signature())
                while len(self._cache) > MAX_CACHED_SESSIONS:
                    dropped.append(self._cache.popitem(last=False)[1].session)
            elif not session.ended:
                dropped.append(session)
        for s in dropped:
            self._abandon(s)

    def _abandon(self, session: Session) -> None:
        """Forget a session that has not ended (it stays on disk): out of the guard's registry, unended."""
        if session.ended:
            return
        self.abandoned += 1
        release(self.guard, session)
        for sink in self.store_sinks:
            sink.forget(session)

    def cached_sessions(self) -> int:
        return len(self._cache)

    def _load(
        self,
        stored: StoredSession,
        key: str,
        payload: Mapping[str, Any],
        source: str = "claude-code",
        *,
        record: bool = True,
    ) -> tuple[Session, HookState, bool]:
        """The session as it stood after the previous hook call, adopted by the guard; with ``record``
        false only to be read (no sink hears of it: a store would begin a file for it)."""
        from planguard.session import Session

        snap = stored.snapshot(self.fingerprint)
        if snap is not None:
            if record:
                self._resume_store_files(stored, key, cut=True)
            try:
                pipeline = self.guard.pipeline if record else journal.muted(self.guard.pipeline)
                session = Session.restore(pipeline, snap.state)
                if not record:
                    return session, HookState.from_dict(snap.hook), snap.log_complete
                session.ended = False  # a resumed conversation (claude --resume) goes on being monitored
                adopt(self.guard, session)
                stored.restored = "snapshot"
                return session, HookState.from_dict(snap.hook), snap.log_complete
            except Exception as exc:
                stored.problems.append(f"snapshot not restorable ({type(exc).__name__}: {exc})")
        ops, complete = stored.journal()
        if not ops:
            if stored.exists:
                stored.problems.append("no usable journal either: starting the session afresh")
            session = self.guard.session(key, **_metadata(payload, source))
            return session, HookState(), not stored.exists or complete
        # Rebuild: replay the journal with the sinks muted (they saw all of it already).
        state = HookState()
        session = journal.replay(
            self.guard.pipeline,
            key,
            ops,
            metadata=_metadata(payload, source),
            observe=functools.partial(_replayed, state, time.time()),
        )
        if not record:
            return session, state, complete
        self._resume_store_files(stored, key, cut=False)
        session.bind(self.guard.pipeline)  # the sinks hear what this call adds
        session.ended = False
        session.metadata["planguard.rebuilt"] = "journal" if complete else "partial-journal"
        adopt(self.guard, session)
        stored.restored = "journal"
        return session, state, complete

    def _withdraw(
        self,
        stored: StoredSession,
        key: str,
        session: Session,
        hook_state: HookState,
        refused: dict[str, str],
    ) -> Session:
        """Calls the session let run that Claude Code then refused by its permissions: they never ran and
        no result hook comes for them. Journalled as refused, and the session rebuilt from its journal, in
        which each is the denial it was, not a step (as the transcript's replay counts it)."""
        for call_id, reason in refused.items():
            stored.record(Op("refused", ToolEvent(tool="", call_id=call_id, blocked=reason)))
            hook_state.running.pop(call_id, None)
        ops, _ = stored.journal()  # what earlier calls wrote; this call's entries are still to be saved
        rebuilt = journal.replay(self.guard.pipeline, key, [*ops, *stored.new_ops])
        rebuilt.metadata.update(session.metadata)
        with self._cache_lock:
            self._cache.pop(key, None)
        release(self.guard, session)
        for sink in self.store_sinks:
            sink.forget(session)
        self._resume_store_files(stored, key, cut=False)
        rebuilt.bind(self.guard.pipeline)
        rebuilt.ended = False
        adopt(self.guard, rebuilt)
        return rebuilt

    # ------------------------------------------------------------------ the session store's files

    def _resume_store_files(self, stored: StoredSession, session_id: str, *, cut: bool) -> None:
        """Have each session-store sink go on in the file the session was begun in (one session, one
        file, one header, whichever process records which call), once the session is restored.

        Each call's records are flushed before its checkpoint is saved, so the file can only be ahead of
        the snapshot: by the records of a call whose process died before saving it (a killed daemon). That
        call is answered again (its snapshot never said it was), so the file is first ``cut`` back to the
        size the snapshot recorded. A session rebuilt from its journal keeps its file as it is: the journal
        has the calls the file has (it is written after the flush) and its replay writes nothing."""
        for sink, place in zip(self.store_sinks, stored.store_files, strict=False):
            if place is None:
                continue  # its end record is written: a conversation resumed after it gets a new file
            path, size = Path(place[0]), place[1]
            try:
                if path.parent != sink.path.absolute() or not path.is_file():
                    continue  # the store moved (config changed) or the file is gone: a new file
                if cut and path.stat().st_size > size:
                    os.truncate(path, size)
            except OSError as exc:
                stored.problems.append(f"store file {path} not resumed ({exc}); a new one is begun")
                continue
            sink.resume_in(session_id, path)

    def _flush_store_files(self, session: Session) -> list[tuple[str, int] | None]:
        """Write what the session-store sinks hold, and where each records ``session`` now."""
        places: list[tuple[str, int] | None] = []
        for sink in self.store_sinks:
            sink.flush()
            path = sink.file_of(session)
            size = -1
            if path is not None:
                with contextlib.suppress(OSError):
                    size = path.stat().st_size
            places.append((str(path.absolute()), size) if path is not None and size >= 0 else None)
        return places

    def close(self) -> None:
        # Sessions stay open across processes: flush the sinks, end nothing.
        with self._cache_lock:
            self._cache.clear()
        self.guard.shutdown(end_sessions=False)


def _refused_calls(payload: Mapping[str, Any], running: Mapping[str, float]) -> dict[str, str]:
    """The open calls (``running``) whose result Claude Code's transcript (``transcript_path``) shows it
    refused by its permissions, by id with the reason (:func:`refusal_reason`, what the transcript's replay
    reads too). Claude Code fires no result hook for them: the next hook call of the session closes them."""
    path = payload.get("transcript_path")
    if not running or not isinstance(path, str) or not path:
        return {}
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.path.getsize(path) - TRANSCRIPT_TAIL_BYTES))
            tail = f.read().decode("utf-8", "replace")
    except OSError:
        return {}
    found: dict[str, str] = {}
    for line in tail.splitlines():
        if not any(call_id in line for call_id in running):
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        message = entry.get("message") if isinstance(entry, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else ():
            if not isinstance(block, dict) or block.get("type") != "tool_result" or not block.get("is_error"):
                continue
            call_id = block.get("tool_use_id")
            reason = refusal_reason(entry) if call_id in running else None
            if reason is not None:
                found[str(call_id)] = reason
    return found


def _replayed(state: HookState, now: float, op: Op, result: Any) -> None:
    """The adapter's bookkeeping for one replayed journal entry (the calls it made, minus the answer)."""
    if op.kind == "pre" and op.event is not None and not result.blocks:
        state.start(op.event.call_id, now)
    elif op.kind == "post" and op.event is not None:
        state.finish(op.event.call_id, now)
    elif op.kind == "end":
        state.running.clear()


def _metadata(payload: Mapping[str, Any], source: str = "claude-code") -> dict[str, Any]:
    meta: dict[str, Any] = {"source": source}
    prefix = source.replace("-", "_")
    for k in ("session_id", "cwd", "transcript_path", "agent_id", "agent_type"):
        v = payload.get(k)
        if isinstance(v, str) and v:
            meta[f"{prefix}.{k}"] = v
    cwd = payload.get("cwd")
    if isinstance(cwd, str) and cwd:
        # The run's working directory under the key a session reads whatever the CLI (not only Claude
        # Code's prefixed one): the live rules judge a call that names no directory of its own against it.
        meta["cwd"] = cwd
    return meta


def _long_lived(config: Config) -> Config:
    """The config for a guard that outlives hook calls: no idle or capacity eviction (see HookRunner)."""
    from planguard.config import SessionsConfig

    sessions = SessionsConfig.model_construct(max_sessions=2**31, idle_timeout_s=None)
    return config.model_copy(update={"sessions": sessions})


def release(guard: Guard, session: Session) -> None:
    """Take a session out of the guard's registry without ending it (it lives on in its files)."""
    guard.forget(session.id, session)


def adopt(guard: Guard, session: Session) -> None:
    """Register a restored session with the guard, so its hooks use it instead of creating a new one."""
    guard.adopt(session)


def pipeline_fingerprint(guard: Guard, config: Config | None = None) -> str:
    """What a snapshot must have been made under to be reused: the planguard version, the config (as
    loaded: ``config``, else the guard's) and the pipeline's shape (stage states are positional)."""
    import planguard

    p = guard.pipeline
    shape = [
        planguard.__version__,
        (config if config is not None else guard.config).model_dump_json(),
        [type(x).__qualname__ + ":" + str(getattr(x, "name", "")) for x in p.policies],
        [type(x).__qualname__ + ":" + str(getattr(x, "name", "")) for x in p.detectors],
        [pl.name for pl in p.plans],
        type(p.rules).__qualname__,
    ]
    return hashlib.sha256(json.dumps(shape, default=str).encode()).hexdigest()[:32]


def read_summary(
    session_id: str, config: str | None = None, state_dir: str | None = None
) -> dict[str, Any] | None:
    """What planguard has recorded so far for a Claude Code session (phases, metrics, findings, decisions),
    from its state files; None when there is no such session."""
    runner = HookRunner(config, SessionStore(state_dir))
    try:
        with runner.store.open(session_id) as stored:
            if not stored.exists:
                return None
            session, _, complete = runner._load(stored, session_id, {}, record=False)
            out = summary_dict(session.summary())
            # The repository the live rules judge paths against: the hook payload's cwd (None: none sent).
            out["work_dir"] = session.metadata.get("cwd")
            out["journal_complete"] = complete
            if stored.problems:
                out["problems"] = list(stored.problems)
                _log_error(runner.store, f"session {session_id}: " + "; ".join(stored.problems))
            return out
    finally:
        runner.guard.shutdown(end_sessions=False)


def summary_dict(summary: SessionSummary) -> dict[str, Any]:
    return {
        "session_id": summary.session_id,
        "n_steps": summary.n_steps,
        "n_model_calls": summary.n_model_calls,
        "letters": summary.letters,
        "langutory": list(summary.langutory),
        "metrics": {name: _scores(sc) for name, sc in summary.scores.items()},
        "finding_counts": dict(summary.finding_counts),
        "decision_counts": dict(summary.decision_counts),
    }


def _scores(sc: Any) -> Any:
    as_dict = getattr(sc, "as_dict", None)
    return as_dict() if callable(as_dict) else str(sc)


def _log_error(store: SessionStore, text: str) -> bool:
    """Append to the bounded error log; never raises. Returns whether the line was written."""
    try:
        store.ensure_directory()
        path = Path(store.directory) / "hook-errors.log"
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
        line = f"{stamp} pid={os.getpid()} {text.rstrip()}\n"
        if path.exists() and path.stat().st_size > MAX_ERROR_LOG_BYTES:
            data = path.read_bytes()
            path.write_bytes(data[len(data) // 2 :])
        with open(path, "a", encoding="utf-8") as f:
            f.write(line)
        return True
    except Exception:
        return False


def _report_error(store: SessionStore, text: str) -> bool:
    """The error log, else standard error (Claude Code shows a hook's stderr in its transcript view).
    Returns whether the error log took it."""
    if _log_error(store, text):
        return True
    with contextlib.suppress(Exception):
        print(
            f"planguard hook: {_last_line(text)} (cannot write {store.directory}/hook-errors.log)",
            file=sys.stderr,
        )
    return False


def _last_line(text: str) -> str:
    """A traceback's last line (the exception), or the text's: what one line of stderr can say."""
    lines = text.strip().splitlines()
    return lines[-1][:500] if lines else "unknown error"


def cli(argv: list[str] | None = None) -> int:
    """``planguard-hook [--dialect CLI] [--config FILE] [--state-dir DIR] [--no-daemon] [--show SESSION_ID]
    [--stop-daemons]``: the hook without the ``planguard`` command's subcommand discovery (the same as
    ``planguard hook CLI``)."""
    import argparse

    from .commands import add_options

    parser = argparse.ArgumentParser(prog="planguard-hook", description=__doc__.split("\n\n")[0])
    add_options(parser, dialect=True)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        # argparse exits 2 on a bad option, which Claude Code takes as "block this tool call": a broken
        # hook command must not stop the agent, so it is a non-blocking error (1) instead.
        return 0 if exc.code in (0, None) else 1
    return run_arguments(args)


def run_arguments(args: Any) -> int:
    """Run parsed hook options (:func:`planguard_hooks.commands.add_options`; also what ``planguard hook``
    calls for ``--show`` and ``--stop-daemons``)."""
    from . import client

    if args.show:
        summary = read_summary(args.show, args.config, args.state_dir)
        if summary is None:
            print(f"planguard hook: no recorded session {args.show!r}", file=sys.stderr)
            return 1
        print(json.dumps(summary, indent=2, ensure_ascii=False))
        return 0
    if args.stop_daemons:
        n = client.stop_daemons(args.state_dir)
        print(f"stopped {n} hook daemon(s)")
        return 0
    dialect = getattr(args, "dialect", None) or getattr(args, "agent", None) or "claude-code"
    return client.main(args.config, args.state_dir, daemon=not args.no_daemon, dialect=dialect)
