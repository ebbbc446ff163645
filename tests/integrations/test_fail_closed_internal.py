"""A fail-closed gate stays closed whatever fails inside planguard, in every integration: a real custom
detector from the config (``plugin_stages:Broken``) raises while a session is made, and a gated call —
a shell ``submit`` through the proxy, ``deploy --prod`` through the Claude Code hook, a ``submit`` tool
call of a LangChain ``create_agent`` agent — is still denied; with ``fail_closed_gates`` off the same
calls go through (fail open) and the error is counted. Calls no gate covers go through either way.

Real parts: the proxy on 127.0.0.1 in front of the scripted fake model API (tests/support/proxy_fakes.py), the
``planguard hook claude-code`` subprocess, a LangChain agent with a scripted model and real tools.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

BROKEN = {"custom": [{"class": "plugin_stages:Broken", "options": {"where": "new_state"}}]}
GATE_TEXT = "GATE: run the tests before submitting"


def _gate(tool: str, arguments: dict[str, str] | None = None) -> dict[str, Any]:
    gate: dict[str, Any] = {
        "name": "no-early-submit",
        "tool": tool,
        "until": {"min_steps": 1000},
        "max_denials": None,
        "message": GATE_TEXT,
    }
    if arguments:
        gate["arguments"] = arguments
    return gate


# --------------------------------------------------------------------------- the proxy

pytest.importorskip("planguard_proxy")
from proxy_fakes import Reply, proxy_stack, quiet_config  # noqa: E402

BASH = {"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}


def _proxy_config(fail_closed: bool) -> Any:
    return quiet_config(
        fail_closed_gates=fail_closed,
        detectors=BROKEN,
        policies={"reminder": {"enabled": False}, "gates": [_gate("bash", {"command": "^submit"})]},
    )


def _script(wire: str, body: dict[str, Any]) -> Reply:
    task = body["messages"][-1]["content"]
    return Reply(tool_calls=[("bash", {"command": "submit" if "submit" in task else "ls -la"})])


def _ask(url: str, task: str, stream: bool) -> dict[str, Any]:
    """One Chat Completions request; the assistant message as the client gets it (a stream assembled)."""
    body = {
        "model": "m",
        "tools": [BASH],
        "stream": stream,
        "messages": [{"role": "system", "content": "agent"}, {"role": "user", "content": task}],
    }
    r = httpx.post(url + "/v1/chat/completions", json=body, timeout=30)
    assert r.status_code == 200, r.text
    if not stream:
        return r.json()["choices"][0]["message"]  # type: ignore[no-any-return]
    content = ""
    calls: dict[int, dict[str, Any]] = {}
    for line in r.text.splitlines():
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        delta = json.loads(line[6:])["choices"][0]["delta"]
        content += delta.get("content") or ""
        for part in delta.get("tool_calls") or []:
            fn = calls.setdefault(part["index"], {"function": {"name": "", "arguments": ""}})["function"]
            fn["name"] += part.get("function", {}).get("name") or ""
            fn["arguments"] += part.get("function", {}).get("arguments") or ""
    return {"content": content, **({"tool_calls": list(calls.values())} if calls else {})}


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_proxy_fault_in_a_pipeline_stage_keeps_a_fail_closed_gate_closed(stream: bool) -> None:
    with proxy_stack(_script, config=_proxy_config(True), gate="rewrite", gate_retries=0) as stack:
        submits = [_ask(stack.url, f"task {n}: submit", stream) for n in range(2)]
        ls = _ask(stack.url, "task 3: look around", stream)
        counters = dict(stack.app.monitor.counters)
        errors = dict(stack.guard.errors.counts)
    for msg in submits:
        assert "tool_calls" not in msg, "a gated submit reached the agent while planguard was failing"
        assert "no-early-submit" in msg["content"] and "fail-closed" in msg["content"]
    assert ls["tool_calls"][0]["function"]["name"] == "bash"  # no gate covers it: fail open
    assert counters["denied"] == 2 and counters["fail_open"] >= 3
    assert any(k.startswith("proxy.request:RuntimeError") for k in errors), errors


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_proxy_fault_in_a_pipeline_stage_fails_open_without_fail_closed(stream: bool) -> None:
    with proxy_stack(_script, config=_proxy_config(False), gate="rewrite", gate_retries=0) as stack:
        msg = _ask(stack.url, "task 1: submit", stream)
        errors = stack.guard.errors.total
    assert "submit" in json.dumps(msg["tool_calls"])  # forwarded unobserved: the agent goes on
    assert errors >= 1


# --------------------------------------------------------------------------- the Claude Code hook

SID = "5f0c1d2e-3b4a-4c5d-8e9f-0a1b2c3d4e5f"


def _hook_config(tmp_path: Path, fail_closed: bool) -> Path:
    cfg = {
        "plan": "plan",
        "telemetry": {"enabled": False},
        "store": {"enabled": False},
        "fail_closed_gates": fail_closed,
        "detectors": BROKEN,
        "policies": {"reminder": {"enabled": False}, "gates": [_gate("Bash", {"command": "deploy --prod"})]},
    }
    path = tmp_path / f"closed-{fail_closed}.json"
    path.write_text(json.dumps(cfg))
    return path


def _hook(config: Path, state: Path, command: str, n: int) -> dict[str, Any]:
    from claude_hook_support import pre_tool_use

    payload = pre_tool_use(f"toolu_{n:02d}", "Bash", {"command": command}, SID)
    tests_dir = str(Path(__file__).resolve().parents[1] / "support")  # plugin_stages is imported from here
    command = ["hook", "claude-code", "--config", str(config), "--state-dir", str(state), "--no-daemon"]
    proc = subprocess.run(
        [sys.executable, "-m", "planguard", *command],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PLANGUARD_CONFIG": "", "PYTHONPATH": tests_dir},
    )
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    return json.loads(proc.stdout) if proc.stdout.strip() else {}


def test_claude_code_hook_fault_in_a_pipeline_stage_keeps_a_fail_closed_gate_closed(tmp_path: Path) -> None:
    pytest.importorskip("planguard_claude_code")
    state = tmp_path / "state"
    closed, opened = _hook_config(tmp_path, True), _hook_config(tmp_path, False)
    answer = _hook(closed, state, "./deploy --prod", 1)
    assert answer["hookSpecificOutput"]["permissionDecision"] == "deny", answer
    assert "no-early-submit" in answer["hookSpecificOutput"]["permissionDecisionReason"]
    assert _hook(closed, state, "ls", 2).get("hookSpecificOutput") is None  # not gated: let through
    assert _hook(opened, state, "./deploy --prod", 3).get("hookSpecificOutput") is None  # fail open
    assert "broken detector: new_state" in (state / "hook-errors.log").read_text()


# --------------------------------------------------------------------------- the LangChain middleware


@pytest.mark.parametrize("fail_closed", [True, False], ids=["fail-closed", "fail-open"])
def test_langchain_middleware_fault_in_a_pipeline_stage_keeps_a_fail_closed_gate_closed(
    fail_closed: bool,
) -> None:
    pytest.importorskip("langchain.agents", reason="the LangChain integration needs langchain>=1")
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage, ToolMessage
    from langchain_core.tools import tool
    from planguard_langchain import PlanGuardMiddleware
    from planguard_langchain.testing import ScriptedChatModel, call, turn

    from planguard.config import Config
    from planguard.guard import Guard

    ran: list[str] = []

    @tool
    def submit() -> str:
        """Submit the work."""
        ran.append("submit")
        return "submitted"

    @tool
    def bash(command: str) -> str:
        """Run a shell command."""
        ran.append(command)
        return "ok"

    guard = Guard(
        Config.model_validate(
            {
                "plan": "plan",
                "telemetry": {"enabled": False},
                "store": {"enabled": False},
                "fail_closed_gates": fail_closed,
                "detectors": BROKEN,
                "policies": {"reminder": {"enabled": False}, "gates": [_gate("submit")]},
            }
        )
    )
    model = ScriptedChatModel(turns=[turn(call("bash", command="ls")), turn(call("submit"))])
    agent = create_agent(model, [bash, submit], middleware=[PlanGuardMiddleware(guard)])
    out = agent.invoke({"messages": [HumanMessage("Fix the bug.")]}, {"configurable": {"thread_id": "t1"}})
    denials = [m for m in out["messages"] if isinstance(m, ToolMessage) and m.status == "error"]
    assert "ls" in ran  # no gate covers it: fail open
    if fail_closed:
        assert "submit" not in ran and len(denials) == 1 and "no-early-submit" in str(denials[0].content)
    else:
        assert "submit" in ran and not denials
    assert guard.errors.total >= 1


@pytest.mark.parametrize("fail_closed", [True, False], ids=["fail-closed", "fail-open"])
def test_proxy_answer_it_cannot_rewrite_is_withheld_only_when_fail_closed(
    fail_closed: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The gate denies the call, but replacing it in the answer fails (a fault injected into the wire's
    rewrite, the one part no real input makes fail): fail-closed, the answer is withheld (502 in the API's
    error shape, the gate's message in it); fail-open, it is forwarded as the upstream sent it."""
    from planguard_proxy.wire import WIRES

    def broken(self: Any, obj: dict[str, Any], denied: Any) -> None:
        raise RuntimeError("rewrite failed")

    monkeypatch.setattr(type(WIRES["openai"]), "rewrite_response", broken)
    config = quiet_config(
        fail_closed_gates=fail_closed,
        policies={"reminder": {"enabled": False}, "gates": [_gate("bash", {"command": "^submit"})]},
    )
    with proxy_stack(_script, config=config, gate="rewrite", gate_retries=0) as stack:
        body = {"model": "m", "tools": [BASH], "messages": [{"role": "user", "content": "t: submit"}]}
        r = httpx.post(stack.url + "/v1/chat/completions", json=body, timeout=30)
        errors = dict(stack.guard.errors.counts)
    assert any(k.startswith("proxy.response:RuntimeError") for k in errors), errors
    if fail_closed:
        assert r.status_code == 502 and "no-early-submit" in r.json()["error"]["message"]
        assert "submit" not in json.dumps(r.json()).replace("no-early-submit", "")
    else:
        assert r.status_code == 200 and r.json()["choices"][0]["message"]["tool_calls"]
