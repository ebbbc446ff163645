"""End to end: the official openai and anthropic SDKs drive a coding-agent loop through the proxy to a fake
model API on 127.0.0.1, executing real bash in a temp directory; streaming and not."""

from __future__ import annotations

import json
import logging
import subprocess
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest
from proxy_fakes import SCRIPTED_COMMANDS, RecordingSink, proxy_stack, quiet_config

from planguard.sinks.telemetry.testing import TelemetryCapture

OPENAI_KEY = "sk-test-OPENAI-secret-0123456789"
ANTHROPIC_KEY = "sk-ant-test-secret-0123456789"
SYSTEM = "You are a coding agent. Use the bash tool."
TASK = "Fix add() in calc.py: add(2, 2) must be 4."
BASH_OPENAI: Any = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "Run a bash command",
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string"}},
            "required": ["command"],
        },
    },
}
BASH_ANTHROPIC: Any = {
    "name": "bash",
    "description": "Run a bash command",
    "input_schema": {
        "type": "object",
        "properties": {"command": {"type": "string"}},
        "required": ["command"],
    },
}


def workdir(tmp_path: Path) -> Path:
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    return tmp_path


def bash(cwd: Path, command: str) -> tuple[int, str]:
    p = subprocess.run(command, shell=True, cwd=cwd, capture_output=True, text=True, timeout=30)
    return p.returncode, p.stdout + p.stderr


def observation(rc: int, out: str) -> str:
    return f"<returncode>{rc}</returncode>\n<output>\n{out}</output>"


def run_openai_agent(
    base_url: str | list[str], cwd: Path, *, stream: bool, headers: dict[str, str] | None = None
) -> int:
    """The agent loop; with several base URLs, model calls go to them in turn (replicas behind a balancer)."""
    urls = [base_url] if isinstance(base_url, str) else base_url
    clients = [
        openai.OpenAI(base_url=u + "/v1", api_key=OPENAI_KEY, max_retries=0, default_headers=headers or {})
        for u in urls
    ]
    messages: Any = [  # the SDKs' TypedDict message params, built as plain dicts
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": TASK},
    ]
    calls = 0
    for _ in range(20):
        client = clients[calls % len(clients)]
        calls += 1
        if stream:
            with client.chat.completions.stream(
                model="gpt-fake",
                messages=messages,
                tools=[BASH_OPENAI],
            ) as s:
                for _event in s:
                    pass
                completion = s.get_final_completion()
        else:
            completion = client.chat.completions.create(  # type: ignore[assignment]
                model="gpt-fake",
                messages=messages,
                tools=[BASH_OPENAI],
            )
        msg = completion.choices[0].message
        if not msg.tool_calls:
            break
        messages.append(
            {
                "role": "assistant",
                "content": msg.content,
                "tool_calls": [
                    {
                        "id": tc.id,
                        "type": "function",
                        "function": {"name": tc.function.name, "arguments": tc.function.arguments},
                    }
                    for tc in msg.tool_calls
                ],
            }
        )
        for tc in msg.tool_calls:
            rc, out = bash(cwd, json.loads(tc.function.arguments)["command"])
            messages.append({"role": "tool", "tool_call_id": tc.id, "content": observation(rc, out)})
    return calls


def run_anthropic_agent(base_url: str | list[str], cwd: Path, *, stream: bool) -> int:
    urls = [base_url] if isinstance(base_url, str) else base_url
    clients = [anthropic.Anthropic(base_url=u, api_key=ANTHROPIC_KEY, max_retries=0) for u in urls]
    messages: list[dict[str, Any]] = [{"role": "user", "content": TASK}]
    calls = 0
    for _ in range(20):
        client = clients[calls % len(clients)]
        calls += 1
        kw: dict[str, Any] = {
            "model": "claude-fake",
            "max_tokens": 1024,
            "system": SYSTEM,
            "messages": messages,
            "tools": [BASH_ANTHROPIC],
        }
        if stream:
            with client.messages.stream(**kw) as s:
                for _event in s:
                    pass
                message = s.get_final_message()
        else:
            message = client.messages.create(**kw)
        uses = [b for b in message.content if b.type == "tool_use"]
        if not uses:
            break
        messages.append(
            {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in message.content]}
        )
        results = []
        for b in uses:
            rc, out = bash(cwd, str(b.input["command"]))
            results.append(
                {
                    "type": "tool_result",
                    "tool_use_id": b.id,
                    "content": observation(rc, out),
                    "is_error": rc != 0,
                }
            )
        messages.append({"role": "user", "content": results})
    return calls


