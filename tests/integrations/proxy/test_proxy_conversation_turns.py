"""The proxy hands the conversation to the session: the user's messages a request carries since the model
last spoke, and the assistant's text of each answer, once each. The official openai (chat completions,
responses) and anthropic SDKs drive a tau-bench-style airline agent through the proxy to the fake model API,
streaming and not. Under ``plan: support``, the confirm phase is the user's yes to the agent's proposal: a
gate waiting on it lets ``cancel_reservation`` through after "Yes, please" and denies it without."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Callable
from typing import Any

import anthropic
import httpx
import openai
import pytest
from planguard_proxy import MemoryStore
from proxy_fakes import FakeUpstream, Reply, ServerThread, proxy_stack, quiet_config

from planguard.phases.declarative import MESSAGE_LABEL

SID = "airline-1"
HEADERS = {"X-Planguard-Session": SID}
SYSTEM = "You are an airline customer service agent. Follow the policy."
TASK = "Hi, I'm mia_li_3668 (mia.li@example.com). I want to cancel my reservation EHGLP3."
PROPOSAL = (
    "Reservation EHGLP3 (JFK to SFO, basic economy) was booked 3 hours ago, so it can be cancelled with a "
    "full refund. Shall I cancel reservation EHGLP3? Please answer yes to proceed."
)
#: The model's turns, in order: identify, look up, propose (text only: the user answers), act, close.
SCRIPT: list[Reply] = [
    Reply(tool_calls=[("find_user_id_by_email", {"email": "mia.li@example.com"})]),
    Reply(tool_calls=[("get_reservation_details", {"reservation_id": "EHGLP3"})]),
    Reply(text=PROPOSAL),
    Reply(tool_calls=[("cancel_reservation", {"reservation_id": "EHGLP3"})]),
    Reply(text="Your reservation EHGLP3 is cancelled; the refund goes to your original payment method."),
]
TOOLS = ["find_user_id_by_email", "get_reservation_details", "cancel_reservation"]
CONFIG = {
    "plan": "support",
    "policies": {
        "violations": {"enabled": False},
        "gates": [
            {"name": "confirm-before-cancel", "tool": "cancel_*", "until": {"phases_seen": ["confirm"]}}
        ],
    },
}


def _model_turns(wire: str, body: dict[str, Any]) -> int:
    items = body.get("input") if wire == "responses" else body.get("messages")
    return sum(
        1
        for m in items or ()
        if isinstance(m, dict) and (m.get("role") == "assistant" or m.get("type") == "function_call")
    )


def script(wire: str, body: dict[str, Any]) -> Reply:
    return SCRIPT[min(_model_turns(wire, body), len(SCRIPT) - 1)]


class Airline:
    """The tools, run by the agent loop on a small database."""

    def __init__(self) -> None:
        self.status = "booked"

    def run(self, name: str, args: dict[str, Any]) -> str:
        if name == "find_user_id_by_email":
            return "mia_li_3668"
        if name == "get_reservation_details":
            return json.dumps({"reservation_id": args["reservation_id"], "status": self.status})
        assert name == "cancel_reservation"
        self.status = "cancelled"
        return json.dumps({"reservation_id": args["reservation_id"], "status": self.status})


#: One model call of an agent loop: (the answer's text, its tool calls as (id, name, arguments)).
Answer = tuple[str, list[tuple[str, str, dict[str, Any]]]]


def converse(
    ask: Callable[[], Answer],
    add_calls: Callable[[str, list[tuple[str, str, dict[str, Any]]], list[str]], None],
    add_reply: Callable[[str, str], None],
    db: Airline,
    replies: list[str],
) -> list[str]:
    """The agent loop: run the answer's tool calls, or hand its text to the user, who answers with the next
    reply (none left: the run ends). Returns the assistant's texts the user saw."""
    said = []
    for _ in range(12):
        text, calls = ask()
        if not calls:
            said.append(text)
            if not replies:
                return said
            add_reply(text, replies.pop(0))
            continue
        add_calls(text, calls, [db.run(name, args) for _id, name, args in calls])
    raise AssertionError("the agent did not finish")


