"""OpenAI Agents SDK end to end: a real ``Runner`` with the SDK's own scripted model (``agents.testing``),
function tools that really run bash in a temporary directory, planguard's guardrail, hooks and filter."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents")
pytest.importorskip("planguard_openai_agents")

from agents import Agent, RunConfig, Runner, ToolInputGuardrailTripwireTriggered, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call
from planguard_openai_agents import Planguard, tool_event

from planguard.config import Config
from planguard.decisions import Decision, DecisionKind
from planguard.guard import Guard
from planguard.stages import Policy

pytestmark = pytest.mark.e2e

CALC = "def add(a, b):\n    return a - b\n"
TEST = "from calc import add\nassert add(2, 3) == 5, add(2, 3)\nprint('ok')\n"


def _config(**policies: Any) -> Config:
    return Config.model_validate(
        {
            "plan": "plan",
            "telemetry": {"enabled": False},
            "store": {"enabled": False},
            "policies": {
                "reminder": {"every_model_calls": 3, "min_gap_model_calls": 0},
                "gates": [
                    {
                        "name": "validate-before-submit",
                        "tool": "submit",
                        "until": {"phase_after": {"phase": "V", "after": "P", "strict": True}},
                    }
                ],
                **policies,
            },
        }
    )


def _tools(work: Path, submitted: list[str]) -> list[Any]:
    @function_tool
    def bash(command: str) -> str:
        """Run a bash command in the repository."""
        proc = subprocess.run(["bash", "-c", command], cwd=work, capture_output=True, text=True, timeout=60)
        return f"<returncode>{proc.returncode}</returncode>\n{proc.stdout}{proc.stderr}"

    @function_tool
    def submit(summary: str) -> str:
        """Submit the work."""
        submitted.append(summary)
        return "submitted"

    return [bash, submit]


def _script() -> list[Any]:
    def call(n: int, name: str, args: dict[str, Any]) -> list[Any]:
        return [function_call(name, args, call_id=f"call_{n:02d}")]

    return [
        call(1, "bash", {"command": "ls"}),
        call(2, "bash", {"command": f"cat > test_calc.py <<'EOF'\n{TEST}EOF"}),
        call(3, "bash", {"command": "python3 test_calc.py"}),
        call(4, "bash", {"command": "sed -i 's/a - b/a + b/' calc.py"}),
        call(5, "submit", {"summary": "fixed"}),  # too early: denied by the gate
        call(6, "bash", {"command": "python3 test_calc.py"}),
        call(7, "submit", {"summary": "fixed and tested"}),
        [assistant_message("Done.")],
    ]


def _input_text(items: Any) -> str:
    return json.dumps(items, default=str)


def test_runner_gate_reminder_and_phases(tmp_path: Path) -> None:
    (tmp_path / "calc.py").write_text(CALC)
    submitted: list[str] = []
    model = ScriptedModel(_script())
    agent = Agent(name="coder", instructions="Fix the bug.", model=model, tools=_tools(tmp_path, submitted))
    guard = Guard(_config())
    pg = Planguard(guard)

    result = asyncio.run(pg.run(agent, "Fix add() in calc.py", session_id="oa-1", end=False))

    assert result.final_output == "Done."
    assert submitted == ["fixed and tested"]  # the early submit never ran
    assert (tmp_path / "calc.py").read_text() == CALC.replace("a - b", "a + b")
    calls = model.calls
    assert len(calls) == 8
    # The model saw the gate's reason as the rejected call's output.
    assert "PLANGUARD GATE (validate-before-submit)" in _input_text(calls[5].input)
    # Reminders were added to requests (not to the run's history).
    reminded = [i for i, c in enumerate(calls) if "PLAN REMINDER:" in _input_text(c.input)]
    assert reminded and reminded[0] == 2
    assert "PLAN REMINDER:" not in _input_text(result.to_input_list())

    summary = guard.end("oa-1")
    assert summary is not None
    assert summary.letters == "NRRPV"
    assert summary.n_steps == 6
    assert summary.n_model_calls == 8
    assert summary.decision_counts.get("deny") == 1
    assert summary.scores["plan"].as_dict()["PC"] == pytest.approx(1.0)
    guard.shutdown()


class StopEverything(Policy):
    """A user policy (named in config) that stops the run at the first tool call."""

    name = "stop-everything"

    def before_tool(self, step: Any, session: Any, state: Any) -> Decision:
        return Decision(DecisionKind.STOP, "Run stopped by planguard: test", self.name)


def test_stop_decision_ends_the_run_with_a_tripwire(tmp_path: Path) -> None:
    """A STOP becomes the SDK's raise_exception behaviour: the run ends with the tripwire exception."""
    guard = Guard(_config(custom=[{"class": f"{__name__}:StopEverything"}]))
    pg = Planguard(guard)
    model = ScriptedModel([[function_call("bash", {"command": "ls"}, call_id="call_01")]])
    agent = Agent(name="coder", model=model, tools=_tools(tmp_path, []))
    with pytest.raises(ToolInputGuardrailTripwireTriggered) as info:
        asyncio.run(pg.run(agent, "go", session_id="oa-stop"))
    assert info.value.output.output_info["message"] == "Run stopped by planguard: test"
    guard.shutdown()


def test_hooks_record_tools_without_the_guardrail_and_foreign_runs_pass(tmp_path: Path) -> None:
    guard = Guard(_config())
    pg = Planguard(guard)
    model = ScriptedModel(
        [[function_call("bash", {"command": "ls"}, call_id="call_01")], [assistant_message("ok")]]
    )
    agent = Agent(name="coder", model=model, tools=_tools(tmp_path, []))
    # No guardrail attached: the run hooks alone record the call and its result.
    asyncio.run(
        Runner.run(agent, "go", hooks=pg.hooks("oa-obs"), run_config=pg.run_config("oa-obs", RunConfig()))
    )
    summary = guard.end("oa-obs")
    assert summary is not None and summary.n_steps == 1 and summary.letters == "N"
    # A guarded tool in a run planguard was not configured for is let through untouched.
    pg.guard_tools(agent)
    model.extend([[function_call("bash", {"command": "ls"}, call_id="call_02")], [assistant_message("ok")]])
    asyncio.run(Runner.run(agent, "go"))
    assert "oa-obs" not in guard
    guard.shutdown()


def test_tool_event_keeps_unparseable_arguments_raw() -> None:
    assert tool_event("bash", '{"command": "ls"}', "c1").arguments == {"command": "ls"}
    assert tool_event("bash", "not json", "c1").arguments == "not json"
    assert tool_event("bash", "[1, 2]", None).arguments == "[1, 2]"
    assert tool_event("bash", None, None).arguments == {}
