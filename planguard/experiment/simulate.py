"""Synthetic executors with known default and priority-following probabilities, for checking that the
report recovers the true D/R/G (and how often its intervals cover them).

Task t has a default ``a_t`` (Pr[A] without a plan), ``b_t = (1 − a_t)·share_b`` and a following
probability ``f_t``; the rest of the no-plan mass goes to OTHER/YIELD/ERROR. Under plan P_k the executor
reads k with probability ``f_t`` and otherwise behaves as with no plan, so

    p_A(P_A) = f + (1 − f)a,   p_A(P_B) = (1 − f)a,   p_A(∅) = a,
    D_A = E[f],   R_A = E[f(1 − a)],   G_A = E[f·a],  and symmetrically for B with b.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from .endpoints import Endpoint
from .records import Episode

__all__ = ["SimSpec", "simulate", "true_effects"]

_REST = (Endpoint.OTHER, Endpoint.YIELD, Endpoint.ERROR)


@dataclass(frozen=True, slots=True)
class SimSpec:
    clusters: int = 30
    tasks_per_cluster: int = 2
    plan_repeats: int = 2
    none_repeats: int = 1
    default_a: tuple[float, float] = (0.6, 0.95)  # uniform range of a_t
    share_b: float = 0.7
    follow: tuple[float, float] = (0.7, 1.0)  # uniform range of f_t
    cluster_sd: float = 0.05  # shared shift of a_t within a cluster (within-cluster dependence)


def _params(
    spec: SimSpec, rng: np.random.Generator, n_clusters: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    shift = rng.normal(0.0, spec.cluster_sd, size=n_clusters)
    a = rng.uniform(*spec.default_a, size=(n_clusters, spec.tasks_per_cluster)) + shift[:, None]
    a = np.clip(a, 0.0, 1.0)
    b = (1.0 - a) * spec.share_b
    f = rng.uniform(*spec.follow, size=(n_clusters, spec.tasks_per_cluster))
    return a, b, f


def true_effects(spec: SimSpec, draws: int = 2_000_000, seed: int = 12345) -> dict[str, float]:
    """Population D/R/G in percentage points (Monte Carlo over the task distribution; error ~0.01 pp)."""
    rng = np.random.default_rng(seed)
    a, b, f = (x.ravel() for x in _params(spec, rng, draws // spec.tasks_per_cluster))
    return {
        "D_A": 100 * float(f.mean()),
        "R_A": 100 * float((f * (1 - a)).mean()),
        "G_A": 100 * float((f * a).mean()),
        "D_B": 100 * float(f.mean()),
        "R_B": 100 * float((f * (1 - b)).mean()),
        "G_B": 100 * float((f * b).mean()),
    }


def simulate(spec: SimSpec, seed: int) -> list[Episode]:
    rng = np.random.default_rng(seed)
    a, b, f = _params(spec, rng, spec.clusters)
    ids = itertools.count()
    out: list[Episode] = []
    for c in range(spec.clusters):
        for t in range(spec.tasks_per_cluster):
            at, bt, ft = float(a[c, t]), float(b[c, t]), float(f[c, t])
            rest = (1.0 - at - bt) / len(_REST)
            default = [at, bt, *([rest] * len(_REST))]
            labels = (Endpoint.A, Endpoint.B, *_REST)
            probs = {
                "none": default,
                "A": [ft + (1 - ft) * default[0], *((1 - ft) * p for p in default[1:])],
                "B": [
                    (1 - ft) * default[0],
                    ft + (1 - ft) * default[1],
                    *((1 - ft) * p for p in default[2:]),
                ],
            }
            for cond, n in (("A", spec.plan_repeats), ("B", spec.plan_repeats), ("none", spec.none_repeats)):
                p = np.asarray(probs[cond])
                for k in rng.choice(len(labels), size=n, p=p / p.sum()):
                    out.append(Episode(f"sim{next(ids)}", f"c{c}t{t}", cond, labels[int(k)], cluster=f"c{c}"))
    return out
