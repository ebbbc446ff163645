"""Replay of the 81 real runs reproduces the paper's per-setting scores (labels.jsonl), both rule versions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planguard.offline.replay import ReplayResult, replay, replay_pipeline, resolve_plans


@pytest.mark.parametrize("version", ["v351278e", "v8ec988e"])
def test_replayed_scores_match_the_paper_for_every_setting(shared: Path, version: str) -> None:
    data = shared / "data" / "swe-agent"
    labels = {}
    for line in (data / "labels.jsonl").read_text().splitlines():
        record = json.loads(line)
        labels[record["id"]] = record[version]["scores"]
    pipeline = replay_pipeline(resolve_plans("paper-settings"), version, diagnostics=False)
    results = [r for r in replay([data / "trajectories.jsonl"], pipeline) if isinstance(r, ReplayResult)]
    assert len(results) == 81
    worst = 0.0
    for r in results:
        expected = labels[r.trajectory.id]
        assert set(r.summary.scores) == set(expected)
        for setting, scores in r.summary.scores.items():
            for key, value in scores.as_dict().items():
                worst = max(worst, abs(value - expected[setting][key]))
    # The labels are rounded; anything beyond rounding would be a real disagreement (acceptance: ≤ 0.005).
    assert worst <= 1e-4
