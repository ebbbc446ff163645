"""The embedded store: live sessions written as JSONL by the background writer and read back as the same
records; replaying the stored events reproduces the live numbers."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planguard.decisions import Decision, DecisionKind
from planguard.events import ToolEvent
from planguard.offline.loaders.planguard_store import (
    StoredSession,
    StoreReadError,
    iter_sessions,
    iter_trajectories,
    read_session,
)
from planguard.session import Pipeline, Session
from planguard.sinks.drops import DropCounter
from planguard.sinks.store.config import StoreConfig
from planguard.sinks.store.records import DecisionRecord, EventRecord, FindingRecord, StepRecord
from planguard.sinks.store.writer import StoreSink
from planguard.stages import Policy
from planguard.step import Step
from planguard.testing import RecordingSink, ScriptedDetector

EVENTS = [
    ToolEvent.shell("cat /testbed/src/mod.py", call_id="c0"),
    ToolEvent(
        tool="str_replace_editor",
        call_id="c1",
        arguments={"command": "create", "path": "/testbed/reproduce_bug.py", "file_text": "import mod\n"},
    ),
    ToolEvent.shell("python /testbed/reproduce_bug.py", call_id="c2"),
    ToolEvent.shell("rm -rf /testbed", call_id="rm"),
    ToolEvent(
        tool="str_replace_editor",
        call_id="c3",
        arguments={"command": "str_replace", "path": "/testbed/src/mod.py", "old_str": "a", "new_str": "b"},
    ),
    ToolEvent.shell("python /testbed/reproduce_bug.py", call_id="c4"),
]


class Policies(Policy):
    name = "p"

    def before_tool(self, step: Step, session: Session, state: Any) -> Decision | None:
        if "rm -rf" in (step.event.action or ""):
            return Decision(DecisionKind.DENY, "refused", self.name)
        if step.index == 1:
            return Decision(DecisionKind.LOG, "gate looked", self.name)
        return None

    def after_tool(self, step: Step, session: Session, state: Any) -> list[Decision]:
        out = [Decision(DecisionKind.NUDGE, "reproduce first", self.name, f) for f in step.findings]
        if step.index == 0:
            out.append(Decision(DecisionKind.REMIND, "PLAN REMINDER: 1. Navigate", self.name))
        return out

    def before_model(self, session: Session, state: Any) -> list[Decision]:
        return (
            [Decision(DecisionKind.REMIND, "PLAN REMINDER: again", self.name)] if session.n_steps == 2 else []
        )


def live(
    tmp_path: Path, *, session_id: str = "live-1", result: str = "ok", **store: Any
) -> tuple[StoreSink, RecordingSink, Session]:
    sink = StoreSink(StoreConfig(content=True, path=str(tmp_path), **store))
    rec = RecordingSink()
    pipe = Pipeline(
        detectors=(ScriptedDetector("failing_run", lambda s: s.event.failed),),
        policies=(Policies(),),
        sinks=(sink, rec),
    )
    s = pipe.session(session_id, model="gpt-test", instance_id="repo__1")
    for ev in EVENTS:
        ev = ToolEvent(tool=ev.tool, arguments=ev.arguments, call_id=ev.call_id, action=ev.action)
        s.before_model()
        if s.before_tool(ev).blocks:
            continue
        ev.result = result
        ev.exit_code = 1 if ev.call_id == "c2" else 0
        s.after_tool(ev)
    s.end()
    assert sink.flush()
    return sink, rec, s


def test_one_file_per_session_with_every_record(tmp_path: Path) -> None:
    sink, _, s = live(tmp_path)
    live(tmp_path, session_id="live-1")  # the same id again is a new file, not an append
    files = sorted(tmp_path.glob("*.jsonl"))
    assert len(files) == 2 and all("live-1" in f.name for f in files)
    stored = read_session(sink.files()[0])
    assert stored.id == "live-1" and stored.complete and not stored.errors
    assert stored.header.plan == "plan" and stored.header.rules == "live"
    assert stored.header.metadata == {
        "model": "gpt-test",
        "instance_id": "repo__1",
    }
    assert [x.letters for x in stored.steps] == ["N", "R", "R", "P", "V"]
    assert [x.event.call_id for x in stored.steps] == ["c0", "c1", "c2", "c3", "c4"]
    assert stored.steps[2].event.exit_code == 1
    assert [f.detector for f in stored.steps[2].findings] == ["failing_run"]
    assert [(d.kind, d.finding) for d in stored.steps[2].decisions] == [("nudge", "failing_run")]
    assert [d.kind for d in stored.steps[0].decisions] == ["remind"]
    assert [d.kind for d in stored.steps[1].decisions] == ["log"]  # the gate's note on an accepted call
    (blocked,) = stored.blocked
    assert blocked.event.action == "rm -rf /testbed" and blocked.at_step == 3
    assert [(d.kind, d.message) for d in blocked.decisions] == [("deny", "refused")]
    assert [d.message for d in stored.decisions] == ["PLAN REMINDER: again"]
    assert stored.steps[-1].scores == s.scores().as_dict()  # type: ignore[union-attr]
    end = stored.end
    assert end is not None and end.letters == "NRRPV" and end.n_steps == 5
    assert end.decision_counts == dict(s.decision_counts)
    assert end.n_model_calls == s.n_model_calls


def test_records_read_back_equal_the_records_written(tmp_path: Path) -> None:
    sink, rec, _ = live(tmp_path)
    stored = read_session(sink.files()[0])
    live_steps = [step for _, step in rec.steps]
    decisions_by_step: dict[int, list[Decision]] = {}
    for r in rec.decisions:
        if r.step is not None and r.item.kind.value not in ("deny",):  # type: ignore[union-attr]
            decisions_by_step.setdefault(r.step, []).append(r.item)  # type: ignore[arg-type]
    for step, got in zip(live_steps, stored.steps, strict=True):
        want = StepRecord.from_json(
            sink.step_json(sink.take(step), decisions_by_step.get(step.index, []), None, got.n_model_calls)
        )
        want.scores = got.scores
        assert got == want


def test_replaying_stored_events_reproduces_the_live_numbers(tmp_path: Path) -> None:
    _, _, s = live(tmp_path)
    (traj,) = [t for t in iter_trajectories(tmp_path) if not isinstance(t, Exception)]
    assert traj.format == "planguard-store" and traj.id == "live-1"
    assert traj.meta["model"] == "gpt-test" and traj.meta["instance_id"] == "repo__1"
    assert traj.meta["blocked"] == 1 and traj.meta["complete"] is True
    replayed = Pipeline().session("replay")
    for ev in traj.events:
        replayed.observe(ev)
    assert replayed.langutory.letters() == s.langutory.letters() == "NRRPV"
    assert replayed.scores() == s.scores()


def test_secrets_are_redacted_and_results_cut(tmp_path: Path) -> None:
    token = "ghp_" + "s" * 36
    # The cut (at 20) goes through the token: it is redacted before the cut, so no prefix of it is kept.
    sink, _, _ = live(tmp_path, result=f"word word {token} and more", max_result_chars=20)
    raw = sink.files()[0].read_text()
    assert token not in raw and "ssss" not in raw
    stored = read_session(sink.files()[0])
    assert stored.steps[0].event.result is not None and stored.steps[0].event.result.startswith("word word")
    assert "truncated" in stored.steps[0].event.result


def test_bad_lines_are_reported_with_file_and_line_and_the_rest_is_read(tmp_path: Path) -> None:
    sink, _, _ = live(tmp_path)
    path = sink.files()[0]
    lines = path.read_text().splitlines()
    lines.insert(2, "{not json")
    lines.insert(4, json.dumps({"type": "step", "index": "three", "event": {"tool": "bash"}}))
    lines.insert(5, json.dumps({"type": "mystery"}))
    path.write_text("\n".join(lines) + "\n")
    stored = read_session(path)
    assert len(stored.steps) == 5 and stored.complete
    msgs = [str(e) for e in stored.errors]
    assert msgs[0].startswith(f"{path}:3: invalid JSON")
    assert msgs[1] == f"{path}:5: 'index' is str; expected the step index (integer)"
    assert msgs[2].startswith(f"{path}:6: 'type' is 'mystery'; expected step, blocked")
    items = list(iter_trajectories(tmp_path))
    assert [type(i).__name__ for i in items] == ["LoadError", "LoadError", "LoadError", "Trajectory"]


def test_loader_hook_reads_already_parsed_lines(tmp_path: Path) -> None:
    from planguard.offline.loaders import LoadError, Trajectory
    from planguard.offline.loaders.planguard_store import is_store_header, trajectories_from_records

    sink, _, s = live(tmp_path)
    lines = [json.loads(x) for x in sink.files()[0].read_text().splitlines()]
    assert is_store_header(lines[0]) and not any(is_store_header(x) for x in lines[1:])
    records: list[Any] = [(i, obj) for i, obj in enumerate(lines, 1)]
    records.insert(3, LoadError(str(sink.files()[0]), "invalid JSON (…)", 99))
    items = list(trajectories_from_records(records, "f.jsonl", "fallback-id"))
    assert [type(i).__name__ for i in items] == ["LoadError", "Trajectory"]
    traj = items[1]
    assert isinstance(traj, Trajectory) and traj.id == "live-1" and traj.source == "f.jsonl"
    # The blocked call comes back where it was attempted, as a denial (not a step), with its model calls.
    assert [(e.call_id, e.blocked) for e in traj.events] == [
        ("c0", None),
        ("c1", None),
        ("c2", None),
        ("rm", "refused"),
        ("c3", None),
        ("c4", None),
    ]
    assert [e.metadata["n_model_calls"] for e in traj.events] == [1, 2, 3, 4, 5, 6]
    assert traj.meta["n_model_calls"] == s.n_model_calls
    (bad,) = trajectories_from_records([(1, {"id": 1})], "x.jsonl", "x")
    assert isinstance(bad, LoadError)
    assert str(bad).startswith("x.jsonl:1: first record is not a session header")


def test_files_that_are_not_sessions(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text('{"id": 1, "steps": []}\n')
    (tmp_path / "b.jsonl").write_text("")
    (tmp_path / "notes.txt").write_text("ignored")
    items = list(iter_sessions(tmp_path))
    assert all(isinstance(i, StoreReadError) for i in items) and len(items) == 2
    assert "not a planguard session file" in str(items[0]) and str(items[0]).startswith(
        str(tmp_path / "a.jsonl")
    )
    assert "empty file" in str(items[1])
    (missing,) = list(iter_sessions(tmp_path / "nope"))
    assert isinstance(missing, StoreReadError) and "no such file" in str(missing)


def test_a_full_queue_drops_and_counts_and_a_dropped_header_is_made_up(tmp_path: Path) -> None:
    gate = threading.Event()
    drops = DropCounter()
    sink = StoreSink(StoreConfig(content=True, path=str(tmp_path), max_queue=3), drops=drops)
    real_write = sink._write
    sink._worker._handle = lambda batch: (gate.wait(10), real_write(batch))  # type: ignore[method-assign]
    s = Pipeline(sinks=(sink,)).session("slow")
    for i in range(20):
        ev = ToolEvent.shell(f"ls {i}")
        s.before_tool(ev)
        s.after_tool(ev)
    assert drops["store_queue_full"] > 0
    gate.set()
    assert sink.flush()
    s2 = Pipeline(sinks=(sink,)).session("later")  # the queue has room again
    s2.observe(ToolEvent.shell("ls"))
    s2.end()
    assert sink.flush()
    sessions = [x for x in iter_sessions(tmp_path) if isinstance(x, StoredSession)]
    assert {x.id for x in sessions} == {"slow", "later"}
    sink.shutdown()


def test_unwritable_directory_counts_a_drop(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    drops = DropCounter()
    sink = StoreSink(StoreConfig(content=True, path=str(blocker / "sessions")), drops=drops)
    s = Pipeline(sinks=(sink,)).session("nowhere")
    s.observe(ToolEvent.shell("ls"))
    s.end()
    assert sink.flush()
    assert drops["store_write_failed"] >= 1
    assert sink.errors.total >= 1


def test_a_record_that_cannot_be_written_costs_only_itself(tmp_path: Path) -> None:
    # Records are written in batches; one unserialisable record must not take its batch-mates with it.
    class Unprintable:
        def __repr__(self) -> str:
            raise RuntimeError("no repr")

        __str__ = __repr__

    drops = DropCounter()
    sink = StoreSink(StoreConfig(content=True, path=str(tmp_path)), drops=drops)
    s = Pipeline(sinks=(sink,)).session("mixed")
    s.observe(ToolEvent.shell("ls a"))
    s.observe(ToolEvent(tool="weird", arguments={"x": Unprintable()}))
    s.observe(ToolEvent.shell("ls b"))
    s.end()
    assert sink.flush()
    stored = read_session(sink.files()[0])
    assert [x.event.action for x in stored.steps] == ["ls a", "ls b"] and stored.end is not None
    assert drops["store_record_failed"] == 1
    assert sink.errors.total == 1
    sink.shutdown()


json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-(10**6), 10**6), st.text(max_size=20))
json_values = st.recursive(
    json_scalars,
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=8), c, max_size=3),
    max_leaves=8,
)
events = st.builds(
    EventRecord,
    tool=st.text(min_size=1, max_size=20),
    arguments=st.one_of(st.text(max_size=40), st.dictionaries(st.text(max_size=8), json_values, max_size=4)),
    call_id=st.none() | st.text(max_size=10),
    action=st.none() | st.text(max_size=40),
    result=st.none() | st.text(max_size=40),
    is_error=st.booleans(),
    exit_code=st.none() | st.integers(-255, 255),
    start_time=st.none() | st.floats(0, 2e9),
    end_time=st.none() | st.floats(0, 2e9),
    metadata=st.dictionaries(st.text(max_size=8), json_values, max_size=3),
)
findings = st.builds(
    FindingRecord,
    detector=st.text(min_size=1, max_size=10),
    first_step=st.integers(0, 99),
    last_step=st.integers(0, 99),
    evidence=st.text(max_size=30),
    data=st.dictionaries(st.text(max_size=8), json_values, max_size=2),
    at_end=st.booleans(),
)
decisions = st.builds(
    DecisionRecord,
    kind=st.sampled_from([k.value for k in DecisionKind]),
    message=st.text(max_size=30),
    policy=st.text(max_size=10),
    finding=st.none() | st.text(max_size=10),
    ephemeral=st.booleans(),
)
steps = st.builds(
    StepRecord,
    index=st.integers(0, 10_000),
    event=events,
    roles=st.lists(st.sampled_from(["L_navigate", "P", "V_regression_test"]), max_size=3),
    letters=st.text("NRPVrv", max_size=3),
    commands=st.lists(st.tuples(st.text(max_size=10), st.text(max_size=10)), max_size=3),
    action=st.none() | st.dictionaries(st.sampled_from(["type", "intent"]), st.text(max_size=10), max_size=2),
    findings=st.lists(findings, max_size=2),
    decisions=st.lists(decisions, max_size=2),
    scores=st.none() | st.fixed_dictionaries({k: st.floats(0, 1) for k in ("PPC", "POC", "PPF", "PC")}),
    n_model_calls=st.integers(0, 1000),
)


@settings(max_examples=200, deadline=None)
@given(steps)
def test_step_records_roundtrip_through_json(record: StepRecord) -> None:
    line = json.dumps(record.to_json(), ensure_ascii=False)
    assert StepRecord.from_json(json.loads(line)) == record


@pytest.mark.parametrize("field", ["index", "event"])
def test_step_record_errors_name_the_key(field: str) -> None:
    good = {"type": "step", "index": 0, "event": {"tool": "bash"}}
    bad = {k: v for k, v in good.items() if k != field}
    with pytest.raises(ValueError, match=f"'{field}'"):
        StepRecord.from_json(bad)


def test_a_cyclic_argument_is_cut_or_costs_only_its_record(tmp_path: Path) -> None:
    cyclic: dict[str, Any] = {"name": "loop"}
    cyclic["self"] = cyclic
    for redact in (True, False):
        drops = DropCounter()
        sink = StoreSink(
            StoreConfig(content=True, path=str(tmp_path / str(redact)), redact=redact), drops=drops
        )
        s = Pipeline(sinks=(sink,)).session("cyclic")
        s.observe(ToolEvent(tool="weird", arguments={"x": cyclic}))
        s.observe(ToolEvent.shell("ls b"))
        s.end()
        assert sink.flush()
        stored = read_session(sink.files()[0])
        assert stored.end is not None and stored.steps[-1].event.action == "ls b"
        if redact:  # redaction copies the value, and cuts it at a fixed depth
            assert len(stored.steps) == 2 and "[REDACTED]" in json.dumps(stored.steps[0].event.arguments)
        else:
            assert len(stored.steps) == 1 and drops["store_record_failed"] == 1
        sink.shutdown()


class GateEverything(Policy):
    """A note at every gate, a denial of ``rm``, a reminder after every call, for overlapping calls."""

    name = "g"

    def before_tool(self, step: Step, session: Session, state: Any) -> Decision | None:
        if "rm -rf" in (step.event.action or ""):
            return Decision(DecisionKind.DENY, f"refused {step.event.call_id}", self.name)
        return Decision(DecisionKind.LOG, f"gate {step.event.call_id}", self.name)

    def after_tool(self, step: Step, session: Session, state: Any) -> list[Decision]:
        return [Decision(DecisionKind.REMIND, f"after {step.event.call_id}", self.name)]


@settings(max_examples=60, deadline=None)
@given(order=st.permutations(["s0", "s1", "s2", "e0", "e1", "e2", "rm"]))
def test_overlapping_calls_keep_their_own_decisions_in_order(tmp_path_factory: Any, order: list[str]) -> None:
    """Calls started before others end (parallel tool calls), in any interleaving, with a denied call among
    them: each step record holds its gate's note, then its after-call reminder, and nothing else."""
    path = tmp_path_factory.mktemp("overlap")
    sink = StoreSink(StoreConfig(content=True, path=str(path)))
    s = Pipeline(policies=(GateEverything(),), sinks=(sink,)).session("overlap")
    events = {f"c{i}": ToolEvent.shell(f"cat /testbed/f{i}.py", call_id=f"c{i}") for i in range(3)}
    started: set[str] = set()
    for op in order:
        if op == "rm":
            assert s.before_tool(ToolEvent.shell("rm -rf /testbed", call_id="rm")).blocks
            continue
        cid = f"c{op[1]}"
        if op[0] == "s":
            s.before_tool(events[cid])
            started.add(cid)
        elif cid in started:
            events[cid].result = "ok"
            s.after_tool(events[cid])
    s.end()  # calls that never got a result are finished here
    assert sink.flush()
    stored = read_session(sink.files()[0])
    for step in stored.steps:
        call_id = step.event.call_id
        want = [("log", f"gate {call_id}")] + ([("remind", f"after {call_id}")] if call_id in started else [])
        assert [(d.kind, d.message) for d in step.decisions] == want
    (blocked,) = stored.blocked
    assert [(d.kind, d.message) for d in blocked.decisions] == [("deny", "refused rm")]
    sink.shutdown()


