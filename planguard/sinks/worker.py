"""A bounded queue drained by one background thread: how sinks keep I/O and slow work off the agent's path.

``submit`` is a length check and a deque append (plus, at most once per drain, waking the thread); when
the queue is full the item is dropped and counted, never waited for — unless the worker was made with
``block=True`` (the store's ``durability: block``): the producer then waits for the worker to make room
(back-pressure), and drops only when the worker is closed or its thread is gone. Items are handed to
``handle`` in batches on the worker thread; an exception there is counted and logged once, and the
worker goes on. A worker made with ``inline=True`` (the store's ``durability: write``) has no queue and
no thread: ``submit`` hands the item to ``handle`` on the caller's thread (one caller at a time, as for
``write_now``), so what was submitted is written when ``submit`` returns — nothing is left queued for
``os._exit`` or SIGKILL to lose, at the cost of the write on the caller's time.

Waking a sleeping thread is the expensive part of a submit (a futex wake, on a VM an inter-processor
interrupt, then a GIL hand-over to the worker and back): ``wake_at=N`` lets N items pile up before the
producer wakes the worker, which otherwise drains ``interval_s`` after the first item of a batch was queued.
Sinks whose output nobody waits for (the session store) batch this way; the default (1) wakes on every
drain-worthy submit. With nothing queued the thread sleeps until an item comes (the submit that queues it
wakes the thread, which then waits ``interval_s`` for the batch): a timer polling an empty queue cost an
idle process ~17k instructions per tick, 83k per second for the store's, more than a whole tool call
costs when an agent's model takes a few seconds between calls.

At interpreter exit (``atexit``) and on SIGTERM, every live worker is flushed within one shared deadline
(:data:`EXIT_FLUSH_TIMEOUT_S`), and what is still queued after it is dropped and counted
(``<name>_unsent_at_exit``, logged once). Python's default SIGTERM action ends the process without running
``atexit``, which lost a third of 1,000 queued store records, uncounted. The SIGTERM handler is installed
from the main thread when the first worker is made, and chains to the handler it replaced: the
application's own handler then runs, and the default action still ends the process by the signal. It is
never installed over an ignored SIGTERM (``SIG_IGN`` stays: the process was meant to survive it), from
another thread, or after :func:`set_sigterm_flush` turned it off (the ``flush_on_sigterm`` setting,
which also takes back a handler already installed while it is still the current one).

A forked child (a pre-fork server, ``multiprocessing`` with fork) has none of the parent's threads: every
worker, and every sink registered with :func:`restart_in_forked_child`, forgets what the parent had queued
(the parent writes that; the child would write it twice) and starts a thread of its own on its next item.
Without this, everything a forked child recorded stayed queued until it was dropped, and no file was
written. A ``multiprocessing`` child ends through ``os._exit`` (no ``atexit``): its workers are flushed by a
``multiprocessing`` finalizer instead, registered in the child. SIGHUP, whose default action also ends the
process without ``atexit``, is handled as SIGTERM is.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

from ..errors import ErrorCounter
from .drops import DropCounter

__all__ = ["BackgroundWorker", "restart_in_forked_child", "set_sigterm_flush"]

T = TypeVar("T")

#: Started workers, oldest first (a worker feeding another, like the OTel sink's feeding the span
#: exporter's, is made after it: flushing newest first leaves nothing behind in the one flushed earlier).
_live_workers: list[weakref.ref[BackgroundWorker[Any]]] = []
_live_lock = threading.Lock()
#: Time all workers together get to drain at interpreter exit or SIGTERM when nobody called ``shutdown``.
EXIT_FLUSH_TIMEOUT_S = 2.0


class _ForkAware(Protocol):
    def after_fork_in_child(self) -> None: ...


_fork_aware: weakref.WeakSet[_ForkAware] = weakref.WeakSet()


def restart_in_forked_child(owner: _ForkAware) -> None:
    """Call ``owner.after_fork_in_child()`` in every child this process forks from now on (while ``owner``
    lives): it drops the state the parent's threads own and makes its locks anew."""
    _fork_aware.add(owner)


def _after_fork_in_child() -> None:
    global _live_lock, _sigterm_lock
    _live_lock = threading.Lock()  # a parent's thread may have held them at the fork
    _sigterm_lock = threading.Lock()
    _live_workers.clear()  # each worker registers again when it starts its thread
    for owner in list(_fork_aware):
        owner.after_fork_in_child()
    mp_util = sys.modules.get("multiprocessing.util")
    if mp_util is not None:
        # A multiprocessing child: its bootstrap clears the finalizers the parent had, then runs the
        # after-fork callbacks; this one registers the flush among the finalizers its exit runs.
        mp_util.register_after_fork(_flush_at_exit_ref, _finalize_in_child)


class _FlushAtExit:
    """A live object for ``multiprocessing.util.register_after_fork`` (which keeps a weak reference)."""


_flush_at_exit_ref = _FlushAtExit()


def _finalize_in_child(_owner: object) -> None:
    import multiprocessing.util as mp_util

    mp_util.Finalize(None, flush_at_exit, exitpriority=0)


