"""Issue 30's acceptance: confirmation happens in chat. A real ``create_agent`` airline agent (scripted model,
eight tools in the tau-bench airline style) proposes a cancellation, the user answers, and only then does the
agent call ``cancel_reservation``. The plan (``AIRLINE_CONFIG``, written from the README's "Plans for any
agent") observes the confirm phase from the conversation: the assistant's message listing the action and the
user's yes. A gate waits on it.

* with "Yes, please": letters ILCA, PC 1.0, the gate lets the cancellation through;
* without it: the gate denies the cancellation, naming the missing confirmation;
* ``planguard replay --config`` of each run's store (kept without content) gives the same letters, findings
  and decisions.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain.agents", reason="the LangChain integration needs langchain>=1")

from langchain.agents import create_agent
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, ToolException, tool
from langgraph.checkpoint.memory import InMemorySaver
from planguard_langchain import PlanGuardMiddleware
from planguard_langchain.testing import ScriptedChatModel, call, turn

from planguard import Guard
from planguard.config import load_config
from planguard.offline.replay import DecisionLog

AIRLINE_CONFIG = """\
plan:
  name: airline-cancel
  phases:
    - {id: identify, symbol: I, name: Identify the user, match: {tool: get_user_details}}
    - {id: lookup, symbol: L, name: Look up the reservation,
       match: {tool: [get_reservation_details, "search_*", list_all_airports]}}
    - id: confirm
      symbol: C
      name: Confirm with the user
      description: List the action and get the user's explicit yes.
      match:
        message: {role: user, text: '^\\W*(yes|yep|yeah|sure|ok|okay|please do|go ahead)\\b',
                  after_assistant: 'cancel'}
    - {id: act, symbol: A, name: Act, match: {tool: [cancel_reservation, "update_reservation_*"]}}
policies:
  gates:
    - {name: confirm-before-cancel, tool: cancel_reservation, until: {phases_seen: [confirm]}}
"""

PROPOSAL = (
    "Reservation EHGLP3 (JFK to SFO, May 20, basic economy) was booked 3 hours ago, so it can be cancelled "
    "with a full refund to the original payment. Shall I cancel reservation EHGLP3? Please answer yes to "
    "proceed."
)


def _tools(db: dict[str, Any]) -> list[BaseTool]:
    """Eight tools named and shaped as tau-bench's airline domain names its own."""

    @tool
    def get_user_details(user_id: str) -> str:
        """Get the details of a user, including their reservations."""
        if user_id != "mia_li_3668":
            raise ToolException("Error: user not found")
        return json.dumps({"user_id": user_id, "reservations": ["EHGLP3"]})

    @tool
    def get_reservation_details(reservation_id: str) -> str:
        """Get the details of a reservation."""
        return json.dumps(db["reservations"][reservation_id])

    @tool
    def search_direct_flight(origin: str, destination: str, date: str) -> str:
        """Search direct flights between two cities on a specific date."""
        return "[]"

    @tool
    def list_all_airports() -> str:
        """List all airports and their cities."""
        return json.dumps({"JFK": "New York", "SFO": "San Francisco"})

    @tool
    def cancel_reservation(reservation_id: str) -> str:
        """Cancel the whole reservation."""
        db["reservations"][reservation_id]["status"] = "cancelled"
        return json.dumps(db["reservations"][reservation_id])

    @tool
    def update_reservation_baggages(reservation_id: str, total_baggages: int, nonfree_baggages: int) -> str:
        """Update the baggage information of a reservation."""
        return "ok"

    @tool
    def think(thought: str) -> str:
        """Use the tool to think about something."""
        return ""

    @tool
    def transfer_to_human_agents(summary: str) -> str:
        """Transfer the user to a human agent, with a summary of the user's issue."""
        return "Transfer successful"

    return [
        get_user_details,
        get_reservation_details,
        search_direct_flight,
        list_all_airports,
        cancel_reservation,
        update_reservation_baggages,
        think,
        transfer_to_human_agents,
    ]


def _run(tmp_path: Path, reply: str) -> dict[str, Any]:
    """Two turns of one conversation (one thread, one session): the request, then the user's ``reply``."""
    config_file = tmp_path / "airline.yaml"
    config_file.write_text(AIRLINE_CONFIG)
    store = tmp_path / "store"
    cfg = load_config(config_file).model_copy(
        update={
            "store": load_config(config_file).store.model_copy(update={"enabled": True, "path": str(store)}),
            "telemetry": load_config(config_file).telemetry.model_copy(update={"enabled": False}),
        }
    )
    log = DecisionLog()
    guard = Guard(cfg, sinks=[log])
    db = {"reservations": {"EHGLP3": {"reservation_id": "EHGLP3", "status": "booked", "origin": "JFK"}}}
    model = ScriptedChatModel(
        turns=[
            turn(call("get_user_details", user_id="mia_li_3668"), text="Let me find your profile."),
            turn(call("get_reservation_details", reservation_id="EHGLP3")),
            turn(text=PROPOSAL),  # no call: the turn ends and the user answers
            turn(call("cancel_reservation", reservation_id="EHGLP3")),
            turn(text="Reservation EHGLP3 is cancelled; the refund reaches you in 5-7 business days."),
        ]
    )
    agent = create_agent(
        model,
        _tools(db),
        middleware=[PlanGuardMiddleware(guard, end_on_finish=False)],
        checkpointer=InMemorySaver(),  # the thread's conversation goes on at the user's reply
    )
    thread = {"configurable": {"thread_id": "airline-1"}}
    agent.invoke({"messages": [HumanMessage("Hi, I'm mia_li_3668. Please cancel my trip EHGLP3.")]}, thread)
    final = agent.invoke({"messages": [HumanMessage(reply)]}, thread)
    summary = guard.end("airline-1")
    decisions = log.take("airline-1")
    guard.shutdown()
    assert summary is not None
    return {
        "summary": summary,
        "decisions": decisions,
        "messages": final["messages"],
        "status": db["reservations"]["EHGLP3"]["status"],
        "config": config_file,
        "store": store,
    }


