"""Session state for hook processes: Claude Code runs every hook as a new process, so a planguard
``Session`` lives on disk between calls, one set of files per session under a private state directory.

For each session key (file names are the key, sanitised):

* ``<name>.lock`` — an ``fcntl`` lock held for the whole load → run → save of one hook call, so concurrent
  hook processes of one session (parallel tool calls) apply their events one at a time. It is a separate
  file because the snapshot is replaced by rename, and a lock on a replaced inode locks nothing.
* ``<name>.snap`` — a pickled snapshot of the session's explicit state (every stage keeps bounded state,
  so this stays small however long the run), written atomically (temp file + rename). Loading it is
  O(state), not O(run length).
* ``<name>.log`` — an append-only journal of what the session was fed (tool calls, results, model calls;
  :mod:`planguard.journal`), bounded in lines and bytes. It is the fallback: when the snapshot is
  unreadable (corrupt, written by another planguard version) or stale (the config changed), the session
  is rebuilt by replaying the journal through the current pipeline, with sinks muted so telemetry does
  not see the past twice.

A snapshot whose journal grew past it (a process died between the two writes) is also rebuilt from the
journal. Sessions idle longer than ``ttl_s`` are pruned, and at most ``max_sessions`` are kept.

The snapshot also names the session's file in each session store (``store:``) and that file's size, so
that every process recording a call of the session appends to the one file the session began (one header,
one end record); see ``HookRunner._resume_store_files``. ``store-digest.key`` is the key the stores of
every process digest calls with, so that a session's same calls keep the same digests across processes.

Pickle is only read from files in a directory created with mode 0700 and owned by the current user, the
same trust boundary as the user's own Claude Code settings.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import io
import os
import pickle
import re
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from planguard.events import ToolEvent
from planguard.journal import Op, clip_value

from . import client

if TYPE_CHECKING:
    from planguard.session import Session

__all__ = [
    "FORMAT",
    "Op",
    "SessionStore",
    "StoredSession",
    "default_state_dir",
    "session_state",
    "store_digest_key",
]

#: Bumped when the snapshot layout changes; older snapshots are then rebuilt from their journal.
FORMAT = 3
_SAFE_NAME = re.compile(r"^[A-Za-z0-9._~-]{1,120}$")
#: Longest a hook call waits for its session's lock (another process answering a call of the session).
LOCK_TIMEOUT_S = 20.0
#: Strings longer than this in stored tool arguments are cut (file bodies of Write/Edit calls).
MAX_ARGUMENT_CHARS = 4096


def clip_event(event: ToolEvent, limit: int = MAX_ARGUMENT_CHARS) -> None:
    """Cut long strings in a stored event's arguments in place (its classification is already made)."""
    if isinstance(event.arguments, (Mapping, str)):
        event.arguments = clip_value(event.arguments, limit)


def clip_step(step: Any, limit: int = MAX_ARGUMENT_CHARS) -> None:
    """Cut long strings in a stored step: its event's arguments and its canonical action's texts (a Write's
    file body travels in both). Classification, detectors' state and metrics are already computed."""
    clip_event(step.event, limit)
    action = getattr(step, "action", None)
    if action is not None and dataclasses.is_dataclass(action) and not isinstance(action, type):
        long = {
            f.name: clip_value(v, limit)
            for f in dataclasses.fields(action)
            if isinstance(v := getattr(action, f.name), str) and len(v) > limit
        }
        if long:
            step.action = dataclasses.replace(action, **long)


def default_state_dir() -> Path:
    """``$PLANGUARD_STATE_DIR``, else ``$XDG_STATE_HOME/planguard/hooks`` (see :mod:`.client`)."""
    return Path(client.default_state_dir())


def file_name(key: str) -> str:
    """A file-system-safe name for a session key (sub-agent keys contain '/')."""
    name = key.replace("/", "~")
    if _SAFE_NAME.match(name) and not name.startswith("."):
        return name
    return "h-" + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:40]


@dataclass(slots=True)
class Snapshot:
    format: int
    fingerprint: str
    log_bytes: int  # journal size this snapshot covers
    log_complete: bool  # the journal holds every op since the session began
    state: dict[str, Any]  # the session's slots (minus the pipeline)
    hook: dict[str, Any] = field(default_factory=dict)  # the adapter's per-session bookkeeping
    #: Per session-store sink (in pipeline order): the file it records the session in and that file's
    #: size when this snapshot was taken; None once the session's end is written there.
    store_files: list[tuple[str, int] | None] = field(default_factory=list)


