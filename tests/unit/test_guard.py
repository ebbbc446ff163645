"""Guard: the session registry (LRU, idle eviction), thread/task safety, fail-open, async API, lifecycle."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time
import types

import pytest

import planguard.guard as guard_module
import planguard.session as session_module
from planguard.config import Config
from planguard.decisions import ALLOW, Decision, DecisionKind
from planguard.events import ToolEvent
from planguard.guard import EVICTED_KEY, Guard
from planguard.sinks import Sink
from planguard.stages import Policy
from planguard.testing import RecordingSink, drive, guard_for_tests

NAV = ToolEvent.shell("cat /testbed/src/mod.py")
PATCH = ToolEvent("str_replace_editor", {"command": "str_replace", "path": "/testbed/src/mod.py"})
SUBMIT = ToolEvent("submit")
QUIET = {"reminder": {"enabled": False}, "violations": {"enabled": False}}


class FakeClock:
    """Wall clock for the guard's idle checks and the sessions' activity stamps."""

    def __init__(self) -> None:
        self.now = 1000.0

    def time(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch):
    c = FakeClock()
    monkeypatch.setattr(guard_module, "_now", c.time)
    monkeypatch.setattr(session_module, "time", types.SimpleNamespace(time=c.time))
    return c


# --------------------------------------------------------------------------- registry


def test_session_is_created_once_per_id_with_metadata():
    guard, rec = guard_for_tests()
    s = guard.session("a", user="u1")
    assert guard.session("a") is s and s.metadata == {"user": "u1"}
    guard.session("a", model="m")
    assert s.metadata == {"user": "u1", "model": "m"}
    assert "a" in guard and "b" not in guard and len(guard) == 1
    assert rec.started == ["a"]


def test_end_returns_the_summary_and_forgets_the_session():
    guard, rec = guard_for_tests()
    drive(guard, "a", [NAV, PATCH])
    summary = guard.end("a")
    assert summary is not None and summary.n_steps == 2 and summary.letters == "NP"
    assert "a" not in guard and guard.end("a") is None
    assert rec.summaries["a"] is not None
    drive(guard, "a", [NAV])  # the id starts a fresh session
    assert guard.session("a").n_steps == 1


def test_capacity_evicts_the_least_recently_used_and_ends_it(clock):
    guard, rec = guard_for_tests(sessions={"max_sessions": 3})
    for sid in ("s0", "s1", "s2"):
        guard.before_tool(sid, NAV)
    guard.before_model("s0")  # s0 is now the most recently used
    guard.before_tool("s3", NAV)
    guard.before_tool("s4", NAV)
    assert sorted(guard._sessions) == ["s0", "s3", "s4"]
    assert set(rec.summaries) == {"s1", "s2"}
    assert guard.evicted == 2
    assert all(r.session_id for r in rec.decisions)  # nothing from the evicted sessions leaks into others


def test_evicted_sessions_are_marked_for_the_sinks(clock):
    guard, _ = guard_for_tests(sessions={"max_sessions": 1})
    first = guard.session("a")
    guard.session("b")
    assert first.ended and first.metadata[EVICTED_KEY] == "capacity"


def test_idle_sessions_are_ended_by_the_next_sweep(clock):
    guard, rec = guard_for_tests(sessions={"idle_timeout_s": 60})
    guard.before_tool("old", NAV)
    clock.now += 30
    guard.before_tool("recent", NAV)
    clock.now += 31  # "old" idle 61 s, "recent" 31 s
    for _ in range(63):
        guard.before_model("recent")
    assert "old" in guard  # hooks look for idle sessions every 64 calls (and when a session is created)
    guard.before_model("recent")
    assert "old" not in guard and "recent" in guard
    assert rec.summaries["old"].n_steps == 1
    assert guard.session("recent").metadata.get(EVICTED_KEY) is None
    clock.now += 61
    guard.before_tool("new", NAV)  # a new session triggers the sweep too
    assert "recent" not in guard and guard.session("recent").n_steps == 0  # (a fresh one)


def test_sweep_ends_idle_sessions_without_traffic(clock):
    guard, rec = guard_for_tests(sessions={"idle_timeout_s": 10})
    for i in range(5):
        guard.before_tool(f"s{i}", NAV)
    clock.now += 11
    assert guard.sweep() == 5 and len(guard) == 0 and len(rec.summaries) == 5


def test_no_idle_eviction_when_timeout_is_null(clock):
    guard, _ = guard_for_tests(sessions={"idle_timeout_s": None})
    guard.before_tool("a", NAV)
    clock.now += 10**9
    guard.before_tool("b", NAV)
    assert "a" in guard and guard.sweep() == 0


def test_memory_stays_bounded_under_many_sessions():
    guard, rec = guard_for_tests(sessions={"max_sessions": 50})
    for i in range(2000):
        guard.before_tool(f"s{i}", NAV)
    assert len(guard) == 50 and len(rec.summaries) == 1950


# --------------------------------------------------------------------------- concurrency


def test_threads_on_one_session_are_serialised():
    guard, _ = guard_for_tests(policies=QUIET)
    n_threads, n_calls = 8, 300

    def work(t: int) -> None:
        for i in range(n_calls):
            ev = ToolEvent("bash", {"command": "cat /testbed/src/mod.py"}, call_id=f"{t}-{i}")
            assert guard.before_tool("shared", ev) is ALLOW
            assert guard.after_tool("shared", ev) is not None
            guard.before_model("shared")

    threads = [threading.Thread(target=work, args=(t,)) for t in range(n_threads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    s = guard.session("shared")
    assert s.n_steps == n_threads * n_calls and s.n_model_calls == n_threads * n_calls
    assert s.langutory.runs == [("L_navigate", n_threads * n_calls)]
    assert guard.errors.total == 0


def test_threads_on_many_sessions_with_eviction_never_fail():
    guard, _ = guard_for_tests(sessions={"max_sessions": 16})

    def work(t: int) -> None:
        for i in range(400):
            sid = f"s{(t * 7 + i) % 40}"
            guard.before_model(sid)
            guard.before_tool(sid, NAV)
            guard.after_tool(sid, NAV)
            if i % 50 == 0:
                guard.end(sid)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert guard.errors.total == 0 and len(guard) <= 16


def run(coro):
    return asyncio.run(coro)


def test_1000_concurrent_async_sessions_have_no_cross_talk():
    guard, rec = guard_for_tests(
        policies={
            "reminder": {"every_model_calls": 3, "min_gap_model_calls": 0},
            "violations": {"enabled": False},
            "gates": [
                {
                    "name": "v",
                    "tool": "submit",
                    "until": {"phase_after": {"phase": "V", "after": "P"}},
                    "max_denials": None,
                }
            ],
        }
    )

    async def agent(i: int):
        sid = f"agent-{i}"
        navs = i % 5 + 1
        script = [NAV] * navs + ([PATCH] if i % 2 else []) + [SUBMIT]
        reminders = denials = 0
        for ev in script:
            reminders += len(await guard.abefore_model(sid))
            await asyncio.sleep(0)  # let the other 999 agents interleave between every hook
            d = await guard.abefore_tool(sid, ev)
            await asyncio.sleep(0)
            if d.kind is DecisionKind.DENY:
                denials += 1
            else:
                await guard.aafter_tool(sid, ev)
        summary = await guard.aend(sid)
        return i, navs, reminders, denials, summary

    async def main():
        return await asyncio.gather(*(agent(i) for i in range(1000)))

    results = run(main())
    assert guard.errors.total == 0 and len(guard) == 0
    for i, navs, reminders, denials, summary in results:
        patched = bool(i % 2)
        assert summary.session_id == f"agent-{i}"
        assert summary.letters == "N" * navs + ("P" if patched else "")
        assert summary.n_steps == navs + 1  # the patch, or the submit (a denied submit never ran)
        assert summary.n_model_calls == navs + patched + 1
        assert reminders == summary.n_model_calls // 3
        assert denials == (1 if patched else 0)
    per_session = {}
    for r in rec.decisions:
        per_session.setdefault(r.session_id, []).append(r.item.kind.value)
    assert sum(v.count("deny") for v in per_session.values()) == 500


def test_async_hook_waits_off_the_loop_when_another_thread_holds_the_session():
    guard, _ = guard_for_tests(policies=QUIET)
    guard.before_tool("s", NAV)
    entry = guard._sessions["s"]
    release = threading.Event()

    def holder():
        with entry.lock:
            release.wait(5)

    th = threading.Thread(target=holder)
    th.start()
    time.sleep(0.05)

    async def main():
        ticks = 0

        async def ticker():
            nonlocal ticks
            while not done.is_set():
                ticks += 1
                await asyncio.sleep(0.005)

        done = asyncio.Event()
        t = asyncio.create_task(ticker())
        call = asyncio.create_task(guard.abefore_tool("s", NAV))
        await asyncio.sleep(0.1)
        assert not call.done()  # waiting for the lock, in a worker thread
        release.set()
        d = await call
        done.set()
        await t
        return d, ticks

    d, ticks = run(main())
    th.join()
    assert d is ALLOW and ticks >= 5  # the loop kept running while the call waited


def test_async_api_matches_sync():
    guard, _ = guard_for_tests(policies={"reminder": {"every_model_calls": 1, "min_gap_model_calls": 0}})

    async def main():
        msgs = await guard.abefore_model("s")
        d = await guard.abefore_tool("s", NAV)
        step = await guard.aafter_tool("s", NAV)
        return msgs, d, step, await guard.aend("s"), await guard.aend("s")

    msgs, d, step, summary, again = run(main())
    assert msgs[0].message.startswith("PLAN REMINDER:") and d is ALLOW
    assert step is not None and step.roles == ("L_navigate",)
    assert summary is not None and summary.n_steps == 1 and again is None


# --------------------------------------------------------------------------- fail-open


class Exploding(Policy):
    name = "exploding"

    def before_tool(self, step, session, state):
        raise ValueError("policy bug")

    def after_tool(self, step, session, state):
        raise ValueError("policy bug")

    def before_model(self, session, state):
        raise ValueError("policy bug")

    def on_end(self, session, state):
        raise ValueError("policy bug")


class ExplodingSink(Sink):
    def on_tool_end(self, session, step, state):
        raise OSError("disk full")

    def shutdown(self):
        raise OSError("cannot flush")


def test_internal_errors_never_reach_the_agent_and_are_counted():
    guard, _ = guard_for_tests(
        policies={"custom": [{"class": "tests.unit.test_guard:Exploding"}]}, sinks=[ExplodingSink()]
    )
    turns = drive(guard, "s", [NAV, NAV])
    assert [t.decision for t in turns] == [ALLOW, ALLOW]
    assert guard.end("s") is not None
    guard.shutdown()
    counts = guard.errors.counts
    assert counts["Exploding.before_tool:ValueError"] == 2
    assert counts["Exploding.after_tool:ValueError"] == 2
    assert counts["Exploding.before_model:ValueError"] == 2
    assert counts["Exploding.on_end:ValueError"] == 1
    assert counts["ExplodingSink.on_tool_end:OSError"] == 2
    assert counts["ExplodingSink.shutdown:OSError"] == 1


def test_a_failing_classifier_allows_and_counts(monkeypatch):
    guard, _ = guard_for_tests()

    def boom(*a, **k):
        raise RuntimeError("classifier bug")

    monkeypatch.setattr(type(guard.pipeline.rules), "classify", boom)
    assert guard.before_tool("s", NAV) is ALLOW
    step = guard.after_tool("s", NAV)
    # The session contains the failure: the call is still recorded, as a general (phase-less) step.
    assert step is not None and step.roles == ()
    assert isinstance(guard.before_model("s"), list)  # before_model does not classify; it must not raise
    assert guard.errors.total == 1  # classified once, at before_tool; after_tool reuses the pending step
    assert guard.session("s").n_steps == 1


def test_errors_are_logged_once_per_kind(caplog):
    guard, _ = guard_for_tests(policies={"custom": [{"class": "tests.unit.test_guard:Exploding"}]})
    with caplog.at_level("WARNING", logger="planguard"):
        drive(guard, "s", [NAV] * 5)
    logged = [r for r in caplog.records if "Exploding.before_tool" in r.getMessage()]
    assert len(logged) == 1


def test_disabled_guard_lets_everything_through_and_records_nothing():
    rec = RecordingSink()
    guard = Guard(Config(enabled=False, telemetry={"enabled": False}, store={"enabled": False}), sinks=[rec])
    assert guard.before_tool("s", SUBMIT) is ALLOW
    assert guard.after_tool("s", SUBMIT) is None
    assert guard.before_model("s") == [] and guard.end("s") is None
    assert run(guard.abefore_tool("s", SUBMIT)) is ALLOW
    assert len(guard) == 0 and rec.started == [] and guard.pipeline.sinks == ()


# --------------------------------------------------------------------------- lifecycle and construction


def test_shutdown_ends_live_sessions_then_stops_sinks():
    guard, rec = guard_for_tests()
    drive(guard, "a", [NAV])
    drive(guard, "b", [PATCH])
    with guard:
        pass
    assert set(rec.summaries) == {"a", "b"} and rec.shut_down
    assert guard.session  # the object still exists; shutdown is idempotent
    guard.shutdown()


def test_from_file_and_planguard_config_env(tmp_path, monkeypatch):
    p = tmp_path / "pg.yaml"
    p.write_text("plan: no_reproduce\ntelemetry: {enabled: false}\nstore: {enabled: false}\n")
    assert Guard.from_file(p).pipeline.plan.name == "no_reproduce"
    monkeypatch.setenv("PLANGUARD_CONFIG", str(p))
    monkeypatch.setenv("PLANGUARD_PLAN", "no_validation")
    assert Guard().pipeline.plan.name == "no_validation"  # file, then env overrides


def test_stop_decision_reaches_the_caller():
    class Stopper(Policy):
        name = "stopper"

        def before_tool(self, step, session, state):
            return Decision(DecisionKind.STOP, "enough", self.name) if step.index >= 2 else None

    guard, _ = guard_for_tests()
    guard.pipeline = dataclasses.replace(guard.pipeline, policies=(Stopper(),))
    turns = drive(guard, "s", [NAV] * 5)
    assert [t.decision.kind.value for t in turns] == ["allow", "allow", "stop"]


def test_forget_takes_a_session_out_without_ending_it():
    guard, rec = guard_for_tests()
    drive(guard, "a", [NAV])
    kept = guard.session("a")
    assert guard.forget("a", guard.pipeline.session("other")) is None and "a" in guard  # not that one
    assert guard.forget("a") is kept and "a" not in guard and guard.forget("a") is None
    assert not kept.ended and "a" not in rec.summaries
    guard.shutdown()
    assert "a" not in rec.summaries  # forgotten sessions are the caller's to end


def test_adopt_registers_a_restored_session():
    guard, rec = guard_for_tests(sessions={"max_sessions": 2})
    restored = guard.pipeline.session("r")
    restored.observe(NAV)
    guard.adopt(restored)
    drive(guard, "r", [PATCH])
    assert guard.session("r") is restored and restored.n_steps == 2
    guard.adopt(guard.pipeline.session("x"))
    drive(guard, "x", [NAV])
    guard.adopt(guard.pipeline.session("y"))  # over capacity: the least recently used ("r") is ended
    assert "r" not in guard and rec.summaries["r"].letters == "NP"


def test_a_call_id_starting_with_hash_keeps_its_own_result():
    """Calls without an id were keyed ``#<index>`` among the ids, so a real id ``#1`` (or any id starting
    with ``#``) was taken by the next id-less result, and collided with the id-less call at index 1."""
    from planguard.session import Pipeline

    session = Pipeline().session("s")
    session.before_tool(ToolEvent("Read", {"path": "a.py"}, call_id="#1"))  # step 0, id "#1"
    session.before_tool(ToolEvent("Read", {"path": "b.py"}))  # step 1, no id
    session.before_tool(ToolEvent("Read", {"path": "c.py"}))  # step 2, no id
    first = session.after_tool(ToolEvent("Read", {"path": "b.py"}, result="B"))  # no id: the oldest id-less
    mine = session.after_tool(ToolEvent("Read", {"path": "a.py"}, call_id="#1", result="A"))
    last = session.after_tool(ToolEvent("Read", {"path": "c.py"}, result="C"))
    assert (first.index, mine.index, last.index) == (1, 0, 2)
