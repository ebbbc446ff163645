"""The self-contained HTML report: one file, inline CSS/SVG/JS, no network access of any kind.

Charts are drawn here as SVG (so the file is readable with scripts off and tests can check the markup);
the small inline script only switches groups, pages and filters the drill-down, and renders the timeline
of the runs on the current page. ``window.onerror`` and ``console.error`` increment a counter kept in
``#pg-status[data-errors]`` so a headless browser's DOM dump shows whether anything went wrong.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from html import escape
from typing import Any

from .aggregate import ALL, END, FLOW_POSITIONS, METRICS, MORE, OUTCOMES, Flow, Report, format_cell
from .aggregate import format_number as _f
from .aggregate import format_share as _pct
from .stats import Summary

__all__ = ["PHASE_COLORS", "render_html"]

PHASE_NAMES = {
    "N": "Navigate",
    "R": "Reproduce (new test)",
    "r": "Reproduce (regression test)",
    "P": "Patch",
    "V": "Validate (new test)",
    "v": "Validate (regression test)",
    "X": "unknown phase",
    END: "terminated",
    MORE: "continues past position 10",
    ".": "general",
}
PHASE_COLORS = {
    "N": "#4e79a7",
    "R": "#f28e2b",
    "r": "#b07aa1",
    "P": "#e15759",
    "V": "#59a14f",
    "v": "#76b7b2",
    "X": "#9c755f",
    END: "#111111",
    MORE: "#c7c7c7",
    ".": "#e4e4e4",
}
OUT_OF_PLAN = "#a0a0a0"
PHASE_ORDER = ("N", "R", "r", "P", "V", "v", "X", MORE, END)
#: Colours of the phases a plan declares, in plan order (its letters are its own: ``R`` may mean "read").
DECLARED_COLORS = (
    "#4e79a7",
    "#f28e2b",
    "#e15759",
    "#59a14f",
    "#b07aa1",
    "#76b7b2",
    "#edc948",
    "#ff9da7",
    "#9c755f",
    "#bab0ac",
)
OUTCOME_COLORS = {"resolved": "#2e7d32", "unresolved": "#c62828", "unknown": "#757575", ALL: "#455a64"}


def _p(p: float) -> str:
    return f"{p:.2e}" if p < 1e-3 else f"{p:.3f}"


def _gid(i: int) -> str:
    return f"g{i}"


# ----------------------------------------------------------------------------------------------- Sankey


def _colours(r: Report) -> dict[str, str]:
    """Letter → colour: the coding letters', or those of the phases the report's plan declares."""
    declared = {ph: DECLARED_COLORS[i % len(DECLARED_COLORS)] for i, ph in enumerate(r.phase_names)}
    return {**PHASE_COLORS, **declared}


def _names(r: Report) -> dict[str, str]:
    return {**PHASE_NAMES, **r.phase_names}


def _order(r: Report) -> tuple[str, ...]:
    return (*r.phase_names, MORE, END) if r.phase_names else PHASE_ORDER


def sankey_svg(
    flow: Flow,
    in_plan: dict[str, bool],
    *,
    colours: Mapping[str, str] = PHASE_COLORS,
    names: Mapping[str, str] = PHASE_NAMES,
    order: Sequence[str] = PHASE_ORDER,
    width: int = 980,
    height: int = 340,
) -> str:
    """Figure 3's phase flow. Nodes are ``rect.node[data-node="k:P"]``, links ``path.link`` with
    ``data-source``/``data-target``/``data-count``; heights are proportional to runs. ``colours``, ``names``
    and ``order`` are those of the plan's letters (default: the coding letters)."""
    cols = FLOW_POSITIONS + 1
    mx, top, nw, pad = 18, 22, 14, 5
    by_col: dict[int, list[tuple[str, int]]] = {}
    for (k, ph), c in flow.nodes.items():
        by_col.setdefault(k, []).append((ph, c))
    for k in by_col:
        by_col[k].sort(key=lambda pc: order.index(pc[0]) if pc[0] in order else 99)
    max_nodes = max((len(v) for v in by_col.values()), default=1)
    usable = height - top - 24 - pad * (max_nodes - 1)
    scale = usable / max(flow.n_runs, 1)
    step_x = (width - 2 * mx - nw) / (cols - 1)
    pos: dict[tuple[int, str], tuple[float, float, float]] = {}  # node -> x, y, h
    out = [
        f'<svg class="sankey" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" data-runs="{flow.n_runs}">'
    ]
    for k in range(cols):
        x = mx + k * step_x
        label = str(k) if k < FLOW_POSITIONS else "&gt;10"
        out.append(
            f'<text class="axis" x="{x + nw / 2:.1f}" y="{height - 6}" text-anchor="middle">{label}</text>'
        )
        y = float(top)
        for ph, c in by_col.get(k, []):
            h = max(c * scale, 1.0)
            pos[(k, ph)] = (x, y, h)
            y += h + pad

    def colour(ph: str) -> str:
        if ph in (END, MORE):
            return PHASE_COLORS[ph]
        return colours.get(ph, OUT_OF_PLAN) if in_plan.get(ph, False) else OUT_OF_PLAN

    out_off: dict[tuple[int, str], float] = {}
    in_off: dict[tuple[int, str], float] = {}
    rank = {ph: i for i, ph in enumerate(order)}
    links = sorted(
        flow.links.items(),
        key=lambda kv: (kv[0][0][0], rank.get(kv[0][0][1], 99), rank.get(kv[0][1][1], 99)),
    )
    for (src, dst), c in links:
        if src not in pos or dst not in pos:
            continue
        sx, sy, _ = pos[src]
        dx, dy, _ = pos[dst]
        w = max(c * scale, 0.8)
        y0 = sy + out_off.get(src, 0.0) + w / 2
        y1 = dy + in_off.get(dst, 0.0) + w / 2
        out_off[src] = out_off.get(src, 0.0) + c * scale
        in_off[dst] = in_off.get(dst, 0.0) + c * scale
        x0, x1 = sx + nw, dx
        xm = (x0 + x1) / 2
        col = (
            OUT_OF_PLAN
            if not in_plan.get(src[1], False) or not (in_plan.get(dst[1], False) or dst[1] in (END, MORE))
            else colour(src[1])
        )
        share = c / max(flow.n_runs, 1)
        out.append(
            f'<path class="link" d="M{x0:.1f},{y0:.1f} C{xm:.1f},{y0:.1f} {xm:.1f},{y1:.1f} '
            f'{x1:.1f},{y1:.1f}" '
            f'stroke="{col}" stroke-width="{w:.2f}" data-source="{src[0]}:{src[1]}" '
            f'data-target="{dst[0]}:{dst[1]}" '
            f'data-count="{c}"><title>{escape(names.get(src[1], src[1]))} @{src[0]} → '
            f"{escape(names.get(dst[1], dst[1]))} @{dst[0]}: {c} runs ({100 * share:.1f}%)"
            "</title></path>"
        )
    for (k, ph), (x, y, h) in sorted(pos.items()):
        c = flow.nodes[(k, ph)]
        out.append(
            f'<rect class="node" x="{x:.1f}" y="{y:.1f}" width="{nw}" height="{h:.2f}" '
            f'fill="{colour(ph)}" '
            f'data-node="{k}:{ph}" data-count="{c}"><title>{escape(names.get(ph, ph))} '
            f"at position {k}: "
            f"{c} runs</title></rect>"
        )
        if h >= 11 and ph not in (END, MORE):
            out.append(
                f'<text class="nl" x="{x + nw / 2:.1f}" y="{y + h / 2 + 4:.1f}" text-anchor="middle">'
                f"{escape(ph)}</text>"
            )
    out.append("</svg>")
    return "".join(out)


