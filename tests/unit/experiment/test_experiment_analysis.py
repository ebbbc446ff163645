"""Golden and property tests of the experiment analysis (Default-Trap paper §3.2–3.3, App. B.1)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("numpy")

from planguard.experiment.analysis import analyze, bootstrap_counts
from planguard.experiment.endpoints import ENDPOINTS, Endpoint
from planguard.experiment.format import fmt, to_csv, to_json, to_table
from planguard.experiment.records import Episode

_ids = itertools.count()


def ep(
    task: str,
    cond: str,
    label: str,
    *,
    text: str | None = None,
    cluster: str | None = None,
    success: float | None = None,
    tokens: float | None = None,
) -> Episode:
    return Episode(
        f"s{next(_ids)}",
        task,
        cond,
        Endpoint(label),
        cluster=cluster,
        text=text,
        success=success,
        tokens=tokens,
    )


def hand_set() -> list[Episode]:
    c1, c2 = "c1", "c2"
    return [
        # t1: two texts; A plan repeated twice per text
        ep("t1", "A", "A", text="x", cluster=c1, success=1),
        ep("t1", "A", "A", text="x", cluster=c1, success=1),
        ep("t1", "A", "A", text="y", cluster=c1, success=1),
        ep("t1", "A", "B", text="y", cluster=c1, success=0),
        ep("t1", "B", "B", text="x", cluster=c1),
        ep("t1", "B", "B", text="y", cluster=c1),
        ep("t1", "none", "A", text="x", cluster=c1, success=1),
        ep("t1", "none", "YIELD", text="y", cluster=c1, success=0),
        # t2: one execution per condition
        ep("t2", "A", "A", cluster=c1),
        ep("t2", "B", "OTHER", cluster=c1),
        ep("t2", "none", "A", cluster=c1),
        # t3: four A repeats, two B repeats
        *(ep("t3", "A", lab, cluster=c2) for lab in ("A", "A", "A", "ERROR")),
        ep("t3", "B", "B", cluster=c2),
        ep("t3", "B", "B", cluster=c2),
        ep("t3", "none", "B", cluster=c2),
        # t4 lacks the B condition: counted in distributions' episode counts but not in contrasts
        ep("t4", "A", "A", cluster=c2),
        ep("t4", "none", "A", cluster=c2),
    ]


def test_hand_computed_task_first_estimates() -> None:
    r = analyze(hand_set(), resamples=2000, seed=1)
    v = {e.name: e.value for e in r.estimates}
    # Worked by hand: repeats within text, texts within task, tasks equally weighted (t1, t2, t3).
    assert v["D_A"] == pytest.approx(250 / 3)
    assert v["R_A"] == pytest.approx(100 / 3)
    assert v["G_A"] == pytest.approx(50)
    assert v["D_B"] == pytest.approx(175 / 3)
    assert v["R_B"] == pytest.approx(100 / 3)
    assert v["G_B"] == pytest.approx(25)
    assert v["C(P_A)"] == pytest.approx(275 / 3)
    assert v["C(P_B)"] == pytest.approx(200 / 3)
    assert v["p_O(P_B)"] == pytest.approx(100 / 3)
    assert v["p_O(none)"] == pytest.approx(50 / 3)
    assert v["H_A"] == pytest.approx(50) and v["H_B"] == pytest.approx(200 / 3)  # 1 − p_k(none)
    assert (v["R_A"] or 0) <= (v["H_A"] or 0) and (v["R_B"] or 0) <= (v["H_B"] or 0)
    assert v["N_A"] == pytest.approx(50)  # t1: (0 + 1)/2, t3: 3 of 6 pairs disagree
    assert r.get("N_A").n_tasks == 2
    assert v["N_B"] == pytest.approx(0) and r.get("N_B").n_tasks == 1
    assert "N_none" not in v
    assert v["S: P_A − none"] == pytest.approx(25)  # t1 only: 0.75 − 0.5
    assert r.get("p_ERROR(P_A)").value == pytest.approx(25 / 3)
    assert r.n_complete_tasks == 3 and r.n_tasks == 4 and r.n_clusters == 2
    assert any("t4" in w for w in r.warnings)
    assert r.counts["A"]["A"] == 8
    for check in r.identities:
        assert check.holds, check
    # Two clusters: resamples are {c1,c1}, {c1,c2}, {c2,c2}; c2 alone gives D_A = 75, c1 alone 87.5.
    d = r.get("D_A")
    assert d.lo == pytest.approx(75) and d.hi == pytest.approx(87.5)


def test_cluster_key_from_meta_and_task() -> None:
    eps = hand_set()
    for e in eps:
        e.meta["customer"] = "one"
    r = analyze(eps, cluster="customer", resamples=200)
    assert r.n_clusters == 1
    d = r.get("D_A")
    assert d.lo == d.hi == pytest.approx(d.value)  # one cluster: degenerate, and said so
    assert any("one cluster" in w for w in r.warnings)
    assert analyze(eps, cluster="task", resamples=0).n_clusters == 4
    with pytest.raises(ValueError, match="cluster key 'nope'"):
        analyze(eps, cluster="nope", resamples=0)


def retail_luna() -> list[Episode]:
    """96 tasks × 2 texts, plans run twice and no plan once per text (paper §3.1), with counts chosen to give
    the paper's Retail/Luna branch probabilities (Table 1, App. B.2) and repeat disagreement."""
    pa = [("A", "A")] * 170 + [("A", "YIELD")] * 9 + [("B", "B")] * 2 + [("OTHER", "OTHER")] * 11
    pb = [("B", "B")] * 175 + [("B", "A")] + [("B", "OTHER")] * 10 + [("ERROR", "ERROR")] * 6
    none = ["A"] * 163 + ["B"] * 5 + ["YIELD"] * 24
    out: list[Episode] = []
    for i in range(192):
        task, text = f"r{i // 2}", "xy"[i % 2]
        cluster = f"cust{(i // 2) % 44}"
        for cond, pair in (("A", pa[i]), ("B", pb[i])):
            out.extend(ep(task, cond, lab, text=text, cluster=cluster) for lab in pair)
        out.append(ep(task, "none", none[i], text=text, cluster=cluster))
    return out


