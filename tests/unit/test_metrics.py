from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planguard.metrics import Compliance, Langutory, lis_length, score_roles
from planguard.phases import LETTER_OF
from planguard.plan import PRESETS, SCORED_SETTINGS, Plan, phase_matches

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
GOLDEN = SHARED / "spec" / "golden_metrics.json"


def _golden_cases() -> list[dict]:
    if not GOLDEN.is_file():
        return []
    return json.loads(GOLDEN.read_text())["cases"]


@pytest.mark.skipif(not GOLDEN.is_file(), reason="shared spec not present")
def test_golden_file_has_18_cases() -> None:
    assert len(_golden_cases()) == 18


@pytest.mark.parametrize("case", _golden_cases(), ids=lambda c: c["name"])
def test_golden_metrics(case: dict) -> None:
    lang = Langutory.from_letters(case["letters"])
    assert lang.rle() == case["langutory_rle"]
    assert lang.letters() == case["letters"]
    plan = PRESETS[case["setting"]]
    assert list(plan.expected) == case["expected_order"]
    roles = [str(r) for r, n in lang.runs for _ in range(int(n))]
    s = score_roles(roles, plan)
    for key in ("PPF", "PPC", "POC", "PC"):
        assert s.as_dict()[key] == pytest.approx(case[key], abs=1e-4), key
    assert s.lis == case["lis"]
    assert s.m == case["m"]
    assert sorted(s.extra_phases) == sorted(case["extra_phases"])


def test_paper_scored_settings_expected_orders() -> None:
    std = ("L_navigate", "L_reproduce", "P", "V_newly_generated_test")
    npv = ("L_navigate", "P", "V_newly_generated_test")
    assert PRESETS["plan"].expected == std
    assert PRESETS["plan_and_summary"].expected == std
    assert PRESETS["plan_reminded"].expected == std
    assert PRESETS["no_reproduce"].expected == npv
    assert PRESETS["plan_reordered"].expected == npv
    assert PRESETS["no_validation"].expected == ("L_navigate", "L_reproduce", "P")
    assert PRESETS["plan_and_regression"].expected == (
        "L_reproduce_regression_test",
        "L_navigate",
        "L_reproduce_newly_generated_test",
        "P",
        "V_newly_generated_test",
        "V_regression_test",
    )
    assert not PRESETS["no_plan"].scored
    assert len(SCORED_SETTINGS) == 7


def test_compliance_is_incremental_and_cached() -> None:
    c = Compliance(PRESETS["plan"])
    c.add("L_navigate")
    assert c.scores().PPC == pytest.approx(0.25)
    assert c.missing() == ("L_reproduce", "P", "V_newly_generated_test")
    c.add("P")
    assert c.scores() is c.scores()
    assert c.scores().PPC == pytest.approx(0.5)
    assert c.missing() == ("L_reproduce", "V_newly_generated_test")


def test_lis_strict() -> None:
    assert lis_length([]) == 0
    assert lis_length([3, 1, 2]) == 2
    assert lis_length([1, 1, 1]) == 1
    assert lis_length([0, 4, 1, 2, 3]) == 4


ROLES = st.sampled_from([*sorted(LETTER_OF), "X_unknown", "S"])


@given(st.lists(ROLES, max_size=60), st.sampled_from(SCORED_SETTINGS))
def test_scores_bounded_and_incremental_equals_batch(roles: list[str], setting: str) -> None:
    plan = PRESETS[setting]
    inc = Compliance(plan)
    for i, r in enumerate(roles):
        inc.add(r)
        s = inc.scores()
        for v in s.as_dict().values():
            assert 0.0 <= v <= 1.0
        assert s == score_roles(roles[: i + 1], plan)
    s = inc.scores()
    if s.PC > 0:
        assert s.PC == pytest.approx((s.PPF * s.PPC * s.POC) ** (1 / 3))