# ------------------------------------------------------------------------------------------- compliance


def compliance_svg(per_outcome: dict[str, dict[str, Summary]], *, width: int = 620, height: int = 220) -> str:
    """Figure 2's view: per metric, a box (IQR), median line and mean dot per outcome."""
    outcomes = [o for o in OUTCOMES if per_outcome.get(o, {}).get("PC", Summary(0, 0, 0, 0, 0, 0, 0)).n]
    if not outcomes:
        outcomes = [ALL]
    left, top, bottom = 36, 14, 34
    plot_h = height - top - bottom
    band = (width - left - 10) / len(METRICS)
    bw = min(34.0, (band - 20) / max(len(outcomes), 1))
    out = [
        f'<svg class="compliance" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img">'
    ]

    def y(v: float) -> float:
        return top + (1 - v) * plot_h

    for t in (0.0, 0.25, 0.5, 0.75, 1.0):
        out.append(
            f'<line class="grid" x1="{left}" x2="{width - 6}" y1="{y(t):.1f}" y2="{y(t):.1f}"/>'
            f'<text class="axis" x="{left - 4}" y="{y(t) + 4:.1f}" text-anchor="end">{t:g}</text>'
        )
    for i, m in enumerate(METRICS):
        bx = left + i * band + (band - bw * len(outcomes)) / 2
        out.append(
            f'<text class="axis" x="{left + i * band + band / 2:.1f}" y="{height - 14}" '
            f'text-anchor="middle">{m}</text>'
        )
        for j, o in enumerate(outcomes):
            s = per_outcome[o][m]
            if not s.n:
                continue
            x = bx + j * bw
            col = OUTCOME_COLORS[o]
            out.append(
                f'<g class="box" data-metric="{m}" data-outcome="{o}"><title>{m} · {o}: n={s.n}, '
                f"mean {s.mean:.3f}, "
                f"median {s.median:.3f}, IQR {s.q1:.3f}–{s.q3:.3f}</title>"
                f'<line x1="{x + bw / 2:.1f}" x2="{x + bw / 2:.1f}" y1="{y(s.max):.1f}" y2="{y(s.min):.1f}" '
                f'stroke="{col}"/>'
                f'<rect x="{x + 3:.1f}" y="{y(s.q3):.1f}" width="{bw - 6:.1f}" '
                f'height="{max(y(s.q1) - y(s.q3), 1):.1f}" fill="{col}" fill-opacity="0.25" stroke="{col}"/>'
                f'<line x1="{x + 3:.1f}" x2="{x + bw - 3:.1f}" y1="{y(s.median):.1f}" y2="{y(s.median):.1f}" '
                f'stroke="{col}" stroke-width="2"/>'
                f'<circle cx="{x + bw / 2:.1f}" cy="{y(s.mean):.1f}" r="3" fill="{col}"/></g>'
            )
    lx = left
    for o in outcomes:
        out.append(
            f'<rect x="{lx}" y="{height - 10}" width="10" height="8" fill="{OUTCOME_COLORS[o]}"/>'
            f'<text class="axis" x="{lx + 13}" y="{height - 2}">{o}</text>'
        )
        lx += 95
    out.append("</svg>")
    return "".join(out)


