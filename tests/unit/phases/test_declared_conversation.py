"""Declared plans that see the conversation (issue 30): ``match: {message: ...}``, presets that place a tool
by its verb, and configs that read as written (``result: yes``, ``finish_tools: submit``, did-you-mean on
values)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planguard.config import ConfigError, load_config
from planguard.events import MessageEvent, ToolEvent
from planguard.offline.replay import replay_pipeline
from planguard.phases.declarative import tool_verb
from planguard.plan import PRESETS, PhaseMatch, load_plan, resolve_plan

SUPPORT = PRESETS["support"]

# The agents' tools of tau-bench's airline and retail domains (tau_bench/envs/{airline,retail}/tools/*.py at
# sierra-research/tau-bench 59a200c) and of tau2-bench's telecom domain (src/tau2/domains/telecom/tools.py at
# sierra-research/tau2-bench a2c0247), each with the phase of plan: support (README, "Plans for any agent").
TAU_TOOLS = {
    # airline
    "book_reservation": "act",
    "calculate": "general",
    "cancel_reservation": "act",
    "get_reservation_details": "lookup",
    "get_user_details": "identify",
    "list_all_airports": "lookup",
    "search_direct_flight": "lookup",
    "search_onestop_flight": "lookup",
    "send_certificate": "act",
    "think": "general",
    "transfer_to_human_agents": "wrap_up",
    "update_reservation_baggages": "act",
    "update_reservation_flights": "act",
    "update_reservation_passengers": "act",
    "get_flight_status": "lookup",
    # retail
    "cancel_pending_order": "act",
    "exchange_delivered_order_items": "act",
    "find_user_id_by_email": "identify",
    "find_user_id_by_name_zip": "identify",
    "get_order_details": "lookup",
    "get_product_details": "lookup",
    "get_item_details": "lookup",
    "list_all_product_types": "lookup",
    "modify_pending_order_address": "act",
    "modify_pending_order_items": "act",
    "modify_pending_order_payment": "act",
    "modify_user_address": "act",
    "return_delivered_order_items": "act",
    # telecom
    "get_customer_by_phone": "identify",
    "get_customer_by_id": "identify",
    "get_customer_by_name": "identify",
    "get_details_by_id": "lookup",
    "suspend_line": "act",
    "resume_line": "act",
    "get_bills_for_customer": "lookup",
    "send_payment_request": "act",
    "get_data_usage": "lookup",
    "enable_roaming": "act",
    "disable_roaming": "act",
    "refuel_data": "act",
}


@pytest.mark.parametrize(("tool", "phase"), sorted(TAU_TOOLS.items()))
def test_support_places_every_tau_bench_tool(tool: str, phase: str) -> None:
    session = replay_pipeline((SUPPORT,)).session("s")
    roles = session.pipeline.rules.classify(ToolEvent(tool=tool, arguments={}), session.phase_state).roles
    assert (roles[0] if roles else "general") == phase


def test_verbs_place_only_what_no_glob_places_and_plans_override_them(tmp_path: Path) -> None:
    assert [tool_verb(t) for t in ("refuel_data", "getDataUsage", "mcp__shop__process_payment")] == [
        "refuel",
        "get",
        "process",
    ]
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(
        "phases:\n"
        "  - {id: look, symbol: L, name: Look, match: {tool: check_policy}, verbs: get check}\n"
        "  - {id: act, symbol: A, name: Act, match: {tool: nothing}, verbs: [refuel]}\n"
    )
    plan = load_plan(plan_file)
    session = replay_pipeline((plan,)).session("s")

    def phase(tool: str) -> tuple[str, ...]:
        return session.pipeline.rules.classify(ToolEvent(tool=tool), session.phase_state).roles

    assert phase("refuel_data") == ("act",) and phase("getBalance") == ("look",) and phase("think") == ()
    with pytest.raises(ValueError, match="only a phase with a 'match' takes"):
        bad = tmp_path / "bad.yaml"
        bad.write_text("phases:\n  - {id: L_navigate, symbol: N, name: Nav, verbs: [get]}\n")
        load_plan(bad)


def test_a_message_match_is_about_turns_only() -> None:
    with pytest.raises(ValueError, match="'message' match is about a conversation turn"):
        PhaseMatch.model_validate({"tool": "confirm", "message": {"text": "yes"}})
    with pytest.raises(ValueError, match="only a user turn follows"):
        PhaseMatch.model_validate({"message": {"role": "assistant", "after_assistant": "x"}})
    # A tool call never matches a message rule, and a turn never matches a tool rule.
    session = replay_pipeline((SUPPORT,)).session("s")
    assert session.observe_message(MessageEvent("user", "confirm_order")) is None
    assert session.n_steps == 0


def test_support_confirms_on_the_users_yes_after_the_agent_asked() -> None:
    session = replay_pipeline((SUPPORT,)).session("s")
    session.observe(ToolEvent(tool="find_user_id_by_email", arguments={"email": "a@b.c"}))
    session.observe(ToolEvent(tool="get_order_details", arguments={"order_id": "#W1"}))
    session.observe_message(MessageEvent("assistant", "I can cancel order #W1. Do you want me to proceed?"))
    assert session.observe_message(MessageEvent("user", "Yes.")) is not None
    session.observe(ToolEvent(tool="cancel_pending_order", arguments={"order_id": "#W1"}))
    summary = session.end()
    assert summary.letters == "ILCA" and summary.n_steps == 3
    assert summary.primary is not None and summary.primary.PPF == 1.0  # (wrap_up not done yet)


#: The agent's message in a tau2-bench airline run (blakeelias/tau2-bench @75c6100, grok-4-fast, task 8; the
#: excerpt in tests/unit/offline/data): a request for details whose question offers alternatives.
TAU2_CHOICE = (
    "I'm happy to help you book a flight, Sophia! To get started, could you please provide your user ID (it "
    "should be something like 'sophia_silva_123' from your profile)? This will allow me to access your "
    "details and find the exact flight you took on May 10th to replicate it for May 26th.\n\nAlso, just to "
    "confirm: Chicago (which airport, ORD or MDW?) to Philadelphia (PHL?), one-way on May 26, 2024?"
)


def _confirms(asked: str, reply: str) -> bool:
    """Whether ``reply`` to ``asked`` is support's confirm, once the customer is identified and looked up."""
    session = replay_pipeline((SUPPORT,)).session("s")
    session.observe(ToolEvent(tool="get_user_details", arguments={"user_id": "u1"}))
    session.observe(ToolEvent(tool="get_reservation_details", arguments={"reservation_id": "R1"}))
    session.observe_message(MessageEvent("assistant", asked))
    return session.observe_message(MessageEvent("user", reply)) is not None


