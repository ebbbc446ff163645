# ruff: noqa: E501  (the contract YAML below is quoted verbatim, one long line included)
"""Plans that declare their own phases (issue #19 item 1) and the presets for non-coding agents (item 2).

Driven through the real ``Guard`` and config loader; the support demo's LangChain run is in
tests/integrations/langchain/test_support_demo.py.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from planguard.cli.commands import check_config
from planguard.config import ConfigError, config_schema, load_config
from planguard.events import ToolEvent
from planguard.guard import Guard
from planguard.phases.declarative import DeclarativeRules
from planguard.plan import PRESETS, Plan, load_plan

#: The contract of issue #19: exactly this YAML must keep working.
CONTRACT = """\
plan:
  name: refund-flow
  phases:
    - {id: identify, symbol: I, name: Identify the customer, match: {tool: "find_customer*"}}
    - {id: lookup,   symbol: L, name: Look up the order,     match: {tool: [get_order, list_orders]}}
    - {id: confirm,  symbol: C, name: Confirm with the customer, match: {tool: confirm_with_customer}}
    - {id: act,      symbol: A, name: Act, match: {tool: [refund_order, cancel_order], arguments: {order_id: ".+"}}}
policies:
  gates:
    - {name: confirm-before-refund, tool: refund_order, until: {phases_seen: [confirm]}}