def run_chat(url: str | list[str], db: Airline, replies: list[str], *, stream: bool) -> list[str]:
    """Chat completions; with several URLs, requests go to them in turn (replicas behind a balancer)."""
    clients = [
        openai.OpenAI(base_url=u + "/v1", api_key="sk-test", max_retries=0, default_headers=HEADERS)
        for u in ([url] if isinstance(url, str) else url)
    ]
    tools: Any = [
        {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}} for n in TOOLS
    ]
    messages: Any = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": TASK}]
    asked = itertools.count()

    def ask() -> Answer:
        client = clients[next(asked) % len(clients)]
        kw: dict[str, Any] = {"model": "gpt-fake", "messages": messages, "tools": tools}
        if stream:
            with client.chat.completions.stream(**kw) as st:
                msg = st.get_final_completion().choices[0].message
        else:
            msg = client.chat.completions.create(**kw).choices[0].message
        calls = [(c.id, c.function.name, json.loads(c.function.arguments)) for c in msg.tool_calls or ()]
        return msg.content or "", calls

    def add_calls(text: str, calls: list[tuple[str, str, dict[str, Any]]], outs: list[str]) -> None:
        fns = [{"name": n, "arguments": json.dumps(a)} for _i, n, a in calls]
        tcs = [
            {"id": i, "type": "function", "function": f} for (i, _n, _a), f in zip(calls, fns, strict=True)
        ]
        messages.append({"role": "assistant", "content": text or None, "tool_calls": tcs})
        messages.extend(
            {"role": "tool", "tool_call_id": i, "content": o}
            for (i, _n, _a), o in zip(calls, outs, strict=True)
        )

    def add_reply(text: str, reply: str) -> None:
        messages.extend([{"role": "assistant", "content": text}, {"role": "user", "content": reply}])

    return converse(ask, add_calls, add_reply, db, replies)


def run_responses(url: str, db: Airline, replies: list[str], *, stream: bool) -> list[str]:
    """The Responses API, the whole history sent each time."""
    client = openai.OpenAI(base_url=url + "/v1", api_key="sk-test", max_retries=0, default_headers=HEADERS)
    tools: Any = [{"type": "function", "name": n, "parameters": {"type": "object"}} for n in TOOLS]
    history: list[Any] = [{"role": "user", "content": TASK}]

    def ask() -> Answer:
        kw: dict[str, Any] = {"model": "gpt-fake", "instructions": SYSTEM, "input": history, "tools": tools}
        if stream:
            with client.responses.stream(**kw) as st:
                resp = st.get_final_response()
        else:
            resp = client.responses.create(**kw)
        calls = [
            (o.call_id, o.name, json.loads(o.arguments)) for o in resp.output if o.type == "function_call"
        ]
        return resp.output_text, calls

    def add_calls(text: str, calls: list[tuple[str, str, dict[str, Any]]], outs: list[str]) -> None:
        for (i, n, a), o in zip(calls, outs, strict=True):
            history.append({"type": "function_call", "call_id": i, "name": n, "arguments": json.dumps(a)})
            history.append({"type": "function_call_output", "call_id": i, "output": o})

    def add_reply(text: str, reply: str) -> None:
        history.extend([{"role": "assistant", "content": text}, {"role": "user", "content": reply}])

    return converse(ask, add_calls, add_reply, db, replies)


