"""Live phases on real ``create_agent`` agents whose tools are not SWE-agent's.

The agents are real LangChain v1 agents with real tools working on a real directory; only the chat
model is scripted. With the default config (live rules, built-in vocabulary) an agent with everyday tool
names (``read_file``, ``write_file``, ``search_code``, ``run_tests``) gets its phases; an agent whose tools
planguard cannot map is told about once, and no reminder or phase gate acts on phases it cannot see.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain.agents", reason="the LangChain integration needs langchain>=1")

from langchain.agents import create_agent
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, tool
from planguard_langchain import PlanGuardMiddleware, is_planguard_message
from planguard_langchain.testing import ScriptedChatModel, call, turn

from planguard.testing import guard_for_tests

BUGGY = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "calc.py").write_text(BUGGY)
    (repo / "tests" / "test_calc.py").write_text(TEST)
    return repo


def _everyday_tools(repo: Path) -> list[BaseTool]:
    @tool
    def read_file(path: str) -> str:
        """Read a file of the repository."""
        return (repo / path).read_text()

    @tool
    def write_file(path: str, content: str) -> str:
        """Write a file of the repository."""
        (repo / path).write_text(content)
        return f"wrote {path}"

    @tool
    def search_code(query: str) -> str:
        """Search the repository's code."""
        hits = [f"{p.relative_to(repo)}" for p in repo.rglob("*.py") if query in p.read_text()]
        return "\n".join(hits) or "no match"

    @tool
    def run_tests() -> str:
        """Run the repository's tests."""
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(repo / "tests")],
            cwd=repo,
            capture_output=True,
            text=True,
            timeout=120,
            env={"PYTHONPATH": str(repo), "PATH": "/usr/bin:/bin"},
        )
        return done.stdout[-400:]

    return [read_file, write_file, search_code, run_tests]


def test_everyday_tool_names_get_phases_and_compliance_without_config(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    guard, rec = guard_for_tests({})  # the defaults: live rules, built-in vocabulary, default policies
    model = ScriptedChatModel(
        turns=[
            turn(call("search_code", query="def add")),
            turn(call("read_file", path="calc.py")),
            turn(call("write_file", path="calc.py", content=FIXED)),
            turn(call("run_tests")),
        ]
    )
    agent = create_agent(model, _everyday_tools(repo), middleware=[PlanGuardMiddleware(guard)])
    out = agent.invoke({"messages": [HumanMessage("Fix add.")]}, {"configurable": {"thread_id": "t1"}})

    assert (repo / "calc.py").read_text() == FIXED
    assert "1 passed" in str([m.content for m in out["messages"] if isinstance(m, ToolMessage)][-1])
    summary = rec.summaries["t1"]
    assert summary.letters == "NNPv"
    assert summary.unclassified == 0
    primary = summary.primary
    assert primary is not None and primary.PC > 0
    guard.shutdown()


def _unknown_tools(repo: Path, ran: list[str]) -> list[BaseTool]:
    @tool
    def frob(target: str) -> str:
        """Inspect something."""
        ran.append("frob")
        return (repo / target).read_text()

    @tool
    def quux(target: str, body: str) -> str:
        """Change something."""
        ran.append("quux")
        (repo / target).write_text(body)
        return "ok"

    @tool
    def blorp() -> str:
        """Hand in the work."""
        ran.append("blorp")
        return "handed in"

    return [frob, quux, blorp]


def test_unmappable_tools_get_a_warning_and_no_phase_reminder_or_gate(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    repo = _repo(tmp_path)
    config: dict[str, Any] = {
        "policies": {
            "reminder": {"enabled": True, "every_model_calls": 2, "min_gap_model_calls": 0},
            "violations": {"enabled": True, "on_finish": "deny"},
            "gates": [
                {
                    "name": "validate-before-blorp",
                    "tool": "blorp",
                    "until": {"phase_after": {"phase": "V", "after": "P", "strict": True}},
                }
            ],
        }
    }
    guard, rec = guard_for_tests(config)
    ran: list[str] = []
    model = ScriptedChatModel(
        turns=[
            turn(call("frob", target="calc.py")),
            turn(call("quux", target="calc.py", body=FIXED)),
            turn(call("frob", target="calc.py")),
            turn(call("blorp")),
        ]
    )
    agent = create_agent(model, _unknown_tools(repo, ran), middleware=[PlanGuardMiddleware(guard)])
    with caplog.at_level(logging.WARNING, logger="planguard"):
        out = agent.invoke({"messages": [HumanMessage("Fix add.")]}, {"configurable": {"thread_id": "t2"}})

    # The agent's work went through: the gate did not deny the hand-in.
    assert ran == ["frob", "quux", "frob", "blorp"]
    assert not [m for m in out["messages"] if isinstance(m, ToolMessage) and m.status == "error"]
    assert not rec.decisions_of("deny", session_id="t2")
    let_through = [
        d for d in rec.decisions_of("log", session_id="t2") if d.policy == "gate:validate-before-blorp"
    ]
    assert len(let_through) == 1 and "cannot classify (frob" in let_through[0].message
    # Said once, naming the tools to map.
    notices = [r for r in caplog.records if "cannot classify" in r.getMessage()]
    assert len(notices) == 1
    assert "frob" in notices[0].getMessage() and "tools.rules" in notices[0].getMessage()
    summary = rec.summaries["t2"]
    assert summary.unclassified == 4 and set(summary.unknown_tools) == {"frob", "quux", "blorp"}
    # Reminders still show the plan, but claim nothing about which phases are missing.
    reminders = [
        str(m.content)
        for request in model.requests_for("t2")
        for m in request
        if isinstance(m, HumanMessage) and is_planguard_message(m)
    ]
    assert reminders and all("Not done yet" not in r for r in reminders)
    assert all("not tracked" in r for r in reminders if r.startswith("PLAN REMINDER:"))
    assert not rec.decisions_of("remind", session_id="t2", policy="violations")
    guard.shutdown()
