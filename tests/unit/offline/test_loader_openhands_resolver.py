"""The OpenHands resolver's ``output.jsonl`` replays with its calls' arguments and results (its history is
stored flattened, without ``args``/``extras``; it loaded blank before: no arguments, every call alike).

The excerpt (``data/openhands_resolver_output_excerpt.jsonl``) is line 1 of
``tests/unit/resolver/mock_output/output.jsonl`` in github.com/All-Hands-AI/OpenHands (unchanged; last
changed in ca424ec15d, read at 156d0686c4): the resolver adding an MIT license to neubig/pr-viewer#5.
"""

from __future__ import annotations

import json
from pathlib import Path

from planguard.offline.loaders import detect_format, load_trajectories
from planguard.offline.replay import replay, replay_pipeline

EXCERPT = Path(__file__).parent / "data" / "openhands_resolver_output_excerpt.jsonl"


def test_the_resolver_history_loads_with_arguments_and_results() -> None:
    assert detect_format(EXCERPT) == "openhands-output"
    (run,), errors = load_trajectories(EXCERPT)
    assert errors == []
    history = json.loads(EXCERPT.read_text())["history"]
    actions = [h for h in history if h.get("action") in ("run", "run_ipython")]
    assert [e.arguments for e in run.events[:3]] == [
        {"command": actions[0]["command"]},
        {"code": actions[1]["code"]},
        {"command": actions[2]["command"]},
    ]
    observations = [h for h in history if "observation" in h]
    assert [e.result for e in run.events[:3]] == [o["content"] for o in observations]
    assert run.events[0].exit_code == 0 and run.meta["unpaired_observations"] == 0


def test_the_resolver_run_replays_its_phases_without_a_false_repeat() -> None:
    (result,) = list(replay([EXCERPT], replay_pipeline()))
    s = result.summary  # type: ignore[union-attr]
    assert s.n_steps == 4 and s.letters == "PN"  # touch/write LICENSE, then cat it
    assert "repeated_call" not in s.finding_counts
