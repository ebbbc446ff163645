"""SessionRegistry: the per-session state registry sinks share (bounded, with a last-session fast path)."""

from __future__ import annotations

import threading

from planguard.session import Pipeline, Session
from planguard.sinks import SessionRegistry


def test_get_add_pop_and_the_last_session_seen() -> None:
    pipe = Pipeline()
    a, b = pipe.session("a"), pipe.session("b")
    reg: SessionRegistry[str] = SessionRegistry(10)
    assert reg.get(a) is None
    assert reg.add(a, "A") == []
    assert reg.last == (a, "A")
    assert reg.add(b, "B") == []
    assert reg.get(a) == "A" and reg.last == (a, "A")
    assert reg.pop(a) == "A" and reg.last is None
    assert reg.get(a) is None and reg.pop(a) is None
    assert reg.get(b) == "B"
    assert reg.clear() == ["B"] and reg.get(b) is None and reg.last is None


def test_oldest_states_leave_past_the_bound() -> None:
    pipe = Pipeline()
    sessions = [pipe.session(str(i)) for i in range(4)]
    reg: SessionRegistry[int] = SessionRegistry(2)
    assert reg.add(sessions[0], 0) == [] and reg.add(sessions[1], 1) == []
    assert reg.add(sessions[2], 2) == [0]
    assert reg.get(sessions[0]) is None and reg.get(sessions[1]) == 1
    assert reg.add(sessions[3], 3) == [1]
    assert [reg.get(s) for s in sessions] == [None, None, 2, 3]


def test_states_added_from_many_threads_are_all_found() -> None:
    pipe = Pipeline()
    reg: SessionRegistry[str] = SessionRegistry(10_000)
    sessions = [[pipe.session(f"{t}-{i}") for i in range(200)] for t in range(4)]

    def work(mine: list[Session]) -> None:
        for s in mine:
            reg.add(s, s.id)
            assert reg.get(s) == s.id

    threads = [threading.Thread(target=work, args=(mine,)) for mine in sessions]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert all(reg.get(s) == s.id for mine in sessions for s in mine)


def test_sinks_hold_decisions_for_as_many_calls_as_a_session_keeps_pending() -> None:
    from planguard import session, sinks

    assert sinks.MAX_OPEN_CALLS == session.MAX_PENDING