@pytest.mark.parametrize("redact", [True, False])
def test_a_lone_surrogate_is_kept_escaped_not_dropped(tmp_path: Path, redact: bool) -> None:
    # A model's JSON may escape a lone surrogate ("\ud800"), which UTF-8 cannot carry: the record is written
    # with its non-ASCII characters escaped, and reads back as it was.
    drops = DropCounter()
    sink = StoreSink(StoreConfig(content=True, path=str(tmp_path), redact=redact), drops=drops)
    s = Pipeline(sinks=(sink,)).session("odd-\udc80-id")
    text = "naïve \ud800 lone"
    s.observe(ToolEvent(tool="write", arguments={"content": text}, result="ok \udfff"))
    s.observe(ToolEvent.shell("ls ü"))
    s.end()
    assert sink.flush()
    stored = read_session(sink.files()[0])
    assert not stored.errors and stored.complete and drops.total == 0
    assert stored.id == "odd-\udc80-id"
    assert stored.steps[0].event.arguments == {"content": text}
    assert stored.steps[0].event.result == "ok \udfff"
    assert stored.steps[1].event.action == "ls ü"
    sink.shutdown()


def test_a_key_json_cannot_write_is_kept_as_text(tmp_path: Path) -> None:
    # Only a Python-made event can carry one (tool arguments from a model are JSON); with redaction off
    # nothing else turns keys into text, and the record used to be dropped.
    drops = DropCounter()
    sink = StoreSink(StoreConfig(content=True, path=str(tmp_path), redact=False), drops=drops)
    s = Pipeline(sinks=(sink,)).session("keys")
    s.observe(ToolEvent(tool="python_tool", arguments={(1, 2): "pair", "n": {3: "three"}}))
    s.end()
    assert sink.flush()
    stored = read_session(sink.files()[0])
    assert drops.total == 0 and not stored.errors
    assert stored.steps[0].event.arguments == {"(1, 2)": "pair", "n": {"3": "three"}}
    sink.shutdown()


