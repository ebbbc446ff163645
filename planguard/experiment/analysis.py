"""Default-trap-safe analysis of a paired-priority plan experiment (Default-Trap paper §3.2–3.3, App. B.1).

Estimands (percentage points unless noted), with p_k(z) = Pr[Y(z) = k] over all eight endpoints:

    D_A = p_A(P_A) − p_A(P_B)        D_B = p_B(P_B) − p_B(P_A)           directional (priority) control  (1)
    R_A = p_A(P_A) − p_A(∅)          R_B = p_B(P_B) − p_B(∅)             plan-minus-no-plan (removal)    (1)
    G_A = p_A(∅) − p_A(P_B)          G_B = p_B(∅) − p_B(P_A)             default-to-other-plan
    D_A = R_A + G_A                                                      accounting identity             (2)
    D_A = R_A + R_B + p_O(P_B) − p_O(∅),  p_O = 1 − p_A − p_B            with non-A/B outcomes     (3)
    D_B = R_A + R_B + p_O(P_A) − p_O(∅);  D_A − D_B = C(P_A) − C(P_B)    symmetric form     (B.1, eq. 4)
    C(z) = p_A(z) + p_B(z)                                               coverage (BOTH excluded)
    N_k = Pr[Y(P_k) ≠ Y(P_k repeat)]                                     repeat disagreement (§3.3)

Estimation (§3.3, App. B.1): repeats are averaged within task × condition × text, text conditions within
the task, and tasks get equal weight. Every contrast uses the same tasks (those observed under all three
conditions), so the identities hold exactly under this linear averaging. Intervals are the interpolated
2.5th and 97.5th percentiles of the task-weighted estimate over cluster-bootstrap resamples that draw whole
clusters (customers) with all their tasks, conditions and repeats. Each resample's estimate is a ratio of
per-cluster sums (Σ task values / Σ task counts), so R resamples cost one (R × clusters) count matrix and
two matrix products.

Success and cost contrasts (App. D.4–D.5) use the same episodes, averaged the same way: per task, the
condition means of success / tokens / tool calls, then each plan − none and B − A over tasks where both
conditions have the value.
"""

from __future__ import annotations

import math
import warnings
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from .config import CONDITIONS
from .endpoints import ENDPOINTS, Endpoint
from .records import Episode

__all__ = ["Estimate", "ExperimentReport", "IdentityCheck", "analyze", "INTERVAL_NOTES"]

COND_LABEL = {"A": "P_A", "B": "P_B", "none": "none"}
INTERVAL_NOTES = (
    "Intervals are nominal pointwise 95% cluster-bootstrap percentile intervals (middle 95% of resampled "
    "task-weighted estimates), without multiplicity correction; no equivalence test is performed.",
    "An interval that includes zero does not establish equivalence; a zero-width interval records equality "
    "across empirical resamples, not population invariance or the absence of execution randomness.",
    "A zero repeat-disagreement estimate records agreement among the observed pairs only.",
    "The identities hold under common linear averaging over tasks; they do not identify latent plan use or "
    "per-execution counterfactual transitions. A small R_A next to a large D_A is the default trap: removal "
    "and priority switching answer different intervention questions.",
)


@dataclass(slots=True)
class Estimate:
    name: str
    value: float | None
    lo: float | None = None
    hi: float | None = None
    unit: str = "pp"
    n_tasks: int = 0
    description: str = ""


@dataclass(slots=True)
class IdentityCheck:
    name: str
    equation: str
    lhs: float
    rhs: float
    terms: dict[str, float]
    residual: float  # lhs − rhs at the point estimate
    max_resample_residual: float | None  # max |lhs − rhs| over bootstrap resamples

    @property
    def holds(self) -> bool:
        worst = max(abs(self.residual), self.max_resample_residual or 0.0)
        return worst < 1e-9

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "holds": self.holds}