def run_anthropic(url: str, db: Airline, replies: list[str], *, stream: bool) -> list[str]:
    client = anthropic.Anthropic(base_url=url, api_key="sk-ant-test", max_retries=0, default_headers=HEADERS)
    tools: Any = [{"name": n, "input_schema": {"type": "object"}} for n in TOOLS]
    messages: list[dict[str, Any]] = [{"role": "user", "content": TASK}]

    def ask() -> Answer:
        kw: dict[str, Any] = {"model": "claude-fake", "max_tokens": 1024, "system": SYSTEM, "tools": tools}
        if stream:
            with client.messages.stream(messages=messages, **kw) as st:
                message = st.get_final_message()
        else:
            message = client.messages.create(messages=messages, **kw)
        text = "".join(b.text for b in message.content if b.type == "text")
        return text, [(b.id, b.name, dict(b.input)) for b in message.content if b.type == "tool_use"]

    def add_calls(text: str, calls: list[tuple[str, str, dict[str, Any]]], outs: list[str]) -> None:
        blocks = [{"type": "text", "text": text}] if text else []
        blocks += [{"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in calls]
        results = [
            {"type": "tool_result", "tool_use_id": i, "content": o}
            for (i, _n, _a), o in zip(calls, outs, strict=True)
        ]
        messages.extend([{"role": "assistant", "content": blocks}, {"role": "user", "content": results}])

    def add_reply(text: str, reply: str) -> None:
        messages.extend(
            [
                {"role": "assistant", "content": [{"type": "text", "text": text}]},
                {"role": "user", "content": [{"type": "text", "text": reply}]},
            ]
        )

    return converse(ask, add_calls, add_reply, db, replies)


RUNS = {"chat": run_chat, "responses": run_responses, "anthropic": run_anthropic}


def _run(
    api: str, stream: bool, reply: str
) -> tuple[Airline, list[str], dict[str, Any], list[dict[str, Any]]]:
    db = Airline()
    with proxy_stack(script, config=quiet_config(**CONFIG)) as stack:
        said = RUNS[api](stack.url, db, [reply], stream=stream)
        summary = httpx.get(f"{stack.url}/_planguard/sessions/{SID}").json()
        log = asyncio.run(stack.app.store.read(SID, 0))
    return db, said, summary, log


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("api", list(RUNS))
def test_the_users_yes_in_chat_opens_the_confirm_gate(api: str, stream: bool) -> None:
    db, said, summary, log = _run(api, stream, "Yes, please.")
    assert db.status == "cancelled"
    assert said == [PROPOSAL, SCRIPT[-1].text]
    assert summary["letters"] == "ILCA"
    assert summary["decision_counts"].get("deny", 0) == 0
    turns = [
        (e["message"]["role"], [r for _label, r in e["message"]["match"]["commands"]])
        for e in log
        if e["op"] == "message"
    ]
    # Each turn once: the task, the proposal, the yes, the closing text (the history is resent every time).
    assert turns == [("user", []), ("assistant", []), ("user", ["confirm"]), ("assistant", [])]
    assert all(
        c == [MESSAGE_LABEL, "confirm"]
        for e in log
        if e["op"] == "message"
        for c in e["message"]["match"]["commands"]
    )
    # The log keeps the match, never the text.
    assert "Yes, please" not in json.dumps(log) and "EHGLP3? Please" not in json.dumps(log)


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("api", list(RUNS))
def test_without_the_yes_the_cancellation_is_denied(api: str, stream: bool) -> None:
    db, _said, summary, log = _run(api, stream, "Hmm, what would the refund be?")
    assert db.status == "booked"
    assert summary["letters"] == "IL"  # the denied call never ran; no confirm was seen
    assert summary["decision_counts"]["deny"] >= 1
    assert "Check policy and confirm" in [e for e in log if e["op"] == "pre"][-1]["denied"]


def test_replicas_share_the_turns_match_not_their_text() -> None:
    """The proposal is answered through replica A, the user's yes reaches replica B: B learns from the
    shared log that the proposal asked for a confirmation (the match), and lets the cancellation through."""
    db = Airline()
    store = MemoryStore()
    fake = FakeUpstream(script)
    config = quiet_config(**CONFIG)
    with (
        ServerThread(fake.app) as up,
        proxy_stack(fake=fake, upstream=up, store=store, config=config) as a,
        proxy_stack(fake=fake, upstream=up, store=store, config=config) as b,
    ):
        said = run_chat([a.url, b.url], db, ["Yes, please."], stream=False)
        summary = httpx.get(f"{b.url}/_planguard/sessions/{SID}").json()
    assert db.status == "cancelled"
    assert said[0] == PROPOSAL
    assert summary["letters"] == "ILCA"
    assert summary["decision_counts"].get("deny", 0) == 0


def test_a_request_sent_again_adds_no_turn() -> None:
    """A client's retry resends the same history: its user turns are observed once."""
    body = {"model": "gpt-fake", "messages": [{"role": "user", "content": TASK}], "tools": []}
    with proxy_stack(lambda _wire, _body: Reply(text=PROPOSAL), config=quiet_config(**CONFIG)) as stack:
        for _ in range(2):
            r = httpx.post(f"{stack.url}/v1/chat/completions", json=body, headers=HEADERS)
            assert r.status_code == 200
        log = asyncio.run(stack.app.store.read(SID, 0))
    users = [e for e in log if e["op"] == "message" and e["message"]["role"] == "user"]
    assert len(users) == 1
    assert [e["op"] for e in log].count("model") == 2  # both requests still count as model calls