def test_decisions_of_calls_that_never_end_stay_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An integration whose results never match their calls leaves every gated call pending: the session
    forgets the oldest past ``MAX_PENDING``, and the sink keeps the gate decisions of at most
    ``MAX_OPEN_CALLS`` of them. The calls the session still holds are finished at its end and written with
    their decisions, as before the bound."""
    from planguard import session as session_module
    from planguard import sinks

    monkeypatch.setattr(session_module, "MAX_PENDING", 3)
    monkeypatch.setattr(sinks, "MAX_OPEN_CALLS", 3)
    sink = StoreSink(StoreConfig(content=True, path=str(tmp_path)))
    s = Pipeline(policies=(GateEverything(),), sinks=(sink,)).session("orphans")
    n = 8
    for i in range(n):
        assert not s.before_tool(ToolEvent.shell(f"cat /testbed/f{i}.py", call_id=f"c{i}")).blocks
        ((_, st),) = s.sink_states
        assert len(st.decisions) <= 3
    s.end()
    assert sink.flush()
    stored = read_session(sink.files()[0])
    assert [(step.index, [(d.kind, d.message) for d in step.decisions]) for step in stored.steps] == [
        (i, [("log", f"gate c{i}"), ("remind", f"after c{i}")]) for i in range(n - 3, n)
    ]
    sink.shutdown()
