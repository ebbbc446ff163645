"""A repository under /tmp is a repository (PHASES_LIVE.md §4): a real ``create_agent`` with absolute-path
file tools gets the same letters there as anywhere (``NRRPV``), and the validate-before-submit gate fires.

The middleware records its ``work_dir`` (default: the process's working directory) as the session's
``cwd``; without it every file of a repository under /tmp would be scratch, every edit a reproduction
(``NRRRR``) and the gate would never see a patch. The scripts the agent writes have neutral names: their
role comes from what the run did with them, not from what they are called.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain.agents", reason="the LangChain integration needs langchain>=1")

from langchain.agents import create_agent
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, tool
from planguard_langchain import PlanGuardMiddleware
from planguard_langchain.testing import ScriptedChatModel, call, turn

from planguard.testing import guard_for_tests

BUGGY = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
PROBE = "from calc import add\n\nprint(add(2, 3))\n"
GATE: dict[str, Any] = {
    "policies": {
        "gates": [
            {
                "name": "validate-before-submit",
                "tool": "submit",
                "until": {"phase_after": {"phase": "V", "after": "P", "strict": True}},
            }
        ]
    }
}


pytestmark = pytest.mark.parametrize("calc_repo_in_temp", ["/tmp", "/var/tmp"], indirect=True)


@pytest.fixture
def repo(calc_repo_in_temp: Path) -> Path:
    return calc_repo_in_temp


def _tools(repo: Path) -> list[BaseTool]:
    @tool
    def read_file(path: str) -> str:
        """Read a file (absolute path)."""
        return Path(path).read_text()

    @tool
    def write_file(path: str, content: str) -> str:
        """Write a whole file (absolute path)."""
        Path(path).write_text(content)
        return f"wrote {path}"

    @tool
    def bash(command: str) -> str:
        """Run a shell command in the repository."""
        done = subprocess.run(
            command.replace("python ", f"{sys.executable} ", 1),
            shell=True,
            cwd=repo,
            capture_output=True,
            text=True,
            timeout=60,
        )
        return done.stdout + done.stderr

    @tool
    def submit() -> str:
        """Hand in the work."""
        return "submitted"

    return [read_file, write_file, bash, submit]


def _scenario(repo: Path) -> list[Any]:
    calc, probe = str(repo / "calc.py"), str(repo / "sum_probe.py")
    return [
        turn(call("read_file", path=calc)),
        turn(call("write_file", path=probe, content=PROBE)),
        turn(call("bash", command="python sum_probe.py")),
        turn(call("write_file", path=calc, content=FIXED)),
        turn(call("submit")),  # too early: nothing validated the patch yet
        turn(call("bash", command=f"python {probe}")),
        turn(call("submit")),
    ]


def _run(repo: Path, middleware: PlanGuardMiddleware, guard: Any, sid: str) -> list[ToolMessage]:
    model = ScriptedChatModel(turns=_scenario(repo))
    agent = create_agent(model, _tools(repo), middleware=[middleware])
    out = agent.invoke({"messages": [HumanMessage("Fix add.")]}, {"configurable": {"thread_id": sid}})
    return [m for m in out["messages"] if isinstance(m, ToolMessage)]


def test_a_repository_under_a_temp_directory_gets_its_patch_and_its_gate(repo: Path) -> None:
    guard, rec = guard_for_tests(GATE)
    messages = _run(repo, PlanGuardMiddleware(guard, work_dir=repo), guard, "tmp-repo")

    assert (repo / "calc.py").read_text() == FIXED
    assert rec.summaries["tmp-repo"].letters == "NRRPV"
    denied = [m for m in messages if m.status == "error"]
    assert [m.name for m in denied] == ["submit"] and "validate-before-submit" in str(denied[0].content)
    assert messages[-1].name == "submit" and messages[-1].status != "error"
    guard.shutdown()


def test_the_work_dir_defaults_to_the_process_working_directory(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo)
    guard, rec = guard_for_tests(GATE)
    _run(repo, PlanGuardMiddleware(guard), guard, "cwd-repo")
    assert rec.summaries["cwd-repo"].letters == "NRRPV"
    guard.shutdown()