@given(st.lists(ROLES, max_size=80))
def test_langutory_run_length_round_trip(roles: list[str]) -> None:
    lang = Langutory()
    lang.extend(roles)
    assert lang.length == len(roles)
    expanded = [r for r, n in lang.runs for _ in range(int(n))]
    assert expanded == roles
    assert all(a[0] != b[0] for a, b in zip(lang.runs, lang.runs[1:], strict=False))


def _reference_scores(roles: list[str], plan: Plan) -> tuple[float, float, float, int, tuple[str, ...]]:
    """PPC, POC, PPF, LIS and extras straight from the definitions (no incremental state)."""
    expected = plan.expected
    first = [next((i for i, r in enumerate(roles) if phase_matches(r, e)), None) for e in expected]
    present = [f for f in first if f is not None]
    best = [1] * len(present)  # O(n^2) longest strictly increasing subsequence
    for i in range(len(present)):
        for j in range(i):
            if present[j] < present[i]:
                best[i] = max(best[i], best[j] + 1)
    lis = max(best, default=0)
    extras = tuple(dict.fromkeys(r for r in roles if not any(phase_matches(r, e) for e in expected)))
    m = len(expected)
    return len(present) / m, lis / m, m / (m + len(extras)), lis, extras


@given(st.lists(ROLES, max_size=60), st.sampled_from(SCORED_SETTINGS))
def test_incremental_scores_match_the_definitions(roles: list[str], setting: str) -> None:
    plan = PRESETS[setting]
    c = Compliance(plan)
    for i, r in enumerate(roles):
        c.add(r)
        s = c.scores()
        ppc, poc, ppf, lis, extras = _reference_scores(roles[: i + 1], plan)
        assert (s.PPC, s.POC, s.PPF, s.lis, s.extra_phases) == (
            pytest.approx(ppc),
            pytest.approx(poc),
            pytest.approx(ppf),
            lis,
            extras,
        )
        assert c.n == i + 1


def test_langutory_is_bounded_and_the_metrics_stay_exact():
    """100,000 alternating calls made 100,000 runs (11 MB for one session); the newest MAX_RUNS are kept,
    the rest counted, and PPC/POC/PPF/PC equal the scores of the whole sequence."""
    from planguard.metrics import MAX_RUNS, Compliance, Langutory, score_roles

    roles = ["L_navigate", "P", "R_new_test", "P"] + ["L_navigate", "V_regression_test"] * 50_000
    lang = Langutory()
    comp = Compliance(["R", "P", "V"])
    for r in roles:
        lang.extend((r,))
        comp.add(r)
    assert lang.length == len(roles)
    assert len(lang.runs) <= MAX_RUNS + MAX_RUNS // 4
    assert lang.truncated and lang.truncated_roles + sum(int(n) for _, n in lang.runs) == len(roles)
    rle = lang.rle()
    assert rle[0] == f"truncated_{lang.truncated_roles}" and rle[-1] == "V_regression_test_1"
    assert lang.current == "V_regression_test" and lang.tail(2) == "N1 v1"
    assert comp.scores() == score_roles(roles, ["R", "P", "V"])
    short = Langutory()
    short.extend(["L_navigate", "L_navigate", "P"])
    assert short.rle() == ["L_navigate_2", "P_1"] and not short.truncated


def test_span_tails_stay_right_across_the_langutory_cap():
    from planguard.events import ToolEvent
    from planguard.metrics import MAX_RUNS
    from planguard.session import Pipeline
    from planguard.sinks.telemetry import attributes as A
    from planguard.sinks.telemetry.testing import TelemetryCapture

    cap = TelemetryCapture()
    session = Pipeline(sinks=(cap.sink,)).session("s")
    n = 2 * MAX_RUNS + 100
    for i in range(n):
        event = ToolEvent.shell("ls") if i % 2 else ToolEvent.shell("python -m pytest tests/test_a.py")
        session.observe(event)
        if i >= n - 3:
            assert session.langutory.truncated
            cap.flush()
            tail = cap.spans()[-1].attributes[A.LANGUTORY_TAIL]
            assert tail == session.langutory.tail(), (i, tail)
    cap.shutdown()
