"""Rendering an :class:`ExperimentReport` as a text table, JSON or CSV."""

from __future__ import annotations

import csv
import io
import json
from decimal import ROUND_HALF_UP, Decimal

from .analysis import Estimate, ExperimentReport

__all__ = ["fmt", "to_csv", "to_json", "to_table"]


def fmt(x: float | None, places: int = 2) -> str:
    """Half-up rounding as papers print it (90.625 → 90.63), not Python's round-half-even."""
    if x is None:
        return "—"
    q = Decimal(repr(x)).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)
    return f"{q + 0:.{places}f}"


def _ci(e: Estimate) -> str:
    if e.lo is None or e.hi is None:
        return ""
    # Zero-width intervals are flagged: equality across resamples is not population invariance.
    return f"[{fmt(e.lo)}, {fmt(e.hi)}]" + ("*" if e.lo == e.hi else "")


def to_table(r: ExperimentReport) -> str:
    out: list[str] = []
    w = out.append
    w(
        f"Plan experiment: {r.n_episodes} episodes, {r.n_tasks} tasks ({r.n_complete_tasks} with all three "
        f"conditions), {r.n_clusters} clusters by {r.cluster_key}; {r.resamples} resamples, seed {r.seed}"
    )
    w("")
    w("Endpoint distribution, % (task-first averaged) [95% cluster-bootstrap interval]; episode counts")
    labels = list(next(iter(r.counts.values())).keys())
    conds = list(r.distributions)
    w("  " + "endpoint".ljust(9) + "".join(c.rjust(32) for c in conds))
    for i, label in enumerate(labels):
        row = "  " + label.ljust(9)
        for c, raw in zip(conds, r.counts, strict=True):
            e = r.distributions[c][i]
            row += f"{fmt(e.value)} {_ci(e)} n={r.counts[raw][label]}".rjust(32)
        w(row)
    w("")
    w("Contrasts (percentage points unless noted)")
    for e in r.estimates:
        unit = "" if e.unit == "pp" else f" {e.unit}"
        w(
            f"  {e.name.ljust(26)} {fmt(e.value).rjust(8)}{unit} {_ci(e).ljust(20)} tasks={e.n_tasks}  "
            f"{e.description}"
        )
    if r.identities:
        w("")
        w("Identities (paper eq. 2, 3, symmetric form and eq. 4), checked numerically")
        for check in r.identities:
            terms = " ".join(f"{'+' if v >= 0 else '−'} {fmt(abs(v))}" for v in check.terms.values()).lstrip(
                "+ "
            )
            worst = (
                ""
                if check.max_resample_residual is None
                else f", max over resamples {check.max_resample_residual:.1e}"
            )
            w(
                f"  {check.equation}: {fmt(check.lhs)} = {terms}  (residual {check.residual:.1e}{worst}) "
                f"{'OK' if check.holds else 'FAILS'}"
            )
    if r.warnings:
        w("")
        w("Warnings")
        out.extend(f"  - {m}" for m in r.warnings)
    w("")
    w("Notes (* marks a zero-width interval)")
    out.extend(f"  - {m}" for m in r.notes)
    return "\n".join(out) + "\n"


def to_json(r: ExperimentReport) -> str:
    return json.dumps(r.to_json(), indent=2, ensure_ascii=False) + "\n"


def to_csv(r: ExperimentReport) -> str:
    buf = io.StringIO()
    wr = csv.writer(buf)
    wr.writerow(["section", "name", "value", "lo", "hi", "unit", "n_tasks", "n_episodes"])
    for cond, rows in r.distributions.items():
        raw = {"P_A": "A", "P_B": "B", "none": "none"}[cond]
        for e in rows:
            label = e.name.split("(")[0].removeprefix("p_")
            wr.writerow(
                ["distribution", e.name, e.value, e.lo, e.hi, e.unit, e.n_tasks, r.counts[raw][label]]
            )
    for e in r.estimates:
        wr.writerow(["contrast", e.name, e.value, e.lo, e.hi, e.unit, e.n_tasks, ""])
    for i in r.identities:
        wr.writerow(["identity", i.equation, i.lhs, i.rhs, i.residual, "pp", r.n_complete_tasks, ""])
    return buf.getvalue()
