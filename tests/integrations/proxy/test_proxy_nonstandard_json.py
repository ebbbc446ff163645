"""Non-standard JSON through the proxy: crafted answers and requests (a NaN or Infinity token, a lone
surrogate escape, an over-long integer in tool arguments) that orjson refuses and Python's json — which
the official SDKs parse with — accepts. Every answer is observed (``nonstandard_json: observe``) or, with
``refuse``, withheld under a fail-closed gate; a counter for each. The agents are the official openai and
anthropic SDKs against a scripted fake model on 127.0.0.1."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest
from proxy_fakes import Reply, proxy_stack, quiet_config, submit_gate

KEY = "sk-test-0123456789"
GATE = submit_gate()
FAIL_CLOSED = submit_gate(fail_closed=True)
TASK = "Fix the bug, then submit."

#: Top-level members added to the answer (and to every stream event): only the stdlib reads them.
TOP_LEVEL = {
    "nan": b'"x_score": NaN, ',
    "surrogate": b'"x_note": "\\ud800", ',
    "infinity": b'"x_z": -Infinity, ',
}
_OBJECT_START = re.compile(rb"(\A|^data: )\{", re.MULTILINE)


def top_level(kind: str) -> Any:
    member = TOP_LEVEL[kind]
    return lambda body: _OBJECT_START.sub(lambda m: m.group(1) + b"{" + member, body, count=1)


def in_arguments(token: bytes) -> Any:
    """A member added to the tool call's arguments (JSON text inside the answer's JSON string)."""
    return lambda body: body.replace(b'\\"submit\\"}', b'\\"submit\\", \\"n\\": ' + token + b"}")


def submit(craft: Any) -> Any:
    def script(_wire: str, _body: dict[str, Any]) -> Reply:
        return Reply(text="Submitting.", tool_calls=[("bash", {"command": "submit"})], craft=craft)

    return script


def ask(stack: Any, api: str, stream: bool) -> list[str]:
    """One turn through the official SDK; the bash commands the agent got to run."""
    if api == "anthropic":
        import anthropic

        a = anthropic.Anthropic(base_url=stack.url, api_key=KEY, max_retries=0)
        tools: Any = [{"name": "bash", "input_schema": {"type": "object"}}]
        kw: Any = {
            "model": "m",
            "max_tokens": 50,
            "tools": tools,
            "messages": [{"role": "user", "content": TASK}],
        }
        if stream:
            with a.messages.stream(**kw) as s:
                msg = s.get_final_message()
        else:
            msg = a.messages.create(**kw)
        return [str(b.input.get("command")) for b in msg.content if b.type == "tool_use"]  # type: ignore[union-attr]
    from openai import OpenAI

    o = OpenAI(base_url=stack.url + "/v1", api_key=KEY, max_retries=0)
    if api == "responses":
        tool: Any = {"type": "function", "name": "bash", "parameters": {"type": "object"}}
        if stream:
            with o.responses.stream(model="m", input=TASK, tools=[tool]) as rs:
                final = rs.get_final_response()
        else:
            final = o.responses.create(model="m", input=TASK, tools=[tool])
        return [it.arguments for it in final.output if it.type == "function_call"]
    fn: Any = {"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}
    messages: Any = [{"role": "user", "content": TASK}]
    if stream:
        with o.chat.completions.stream(model="m", messages=messages, tools=[fn]) as cs:
            out = cs.get_final_completion().choices[0].message
    else:
        out = o.chat.completions.create(model="m", messages=messages, tools=[fn]).choices[0].message
    return [c.function.arguments for c in out.tool_calls or []]  # type: ignore[union-attr]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("kind", sorted(TOP_LEVEL))
@pytest.mark.parametrize("api", ["openai", "anthropic", "responses"])
def test_a_non_standard_answer_is_observed_and_its_gated_call_denied(
    api: str, kind: str, stream: bool
) -> None:
    with proxy_stack(submit(top_level(kind)), config=quiet_config(**GATE), gate_retries=0) as stack:
        ran = ask(stack, api, stream)
        stats = stack.app.monitor.stats()
    assert ran == [], "a gated call in a non-standard answer reached the agent"
    assert stats["denied"] == 1
    assert stats["json_observed"] >= 1 and stats["json_refused"] == 0
    assert stats["unobserved_answers"] == 0


@pytest.mark.parametrize(
    "token", [b"NaN", b"1e999", b"123456789012345678901234567890"], ids=["nan", "inf", "long"]
)
@pytest.mark.parametrize("api", ["openai", "responses"])
def test_non_standard_tool_arguments_are_read_as_arguments(api: str, token: bytes) -> None:
    """The gate matches on the arguments: read as the stdlib reads them, not as raw text that misses it."""
    with proxy_stack(submit(in_arguments(token)), config=quiet_config(**GATE), gate_retries=0) as stack:
        ran = ask(stack, api, stream=False)
        stats = stack.app.monitor.stats()
    assert ran == []
    assert stats["denied"] == 1 and stats["json_observed"] == 1


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("api", ["openai", "anthropic", "responses"])
def test_refused_non_standard_answer_is_withheld_under_a_fail_closed_gate(api: str, stream: bool) -> None:
    import anthropic
    import openai

    with proxy_stack(
        submit(top_level("nan")),
        config=quiet_config(**FAIL_CLOSED),
        gate_retries=0,
        nonstandard_json="refuse",
    ) as stack:
        # The SDK raises on the withheld answer (the Responses stream helper on an error event before
        # ``response.created``): the gated call never reaches the agent.
        with pytest.raises((openai.APIError, anthropic.APIError, RuntimeError)) as err:
            ask(stack, api, stream)
        stats = stack.app.monitor.stats()
    if not isinstance(err.value, RuntimeError):
        assert "could not check this answer" in str(err.value)
    assert stats["json_refused"] >= 1 and stats["json_observed"] == 0
    assert stats["unobserved_answers"] == 1


def test_refused_non_standard_answer_passes_counted_without_fail_closed_gates() -> None:
    with proxy_stack(
        submit(top_level("nan")), config=quiet_config(**GATE), gate_retries=0, nonstandard_json="refuse"
    ) as stack:
        ran = ask(stack, "openai", stream=False)
        stats = stack.app.monitor.stats()
    assert ran == ['{"command": "submit"}']  # fail-open: forwarded unchanged, and counted
    assert stats["json_refused"] == 1 and stats["unobserved_answers"] == 1


REQUEST = (
    b'{"model": "m", "tools": [{"type": "function", "function": {"name": "bash", "parameters": {}}}],'
    b' "messages": [{"role": "user", "content": "Fix it \\ud800 then submit"}]}'
)


def test_a_non_standard_request_is_observed() -> None:
    """A lone surrogate escape in the request: the conversation is still observed and its answer gated."""
    with proxy_stack(submit(None), config=quiet_config(**GATE), gate_retries=0) as stack:
        r = httpx.post(stack.url + "/v1/chat/completions", content=REQUEST, timeout=30)
        stats = stack.app.monitor.stats()
    assert r.status_code == 200
    assert "tool_calls" not in r.json()["choices"][0]["message"]
    assert stats["requests"] == 1 and stats["denied"] == 1 and stats["json_observed"] == 1


def test_a_refused_non_standard_request_gets_a_400() -> None:
    with proxy_stack(submit(None), config=quiet_config(**GATE), nonstandard_json="refuse") as stack:
        r = httpx.post(stack.url + "/v1/chat/completions", content=REQUEST, timeout=30)
        stats = stack.app.monitor.stats()
        n = len(stack.fake.requests)
    assert r.status_code == 400 and "non-standard JSON" in r.json()["error"]["message"]
    assert n == 0 and stats["json_refused"] == 1
