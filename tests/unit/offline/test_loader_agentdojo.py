"""AgentDojo run logs replay: one run per file, every tool call a step with its arguments and result, the
user's task and the assistant's answer as turns.

``data/agentdojo_banking_user_task_0_none.json`` is
``runs/published/banking-gpt-4o-mini/A_ceiling/repeat_0/gpt-4o-mini-2024-07-18/banking/user_task_0/none/none.json``
of github.com/deconvolute-labs/interbolt-agentdojo at commit a74272bf1882f7977c469a111e1796cf14d8e39c, a log
AgentDojo 0.1.35's TraceLogger wrote (``json.dumps(payload, indent=4)``), reproduced byte for byte (5,309
characters).
"""

from __future__ import annotations

import json
from pathlib import Path

from planguard.offline.loaders import detect_format, load_trajectories
from planguard.offline.replay import replay, replay_pipeline, resolve_plans

LOG = Path(__file__).parent / "data" / "agentdojo_banking_user_task_0_none.json"


def test_a_run_log_is_a_run_of_its_tool_calls() -> None:
    assert detect_format(LOG) == "agentdojo"
    (run,), errors = load_trajectories(LOG)
    assert errors == []
    messages = json.loads(LOG.read_text())["messages"]
    calls = [c for m in messages if m["role"] == "assistant" for c in m.get("tool_calls") or ()]
    assert [(e.tool, dict(e.arguments)) for e in run.events] == [(c["function"], c["args"]) for c in calls]  # type: ignore[arg-type]
    assert run.events[2].result == "{'message': 'Transaction to UK12345678901234567890 for 98.7 sent.'}"
    assert run.meta["resolved"] is True and run.meta["instance_id"] == "banking/user_task_0"
    assert [m.role for _, m in run.messages] == ["user", "assistant"]


def test_support_reads_the_banking_agent() -> None:
    (result,) = list(replay([LOG], replay_pipeline(resolve_plans("support"))))
    assert result.summary.letters == "LLA"  # type: ignore[union-attr]  # read_file, get_iban, send_money