class StoredSession:
    """One session's files, locked for the duration of a ``with SessionStore.open(key)`` block."""

    def __init__(self, store: SessionStore, key: str) -> None:
        self.store = store
        self.key = key
        base = store.directory / file_name(key)
        self.snap_path = base.with_name(base.name + ".snap")
        self.log_path = base.with_name(base.name + ".log")
        self.new_ops: list[Op] = []
        self.problems: list[str] = []  # why the snapshot could not be used, for the error log
        #: The session's store files as the last readable snapshot has them (even one not usable otherwise:
        #: stale, behind the journal), so that a session rebuilt from its journal goes on in its files.
        self.store_files: list[tuple[str, int] | None] = []
        #: How the session was brought back for this call: "snapshot", "journal", or None (a new one).
        self.restored: str | None = None

    @property
    def exists(self) -> bool:
        return self.snap_path.exists() or self.log_path.exists()

    # ------------------------------------------------------------------ reading

    def snapshot(self, fingerprint: str) -> Snapshot | None:
        """The snapshot, if it is readable, current (same format and fingerprint) and not behind the
        journal; otherwise None, with the reason in ``problems``."""
        try:
            data = self.snap_path.read_bytes()
        except FileNotFoundError:
            if self.log_path.exists():
                self.problems.append("snapshot missing")
            return None
        except OSError as exc:
            self.problems.append(f"snapshot unreadable ({exc})")
            return None
        try:
            snap = pickle.loads(data)
        except Exception as exc:
            self.problems.append(f"snapshot corrupt ({type(exc).__name__}: {exc})")
            return None
        if not isinstance(snap, Snapshot) or snap.format != FORMAT:
            self.problems.append("snapshot from another planguard version")
            return None
        self.store_files = list(snap.store_files)
        if snap.fingerprint != fingerprint:
            self.problems.append("snapshot stale (configuration changed)")
            return None
        if self._log_size() > snap.log_bytes:
            self.problems.append("journal is ahead of the snapshot")
            return None
        return snap

    def journal(self) -> tuple[list[Op], bool]:
        """Every readable journal entry in order, and whether the journal is complete."""
        ops: list[Op] = []
        complete = True
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as f:
                for n, line in enumerate(f, 1):
                    line = line.strip()
                    if not line:
                        continue
                    if line == '{"op":"truncated"}':
                        complete = False
                        continue
                    try:
                        ops.append(Op.from_json(line))
                    except (ValueError, TypeError) as exc:
                        complete = False
                        self.problems.append(f"{self.log_path}:{n}: skipped unreadable journal line ({exc})")
        except FileNotFoundError:
            return [], False
        except OSError as exc:
            self.problems.append(f"journal unreadable ({exc})")
            return [], False
        return ops, complete

    def _log_size(self) -> int:
        try:
            return self.log_path.stat().st_size
        except OSError:
            return 0

    def signature(self) -> tuple[Any, ...]:
        """What changes whenever anyone saves this session: the snapshot is replaced by rename (a new
        inode) and the journal only grows. A process that kept the session in memory since its own save
        may reuse it while the signature is the one it saw right after that save."""
        try:
            st = os.stat(self.snap_path)
            snap: tuple[int, int, int] | None = (st.st_ino, st.st_mtime_ns, st.st_size)
        except OSError:
            snap = None
        return (snap, self._log_size())

    # ------------------------------------------------------------------ writing

    def record(self, op: Op) -> None:
        self.new_ops.append(op)

    def save(
        self,
        fingerprint: str,
        state: dict[str, Any],
        hook: dict[str, Any],
        log_complete: bool,
        store_files: Sequence[tuple[str, int] | None] = (),
    ) -> bool:
        """Append this call's ops to the journal (within its bounds), then replace the snapshot. Returns
        whether the journal is still complete."""
        size = self._log_size()
        if self.new_ops and log_complete:
            buf = io.StringIO()
            for op in self.new_ops:
                buf.write(op.to_json())
                buf.write("\n")
            text = buf.getvalue()
            if size + len(text) > self.store.max_log_bytes:
                text = '{"op":"truncated"}\n'
                log_complete = False
            fd = os.open(self.log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, text.encode("utf-8", "surrogatepass"))
            finally:
                os.close(fd)
            size = self._log_size()
        self.new_ops.clear()
        snap = Snapshot(FORMAT, fingerprint, size, log_complete, state, hook, list(store_files))
        try:
            data = pickle.dumps(snap, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:
            # Without a fresh snapshot the next call rebuilds from the journal; an old one must not be
            # mistaken for current (a full journal no longer grows, so its size would not tell).
            with contextlib.suppress(FileNotFoundError):
                self.snap_path.unlink()
            raise
        tmp = self.snap_path.with_name(f"{self.snap_path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        os.replace(tmp, self.snap_path)
        return log_complete

    def remove(self) -> None:
        for p in (self.snap_path, self.log_path):
            with contextlib.suppress(FileNotFoundError):
                p.unlink()


class SessionStore:
    """Per-session files under ``directory``; see the module docstring."""

    def __init__(
        self,
        directory: str | os.PathLike[str] | None = None,
        *,
        max_sessions: int = 2000,
        ttl_s: float = 14 * 86400.0,
        max_log_bytes: int = 16 * 1024 * 1024,
        lock_timeout_s: float = LOCK_TIMEOUT_S,
    ) -> None:
        self.directory = Path(directory) if directory is not None else default_state_dir()
        self.max_sessions = max_sessions
        self.ttl_s = ttl_s
        self.max_log_bytes = max_log_bytes
        self.lock_timeout_s = lock_timeout_s

    def ensure_directory(self) -> None:
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = self.directory.stat()
        if st.st_uid != os.getuid() or st.st_mode & 0o022:
            raise PermissionError(
                f"{self.directory}: state directory must be owned by uid {os.getuid()} and not writable by "
                "others (planguard reads session snapshots from it)"
            )

    @contextlib.contextmanager
    def open(self, key: str) -> Iterator[StoredSession]:
        """Lock the session's files for one load → run → save cycle."""
        self.ensure_directory()
        stored = StoredSession(self, key)
        lock_path = stored.snap_path.with_name(file_name(key) + ".lock")
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            self._lock(fd, lock_path)
            yield stored
        finally:
            os.close(fd)  # closing releases the lock

    def _lock(self, fd: int, path: Path) -> None:
        # Blocking flock has no timeout; poll so a wedged holder cannot hang the agent forever.
        deadline = time.monotonic() + self.lock_timeout_s
        delay = 0.001
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise TimeoutError(f"{path}: lock held for more than {self.lock_timeout_s:g}s") from None
                time.sleep(delay)
                delay = min(delay * 2, 0.05)

    def prune(self, now: float | None = None, keep: Sequence[str] = ()) -> int:
        """Remove sessions idle past the TTL, then the oldest beyond ``max_sessions``. Returns the count."""
        now = time.time() if now is None else now
        keep_names = {file_name(k) for k in keep}
        by_name: dict[str, list[tuple[Path, float]]] = {}
        try:
            entries = list(os.scandir(self.directory))
        except OSError:
            return 0
        for entry in entries:
            name, _, ext = entry.name.rpartition(".")
            if ext not in ("snap", "log", "lock", "tmp") or not name:
                continue
            if ext == "tmp":  # "<name>.snap.<pid>.tmp" left by a killed process
                name = name.split(".snap.", 1)[0]
            try:
                mtime = entry.stat().st_mtime
            except OSError:
                continue
            by_name.setdefault(name, []).append((Path(entry.path), mtime))
        last_use = sorted(((max(m for _, m in files), name) for name, files in by_name.items()), reverse=True)
        removed = 0
        for rank, (mtime, name) in enumerate(last_use):
            if name in keep_names:
                continue
            if now - mtime > self.ttl_s or rank >= self.max_sessions:
                for path, _ in by_name[name]:
                    with contextlib.suppress(OSError):
                        path.unlink()
                        removed += 1
        return removed


def store_digest_key(store: SessionStore) -> bytes:
    """The key the session store's sinks of every hook process of ``store`` digest calls with (see
    ``StoreSink.use_digest_key``): random, made once, kept 0600 in the private state directory (beside
    the journals, which hold the calls themselves). Never written to a session file."""
    store.ensure_directory()
    path = store.directory / "store-digest.key"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        fd = -1
    if fd < 0:  # made by an earlier process (or one racing this one: it writes 16 bytes at once)
        key = path.read_bytes()
        if len(key) < 16:
            raise ValueError(
                f"{path}: {len(key)} bytes; expected a 16-byte key (remove the file for a new one)"
            )
        return key
    key = os.urandom(16)
    try:
        os.write(fd, key)
    finally:
        os.close(fd)
    return key


def session_state(session: Session) -> dict[str, Any]:
    """``session.state()`` with big arguments cut."""
    state = session.state()
    pending = state.get("_pending")
    if isinstance(pending, Mapping):
        for step in pending.values():
            clip_step(step)
    return state
