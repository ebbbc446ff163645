"""The proxy's conversation bookkeeping without HTTP: idle ends across replicas, rebuilding a session the
guard evicted, and concurrent writers."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from planguard_proxy import MemoryStore, Monitor, ProxyConfig
from planguard_proxy.wire import WIRES, ToolCall
from proxy_fakes import RecordingSink, quiet_config

from planguard.guard import Guard

WIRE = WIRES["openai"]
COMMANDS = ["ls", "cat a.py", "python repro.py", "sed -i s/a/b/ a.py", "python repro.py"]


def _monitor(store: MemoryStore, *, sink: RecordingSink | None = None, **config: Any) -> Monitor:
    sinks: tuple[Any, ...] = (sink,) if sink else ()
    guard = Guard(quiet_config(**config), sinks=sinks)
    return Monitor(guard, store, ProxyConfig(), idle_end_s=60)


async def _turn(mon: Monitor, messages: list[dict[str, Any]], sid: str, i: int) -> None:
    """One model call whose response asks for COMMANDS[i]; the agent appends the call and its result."""
    plan = await mon.on_request(WIRE, {"model": "m", "messages": list(messages)}, sid)
    pending: list[dict[str, Any]] = []
    call = ToolCall(f"c{i}", "bash", {"command": COMMANDS[i]})
    assert mon.decide(plan.conversation, call, pending) is None
    await mon.on_response_end(plan.conversation, pending)
    messages.append(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": f"c{i}",
                    "type": "function",
                    "function": {"name": "bash", "arguments": f'{{"command": "{COMMANDS[i]}"}}'},
                }
            ],
        }
    )
    messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"<returncode>{i % 2}</returncode>"})


def _start(task: str) -> list[dict[str, Any]]:
    return [{"role": "system", "content": "agent"}, {"role": "user", "content": task}]


def test_idle_end_is_recorded_once_by_the_up_to_date_replica() -> None:
    async def go() -> tuple[RecordingSink, RecordingSink]:
        store = MemoryStore()
        sa, sb = RecordingSink(), RecordingSink()
        a, b = _monitor(store, sink=sa), _monitor(store, sink=sb)
        msgs = _start("task")
        for i in range(len(COMMANDS)):
            await _turn(a if i % 2 == 0 else b, msgs, "s1", i)
        await _turn(a, msgs, "s1", 0)  # a serves the last request: a is up to date, b is behind
        assert await b.sweep(now=10**9) == 1
        assert await a.sweep(now=10**9) == 1
        assert a.counters["ended"] == 1 and b.counters["ended"] == 0
        return sa, sb

    sa, sb = asyncio.run(go())
    assert sb.of("end") == []
    assert sa.of("end") == [len(COMMANDS) + 1]
    assert len(sa.of("start") + sb.of("start")) == 1


def test_not_idle_is_not_ended() -> None:
    async def go() -> int:
        mon = _monitor(MemoryStore())
        await _turn(mon, _start("t"), "s", 0)
        return await mon.sweep()

    assert asyncio.run(go()) == 0


def test_session_evicted_by_the_guard_is_rebuilt_from_the_log() -> None:
    async def go() -> tuple[int, int, int]:
        mon = _monitor(MemoryStore(), sessions={"max_sessions": 1, "idle_timeout_s": None})
        m1, m2 = _start("one"), _start("two")
        for i in range(3):
            await _turn(mon, m1, "one", i)
            await _turn(mon, m2, "two", i)  # creating/using "two" evicts "one" from the guard, and back
        await _turn(mon, m1, "one", 3)
        one = mon.conversations["one"].session
        assert one is not None
        return one.n_steps, one.n_model_calls, mon.counters["replayed"]

    steps, calls, replayed = asyncio.run(go())
    assert (steps, calls) == (4, 4)
    assert replayed > 0


def test_conversations_past_the_guards_sessions_are_let_go() -> None:
    """A replica tracks no more conversations than its guard keeps sessions: one past that would only hold a
    session the guard has ended. A conversation let go is rebuilt from the log when it comes back."""

    async def go() -> tuple[int, int]:
        mon = _monitor(MemoryStore(), sessions={"max_sessions": 2, "idle_timeout_s": None})
        chats = {f"s{k}": _start(f"task {k}") for k in range(6)}
        for i in range(2):
            for sid, messages in chats.items():
                await _turn(mon, messages, sid, i)
                assert len(mon.conversations) <= 2
        await _turn(mon, chats["s0"], "s0", 2)
        s0 = mon.conversations["s0"].session
        assert s0 is not None
        return s0.n_steps, s0.n_model_calls

    assert asyncio.run(go()) == (3, 3)


class _RacyStore(MemoryStore):
    """Another replica appends to the conversation between our catch-up and our own append."""

    race = False

    async def append(self, key: str, entries: list[dict[str, Any]]) -> int:
        if self.race:
            self.race = False
            await super().append(key, [{"op": "model"}])
        return await super().append(key, entries)


def test_concurrent_writer_is_counted_and_never_applied_twice() -> None:
    async def go() -> tuple[int, int, int, int]:
        store = _RacyStore()
        a = _monitor(store)
        msgs = _start("t")
        await _turn(a, msgs, "s", 0)
        store.race = True
        plan = await a.on_request(WIRE, {"model": "m", "messages": msgs}, "s")
        await _turn(a, msgs, "s", 1)
        session = plan.conversation.session
        assert session is not None
        return (
            a.counters["store_races"],
            plan.conversation.applied,
            len(await store.read("s", 0)),
            session.n_model_calls,
        )

    races, applied, length, model_calls = asyncio.run(go())
    assert races == 1 and applied == length
    assert model_calls == 3  # the foreign entry is skipped, not replayed later on top


class _SlowRemoteStore(MemoryStore):
    """A store behind a network: every append takes a while (as a Redis round trip does)."""

    remote = True

    def __init__(self, delay: float) -> None:
        super().__init__()
        self.delay = delay

    async def append(self, key: str, entries: list[dict[str, Any]]) -> int:
        await asyncio.sleep(self.delay)
        return await super().append(key, entries)


def test_remote_store_write_overlaps_the_upstream_call_and_keeps_the_log_in_order() -> None:
    async def go() -> None:
        store = _SlowRemoteStore(0.05)
        a, b = _monitor(store), _monitor(store)
        msgs = _start("t")
        loop = asyncio.get_running_loop()
        for i in range(4):
            mon = a if i % 2 == 0 else b  # replicas alternate: each must see the other's entries
            t0 = loop.time()
            plan = await mon.on_request(WIRE, {"model": "m", "messages": list(msgs)}, "s")
            # The request goes upstream at once; its log entries are still being written.
            writing = plan.conversation.writing
            assert loop.time() - t0 < store.delay and writing is not None and not writing.done()
            pending: list[dict[str, Any]] = []
            call = ToolCall(f"c{i}", "bash", {"command": COMMANDS[i]})
            assert mon.decide(plan.conversation, call, pending) is None  # the upstream answered quickly
            await mon.on_response_end(plan.conversation, pending)  # waits for the request's entries
            msgs.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": f"c{i}", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
                    ],
                }
            )
            msgs.append({"role": "tool", "tool_call_id": f"c{i}", "content": "<returncode>0</returncode>"})
        log = await store.read("s", 0)
        ops = [e["op"] for e in log]
        assert ops == ["model", "pre"] + ["post", "model", "pre"] * 3
        assert [e["event"]["call_id"] for e in log if e["op"] == "pre"] == ["c0", "c1", "c2", "c3"]
        for mon in (a, b):
            assert mon.counters["store_races"] == 0 and mon.counters["fail_open"] == 0
        conv = b.conversations["s"]
        assert conv.applied == len(log) and conv.session is not None
        assert conv.session.n_model_calls == 4 and conv.session.n_steps == 4

    asyncio.run(go())


def test_a_log_an_older_proxy_wrote_is_replayed() -> None:
    """Logs written before the proxy's log was a ``planguard.journal`` (ops ``call``/``result``, the event
    under ``ev``) outlive a restart in a shared store: a replica catching up replays them as the same
    steps."""

    async def go() -> None:
        store = MemoryStore()
        msgs = _start("t")
        for i in range(3):
            await _turn(_monitor(store), msgs, "new", i)
        renamed = {"pre": "call", "post": "result", "event": "ev"}
        old = [
            {renamed.get(k, k): renamed.get(v, v) if k == "op" else v for k, v in e.items()}
            for e in await store.read("new", 0)
        ]
        assert {e["op"] for e in old} == {"model", "call", "result"}
        await store.append("old", old)
        summaries = [await _monitor(store).summary(sid) for sid in ("new", "old")]
        assert summaries[0] is not None and summaries[1] is not None
        for key in ("letters", "n_steps", "n_model_calls", "open_calls", "log_position"):
            assert summaries[0][key] == summaries[1][key], key
        assert summaries[1]["n_steps"] == 3 and summaries[1]["letters"]

    asyncio.run(go())


def test_memory_store_keeps_a_bounded_log_and_a_rebuild_starts_after_what_it_dropped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The memory store's logs live in the proxy's process: each keeps its last ``MAX_LOG_ENTRIES`` entries.
    Positions stay those of the whole log, so a session the guard evicted is rebuilt from the entries kept
    (marked as partial) and goes on without an entry applied twice or a race counted."""
    from planguard_proxy import store as store_module

    monkeypatch.setattr(store_module, "MAX_LOG_ENTRIES", 4)

    async def go() -> tuple[int, int, Any, int, int]:
        store = MemoryStore()
        mon = _monitor(store, sessions={"max_sessions": 1, "idle_timeout_s": None})
        m1, m2 = _start("one"), _start("two")
        for i in range(5):  # 14 entries: model and call, then result, model and call per turn
            await _turn(mon, m1, "one", i)
            assert len(store._logs["one"][0]) <= 4
        await _turn(mon, m2, "two", 0)  # evicts "one" from the guard
        await _turn(mon, m1, "one", 0)  # rebuilt from call c3, result c3, model, call c4
        conv = mon.conversations["one"]
        assert conv.session is not None
        log, _, base = store._logs["one"]
        assert conv.applied == base + len(log) == 14 + 3
        return (
            conv.session.n_steps,
            conv.session.n_model_calls,
            conv.session.metadata.get("planguard.rebuilt"),
            mon.counters["store_races"],
            len(conv.open),
        )

    assert asyncio.run(go()) == (3, 2, "partial-log", 0, 1)
