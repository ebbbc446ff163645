"""TraceProbe's structural detectors on crafted sequences: at, just below and just above each frozen
threshold, reset and re-fire, and the tool-surface gating. Everything runs through a real Session."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from planguard.actions import classify_action
from planguard.detectors import (
    DetectorsConfig,
    NoTailValidation,
    PlanAbsence,
    RedundantSearch,
    RereadChurn,
    SearchLoop,
    ShellOverTool,
    ToolOscillation,
    UnsupportedCompletion,
    build_detectors,
    default_detectors,
)
from planguard.events import ToolEvent
from planguard.findings import Finding
from planguard.session import Pipeline
from planguard.stages import Detector


def replay(detector: Detector, events: Sequence[ToolEvent], **meta: Any) -> list[tuple[int | None, Finding]]:
    """(step index the finding came with — None for end-of-run —, finding) for every finding."""
    pipe = Pipeline(actions=classify_action, detectors=(detector,))
    s = pipe.session("t", **meta)
    out: list[tuple[int | None, Finding]] = []
    for e in events:
        step = s.observe(e)
        out.extend((step.index, f) for f in step.findings)
    summary = s.end()
    out.extend((None, f) for f in summary.findings if f.at_end)
    assert pipe.errors.total == 0, pipe.errors.counts
    return out


def sh(cmd: str, **kw: Any) -> ToolEvent:
    return ToolEvent.shell(cmd, **kw)


def reads(n: int, start: int = 0) -> list[ToolEvent]:
    return [sh(f"cat pkg/f{start + i}.py") for i in range(n)]


# ------------------------------------------------------------------------------------------ search loop


def test_search_loop_threshold() -> None:
    assert replay(SearchLoop(), reads(9)) == []
    ((at, f),) = replay(SearchLoop(), reads(10))
    assert (at, f.first_step, f.last_step, f.detector) == (9, 0, 9, "search_loop")
    assert f.data == {"count": 10, "searches": 0, "reads": 10}
    ((at, f),) = replay(SearchLoop(), reads(11))  # above: still one finding, at the 10th action
    assert at == 9


def test_search_loop_counts_searches_resets_on_write_or_validation_and_refires() -> None:
    # TraceProbe: "At least 10 consecutive SEARCH or FILE READ actions": a navigation or another command
    # between them ends the streak (the looser strict=False reading lets only writes and validation runs).
    mixed = [sh(f"grep -rn x{i} .") if i % 2 else sh(f"cat f{i}.py") for i in range(6)]
    events = [*mixed, sh("ls"), sh("pip list"), *reads(4, 10)]
    assert replay(SearchLoop(), events) == []
    ((at, f),) = replay(SearchLoop(strict=False), events)
    assert (at, f.first_step, f.data["searches"]) == (11, 0, 3)
    consecutive = [*mixed, ToolEvent(tool="think", arguments={"thought": "t"}), *reads(4, 10)]
    ((at, f),) = replay(SearchLoop(), consecutive)  # a reasoning-only step is not an action
    assert (at, f.first_step, f.data["count"]) == (10, 0, 10)
    broken = [*reads(9), sh("echo x > a.py"), *reads(9)]
    assert replay(SearchLoop(), broken) == []
    validated = [*reads(9), sh("python reproduce.py"), *reads(9)]
    assert replay(SearchLoop(), validated) == []
    refire = [*reads(12), sh("sed -i 's/a/b/' a.py"), *reads(10)]
    assert [at for at, _ in replay(SearchLoop(), refire)] == [9, 22]


# ----------------------------------------------------------------------------------------- re-read churn


def test_reread_churn_sees_rm_of_several_files_as_a_write_to_each() -> None:
    b = sh("cat pkg/b.py")
    assert replay(RereadChurn(), [b, b, sh("rm pkg/a.py pkg/b.py"), b]) == []
    assert len(replay(RereadChurn(), [b, b, sh("rm pkg/a.py pkg/c.py"), b])) == 1


def test_reread_churn_threshold_and_window() -> None:
    a, other = sh("cat pkg/a.py"), sh("ls")
    assert replay(RereadChurn(), [a, a]) == []
    ((at, f),) = replay(RereadChurn(), [a, a, a])
    assert (at, f.first_step, f.data["steps"]) == (2, 0, [0, 1, 2])
    assert len(replay(RereadChurn(), [a] * 8)) == 1  # above: once
    # window of 10 actions: reads at 0, 5, 9 are inside one window; at 0, 5, 10 they are not
    assert len(replay(RereadChurn(), [a, *[other] * 4, a, *[other] * 3, a])) == 1
    assert replay(RereadChurn(), [a, *[other] * 4, a, *[other] * 4, a]) == []
    # structured views of the same file with different ranges are re-reads of the same path
    view = [
        ToolEvent(
            tool="str_replace_editor",
            arguments={"command": "view", "path": "/testbed/pkg/a.py", "view_range": [i, i + 10]},
        )
        for i in range(3)
    ]
    assert len(replay(RereadChurn(), [*view])) == 1


def test_reread_churn_write_in_between_and_refire() -> None:
    a = sh("cat pkg/a.py")
    write = sh("sed -i 's/x/y/' pkg/a.py")
    assert replay(RereadChurn(), [a, a, write, a]) == []
    assert replay(RereadChurn(), [a, write, a, a]) == []
    assert len(replay(RereadChurn(), [a, write, a, a, a])) == 1
    # reset when the count drops below the threshold, then fires again
    others = [sh(f"ls d{i}") for i in range(10)]
    assert [at for at, _ in replay(RereadChurn(), [a, a, a, *others, a, a, a])] == [2, 15]
    # another file's write does not reset this one
    assert len(replay(RereadChurn(), [a, a, sh("sed -i 's/x/y/' pkg/b.py"), a])) == 1


# ------------------------------------------------------------------------------------------ oscillation


def _r() -> ToolEvent:
    return sh("cat pkg/a.py", exit_code=0)


def _w_fail() -> ToolEvent:
    return sh("sed -i 's/x/y/' pkg/a.py", exit_code=2)


def _w_whole(n: int) -> ToolEvent:
    return sh(f"echo v{n} > pkg/a.py", exit_code=0)


def test_tool_oscillation_with_failed_writes() -> None:
    assert replay(ToolOscillation(), [_r(), _w_fail(), _r()]) == []  # one bad cycle: below
    ((at, f),) = replay(ToolOscillation(), [_r(), _w_fail(), _r(), _w_fail(), _r()])
    assert (at, f.first_step, f.last_step, f.data["cycles"]) == (4, 0, 4, 2)
    above = [_r(), _w_fail(), _r(), _w_fail(), _r(), _w_fail(), _r()]
    assert [at for at, _ in replay(ToolOscillation(), above)] == [4]
    good = [
        _r(),
        sh("sed -i 's/x/y/' pkg/a.py", exit_code=0),
        _r(),
        sh("sed -i 's/q/r/' pkg/a.py", exit_code=0),
        _r(),
    ]
    assert replay(ToolOscillation(), good) == []  # successful, surviving writes are not oscillation


def test_tool_oscillation_with_reverted_writes_fires_when_the_revert_is_known() -> None:
    events = [_r(), _w_whole(1), _r(), _w_whole(2), _r(), _w_whole(3)]
    ((at, f),) = replay(ToolOscillation(), events)
    assert at == 5 and "reverted" in f.evidence  # step 5 overwrites step 3: the second cycle turns bad
    assert replay(ToolOscillation(), events[:5]) == []
    assert len(replay(ToolOscillation(cycles=1), events[:5])) == 1


# ------------------------------------------------------------------------------------- redundant search


def test_redundant_search_threshold_window_and_normalisation() -> None:
    g = sh('grep -rn "def f" /testbed/pkg')
    same = sh("grep -rn 'def f'   pkg")  # same normalised query and scope
    other = sh('grep -rn "def g" /testbed/pkg')
    assert replay(RedundantSearch(), [g, other]) == []
    ((at, f),) = replay(RedundantSearch(), [g, same])
    assert (at, f.first_step, f.data["query"]) == (1, 0, "def f @ pkg")
    assert len(replay(RedundantSearch(), [g, g, g, g])) == 1
    fill = [sh(f"cat f{i}.py") for i in range(9)]
    assert replay(RedundantSearch(), [g, *fill, g]) == []  # 10 actions apart: outside the window
    assert len(replay(RedundantSearch(), [g, *fill[:8], g])) == 1
    assert [at for at, _ in replay(RedundantSearch(), [g, g, *fill, *fill, g, g])] == [1, 21]
    assert len(replay(RedundantSearch(repeats=3), [g, g, g])) == 1
    assert replay(RedundantSearch(repeats=3), [g, g]) == []


# --------------------------------------------------------------------------------------- plan absence


def _cc_write(i: int) -> ToolEvent:
    return ToolEvent(
        tool="Edit", arguments={"file_path": f"/p/f{i}.py", "old_string": "a", "new_string": "b"}
    )


def test_plan_absence_only_where_a_plan_tool_exists() -> None:
    assert replay(PlanAbsence(), [_cc_write(i) for i in range(4)]) == []
    ((at, f),) = replay(PlanAbsence(), [_cc_write(i) for i in range(5)])
    assert (at, f.first_step, f.data["writes"]) == (4, 0, 5)
    assert len(replay(PlanAbsence(), [_cc_write(i) for i in range(9)])) == 1
    planned = [ToolEvent(tool="TodoWrite", arguments={"todos": []}), *[_cc_write(i) for i in range(6)]]
    assert replay(PlanAbsence(), planned) == []
    late_plan = [
        *[_cc_write(i) for i in range(3)],
        ToolEvent(tool="TodoWrite", arguments={}),
        *[_cc_write(i) for i in range(3)],
    ]
    assert replay(PlanAbsence(), late_plan) == []
    # SWE-agent / mini-swe-agent have no plan tool: never fires, unless configured otherwise
    swe = [ToolEvent.shell(f"echo x > f{i}.py") for i in range(6)]
    assert replay(PlanAbsence(), swe) == []
    assert len(replay(PlanAbsence(scaffold="claude-code"), swe)) == 1


# ------------------------------------------------------------------------------------- shell over tool


def _bash(cmd: str) -> ToolEvent:
    return ToolEvent(tool="Bash", arguments={"command": cmd})


def test_shell_over_tool_in_claude_code() -> None:
    ((at, f),) = replay(ShellOverTool(), [_bash("cat a.py")])
    assert (at, f.data["command"]) == (0, "cat")
    # once per episode: repeats stay quiet until a structured tool is used, then it can fire again
    events = [
        _bash("cat a.py"),
        _bash("grep -rn x ."),
        ToolEvent(tool="Read", arguments={"file_path": "a.py"}),
        _bash("cd /p && rg x"),
        _bash("python x.py"),
    ]
    assert [at for at, _ in replay(ShellOverTool(), events)] == [0, 3]
    assert replay(ShellOverTool(), [_bash("pytest -q"), _bash("ls"), _bash("git diff")]) == []


def test_shell_over_tool_follows_the_scaffolds_surface() -> None:
    # mini-swe-agent: only bash exists
    assert replay(ShellOverTool(), [sh("cat a.py"), sh("grep -r x .")]) == []
    # SWE-agent: a structured viewer but no structured search
    view = sh("str_replace_editor view /testbed/a.py")
    events = [view, sh("grep -rn x /testbed"), sh("find . -name '*.py'"), sh("head -20 a.py")]
    assert [at for at, _ in replay(ShellOverTool(), events)] == [3]
    # SWE-agent 0.x has both
    assert [at for at, _ in replay(ShellOverTool(), [sh("open a.py"), sh("grep -r x .")])] == [1]
    # configured scaffold applies from the first call
    assert len(replay(ShellOverTool(scaffold="swe-agent"), [sh("cat a.py")])) == 1


# ----------------------------------------------------------------------------------- end-of-run checks


SRC = "sed -i 's/x/y/' pkg/mod.py"


def test_no_tail_validation_threshold() -> None:
    other = [sh(f"cat f{i}.py") for i in range(6)]
    ((at, f),) = replay(NoTailValidation(), [sh(SRC), *other[:5]])
    assert at is None and f.at_end and (f.first_step, f.last_step) == (0, 5)
    # a validation among the final 5 actions after the write: just inside
    assert replay(NoTailValidation(), [sh(SRC), sh("pytest -q"), *other[:4]]) == []
    # one action earlier it is outside the final 5: fires
    assert len(replay(NoTailValidation(), [sh(SRC), sh("pytest -q"), *other[:5]])) == 1
    # a validation before the last source write does not count
    assert len(replay(NoTailValidation(), [sh("pytest -q"), sh(SRC)])) == 1
    # nothing written, nothing to validate; test-file writes are not source writes
    assert replay(NoTailValidation(), other) == []
    assert replay(NoTailValidation(), [sh("echo x > test_x.py"), *other]) == []
    assert len(replay(NoTailValidation(tail=2), [sh(SRC), sh("pytest"), *other[:2]])) == 1


def test_no_tail_validation_ignores_submission_artifacts() -> None:
    # mini-swe-agent's standard submission after a tested fix: the patch file it writes and shows, and the
    # completion echo, hand the result in; they are no source write and not among the final 5 actions.
    submit = [
        sh("cd /testbed && git add -A && git diff --cached > patch.txt"),
        sh("cat patch.txt"),
        sh("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"),
    ]
    work = [sh(SRC), sh("pytest -q"), sh("cat pkg/a.py"), sh("cat pkg/b.py"), sh("cat pkg/c.py")]
    assert replay(NoTailValidation(), [*work, *submit]) == []
    assert replay(NoTailValidation(), [*work, sh("git diff > /tmp/model.patch")]) == []
    # without the test run, the submission does not hide the missing validation
    ((_, f),) = replay(NoTailValidation(), [sh(SRC), *work[2:], *submit])
    assert f.data["last_source_write"] == 0
    # a restore is a source write, not an artifact
    assert len(replay(NoTailValidation(), [*work, sh("git checkout -- pkg/mod.py")])) == 1


def test_unsupported_completion_is_not_judged_without_tool_calls() -> None:
    # A chat transcript (no tool calls) claims nothing about work it did not do.
    assert replay(UnsupportedCompletion(), [], final_text="Done! I have fixed it.") == []
    assert len(replay(UnsupportedCompletion(), [sh("ls")], final_text="Done! I have fixed it.")) == 1


def test_unsupported_completion_claim() -> None:
    done = {"final_text": "I have fixed the issue."}
    ((at, f),) = replay(UnsupportedCompletion(), [sh(SRC)], **done)
    assert at is None and f.at_end and f.data["claim"] == "fixed"
    assert replay(UnsupportedCompletion(), [sh(SRC), sh("pytest -q", exit_code=0)], **done) == []
    assert len(replay(UnsupportedCompletion(), [sh(SRC), sh("pytest -q", exit_code=1)], **done)) == 1
    assert len(replay(UnsupportedCompletion(), [sh("pytest -q", exit_code=0), sh(SRC)], **done)) == 1
    # word boundary, case-insensitive
    assert replay(UnsupportedCompletion(), [sh(SRC)], final_text="Prefixed the names; undone later?") == []
    assert len(replay(UnsupportedCompletion(), [sh(SRC)], final_text="RESOLVED.")) == 1
    assert replay(UnsupportedCompletion(), [sh(SRC)]) == []  # no final text: nothing claimed
    # the final text can come from the run's own finish / think action
    finish = ToolEvent(tool="finish", arguments={"message": "All done!"})
    assert len(replay(UnsupportedCompletion(), [sh(SRC), finish])) == 1


# ------------------------------------------------------------------------------------- configuration


def test_default_and_configured_detector_sets() -> None:
    names = [d.name for d in default_detectors()]
    assert names == [
        "effects",
        "search_loop",
        "reread_churn",
        "tool_oscillation",
        "redundant_search",
        "plan_absence",
        "shell_over_tool",
        "repeated_call",
        "no_tail_validation",
        "unsupported_completion",
        "todo_done_without_work",
    ]
    cfg = DetectorsConfig.model_validate(
        {"search_loop": {"threshold": 3}, "reread_churn": {"enabled": False}}
    )
    dets = build_detectors(cfg, scaffold="claude-code")
    assert "reread_churn" not in [d.name for d in dets]
    loop = next(d for d in dets if isinstance(d, SearchLoop))
    assert loop.threshold == 3
    assert build_detectors(DetectorsConfig(enabled=False)) == []
    with pytest.raises(ValueError, match="threshold"):
        DetectorsConfig.model_validate({"search_loop": {"threshold": 0}})
    with pytest.raises(ValueError):
        DetectorsConfig.model_validate({"search_loop": {"treshold": 3}})
    with pytest.raises(ValueError, match="regular expression"):
        DetectorsConfig.model_validate({"unsupported_completion": {"pattern": "("}})


def test_detectors_classify_themselves_without_an_action_stage() -> None:
    pipe = Pipeline(detectors=(SearchLoop(3),))  # no actions= stage
    s = pipe.session("t")
    for e in reads(3):
        s.observe(e)
    assert s.summary().finding_counts == {"search_loop": 1}
