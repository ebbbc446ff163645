"""``planguard demo --agent support``: a real LangChain ``create_agent`` support agent (no coding tools)
with a scripted model, monitored under a YAML plan of declared phases with a confirm-before-refund gate; and
its recording replayed with ``planguard replay --config`` (issue #19 acceptance, #17 item 7, #18 item 5)."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain.agents", reason="the demo needs the LangChain integration")

from langchain_core.messages import HumanMessage, ToolMessage
from planguard_langchain import is_planguard_message
from planguard_langchain.demo import agent as demo
from planguard_langchain.demo import support
from recorded_runs import mini_swe_agent_denied_submit

from planguard.cli.commands import replay as replay_command
from planguard.offline.replay import DecisionLog

REPO = Path(__file__).resolve().parents[3]
SUPPORT_CONFIG = REPO / "examples" / "demo" / "support.yaml"


@pytest.fixture(scope="module")
def support_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, DecisionLog, Path, str]:
    out = io.StringIO()
    store = tmp_path_factory.mktemp("store")
    live = DecisionLog()
    result = demo.run_support_demo(store_dir=store, stream=out, color=False, sinks=[live])
    return result, live, store, out.getvalue()


def test_support_agent_is_classified_scored_reminded_and_gated(
    support_run: tuple[Any, Any, Path, str],
) -> None:
    result, _, _, timeline = support_run
    tools = {t.name for t in support.make_tools(result.shop)}
    assert not tools & {"bash", "read_file", "edit_file", "submit"}  # no coding tools
    s = result.summary
    assert result.fixed  # refunded exactly once, after the confirmation
    assert s.letters == "ILLCAW"
    assert s.langutory == ["identify_1", "lookup_2", "confirm_1", "act_1", "wrap_up_1"]
    pc = s.scores["refund-flow"]
    assert (pc.PPC, pc.POC, pc.PPF, pc.PC) == (1.0, 1.0, 1.0, 1.0)
    assert s.n_steps == 6 and s.decision_counts == {"deny": 1, "remind": 1}

    # The gate denied the first refund_order, which came before confirm_with_customer.
    tool_msgs = [m for m in result.messages if isinstance(m, ToolMessage)]
    names = [m.name for m in tool_msgs]
    first_refund = names.index("refund_order")
    assert first_refund < names.index("confirm_with_customer")
    denied = tool_msgs[first_refund]
    assert denied.status == "error" and "confirm-before-refund" in str(denied.content)
    assert "Confirm with the customer" in str(denied.content)
    assert [m.status for m in tool_msgs if m.name == "refund_order"] == ["error", "success"]

    # The periodic reminder, in the model request, names the phase not done yet by its name.
    injected = [
        str(m.content)
        for req in result.model.requests
        for m in req.messages
        if isinstance(m, HumanMessage) and is_planguard_message(m)
    ]
    reminders = [t for t in injected if t.startswith("PLAN REMINDER:")]
    assert reminders and "Not done yet: Confirm with the customer, Act, Wrap up." in reminders[0]
    assert "ILLCAW" in timeline and "✗ blocked" in timeline


def _replay(args: list[str], tmp_path: Path) -> list[dict[str, Any]]:
    out = tmp_path / "replay.jsonl"
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    replay_command.register(sub)
    ns = parser.parse_args(["replay", *args, "--format", "jsonl", "-o", str(out)])
    assert ns.func(ns) == 0
    return [json.loads(line) for line in out.read_text().splitlines()]


def test_replay_with_the_config_gives_the_same_letters_findings_and_decisions(
    support_run: tuple[Any, DecisionLog, Path, str], tmp_path: Path
) -> None:
    result, live, store, _ = support_run
    (files,) = [list(store.glob("*.jsonl"))]
    assert len(files) == 1  # the local store file the run wrote
    (rec,) = _replay(["--config", str(SUPPORT_CONFIG), str(files[0])], tmp_path)
    s = result.summary
    assert rec["letters"] == s.letters and rec["langutory"] == s.langutory
    assert rec["metrics"]["refund-flow"]["PC"] == 1.0
    assert rec["findings"] == [
        {
            "detector": f.detector,
            "first_step": f.first_step,
            "last_step": f.last_step,
            "evidence": f.evidence,
            "at_end": f.at_end,
        }
        for f in s.findings
    ]
    live_decisions = live.take(s.session_id)
    assert rec["decisions"] == live_decisions
    assert {(d["kind"], d["policy"], d["step"]) for d in rec["decisions"]} == {
        ("deny", "gate:confirm-before-refund", 3),
        ("remind", "reminder", 3),
    }
    # Steps are the calls that ran; the denied refund is a denial.
    assert rec["n_steps"] == s.n_steps == 6 and len(rec["step_roles"]) == 6 and len(rec["actions"]) == 6
    assert rec["n_denied"] == 1 and rec["denials"] == [{"step": 3, "tool": "refund_order"}]
    assert [a["type"] for a in rec["actions"]] == ["SEARCH"] + ["COMMAND"] * 5


def test_replay_without_config_counts_recorded_denials_apart(tmp_path: Path) -> None:
    reason = "PLANGUARD GATE (validate-before-submit): not yet"
    mini = mini_swe_agent_denied_submit(reason)
    path = tmp_path / "mini.traj.json"
    path.write_text(json.dumps(mini))
    (rec,) = _replay([str(path)], tmp_path)
    assert rec["n_steps"] == 1 and len(rec["step_roles"]) == 1 and len(rec["actions"]) == 1
    assert rec["n_denied"] == 1 and rec["denials"] == [{"step": 1, "tool": "bash"}]
    assert rec["decisions"] == []  # the default replay has no policies; the recorded denial is not one


def test_replay_config_counts_calls_as_they_ran_beside_what_its_policies_would_decide(tmp_path: Path) -> None:
    runs = REPO / "examples" / "trajectories" / "example_runs.jsonl"
    plain = {r["id"]: r for r in _replay([str(runs)], tmp_path)}
    configured = _replay(["--config", str(REPO / "examples" / "planguard.yaml"), str(runs)], tmp_path)
    assert {r["id"] for r in configured} == set(plain)
    for rec in configured:
        base = plain[rec["id"]]
        for key in ("n_steps", "step_roles", "letters", "metrics"):
            assert rec[key] == base[key], key
        assert len(rec["actions"]) == rec["n_steps"] and rec["n_denied"] == 0
    noncompliant = next(r for r in configured if r["id"].endswith("-noncompliant"))
    # The early submit ran in the recording (a step), and this config's finish check would have denied it.
    last = noncompliant["n_steps"] - 1
    assert {"kind": "deny", "policy": "violations", "step": last, "on": "tool"} in noncompliant["decisions"]
    assert all(d["kind"] != "allow" for r in configured for d in r["decisions"])


def test_replay_config_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser()
    replay_command.register(parser.add_subparsers())
    runs = str(REPO / "examples" / "trajectories" / "example_runs.jsonl")
    ns = parser.parse_args(["replay", "--config", str(SUPPORT_CONFIG), "--rules", "v8ec988e", runs])
    assert ns.func(ns) == 2 and "leave out --plan and --rules" in capsys.readouterr().err
    bad = tmp_path / "bad.yaml"
    bad.write_text("plan:\n  name: t\n  phases:\n    - {id: a, symbol: A, name: A, match: {action: WRITE}}\n")
    ns = parser.parse_args(["replay", "--config", str(bad), runs])
    assert ns.func(ns) == 2 and "plan.phases.0.match.action" in capsys.readouterr().err
