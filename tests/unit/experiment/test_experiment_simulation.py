"""Reduced simulation check: the report recovers known D/R/G, and its intervals cover them at about the
nominal rate (the full study is benchmarks/bench_experiment.py --coverage)."""

from __future__ import annotations

import pytest

pytest.importorskip("numpy")

from planguard.experiment.analysis import analyze
from planguard.experiment.simulate import SimSpec, simulate, true_effects

NAMES = ("D_A", "R_A", "G_A", "D_B", "R_B", "G_B")


def test_large_sample_recovers_truth() -> None:
    spec = SimSpec(clusters=400)
    truth = true_effects(spec, draws=400_000)
    r = analyze(simulate(spec, seed=5), resamples=400, seed=5)
    for n in NAMES:
        e = r.get(n)
        assert e.value == pytest.approx(truth[n], abs=3.0), n
        assert e.lo is not None and e.hi is not None and e.hi - e.lo < 10


def test_interval_coverage_reduced() -> None:
    spec = SimSpec(clusters=30)
    truth = true_effects(spec, draws=400_000)
    sims, covered = 40, dict.fromkeys(NAMES, 0)
    for s in range(sims):
        r = analyze(simulate(spec, seed=1000 + s), resamples=400, seed=s)
        for n in NAMES:
            e = r.get(n)
            assert e.lo is not None and e.hi is not None
            covered[n] += e.lo <= truth[n] <= e.hi
    # Nominal 95 %: with 40 simulations, fewer than 32 covered (80 %) is well outside binomial noise.
    for n, k in covered.items():
        assert k >= 32, (n, k, covered)
