"""Load on loopback, bounded in count and time: 200 concurrent streaming conversations of 3 model calls
each (600 streamed responses with tool calls) through the proxy, no errors, one session each."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import httpx
import pytest
from proxy_fakes import proxy_stack

CONVERSATIONS = 200
TURNS = 3
TIME_LIMIT_S = 180


async def _turn(client: httpx.AsyncClient, url: str, messages: list[dict[str, Any]]) -> tuple[str, str, str]:
    """One streamed model call; returns the tool call (id, name, arguments) assembled from the deltas."""
    body = {"model": "m", "messages": messages, "stream": True, "tools": []}
    call: dict[str, str] = {"id": "", "name": "", "arguments": ""}
    done = False
    async with client.stream("POST", url + "/v1/chat/completions", json=body) as r:
        assert r.status_code == 200, await r.aread()
        buf = ""
        async for text in r.aiter_text():
            buf += text
            while "\n\n" in buf:
                event, buf = buf.split("\n\n", 1)
                data = event.removeprefix("data: ")
                if data == "[DONE]":
                    done = True
                    continue
                for ch in json.loads(data)["choices"]:
                    for tc in ch["delta"].get("tool_calls") or ():
                        call["id"] = tc.get("id") or call["id"]
                        fn = tc.get("function") or {}
                        call["name"] += fn.get("name") or ""
                        call["arguments"] += fn.get("arguments") or ""
    assert done and call["id"], "incomplete stream"
    return call["id"], call["name"], call["arguments"]


async def _conversation(client: httpx.AsyncClient, url: str, n: int) -> int:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "agent"},
        {"role": "user", "content": f"task number {n}"},
    ]
    for _ in range(TURNS):
        cid, name, args = await _turn(client, url, messages)
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": cid, "content": f"<returncode>0</returncode>{n}"})
    return TURNS


async def _load(url: str) -> list[Any]:
    limits = httpx.Limits(max_connections=CONVERSATIONS, max_keepalive_connections=CONVERSATIONS)
    async with httpx.AsyncClient(limits=limits, timeout=60) as client:
        tasks = [_conversation(client, url, n) for n in range(CONVERSATIONS)]
        return await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), TIME_LIMIT_S)


@pytest.mark.slow
def test_200_concurrent_streaming_conversations() -> None:
    with proxy_stack(max_connections=CONVERSATIONS) as stack:
        t0 = time.monotonic()
        results = asyncio.run(_load(stack.url))
        elapsed = time.monotonic() - t0
        counters = dict(stack.app.monitor.counters)
        n_sessions = len(stack.app.monitor.conversations)
        errors = dict(stack.guard.errors.counts)
        steps = [stack.guard.session(sid).n_steps for sid in stack.app.monitor.conversations]
    failures = [r for r in results if isinstance(r, BaseException)]
    assert not failures, failures[:3]
    assert results == [TURNS] * CONVERSATIONS
    assert n_sessions == CONVERSATIONS
    assert counters["requests"] == CONVERSATIONS * TURNS
    assert counters["calls"] == CONVERSATIONS * TURNS
    assert counters["results"] == CONVERSATIONS * (TURNS - 1)
    assert counters["fail_open"] == 0
    assert not [k for k in errors if k.startswith("proxy.")], errors
    assert steps == [TURNS] * CONVERSATIONS
    print(
        f"\nload: {CONVERSATIONS} conversations x {TURNS} streamed calls in {elapsed:.1f} s "
        f"({CONVERSATIONS * TURNS / elapsed:.0f} streamed responses/s, no errors)"
    )
