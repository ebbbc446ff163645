"""The report's essentials as rich tables (``planguard report --format terminal``)."""

from __future__ import annotations

from typing import IO

from .aggregate import ALL, METRICS, OUTCOMES, Report, format_cell
from .aggregate import format_number as _f
from .aggregate import format_share as _pct

__all__ = ["render_terminal"]


def render_terminal(report: Report, out: IO[str], *, width: int | None = None) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(file=out, width=width, soft_wrap=False)
    s = report.summary
    o = s["outcomes"]
    console.print(
        f"[bold]{report.title}[/bold] · {s['runs']} runs · resolved {o['resolved']} · unresolved "
        f"{o['unresolved']} · unknown {o['unknown']} · median steps {_f(s['steps'].median, 0)} · "
        f"plan {report.plan} · grouped by {report.group_by}"
        + (f" · [red]{report.n_errors} inputs failed[/red]" if report.n_errors else "")
    )

    t = Table(title="Compliance (mean; U test resolved vs unresolved)", title_justify="left")
    t.add_column("group", overflow="fold", max_width=36)
    t.add_column("outcome")
    t.add_column("n", justify="right")
    for m in METRICS:
        t.add_column(m, justify="right")
    for g in report.groups:
        for oc in (ALL, *OUTCOMES):
            ms = report.compliance[g][oc]
            if ms["PC"].n:
                t.add_row(g, oc, str(ms["PC"].n), *[_f(ms[m].mean) for m in METRICS])
        cells = []
        for m in METRICS:
            u = report.tests[g][m]
            cells.append("–" if u is None else f"p={u.p:.3g}{'*' if u.p < 0.05 else ''}")
        t.add_row(g, "U test", "", *cells, end_section=True)
    console.print(t)

    t = Table(title="Phase flow: most common phase sequences (positions 0..10)", title_justify="left")
    t.add_column("group", overflow="fold", max_width=36)
    t.add_column("top transitions (position: from→to, runs)", overflow="fold")
    for g in report.groups:
        flow = report.flows[g]
        top = sorted(flow.links.items(), key=lambda kv: -kv[1])[:6]
        t.add_row(g, ", ".join(f"{a[0]}:{a[1]}→{b[1]} {c}" for (a, b), c in top))
    console.print(t)

    if report.detectors:
        t = Table(title="Detector prevalence (share of runs)", title_justify="left")
        t.add_column("group", overflow="fold", max_width=30)
        t.add_column("outcome")
        for d in report.detectors:
            t.add_column(d.replace("_", " "), justify="right")
        for g in report.groups:
            for oc, (_n, shares) in report.prevalence[g].items():
                t.add_row(g, oc, *[_pct(shares[d]) for d in report.detectors])
        console.print(t)

    t = Table(title="Effect-label profile (medians over runs)", title_justify="left")
    t.add_column("group", overflow="fold", max_width=36)
    for col in ("runs", "resolve", "steps", "survived", "failed", "reverted", "justified", "harmful"):
        t.add_column(col, justify="right")
    for g in report.groups:
        e = report.effects[g]
        profile = [_pct(e[label]) for label in ("survived", "failed", "reverted", "justified")]
        t.add_row(
            g,
            str(e["runs"]),
            _pct(e["resolve_rate"]),
            _f(e["steps_median"], 0),
            *profile,
            _f(e["harmful"], 2),
        )
    console.print(t)
    for tab in report.experiments:
        et = Table(title=str(tab["title"]), title_justify="left")
        for c in tab["columns"]:
            et.add_column(str(c))
        for row in tab["rows"]:
            et.add_row(*[format_cell(c) for c in row])
        console.print(et)
    if report.n_errors:
        for message in report.errors[:10]:
            console.print(f"[red]error[/red] {message}", highlight=False)