def test_paper_retail_luna_arithmetic() -> None:
    r = analyze(retail_luna(), resamples=500, seed=2026091802)
    shown = {e.name: fmt(e.value) for e in r.estimates}
    assert fmt(r.get("p_A(P_A)").value) == "90.89"
    assert fmt(r.get("p_A(none)").value) == "84.90"
    assert fmt(r.get("p_A(P_B)").value) == "0.26"
    assert (shown["D_A"], shown["R_A"], shown["G_A"]) == ("90.63", "5.99", "84.64")
    assert (shown["D_B"], shown["R_B"]) == ("92.97", "91.41")
    assert (shown["N_A"], shown["N_B"]) == ("4.69", "5.73")
    eq3 = next(i for i in r.identities if i.name == "eq3_A")
    assert [fmt(v) for v in eq3.terms.values()] == ["5.99", "91.41", "5.73", "-12.50"]
    assert fmt(eq3.terms["p_O(P_B)"] + eq3.terms["p_O(none)"]) == "-6.77"  # the paper's correction term
    table = to_table(r)
    assert "D_A = R_A + G_A: 90.63 = 5.99 + 84.64" in table
    assert "zero-width interval" in table
    assert all(i.holds for i in r.identities)


_labels = st.sampled_from([e.value for e in ENDPOINTS])


@st.composite
def experiments(draw: st.DrawFn) -> list[Episode]:
    n_tasks = draw(st.integers(1, 6))
    out: list[Episode] = []
    for t in range(n_tasks):
        cluster = f"c{draw(st.integers(0, 2))}"
        for cond in ("A", "B", "none"):
            for text in draw(
                st.lists(st.sampled_from(["x", "y", None]), min_size=1, max_size=2, unique=True)
            ):
                for lab in draw(st.lists(_labels, min_size=1, max_size=3)):
                    out.append(
                        ep(
                            f"t{t}",
                            cond,
                            lab,
                            text=text,
                            cluster=cluster,
                            success=draw(st.sampled_from([None, 0.0, 1.0])),
                        )
                    )
    return out


@settings(max_examples=60, deadline=None)
@given(experiments(), st.integers(0, 2**32 - 1))
def test_identities_hold_with_non_ab_endpoints(eps: list[Episode], seed: int) -> None:
    r = analyze(eps, resamples=40, seed=seed)
    assert {i.name for i in r.identities} == {"eq2_A", "eq2_B", "eq3_A", "eq3_B", "eq4"}
    for i in r.identities:
        assert abs(i.residual) < 1e-9 and (i.max_resample_residual or 0) < 1e-9, i
    for dist in r.distributions.values():  # every category stays in the denominator
        assert sum(e.value or 0 for e in dist) == pytest.approx(100)
    d = r.get("D_A")
    assert d.value is not None and d.lo is not None and d.hi is not None
    assert d.lo <= d.value + 1e-9 <= d.hi + 2e-9


def test_bootstrap_counts_resample_whole_clusters() -> None:
    w = bootstrap_counts(7, 1000, 3)
    assert w.shape == (1000, 7) and (w.sum(1) == 7).all()
    assert abs(w.mean() - 1) < 0.05
    assert (bootstrap_counts(7, 10, 3) == bootstrap_counts(7, 10, 3)).all()


def test_renderers_cover_every_row() -> None:
    r = analyze(hand_set(), resamples=100)
    csv_text = to_csv(r)
    assert csv_text.count("\ndistribution,") == 24
    assert "identity,D_A = R_A + G_A" in csv_text
    js = to_json(r)
    assert '"eq3_A"' in js and '"holds": true' in js
    assert fmt(90.625) == "90.63" and fmt(None) == "—"
