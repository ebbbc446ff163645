"""The bounded background worker: drops instead of blocking, flushes, survives errors, stops in time."""

from __future__ import annotations

import threading
import time

from planguard.errors import ErrorCounter
from planguard.sinks.drops import DropCounter
from planguard.sinks.worker import BackgroundWorker


def test_items_are_handled_in_order_in_batches() -> None:
    seen: list[list[int]] = []
    w: BackgroundWorker[int] = BackgroundWorker(
        "t", seen.append, drops=DropCounter(), drop_reason="full", max_batch=10
    )
    for i in range(35):
        assert w.submit(i)
    assert w.flush(5)
    assert [i for batch in seen for i in batch] == list(range(35))
    assert max(len(b) for b in seen) <= 10
    assert threading.current_thread().name not in {"planguard-t"}
    w.shutdown()


def test_full_queue_drops_and_counts_without_waiting() -> None:
    gate = threading.Event()
    drops = DropCounter()
    w: BackgroundWorker[int] = BackgroundWorker(
        "slow", lambda b: gate.wait(10), drops=drops, drop_reason="slow_full", max_queue=5, max_batch=1
    )
    t0 = time.perf_counter()
    accepted = sum(w.submit(i) for i in range(1000))
    elapsed = time.perf_counter() - t0
    assert elapsed < 0.5  # never waits for the stuck handler
    assert accepted <= 6
    assert drops["slow_full"] == 1000 - accepted
    gate.set()
    assert w.flush(5)
    assert w.shutdown(5)


def test_handler_errors_are_counted_and_the_worker_goes_on() -> None:
    errors = ErrorCounter()
    handled: list[int] = []

    def handle(batch: list[int]) -> None:
        if 3 in batch:
            raise ValueError("bad item")
        handled.extend(batch)

    w: BackgroundWorker[int] = BackgroundWorker(
        "e", handle, drops=DropCounter(), drop_reason="x", max_batch=1, errors=errors
    )
    for i in range(6):
        w.submit(i)
    assert w.flush(5)
    assert handled == [0, 1, 2, 4, 5]
    assert errors.counts == {"worker:e:ValueError": 1}
    w.shutdown()


def test_shutdown_is_bounded_even_with_a_hung_handler() -> None:
    drops = DropCounter()
    w: BackgroundWorker[int] = BackgroundWorker(
        "hung", lambda b: time.sleep(30), drops=drops, drop_reason="x", max_batch=1
    )
    w.submit(1)
    time.sleep(0.2)  # the worker is now stuck on item 1
    w.submit(2)
    w.submit(3)
    t0 = time.perf_counter()
    assert w.shutdown(0.5) is False  # could not finish, but returned on time
    assert time.perf_counter() - t0 < 2
    assert drops["hung_unsent_at_shutdown"] == 2  # queued behind the stuck item, never handled
    assert not w.submit(4)
    assert drops["hung_after_shutdown"] == 1


def test_flush_without_work_and_lazy_thread() -> None:
    w: BackgroundWorker[int] = BackgroundWorker("idle", lambda b: None, drops=DropCounter(), drop_reason="x")
    assert w.flush(0.1)
    assert w.shutdown(0.1)
    assert not [t for t in threading.enumerate() if t.name == "planguard-idle"]


def test_wake_at_batches_submits_and_the_timer_or_flush_still_drains() -> None:
    seen: list[list[int]] = []
    w: BackgroundWorker[int] = BackgroundWorker(
        "lazy", seen.append, drops=DropCounter(), drop_reason="x", interval_s=0.5, wake_at=5
    )
    w.submit(0)  # starts the thread
    assert w.flush(5)
    seen.clear()
    for i in range(1, 4):  # below wake_at: nobody wakes the worker
        w.submit(i)
    time.sleep(0.05)
    assert seen == [] and w.pending == 3
    deadline = time.monotonic() + 2
    while w.pending and time.monotonic() < deadline:  # ...its timer drains them
        time.sleep(0.01)
    assert [i for b in seen for i in b] == [1, 2, 3]
    seen.clear()
    for i in range(4, 9):  # the 5th pending item wakes it at once
        w.submit(i)
    deadline = time.monotonic() + 0.25
    while w.pending and time.monotonic() < deadline:
        time.sleep(0.005)
    assert [i for b in seen for i in b] == [4, 5, 6, 7, 8]
    w.submit(9)
    assert w.flush(5) and seen[-1] == [9]
    w.shutdown()


def test_wake_at_never_waits_for_more_than_a_quarter_of_the_queue() -> None:
    w: BackgroundWorker[int] = BackgroundWorker(
        "cap", lambda b: None, drops=DropCounter(), drop_reason="x", max_queue=8, wake_at=1000
    )
    assert w._wake_at == 2
    w.shutdown()


def test_an_idle_worker_sleeps_until_an_item_comes_then_gathers_its_batch() -> None:
    seen: list[list[int]] = []
    drains = 0
    w: BackgroundWorker[int] = BackgroundWorker(
        "sleepy", seen.append, drops=DropCounter(), drop_reason="x", interval_s=0.02, wake_at=100
    )
    drain = w._drain

    def counted() -> None:
        nonlocal drains
        drains += 1
        drain()

    w._drain = counted  # type: ignore[method-assign]
    w.submit(0)  # starts the thread
    assert w.flush(5)
    before = drains
    time.sleep(0.3)  # 15 timer periods with nothing queued: no wake-up, no drain
    assert drains == before
    w.submit(1)  # queued to the sleeping worker: it wakes, waits interval_s for more, then drains
    w.submit(2)
    deadline = time.monotonic() + 2
    while w.pending and time.monotonic() < deadline:
        time.sleep(0.005)
    assert seen[-1] == [1, 2]
    assert w.shutdown(5)
