"""Chained Responses API follow-ups (only ``previous_response_id``, perhaps ``instructions``) are one
session on any replica and after a restart: the response-id map lives where the conversation does (a real
Redis, started by ``.ci/services/redis.sh``). The official openai SDK is the agent; the gate holds."""

from __future__ import annotations

import os
import uuid
from typing import Any

import pytest
from planguard_proxy.store import MemoryStore, RedisStore
from proxy_fakes import FakeUpstream, Reply, ServerThread, proxy_stack, quiet_config, submit_gate

KEY = "sk-test-0123456789"
GATE = submit_gate(fail_closed=True)
BASH: Any = {"type": "function", "name": "bash", "parameters": {"type": "object"}}


def agent(_wire: str, body: dict[str, Any]) -> Reply:
    """Lists the files first; given a tool result, submits."""
    items = body.get("input")
    if isinstance(items, list) and any(
        isinstance(i, dict) and i.get("type") == "function_call_output" for i in items
    ):
        return Reply(text="Submitting.", tool_calls=[("bash", {"command": "submit"})])
    return Reply(text="Looking.", tool_calls=[("bash", {"command": "ls"})])


def follow_up(url: str, previous: Any, instructions: str | None) -> Any:
    from openai import OpenAI

    client = OpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0)
    call = next(o for o in previous.output if o.type == "function_call")
    output: Any = [{"type": "function_call_output", "call_id": call.call_id, "output": "calc.py"}]
    extra: Any = {"instructions": instructions} if instructions else {}
    return client.responses.create(
        model="m", previous_response_id=previous.id, input=output, tools=[BASH], **extra
    )


def first_turn(url: str, instructions: str | None) -> Any:
    from openai import OpenAI

    client = OpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0)
    extra: Any = {"instructions": instructions} if instructions else {}
    return client.responses.create(model="m", input="Fix calc.py, then submit.", tools=[BASH], **extra)


@pytest.fixture
def redis_url() -> str:
    url = os.environ.get("REDIS_URL")
    if not url:
        pytest.skip("REDIS_URL not set: start Redis with `eval $(bash .ci/services/redis.sh start)`")
    return url


@pytest.mark.parametrize(
    "instructions", [None, "You are a careful coding agent."], ids=["bare", "instructions"]
)
def test_chained_follow_ups_are_one_session_on_another_replica_and_after_a_restart(
    redis_url: str, instructions: str | None
) -> None:
    prefix = f"test:chained:{uuid.uuid4().hex}:"
    fake = FakeUpstream(agent)
    with ServerThread(fake.app, timeout_keep_alive=60) as up:
        kw: Any = {"config": quiet_config(**GATE), "fake": fake, "upstream": up, "gate_retries": 0}
        with (
            proxy_stack(store=RedisStore(redis_url, prefix=prefix), **kw) as a,
            proxy_stack(store=RedisStore(redis_url, prefix=prefix), **kw) as b,
        ):
            r1 = first_turn(a.url, instructions)
            assert [o.type for o in r1.output] == ["message", "function_call"]  # ls: allowed
            r2 = follow_up(b.url, r1, instructions)  # another replica
            sessions = set(a.app.monitor.conversations) | set(b.app.monitor.conversations)
            replayed = b.app.monitor.counters["replayed"]
        with proxy_stack(store=RedisStore(redis_url, prefix=prefix), **kw) as c:  # restarted
            r3 = follow_up(c.url, r1, instructions)
            sessions |= set(c.app.monitor.conversations)
    assert len(sessions) == 1, sessions
    assert replayed > 0  # replica b caught up on replica a's log: one session
    for r in (r2, r3):
        assert all(o.type != "function_call" for o in r.output), "a gated submit reached the agent"
        assert "GATE: run the tests before submitting" in r.output_text


def test_chained_follow_up_joins_its_conversation_through_the_memory_store() -> None:
    """Two replicas of one process sharing a memory store: the map is the store's, not a replica's."""
    store = MemoryStore()
    fake = FakeUpstream(agent)
    with ServerThread(fake.app, timeout_keep_alive=60) as up:
        kw: Any = {"config": quiet_config(**GATE), "fake": fake, "upstream": up, "gate_retries": 0}
        with proxy_stack(store=store, **kw) as a, proxy_stack(store=store, **kw) as b:
            r1 = first_turn(a.url, None)
            r2 = follow_up(b.url, r1, None)
            assert set(b.app.monitor.conversations) == set(a.app.monitor.conversations)
    assert all(o.type != "function_call" for o in r2.output)