if hasattr(os, "register_at_fork"):  # not on Windows
    os.register_at_fork(after_in_child=_after_fork_in_child)


class _Marker:
    """A flush request travelling through the queue; set once everything before it is handled."""

    __slots__ = ("done",)

    def __init__(self) -> None:
        self.done = threading.Event()


class BackgroundWorker(Generic[T]):
    def __init__(
        self,
        name: str,
        handle: Callable[[list[T]], None],
        *,
        drops: DropCounter,
        drop_reason: str,
        max_queue: int = 10_000,
        max_batch: int = 512,
        interval_s: float = 0.1,
        errors: ErrorCounter | None = None,
        wake_at: int = 1,
        block: bool = False,
        inline: bool = False,
    ) -> None:
        if max_queue < 1 or max_batch < 1 or wake_at < 1:
            raise ValueError("max_queue, max_batch and wake_at must be at least 1")
        self.name = name
        self._handle = handle
        self._drops = drops
        self._drop_reason = drop_reason
        self._max_queue = max_queue
        self._max_batch = max_batch
        self._interval = interval_s
        # Never wait for more than a quarter of the queue: the timer alone must not let a burst overflow it.
        self._wake_at = min(wake_at, max(1, max_queue // 4))
        self._errors = errors if errors is not None else ErrorCounter()
        self._block = block
        self._inline = inline
        self._closed = False
        self._new_thread_state()
        _install_sigterm_flush()
        restart_in_forked_child(self)

    def _new_thread_state(self) -> None:
        """The queue and the thread that drains it: made at start, and again in a forked child (which has
        no worker thread; what the parent queued is the parent's to write)."""
        self._queue: deque[T | _Marker] = deque()
        self._wake = threading.Event()
        self._room = threading.Event()  # set by the worker after each batch (``block``: producers wait on it)
        self._start_lock = threading.Lock()
        self._handle_lock = threading.Lock()  # one caller in ``handle`` at a time (see ``write_now``)
        self._thread: threading.Thread | None = None
        self._stopping = False
        # The worker sleeps with nothing queued (``_idle``): the producer queuing the next item wakes it.
        # ``_hurry``: drain now, without waiting for the batch to fill (flush, shutdown, ``wake_at``, room).
        self._idle = False
        self._hurry = False

    after_fork_in_child = _new_thread_state

    # ------------------------------------------------------------------ producer side (agent's thread)

    def submit(self, item: T, *, force: bool = False) -> bool:
        """Queue ``item``; ``False`` (and a counted drop) when the queue is full or the worker is closed.
        ``force``: queued past the bound (a session's end record, which says what its session lost)."""
        if self._closed:
            self._drops.add(f"{self.name}_after_shutdown")
            return False
        if self._inline:
            self._process([item])
            return True
        if len(self._queue) >= self._max_queue and not force and not (self._block and self._wait_for_room()):
            self._drops.add(self._drop_reason)
            return False
        queue = self._queue
        queue.append(item)
        if self._thread is None:
            self._start()
        if len(queue) >= self._wake_at:
            self._hurry = True
            if not self._wake.is_set():
                self._wake.set()
        elif self._idle:  # (the worker wrote _idle before it looked at the queue: one of us sees the other)
            self._wake.set()
        return True

    def write_now(self, item: T) -> bool:
        """Hand ``item`` to ``handle`` now, on the caller's thread (after the batch being handled, if any),
        ahead of what is queued: for an item later items depend on and a kill must not lose (a session's
        first record). ``False`` (and a counted drop) when the worker is closed."""
        if self._closed:
            self._drops.add(f"{self.name}_after_shutdown")
            return False
        self._process([item])
        return True

    def _wait_for_room(self) -> bool:
        """``block``: wait until the queue has room; False when it never will (closed, or no thread to
        drain it: called from the worker's own thread, or the thread died)."""
        thread = self._thread
        if thread is None or thread is threading.current_thread():
            return False
        while len(self._queue) >= self._max_queue:
            if self._closed or not thread.is_alive():
                return False
            self._room.clear()
            self._hurry = True
            self._wake.set()
            if len(self._queue) < self._max_queue:
                break
            self._room.wait(0.05)
        return True

    @property
    def pending(self) -> int:
        return len(self._queue)

    def flush(self, timeout_s: float = 5.0) -> bool:
        """Wait until everything submitted so far has been handled (``False`` on timeout)."""
        if self._thread is None or not self._thread.is_alive():
            return not self._queue
        marker = _Marker()
        self._queue.append(marker)
        self._hurry = True
        self._wake.set()
        return marker.done.wait(timeout_s)

    def shutdown(self, timeout_s: float = 5.0) -> bool:
        """Handle what is queued (bounded by ``timeout_s``), then stop. Idempotent.

        When the handler is stuck past the timeout, what is still queued is dropped and counted
        (``<name>_unsent_at_shutdown``); the stuck batch itself is the handler's to account for.
        """
        self._closed = True
        thread = self._thread
        if thread is None:
            return True
        self._stopping = True
        self._wake.set()
        thread.join(timeout_s)
        if not thread.is_alive():
            return True
        self.abandon("unsent_at_shutdown")
        return False

    def abandon(self, reason: str) -> int:
        """Drop and count (``<name>_<reason>``) what is still queued: the process is ending. Returns it."""
        unsent = 0
        while True:
            try:
                item = self._queue.popleft()
            except IndexError:
                break
            if isinstance(item, _Marker):
                item.done.set()
            else:
                unsent += 1
        self._drops.add(f"{self.name}_{reason}", unsent)
        return unsent

    # ------------------------------------------------------------------ worker side

    def _start(self) -> None:
        with self._start_lock:
            if self._thread is not None:
                return
            thread = threading.Thread(target=self._run, name=f"planguard-{self.name}", daemon=True)
            thread.start()
            self._thread = thread
            with _live_lock:
                _live_workers[:] = [ref for ref in _live_workers if ref() is not None]
                _live_workers.append(weakref.ref(self))

    def _run(self) -> None:
        wake = self._wake
        while True:
            if not self._queue and not self._stopping:  # nothing to do: sleep until something is queued
                self._idle = True
                if not self._queue and not self._stopping:
                    wake.wait()
                self._idle = False
                wake.clear()
            if not self._hurry and not self._stopping:
                wake.wait(self._interval)  # the batch gathers (a flush, a shutdown or wake_at cut it short)
            wake.clear()
            self._hurry = False
            self._drain()
            if self._stopping and not self._queue:
                return

    def _drain(self) -> None:
        queue = self._queue
        batch: list[T] = []
        while queue:
            item = queue.popleft()
            if isinstance(item, _Marker):
                self._process(batch)
                batch = []
                item.done.set()
                continue
            batch.append(item)
            if len(batch) >= self._max_batch:
                self._process(batch)
                batch = []
        self._process(batch)

    def _process(self, batch: list[T]) -> None:
        if not batch:
            return
        try:
            with self._handle_lock:
                self._handle(batch)
        except Exception as exc:
            self._errors.record(f"worker:{self.name}", exc)
        if self._block:
            self._room.set()


def flush_at_exit(timeout_s: float = EXIT_FLUSH_TIMEOUT_S, *, ending: bool = True) -> int:
    """Flush every live worker (newest first) within one shared deadline; when the process is ``ending``,
    drop and count what is left. Returns how many items were dropped."""
    deadline = time.monotonic() + timeout_s
    with _live_lock:
        workers = [w for ref in reversed(_live_workers) if (w := ref()) is not None]
    for worker in workers:
        worker.flush(max(0.0, deadline - time.monotonic()))
    return sum(worker.abandon("unsent_at_exit") for worker in workers) if ending else 0


atexit.register(flush_at_exit)

_sigterm_lock = threading.Lock()
_sigterm_installed = False
_sigterm_wanted = True
#: The signals whose default action ends the process without ``atexit``; their handlers before ours.
_FLUSHED_SIGNALS = tuple(getattr(signal, n) for n in ("SIGTERM", "SIGHUP") if hasattr(signal, n))
_previous: dict[int, Any] = {}


def set_sigterm_flush(enabled: bool) -> None:
    """Whether planguard may install its SIGTERM (and SIGHUP) handler in this process. Off is for good: no
    handler is installed from then on, and one already installed is replaced by the handler it replaced
    (when it is still the current one and this is the main thread; else it stays and chains as before)."""
    global _sigterm_wanted, _sigterm_installed
    if enabled:
        return
    with _sigterm_lock:
        _sigterm_wanted = False
        if not _sigterm_installed or threading.current_thread() is not threading.main_thread():
            return
        for signum, previous in list(_previous.items()):
            try:
                if signal.getsignal(signum) is _on_sigterm:
                    signal.signal(signum, previous)
                    del _previous[signum]
            except (ValueError, OSError, TypeError):  # a handler set outside Python cannot be put back
                pass
        _sigterm_installed = bool(_previous)


def _install_sigterm_flush() -> None:
    """Install :func:`_on_sigterm` for SIGTERM and SIGHUP once, from the main thread (only it may set signal
    handlers), unless turned off or the signal is ignored."""
    global _sigterm_installed
    if _sigterm_installed or not _sigterm_wanted or threading.current_thread() is not threading.main_thread():
        return
    with _sigterm_lock:
        if _sigterm_installed or not _sigterm_wanted:
            return
        for signum in _FLUSHED_SIGNALS:
            try:
                if signal.getsignal(signum) == signal.SIG_IGN:
                    continue  # ignored on purpose (nohup, a supervisor): replacing it would change that
                _previous[signum] = signal.signal(signum, _on_sigterm)
            except (ValueError, OSError):  # not the main interpreter, or no such signal on this platform
                return
        _sigterm_installed = True


def _on_sigterm(signum: int, frame: Any) -> None:
    previous = _previous.get(signum, signal.SIG_DFL)
    dies = not callable(previous) and previous != signal.SIG_IGN
    flush_at_exit(ending=dies)  # an application handler may go on running: then nothing is dropped
    if callable(previous):
        previous(signum, frame)
    elif dies:
        # The default action (or a handler set outside Python): end the process by the signal, as it would
        # have ended without us. The workers are flushed already; atexit does not run, as before.
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