# ------------------------------------------------------------------------------------------------ page


def _table(head: list[str], rows: list[list[str]], cls: str = "") -> str:
    th = "".join(f"<th>{h}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    # Wide tables (many detectors) scroll inside their section instead of spilling over the page.
    table = f'<table class="{cls}"><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>'
    return f'<div class="tw">{table}</div>'


def _heat(share: float) -> str:
    a = min(max(share, 0.0), 1.0) * 0.75
    return f'<span class="heat" style="background:rgba(198,40,40,{a:.2f})">{100 * share:.1f}%</span>'


def _summary_section(r: Report) -> str:
    s = r.summary
    st: Summary = s["steps"]
    rows = []
    for g in r.groups:
        gs = s["groups"][g]
        o = gs["outcomes"]
        gst: Summary = gs["steps"]
        spread = [_f(gst.median, 0), _f(gst.mean, 1), f"{_f(gst.min, 0)}–{_f(gst.max, 0)}"]
        rows.append([escape(g), str(gs["runs"]), *(str(o[outcome]) for outcome in OUTCOMES), *spread])
    fmts = ", ".join(f"{escape(k)}: {v}" for k, v in s["formats"].items())
    return (
        '<section id="summary"><h2>1 · Corpus</h2>'
        f'<div class="cards"><div class="card"><b id="n-runs">{s["runs"]}</b>runs</div>'
        f'<div class="card"><b>{s["outcomes"]["resolved"]}</b>resolved</div>'
        f'<div class="card"><b>{s["outcomes"]["unresolved"]}</b>unresolved</div>'
        f'<div class="card"><b>{s["outcomes"]["unknown"]}</b>outcome unknown</div>'
        f'<div class="card"><b>{_f(st.median, 0)}</b>median steps/run</div>'
        f'<div class="card"><b>{r.n_errors}</b>inputs failed</div></div>'
        f'<p class="muted">Formats: {fmts}. Grouped by <code>{escape(r.group_by)}</code>.</p>'
        + _table(
            ["group", "runs", "resolved", "unresolved", "unknown", "median steps", "mean steps", "range"],
            rows,
            "num",
        )
        + "</section>"
    )


def _compliance_section(r: Report) -> str:
    parts = [
        '<section id="compliance"><h2>2 · Plan compliance</h2>'
        f'<p class="muted">Plan <code>{escape(str(r.plan))}</code>. Boxes: IQR, line: median, dot: mean. '
        "Resolved vs unresolved: two-sided Mann–Whitney U (exact without ties for n ≤ 40, otherwise normal "
        "approximation with tie and continuity correction); effect = rank-biserial r (&gt; 0: resolved "
        "higher).</p>"
    ]
    for i, g in enumerate(r.groups):
        parts.append(f'<div class="gpanel" data-group="{_gid(i)}">{compliance_svg(r.compliance[g])}</div>')
    rows = []
    for g in r.groups:
        for o in (ALL, *OUTCOMES):
            ms = r.compliance[g][o]
            if not ms["PC"].n:
                continue
            rows.append(
                [escape(g), o, str(ms["PC"].n)]
                + [f"{_f(ms[m].mean)} <small>({_f(ms[m].median)})</small>" for m in METRICS]
            )
        tst = r.tests[g]
        if all(t is None for t in tst.values()):
            continue
        cells = []
        for m in METRICS:
            t = tst[m]
            cells.append(
                "–"
                if t is None
                else f'<span class="u" data-metric="{m}" data-p="{t.p:.6g}">U={t.u:g}, p={_p(t.p)}'
                f"{' *' if t.p < 0.05 else ''}<small> r={t.effect:+.2f} {t.method}</small></span>"
            )
        rows.append([escape(g), "<i>U test</i>", "", *cells])
    parts.append(_table(["group", "outcome", "n", *[f"{m} mean (median)" for m in METRICS]], rows, "num"))
    parts.append("</section>")
    return "".join(parts)


def _legend_colour(r: Report, ph: str) -> str:
    return _colours(r)[ph] if r.in_plan.get(ph, ph in (END, MORE)) else OUT_OF_PLAN


def _flow_section(r: Report) -> str:
    names = _names(r)
    legend = "".join(
        f'<span class="lg"><i style="background:{_legend_colour(r, ph)}">'
        f"</i>{escape(ph if ph not in (END, MORE) else '')} {escape(names[ph])}</span>"
        for ph in _order(r)
        if ph != "X"
    )
    parts = [
        '<section id="flow"><h2>3 · Phase flow</h2>'
        '<p class="muted">Like Figure 3 of the plan-compliance paper: phase (collapsed Langutory run) at '
        "position k → k+1 for k = 0..10; link width is the share of runs. Black: the run terminates; light "
        "grey at &gt;10: it continues. Grey flows are out-of-plan phases.</p>"
        f'<div class="legend">{legend}</div>'
    ]
    colours, order = _colours(r), _order(r)
    for i, g in enumerate(r.groups):
        svg = sankey_svg(r.flows[g], r.in_plan, colours=colours, names=names, order=order)
        parts.append(
            f'<div class="gpanel" data-group="{_gid(i)}"><h3>{escape(g)} '
            f"<small>({r.flows[g].n_runs} runs)</small></h3>{svg}</div>"
        )
    parts.append("</section>")
    return "".join(parts)


def _detector_section(r: Report) -> str:
    parts = [
        '<section id="detectors"><h2>4 · Detectors and effect labels</h2>'
        '<p class="muted">Share of runs with at least one finding of each detector '
        "(TraceProbe Table III).</p>"
    ]
    if r.detectors:
        rows = []
        for g in r.groups:
            for o, (n, shares) in r.prevalence[g].items():
                rows.append([escape(g), o, str(n)] + [_heat(shares[d]) for d in r.detectors])
        parts.append(_table(["group", "outcome", "runs", *[escape(d) for d in r.detectors]], rows, "num det"))
    else:
        parts.append("<p>No detector findings in this input.</p>")
    parts.append(
        '<h3>Effect-label profile</h3><p class="muted">Per-run shares of non-reasoning labelled actions, '
        "median over runs (recorded: mean), harmful ratio = failed + reverted (TraceProbe Figure 5 / "
        "Table VI).</p>"
    )
    cols = ["survived", "failed", "reverted", "justified", "recorded", "off_anchor"]
    rows = []
    for g in r.groups:
        e = r.effects[g]
        rows.append(
            [escape(g), str(e["runs"]), _pct(e["resolve_rate"]), _f(e["steps_median"], 0)]
            + [_pct(e[c + "_mean"] if c == "recorded" else e[c]) for c in cols]
            + [_f(e["harmful"], 2)]
        )
    labels = [f"{c} (mean)" if c == "recorded" else c.replace("_", "-") for c in cols]
    parts.append(
        _table(["group", "runs", "resolve rate", "steps/run", *labels, "harmful ratio"], rows, "num")
    )
    parts.append("</section>")
    return "".join(parts)


def _drill_section(r: Report) -> str:
    colours, names = _colours(r), _names(r)
    legend = "".join(
        f'<span class="lg"><i style="background:{colours[ph]}"></i>{escape(ph)} {escape(names[ph])}</span>'
        for ph in ((*r.phase_names, ".") if r.phase_names else ("N", "R", "r", "P", "V", "v", "."))
    )
    return (
        '<section id="runs"><h2>5 · Runs</h2>'
        f'<p class="muted">Drill-down over {escape(r.drill_note)}; 20 runs per page; the id search '
        "covers the runs embedded here. Each step is a cell coloured "
        "by phase; the thin row below is the effect label (red failed, purple reverted); bars above mark "
        "detector findings, ▼ marks a policy decision. Hover for details.</p>"
        f'<div class="legend">{legend}</div>'
        '<div class="controls"><input id="q" type="search" placeholder="search run id…" autocomplete="off"> '
        '<button id="prev">‹ prev</button> <span id="page"></span> <button id="next">next ›</button></div>'
        '<div id="runlist"></div></section>'
    )


def _experiment_section(r: Report) -> str:
    if not r.experiments:
        return (
            '<section id="experiments"><h2>6 · Plan experiments</h2><p class="muted">No experiment results '
            "in this input (experiment tables come from readers registered in "
            "<code>planguard.offline.report.experiments</code>).</p></section>"
        )
    parts = ['<section id="experiments"><h2>6 · Plan experiments</h2>']
    for t in r.experiments:
        rows = [[escape(format_cell(c)) for c in row] for row in t["rows"]]
        parts.append(
            f"<h3>{escape(t['title'])}</h3>" + _table([escape(str(c)) for c in t["columns"]], rows, "num")
        )
        if t.get("note"):
            parts.append(f'<p class="muted">{escape(str(t["note"]))}</p>')
    parts.append("</section>")
    return "".join(parts)


CSS = """
.tw{overflow-x:auto}td:first-child{min-width:9em}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#222;
background:#fafafa}
header{background:#263238;color:#fff;padding:14px 24px}
header h1{margin:0;font-size:20px}
header .muted{color:#cfd8dc}
main{padding:8px 24px 40px;max-width:1100px}
section{background:#fff;border:1px solid #e0e0e0;border-radius:6px;padding:10px 16px;margin:14px 0}
h2{font-size:17px;margin:4px 0 8px}
h3{font-size:14px;margin:12px 0 4px}
.muted{color:#666;font-size:12.5px}
table{border-collapse:collapse;margin:6px 0;font-size:12.5px}
th,td{padding:3px 8px;border-bottom:1px solid #eee;text-align:left;vertical-align:top}
th{background:#f3f3f3}
table.num td{font-variant-numeric:tabular-nums}
.cards{display:flex;gap:10px;flex-wrap:wrap}
.card{border:1px solid #ddd;border-radius:6px;padding:6px 12px;min-width:110px;background:#fcfcfc}
.card b{display:block;font-size:22px}
.legend{font-size:12px;margin:4px 0}
.lg{margin-right:12px;white-space:nowrap}
.lg i{display:inline-block;width:11px;height:11px;margin-right:4px;vertical-align:-1px;border-radius:2px}
svg text{font-size:11px;fill:#333}
svg .nl{fill:#fff;font-weight:bold;font-size:10px}
svg .grid{stroke:#eee}
path.link{fill:none;stroke-opacity:.42}
path.link:hover{stroke-opacity:.8}
.heat{padding:1px 4px;border-radius:3px}
.u small,td small{color:#777}
.controls{margin:6px 0}
#q{width:320px;padding:4px 6px}
.run{border-top:1px solid #eee;padding:6px 0}
.run .id{font-family:ui-monospace,monospace;font-size:12px}
.run .meta{color:#666;font-size:12px}
.o-resolved{color:#2e7d32}
.o-unresolved{color:#c62828}
.o-unknown{color:#757575}
select{padding:3px}
#pg-status{font-size:11px;color:#90a4ae}
"""

JS = r"""
(function(){
var st=document.getElementById('pg-status');
function bump(){st.setAttribute('data-errors',String(Number(st.getAttribute('data-errors'))+1));}
window.addEventListener('error',bump);
var ce=console.error;console.error=function(){bump();return ce.apply(console,arguments);};
var DATA=JSON.parse(document.getElementById('pg-runs').textContent);
var COL=JSON.parse(document.getElementById('pg-colors').textContent);
var EFF={F:'#c62828',X:'#8e24aa',S:'#43a047',J:'#1e88e5',C:'#90a4ae',O:'#fb8c00',N:'#cfd8dc',
Z:'#eeeeee','-':'#ffffff'};
var EN={F:'failed',X:'reverted',S:'survived',J:'justified',C:'recorded',O:'off-anchor',N:'neutral',
Z:'reasoning','-':'no label'};
var sel=document.getElementById('group');
function showGroup(){var g=sel.value;var ps=document.querySelectorAll('.gpanel');
for(var i=0;i<ps.length;i++){ps[i].style.display=ps[i].getAttribute('data-group')===g?'':'none';}}
sel.addEventListener('change',showGroup);showGroup();
var NS='http://www.w3.org/2000/svg';
function el(n,a,p){var e=document.createElementNS(NS,n);for(var k in a){e.setAttribute(k,a[k]);}if(p){
p.appendChild(e);}return e;}
function tip(e,t){var ti=el('title',{},e);ti.textContent=t;}
function timeline(r){
var n=r.s.length,W=1000,cw=Math.max(Math.min(W/Math.max(n,1),14),0.6),
rows=r.f.length?Math.min(r.f.length,6):0;
var top=6+rows*5+(r.d.length?9:0),H=top+22;
var svg=el('svg',{'class':'timeline',width:Math.ceil(n*cw)+4,height:H,
viewBox:'0 0 '+(Math.ceil(n*cw)+4)+' '+H});
for(var i=0;i<n;i++){var ph=r.s.charAt(i);
var c=el('rect',{x:i*cw,y:top,width:Math.max(cw-(cw>3?1:0),0.6),height:14,
fill:COL[ph]||'#999','class':'step','data-step':i},svg);
tip(c,'step '+i+': '+ph+(r.e?(' · '+EN[r.e.charAt(i)]):''));
if(r.e){el('rect',{x:i*cw,y:top+15,width:Math.max(cw-(cw>3?1:0),0.6),height:4,
fill:EFF[r.e.charAt(i)]||'#fff'},svg);}}
for(var j=0;j<r.f.length;j++){var f=r.f[j],row=j%6;
var b=el('rect',{x:f[1]*cw,y:2+row*5,width:Math.max((f[2]-f[1]+1)*cw,2),height:4,
fill:'#6d4c41','class':'finding','data-detector':f[0]},svg);
tip(b,f[0]+': steps '+f[1]+'–'+f[2]+(f[3]?' (at end)':''));}
for(var k=0;k<r.d.length;k++){var d=r.d[k],x=d[0]*cw+cw/2,y=top-9;
var t=el('path',{d:'M'+(x-4)+','+y+' L'+(x+4)+','+y+' L'+x+','+(y+8)+' Z',
fill:'#000','class':'decision','data-kind':d[1]},svg);
tip(t,d[1]+' ('+d[2]+'): '+d[3]);}
return svg;}
var PER=20,page=0,list=DATA;
var box=document.getElementById('runlist'),q=document.getElementById('q'),
pl=document.getElementById('page');
function render(){
var pages=Math.max(1,Math.ceil(list.length/PER));if(page>=pages){page=pages-1;}if(page<0){page=0;}
pl.textContent='page '+(page+1)+' / '+pages+' · '+list.length+' runs';
while(box.firstChild){box.removeChild(box.firstChild);}
var items=list.slice(page*PER,page*PER+PER);
for(var i=0;i<items.length;i++){var r=items[i];var d=document.createElement('div');d.className='run';
d.setAttribute('data-id',r.id);
var h=document.createElement('div');var s=document.createElement('span');s.className='id';
s.textContent=r.id;h.appendChild(s);
var m=document.createElement('span');m.className='meta';
var mm=[];for(var key in r.m){mm.push(key+' '+r.m[key].toFixed(2));}
m.innerHTML=' · <span class="o-'+r.o+'">'+r.o+'</span> · ';
var txt=r.g+' · '+r.s.length+' steps · '+mm.join(' ');
txt+=' · '+r.f.length+' findings · '+r.d.length+' decisions';
m.appendChild(document.createTextNode(txt));
h.appendChild(m);d.appendChild(h);d.appendChild(timeline(r));box.appendChild(d);}}
q.addEventListener('input',function(){var v=q.value.toLowerCase();list=v?DATA.filter(function(r){
return r.id.toLowerCase().indexOf(v)>=0;}):DATA;page=0;render();});
document.getElementById('prev').addEventListener('click',function(){page--;render();});
document.getElementById('next').addEventListener('click',function(){page++;render();});
render();
st.setAttribute('data-ready','1');
})();
"""


def _json_script(element_id: str, obj: Any) -> str:
    # "</" cannot end the script element early once escaped; ids and messages are untrusted text.
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/")
    return f'<script type="application/json" id="{element_id}">{text}</script>'


def render_html(report: Report, *, generated: datetime | None = None) -> str:
    when = (generated or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC")
    options = "".join(f'<option value="{_gid(i)}">{escape(g)}</option>' for i, g in enumerate(report.groups))
    notes = "".join(f"<li>{escape(n)}</li>" for n in report.notes)
    errors = ""
    if report.n_errors:
        items = "".join(f"<li><code>{escape(e)}</code></li>" for e in report.errors)
        more = (
            f"<li>… and {report.n_errors - len(report.errors)} more</li>"
            if report.n_errors > len(report.errors)
            else ""
        )
        errors = (
            f'<section id="errors"><h2>Inputs that failed ({report.n_errors})</h2>'
            f"<ul>{items}{more}</ul></section>"
        )
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; "
        "script-src 'unsafe-inline'; img-src data:\">"
        f"<title>{escape(report.title)}</title><style>{CSS}</style></head><body>"
        f'<header><h1>{escape(report.title)}</h1><div class="muted">{report.n_runs} runs · '
        f"generated {when} · "
        f"planguard</div></header><main>"
        f'<div class="controls">Group shown in charts: <select id="group">{options}</select> '
        f'<span id="pg-status" data-errors="0" data-ready="0"></span></div>'
        + _summary_section(report)
        + _compliance_section(report)
        + _flow_section(report)
        + _detector_section(report)
        + _drill_section(report)
        + _experiment_section(report)
        + errors
        + f'<section id="notes"><h2>Notes</h2><ul>{notes}</ul></section></main>'
        + _json_script("pg-runs", report.drill)
        + _json_script("pg-colors", _colours(report))
        + f"<script>{JS}</script></body></html>"
    )
