"""Report numbers: phase flow, effect profile, grouping, model derivation, replay-record parsing, sampling."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from planguard.offline.report.aggregate import ALL, build_report, phase_flow, phase_runs, run_effect_shares
from planguard.offline.report.html import render_html, sankey_svg
from planguard.offline.report.records import RunRecord, model_from_run, record_from_replay_json


def rec(
    run_id: str,
    letters: str,
    outcome: str = "resolved",
    model: str = "m",
    pc: float = 1.0,
    *,
    effects: str = "",
    findings: list[tuple[str, int, int, bool]] | None = None,
) -> RunRecord:
    return RunRecord(
        id=run_id,
        source="t",
        format="test",
        outcome=outcome,
        model=model,
        setting="default",
        steps=letters,
        letters=letters,
        metrics={"plan": {"PPC": pc, "POC": pc, "PPF": 1.0, "PC": pc}},
        effects=effects,
        findings=findings or [],
    )


def test_phase_runs_collapses_repeats() -> None:
    assert phase_runs("NNRRRPVV") == "NRPV"
    assert phase_runs("") == ""


def test_phase_flow_counts_nodes_links_termination_and_overflow() -> None:
    flow = phase_flow(["NNRPV", "NRPV", "NP", "", "NP" * 6])
    assert flow.n_runs == 5
    assert flow.nodes[(0, "N")] == 4 and flow.nodes[(0, "END")] == 1
    assert flow.links[((0, "N"), (1, "R"))] == 2
    assert flow.links[((0, "N"), (1, "P"))] == 2
    assert flow.links[((1, "P"), (2, "END"))] == 1
    assert flow.links[((3, "V"), (4, "END"))] == 2
    # 12 phase runs: position 10 is N (alternating), then it continues past the last position.
    assert flow.links[((10, "N"), (11, "MORE"))] == 1
    assert (11, "END") not in flow.nodes
    # Every run that starts with a phase ends in exactly one END or MORE node.
    ends = sum(c for (k, ph), c in flow.nodes.items() if ph in ("END", "MORE") and k > 0)
    assert ends == 4


def test_sankey_svg_carries_every_node_and_link() -> None:
    flow = phase_flow(["NRPV", "NP"])
    svg = sankey_svg(flow, {"N": True, "R": True, "P": True, "V": True, "r": False, "v": False})
    for (k, ph), c in flow.nodes.items():
        assert f'data-node="{k}:{ph}" data-count="{c}"' in svg
    for (s, d), c in flow.links.items():
        assert f'data-source="{s[0]}:{s[1]}" data-target="{d[0]}:{d[1]}" data-count="{c}"' in svg
    assert svg.count('class="link"') == len(flow.links)


def test_effect_shares_and_harmful_ratio() -> None:
    # Reasoning (Z) and unlabelled (-) are left out of the denominator: 8 labelled actions.
    s = run_effect_shares("SSFXJCNOZ-Z")
    assert s is not None
    assert s["survived"] == pytest.approx(2 / 8)
    assert s["failed"] == pytest.approx(1 / 8) and s["reverted"] == pytest.approx(1 / 8)
    assert s["harmful"] == pytest.approx(2 / 8)
    assert run_effect_shares("ZZ--") is None


@pytest.mark.parametrize(
    ("run", "model"),
    [
        ("20250511_sweagent_lm_32b", "lm_32b"),
        ("20250522_sweagent_claude-4-sonnet-20250514", "claude-4-sonnet-20250514"),
        ("christsakm_gpt-5-2025-08-07", "gpt-5-2025-08-07"),
        ("gpt-4o", "gpt-4o"),
        (None, None),
    ],
)
def test_model_from_run(run: str | None, model: str | None) -> None:
    assert model_from_run(run) == model


def test_replay_record_parsing_and_errors() -> None:
    obj = {
        "id": "20250511_sweagent_lm_32b/x__y-1",
        "source": "f:1",
        "format": "swe-agent-jsonl",
        "n_steps": 3,
        "step_roles": [["L_navigate"], [], ["P", "V_newly_generated_test"]],
        "letters": "NPV",
        "langutory": [],
        "metrics": {"plan": {"PPC": 0.75, "POC": 0.75, "PPF": 1.0, "PC": 0.8}},
        "actions": [{"effect": "SURVIVED"}, {"effect": None}, {"effect": "FAILED"}],
        "findings": [{"detector": "search_loop", "first_step": 0, "last_step": 2, "at_end": False}],
    }
    r = record_from_replay_json(obj, "f.jsonl:1")
    assert (r.model, r.outcome, r.steps, r.effects) == ("lm_32b", "unknown", "N.P", "S-F")
    assert r.findings == [("search_loop", 0, 2, False)]
    r2 = record_from_replay_json({**obj, "resolved": True}, "f.jsonl:1")
    assert r2.outcome == "resolved"
    with pytest.raises(ValueError, match=r"f.jsonl:7: 'metrics' is missing"):
        record_from_replay_json({k: v for k, v in obj.items() if k != "metrics"}, "f.jsonl:7")
    with pytest.raises(ValueError, match=r"findings\[0\] is malformed"):
        record_from_replay_json({**obj, "findings": [{"detector": "x"}]}, "f.jsonl:2")


def test_build_report_groups_tests_prevalence_and_effects() -> None:
    runs = [
        rec(f"a{i}", "NRPV", "resolved", "A", 1.0, effects="SSJF", findings=[("search_loop", 0, 1, False)])
        for i in range(5)
    ]
    runs += [rec(f"b{i}", "NP", "unresolved", "B", 0.5, effects="FXSS") for i in range(4)]
    runs += [rec("c0", "", "unknown", "C", 0.0)]
    r = build_report(runs, group_by="model", max_drill=3)
    assert r.groups == [ALL, "A", "B", "C"]
    assert r.summary["outcomes"] == {"resolved": 5, "unresolved": 4, "unknown": 1}
    t = r.tests[ALL]["PC"]
    assert t is not None and t.n1 == 5 and t.n2 == 4 and t.u == 20.0  # every resolved run scores higher
    assert t.method == "normal"  # tied values inside each sample
    assert r.compliance["A"]["resolved"]["PC"].mean == 1.0 and r.tests["A"]["PC"] is None
    assert r.prevalence[ALL]["resolved"] == (5, {"search_loop": 1.0})
    assert r.prevalence[ALL]["unresolved"] == (4, {"search_loop": 0.0})
    assert r.effects["B"]["harmful"] == pytest.approx(0.5)
    assert r.effects["A"]["survived"] == pytest.approx(0.5)
    assert r.effects[ALL]["resolve_rate"] == pytest.approx(5 / 9)
    assert len(r.drill) == 3 and "sample of 3 of 10" in r.drill_note
    assert r.flows["B"].links[((1, "P"), (2, "END"))] == 4
    html = render_html(r)
    # The SVG namespace is a name, not a fetch; nothing else may point off the file.
    assert "http://" not in html.replace("http://www.w3.org/2000/svg", "")
    assert "https://" not in html


def test_many_groups_fold_into_other() -> None:
    runs = [rec(f"r{i}", "N", model=f"m{i % 5}") for i in range(20)]
    r = build_report(runs, group_by="model", max_groups=2)
    assert r.groups[:3] == [ALL, "m0", "m1"] and r.groups[3] == "other (3 groups)"
    assert r.summary["groups"]["other (3 groups)"]["runs"] == 12


def test_group_by_metadata_field() -> None:
    a, b = rec("a", "N"), rec("b", "N")
    a.meta["difficulty"] = "hard"
    r = build_report([a, b], group_by="difficulty")
    assert r.groups == [ALL, "hard", "unknown"]


def _scored_against(plan: str, r: RunRecord) -> RunRecord:
    r.metrics = {plan: r.metrics["plan"]}
    return r


def test_a_declared_plan_is_drawn_with_its_own_phases() -> None:
    # The support preset's letters: identify I → lookup L → confirm C → act A → wrap_up W.
    runs = [_scored_against("support", rec(f"s{i}", "ILLCAW")) for i in range(3)]
    r = build_report(runs)
    assert r.plan == "support"
    assert r.in_plan == dict.fromkeys("ILCAW", True)
    assert r.phase_names["I"] == "Identify the customer" and set(r.phase_names) == set("ILCAW")
    html = render_html(r)
    legend = html.split('<section id="flow">', 1)[1].split("</div>", 1)[0]
    for letter, name in r.phase_names.items():
        assert f"</i>{letter} {name}</span>" in legend
    assert "Reproduce" not in legend and "#a0a0a0" not in legend  # no coding letters, nothing out of plan
    # Every in-plan flow is coloured (not the out-of-plan grey) and each phase has its own colour.
    svg = html.split('<svg class="sankey"', 1)[1].split("</svg>", 1)[0]
    node_fills = dict((ph, fill) for fill, ph in re.findall(r'fill="(#\w+)" data-node="\d+:(\w)"', svg))
    assert set(node_fills) == set("ILCAW") and len(set(node_fills.values())) == 5
    assert "#a0a0a0" not in node_fills.values()


def test_a_declared_plan_given_by_file_is_found_by_name(tmp_path: Path) -> None:
    from planguard.plan import PhaseMatch, Plan, PlanPhase

    plan = Plan(
        name="refund-flow",
        phases=(
            PlanPhase(id="identify", symbol="I", name="Identify", match=PhaseMatch(tool="find_*")),
            PlanPhase(id="act", symbol="A", name="Act", match=PhaseMatch(tool="refund*")),
        ),
    )
    runs = [_scored_against("refund-flow", rec("r", "IA.A"))]
    assert build_report(runs, plans=[plan]).in_plan == {"I": True, "A": True}
    # Without the plan object nothing says what is out of the plan: every letter the runs carry is in it.
    unknown = build_report(runs)
    assert unknown.in_plan == {"A": True, "I": True} and unknown.phase_names == {}


def test_a_coding_plan_keeps_the_coding_letters_and_greys_what_it_leaves_out() -> None:
    r = build_report([_scored_against("no-reproduce", rec("c", "NPV"))], plans=[_coding_without_reproduce()])
    assert r.in_plan["N"] and r.in_plan["P"] and r.in_plan["V"] and not r.in_plan["R"]
    assert r.phase_names == {}
    # The standard plan: its reproduce phase accepts both kinds of reproduction, its validate phase only
    # the newly generated test's.
    standard = build_report([rec("d", "NRPV")])
    assert standard.in_plan == {"N": True, "R": True, "r": True, "P": True, "V": True, "v": False}


def _coding_without_reproduce() -> Any:
    from planguard.plan import PRESETS

    coding = PRESETS["plan"]
    return coding.model_copy(
        update={"name": "no-reproduce", "phases": tuple(p for p in coding.phases if "reproduce" not in p.id)}
    )
