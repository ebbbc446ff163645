"""Run records → the report's numbers: corpus summary, compliance, phase flow, detectors, effects, drill-down.

Everything here is plain data (dicts, lists, dataclasses), so the HTML and terminal renderers only lay it
out, and tests check the numbers without parsing any output.
"""

from __future__ import annotations

import itertools
import math
import zlib
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...phases import LETTER_OF
from ...plan import PRESETS, phase_matches
from .records import GENERAL_CODE, RunRecord
from .stats import Summary, UTest, mann_whitney_u, summarize

if TYPE_CHECKING:
    from ...plan import Plan

__all__ = [
    "ALL",
    "FLOW_POSITIONS",
    "METRICS",
    "OUTCOMES",
    "Flow",
    "Report",
    "build_report",
    "format_cell",
    "format_number",
    "format_share",
    "phase_flow",
    "run_effect_shares",
]

ALL = "all runs"
METRICS = ("PPC", "POC", "PPF", "PC")
OUTCOMES = ("resolved", "unresolved", "unknown")
#: The paper's Figure 3 positions: phase runs 0..10; column 11 holds runs that go on past position 10.
FLOW_POSITIONS = 11
END, MORE = "END", "MORE"
#: Detector order of TraceProbe Table III, then planguard's own; unknown names sort after these.
DETECTOR_ORDER = (
    "search_loop",
    "reread_churn",
    "tool_oscillation",
    "no_tail_validation",
    "unsupported_completion",
    "shell_over_tool",
    "plan_absence",
    "redundant_search",
    "repeated_call",
)
#: Effect profile columns (TraceProbe Figure 5 / Table VI): (name, effect codes counted).
EFFECT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("survived", "S"),
    ("failed", "F"),
    ("reverted", "X"),
    ("justified", "J"),
    ("recorded", "C"),
    ("off_anchor", "O"),
    ("neutral", "N"),
)


def format_number(x: float | None, digits: int = 3) -> str:
    """``x`` to ``digits`` places, as both renderers show it ("–": no value)."""
    return "–" if x is None or math.isnan(x) else f"{x:.{digits}f}"


def format_share(x: float | None) -> str:
    """A share as a percentage ("–": no value)."""
    return "–" if x is None or math.isnan(x) else f"{100 * x:.1f}%"


def format_cell(c: Any) -> str:
    """One cell of an experiment table: floats to 3 places, "–" for None."""
    return "–" if c is None else f"{c:.3f}" if isinstance(c, float) else str(c)


@dataclass(slots=True)
class Flow:
    """A phase-flow Sankey: nodes ``(position, phase)`` and links between consecutive positions."""

    n_runs: int
    nodes: dict[tuple[int, str], int] = field(default_factory=dict)  # (position, phase) -> runs
    links: dict[tuple[tuple[int, str], tuple[int, str]], int] = field(default_factory=dict)


def phase_runs(letters: str) -> str:
    """The Langutory with repeats collapsed (``NNRRP`` → ``NRP``): the sequence Figure 3 follows."""
    return "".join(letter for letter, _run in itertools.groupby(letters))


def phase_flow(letter_strings: Iterable[str], positions: int = FLOW_POSITIONS) -> Flow:
    """Figure 3's flow: phase at position k → k+1 for k = 0..positions-1; ``END`` where a run terminates
    (the paper's black bar), ``MORE`` at column ``positions`` for runs still going after position 10."""
    nodes: Counter[tuple[int, str]] = Counter()
    links: Counter[tuple[tuple[int, str], tuple[int, str]]] = Counter()
    n = 0
    for letters in letter_strings:
        n += 1
        seq = phase_runs(letters)
        if not seq:
            nodes[(0, END)] += 1
            continue
        prev = (0, seq[0])
        nodes[prev] += 1
        for k in range(1, positions + 1):
            if k >= len(seq):
                nxt = (k, END)
            elif k == positions:
                nxt = (k, MORE)
            else:
                nxt = (k, seq[k])
            nodes[nxt] += 1
            links[(prev, nxt)] += 1
            if nxt[1] in (END, MORE):
                break
            prev = nxt
    return Flow(n, dict(nodes), dict(links))


def run_effect_shares(effects: str) -> dict[str, float] | None:
    """Shares of each effect label over the run's non-reasoning labelled actions, plus the harmful ratio
    (failed + reverted share, TraceProbe Table VI). ``None`` when the run has no such action."""
    labelled = [c for c in effects if c not in "-Z"]
    if not labelled:
        return None
    n = len(labelled)
    counts = Counter(labelled)
    shares = {name: sum(counts[c] for c in codes) / n for name, codes in EFFECT_COLUMNS}
    shares["harmful"] = (counts["F"] + counts["X"]) / n
    return shares


