"""Gates that keep the agent going through the proxy: real agent frameworks (LangChain ``create_agent`` on
ChatOpenAI and ChatAnthropic, the OpenAI Agents SDK on its default Responses model, the Claude Code CLI
bundled with the Claude Agent SDK) talk to a scripted
fake model on 127.0.0.1 through the proxy. The model submits first; the proxy's gate denies that, answers
the call itself with the denial and asks the model again; the model, reading the denial as the tool's
result, runs the tests, then submits. The agent never sees the early submit, and reaches validation."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from proxy_fakes import Reply, proxy_stack, quiet_config

KEY = "sk-test-secret-0123456789"
TASK = "Fix add() in calc.py, then submit."
TESTS = "python -m pytest -q -p no:cacheprovider test_calc.py"
SUBMITTED = "SUBMITTED-OK"
GATE = {
    "policies": {
        # Only the gate under test denies (the plan-violation reminders would also hold up this submit).
        "violations": {"enabled": False},
        "gates": [
            {
                "name": "test-before-submit",
                "tool": "submit",
                "until": {"min_steps": 1},
                "max_denials": None,
                "message": "GATE: run the tests before you submit",
            }
        ],
    }
}


def early_submit(wire: str, body: dict[str, Any]) -> Reply:
    """The model, scripted on what it has been sent: submit; after a denial, run the tests; after the
    tests, submit; once submitted, finish."""
    seen = json.dumps(body)
    if SUBMITTED in seen:
        return Reply(text="Done.")
    if "-p no:cacheprovider" in seen:
        return Reply(text="Tests ran; submitting.", tool_calls=[("submit", {})])
    if "[planguard]" in seen:
        return Reply(text="Running the tests first.", tool_calls=[("bash", {"command": TESTS})])
    return Reply(text="Submitting.", tool_calls=[("submit", {})])


def workdir(tmp_path: Path) -> Path:
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (tmp_path / "test_calc.py").write_text(
        "from calc import add\n\ndef test_add():\n    assert add(2, 2) == 4\n"
    )
    return tmp_path


def run_shell(cwd: Path, command: str) -> str:
    p = subprocess.run(command, shell=True, cwd=cwd, capture_output=True, text=True, timeout=60)
    return f"exit code {p.returncode}\n{p.stdout[-2000:]}{p.stderr[-2000:]}"


def check_reached_validation(stack: Any, ran: list[str], wire: str) -> None:
    assert ran[0].startswith("bash:python -m pytest"), ran  # the early submit never reached the agent
    assert ran[1:] == ["submit"]
    assert "1 passed" in ran[0]
    counters = stack.app.monitor.counters
    assert counters["denied"] == 1 and counters["asked_again"] == 1
    # The proxy's second request: the denied call and the denial as its result, in the wire's own format.
    second = json.dumps(stack.fake.requests[1].body)
    assert "GATE: run the tests before you submit" in second
    result_key = {
        "openai": '"role": "tool"',
        "anthropic": '"tool_result"',
        "responses": "function_call_output",
    }
    assert result_key[wire] in second
    assert len(stack.fake.requests) == 4  # submit (denied), asked again, after the tests, after the submit


# ---------------------------------------------------------------------- LangChain


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_langchain_agent_reaches_validation_after_a_gated_early_submit(
    provider: str, stream: bool, tmp_path: Path
) -> None:
    pytest.importorskip("langchain_openai")
    pytest.importorskip("langchain_anthropic")
    from langchain.agents import create_agent
    from langchain_core.tools import tool

    cwd = workdir(tmp_path)
    ran: list[str] = []

    @tool
    def bash(command: str) -> str:
        """Run a shell command in the repository."""
        out = run_shell(cwd, command)
        ran.append(f"bash:{command}" + (" 1 passed" if "1 passed" in out else ""))
        return out

    @tool
    def submit() -> str:
        """Submit the work."""
        ran.append("submit")
        return SUBMITTED

    with proxy_stack(early_submit, config=quiet_config(**GATE)) as stack:
        model: Any
        if provider == "openai":
            from langchain_openai import ChatOpenAI

            model = ChatOpenAI(
                model="gpt-fake", base_url=stack.url + "/v1", api_key=KEY, streaming=stream, max_retries=0
            )
        else:
            from langchain_anthropic import ChatAnthropic

            model = ChatAnthropic(
                model="claude-fake", base_url=stack.url, api_key=KEY, streaming=stream, max_retries=0
            )
        agent = create_agent(model=model, tools=[bash, submit])
        state = agent.invoke({"messages": [{"role": "user", "content": TASK}]})
        check_reached_validation(stack, ran, provider)
    assert state["messages"][-1].content in ("Done.", [{"type": "text", "text": "Done."}]) or "Done." in str(
        state["messages"][-1].content
    )


# ---------------------------------------------------------------------- OpenAI Agents SDK


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_openai_agents_sdk_reaches_validation_after_a_gated_early_submit(
    stream: bool, tmp_path: Path
) -> None:
    pytest.importorskip("agents")
    from agents import Agent, Runner, function_tool, set_tracing_disabled
    from agents.models.openai_responses import OpenAIResponsesModel
    from openai import AsyncOpenAI

    set_tracing_disabled(True)
    cwd = workdir(tmp_path)
    ran: list[str] = []

    @function_tool
    def bash(command: str) -> str:
        """Run a shell command in the repository."""
        out = run_shell(cwd, command)
        ran.append(f"bash:{command}" + (" 1 passed" if "1 passed" in out else ""))
        return out

    @function_tool
    def submit() -> str:
        """Submit the work."""
        ran.append("submit")
        return SUBMITTED

    with proxy_stack(early_submit, config=quiet_config(**GATE)) as stack:
        client = AsyncOpenAI(base_url=stack.url + "/v1", api_key=KEY, max_retries=0)
        # The SDK's default model class: the Responses API.
        agent = Agent(
            name="coder",
            instructions="You are a coding agent.",
            tools=[bash, submit],
            model=OpenAIResponsesModel(model="gpt-fake", openai_client=client),
        )

        async def run() -> Any:
            if not stream:
                return (await Runner.run(agent, TASK)).final_output
            result = Runner.run_streamed(agent, TASK)
            async for _ev in result.stream_events():
                pass
            return result.final_output

        final = asyncio.run(run())
        check_reached_validation(stack, ran, "responses")
    assert final == "Done."


# ---------------------------------------------------------------------- bounded, and the old behaviour


@pytest.mark.parametrize("wire", ["openai", "anthropic", "responses"])
def test_asking_again_is_bounded_then_the_denial_is_text(wire: str) -> None:
    """A model that insists on the gated call: ``gate_retries`` more requests, then the denial as text."""
    import httpx

    def insist(_wire: str, _body: dict[str, Any]) -> Reply:
        return Reply(text="Submitting.", tool_calls=[("submit", {})])

    tool_openai = {"type": "function", "function": {"name": "submit", "parameters": {"type": "object"}}}
    bodies = {
        "openai": (
            "/v1/chat/completions",
            {"model": "m", "tools": [tool_openai], "messages": [{"role": "user", "content": TASK}]},
        ),
        "anthropic": (
            "/v1/messages",
            {
                "model": "m",
                "max_tokens": 10,
                "tools": [{"name": "submit", "input_schema": {"type": "object"}}],
                "messages": [{"role": "user", "content": TASK}],
            },
        ),
        "responses": (
            "/v1/responses",
            {
                "model": "m",
                "tools": [{"type": "function", "name": "submit", "parameters": {"type": "object"}}],
                "input": TASK,
            },
        ),
    }
    path, body = bodies[wire]
    with proxy_stack(insist, config=quiet_config(**GATE), gate_retries=2) as stack:
        r = httpx.post(stack.url + path, json=body, timeout=30)
        n = len(stack.fake.requests)
    assert r.status_code == 200
    text = r.text
    assert "GATE: run the tests before you submit" in text
    assert n == 3  # the request, then asked again twice
    obj = r.json()
    if wire == "openai":
        assert "tool_calls" not in obj["choices"][0]["message"]
    elif wire == "anthropic":
        assert all(b["type"] != "tool_use" for b in obj["content"])
    else:
        assert all(o["type"] != "function_call" for o in obj["output"])


@pytest.mark.parametrize("gate_retries", [0, 1])
def test_responses_stream_with_a_denied_call_parses_in_the_sdk(gate_retries: int) -> None:
    """Past the retries, a streamed Responses call is replaced by an assistant message saying why (its
    events and the final response both), which the SDK's own stream accumulator accepts."""
    from openai import OpenAI

    def insist(_wire: str, _body: dict[str, Any]) -> Reply:
        return Reply(text="Submitting.", tool_calls=[("submit", {})])

    tool = {"type": "function", "name": "submit", "parameters": {"type": "object", "properties": {}}}
    with proxy_stack(insist, config=quiet_config(**GATE), gate_retries=gate_retries) as stack:
        client = OpenAI(base_url=stack.url + "/v1", api_key=KEY, max_retries=0)
        with client.responses.stream(model="m", input=TASK, tools=[tool]) as s:  # type: ignore[list-item]
            kinds = [ev.type for ev in s]
            final = s.get_final_response()
        n = len(stack.fake.requests)
    assert n == 1 + gate_retries
    assert "response.function_call_arguments.delta" not in kinds
    assert [o.type for o in final.output] == ["message", "message"]
    assert "GATE: run the tests before you submit" in final.output_text


