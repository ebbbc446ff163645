"""CONVERGE run alignment: compatibility rules, LCS, divergence spans and pinned layer verdicts."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from planguard.actions import AnchorSet, Effect, classify_action
from planguard.cli import main
from planguard.events import ToolEvent
from planguard.offline.diff import THRESHOLDS, Layer, Metric, _lcs, align, alignment_key, run_view

sh = ToolEvent.shell

REF = [
    sh('grep -rn "def f" pkg', result="pkg/mod.py:1", exit_code=0),
    sh("cat pkg/mod.py", exit_code=0),
    sh("sed -i 's/a/b/' pkg/mod.py", exit_code=0),
    sh("pytest -q", exit_code=0),
    sh("submit"),
]
# Reads elsewhere and edits another file (file selection), rewrites that file at once (edit stability),
# wanders off after its test run into a failed edit and submits unvalidated (completion behaviour).
CMP = [
    sh('grep -rn "def g" pkg', exit_code=0),
    sh("cat docs/index.rst", exit_code=0),
    sh("cat docs/api.rst", exit_code=0),
    sh("echo v1 > pkg/other.py", exit_code=0),
    sh("echo v2 > pkg/other.py", exit_code=0),
    sh("ls build", exit_code=0),
    sh("pytest -q", exit_code=0),
    sh("ls dist", exit_code=0),
    sh("cat notes.txt", exit_code=0),
    sh("sed -i 's/q/r/' pkg/other.py", exit_code=1),
    sh("submit"),
]


def verdicts(ref: list[ToolEvent], cmp: list[ToolEvent], **kw: object) -> dict[str, str]:
    al = align(run_view(ref), run_view(cmp), **kw)  # type: ignore[arg-type]
    return {layer.name: layer.verdict for layer in al.layers}


def test_pinned_layer_verdicts_on_a_crafted_pair() -> None:
    al = align(run_view(REF, label="ref"), run_view(CMP, label="cmp"))
    assert {layer.name: layer.verdict for layer in al.layers} == {
        "file_selection": "weak",
        "edit_stability": "moderate",
        "completion_behavior": "weak",
    }
    metrics = {m.name: (m.value, m.tier) for layer in al.layers for m in layer.metrics}
    assert metrics == {
        "off_anchor_ratio": (0.75, "medium"),  # docs/index.rst, docs/api.rst, notes.txt of 4 reads/searches
        "scope_drift": (1.0, "high"),  # its only source file, pkg/other.py, is not in the reference's
        "missed_files": (1.0, "high"),  # never writes pkg/mod.py
        "rapid_rewrites": (1.0, "medium"),  # echo v2 overwrites echo v1 one step later
        "failed_excess": (0.0909, "none"),
        "error_spirals": (0.0, "none"),
        "dead_ends": (1.0, "medium"),  # ls, cat, failed sed after the test run
        "out_of_order_ratio": (0.0, "none"),
        "missing_final_validation": (1.0, "medium"),
    }
    assert al.pairs == [(0, 0), (3, 6), (4, 10)]  # the search (same scope), the test run, the submit
    assert [(s.ref, s.cmp, s.dead_end) for s in al.spans] == [
        ((1, 2), (1, 2, 3, 4, 5), False),
        ((), (7, 8, 9), True),
    ]
    assert al.summary["coverage"] == 0.6
    assert verdicts(REF, REF) == dict.fromkeys(
        ("file_selection", "edit_stability", "completion_behavior"), "strong"
    )


def test_anchor_mode_judges_file_selection_against_the_gold_files() -> None:
    anchors = AnchorSet.parse(["pkg/other.py"])
    al = align(run_view(REF, anchors=anchors), run_view(CMP, anchors=anchors), anchors=anchors)
    fs = al.layers[0]
    assert {m.name: m.value for m in fs.metrics}["scope_drift"] == 0.0
    assert fs.verdict == "moderate"  # it edits the gold file; only its reading wanders (0.75 off-anchor)
    assert {m.name: m.tier for m in fs.metrics} == {
        "off_anchor_ratio": "medium",
        "scope_drift": "none",
        "missed_files": "none",
    }


def test_compatibility_rules() -> None:
    def key(cmd: str, **kw: object) -> tuple[str, str, str]:
        e = sh(cmd, **kw)
        view = run_view([e])
        return alignment_key(view.actions[0], view.effects[0])

    assert key("python reproduce.py", exit_code=0) == key("pytest -q", exit_code=0)  # both validation
    assert key("python reproduce.py", exit_code=1) != key("python reproduce.py", exit_code=0)  # failed ≠ ok
    assert key('grep "a" pkg') == key("rg b pkg")  # same search scope
    assert key('grep "a" pkg') != key('grep "a" docs')
    assert key("python setup.py build") == key("python other.py")  # non-test python: same intent
    a = classify_action(sh("cat pkg/a.py"))
    assert alignment_key(a, Effect.OFF_ANCHOR) == alignment_key(a, Effect.JUSTIFIED)  # permissive off-anchor
    assert alignment_key(a, Effect.FAILED) != alignment_key(a, Effect.JUSTIFIED)


def test_lcs_is_a_longest_monotonic_matching() -> None:
    assert _lcs("ABCBDAB", "BDCABA") and len(_lcs("ABCBDAB", "BDCABA")) == 4
    pairs = _lcs(list("XMJYAUZ"), list("MZJAWXU"))
    assert len(pairs) == 4 and all(a < b for (a, _), (b, _) in itertools.pairwise(pairs))
    assert _lcs([], "abc") == [] and _lcs("abc", "def") == []


def test_reordering_is_counted_only_for_work_both_runs_did() -> None:
    a = [sh("cat a.py"), sh("cat b.py"), sh("pytest")]
    b = [sh("cat b.py"), sh("cat a.py"), sh("pytest"), sh("cat a.py")]
    al = align(run_view(a), run_view(b))
    assert al.summary["out_of_order"] == 1  # one of the two reads could not be matched in this order
    assert [r.kind for r in al.rows].count("match") == 2


def test_metric_tiers_and_layer_rule() -> None:
    good, warn = THRESHOLDS["off_anchor_ratio"]
    assert (good, warn) == (0.50, 0.85)  # the paper's frozen 0.85
    assert Metric("m", 0.5, good, warn).tier == "none"
    assert Metric("m", 0.6, good, warn).tier == "medium"
    assert Metric("m", 0.85, good, warn).tier == "high"
    med = Metric("m", 0.6, good, warn)
    none = Metric("m", 0.0, good, warn)
    assert Layer("l", (none, none)).verdict == "strong"
    assert Layer("l", (med, none)).verdict == "moderate"
    assert Layer("l", (med, med)).verdict == "weak"
    assert Layer("l", (Metric("m", 0.9, good, warn),)).verdict == "weak"


# ------------------------------------------------------------------------------------------------ CLI


CORPUS = "data/swe-agent/trajectories.jsonl"
A_ID = "20250522_sweagent_claude-4-sonnet-20250514/sympy__sympy-17139"
B_ID = "20250511_sweagent_lm_32b/sympy__sympy-17139"


def test_diff_cli_side_by_side_on_real_runs(shared: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = shared / CORPUS
    assert main(["diff", f"{corpus}:{A_ID}", str(corpus), "--id-b", B_ID, "--width", "120"]) == 0
    out = capsys.readouterr().out
    assert f"reference (A): {A_ID}" in out and f"compared  (B): {B_ID}" in out
    assert "sympy/simplify/fu.py" in out and " = " in out
    assert "file_selection        strong" in out
    assert "edit_stability        weak" in out  # the failing model's run rewrites fu.py and fails more
    assert max(len(line) for line in out.splitlines()) <= 120


def test_diff_cli_json_and_errors(shared: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    corpus = shared / CORPUS
    assert (
        main(
            [
                "diff",
                f"{corpus}:sonnet-20250514/sympy__sympy-17139",
                f"{corpus}:lm_32b/sympy__sympy-17139",
                "--format",
                "json",
                "--anchors",
                "sympy/simplify/fu.py",
            ]
        )
        == 0
    )
    doc = json.loads(capsys.readouterr().out)
    assert doc["anchors"] == ["sympy/simplify/fu.py"]
    assert set(doc["layers"]) == {"file_selection", "edit_stability", "completion_behavior"}
    assert doc["rows"][0].keys() == {"kind", "ref", "cmp", "out_of_order"}
    # single-run files need no id
    raw = shared / "data" / "realtraj" / "swe-agent-raw"
    out_file = tmp_path / "d.txt"
    assert (
        main(
            [
                "diff",
                str(raw / "claude-4-sonnet_astropy__astropy-14365.traj"),
                str(raw / "lm_32b_astropy__astropy-12907.traj"),
                "-o",
                str(out_file),
            ]
        )
        == 0
    )
    assert "completion_behavior" in out_file.read_text()
    # a multi-run file without an id, an unknown id, a missing file
    assert main(["diff", str(corpus), f"{corpus}:{B_ID}"]) == 2
    assert "holds several runs" in capsys.readouterr().err
    assert main(["diff", f"{corpus}:nope", f"{corpus}:{B_ID}"]) == 2
    assert "no run with id 'nope'" in capsys.readouterr().err
    assert main(["diff", str(tmp_path / "missing.jsonl"), f"{corpus}:{B_ID}"]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["diff", f"{corpus}:sympy__sympy-17139", f"{corpus}:{B_ID}"]) == 2
    assert "ambiguous" in capsys.readouterr().err