def reminder_calls(stack: Any) -> list[int]:
    """1-based model calls whose upstream request ended with a plan reminder."""
    out = []
    for i, r in enumerate(stack.fake.requests, 1):
        last = r.body["messages"][-1]
        content = last["content"]
        text = content if isinstance(content, str) else " ".join(b.get("text", "") for b in content)
        if "PLAN REMINDER:" in text:
            out.append(i)
    return out


@pytest.mark.parametrize(
    ("stream", "http_client"),
    [(False, "builtin"), (True, "builtin"), (True, "httpx")],
    ids=["plain", "stream", "stream-httpx"],
)
@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_sdk_agent_loop_through_proxy(
    api: str, stream: bool, http_client: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    cap = TelemetryCapture()
    rec = RecordingSink()
    cwd = workdir(tmp_path)
    with proxy_stack(sinks=(cap.sink, rec), http_client=http_client) as stack:
        run = run_openai_agent if api == "openai" else run_anthropic_agent
        n_calls = run(stack.url, cwd, stream=stream)
        (sid,) = [k for k in stack.app.monitor.conversations]
        session = stack.guard.session(sid)
        summary = session.summary()
        errors = dict(stack.guard.errors.counts)
        stored = json.dumps(stack.app.store._logs[sid][0])
    # The real agent ran: the bug is fixed by the scripted patch.
    assert "return a + b" in (cwd / "calc.py").read_text()
    assert n_calls == len(SCRIPTED_COMMANDS) + 1
    # One session: every tool call classified and closed with its result, every model call counted.
    assert sid.startswith("conv-")
    assert summary.n_steps == len(SCRIPTED_COMMANDS)
    assert summary.n_model_calls == n_calls
    assert not stack.app.monitor.conversations[sid].open if sid in stack.app.monitor.conversations else True
    ends = rec.of("tool_end")
    assert len(ends) == len(SCRIPTED_COMMANDS)
    assert [e[2] for e in ends] == [0, 0, 0, 0, 1, 0, 0, 0, 0, 0]  # exit codes read from the observations
    assert summary.letters  # phases recorded
    assert {"L_navigate", "P"} <= {
        r.split("_newly")[0].split("_regression")[0] for e in ends for r in e[1]
    } | {r for e in ends for r in e[1]}
    assert summary.scores  # compliance metrics against the plan
    # The paper's reminder: in the upstream request every 5 model calls, as the final message, ephemeral.
    assert reminder_calls(stack) == [5, 10]
    for r in stack.fake.requests:
        for m in r.body["messages"][:-1]:
            assert "PLAN REMINDER:" not in json.dumps(m)
    # Credentials pass through and are never logged, stored or put in telemetry.
    key = OPENAI_KEY if api == "openai" else ANTHROPIC_KEY
    r0 = stack.fake.requests[0].headers
    assert r0.get("authorization") == f"Bearer {key}" or r0.get("x-api-key") == key
    assert cap.flush()
    spans = cap.spans()
    assert len(cap.spans("execute_tool bash")) == len(SCRIPTED_COMMANDS)
    assert key not in caplog.text
    assert key not in stored
    for span in spans:
        assert key not in json.dumps({k: str(v) for k, v in (span.attributes or {}).items()})
    assert errors == {}


def test_session_header_names_the_session(tmp_path: Path) -> None:
    with proxy_stack() as stack:
        run_openai_agent(
            stack.url, workdir(tmp_path), stream=False, headers={"X-Planguard-Session": "run-42"}
        )
        assert list(stack.app.monitor.conversations) == ["run-42"]
        assert stack.guard.session("run-42").n_steps == len(SCRIPTED_COMMANDS)
        # The header is planguard's: it is not sent upstream.
        assert all("x-planguard-session" not in r.headers for r in stack.fake.requests)
        summary = httpx.get(stack.url + "/_planguard/sessions/run-42").json()
        assert summary["n_steps"] == len(SCRIPTED_COMMANDS) and summary["n_model_calls"] == 11


def test_two_conversations_are_two_sessions(tmp_path: Path) -> None:
    with proxy_stack() as stack:
        a, b = tmp_path / "a", tmp_path / "b"
        a.mkdir()
        b.mkdir()
        run_openai_agent(stack.url, workdir(a), stream=False)
        client = openai.OpenAI(base_url=stack.url + "/v1", api_key=OPENAI_KEY, max_retries=0)
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "another task"}])
        assert len(stack.app.monitor.conversations) == 2


