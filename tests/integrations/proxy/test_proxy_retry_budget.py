"""Gate retries keep the gate's budget for the agent: when the model repeats a gated call after the proxy
asked it again, the repeat gets the same denial without spending another (at most one denial per client
request), and the refused exchange stays in the conversation the model sees on later turns. The agents are
the official openai and anthropic SDKs against a scripted fake model on 127.0.0.1."""

from __future__ import annotations

import json
from typing import Any

import pytest
from proxy_fakes import Reply, proxy_stack, quiet_config

KEY = "sk-test-0123456789"
DENIAL = "GATE: run the tests before you submit"


def gate(max_denials: int | None) -> Any:
    return quiet_config(
        policies={
            "violations": {"enabled": False},
            "gates": [
                {
                    "name": "test-before-submit",
                    "tool": "submit",
                    "until": {"min_steps": 1000},
                    "max_denials": max_denials,
                    "message": DENIAL,
                }
            ],
        }
    )


def insist(_wire: str, _body: dict[str, Any]) -> Reply:
    return Reply(text="Submitting.", tool_calls=[("submit", {})])


def turn(url: str, api: str, messages: list[Any]) -> tuple[list[str], Any]:
    """One client request through the SDK: the tool names the agent got, and the assistant message."""
    if api == "anthropic":
        import anthropic

        a = anthropic.Anthropic(base_url=url, api_key=KEY, max_retries=0)
        tools: Any = [{"name": n, "input_schema": {"type": "object"}} for n in ("submit", "bash")]
        msg = a.messages.create(model="m", max_tokens=50, tools=tools, messages=messages)
        return [b.name for b in msg.content if b.type == "tool_use"], msg
    from openai import OpenAI

    o = OpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0)
    fns: Any = [
        {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
        for n in ("submit", "bash")
    ]
    out = o.chat.completions.create(model="m", messages=messages, tools=fns).choices[0].message
    return [c.function.name for c in out.tool_calls or []], out  # type: ignore[union-attr]


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_a_repeated_gated_call_spends_one_denial_per_client_request(api: str) -> None:
    """max_denials 2, gate_retries 3, a model that always submits: each client request spends one denial
    (the repeats get it again), so the agent sees the refusal twice before the gate lets it through —
    instead of the gate opening inside the first request, unseen."""
    with proxy_stack(insist, config=gate(2), gate_retries=3) as stack:
        task: list[Any] = [{"role": "user", "content": "Fix calc.py, then submit."}]
        first, msg1 = turn(stack.url, api, task)
        second, _ = turn(stack.url, api, task)
        third, _ = turn(stack.url, api, task)
        counters = dict(stack.app.monitor.counters)
        n = len(stack.fake.requests)
    assert first == [] and second == [], "the gate's budget went inside one request"
    text = msg1.content if api == "openai" else " ".join(b.text for b in msg1.content if b.type == "text")
    assert DENIAL in text  # past the retries, the agent is told
    assert third == ["submit"]  # the budget (2) is the agent's: spent over two client requests
    assert counters["denied"] == 2
    assert counters["denied_again"] == 2 * 3  # three re-asks per refused request, each a repeat
    assert n == 2 * 4 + 1


def _runs_tests_after_a_denial(_wire: str, body: dict[str, Any]) -> Reply:
    seen = json.dumps(body)
    if "1 passed" in seen:
        return Reply(text="Done.")
    if "[planguard]" in seen:
        return Reply(text="Running the tests.", tool_calls=[("bash", {"command": "pytest -q"})])
    return Reply(text="Submitting.", tool_calls=[("submit", {})])


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_the_refusal_stays_in_the_conversation_on_later_turns(api: str) -> None:
    with proxy_stack(_runs_tests_after_a_denial, config=gate(None), gate_retries=1) as stack:
        history: list[Any] = [{"role": "user", "content": "Fix calc.py, then submit."}]
        names, msg = turn(stack.url, api, history)
        assert names == ["bash"]  # the early submit never reached the agent
        if api == "openai":
            call = msg.tool_calls[0]
            history += [
                {"role": "assistant", "content": msg.content, "tool_calls": [call.model_dump()]},
                {"role": "tool", "tool_call_id": call.id, "content": "1 passed"},
            ]
        else:
            use = next(b for b in msg.content if b.type == "tool_use")
            history += [
                {"role": "assistant", "content": [b.model_dump() for b in msg.content]},
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "1 passed"}],
                },
            ]
        names, _ = turn(stack.url, api, history)
        later = stack.fake.requests[-1].body["messages"]
    assert names == []
    # What the model sees on the later turn: the task, the refused submit and its denial, then the agent's
    # own history — as it saw it when it chose to run the tests.
    shown = [json.dumps(m) for m in later]
    assert len(later) == 5
    assert "submit" in shown[1] and DENIAL in shown[2]
    assert "pytest -q" in shown[3] and "1 passed" in shown[4]