@dataclass(slots=True)
class Report:
    title: str
    group_by: str
    plan: str | None
    n_runs: int
    groups: list[str]  # ALL first, then the shown groups
    summary: dict[str, Any]
    compliance: dict[str, dict[str, dict[str, Summary]]]  # group -> outcome -> metric -> Summary
    tests: dict[str, dict[str, UTest | None]]  # group -> metric -> resolved vs unresolved
    flows: dict[str, Flow]
    in_plan: dict[str, bool]  # phase letter -> part of the plan (else drawn grey, "out-of-plan")
    phase_names: dict[str, str]  # letter -> name of a phase the plan declares (coding letters: none)
    detectors: list[str]
    prevalence: dict[str, dict[str, tuple[int, dict[str, float]]]]  # group -> outcome|ALL -> (n, det->share)
    effects: dict[str, dict[str, Any]]  # group -> profile row
    drill: list[dict[str, Any]]
    drill_note: str
    errors: list[str]
    n_errors: int
    experiments: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _plan_phases(
    plan_name: str | None, plans: Sequence[Plan], runs: Sequence[RunRecord]
) -> tuple[dict[str, bool], dict[str, str]]:
    """The letters of the plan the report scores against: letter → part of the plan, and letter → name.

    A plan that declares its phases has its own letters (each phase's ``symbol``); a coding plan has the
    coding letters, in the plan where one of its expected phases accepts the letter's role. A plan known
    neither from ``plans`` nor from the presets (e.g. a replay jsonl scored against a plan file) puts every
    letter its runs carry in the plan: nothing says which ones are out of it.
    """
    name = plan_name or "plan"
    plan = next((p for p in plans if p.name == name), None) or PRESETS.get(name)
    if plan is None:
        seen = sorted({ch for r in runs for ch in r.letters} - {GENERAL_CODE})
        return {ch: True for ch in seen}, {}
    if plan.declarative:
        return {p.symbol: p.scored for p in plan.phases}, {p.symbol: p.name for p in plan.phases}
    in_plan = {
        letter: any(phase_matches(role, e) for e in plan.expected) for role, letter in LETTER_OF.items()
    }
    return in_plan, {}


def _group_names(records: Sequence[RunRecord], by: str, max_groups: int) -> tuple[list[str], dict[str, str]]:
    sizes = Counter(r.group(by) for r in records)
    shown = [g for g, _ in sorted(sizes.items(), key=lambda kv: (-kv[1], kv[0]))[:max_groups]]
    rest = [g for g in sizes if g not in shown]
    mapping = {g: g for g in shown}
    if rest:
        other = f"other ({len(rest)} groups)"
        mapping.update({g: other for g in rest})
        shown.append(other)
    return shown, mapping


def _primary_plan(records: Sequence[RunRecord]) -> str | None:
    counts: Counter[str] = Counter()
    for r in records:
        if r.metrics:
            counts[next(iter(r.metrics))] += 1
    return counts.most_common(1)[0][0] if counts else None


def _detector_key(name: str) -> tuple[int, str]:
    return (DETECTOR_ORDER.index(name) if name in DETECTOR_ORDER else len(DETECTOR_ORDER), name)


def _sample(records: Sequence[RunRecord], limit: int) -> tuple[list[RunRecord], str]:
    if len(records) <= limit:
        return list(records), f"all {len(records)} runs"
    # A stable hash of the id, not input order: the same run stays in the sample when the corpus grows.
    chosen = sorted(records, key=lambda r: zlib.crc32(r.id.encode("utf-8", "replace")))[:limit]
    keep = {id(r) for r in chosen}
    return [r for r in records if id(r) in keep], (
        f"a deterministic sample of {limit} of {len(records)} runs (lowest CRC-32 of the run id); "
        "aggregate sections cover every run"
    )