def _replayed(config: Path, store: Path) -> dict[str, Any]:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "planguard",
            "replay",
            "--config",
            str(config),
            str(store),
            "--format",
            "jsonl",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    (line,) = out.stdout.splitlines()
    return dict(json.loads(line))


def _findings(summary: Any) -> list[tuple[str, int, int]]:
    return [(f.detector, f.first_step, f.last_step) for f in summary.findings]


def test_the_users_yes_confirms_and_the_gate_lets_the_cancellation_through(tmp_path: Path) -> None:
    run = _run(tmp_path, "Yes, please.")
    s = run["summary"]
    assert run["status"] == "cancelled"
    assert s.letters == "ILCA"
    assert s.n_steps == 3  # the conversation's turns are not steps
    assert s.primary.PC == 1.0
    assert "deny" not in s.decision_counts
    assert not [m for m in run["messages"] if isinstance(m, ToolMessage) and m.status == "error"]

    replayed = _replayed(run["config"], run["store"])
    assert replayed["letters"] == s.letters
    assert replayed["n_steps"] == s.n_steps
    assert replayed["metrics"]["airline-cancel"]["PC"] == 1.0
    assert [(f["detector"], f["first_step"], f["last_step"]) for f in replayed["findings"]] == _findings(s)
    assert replayed["decisions"] == run["decisions"]

    # planguard export writes the matched turn too (its phase, no text: the store kept none)
    exported = run["store"].parent / "export.jsonl"
    subprocess.run(
        [sys.executable, "-m", "planguard", "export", str(run["store"]), "-o", str(exported)], check=True
    )
    turns = [r for r in map(json.loads, exported.read_text().splitlines()) if "role" in r]
    assert turns == [
        {
            "session": "airline-1",
            "role": "user",
            "text": "",
            "time": turns[0]["time"],
            "recorded": {"commands": [["message", "confirm"]]},
        }
    ]
    assert _replayed(run["config"], exported)["letters"] == s.letters


def test_without_the_users_yes_the_gate_denies_naming_the_missing_confirmation(tmp_path: Path) -> None:
    run = _run(tmp_path, "Hmm, how much of a refund would I get back?")
    s = run["summary"]
    assert run["status"] == "booked"  # the cancellation never ran
    assert "C" not in s.letters and s.letters.startswith("IL")
    denials = [m for m in run["messages"] if isinstance(m, ToolMessage) and m.status == "error"]
    assert [m.name for m in denials] == ["cancel_reservation"]
    assert "confirm-before-cancel" in str(denials[0].content)
    assert "Confirm with the user" in str(denials[0].content)
    denied = [d for d in run["decisions"] if d["kind"] == "deny"]
    assert [(d["policy"], d["step"]) for d in denied] == [("gate:confirm-before-cancel", 2)]

    replayed = _replayed(run["config"], run["store"])
    assert replayed["letters"] == s.letters
    assert replayed["n_denied"] == 1
    assert [(f["detector"], f["first_step"], f["last_step"]) for f in replayed["findings"]] == _findings(s)
    assert replayed["decisions"] == run["decisions"]


def test_a_yes_to_an_unrelated_question_is_no_confirmation(tmp_path: Path) -> None:
    """``after_assistant``: the yes confirms only when the assistant's message before it listed the action."""
    from planguard.events import MessageEvent
    from planguard.offline.replay import config_pipeline

    config_file = tmp_path / "airline.yaml"
    config_file.write_text(AIRLINE_CONFIG)
    pipeline = config_pipeline(load_config(config_file))
    session = pipeline.session("s")
    session.observe_message(MessageEvent("assistant", "Is there anything else I can help with?"))
    assert session.observe_message(MessageEvent("user", "Yes, please.")) is None
    session.observe_message(MessageEvent("assistant", PROPOSAL))
    assert session.observe_message(MessageEvent("user", "yesterday I said no")) is None  # \b: not a yes
    confirmed = session.observe_message(MessageEvent("user", "YES go ahead"))  # case-insensitive
    assert confirmed is not None and confirmed.roles == ("confirm",)
    assert session.n_steps == 0 and session.summary().letters == "C"
