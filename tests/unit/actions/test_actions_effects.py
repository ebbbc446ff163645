"""Effect labels: failure from outcomes, survived/reverted writes, justified/off-anchor reads, the stage."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from planguard.actions import (
    AnchorSet,
    Effect,
    EffectLabeler,
    WriteLedger,
    classify_action,
    label_effects,
    outcome_failed,
)
from planguard.actions.effects import _TAIL_FAILURE, _judge
from planguard.actions.types import ActionType
from planguard.detectors import EffectTracker, set_anchors
from planguard.events import ToolEvent
from planguard.offline.loaders import iter_trajectories
from planguard.session import Pipeline


def ev(cmd: str, result: str | None = None, exit_code: int | None = None, **kw: object) -> ToolEvent:
    return ToolEvent.shell(cmd, result=result, exit_code=exit_code, **kw)


def editor(sub: str, path: str, result: str | None = None, **args: str) -> ToolEvent:
    return ToolEvent(
        tool="str_replace_editor", arguments={"command": sub, "path": path, **args}, result=result
    )


def failed(event: ToolEvent) -> bool:
    return outcome_failed(classify_action(event), event)


def test_failure_from_flags_exit_codes_and_output() -> None:
    assert failed(ev("pytest", exit_code=1))
    assert not failed(ev("pytest", "Traceback (most recent call last):", exit_code=0))  # exit code wins
    assert failed(ToolEvent(tool="Read", arguments={"file_path": "x"}, is_error=True))
    # no exit status recorded (SWE-agent): the tool's own messages decide
    assert failed(ev("python reproduce.py", "x\nTraceback (most recent call last):\n  File ..."))
    assert failed(ev("pytest -q", "....F\n1 failed, 4 passed in 0.2s"))
    assert not failed(ev("pytest -q", "5 passed in 0.2s"))
    assert failed(ev("cat nope.py", "cat: nope.py: No such file or directory"))
    assert failed(
        editor(
            "str_replace",
            "/testbed/a.py",
            "No replacement was performed, old_str `x` did not appear verbatim in /testbed/a.py.",
            old_str="x",
            new_str="y",
        )
    )
    assert failed(
        editor("view", "/testbed/a.py", "The path /testbed/a.py does not exist. Please provide a valid path.")
    )
    # a file's content may say anything
    ok_view = "Here's the result of running `cat -n` on /testbed/a.py:\n 1\traise Error('not found')\n"
    assert not failed(editor("view", "/testbed/a.py", ok_view))
    assert not failed(ToolEvent(tool="think", arguments={"thought": "Traceback (most recent call last)"}))


def test_write_ledger_reverts() -> None:
    ledger = WriteLedger()
    edit = classify_action(editor("str_replace", "/testbed/a.py", old_str="x = 1", new_str="x = 2"))
    other = classify_action(editor("str_replace", "/testbed/a.py", old_str="y = 1", new_str="y = 2"))
    back = classify_action(editor("str_replace", "/testbed/a.py", old_str="x = 2", new_str="x = 1"))
    assert ledger.record(0, edit) == []
    assert ledger.record(1, other) == []  # an unrelated edit of the same file keeps the first
    reverted = ledger.record(2, back)  # rewrites exactly what step 0 put there
    assert reverted == [0]
    assert ledger.survives("a.py")
    whole = classify_action(ev("cat > /testbed/a.py <<'EOF'\nnew\nEOF"))
    assert ledger.record(3, whole) == [1, 2]  # a whole-file write replaces all live ones
    undo = classify_action(editor("undo_edit", "/testbed/a.py"))
    assert ledger.record(4, undo) == [3]
    assert not ledger.survives("a.py")
    checkout = classify_action(ev("git checkout -- b.py"))
    ledger.record(5, classify_action(ev("sed -i 's/a/b/' b.py")))
    ledger.record(6, classify_action(ev("sed -i 's/c/d/' b.py")))
    assert ledger.record(7, checkout) == [5, 6]


def test_ledger_is_bounded() -> None:
    ledger = WriteLedger(max_files=4, per_file=2)
    for i in range(100):
        ledger.record(i, classify_action(ev(f"sed -i 's/a{i}/b/' f{i % 10}.py")))
    assert len(ledger.files) <= 4 and all(len(v) <= 2 for v in ledger.files.values())


def test_labels_without_anchors() -> None:
    events = [
        ev("cat pkg/mod.py", "code"),  # 0 read, relevance unknown yet
        ev("grep -rn f pkg", "pkg/mod.py:1:f"),  # 1 search
        editor(
            "str_replace",
            "/testbed/pkg/mod.py",
            "The file /testbed/pkg/mod.py has been edited.",
            old_str="a",
            new_str="b",
        ),  # 2 write
        ev("cat pkg/mod.py", "code"),  # 3 read of a written file
        ev("python reproduce.py", "ok"),  # 4 validation
        ev("python reproduce.py", "Traceback (most recent call last):"),  # 5 failed validation
        ev("pip install x", "ok"),  # 6 other command
        ev("ls", "a b"),  # 7 navigation
        ToolEvent(tool="TodoWrite", arguments={"todos": []}),  # 8 plan
        ToolEvent(tool="think", arguments={"thought": "t"}),  # 9
        editor("create", "/testbed/pkg/other.py", "File created successfully", file_text="x"),  # 10
        editor("create", "/testbed/pkg/other.py", "File created successfully", file_text="y"),  # 11 overwrite
    ]
    labels = label_effects([classify_action(e) for e in events], events)
    assert labels == [
        Effect.JUSTIFIED,  # re-labelled at the end: the run kept a write to pkg/mod.py
        Effect.JUSTIFIED,  # a search that hit pkg/mod.py (its output names it): re-labelled at the end
        Effect.SURVIVED,
        Effect.JUSTIFIED,
        Effect.JUSTIFIED,
        Effect.FAILED,
        Effect.NEUTRAL,
        Effect.RECORDED,
        Effect.RECORDED,
        Effect.REASONING,
        Effect.REVERTED,
        Effect.SURVIVED,
    ]


def test_a_search_is_justified_when_it_hits_a_task_relevant_file() -> None:
    # TraceProbe: "An action is justified when it reads or searches a task-relevant file"; without a gold
    # patch, task relevance comes from the run's surviving writes.
    events = [
        ev("grep -rn divide src", "src/calc.py:3:def divide(a, b):"),  # 0 hits calc.py, written later
        ev("grep -rn nothing src", "src/util.py:1:nothing"),  # 1 hits only util.py, never written
        editor("str_replace", "/testbed/src/calc.py", "The file has been edited.", old_str="a", new_str="b"),
        ev("grep -rn divide src", "src/calc.py:3:def divide(a, b):"),  # 3 hits a file already kept
        editor("create", "/testbed/src/tmp.py", "File created successfully", file_text="x"),  # 4
        editor("create", "/testbed/src/tmp.py", "File created successfully", file_text="y"),  # 5 overwrites 4
        ev("grep -rn x src/tmp.py", "src/tmp.py:1:x"),  # 6 scope is a kept file
        ev("grep -rn y src", ""),  # 7 found nothing
    ]
    labels = label_effects([classify_action(e) for e in events], events)
    assert [labels[i] for i in (0, 1, 3, 6, 7)] == [
        Effect.JUSTIFIED,
        Effect.NEUTRAL,
        Effect.JUSTIFIED,
        Effect.JUSTIFIED,
        Effect.NEUTRAL,
    ]


def test_rm_of_several_files_is_a_write_to_each() -> None:
    # TraceProbe labels a write per file a call changes: ``rm a b c`` deletes (reverts) each one.
    events = [
        editor("create", "/testbed/a.py", "File created successfully", file_text="x"),
        editor("create", "/testbed/b.py", "File created successfully", file_text="x"),
        editor("create", "/testbed/c.py", "File created successfully", file_text="x"),
        ev("rm a.py b.py c.py", ""),
    ]
    actions = [classify_action(e) for e in events]
    assert (actions[3].target, actions[3].also_written) == ("a.py", ("b.py", "c.py"))
    assert label_effects(actions, events) == [Effect.REVERTED] * 3 + [Effect.SURVIVED]


def test_labels_with_anchors() -> None:
    anchors = AnchorSet.parse("pkg/mod.py")
    labeler = EffectLabeler(anchors)
    e = ev("cat /testbed/pkg/mod.py", "x")
    assert labeler.label(0, classify_action(e), e) is Effect.JUSTIFIED
    e = ev("cat /testbed/pkg/other.py", "x")
    assert labeler.label(1, classify_action(e), e) is Effect.OFF_ANCHOR
    e = ev("grep -rn needle /testbed", "pkg/mod.py:3: needle")  # the search found an anchor file
    assert labeler.label(2, classify_action(e), e) is Effect.JUSTIFIED
    e = ev("grep -rn needle /testbed/docs", "docs/x.rst:1: needle")
    assert labeler.label(3, classify_action(e), e) is Effect.OFF_ANCHOR
    e = ev("cat /testbed/missing.py", "cat: /testbed/missing.py: No such file or directory")
    assert labeler.label(4, classify_action(e), e) is Effect.FAILED


def test_revisions_are_bounded() -> None:
    labeler = EffectLabeler(max_revisions=3)
    for i in range(20):
        e = ev(f"echo {i} > a.py")
        labeler.label(i, classify_action(e), e)
    assert len(labeler.revisions) == 3


def test_effect_tracker_stage_in_a_session() -> None:
    pipe = Pipeline(actions=classify_action, detectors=(EffectTracker(),))
    s = pipe.session("t")
    assert set_anchors(s, "diff --git a/pkg/mod.py b/pkg/mod.py\n+++ b/pkg/mod.py\n")
    steps = [
        s.observe(e)
        for e in (
            ev("cat /testbed/pkg/mod.py", "x"),
            ev("cat docs.txt", "y"),
            ev("echo a > pkg/mod.py"),
            ev("echo b > pkg/mod.py"),
        )
    ]
    state = s.facts("effects")
    assert state is not None
    assert [state.effect_of(i) for i in range(4)] == [
        Effect.JUSTIFIED,
        Effect.OFF_ANCHOR,
        Effect.REVERTED,
        Effect.SURVIVED,
    ]
    if "effect" in getattr(type(steps[0]), "__slots__", ()) or hasattr(steps[0], "effect"):
        assert [st.effect for st in steps] == [  # type: ignore[attr-defined]
            Effect.JUSTIFIED,
            Effect.OFF_ANCHOR,
            Effect.REVERTED,
            Effect.SURVIVED,
        ]
    s.end()
    m = {x.name: x for x in state.milestone_result()}
    assert (m["M1"].step, m["M2"].step, m["M3"].step, m["M5"].step) == (0, 2, 2, 0)
    assert not m["M4"].reached and m["M4"].censored_at == 4
    assert pipe.errors.total == 0
    assert not set_anchors(Pipeline().session("x"), ["a.py"])


def test_real_runs_get_sane_effect_profiles(shared: Path) -> None:
    """The 81 SWE-agent runs: every non-reasoning step has a label, writes mostly survive, and the
    editor refusals in the corpus are FAILED."""
    from collections import Counter

    totals: Counter[Effect] = Counter()
    refusals = 0
    for t in iter_trajectories([shared / "data" / "swe-agent" / "trajectories.jsonl"]):
        actions = [classify_action(e) for e in t.events]  # type: ignore[union-attr]
        labels = label_effects(actions, t.events)  # type: ignore[union-attr]
        totals.update(labels)
        for e, lab in zip(t.events, labels, strict=True):  # type: ignore[union-attr]
            if (e.result or "").startswith("No replacement was performed"):
                refusals += 1
                assert lab is Effect.FAILED
    assert refusals > 0
    assert totals[Effect.SURVIVED] > totals[Effect.REVERTED] > 0
    assert totals[Effect.JUSTIFIED] > totals[Effect.FAILED] > 0


def test_revisions_update_step_objects_in_place() -> None:
    """What the pipeline's Step gets once it has an ``effect`` field: provisional labels become final."""

    class Ref:
        effect: Effect | None = None

    labeler = EffectLabeler()
    events = [ev("cat a.py", "x"), ev("echo 1 > a.py"), ev("echo 2 > a.py")]
    refs = [Ref() for _ in events]
    for i, (e, r) in enumerate(zip(events, refs, strict=True)):
        r.effect = labeler.label(i, classify_action(e), e, r)
    assert [r.effect for r in refs] == [Effect.NEUTRAL, Effect.REVERTED, Effect.SURVIVED]
    labeler.finish()
    assert [r.effect for r in refs] == [Effect.JUSTIFIED, Effect.REVERTED, Effect.SURVIVED]


