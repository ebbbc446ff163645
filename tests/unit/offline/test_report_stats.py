"""Mann–Whitney U and summaries against values worked out by hand (no scipy in the project)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planguard.offline.report.stats import mann_whitney_u, quantile, summarize


def test_exact_complete_separation_three_by_three() -> None:
    # Only 1 of C(6,3) = 20 arrangements has U = 0; two-sided p = 2/20.
    t = mann_whitney_u([1, 2, 3], [4, 5, 6])
    assert t is not None
    assert (t.u, t.method, t.z) == (0.0, "exact", None)
    assert t.p == pytest.approx(0.1)
    assert t.effect == -1.0


def test_exact_four_by_three() -> None:
    t = mann_whitney_u([1, 2, 3, 4], [5, 6, 7])
    assert t is not None and t.method == "exact"
    assert t.p == pytest.approx(2 / 35)
    # The other direction: U of x is n1*n2 = 12, p unchanged.
    t2 = mann_whitney_u([5, 6, 7], [1, 2, 3, 4])
    assert t2 is not None and t2.u == 12.0 and t2.p == pytest.approx(2 / 35) and t2.effect == 1.0


def test_exact_two_by_two_middle_is_one() -> None:
    # U over the 6 arrangements of n1 = n2 = 2: 0,1,2,2,3,4; U = 2 → P(U ≤ 2) = 4/6, doubled and capped at 1.
    t = mann_whitney_u([1, 4], [2, 3])
    assert t is not None and t.u == 2.0 and t.p == 1.0


def test_exact_one_tail_value() -> None:
    # x = [1, 3], y = [2, 4]: U of x = 1 (3 > 2). P(U ≤ 1) = 2/6 → p = 2/3.
    t = mann_whitney_u([1, 3], [2, 4])
    assert t is not None and t.u == 1.0 and t.p == pytest.approx(2 / 3)


def test_ties_use_normal_approximation_with_tie_and_continuity_correction() -> None:
    # Pooled [1,2,2,2,3,4]: ranks 1, 3, 3, 3, 5, 6 → R1 = 7, U1 = 7 - 6 = 1, mu = 4.5.
    # var = 3*3/12 * (7 - (3^3-3)/(6*5)) = 0.75 * 6.2 = 4.65; z = -(|1-4.5| - 0.5)/sqrt(4.65).
    t = mann_whitney_u([1, 2, 2], [2, 3, 4])
    assert t is not None
    assert t.method == "normal"
    assert t.u == 1.0
    assert t.z == pytest.approx(-3 / math.sqrt(4.65))
    assert t.z == pytest.approx(-1.3912166872805047)
    assert t.p == pytest.approx(0.16415972847851523)


def test_large_samples_without_ties_use_normal() -> None:
    t = mann_whitney_u(list(range(25)), list(range(25, 50)))
    assert t is not None and t.method == "normal"
    # mu = 312.5, var = 625/12 * 51 = 2656.25 → z = -(312.5 - 0.5)/51.5388...
    assert t.z == pytest.approx(-312 / math.sqrt(2656.25))
    assert t.p == pytest.approx(1.4156562248495634e-09, rel=1e-6)


def test_all_tied_gives_p_one_and_empty_gives_none() -> None:
    t = mann_whitney_u([1.0, 1.0, 1.0], [1.0, 1.0])
    assert t is not None and t.p == 1.0 and t.u == 3.0 and t.effect == 0.0
    assert mann_whitney_u([], [1.0]) is None
    assert mann_whitney_u([1.0], []) is None


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 6), min_size=1, max_size=25), st.lists(st.integers(0, 6), min_size=1, max_size=25)
)
def test_u_is_antisymmetric_and_p_symmetric(x: list[int], y: list[int]) -> None:
    a, b = mann_whitney_u(x, y), mann_whitney_u(y, x)
    assert a is not None and b is not None
    assert a.u + b.u == pytest.approx(len(x) * len(y))
    assert a.p == pytest.approx(b.p)
    assert 0.0 <= a.p <= 1.0
    assert a.effect == pytest.approx(-b.effect)


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.floats(0, 1), min_size=1, max_size=8, unique=True),
    st.lists(st.floats(1.5, 2), min_size=1, max_size=8, unique=True),
)
def test_exact_separated_samples_have_the_smallest_p(x: list[float], y: list[float]) -> None:
    t = mann_whitney_u(x, y)
    assert t is not None and t.method == "exact" and t.u == 0.0
    assert t.p == pytest.approx(min(1.0, 2 / math.comb(len(x) + len(y), len(x))))


def test_quantile_and_summary() -> None:
    assert quantile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.5
    assert quantile([1.0, 2.0, 3.0, 4.0], 0.25) == 1.75
    s = summarize([4, 1, 3, 2])
    assert (s.n, s.min, s.median, s.max, s.mean) == (4, 1, 2.5, 4, 2.5)
    assert math.isnan(summarize([]).median)
