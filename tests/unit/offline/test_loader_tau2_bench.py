"""tau2-bench simulation files replay: one run per simulation, every call the agent made a step (with its
arguments and result), the simulated user's own tool calls kept out of the steps, the turns observed.

The excerpt (``data/tau2_bench_telecom_grok-3_excerpt.json``) is a real ``tau2 run`` output published in
github.com/blakeelias/tau2-bench (a fork of sierra-research/tau2-bench), file
``data/simulations/2025-10-05T07:52:52.930199_telecom_llm_agent_grok-3_user_simulator_grok-3.json`` at commit
85cededeb56ce7340dfa16291d5aa4ee5f0e23f0: its header (``timestamp``, ``info``), the first simulation and its
task, unchanged. The format is ``Results`` of ``src/tau2/data_model/simulation.py`` in
sierra-research/tau2-bench (checked at a2c0247).
"""

from __future__ import annotations

import json
from pathlib import Path

from planguard.offline.loaders import detect_format, load_trajectories
from planguard.offline.replay import replay, replay_pipeline, resolve_plans

EXCERPT = Path(__file__).parent / "data" / "tau2_bench_telecom_grok-3_excerpt.json"
#: The second simulation of data/simulations/2025-10-07T07:44:20.888691_airline_relaxed_llm_agent_
#: grok-4-fast-reasoning_user_simulator_grok-4-fast-reasoning.json (one name) in the same fork at commit
#: 75c6100, with its header and task: the agent summarises the booking and asks for a "yes", the user says
#: yes, the agent books.
AIRLINE = Path(__file__).parent / "data" / "tau2_bench_airline_grok-4-fast_excerpt.json"


def test_a_simulation_is_a_run_of_the_agents_calls_only() -> None:
    assert detect_format(EXCERPT) == "tau2-bench"
    (run,), errors = load_trajectories(EXCERPT)
    assert errors == []
    (simulation,) = json.loads(EXCERPT.read_text())["simulations"]
    calls = [c for m in simulation["messages"] for c in m.get("tool_calls") or ()]
    agent = [(c["name"], c["arguments"]) for c in calls if c["requestor"] == "assistant"]
    assert [(e.tool, dict(e.arguments)) for e in run.events] == agent  # type: ignore[arg-type]
    assert all(e.result for e in run.events)
    assert run.meta["user_tool_calls"] == sum(1 for c in calls if c["requestor"] == "user") == 4
    assert run.meta["resolved"] is True and run.meta["instance_id"] == simulation["task_id"]
    texts = [(m.role, m.text) for _, m in run.messages]
    assert texts[0] == ("assistant", "Hi! How can I help you today?") and ("user", "") not in texts


def test_support_places_the_telecom_agents_calls() -> None:
    (result,) = list(replay([EXCERPT], replay_pipeline(resolve_plans("support"))))
    s = result.summary  # type: ignore[union-attr]
    # get_customer_by_phone, get_details_by_id x4, refuel_data (the user chose it; no yes was asked for)
    assert s.letters == "ILLLLA" and s.n_steps == 6


def test_support_scores_confirm_where_the_simulated_user_confirmed() -> None:
    (result,) = list(replay([AIRLINE], replay_pipeline(resolve_plans("support"))))
    s = result.summary  # type: ignore[union-attr]
    # get_user_details, get_reservation_details x5, search_direct_flight; the user's yes (twice asked);
    # book_reservation
    assert s.letters == "ILLLLLLCCA" and s.n_steps == 8