def build_report(
    records: Iterable[RunRecord],
    *,
    group_by: str = "model",
    errors: Sequence[str] = (),
    title: str = "planguard compliance report",
    max_groups: int = 12,
    max_drill: int = 1000,
    experiments: Sequence[dict[str, Any]] = (),
    plans: Sequence[Plan] = (),
) -> Report:
    """The report over ``records``, scored against the plan most runs were scored against; ``plans`` are
    the plans the runs were replayed with (presets are known by name without them)."""
    runs = list(records)
    plan = _primary_plan(runs)
    in_plan, phase_names = _plan_phases(plan, plans, runs)
    shown, mapping = _group_names(runs, group_by, max_groups)
    groups = [ALL, *shown]
    by_group: dict[str, list[RunRecord]] = defaultdict(list)
    for r in runs:
        by_group[ALL].append(r)
        by_group[mapping[r.group(group_by)]].append(r)

    outcome_counts = Counter(r.outcome for r in runs)
    steps = summarize([r.n_steps for r in runs])
    summary: dict[str, Any] = {
        "runs": len(runs),
        "outcomes": {o: outcome_counts.get(o, 0) for o in OUTCOMES},
        "steps": steps,
        "formats": dict(Counter(r.format for r in runs).most_common()),
        "groups": {
            g: {
                "runs": len(by_group[g]),
                "outcomes": {o: sum(r.outcome == o for r in by_group[g]) for o in OUTCOMES},
                "steps": summarize([r.n_steps for r in by_group[g]]),
            }
            for g in groups
        },
    }

    compliance: dict[str, dict[str, dict[str, Summary]]] = {}
    tests: dict[str, dict[str, UTest | None]] = {}
    for g in groups:
        per_outcome: dict[str, dict[str, list[float]]] = {
            o: {m: [] for m in METRICS} for o in (ALL, *OUTCOMES)
        }
        for r in by_group[g]:
            scores = r.metrics.get(plan or "")
            if scores is None:
                continue
            for m in METRICS:
                v = scores.get(m)
                if v is not None:
                    per_outcome[ALL][m].append(v)
                    per_outcome[r.outcome][m].append(v)
        compliance[g] = {o: {m: summarize(vals) for m, vals in ms.items()} for o, ms in per_outcome.items()}
        tests[g] = {
            m: mann_whitney_u(per_outcome["resolved"][m], per_outcome["unresolved"][m]) for m in METRICS
        }

    flows = {g: phase_flow(r.letters for r in by_group[g]) for g in groups}

    detectors = sorted({f[0] for r in runs for f in r.findings}, key=_detector_key)
    prevalence: dict[str, dict[str, tuple[int, dict[str, float]]]] = {}
    for g in groups:
        rows: dict[str, tuple[int, dict[str, float]]] = {}
        for o in (ALL, *OUTCOMES):
            sel = [r for r in by_group[g] if o == ALL or r.outcome == o]
            if not sel and o != ALL:
                continue
            hits: Counter[str] = Counter()
            for r in sel:
                hits.update({f[0] for f in r.findings})
            rows[o] = (len(sel), {d: hits[d] / len(sel) if sel else 0.0 for d in detectors})
        prevalence[g] = rows

    effects: dict[str, dict[str, Any]] = {}
    for g in groups:
        shares = [s for s in (run_effect_shares(r.effects) for r in by_group[g]) if s is not None]
        decided = [r for r in by_group[g] if r.outcome != "unknown"]
        row: dict[str, Any] = {
            "runs": len(by_group[g]),
            "labelled_runs": len(shares),
            "resolve_rate": (sum(r.outcome == "resolved" for r in decided) / len(decided))
            if decided
            else None,
            "steps_median": summarize([r.n_steps for r in by_group[g]]).median,
        }
        for name, _ in EFFECT_COLUMNS:
            vals = [s[name] for s in shares]
            row[name] = summarize(vals).median if vals else None
            row[name + "_mean"] = sum(vals) / len(vals) if vals else None
        harm = [s["harmful"] for s in shares]
        row["harmful"] = summarize(harm).median if harm else None
        effects[g] = row

    sample, note = _sample(runs, max_drill)
    drill = [
        {
            "id": r.id,
            "g": mapping[r.group(group_by)],
            "o": r.outcome,
            "s": r.steps,
            "e": r.effects,
            "f": [list(f) for f in r.findings],
            "d": [list(d) for d in r.decisions],
            "m": {k: round(v, 4) for k, v in (r.metrics.get(plan or "") or {}).items()},
            "src": r.source,
        }
        for r in sample
    ]
    notes = [
        "Compliance is scored against the plan '" + str(plan) + "'; outcomes come from the input's resolution"
        " status (runs without one are 'unknown' and excluded from the U test).",
        "Effect shares are per-run shares over non-reasoning actions with an effect label, reported as"
        " medians over runs (recorded also as a mean), as in TraceProbe Table VI; off-anchor needs an"
        " anchor set (none is given in a replay, so it is normally 0).",
    ]
    return Report(
        title=title,
        group_by=group_by,
        plan=plan,
        n_runs=len(runs),
        groups=groups,
        summary=summary,
        compliance=compliance,
        tests=tests,
        flows=flows,
        in_plan=in_plan,
        phase_names=phase_names,
        detectors=detectors,
        prevalence=prevalence,
        effects=effects,
        drill=drill,
        drill_note=note,
        errors=list(errors[:50]),
        n_errors=len(errors),
        experiments=list(experiments),
        notes=notes,
    )