_GATE = ("Error", "ERROR", "ailed", "FAILED", "Exception", "Killed", "timed out", "Segmentation", "Traceback")
_OUTPUT_BITS = [
    *_GATE,
    *"EFKST",
    "ailed",
    "3 failed",
    " error in ",
    "2 errors in ",
    "= FAILURES =",
    "\n",
    " ",
    "Killed",
    "\nKilled",
    "ValueError: x",
    "FAILED (",
    "Segmentation fault",
    "ERROR collecting",
    "x",
    "_",
    "Traceback (most recent call last)",
    "No such file or directory",
    "command not found",
]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_OUTPUT_BITS), min_size=1, max_size=16).map("".join) | st.text(min_size=1))
def test_command_output_judgement_is_the_gated_regex(result: str) -> None:
    """A command's output fails: a head message, or one of nine keywords in the tail and the tail
    regex (the one-letter pre-tests in ``_judge`` only skip keyword searches that cannot succeed)."""
    head = result[:160]
    tail = result[-400:]
    expected = (
        "No such file or directory" in head
        or "command not found" in head
        or "Traceback (most" in head
        or (any(k in tail for k in _GATE) and _TAIL_FAILURE.search(tail) is not None)
    )
    assert _judge(ActionType.COMMAND, False, result) == expected