@pytest.mark.parametrize(
    ("asked", "reply"),
    [
        (
            TAU2_CHOICE,
            "Yes, my user ID is sophia_silva_7557. And yes, it's from ORD to PHL, one-way on May 26th.",
        ),
        (
            "Just to confirm before I book: Chicago (which airport, ORD or MDW?) to Philadelphia, one-way?",
            "Yes",
        ),
        (
            "I can process the refund. Would you like me to send it to your card or as a travel certificate?",
            "Yes",
        ),
        ("I can change your flight. Which one should I book, HAT001 or HAT002?", "Yes, please"),
        ("To proceed with the cancellation, should I refund it to either the card or the gift card?", "yes"),
        ("I found two flights: 1. HAT001, 2. HAT002. Would you like me to book one of these?", "Sure"),
    ],
)
def test_a_yes_to_a_question_offering_alternatives_confirms_nothing(asked: str, reply: str) -> None:
    assert not _confirms(asked, reply)


@pytest.mark.parametrize(
    "asked",
    [
        "Reservation R1 can be cancelled with a full refund. Shall I cancel reservation R1?",
        "I will cancel reservation R1. Do you want me to proceed (yes or no)?",
        "Shall I cancel reservation R1, which was booked today? Please confirm (yes/no).",
        "I can cancel R1 now. Should I go ahead, or would you like to keep it?",
        "Would you like me to proceed with cancelling R1 or not?",
        # The question offering a choice came first; the agent's last question asks for the yes.
        "Which airport, ORD or MDW? I have ORD. I will book HAT001 from ORD. Shall I proceed?",
    ],
)
def test_a_yes_to_a_yes_no_question_about_the_action_confirms(asked: str) -> None:
    assert _confirms(asked, "Yes, please.")