"""

OFF = "store: {enabled: false}\ntelemetry: {enabled: false}\n"


def _guard(tmp_path: Path, text: str) -> Guard:
    path = tmp_path / "planguard.yaml"
    path.write_text(text + OFF)
    return Guard(load_config(path, env={}))


def _run(guard: Guard, calls: list[tuple[str, Any]], *, session: str = "s") -> list[Any]:
    """Each call live (before_tool, run, after_tool, with a model call before each); the decisions."""
    s = guard.session(session)
    out: list[Any] = []
    for tool, args in calls:
        out.extend(s.before_model())
        ev = ToolEvent(tool, args)
        d = s.before_tool(ev)
        out.append(d)
        if not d.blocks:
            ev.result = "ok"
            s.after_tool(ev)
    return out


def test_the_contract_yaml_is_classified_scored_and_gated(tmp_path: Path) -> None:
    guard = _guard(tmp_path, CONTRACT)
    assert isinstance(guard.pipeline.rules, DeclarativeRules)
    decisions = _run(
        guard,
        [
            ("find_customer_by_email", {"email": "a@example.com"}),
            ("get_order", {"order_id": "O-1"}),
            ("refund_order", {"order_id": "O-1"}),  # before the customer confirmed
            ("confirm_with_customer", {"order_id": "O-1"}),
            ("refund_order", {"order_id": "O-1"}),
            ("lookup_weather", {}),  # matches no phase: general
        ],
    )
    denials = [d for d in decisions if d.blocks]
    assert len(denials) == 1 and denials[0].policy == "gate:confirm-before-refund"
    assert "Confirm with the customer" in denials[0].message  # the phase by its name
    summary = guard.session("s").end()
    assert summary.n_steps == 5  # the denied call did not run
    assert summary.letters == "ILCA" and summary.langutory == ["identify_1", "lookup_1", "confirm_1", "act_1"]
    assert summary.scores["refund-flow"].PC == pytest.approx(1.0)


def test_out_of_order_run_scores_below_one_and_reminder_names_the_missing_phase(tmp_path: Path) -> None:
    guard = _guard(
        tmp_path,
        CONTRACT + "  reminder: {every_model_calls: 3, min_gap_model_calls: 0}\n",
    )
    decisions = _run(
        guard,
        [
            ("get_order", {"order_id": "O-1"}),
            ("find_customer_by_id", {"id": 7}),
            ("cancel_order", {"order_id": "O-1"}),  # no confirmation, and cancel is not gated
        ],
    )
    reminders = [d for d in decisions if d.policy == "reminder"]
    assert reminders and "Not done yet: Confirm with the customer, Act." in reminders[0].message
    s = guard.session("s").end()
    assert s.letters == "LIA"
    sc = s.scores["refund-flow"]
    # present: L, I, A of 4 (PPC 0.75); longest in-order run I-A or L-A (POC 0.5); no extras (PPF 1).
    assert (sc.PPC, sc.POC, sc.PPF) == (0.75, 0.5, 1.0)
    assert sc.PC == pytest.approx((0.75 * 0.5) ** (1 / 3))


def _rules(phases: list[dict[str, Any]]) -> DeclarativeRules:
    return DeclarativeRules(Plan.model_validate({"name": "t", "phases": phases}))


def _roles(rules: DeclarativeRules, events: list[ToolEvent]) -> list[str]:
    state = rules.new_state()
    out = []
    for e in events:
        c = rules.classify(e, state)
        state.apply(c)
        out.append(c.roles[0] if c.roles else "-")
    return out


def _p(id: str, match: Any, **kw: Any) -> dict[str, Any]:
    return {"id": id, "symbol": id[0].upper(), "name": id, "match": match, **kw}


def test_each_kind_of_condition() -> None:
    rules = _rules(
        [
            _p("rx", {"tool_regex": r"lookup_(user|account)"}),
            _p("eq", {"tool": "set_flag", "arguments": {"value": {"equals": True}}}),
            _p("ex", {"tool": "set_flag", "arguments": {"note": {"exists": True}}}),
            _p("write", {"action": ["FILE_WRITE"], "target": "src/*.py"}),
            _p("code", {"tool": "run", "exit_code": [0, 5]}),
            _p("res", {"tool": "run", "result": "^PASS"}),
            _p("fail", {"tool": "run", "failed": True}),
        ]
    )
    events = [
        ToolEvent("lookup_user"),
        ToolEvent("lookup_users"),  # tool_regex matches the whole name
        ToolEvent("set_flag", {"value": True}),
        ToolEvent("set_flag", '{"note": "x"}'),  # raw JSON arguments are read
        ToolEvent("set_flag", {"value": "true"}),  # equals compares values, not text
        ToolEvent("write_file", {"path": "src/app.py", "content": "x"}),
        ToolEvent("write_file", {"path": "docs/app.md", "content": "x"}),
        ToolEvent("run", result="boom", is_error=True),
        ToolEvent("run", result="fine", exit_code=5),
        ToolEvent("run", result="PASS 3 tests", exit_code=1),
    ]
    assert _roles(rules, events) == ["rx", "-", "eq", "ex", "-", "write", "-", "fail", "code", "res"]


def test_ordering_conditions() -> None:
    rules = _rules(
        [
            _p("start", {"tool": "open"}, first_only=True),
            _p("draft", {"tool": "write"}, before=["review"]),
            _p("review", {"tool": "check"}, after=["draft"]),
            _p("revise", {"tool": "write"}, after=["review"]),
        ]
    )
    names = ["open", "open", "check", "write", "check", "write"]
    assert _roles(rules, [ToolEvent(n) for n in names]) == ["start", "-", "-", "draft", "review", "revise"]


def test_result_conditions_are_decided_when_the_result_arrives(tmp_path: Path) -> None:
    guard = _guard(
        tmp_path,
        "plan:\n  name: t\n  phases:\n"
        "    - {id: try, symbol: T, name: Try, match: {tool: run, failed: true}}\n"
        "    - {id: pass, symbol: P, name: Pass, match: {tool: run, failed: false}}\n",
    )
    s = guard.session("r")
    for is_error in (True, False):
        ev = ToolEvent("run", {})
        assert not s.before_tool(ev).blocks
        ev.result, ev.is_error = "out", is_error
        s.after_tool(ev)
    assert s.end().letters == "TP"


def test_presets_classify_common_tools() -> None:
    cases = {
        "support": (
            [
                "find_user_id_by_email",
                "get_order_details",
                "get_policy",
                "cancel_pending_order",
                "transfer_to_human_agents",
            ],
            ["identify", "lookup", "confirm", "act", "wrap_up"],
        ),
        "research": (
            ["web_search", "fetch_url", "write_report", "web_search", "cite_sources"],
            ["search", "read", "write", "verify", "verify"],
        ),
        "data-analysis": (
            ["list_tables", "run_sql", "plot_histogram", "final_answer"],
            ["explore", "query", "check", "report"],
        ),
    }
    for preset, (tools, want) in cases.items():
        plan = PRESETS[preset]
        assert plan.declarative
        assert _roles(DeclarativeRules(plan), [ToolEvent(t, {"q": "x"}) for t in tools]) == want, preset
    explore = DeclarativeRules(PRESETS["data-analysis"])
    sql = ToolEvent("run_sql", {"query": "SELECT * FROM information_schema.columns"})
    assert explore.classify(sql, explore.new_state()).roles == ("explore",)
    assert PRESETS["coding"] is PRESETS["plan"] and not PRESETS["coding"].declarative


def test_a_preset_by_name_in_config(tmp_path: Path) -> None:
    guard = _guard(tmp_path, "plan: support\n")
    _run(guard, [("find_customer", {}), ("get_order", {}), ("refund_order", {"order_id": "1"})])
    assert guard.session("s").end().letters == "ILA"


def _check(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    rc = check_config.run(argparse.Namespace(file=str(path), no_env=True))
    return rc, capsys.readouterr().err


@pytest.mark.parametrize(
    ("change", "key", "says"),
    [
        (
            ("match: {tool: [get_order, list_orders]}", "match: {action: WRITE}"),
            "plan.phases.1.match.action",
            "'WRITE'",
        ),
        (
            ("match: {tool: confirm_with_customer}", "match: {tool: confirm_with_customer}, after: [lookp]"),
            "plan.phases.2.after.0",
            "'lookp'",
        ),
        (
            ("phases_seen: [confirm]", "phases_seen: [confrim]"),
            "policies.gates.0.until.phases_seen.0",
            "confrim",
        ),
        (
            ("phases_seen: [confirm]", "phase_after: {phase: act, after: confirmed}"),
            "policies.gates.0.until.phase_after.after",
            "confirmed",
        ),
    ],
)
def test_check_config_rejects_unknown_names_with_their_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: tuple[str, str], key: str, says: str
) -> None:
    assert CONTRACT.count(change[0]) == 1
    rc, err = _check(tmp_path, CONTRACT.replace(*change), capsys)
    assert rc == 1 and f": {key}: " in err and says in err, err  # the full key path, at its line
    rc, err = _check(tmp_path, CONTRACT, capsys)
    assert rc == 0 and err == ""


def test_a_plan_file_with_a_bad_regex_names_file_and_key(tmp_path: Path) -> None:
    path = tmp_path / "plan.yaml"
    path.write_text("phases:\n  - {id: a, symbol: A, name: A, match: {result: '(unclosed'}}\n")
    with pytest.raises(ValueError, match=r"plan\.yaml: phases\.0\.match.*result.*regular expression"):
        load_plan(path)


def test_a_mixed_plan_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        "plan:\n  name: t\n  phases:\n    - {id: a, symbol: A, name: A, match: {tool: x}}\n"
        "    - {id: b, symbol: B, name: B}\n"
    )
    with pytest.raises(ConfigError, match=r"phases\.1: expected a 'match'"):
        load_config(path, env={})


def test_schema_describes_declared_phases() -> None:
    schema = config_schema()
    defs = schema["$defs"]
    phase = defs["PlanPhase"]["properties"]
    assert {"match", "after", "before", "first_only"} <= set(phase)
    match = defs["PhaseMatch"]["properties"]
    assert {"tool", "tool_regex", "action", "arguments", "target", "failed", "exit_code", "result"} <= set(
        match
    )
    assert "FILE_WRITE" in match["action"]["description"]
    assert {"equals", "exists"} <= set(defs["ArgumentTest"]["properties"])
    json.dumps(schema)  # serialisable as `planguard schema` prints it


def test_general_is_not_a_phase_id_and_hostile_arguments_fail_open(tmp_path: Path) -> None:
    path = tmp_path / "g.yaml"
    path.write_text(
        "plan:\n  name: t\n  phases:\n    - {id: general, symbol: G, name: G, match: {tool: x}}\n"
    )
    with pytest.raises(ConfigError, match=r"phases\.0\.id: 'general'"):
        load_config(path, env={})
    rules = _rules([_p("deep", {"tool": "t", "arguments": {"a": "x"}})])
    nested: Any = "x"
    for _ in range(10_000):
        nested = [nested]
    c = rules.classify(ToolEvent("t", {"a": nested}), rules.new_state())  # too deep to render: general
    assert c.roles == ()
    assert _roles(rules, [ToolEvent("t", {"a": "x" * 1_000_000})]) == ["deep"]


def test_a_recorded_session_replays_under_its_config_to_the_same_findings_and_decisions(
    tmp_path: Path,
) -> None:
    from planguard.cli.commands import replay as replay_command
    from planguard.offline.replay import DecisionLog

    store = tmp_path / "store"
    config = tmp_path / "planguard.yaml"
    config.write_text(
        CONTRACT
        + "  reminder: {every_model_calls: 4, min_gap_model_calls: 0}\n"
        + f"store: {{path: '{store}'}}\ntelemetry: {{enabled: false}}\n"
    )
    live = DecisionLog()
    guard = Guard(load_config(config, env={}), sinks=[live])
    calls = [("find_customer_by_email", {"email": "a@example.com"})]
    calls += [("get_order", {"order_id": "O-1"})] * 4  # the same call four times in a row: repeated_call
    calls += [("refund_order", {"order_id": "O-1"}), ("confirm_with_customer", {"order_id": "O-1"})]
    calls += [("refund_order", {"order_id": "O-1"})]
    _run(guard, calls)
    summary = guard.end("s")
    guard.shutdown()
    assert "repeated_call" in summary.finding_counts and summary.decision_counts["deny"] == 1

    out = tmp_path / "replay.jsonl"
    parser = argparse.ArgumentParser()
    replay_command.register(parser.add_subparsers())
    ns = parser.parse_args(
        ["replay", "--config", str(config), str(store), "--format", "jsonl", "-o", str(out)]
    )
    assert ns.func(ns) == 0
    (rec,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert rec["letters"] == summary.letters == "ILLLLCA"
    assert [(f["detector"], f["first_step"], f["last_step"]) for f in rec["findings"]] == [
        (f.detector, f.first_step, f.last_step) for f in summary.findings
    ]
    assert rec["decisions"] == live.take("s")
    assert {d["kind"] for d in rec["decisions"]} >= {"deny", "remind"}
    assert rec["n_steps"] == summary.n_steps == 7 and rec["n_denied"] == 1
