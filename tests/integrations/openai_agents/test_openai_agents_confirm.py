"""OpenAI Agents SDK: the run hooks hand planguard the conversation (the user's turns at each model call, the
model's text when it answers), so a plan's confirm phase observed in chat opens a gate. A real ``Runner``
with the SDK's own scripted model (``agents.testing``), over two runs of one conversation."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("agents")
pytest.importorskip("planguard_openai_agents")

from agents import Agent, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call
from planguard_openai_agents import Planguard

from planguard.config import Config
from planguard.guard import Guard


def _run(reply: str) -> tuple[Any, list[str]]:
    cancelled: list[str] = []

    @function_tool
    def get_order_details(order_id: str) -> str:
        """Get the status and details of an order."""
        return f'{{"order_id": "{order_id}", "status": "pending"}}'

    @function_tool
    def cancel_pending_order(order_id: str, reason: str) -> str:
        """Cancel a pending order."""
        cancelled.append(order_id)
        return "cancelled"

    guard = Guard(
        Config.model_validate(
            {
                "plan": "support",
                "telemetry": {"enabled": False},
                "store": {"enabled": False},
                "policies": {
                    "gates": [
                        {
                            "name": "confirm-before-cancel",
                            "tool": "cancel_*",
                            "until": {"phases_seen": ["confirm"]},
                        }
                    ]
                },
            }
        )
    )
    model = ScriptedModel(
        [
            [function_call("get_order_details", {"order_id": "#W2378156"}, call_id="c1")],
            [assistant_message("Order #W2378156 is pending. Shall I cancel it (reason: no longer needed)?")],
            [
                function_call(
                    "cancel_pending_order",
                    {"order_id": "#W2378156", "reason": "no longer needed"},
                    call_id="c2",
                )
            ],
            [assistant_message("Done.")],
        ]
    )
    agent = Agent(name="support", model=model, tools=[get_order_details, cancel_pending_order])
    pg = Planguard(guard)
    first = asyncio.run(pg.run(agent, "Please cancel order #W2378156.", session_id="oa", end=False))
    follow_up = [*first.to_input_list(), {"role": "user", "content": reply}]
    asyncio.run(pg.run(agent, follow_up, session_id="oa", end=False))
    summary = guard.end("oa")
    guard.shutdown()
    return summary, cancelled


def test_the_users_yes_in_the_next_run_opens_the_gate() -> None:
    summary, cancelled = _run("Yes, please go ahead.")
    assert cancelled == ["#W2378156"]
    assert summary.letters == "LCA" and summary.n_steps == 2
    assert "deny" not in summary.decision_counts


def test_without_the_yes_the_gate_holds() -> None:
    summary, cancelled = _run("Wait, what is the refund amount?")
    assert cancelled == []
    assert "C" not in summary.letters and summary.decision_counts.get("deny") == 1