GATE = {
    "policies": {
        "gates": [
            {
                "name": "no-sed",
                "tool": "bash",
                "arguments": {"command": "^sed "},
                "until": {"min_steps": 1000},
                "max_denials": None,
                "message": "GATE no-sed: edit files another way",
            }
        ]
    }
}


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_gate_rewrite_replaces_denied_call_with_reason(api: str, stream: bool, tmp_path: Path) -> None:
    cwd = workdir(tmp_path)
    # gate_retries 0: the proxy does not ask the model again (what it does once its retries are used up).
    with proxy_stack(config=quiet_config(**GATE), gate="rewrite", gate_retries=0) as stack:
        run = run_openai_agent if api == "openai" else run_anthropic_agent
        n_calls = run(stack.url, cwd, stream=stream)
        counters = dict(stack.app.monitor.counters)
    # The scripted agent's 6th call (sed) was replaced by the reason: its turn ended there, sed never ran.
    assert n_calls == 6
    assert "return a - b" in (cwd / "calc.py").read_text()
    assert counters["denied"] == 1
    assert len(stack.fake.requests) == 6


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_gate_rewrite_asks_again_and_the_agent_goes_on(api: str, stream: bool, tmp_path: Path) -> None:
    cwd = workdir(tmp_path)
    with proxy_stack(config=quiet_config(**GATE), gate="rewrite") as stack:
        run = run_openai_agent if api == "openai" else run_anthropic_agent
        n_calls = run(stack.url, cwd, stream=stream)
        counters = dict(stack.app.monitor.counters)
    # The 6th call (sed) was answered by the proxy with the denial; the model, asked again, went on with the
    # next steps of its script (with gate_retries 0 the agent stopped at 6 calls); sed never ran. (The final
    # submit may be denied too, by the default plan-violation policy: no patch happened.)
    assert n_calls > 6
    assert "return a - b" in (cwd / "calc.py").read_text()
    assert counters["asked_again"] == counters["denied"] >= 1
    asked_again = json.dumps(stack.fake.requests[6].body)
    assert "[planguard] tool call not run: GATE no-sed" in asked_again


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_gate_annotate_prefixes_the_result_in_next_request(api: str, tmp_path: Path) -> None:
    cwd = workdir(tmp_path)
    with proxy_stack(config=quiet_config(**GATE), gate="annotate") as stack:
        run = run_openai_agent if api == "openai" else run_anthropic_agent
        run(stack.url, cwd, stream=True)
    # annotate is advisory: the call ran, and its result in the next request carries the reason.
    assert "return a + b" in (cwd / "calc.py").read_text()
    req7 = json.dumps(stack.fake.requests[6].body)
    assert "[planguard] tool call not run: GATE no-sed" in req7
    assert "[planguard]" not in json.dumps(stack.fake.requests[5].body)


def test_credential_headers_pass_through_unchanged() -> None:
    with proxy_stack() as stack:
        body = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
        r = httpx.post(
            stack.url + "/v1/messages",
            json=body,
            headers={"x-api-key": ANTHROPIC_KEY, "anthropic-version": "2023-06-01"},
        )
        assert r.status_code == 200
        r = httpx.post(
            stack.url + "/v1/chat/completions",
            json={"model": "m", "messages": body["messages"]},
            headers={"Authorization": f"Bearer {OPENAI_KEY}", "OpenAI-Organization": "org-1"},
        )
        assert r.status_code == 200
    first, second = stack.fake.requests
    assert first.headers["x-api-key"] == ANTHROPIC_KEY and first.headers["anthropic-version"] == "2023-06-01"
    assert (
        second.headers["authorization"] == f"Bearer {OPENAI_KEY}"
        and second.headers["openai-organization"] == "org-1"
    )


