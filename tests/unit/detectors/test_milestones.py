"""Milestones M1–M5: first reach of the task's anchor files, with right-censoring."""

from __future__ import annotations

from pathlib import Path

import pytest

from planguard.actions import AnchorSet, Effect, classify_action, label_effects
from planguard.detectors.milestones import MilestoneTracker, milestones
from planguard.events import ToolEvent
from planguard.offline.loaders import iter_trajectories

DIFF = (
    "diff --git a/pkg/a.py b/pkg/a.py\n--- a/pkg/a.py\n+++ b/pkg/a.py\n@@ -1 +1 @@\n-x\n+y\n"
    "diff --git a/pkg/b.py b/pkg/b.py\n--- a/pkg/b.py\n+++ b/pkg/b.py\n@@ -1 +1 @@\n-x\n+y\n"
)


def run() -> list[ToolEvent]:
    return [
        ToolEvent.shell("grep -rn thing /testbed/docs", result="docs/x.rst: thing"),  # 0 off-anchor search
        ToolEvent.shell("cat /testbed/pkg/a.py", result="nope", exit_code=1),  # 1 failed read: not M1
        ToolEvent.shell("cat /testbed/pkg/a.py", result="x"),  # 2 M1, M5
        ToolEvent.shell("sed -i 's/x/y/' /testbed/pkg/a.py", exit_code=0),  # 3 M2
        ToolEvent.shell("python reproduce.py", result="Traceback (most recent call last):"),  # 4 failing
        ToolEvent.shell("echo y > /testbed/pkg/b.py", exit_code=0),  # 5 M3
        ToolEvent.shell("python reproduce.py", result="all good", exit_code=0),  # 6 M4
    ]


def test_milestones_with_anchors() -> None:
    events = run()
    ms = {m.name: m for m in milestones([classify_action(e) for e in events], events, DIFF)}
    assert {k: m.step for k, m in ms.items()} == {"M1": 2, "M2": 3, "M3": 5, "M4": 6, "M5": 2}
    assert all(m.reached and m.censored_at is None and m.available and m.n_steps == 7 for m in ms.values())
    assert ms["M2"].fraction == pytest.approx(4 / 7)


def test_right_censoring_and_no_anchors() -> None:
    events = run()[:4]
    ms = {
        m.name: m for m in milestones([classify_action(e) for e in events], events, ["pkg/a.py", "pkg/b.py"])
    }
    assert ms["M2"].step == 3 and not ms["M3"].reached and ms["M3"].censored_at == 4
    assert not ms["M4"].reached and ms["M4"].step is None and ms["M4"].fraction is None
    no_anchor = {m.name: m for m in milestones([classify_action(e) for e in run()], run())}
    assert not no_anchor["M1"].available and not no_anchor["M1"].reached
    assert no_anchor["M4"].step == 6 and no_anchor["M4"].available


def test_streaming_tracker_matches_offline() -> None:
    events = run()
    actions = [classify_action(e) for e in events]
    anchors = AnchorSet.parse(DIFF)
    effects = label_effects(actions, events, anchors)
    tracker = MilestoneTracker(anchors)
    for i, (a, eff) in enumerate(zip(actions, effects, strict=True)):
        tracker.observe(i, a, eff)
    assert tracker.result() == milestones(actions, events, anchors, effects)
    assert tracker.result()[0].as_dict() == {
        "name": "M1",
        "reached": True,
        "step": 2,
        "censored_at": None,
        "available": True,
    }
    assert Effect.OFF_ANCHOR in effects


def test_real_run_with_its_submitted_patch_as_anchors(shared: Path) -> None:
    """A real SWE-agent 1.x run, anchored on the files of the patch it submitted (qdp.py, plus
    pyproject.toml, which the run restored with ``git checkout`` at step 33): every milestone is reached,
    in the order M5 ≤ M1 ≤ M2 ≤ M3."""
    path = shared / "data" / "realtraj" / "swe-agent-raw" / "claude-4-sonnet_astropy__astropy-14365.traj"
    (t,) = list(iter_trajectories([path]))
    events = t.events  # type: ignore[union-attr]
    anchors = AnchorSet.parse(t.meta["submission"])  # type: ignore[union-attr]
    assert anchors.files == frozenset({"astropy/io/ascii/qdp.py", "pyproject.toml"})
    ms = {m.name: m for m in milestones([classify_action(e) for e in events], events, anchors)}
    assert {k: m.step for k, m in ms.items()} == {"M1": 1, "M2": 8, "M3": 33, "M4": 6, "M5": 0}
    assert ms["M2"].n_steps == len(events) == 35
