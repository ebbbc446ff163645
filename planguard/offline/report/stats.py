"""The statistics the report shows: distribution summaries and the paper's Mann–Whitney U test.

Pure Python on purpose (the core has no numeric dependencies). The U test follows the textbook
definition the plan-compliance paper cites: average ranks for ties; the exact null distribution when
there are no ties and the samples are small; otherwise the normal approximation with tie correction
and a 0.5 continuity correction. All p-values are two-sided.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["EXACT_MAX_N", "Summary", "UTest", "mann_whitney_u", "quantile", "summarize"]

#: Largest ``n1 + n2`` for which the exact distribution is used (when there are no ties). The exact
#: counts cost O(n1·n2·(n1·n2)) integer additions, which stays well under a millisecond here.
EXACT_MAX_N = 40


@dataclass(frozen=True, slots=True)
class UTest:
    """Mann–Whitney U of sample ``x`` against ``y``. ``u`` is U of ``x`` (pairs where x wins, ties ½)."""

    u: float
    n1: int
    n2: int
    z: float | None  # None for the exact method
    p: float
    method: str  # "exact" | "normal"
    effect: float  # rank-biserial correlation 2U/(n1 n2) - 1, in [-1, 1]; > 0 means x tends larger


def _ranks(values: Sequence[float]) -> tuple[list[float], list[int]]:
    """Average ranks (1-based) and the sizes of the tie groups."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    ties: list[int] = []
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        avg = (i + j) / 2 + 1
        for k in range(i, j + 1):
            ranks[order[k]] = avg
        if j > i:
            ties.append(j - i + 1)
        i = j + 1
    return ranks, ties


def _exact_cdf(u: int, n1: int, n2: int) -> float:
    """P(U ≤ u) under H0 without ties: counts of rank arrangements, by the usual recurrence
    c(i, j, u) = c(i-1, j, u-j) + c(i, j-1, u)."""
    # prev[j][v]: arrangements of i-1 x's and j y's with U = v; rolled over i.
    size = n1 * n2 + 1
    prev = [[1] + [0] * (size - 1) for _ in range(n2 + 1)]  # i = 0: U is 0
    for i in range(1, n1 + 1):
        cur = [[0] * size for _ in range(n2 + 1)]
        cur[0][0] = 1  # j = 0: U is 0
        for j in range(1, n2 + 1):
            a, b, c = prev[j], cur[j - 1], cur[j]
            for v in range(i * j + 1):
                c[v] = (a[v - j] if v >= j else 0) + b[v]
        prev = cur
    counts = prev[n2]
    return sum(counts[: u + 1]) / math.comb(n1 + n2, n1)


def mann_whitney_u(x: Sequence[float], y: Sequence[float]) -> UTest | None:
    """Two-sided Mann–Whitney U test of ``x`` against ``y``; ``None`` when either sample is empty."""
    n1, n2 = len(x), len(y)
    if n1 == 0 or n2 == 0:
        return None
    ranks, ties = _ranks([*x, *y])
    r1 = sum(ranks[:n1])
    u1 = r1 - n1 * (n1 + 1) / 2
    u2 = n1 * n2 - u1
    effect = 2 * u1 / (n1 * n2) - 1
    n = n1 + n2
    if not ties and n <= EXACT_MAX_N:
        p = min(1.0, 2 * _exact_cdf(int(min(u1, u2)), n1, n2))
        return UTest(u1, n1, n2, None, p, "exact", effect)
    mu = n1 * n2 / 2
    tie_term = sum(t**3 - t for t in ties) / (n * (n - 1))
    var = n1 * n2 / 12 * ((n + 1) - tie_term)
    if var <= 0:  # every value tied: no evidence either way
        return UTest(u1, n1, n2, 0.0, 1.0, "normal", effect)
    sd = math.sqrt(var)
    dev = max(abs(u1 - mu) - 0.5, 0.0)
    z = math.copysign(dev / sd, u1 - mu)
    p = min(1.0, math.erfc(dev / sd / math.sqrt(2)))
    return UTest(u1, n1, n2, z, p, "normal", effect)


def quantile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolation quantile (numpy's default) of already sorted values."""
    if not sorted_values:
        return math.nan
    pos = (len(sorted_values) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


@dataclass(frozen=True, slots=True)
class Summary:
    n: int
    mean: float
    min: float
    q1: float
    median: float
    q3: float
    max: float


def summarize(values: Sequence[float]) -> Summary:
    v = sorted(values)
    if not v:
        nan = math.nan
        return Summary(0, nan, nan, nan, nan, nan, nan)
    return Summary(
        len(v), sum(v) / len(v), v[0], quantile(v, 0.25), quantile(v, 0.5), quantile(v, 0.75), v[-1]
    )
