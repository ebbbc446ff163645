"""Real trajectories: every shared native-format file replays through the full session (actions, phases,
metrics, all detectors) with the action types and findings pinned after inspection, and each detector
fires on at least one real run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from planguard.actions import classify_action
from planguard.detectors import PlanAbsence, RepeatedCall, default_detectors
from planguard.offline.loaders import Trajectory, iter_trajectories
from planguard.session import Pipeline, SessionSummary
from planguard.stages import Detector
from planguard.step import Step

LETTER = {
    "FILE_READ": "r",
    "FILE_WRITE": "w",
    "SEARCH": "s",
    "COMMAND": "c",
    "PLAN": "p",
    "NAVIGATE": "n",
    "FETCH": "f",
    "AGENT_SPAWN": "a",
    "REASON": "t",
}

# (file under realtraj/, action types per step, findings) — checked by hand against the raw files.
REALTRAJ = [
    ("claude-code/claude-code-log_representative_messages.jsonl", "wc", []),  # Edit creates, Bash runs it
    ("claude-code/spotter_short.jsonl", "cs", []),  # Bash mix phx.server, Glob mix.exs
    # Bash tail of a log while Read exists → shell-over-tool; WebSearch/WebFetch are fetches
    ("claude-code/spotter_tool_heavy.jsonl", "crfsrf", [("shell_over_tool", 1, 1)]),
    # cat (fails), ls, ls, cat, sed -i, cat, python3 script, python3 -c, cat > heredoc, echo COMPLETE…
    ("mini-swe-agent/github_issue.traj.json", "rnnrwrccwc", []),
    ("mini-swe-agent/local.traj.json", "cc", []),
    ("openhands/runtime_basic.json", "wt", [("no_tail_validation", 0, 1)]),  # create, finish: never run
    ("openhands/runtime_basic_interactions.json", "t", [("unsupported_completion", 0, 0)]),  # "All done!"
    ("swe-agent/demo_function_calling_simple.traj", "srwcc", []),  # find_file, open, edit, python, submit
    ("swe-agent/demo_marshmallow-1867_function_calling_replace.traj", "wwcnsrwwcwc", []),
    (
        "swe-agent/demo_str_replace_anthropic.yaml",
        "nrwc",
        [("no_tail_validation", 2, 3), ("unsupported_completion", 2, 3)],
    ),
    ("swe-agent/legacy_pydicom-1458.traj", "wwcsrwwwwcwc", []),  # create, edit×…, find_file, open, rm, submit
    ("swe-agent/legacy_test_repo_6e44b9.traj", "srwcc", []),
    (
        "swe-agent-raw/claude-4-sonnet_astropy__astropy-14365.traj",
        "srrsrwcrwcwcwccwccsswccccwcwctccwwc",
        [("no_tail_validation", 33, 34), ("reread_churn", 1, 7)],
    ),
    (
        "swe-agent-raw/lm_32b_astropy__astropy-12907.traj",
        "srrsrrsrrsrrrrrrwcwsssrrwrrwcwcwcc",
        [
            ("reread_churn", 1, 10),
            ("reread_churn", 2, 5),
            ("reread_churn", 8, 11),
            ("search_loop", 0, 9),
            ("tool_oscillation", 15, 25),
        ],
    ),
]


def replay(t: Trajectory, detectors: tuple[Detector, ...] | None = None) -> tuple[list[Step], SessionSummary]:
    pipe = Pipeline(
        actions=classify_action, detectors=default_detectors() if detectors is None else detectors
    )
    s = pipe.session(t.id)
    s.metadata.update(t.meta)
    steps = [s.observe(e) for e in t.events]
    summary = s.end()
    assert pipe.errors.total == 0, pipe.errors.counts
    return steps, summary


def load(shared: Path, rel: str, run_id: str | None = None) -> Trajectory:
    path = shared / "data" / rel
    for item in iter_trajectories([path]):
        assert isinstance(item, Trajectory), item
        if run_id is None or item.id == run_id:
            return item
    raise AssertionError(f"{rel}: no run {run_id}")


def test_every_realtraj_file_is_covered(shared: Path) -> None:
    on_disk = {
        str(p.relative_to(shared / "data" / "realtraj"))
        for p in (shared / "data" / "realtraj").rglob("*")
        if p.is_file()
    }
    assert on_disk == {rel for rel, _, _ in REALTRAJ}


@pytest.mark.parametrize(("rel", "types", "findings"), REALTRAJ, ids=[r[0] for r in REALTRAJ])
def test_realtraj_replays_with_sane_actions(
    shared: Path, rel: str, types: str, findings: list[tuple[str, int, int]]
) -> None:
    t = load(shared, f"realtraj/{rel}")
    steps, summary = replay(t)
    assert "".join(LETTER[st.action.type.value] for st in steps) == types
    assert sorted((f.detector, f.first_step, f.last_step) for f in summary.findings) == findings
    # a finding is reported once when its predicate first holds, never once per step
    assert len(summary.findings) == len({(f.detector, f.first_step) for f in summary.findings})


def _fired(summary: SessionSummary, name: str) -> list[Any]:
    return [(f.first_step, f.last_step) for f in summary.findings if f.detector == name]


CORPUS = "swe-agent/trajectories.jsonl"


def test_real_runs_where_each_detector_fires(shared: Path) -> None:
    raw = load(shared, "realtraj/swe-agent-raw/lm_32b_astropy__astropy-12907.traj")
    _, s = replay(raw)
    assert _fired(s, "search_loop") == [(0, 9)]
    assert _fired(s, "tool_oscillation") == [(15, 25)]
    assert (1, 10) in _fired(s, "reread_churn")

    _, s = replay(load(shared, CORPUS, "20250511_sweagent_lm_32b/django__django-12143"))
    assert _fired(s, "redundant_search") == [(22, 28)]  # the same git grep | grep -v, 6 steps apart
    assert _fired(s, "no_tail_validation") == [(15, 29)]

    _, s = replay(load(shared, "realtraj/claude-code/spotter_tool_heavy.jsonl"))
    assert _fired(s, "shell_over_tool") == [(1, 1)]

    _, s = replay(load(shared, "realtraj/openhands/runtime_basic_interactions.json"))
    assert _fired(s, "unsupported_completion") == [(0, 0)]


def test_real_repeated_call_and_plan_absence_at_lower_or_gated_settings(shared: Path) -> None:
    """No shared real run repeats a call 4 times in a row (the longest streak is 2) and none comes from a
    scaffold with a plan tool and 5+ writes, so these two are shown on real runs with the threshold
    lowered to 2 and with the plan-tool surface asserted, respectively."""
    t = load(shared, CORPUS, "20250511_sweagent_lm_32b/pytest-dev__pytest-7521")
    _, s = replay(t, (RepeatedCall(repeats=2),))
    assert _fired(s, "repeated_call") == [(22, 23)]  # the same failing str_replace, retried verbatim
    _, s = replay(t)
    assert _fired(s, "repeated_call") == []
    _, s = replay(t, (PlanAbsence(scaffold="codex"),))
    assert _fired(s, "plan_absence") == [(6, 44)]
    _, s = replay(t, (PlanAbsence(),))  # SWE-agent has no plan tool: not applicable
    assert _fired(s, "plan_absence") == []


def test_type_dispatch_shows_each_detector_every_step_it_needs(shared: Path) -> None:
    """A detector with ``types`` sees only those steps; its findings on all 81 corpus runs equal those it
    reports when shown every step."""
    runs = [t for t in iter_trajectories([shared / "data" / CORPUS]) if isinstance(t, Trajectory)]
    dispatched = default_detectors()
    assert {d.name for d in dispatched if d.types is not None} >= {
        "search_loop",
        "reread_churn",
        "redundant_search",
        "tool_oscillation",
    }
    every_step = default_detectors()
    for d in every_step:
        d.types = None
    n_findings = 0
    for t in runs:
        got = [(f.detector, f.first_step, f.last_step, f.evidence) for f in replay(t, dispatched)[1].findings]
        assert got == [
            (f.detector, f.first_step, f.last_step, f.evidence) for f in replay(t, every_step)[1].findings
        ]
        n_findings += len(got)
    assert n_findings > 100