def test_yaml_yes_is_a_word_and_result_and_text_are_case_insensitive(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "plan:\n"
        "  name: p\n"
        "  phases:\n"
        "    - {id: ok, symbol: O, name: Ok, match: {tool: ask, result: yes}}\n"
        "    - {id: said, symbol: S, name: Said, match: {message: {text: yes}}}\n"
        "store: {enabled: yes}\n"
    )
    config = load_config(cfg)
    ok, said = config.followed_plan.phases
    assert ok.matches[0].result == "yes" and said.matches[0].message is not None
    assert said.matches[0].message.text == "yes" and config.store.enabled is True
    session = replay_pipeline(config.plans).session("s")
    assert session.observe(ToolEvent(tool="ask", result="Yes, please")).roles == ("ok",)
    assert session.observe_message(MessageEvent("user", "YES")) is not None
    # JSON's true in a regex field is the word it was written as.
    assert PhaseMatch.model_validate({"result": True}).result == "true"


def test_finish_tools_takes_bare_names_and_values_get_did_you_mean(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("policies:\n  violations: {finish_tools: submit}\n")
    (pattern,) = load_config(cfg).policies.violations.finish_tools or []
    assert pattern.tool == "submit"

    cfg.write_text("policies:\n  violations: {on_finish: remnd}\n")
    with pytest.raises(ConfigError, match=r"did you mean 'remind'\?"):
        load_config(cfg)
    cfg.write_text(
        "plan:\n  name: p\n  phases:\n    - {id: a, symbol: A, name: A, match: {action: SERACH}}\n"
    )
    with pytest.raises(ConfigError, match=r"did you mean 'SEARCH'\?"):
        load_config(cfg)
    with pytest.raises(ValueError, match=r"did you mean 'support'\?"):
        resolve_plan("suport")


def test_distinct_lookups_are_distinct_searches() -> None:
    session = replay_pipeline((SUPPORT,)).session("s")
    session.observe(ToolEvent(tool="find_user_id_by_email", arguments={"email": "mia@example.com"}))
    session.observe(ToolEvent(tool="search_direct_flight", arguments={"origin": "JFK", "destination": "SEA"}))
    session.observe(
        ToolEvent(tool="search_onestop_flight", arguments={"origin": "JFK", "destination": "SEA"})
    )
    assert "redundant_search" not in session.end().finding_counts


def test_the_store_keeps_the_match_and_the_text_only_with_content(tmp_path: Path) -> None:
    from planguard import Guard
    from planguard.config import Config

    for content, expect_text in ((False, False), (True, True)):
        store = tmp_path / f"store-{content}"
        cfg = Config.model_validate(
            {
                "plan": "support",
                "telemetry": {"enabled": False},
                "store": {"enabled": True, "path": str(store), "content": content},
            }
        )
        with Guard(cfg) as guard:
            guard.after_tool("s", ToolEvent(tool="find_user_id_by_email", arguments={"email": "m@x.io"}))
            guard.observe_message("s", "assistant", "Shall I cancel order #W1? Please confirm (yes/no).")
            assert guard.observe_message("s", "user", "Yes, go ahead") is not None
            guard.end("s")
        (file,) = store.glob("*.jsonl")
        records = [json.loads(line) for line in file.read_text().splitlines()]
        (message,) = [r for r in records if r["type"] == "message"]
        assert message["commands"] == [["message", "confirm"]] and message["at_step"] == 1
        assert ("text" in message) is expect_text
        assert ("Shall I cancel" in file.read_text()) is False  # an unmatched turn is never written
