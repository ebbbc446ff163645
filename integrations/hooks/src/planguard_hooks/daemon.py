"""The hook daemon: one warm process that answers hook calls for the short-lived hook processes.

Started by :mod:`planguard_hooks.client` (``python -P -m planguard_hooks.daemon ...``) with the
lock ``cc-<key>.lock`` already held and handed over as a file descriptor; it holds that lock for as long as
it serves, so there is at most one daemon per key. It listens on ``cc-<key>.sock`` before doing its heavy
imports (a hook that connects meanwhile just waits for its answer), answers each connection in a thread
through a long-lived :class:`~planguard_hooks.service.HookRunner` (one per config file, rebuilt when the
file changes), and saves every session after every call exactly as a hook process does, so stopping it at
any moment loses nothing.

It exits — socket removed first, lock released once the calls in flight are answered, then sinks flushed —
when idle for ``PLANGUARD_HOOK_DAEMON_IDLE_S`` (default 600 s), on SIGTERM/SIGINT or a ``stop`` request,
when planguard's code on disk changes (an upgrade; ``PLANGUARD_HOOK_DAEMON_WATCH=0`` turns this check
off), when its socket file is removed or replaced, and when
it has held more sessions than :data:`RECYCLE_AFTER_SESSIONS` (sinks keep state per session object; a
fresh process bounds that memory). The next hook call starts a new one.

Wire format (``client._header``): 4-byte big-endian length, then NUL-separated fields ``PGH1``, op
(``hook``/``status``/``stop``), request id, config path, state directory, environment material; then the
raw hook payload until the client shuts its side down. The reply is ``OK\\n`` plus the answer JSON (empty:
no answer); anything else (or nothing) makes the client answer in-process.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import gc
import json
import os
import signal
import socket
import struct
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from . import client
from .dialects import CLAUDE_CODE, Dialect, dialect

if TYPE_CHECKING:
    from .service import HookRunner
    from .state import SessionStore

__all__ = ["Daemon", "main"]

#: Largest hook payload taken over the socket (bigger ones are answered in-process).
MAX_PAYLOAD_BYTES = 256 * 1024 * 1024
MAX_HEADER_BYTES = 1024 * 1024
#: Connections answered at once (more wait in the listen backlog).
MAX_CONCURRENT = 64
#: Session objects (kept or dropped) after which the daemon hands over to a fresh process.
RECYCLE_AFTER_SESSIONS = 2048
#: Seconds between checks of the code on disk and of the socket file.
CHECK_EVERY_S = 2.0
#: Config runners kept (one per config file the hooks name).
MAX_RUNNERS = 8


@dataclass(eq=False)
class _Slot:
    """The runner for one config file, as built from the file with this signature."""

    config: str | None
    signature: tuple[Any, ...]
    runner: HookRunner | None = None
    error: str | None = None
    config_error: Exception | None = None  # a ConfigError, raised again to every call as a hook process would
    users: int = 0
    retired: bool = False
    build_lock: threading.Lock = field(default_factory=threading.Lock)
    watched: tuple[str, ...] = ()


def _stat(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


class Daemon:
    def __init__(
        self, run_dir: str, key: str, state_dir: str, lock_fd: int, idle_s: float = client.DEFAULT_IDLE_S
    ) -> None:
        self.addr = client.DaemonAddress(run_dir, key, client.material(state_dir))
        self.state_dir = state_dir
        self.lock_fd: int | None = lock_fd
        self.idle_s = idle_s
        self.watch_code = os.environ.get(client.ENV_WATCH, "1").strip().lower() not in (
            "0",
            "off",
            "false",
            "no",
        )
        self.started = time.time()
        self.served = 0
        self.failed = 0
        self._mu = threading.Lock()
        self._slots: dict[str | None, _Slot] = {}
        self._retired: list[_Slot] = []
        self._in_flight = 0
        self._last_used = time.monotonic()
        self._stopping = threading.Event()
        self._stop_reason = ""
        self._threads = threading.BoundedSemaphore(MAX_CONCURRENT)
        self._listener: socket.socket | None = None
        self._sock_id: tuple[int, int] | None = None
        self._wake_r, self._wake_w = socket.socketpair()
        self._code: dict[str, tuple[int, int] | None] = {}
        self._store: SessionStore | None = None

    # ------------------------------------------------------------------ life cycle

    def listen(self) -> None:
        path = self.addr.sock
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # a dead daemon's socket: we hold the lock, so nobody else owns it
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old_umask = os.umask(0o077)
        try:
            s.bind(path)
        finally:
            os.umask(old_umask)
        s.listen(128)
        st = os.stat(path)
        self._sock_id = (st.st_dev, st.st_ino)
        self._listener = s

    def warm(self, config: str | None) -> None:
        """The heavy imports and the first runner, before the first call needs them."""
        from . import service
        from .state import SessionStore

        self._store = SessionStore(self.state_dir)
        del service
        slot = self._slot(config)
        try:
            self._build(slot)
        finally:
            self._release(slot)
        self._code = self._code_files()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.addr.path("failed"))
        gc.collect()
        gc.freeze()  # what is built so far lives as long as the daemon: keep the collector off it

    def serve(self) -> str:
        """Accept until a reason to stop; returns the reason."""
        listener = self._listener
        assert listener is not None
        import select

        next_check = time.monotonic() + CHECK_EVERY_S
        while not self._stopping.is_set():
            ready, _, _ = select.select([listener, self._wake_r], [], [], 1.0)
            if listener in ready:
                try:
                    conn, _ = listener.accept()
                except OSError:
                    conn = None
                if conn is not None:
                    self._threads.acquire()
                    with self._mu:
                        self._in_flight += 1
                        self._last_used = time.monotonic()
                    threading.Thread(target=self._serve_one, args=(conn,), daemon=True).start()
            now = time.monotonic()
            with self._mu:
                idle = self._in_flight == 0 and now - self._last_used > self.idle_s
            if idle:
                self.stop("idle")
            if now >= next_check:
                next_check = now + CHECK_EVERY_S
                self._housekeeping()
        return self._stop_reason

    def stop(self, reason: str) -> None:
        if not self._stopping.is_set():
            self._stop_reason = reason
            self._stopping.set()
            with contextlib.suppress(OSError):
                self._wake_w.send(b"x")

    def close(self, wait_s: float = 30.0) -> None:
        """Stop listening, let the calls in flight finish, hand the lock back, flush the sinks."""
        if self._listener is not None:
            self._unlink_socket()
            self._listener.close()
            self._listener = None
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            with self._mu:
                if self._in_flight == 0:
                    break
            time.sleep(0.01)
        if self.lock_fd is not None:
            os.close(self.lock_fd)  # a new daemon may start now; what is left touches no session file
            self.lock_fd = None
        with self._mu:
            slots = list(self._slots.values()) + self._retired
            self._slots.clear()
            self._retired.clear()
        for slot in slots:
            if slot.runner is not None:
                with contextlib.suppress(Exception):
                    slot.runner.close()

    def _unlink_socket(self) -> None:
        try:
            st = os.stat(self.addr.sock)
        except OSError:
            return
        if (st.st_dev, st.st_ino) == self._sock_id:
            with contextlib.suppress(OSError):
                os.unlink(self.addr.sock)

    def _housekeeping(self) -> None:
        try:
            st = os.stat(self.addr.sock)
            if (st.st_dev, st.st_ino) != self._sock_id:
                self.stop("socket replaced")
                return
        except OSError:
            self.stop("socket removed")
            return
        if self.watch_code and self._code_changed():
            self.stop("planguard code changed")
            return
        with self._mu:
            retired = [s for s in self._retired if s.users == 0]
            self._retired = [s for s in self._retired if s.users > 0]
            load = sum(
                s.runner.cached_sessions() + s.runner.abandoned
                for s in [*self._slots.values(), *self._retired]
                if s.runner is not None
            )
        for slot in retired:
            if slot.runner is not None:
                with contextlib.suppress(Exception):
                    slot.runner.close()
        if load > RECYCLE_AFTER_SESSIONS:
            self.stop("recycling")

    # ------------------------------------------------------------------ code on disk

    def _code_files(self) -> dict[str, tuple[int, int] | None]:
        out: dict[str, tuple[int, int] | None] = dict(self._code)
        for name, module in list(sys.modules.items()):
            if not name.startswith("planguard"):
                continue
            path = getattr(module, "__file__", None)
            if isinstance(path, str) and path not in out:
                try:
                    st = os.stat(path)
                    out[path] = (st.st_mtime_ns, st.st_size)
                except OSError:
                    out[path] = None
        return out

    def _code_changed(self) -> bool:
        self._code = self._code_files()  # modules imported lazily since are watched from now on
        for path, seen in self._code.items():
            try:
                st = os.stat(path)
                now: tuple[int, int] | None = (st.st_mtime_ns, st.st_size)
            except OSError:
                now = None
            if now != seen:
                return True
        return False

    # ------------------------------------------------------------------ runners

    def _signature(self, config: str | None, watched: tuple[str, ...]) -> tuple[Any, ...]:
        return tuple(_stat(p) for p in ((config,) if config else ()) + watched)

    def _slot(self, config: str | None) -> _Slot:
        """The slot for ``config`` (held: call :meth:`_release`), replaced when its files changed."""
        with self._mu:
            slot = self._slots.get(config)
        if slot is not None and self._signature(config, slot.watched) == slot.signature:
            with self._mu:
                if self._slots.get(config) is slot:
                    slot.users += 1
                    return slot
        signature = self._signature(config, ())  # before reading the file: a change during the build shows
        with self._mu:
            current = self._slots.get(config)
            if current is not None and current is not slot:  # another thread replaced it meanwhile
                current.users += 1
                return current
            fresh = _Slot(config, signature)
            if current is not None:
                current.retired = True
                self._retired.append(current)
                del self._slots[config]
            while len(self._slots) >= MAX_RUNNERS:
                old = self._slots.pop(next(iter(self._slots)))
                old.retired = True
                self._retired.append(old)
            self._slots[config] = fresh
            fresh.users += 1
            return fresh

    def _release(self, slot: _Slot) -> None:
        close = False
        with self._mu:
            slot.users -= 1
            if slot.retired and slot.users == 0 and slot in self._retired:
                self._retired.remove(slot)
                close = True
        if close and slot.runner is not None:
            with contextlib.suppress(Exception):
                slot.runner.close()

    def _build(self, slot: _Slot) -> None:
        with slot.build_lock:
            if slot.runner is not None or slot.error is not None:
                return
            from planguard.config import ConfigError

            from .service import HookRunner
            from .state import SessionStore

            try:
                runner = HookRunner(slot.config, SessionStore(self.state_dir), long_lived=True)
            except ConfigError as exc:  # names the file, line and key itself: answered without a traceback
                slot.error = str(exc)
                slot.config_error = exc
                return
            except Exception:
                slot.error = traceback.format_exc()
                return
            # Plan files the config names are part of it: a change to one rebuilds the runner too.
            cfg = runner.config
            plans = [p for p in (cfg.plan, *cfg.score_plans) if isinstance(p, str) and os.path.isfile(p)]
            slot.watched = tuple(os.path.abspath(p) for p in plans)
            slot.signature = slot.signature + tuple(_stat(p) for p in slot.watched)
            slot.runner = runner

    # ------------------------------------------------------------------ one connection

    def _serve_one(self, conn: socket.socket) -> None:
        try:
            self._answer(conn)
        except Exception:
            self.failed += 1
            self._log(f"hook daemon: call failed\n{traceback.format_exc()}")
        finally:
            with contextlib.suppress(OSError):
                conn.close()
            with self._mu:
                self._in_flight -= 1
                self._last_used = time.monotonic()
            self._threads.release()

    def _answer(self, conn: socket.socket) -> None:
        conn.settimeout(30.0)
        if not self._same_user(conn):
            return
        size = int.from_bytes(_read_exactly(conn, 4), "big")
        if size > MAX_HEADER_BYTES:
            return
        fields = _read_exactly(conn, size).split(b"\0", 5)  # the material, last, has NULs of its own
        if len(fields) != 6 or fields[0] != client.PROTOCOL:
            conn.sendall(b"ERR protocol\n")
            return
        _, op, rid, config_b, state_b, material_b = fields
        if op == b"status":
            conn.sendall(b"OK\n" + json.dumps(self.status()).encode())
            return
        if op == b"stop":
            conn.sendall(b"OK\n")
            self.stop("stop request")
            return
        hook_op, _, dialect_b = op.partition(b":")
        if hook_op != b"hook":
            conn.sendall(b"ERR op\n")
            return
        try:
            speaks = dialect(dialect_b.decode("ascii", "replace") or None)
        except ValueError as exc:
            conn.sendall(b"ERR " + str(exc).encode() + b"\n")
            return
        if (
            material_b.decode("utf-8", "surrogateescape") != self.addr.material
            or os.fsdecode(state_b) != self.state_dir
        ):
            conn.sendall(b"ERR not this daemon's environment\n")
            return
        payload = _read_all(conn, MAX_PAYLOAD_BYTES)
        if payload is None:
            conn.sendall(b"ERR payload too large\n")
            return
        answer = self.hook(os.fsdecode(config_b) or None, payload, rid.decode() or None, speaks)
        with self._mu:  # before the reply: once a hook process has its answer, the call is counted
            self.served += 1
        conn.sendall(b"OK\n" + (json.dumps(answer, ensure_ascii=False).encode() if answer else b""))

    def hook(
        self, config: str | None, payload: bytes, rid: str | None, speaks: Dialect = CLAUDE_CODE
    ) -> dict[str, Any]:
        """One hook call, as :func:`planguard_hooks.service.main` answers it in a hook process."""
        from .service import answer_text

        store = self._store
        assert store is not None
        slot = self._slot(config)

        def runner() -> HookRunner:
            self._build(slot)
            if slot.config_error is not None:  # logged by answer_text on every call, as a hook process would
                raise slot.config_error.with_traceback(None)
            if slot.error is not None:
                raise _BuildFailed(slot.error)
            assert slot.runner is not None
            return slot.runner

        try:
            return answer_text(payload, store, runner, rid, speaks)  # bytes: bad UTF-8 is refused there
        finally:
            self._release(slot)

    def _same_user(self, conn: socket.socket) -> bool:
        opt = getattr(socket, "SO_PEERCRED", None)
        if opt is None:  # not Linux: the private directory is the only gate
            return True
        _pid, uid, _gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, opt, struct.calcsize("3i")))
        return bool(uid == os.getuid())

    def status(self) -> dict[str, Any]:
        with self._mu:
            runners = [s.runner for s in self._slots.values() if s.runner is not None]
            return {
                "pid": os.getpid(),
                "key": self.addr.key,
                "socket": self.addr.sock,
                "state_dir": self.state_dir,
                "base_dir": os.getcwd(),
                "started": self.started,
                "served": self.served,
                "failed": self.failed,
                "in_flight": self._in_flight,
                "runners": len(runners),
                "sessions": sum(r.cached_sessions() for r in runners),
                "idle_s": self.idle_s,
            }

    def _log(self, text: str) -> None:
        from .service import _log_error
        from .state import SessionStore

        _log_error(self._store or SessionStore(self.state_dir), text)


class _BuildFailed(Exception):
    pass


def _read_exactly(conn: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = conn.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            raise ConnectionError("client went away mid-request")
        buf += chunk
    return bytes(buf)


def _read_all(conn: socket.socket, limit: int) -> bytes | None:
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = conn.recv(1 << 20)
        if not chunk:
            return b"".join(chunks)
        total += len(chunk)
        if total > limit:
            return None
        chunks.append(chunk)


def _idle_s() -> float:
    try:
        value = float(os.environ.get(client.ENV_IDLE, "") or client.DEFAULT_IDLE_S)
    except ValueError:
        return client.DEFAULT_IDLE_S
    return value if value > 0 else client.DEFAULT_IDLE_S


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m planguard_hooks.daemon", description=__doc__)
    p.add_argument("--run-dir", required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--state-dir", required=True)
    p.add_argument("--lock-fd", type=int, help="descriptor of the already locked cc-<key>.lock")
    p.add_argument("--warm-config", help="config to build before the first call")
    args = p.parse_args(argv)
    addr = client.DaemonAddress(args.run_dir, args.key, client.material(args.state_dir))
    if client.key_of(addr.material) != args.key:
        # This process would not answer as the hooks that started it would: never serve them.
        client._mark_failed(addr, "daemon environment differs from the hook's")
        return 1
    fd = args.lock_fd
    if fd is None:
        fd = os.open(addr.path("lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return 0  # one is running already
    os.set_inheritable(fd, False)
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    daemon = Daemon(args.run_dir, args.key, args.state_dir, fd, _idle_s())
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: daemon.stop("signal"))
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        daemon.listen()
        daemon.warm(args.warm_config)
        reason = daemon.serve()
        # Standard error is cc-<key>.log next to the socket: why the last daemon left.
        print(
            f"{time.strftime('%Y-%m-%dT%H:%M:%S')} exiting ({reason}) after {daemon.served} calls",
            file=sys.stderr,
        )
    except BaseException:
        client._mark_failed(addr, "daemon failed")
        daemon._log(f"hook daemon {args.key} failed\n{traceback.format_exc()}")
        return 1
    finally:
        daemon.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
