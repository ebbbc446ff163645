"""tau-bench results files replay: one run per task and trial, every agent tool call a step with its
arguments and result, and the conversation's turns observed, so ``plan: support`` scores ``confirm`` where
the user confirmed.

The excerpt (``data/tau_bench_gpt-4o-airline_excerpt.json``) is results 47 and 41 (task 47 and task 41,
trial 0) of ``historical_trajectories/gpt-4o-airline.json`` in github.com/sierra-research/tau-bench at commit
59a200c, unchanged: in both the agent asks and the user says yes before ``cancel_reservation``.
"""

from __future__ import annotations

import json
from pathlib import Path

from planguard.offline.loaders import detect_format, load_trajectories
from planguard.offline.replay import replay, replay_pipeline, resolve_plans

EXCERPT = Path(__file__).parent / "data" / "tau_bench_gpt-4o-airline_excerpt.json"


def _recorded_calls(result: dict) -> list[tuple[str, dict]]:  # type: ignore[type-arg]
    return [
        (c["function"]["name"], json.loads(c["function"]["arguments"]))
        for m in result["traj"]
        if m["role"] == "assistant"
        for c in m.get("tool_calls") or ()
    ]


def test_each_result_is_a_run_whose_steps_are_the_agents_calls() -> None:
    assert detect_format(EXCERPT) == "tau-bench"
    runs, errors = load_trajectories(EXCERPT)
    assert errors == []
    raw = json.loads(EXCERPT.read_text())
    assert [r.id for r in runs] == ["task-47-trial-0", "task-41-trial-0"]
    for run, result in zip(runs, raw, strict=True):
        assert [(e.tool, dict(e.arguments)) for e in run.events] == _recorded_calls(result)  # type: ignore[arg-type]
        assert all(e.result and e.call_id for e in run.events)
        assert run.meta["instance_id"] == str(result["task_id"]) and run.meta["resolved"] is False
        users = [m.text for _, m in run.messages if m.role == "user"]
        assert users and not any(t.strip() == "###STOP###" for t in users)


def test_support_scores_confirm_where_the_user_confirmed() -> None:
    results = [r for r in replay([EXCERPT], replay_pipeline(resolve_plans("support")))]
    letters = {r.trajectory.id: r.summary.letters for r in results}  # type: ignore[union-attr]
    assert letters == {"task-47-trial-0": "ILCA", "task-41-trial-0": "LCA"}
    for r in results:
        assert r.summary.n_steps == len(r.trajectory.events)  # type: ignore[union-attr]
