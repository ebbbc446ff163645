"""A bounded queue drained by one background thread: how sinks keep I/O and slow work off the agent's path.

``submit`` is a length check and a deque append (plus, at most once per drain, waking the thread); when
the queue is full the item is dropped and counted, never waited for. Items are handed to ``handle`` in
batches on the worker thread; an exception there is counted and logged once, and the worker goes on.

Waking a sleeping thread is the expensive part of a submit (a futex wake, on a VM an inter-processor
interrupt, then a GIL hand-over to the worker and back): ``wake_at=N`` lets N items pile up before the
producer wakes the worker, which otherwise drains on its ``interval_s`` timer. Sinks whose output nobody
waits for (the session store) batch this way; the default (1) wakes on every drain-worthy submit.
"""

from __future__ import annotations

import atexit
import threading
import weakref
from collections import deque
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from ..errors import ErrorCounter
from .drops import DropCounter

__all__ = ["BackgroundWorker"]

T = TypeVar("T")

_live_workers: weakref.WeakSet[BackgroundWorker[Any]] = weakref.WeakSet()
#: Time each worker gets to drain at interpreter exit when nobody called ``shutdown``.
EXIT_FLUSH_TIMEOUT_S = 2.0


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
        self._queue: deque[T | _Marker] = deque()
        self._wake = threading.Event()
        self._start_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._closed = False
        self._stopping = False

    # ------------------------------------------------------------------ producer side (agent's thread)

    def submit(self, item: T) -> bool:
        """Queue ``item``; ``False`` (and a counted drop) when the queue is full or the worker is closed."""
        if self._closed:
            self._drops.add(f"{self.name}_after_shutdown")
            return False
        if len(self._queue) >= self._max_queue:
            self._drops.add(self._drop_reason)
            return False
        queue = self._queue
        queue.append(item)
        if self._thread is None:
            self._start()
        if len(queue) >= self._wake_at and not self._wake.is_set():
            self._wake.set()
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
        self._drops.add(f"{self.name}_unsent_at_shutdown", unsent)
        return False

    # ------------------------------------------------------------------ worker side

    def _start(self) -> None:
        with self._start_lock:
            if self._thread is not None:
                return
            thread = threading.Thread(target=self._run, name=f"planguard-{self.name}", daemon=True)
            thread.start()
            self._thread = thread
            _live_workers.add(self)

    def _run(self) -> None:
        while True:
            self._wake.wait(self._interval)
            self._wake.clear()
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
            self._handle(batch)
        except Exception as exc:
            self._errors.record(f"worker:{self.name}", exc)


@atexit.register
def _flush_at_exit() -> None:
    for worker in list(_live_workers):
        worker.flush(EXIT_FLUSH_TIMEOUT_S)