def test_everything_else_is_forwarded_unchanged() -> None:
    with proxy_stack() as stack:
        r = httpx.get(stack.url + "/v1/models?limit=2&after=a%2Fb", headers={"Authorization": "Bearer k"})
        assert r.status_code == 200 and r.json()["data"][0]["id"] == "fake-model"
        assert r.headers["x-fake"] == "models"
        sent = stack.fake.requests[-1]
        assert sent.headers["authorization"] == "Bearer k"
        assert sent.query == "limit=2&after=a%2Fb"  # the query string as the client wrote it
        assert "content-length" not in sent.headers  # a GET without a body gains none
        assert "user-agent" in sent.headers and sent.headers["user-agent"].startswith("python-httpx")
        r = httpx.head(stack.url + "/v1/models")  # HEAD: the headers of a GET, no body
        assert r.status_code == 200 and r.content == b"" and r.headers["x-fake"] == "models"
        assert stack.app.monitor.counters["requests"] == 0
        assert httpx.get(stack.url + "/_planguard/health").json()["requests"] == 0


def test_upstream_cookies_reach_their_client_only() -> None:
    with proxy_stack(
        lambda w, b: __import__("proxy_fakes").Reply(text="hi", headers={"set-cookie": "sid=abc"})
    ) as stack:
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        r1 = httpx.post(stack.url + "/v1/chat/completions", json=body)
        r2 = httpx.post(stack.url + "/v1/chat/completions", json=body)
    assert r1.headers["set-cookie"] == "sid=abc" and r2.status_code == 200
    assert "cookie" not in stack.fake.requests[1].headers  # the shared upstream client keeps no cookies


def run_text_agent(base_url: str, cwd: Path, *, stream: bool) -> int:
    """mini-swe-agent's text-based protocol: one fenced block per answer, the output as the next user turn."""
    import re

    client = openai.OpenAI(base_url=base_url + "/v1", api_key=OPENAI_KEY, max_retries=0)
    messages: Any = [  # the SDKs' TypedDict message params, built as plain dicts
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": TASK},
    ]
    for calls in range(1, 20):
        if stream:
            with client.chat.completions.stream(model="m", messages=messages) as s:
                for _event in s:
                    pass
                content = s.get_final_completion().choices[0].message.content or ""
        else:
            r = client.chat.completions.create(model="m", messages=messages)
            content = r.choices[0].message.content or ""
        messages.append({"role": "assistant", "content": content})
        blocks = re.findall(r"```mswea_bash_command\n(.*?)\n```", content, re.DOTALL)
        if len(blocks) != 1:
            return calls
        if "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT" in blocks[0]:
            return calls
        rc, out = bash(cwd, blocks[0])
        messages.append({"role": "user", "content": observation(rc, out)})
    return 20


def test_text_action_gate_rewrites_whole_responses_and_annotates_streamed_ones(tmp_path: Path) -> None:
    from proxy_fakes import text_agent_script

    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    settings: dict[str, Any] = {"text_actions": {"enabled": True}, "gate": "rewrite"}
    with proxy_stack(text_agent_script(), config=quiet_config(**GATE), **settings) as stack:
        assert run_text_agent(stack.url, workdir(a), stream=False) == 6  # sed block replaced: no action left
        assert "return a - b" in (a / "calc.py").read_text()
    with proxy_stack(text_agent_script(), config=quiet_config(**GATE), **settings) as stack:
        run_text_agent(stack.url, workdir(b), stream=True)
        assert "return a + b" in (b / "calc.py").read_text()  # a stream cannot be held back: the agent ran it
        seventh = stack.fake.requests[6].body["messages"]
        assert seventh[-1]["content"].startswith("[planguard] tool call not run: GATE no-sed")
        (sid,) = stack.app.monitor.conversations
        # The denied call ran anyway, so its result records it as a step (like every other call).
        assert stack.guard.session(sid).n_steps == len(SCRIPTED_COMMANDS)
        assert stack.app.monitor.counters["denied"] == 1


def test_unobserved_anthropic_requests_go_to_the_anthropic_upstream() -> None:
    from proxy_fakes import FakeUpstream, ServerThread

    other = FakeUpstream()
    with (
        ServerThread(other.app) as anthropic_up,
        proxy_stack(upstreams={"anthropic": anthropic_up.url}) as stack,
    ):
        r = httpx.get(
            stack.url + "/v1/models", headers={"x-api-key": ANTHROPIC_KEY, "anthropic-version": "1"}
        )
        assert r.status_code == 200
        httpx.get(stack.url + "/v1/models", headers={"Authorization": f"Bearer {OPENAI_KEY}"})
    assert [r.headers.get("x-api-key") for r in other.requests] == [ANTHROPIC_KEY]
    assert [r.headers.get("authorization") for r in stack.fake.requests] == [f"Bearer {OPENAI_KEY}"]