@dataclass(slots=True)
class ExperimentReport:
    n_episodes: int
    n_tasks: int
    n_complete_tasks: int
    n_clusters: int
    cluster_key: str
    resamples: int
    seed: int
    counts: dict[str, dict[str, int]]
    distributions: dict[str, list[Estimate]]
    estimates: list[Estimate]
    identities: list[IdentityCheck]
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def get(self, name: str) -> Estimate:
        for e in self.estimates:
            if e.name == name:
                return e
        for dist in self.distributions.values():
            for e in dist:
                if e.name == name:
                    return e
        raise KeyError(name)

    def to_json(self) -> dict[str, Any]:
        # (asdict copies the nested estimates too; an identity adds its ``holds``, a property)
        return {**asdict(self), "identities": [i.to_json() for i in self.identities]}


# ---------------------------------------------------------------------------------------------- per task

_K = len(ENDPOINTS)
_IDX = {e: i for i, e in enumerate(ENDPOINTS)}


def _base_name(cond: str, e: Endpoint) -> str:
    return f"p_{e.value}({COND_LABEL[cond]})"


def _task_probs(eps_by_cond: dict[str, dict[str | None, list[Episode]]]) -> np.ndarray:
    """(3 × 8) endpoint probabilities of one task: repeats within text, then texts within task."""
    out = np.zeros((3, _K))
    for ci, cond in enumerate(CONDITIONS):
        texts = eps_by_cond[cond]
        for eps in texts.values():
            row = np.zeros(_K)
            for ep in eps:
                row[_IDX[ep.endpoint]] += 1.0
            out[ci] += row / len(eps)
        out[ci] /= len(texts)
    return out


def _task_disagreement(texts: dict[str | None, list[Episode]]) -> float:
    """Pairwise repeat disagreement within each text condition, averaged over texts that have repeats."""
    vals = []
    for eps in texts.values():
        n = len(eps)
        if n < 2:
            continue
        labels = [ep.endpoint for ep in eps]
        pairs = n * (n - 1) / 2
        same = sum(c * (c - 1) / 2 for c in (labels.count(k) for k in set(labels)))
        vals.append((pairs - same) / pairs)
    return float(np.mean(vals)) if vals else math.nan


def _task_mean(texts: dict[str | None, list[Episode]], attr: str) -> float:
    vals = []
    for eps in texts.values():
        xs = [getattr(ep, attr) for ep in eps if getattr(ep, attr) is not None]
        if xs:
            vals.append(sum(xs) / len(xs))
    return float(np.mean(vals)) if vals else math.nan


# ---------------------------------------------------------------------------------------------- bootstrap


#: Resamples drawn per block: keeps the count matrix cache-sized (10× faster than one big matrix).
_BLOCK = 1000


def iter_bootstrap_counts(
    n_clusters: int, resamples: int, seed: int, block: int = _BLOCK
) -> Iterator[np.ndarray]:
    """Blocks of the (resamples × clusters) matrix of how often each cluster is drawn in each resample
    (rows sum to ``n_clusters``); the same seed gives the same matrix."""
    rng = np.random.default_rng(seed)
    for start in range(0, resamples, block):
        b = min(block, resamples - start)
        draws = rng.integers(0, n_clusters, size=(b, n_clusters), dtype=np.int64)
        draws += (np.arange(b, dtype=np.int64) * n_clusters)[:, None]
        yield np.bincount(draws.ravel(), minlength=b * n_clusters).reshape(b, n_clusters).astype(np.float64)


def bootstrap_counts(n_clusters: int, resamples: int, seed: int) -> np.ndarray:
    """The whole count matrix of :func:`iter_bootstrap_counts`."""
    return np.vstack(list(iter_bootstrap_counts(n_clusters, resamples, seed)))


