"""The live part: arm assignment, plan injection through the runtime, endpoint labels, result records —
with a real Guard, and end to end on a real LangGraph agent (examples/experiment)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from planguard.config import Config
from planguard.decisions import DecisionKind
from planguard.events import ToolEvent
from planguard.experiment import ExperimentConfig, assign_arm, read_results, record_outcome
from planguard.guard import Guard

ROOT = Path(__file__).resolve().parents[3]


def exp_config(tmp_path: Path, **window: Any) -> Config:
    exp = ExperimentConfig.model_validate(
        {
            "seed": 3,
            "arms": [
                {"name": "a", "condition": "A", "plan": "Read the orders first."},
                {"name": "b", "condition": "B", "plan": "Read the payments first."},
                {"name": "none", "condition": "none"},
            ],
            "targets": {
                "A": [{"tool": "get_*", "args": [{"key": "kind", "equals": "orders"}]}],
                "B": [{"tool": "get_*", "args": [{"key": "kind", "in": ["payments"]}]}, {"tool": "get_all"}],
            },
            "ignore": [{"tool": "find_user"}],
            "writes": [{"tool": "cancel*"}],
            "window": {"budget": 3, **window},
            "reminder": {"every_model_calls": 2},
            "results": str(tmp_path / "results.jsonl"),
        }
    )
    return Config(experiment=exp, telemetry={"enabled": False}, store={"enabled": False})


def run_session(guard: Guard, sid: str, script: list[list[ToolEvent]], **meta: Any) -> list[list[Any]]:
    """Drive the guard like an agent loop: a model call, then its tool calls; returns injected decisions."""
    guard.session(sid, **meta)
    seen = []
    for calls in script:
        decisions = guard.before_model(sid)
        seen.append(decisions)
        if any(d.kind is DecisionKind.STOP for d in decisions):
            break
        for ev in calls:
            d = guard.before_tool(sid, ev)
            if d.blocks:
                continue
            guard.after_tool(sid, ev)
    guard.end(sid)
    return seen


def results(guard: Guard, path: Path) -> dict[str, Any]:
    guard.shutdown()
    return {json.loads(x)["session_id"]: json.loads(x) for x in path.read_text().splitlines()}


def get(kind: str, failed: bool = False) -> ToolEvent:
    return ToolEvent("get_record", {"kind": kind}, is_error=failed)


def test_endpoints_and_injection(tmp_path: Path) -> None:
    guard = Guard(exp_config(tmp_path))
    prep = ToolEvent("find_user", {"email": "x"})
    seen = run_session(guard, "s-a", [[prep], [get("orders")], []], arm="a", task="t1", cluster="c1")
    first = seen[0]
    assert len(first) == 1 and first[0].kind is DecisionKind.REMIND and not first[0].ephemeral
    assert first[0].message.startswith("PLAN REMINDER:") and "Read the orders first." in first[0].message
    assert any(d.kind is DecisionKind.STOP for d in seen[-1])  # stop_agent: window closed at the A read
    run_session(guard, "s-b", [[get("payments")]], arm="b", task="t1")
    run_session(guard, "s-both", [[ToolEvent("get_all", {"kind": "orders"})]], arm="a", task="t1")
    run_session(guard, "s-other", [[get("profile")]], arm="none", task="t1")
    run_session(guard, "s-err", [[get("orders", failed=True)]], arm="none", task="t1")
    run_session(guard, "s-yield", [[], []], arm="none", task="t1")
    run_session(guard, "s-write", [[ToolEvent("cancel_order", {"id": 1})]], arm="a", task="t1")
    run_session(guard, "s-budget", [[prep], [prep], [prep], [prep]], arm="b", task="t1")
    none_seen = run_session(guard, "s-none", [[prep], [prep], [get("orders")]], arm="none", task="t2")
    assert not any(d.injects for ds in none_seen for d in ds)  # the no-plan arm shows nothing
    rec = results(guard, tmp_path / "results.jsonl")
    labels = {sid: r["endpoint"] for sid, r in rec.items()}
    assert labels == {
        "s-a": "A",
        "s-b": "B",
        "s-both": "BOTH",
        "s-other": "OTHER",
        "s-err": "ERROR",
        "s-yield": "YIELD",
        "s-write": "WRITE",
        "s-budget": "BUDGET",
        "s-none": "A",
    }
    assert rec["s-a"]["condition"] == "A" and rec["s-a"]["cluster"] == "c1" and rec["s-a"]["tool_calls"] == 2
    assert rec["s-a"]["endpoint_tool"] == "get_record" and rec["s-a"]["endpoint_step"] == 1


def test_periodic_reminder_and_full_episode(tmp_path: Path) -> None:
    guard = Guard(exp_config(tmp_path, stop_agent=False))
    prep = ToolEvent("find_user", {"email": "x"})
    seen = run_session(
        guard, "s", [[prep], [prep], [get("payments")], [get("orders")], []], arm="b", task="t"
    )
    kinds = [[d.ephemeral for d in ds if d.injects] for ds in seen]
    assert kinds == [[False], [], [True], [], [True]]  # plan at call 1, reminders every 2 calls
    assert "Read the payments first." in seen[2][0].message
    assert not any(d.kind is DecisionKind.STOP for ds in seen for d in ds)
    rec = results(guard, tmp_path / "results.jsonl")
    assert rec["s"]["endpoint"] == "B" and rec["s"]["tool_calls"] == 4  # first measured read decides


def test_write_is_denied_before_it_runs(tmp_path: Path) -> None:
    guard = Guard(exp_config(tmp_path))
    guard.session("w", arm="a")
    guard.before_model("w")
    d = guard.before_tool("w", ToolEvent("cancel_order", {"id": 1}))
    assert d.blocks and d.kind is DecisionKind.DENY
    guard.shutdown()


def test_hash_assignment_is_deterministic_and_balanced(tmp_path: Path) -> None:
    cfg = exp_config(tmp_path).experiment
    assert cfg is not None
    arms = [assign_arm(cfg, f"session-{i}").name for i in range(3000)]
    assert arms == [assign_arm(cfg, f"session-{i}").name for i in range(3000)]
    for name in ("a", "b", "none"):
        assert 850 < arms.count(name) < 1150
    other = cfg.model_copy(update={"seed": 4})
    assert arms != [assign_arm(other, f"session-{i}").name for i in range(3000)]
    with pytest.raises(ValueError, match="unknown arm 'zz'"):
        assign_arm(cfg, "x", "zz")


def test_config_errors_name_the_key(tmp_path: Path) -> None:
    from planguard.config import ConfigError, load_config

    bad = tmp_path / "c.yaml"
    bad.write_text(
        "experiment:\n  arms:\n    - {name: a, condition: none, plan: hi}\n  targets: {A: [{tool: x}], "
        "B: [{tool: y}]}\n"
    )
    with pytest.raises(ConfigError, match=r"experiment\.arms"):
        load_config(bad)


def test_result_on_store_and_outcomes_merge(tmp_path: Path) -> None:
    cfg = exp_config(tmp_path)
    cfg = cfg.model_copy(
        update={"store": cfg.store.model_copy(update={"enabled": True, "path": str(tmp_path / "store")})}
    )
    guard = Guard(cfg)
    run_session(guard, "s1", [[get("orders")]], arm="a", task="t")
    res = results(guard, tmp_path / "results.jsonl")
    assert res["s1"]["endpoint"] == "A"
    stored = "\n".join(p.read_text() for p in (tmp_path / "store").rglob("*") if p.is_file())
    assert '"policy":"experiment"' in stored.replace(" ", "") and "endpoint" in stored
    record_outcome(tmp_path / "results.jsonl", "s1", success=True, tokens=1234)
    (tmp_path / "results.jsonl").open("a").write("not json\n")
    eps, problems = read_results([tmp_path / "results.jsonl"])
    assert eps[0].success == 1.0 and eps[0].tokens == 1234.0
    assert len(problems) == 1 and "results.jsonl:3: not JSON" in str(problems[0])


def test_example_end_to_end_and_cli(tmp_path: Path) -> None:
    pytest.importorskip("langchain.agents")
    pytest.importorskip("planguard_langchain")
    pytest.importorskip("numpy")
    spec = importlib.util.spec_from_file_location(
        "run_experiment", ROOT / "examples/experiment/run_experiment.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    path = mod.run(tmp_path, customers=2, seed=1)
    eps, problems = read_results([path])
    assert not problems and len(eps) == 2 * 2 * 5
    assert {e.condition for e in eps} == {"A", "B", "none"}
    assert all(e.success is not None for e in eps)
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "planguard",
            "experiment",
            "report",
            str(path),
            "--resamples",
            "200",
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    report = json.loads(out)
    assert report["n_episodes"] == 20 and all(i["holds"] for i in report["identities"])
    names = {e["name"] for e in report["estimates"]}
    assert {"D_A", "R_A", "G_A", "D_B", "R_B", "G_B", "S: P_B − P_A", "calls: P_A − none"} <= names
    table = subprocess.run(
        [sys.executable, "-m", "planguard", "experiment", "report", str(path), "--resamples", "100"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "D_A = R_A + G_A" in table and "zero-width" in table


def test_result_on_session_span(tmp_path: Path) -> None:
    from planguard.sinks.telemetry.testing import TelemetryCapture

    cap = TelemetryCapture()
    cfg = exp_config(tmp_path)
    cfg = cfg.model_copy(update={"telemetry": cfg.telemetry.model_copy(update={"enabled": True})})
    guard = Guard(cfg, tracer_provider=cap.tracer_provider, meter_provider=cap.meter_provider)
    run_session(guard, "span-1", [[get("payments")]], arm="b", task="t", cluster="c9")
    guard.shutdown()
    cap.flush()
    (span,) = cap.spans("planguard.experiment.result")
    attrs = dict(span.attributes or {})
    assert attrs["planguard.experiment.endpoint"] == "B" and attrs["planguard.experiment.arm"] == "b"
    assert attrs["planguard.experiment.cluster"] == "c9" and attrs["gen_ai.conversation.id"] == "span-1"
    # The session span also carries the result as a decision event (kind log, policy experiment).
    events = [
        ev
        for s in cap.spans()
        for ev in s.events
        if dict(ev.attributes or {}).get("planguard.decision.policy") == "experiment"
    ]
    assert events


def test_plan_file_relative_to_config(tmp_path: Path) -> None:
    from planguard.config import ConfigError, load_config

    (tmp_path / "plans").mkdir()
    (tmp_path / "plans" / "a.txt").write_text("Orders first.\n")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "telemetry: {enabled: false}\nstore: {enabled: false}\nexperiment:\n  arms:\n"
        "    - {name: a, condition: A, plan_file: plans/a.txt}\n    - {name: n, condition: none}\n"
        f"  targets: {{A: [{{tool: x}}], B: [{{tool: y}}]}}\n  results: {tmp_path / 'r.jsonl'}\n"
    )
    guard = Guard(load_config(cfg))
    guard.session("s", arm="a")
    (first,) = guard.before_model("s")
    assert "Orders first." in first.message
    guard.shutdown()
    cfg.write_text(cfg.read_text().replace("plans/a.txt", "plans/missing.txt"))
    with pytest.raises(ConfigError, match="plan_file"):
        load_config(cfg)


def test_cli_outcome_and_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("numpy")
    from planguard.cli import main

    guard = Guard(exp_config(tmp_path))
    scripts: list[tuple[str, list[list[ToolEvent]]]] = [
        ("a", [[get("orders")]]),
        ("b", [[get("payments")]]),
        ("none", [[]]),
    ]
    for i, (arm, script) in enumerate(scripts):
        run_session(guard, f"s{i}", script, arm=arm, task="t", cluster="c")
    guard.shutdown()
    path = tmp_path / "results.jsonl"
    for sid, ok, tokens in (("s0", "1", "50"), ("s2", "0", "20")):
        args = ["experiment", "outcome", str(path), "--session", sid, "--success", ok, "--tokens", tokens]
        assert main(args) == 0
    with path.open("a") as f:
        f.write('{"type": "result", "session_id": "bad", "condition": "C", "endpoint": "A"}\n')
    assert main(["experiment", "report", str(path), "--resamples", "50", "--format", "csv"]) == 0
    out = capsys.readouterr()
    assert "results.jsonl:6: 'condition' is 'C'; expected A, B or none" in out.err
    assert "contrast,S: P_A − none,100.0" in out.out and "contrast,tokens: P_A − none,30.0" in out.out
    assert main(["experiment", "report", str(tmp_path / "missing.jsonl")]) == 1
    assert main(["experiment"]) == 2
