"""The OpenAI Responses API through the proxy: the official ``openai`` client gets the same bytes as from
the upstream directly, tool calls are classified and recorded, ``previous_response_id`` chains stay one
conversation, and a gated call is answered by the proxy so the model is asked again."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import openai
import pytest
from proxy_fakes import (
    SCRIPTED_COMMANDS,
    FakeUpstream,
    RecordingSink,
    ServerThread,
    proxy_stack,
)

KEY = "sk-test-OPENAI-secret-0123456789"
BASH: Any = {
    "type": "function",
    "name": "bash",
    "description": "Run a bash command",
    "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
}


def _client(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0)


def _raw_create(url: str, stream: bool, **kw: Any) -> bytes:
    args: dict[str, Any] = {
        "model": "gpt-fake",
        "instructions": "You are a coding agent.",
        "input": "Fix add() in calc.py.",
        "tools": [BASH],
        **kw,
    }
    if stream:
        with _client(url).responses.with_streaming_response.create(stream=True, **args) as r:
            return b"".join(r.iter_bytes())
    with _client(url).responses.with_streaming_response.create(**args) as r:
        return r.read()


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_responses_through_the_proxy_are_byte_identical_to_a_direct_call(stream: bool) -> None:
    with proxy_stack() as stack:
        direct = _raw_create(stack.upstream.url, stream)
        proxied = _raw_create(stack.url, stream)
        counters = dict(stack.app.monitor.counters)
    assert proxied == direct
    assert b"function_call" in direct  # the scripted answer is a tool call, observed on the way
    assert counters["calls"] == 1 and counters["fail_open"] == 0


def test_responses_stream_is_parsed_by_the_sdk_and_matches_the_plain_answer() -> None:
    with proxy_stack() as stack:
        events = list(_client(stack.url).responses.create(model="m", input="task", tools=[BASH], stream=True))
    done = [e for e in events if e.type == "response.completed"]
    assert len(done) == 1
    (call,) = [o for o in done[0].response.output if o.type == "function_call"]
    assert call.name == "bash" and json.loads(call.arguments) == {"command": SCRIPTED_COMMANDS[0]}


def _bash(cwd: Path, command: str) -> str:
    p = subprocess.run(command, shell=True, cwd=cwd, capture_output=True, text=True, timeout=30)
    return f"<returncode>{p.returncode}</returncode>\n{p.stdout}{p.stderr}"


def run_responses_agent(url: str, cwd: Path, *, stream: bool, chained: bool) -> int:
    """A coding-agent loop on ``responses.create``: the whole history resent, or chained by
    ``previous_response_id`` (only the new function_call_output items sent)."""
    client = _client(url)
    history: list[Any] = [{"role": "user", "content": "Fix add() in calc.py: add(2, 2) must be 4."}]
    new: list[Any] = list(history)
    previous: str | None = None
    calls = 0
    for _ in range(20):
        calls += 1
        kw: dict[str, Any] = {"model": "gpt-fake", "instructions": "You are a coding agent.", "tools": [BASH]}
        if chained:
            kw["input"] = new
            if previous:
                kw["previous_response_id"] = previous
        else:
            kw["input"] = history
        if stream:
            resp = None
            for ev in client.responses.create(stream=True, **kw):
                if ev.type == "response.completed":
                    resp = ev.response
            assert resp is not None
        else:
            resp = client.responses.create(**kw)
        previous = resp.id
        fcs = [o for o in resp.output if o.type == "function_call"]
        if not fcs:
            break
        new = []
        for fc in fcs:
            out = {
                "type": "function_call_output",
                "call_id": fc.call_id,
                "output": _bash(cwd, json.loads(fc.arguments)["command"]),
            }
            item = {
                "type": "function_call",
                "call_id": fc.call_id,
                "name": fc.name,
                "arguments": fc.arguments,
            }
            history += [item, out]
            new.append(out)
    return calls


@pytest.mark.parametrize("chained", [False, True], ids=["history", "previous_response_id"])
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_responses_agent_calls_are_classified_and_recorded(
    stream: bool, chained: bool, tmp_path: Path
) -> None:
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    sink = RecordingSink()
    fake = FakeUpstream()
    if chained:
        # The chained requests carry no history: the fake scripts by the count of results it was sent.
        sent: list[int] = [0]

        def script(wire: str, body: dict[str, Any]) -> Any:
            from proxy_fakes import Reply

            k = sent[0]
            sent[0] += 1
            if k < len(SCRIPTED_COMMANDS):
                return Reply(text=f"Step {k + 1}.", tool_calls=[("bash", {"command": SCRIPTED_COMMANDS[k]})])
            return Reply(text="Done.")

        fake.script = script
    with ServerThread(fake.app) as up, proxy_stack(fake=fake, upstream=up, sinks=(sink,)) as stack:
        n = run_responses_agent(stack.url, tmp_path, stream=stream, chained=chained)
        conversations = len(stack.app.monitor.conversations)
    assert n == len(SCRIPTED_COMMANDS) + 1
    assert conversations == 1  # a chain is one conversation
    ends = sink.of("tool_end")
    assert [c[0] for c in ends] == [c[0] for c in sink.of("tool_start")]
    assert len(ends) == len(SCRIPTED_COMMANDS)
    roles = {r for _cid, rs, _rc in ends for r in rs}
    assert {"L_navigate", "P"} <= roles
    assert "return a + b" in (tmp_path / "calc.py").read_text()
