"""Live = offline: each of the 81 real SWE-agent runs, replayed through a real LangGraph agent with the
middleware, gives the same phases and plan compliance as ``planguard replay`` of the recorded file (run as a
command, all seven of the paper's plan settings scored).

The scripted model emits each recorded step as the tool call SWE-agent's model made: the recorded
``tool_calls`` (name, parsed arguments, id) for function-calling runs, and ``bash {"command": action}`` for
runs whose model wrote its action as text. Tools answer with the recorded observation. The integration adds
no action renderer: it forwards only what LangChain knows (tool name, argument object, call id) and the core
classifies that exactly as it classifies SWE-agent's recorded action text.

Think steps (no tool call) are not replayed: a LangGraph model turn without a tool call is the final answer.
They classify as ``general``, so they change neither the Langutory nor the scores; the per-step comparison
skips them.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections import deque
from pathlib import Path
from typing import Any

import pytest
from pydantic import Field

pytest.importorskip("langchain.agents", reason="the LangChain integration needs langchain>=1")

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolCall
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from planguard_langchain import PlanGuardMiddleware
from planguard_langchain.testing import ScriptedChatModel

from planguard.offline.replay import PAPER_SETTINGS, resolve_plans
from planguard.testing import RecordingSink, guard_for_tests

CORPUS = ("data", "swe-agent", "trajectories.jsonl")
PAPER_PLANS = resolve_plans(PAPER_SETTINGS)


class RecordedTool(BaseTool):
    """A tool that answers with the recorded observations, in order (the calls of a run are sequential)."""

    name: str
    description: str = "replays a recorded tool observation"
    args_schema: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}, "additionalProperties": True}
    )
    observations: Any = None  # deque[str], shared by the run's tools

    def _run(self, **kwargs: Any) -> str:
        return str(self.observations.popleft())

    async def _arun(self, **kwargs: Any) -> str:
        return self._run(**kwargs)


def _turns(record: dict[str, Any]) -> tuple[list[AIMessage], deque[str], set[str]]:
    turns: list[AIMessage] = []
    observations: deque[str] = deque()
    names: set[str] = set()
    for step in record["steps"]:
        calls = step.get("tool_calls")
        if calls:
            fn = calls[0]["function"]
            args = fn["arguments"]
            call = ToolCall(
                name=fn["name"],
                args=json.loads(args) if isinstance(args, str) else args,
                id=calls[0].get("id"),
                type="tool_call",
            )
        elif step["action"]:
            call = ToolCall(name="bash", args={"command": step["action"]}, id=None, type="tool_call")
        else:
            continue  # a think step
        turns.append(AIMessage(content="", tool_calls=[call]))
        observations.append(step.get("observation_head") or "")
        names.add(call["name"])
    return turns, observations, names


def _agent(record: dict[str, Any]) -> tuple[Any, Any]:
    turns, observations, names = _turns(record)
    tools = [RecordedTool(name=n, observations=observations) for n in sorted(names)]
    model = ScriptedChatModel(turns=turns, record=False)
    return model, tools


def _live_guard() -> tuple[Any, RecordingSink]:
    # Measurement only: no policy may deny or stop a recorded call.
    return guard_for_tests(
        plan="plan",
        score_plans=[p.name for p in PAPER_PLANS[1:]],
        policies={
            "reminder": {"enabled": False},
            "violations": {"enabled": False},
            "responses": {"enabled": False},
            "gates": [],
        },
    )


@pytest.fixture(scope="module")
def corpus(shared: Path) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """The recorded runs, and ``planguard replay --plan paper-settings --format jsonl`` of the same file."""
    path = shared.joinpath(*CORPUS)
    if not path.is_file():
        pytest.skip(f"{path} not found")
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "planguard",
            "replay",
            str(path),
            "--plan",
            PAPER_SETTINGS,
            "--format",
            "jsonl",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    offline = {r["id"]: r for r in map(json.loads, proc.stdout.splitlines())}
    assert len(records) == len(offline) == 81
    return records, offline


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_live_langgraph_run_equals_planguard_replay_on_all_81_runs(
    corpus: tuple[list[dict[str, Any]], dict[str, dict[str, Any]]], mode: str
) -> None:
    records, offline = corpus
    guard, rec = _live_guard()
    compared = with_findings = 0
    for record in records:
        run_id = record["id"]
        model, tools = _agent(record)
        agent = create_agent(model, tools, middleware=[PlanGuardMiddleware(guard)])
        inputs: Any = {"messages": [HumanMessage(f"Solve {record['instance_id']}")]}
        config: RunnableConfig = {"configurable": {"thread_id": run_id}, "recursion_limit": 10_000}
        if mode == "async":
            asyncio.run(agent.ainvoke(inputs, config))
        else:
            agent.invoke(inputs, config)

        live = rec.summaries[run_id]
        ref = offline[run_id]
        assert live.langutory == ref["langutory"], run_id
        assert live.letters == ref["letters"], run_id
        assert set(live.scores) == set(ref["metrics"]) == {p.name for p in PAPER_PLANS}
        for plan, scores in ref["metrics"].items():
            assert live.scores[plan].as_dict() == pytest.approx(scores, abs=1e-9), (run_id, plan)
        live_roles = [list(s.roles) for s in sorted(rec.steps_of(run_id), key=lambda s: s.index)]
        ref_roles = [
            roles for roles, step in zip(ref["step_roles"], record["steps"], strict=True) if not _think(step)
        ]
        assert live_roles == ref_roles, run_id
        if not any(map(_think, record["steps"])):  # (elsewhere the live step numbers skip the think steps)
            assert _findings(rec.findings_of(session_id=run_id)) == ref["findings"], run_id
            with_findings += bool(ref["findings"])
        compared += 1
    assert compared == 81
    assert with_findings > 10
    assert guard.errors.total == 0, guard.errors.counts
    assert len(guard) == 0  # every session was ended by after_agent


def _findings(findings: list[Any]) -> list[dict[str, Any]]:
    keys = ("detector", "first_step", "last_step", "evidence", "at_end")
    return [{k: getattr(f, k) for k in keys} for f in findings]


def _think(step: dict[str, Any]) -> bool:
    return not step.get("tool_calls") and not step["action"]


def test_replay_corpus_has_both_kinds_of_runs(
    corpus: tuple[list[dict[str, Any]], dict[str, dict[str, Any]]],
) -> None:
    records, _ = corpus
    function_calling = sum(any(s.get("tool_calls") for s in r["steps"]) for r in records)
    assert (
        0 < function_calling < len(records)
    )  # both the tool_calls path and the bash-text path are exercised