def _cluster_sums(
    values: np.ndarray, cluster_of_task: np.ndarray, n_clusters: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per-cluster sums of task values and counts of defined task values, column by column."""
    defined = ~np.isnan(values)
    sums = np.zeros((n_clusters, values.shape[1]))
    counts = np.zeros((n_clusters, values.shape[1]))
    np.add.at(sums, cluster_of_task, np.where(defined, values, 0.0))
    np.add.at(counts, cluster_of_task, defined.astype(np.float64))
    return sums, counts


def _percentiles(boot: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Interpolated 2.5th and 97.5th percentiles; resamples where a statistic is undefined (no cluster with
    a task that has it) are left out, and an all-undefined column gives NaN."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        lo = np.nanpercentile(boot, 2.5, axis=0)
        hi = np.nanpercentile(boot, 97.5, axis=0)
    return np.atleast_1d(lo), np.atleast_1d(hi)


# ---------------------------------------------------------------------------------------------- analysis


def _linear(names: list[str]) -> dict[str, np.ndarray]:
    """The endpoint contrasts reported, in report order, as coefficient vectors over the 24 base
    probabilities (conditions × endpoints)."""
    idx = {n: i for i, n in enumerate(names)}

    def p(k: str, cond: str) -> np.ndarray:
        v = np.zeros(len(names))
        v[idx[_base_name(cond, Endpoint(k))]] = 1.0
        return v

    def po(cond: str) -> np.ndarray:
        v = np.zeros(len(names))
        for e in ENDPOINTS:
            if e not in (Endpoint.A, Endpoint.B):
                v[idx[_base_name(cond, e)]] = 1.0
        return v

    return {
        "D_A": p("A", "A") - p("A", "B"),
        "D_B": p("B", "B") - p("B", "A"),
        "R_A": p("A", "A") - p("A", "none"),
        "R_B": p("B", "B") - p("B", "none"),
        "G_A": p("A", "none") - p("A", "B"),
        "G_B": p("B", "none") - p("B", "A"),
        "C(P_A)": p("A", "A") + p("B", "A"),
        "C(P_B)": p("A", "B") + p("B", "B"),
        "C(none)": p("A", "none") + p("B", "none"),
        "p_O(P_A)": po("A"),
        "p_O(P_B)": po("B"),
        "p_O(none)": po("none"),
        # 1 − p_k(none), written as the sum of the other seven categories (no constant term needed).
        "H_A": po("none") + p("B", "none"),
        "H_B": po("none") + p("A", "none"),
    }


_DESCRIPTIONS = {
    "D_A": "priority control toward A: p_A(P_A) − p_A(P_B)",
    "D_B": "priority control toward B: p_B(P_B) − p_B(P_A)",
    "R_A": "A plan minus no plan: p_A(P_A) − p_A(none) (deleting the plan changes it by −R_A)",
    "R_B": "B plan minus no plan: p_B(P_B) − p_B(none)",
    "G_A": "default-to-B contrast: p_A(none) − p_A(P_B)",
    "G_B": "default-to-A contrast: p_B(none) − p_B(P_A)",
    "C(P_A)": "coverage p_A + p_B under P_A (BOTH excluded)",
    "C(P_B)": "coverage p_A + p_B under P_B",
    "C(none)": "coverage p_A + p_B with no plan",
    "H_A": "positive removal headroom 1 − p_A(none): R_A can be at most this",
    "H_B": "positive removal headroom 1 − p_B(none): R_B can be at most this",
    "p_O(P_A)": "non-A/B outcomes under P_A",
    "p_O(P_B)": "non-A/B outcomes under P_B",
    "p_O(none)": "non-A/B outcomes with no plan",
    "N_A": "repeat disagreement under P_A (all eight labels), %",
    "N_B": "repeat disagreement under P_B, %",
    "N_none": "repeat disagreement with no plan, %",
}


def analyze(
    episodes: Sequence[Episode],
    *,
    cluster: str | None = None,
    resamples: int = 10_000,
    seed: int = 0,
) -> ExperimentReport:
    """The full report of a set of episodes (see the module docstring for what is estimated and how)."""
    warn: list[str] = []
    # task → condition → text → episodes
    tree: dict[str, dict[str, dict[str | None, list[Episode]]]] = defaultdict(
        lambda: {c: defaultdict(list) for c in CONDITIONS}
    )
    counts = {c: {e.value: 0 for e in ENDPOINTS} for c in CONDITIONS}
    cluster_of: dict[str, str] = {}
    for ep in episodes:
        tree[ep.task][ep.condition][ep.text].append(ep)
        counts[ep.condition][ep.endpoint.value] += 1
        try:
            key = ep.key(cluster)
        except KeyError:
            raise ValueError(
                f"session {ep.session_id}: no value for cluster key {cluster!r} (expected it in the record's "
                "meta, or use cluster/task)"
            ) from None
        prev = cluster_of.setdefault(ep.task, key)
        if prev != key:
            warn.append(f"task {ep.task!r} appears in clusters {prev!r} and {key!r}; using {prev!r}")

    tasks = sorted(tree)
    complete = [t for t in tasks if all(tree[t][c] for c in CONDITIONS)]
    missing = [t for t in tasks if t not in complete]
    if missing:
        shown = ", ".join(missing[:5]) + (" …" if len(missing) > 5 else "")
        warn.append(
            f"{len(missing)} task(s) lack a condition and are left out of the endpoint contrasts: {shown}"
        )
    clusters = sorted({cluster_of[t] for t in tasks})
    cidx = {c: i for i, c in enumerate(clusters)}
    task_cluster = np.array([cidx[cluster_of[t]] for t in tasks], dtype=np.int64)
    complete_mask = np.array([t in set(complete) for t in tasks])

    base_names = [_base_name(c, e) for c in CONDITIONS for e in ENDPOINTS]
    extra_names = ["N_A", "N_B", "N_none"]
    outcome_cols: list[tuple[str, str, str, str | None]] = []  # (name, attr, cond, minus cond)
    for attr, unit_name in (("success", "S"), ("tool_calls", "calls"), ("tokens", "tokens")):
        for cond in CONDITIONS:
            outcome_cols.append((f"{unit_name}({COND_LABEL[cond]})", attr, cond, None))
        for a, b in (("A", "none"), ("B", "none"), ("B", "A")):
            outcome_cols.append((f"{unit_name}: {COND_LABEL[a]} − {COND_LABEL[b]}", attr, a, b))
    n_base = len(base_names)
    values = np.full((len(tasks), n_base + len(extra_names) + len(outcome_cols)), np.nan)
    for ti, t in enumerate(tasks):
        node = tree[t]
        if complete_mask[ti]:
            values[ti, :n_base] = _task_probs(node).ravel()
        for j, cond in enumerate(CONDITIONS):
            values[ti, n_base + j] = _task_disagreement(node[cond])
        means = {
            (attr, c): _task_mean(node[c], attr)
            for attr in ("success", "tool_calls", "tokens")
            for c in CONDITIONS
        }
        for j, (_, attr, cond_a, cond_b) in enumerate(outcome_cols):
            v = means[(attr, cond_a)] if cond_b is None else means[(attr, cond_a)] - means[(attr, cond_b)]
            values[ti, n_base + len(extra_names) + j] = v

    sums, cnts = _cluster_sums(values, task_cluster, len(clusters))
    with np.errstate(all="ignore"):
        point = sums.sum(0) / cnts.sum(0)
    n_tasks_col = (~np.isnan(values)).sum(0)
    boot: np.ndarray | None = None
    if resamples > 0 and clusters:
        m = sums.shape[1]
        both = np.hstack([sums, cnts])  # one matrix product per block gives numerators and denominators
        boot = np.empty((resamples, m))
        start = 0
        for w in iter_bootstrap_counts(len(clusters), resamples, seed):
            prod = w @ both
            with np.errstate(all="ignore"):
                boot[start : start + len(w)] = prod[:, :m] / prod[:, m:]
            start += len(w)
        if len(clusters) < 2:
            warn.append("only one cluster: bootstrap intervals are degenerate")
    lo, hi = _percentiles(boot) if boot is not None else (np.full_like(point, np.nan),) * 2

    def fin(x: float) -> float | None:
        return None if x is None or not math.isfinite(x) else float(x)

    def interval(j: int, scale: float = 100.0) -> tuple[float | None, float | None, float | None]:
        """Column ``j``'s point estimate and interval, scaled (percent or percentage points by default)."""
        return fin(scale * point[j]), fin(scale * lo[j]), fin(scale * hi[j])

    n_complete = int(complete_mask.sum())
    distributions = {
        COND_LABEL[cond]: [
            Estimate(base_names[j], *interval(j), "%", n_complete) for j in range(ci * _K, (ci + 1) * _K)
        ]
        for ci, cond in enumerate(CONDITIONS)
    }

    estimates: list[Estimate] = []
    identities: list[IdentityCheck] = []
    if n_complete:
        lin = _linear(base_names)
        bp = point[:n_base]
        bb = boot[:, :n_base] if boot is not None else None
        derived_point = {k: float(v @ bp) for k, v in lin.items()}
        derived_boot = {k: (bb @ v) for k, v in lin.items()} if bb is not None else {}
        for name in lin:
            col_boot = derived_boot.get(name)
            lo_, hi_ = (
                (float(x[0]) for x in _percentiles(col_boot[:, None]))
                if col_boot is not None
                else (math.nan,) * 2
            )
            value = (fin(100 * derived_point[name]), fin(100 * lo_), fin(100 * hi_))
            estimates.append(Estimate(name, *value, "pp", n_complete, _DESCRIPTIONS.get(name, "")))
        identities = _identities(derived_point, derived_boot)
    else:
        warn.append("no task was observed under all three conditions: no endpoint contrasts")

    for j, name in enumerate(extra_names):
        col = n_base + j
        if n_tasks_col[col]:
            estimates.append(Estimate(name, *interval(col), "%", int(n_tasks_col[col]), _DESCRIPTIONS[name]))
    for j, (name, attr, _a, minus) in enumerate(outcome_cols):
        col = n_base + len(extra_names) + j
        if not n_tasks_col[col]:
            continue
        scale, unit = (100.0, "pp" if minus else "%") if attr == "success" else (1.0, attr)
        desc = f"task-first mean {attr}" + (" difference on the same tasks" if minus else "")
        estimates.append(Estimate(name, *interval(col, scale), unit, int(n_tasks_col[col]), desc))

    return ExperimentReport(
        n_episodes=len(episodes),
        n_tasks=len(tasks),
        n_complete_tasks=n_complete,
        n_clusters=len(clusters),
        cluster_key=cluster or "cluster (else task)",
        resamples=resamples,
        seed=seed,
        counts=counts,
        distributions=distributions,
        estimates=estimates,
        identities=identities,
        notes=list(INTERVAL_NOTES),
        warnings=warn,
    )


def _identities(p: dict[str, float], b: dict[str, np.ndarray]) -> list[IdentityCheck]:
    def check(name: str, eq: str, lhs: str, terms: dict[str, float]) -> IdentityCheck:
        rhs_val = sum(sign * p[t] for t, sign in terms.items())
        worst = None
        if b:
            rb = sum(sign * b[t] for t, sign in terms.items())
            worst = float(np.nanmax(np.abs(b[lhs] - rb))) if len(b[lhs]) else None
        return IdentityCheck(
            name,
            eq,
            100 * p[lhs],
            100 * rhs_val,
            {t: 100 * sign * p[t] for t, sign in terms.items()},
            100 * (p[lhs] - rhs_val),
            None if worst is None else 100 * worst,
        )

    da_db = {"C(P_A)": 1.0, "C(P_B)": -1.0}
    out = [
        check("eq2_A", "D_A = R_A + G_A", "D_A", {"R_A": 1.0, "G_A": 1.0}),
        check("eq2_B", "D_B = R_B + G_B", "D_B", {"R_B": 1.0, "G_B": 1.0}),
        check(
            "eq3_A",
            "D_A = R_A + R_B + p_O(P_B) − p_O(none)",
            "D_A",
            {"R_A": 1.0, "R_B": 1.0, "p_O(P_B)": 1.0, "p_O(none)": -1.0},
        ),
        check(
            "eq3_B",
            "D_B = R_A + R_B + p_O(P_A) − p_O(none)",
            "D_B",
            {"R_A": 1.0, "R_B": 1.0, "p_O(P_A)": 1.0, "p_O(none)": -1.0},
        ),
    ]
    # Eq. 4 compares two derived quantities: D_A − D_B against C(P_A) − C(P_B).
    p["D_A−D_B"] = p["D_A"] - p["D_B"]
    if b:
        b["D_A−D_B"] = b["D_A"] - b["D_B"]
    out.append(check("eq4", "D_A − D_B = C(P_A) − C(P_B)", "D_A−D_B", da_db))
    return out