def test_a_live_session_keeps_no_finished_step_alive() -> None:
    """Reads of files not written yet wait for the end of the run, and writes wait for a revert; neither
    keeps the step, which carries the call's whole result, alive once the caller has let it go. A replay,
    which holds its steps, still sees them re-labelled in place."""
    import gc
    import weakref

    from planguard.actions import Effect
    from planguard.detectors import default_detectors

    def events() -> list[ToolEvent]:
        out = [ToolEvent.shell(f"cat /testbed/src/m{i}.py", result="x" * 100_000) for i in range(20)]
        out.append(ToolEvent.shell("sed -i 's/a/b/' /testbed/src/m0.py", exit_code=0))
        return out

    session = Pipeline(detectors=default_detectors()).session("live")
    steps = []
    for ev in events():
        session.before_tool(ev)
        steps.append(weakref.ref(session.after_tool(ev)))
    gc.collect()
    assert sum(r() is not None for r in steps) <= 1  # the session's last step
    replay = Pipeline(detectors=default_detectors()).session("replay")
    kept = [replay.observe(ev) for ev in events()]  # held by the caller, as a replay holds them
    assert kept[0].effect is Effect.NEUTRAL  # provisional: its file may be written later
    replay.end()
    assert kept[0].effect is Effect.JUSTIFIED  # it was, and the write survived