# ---------------------------------------------------------------------- Claude Code


def _claude_cli() -> Any:
    try:
        import claude_agent_sdk
    except ImportError:
        return None
    cli = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
    return cli if cli.is_file() else None


CLAUDE = _claude_cli()


def claude_code_early_submit(wire: str, body: dict[str, Any]) -> Reply:
    """The Claude Code loop's model: requests offering tools are the agent's turns (Bash), others (titles,
    summaries) get a short text."""
    if not body.get("tools"):
        return Reply(text="ok")
    seen = json.dumps(body)
    if SUBMITTED in seen:
        return Reply(text="Done.")
    if "-p no:cacheprovider" in seen:
        return Reply(text="Tests ran; submitting.", tool_calls=[("Bash", {"command": "./submit.sh"})])
    if "[planguard]" in seen:
        return Reply(text="Running the tests first.", tool_calls=[("Bash", {"command": TESTS})])
    return Reply(text="Submitting.", tool_calls=[("Bash", {"command": "./submit.sh"})])


@pytest.mark.e2e
@pytest.mark.skipif(
    CLAUDE is None, reason="claude-agent-sdk with its bundled Claude Code CLI is not installed"
)
def test_claude_code_reaches_validation_after_a_gated_early_submit(tmp_path: Path) -> None:
    import os
    import sys

    (tmp_path / "work").mkdir()
    work = workdir(tmp_path / "work")
    (work / "submit.sh").write_text(f"#!/bin/sh\necho submitted >> submissions.log\necho {SUBMITTED}\n")
    (work / "submit.sh").chmod(0o755)
    home = tmp_path / "home"
    home.mkdir()
    gate = {
        "policies": {
            "violations": {"enabled": False},
            "gates": [
                {
                    "name": "test-before-submit",
                    "tool": "Bash",
                    "arguments": {"command": "submit"},
                    "until": {"min_steps": 1},
                    "max_denials": None,
                    "message": "GATE: run the tests before you submit",
                }
            ],
        }
    }
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE", "PLANGUARD_"))}
    with proxy_stack(claude_code_early_submit, config=quiet_config(**gate)) as stack:
        env.update(
            {
                "HOME": str(home),
                "ANTHROPIC_BASE_URL": stack.url,
                "ANTHROPIC_API_KEY": "sk-ant-fake",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                "DISABLE_TELEMETRY": "1",
                "DISABLE_AUTOUPDATER": "1",
                "DISABLE_ERROR_REPORTING": "1",
                "PATH": f"{Path(sys.executable).parent}:{env.get('PATH', '')}",
            }
        )
        proc = subprocess.run(
            [
                str(CLAUDE),
                "-p",
                TASK,
                "--output-format",
                "json",
                "--allowedTools",
                "Bash",
                "--model",
                "claude-sonnet-4-5",
            ],
            cwd=work,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=300,
        )
        counters = dict(stack.app.monitor.counters)
        agent_turns = [
            r.body for r in stack.fake.requests if isinstance(r.body, dict) and r.body.get("tools")
        ]
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
    # The early submit never ran (the proxy answered it); the tests ran, then the one submit.
    assert (work / "submissions.log").read_text() == "submitted\n"
    assert counters["denied"] == 1 and counters["asked_again"] == 1
    assert "GATE: run the tests before you submit" in json.dumps(agent_turns[1])
    assert "1 passed" in json.dumps(agent_turns[2])
    assert json.loads(proc.stdout)["result"] == "Done."
