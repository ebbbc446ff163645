"""Run alignment (TraceProbe's CONVERGE): align a compared run C to a reference run R over canonical
actions, find where they diverge, and rate three diagnostic layers strong / moderate / weak.

**Alignment.** A monotonic longest common subsequence (Hunt–Szymanski: O((r + n) log n) for r
compatible pairs, deterministic) over the two runs' non-reasoning actions. Two actions are compatible
when their *alignment keys* are equal:

* file actions and navigation: type + repo-relative path;
* searches: type + normalised search scope (the path searched, ``.`` for the whole repo);
* commands: ``validation`` for any recognised test run, else the command intent (``git diff``,
  ``pip install``; a non-test ``python script.py`` is ``python``);
* plan, fetch, sub-agent spawn: type alone (task intent);
* effects: successful workspace effects (SURVIVED, JUSTIFIED, NEUTRAL) match each other, OFF_ANCHOR
  matches those too (uncertain exploration must not inflate divergence), failure-like (FAILED,
  REVERTED) and non-workspace (RECORDED) effects need the same label.

**Divergence spans** are the maximal unmatched stretches between consecutive matched pairs (reference
side, compared side or both). An unmatched compared action is *out of order* when a compatible action
in the reference is also left unmatched (both runs did it, in an order the LCS cannot match).

**Layers.** Each metric has frozen ``good`` and ``warn`` thresholds: a value at or below ``good`` is no
evidence, between them medium-tier, at or above ``warn`` high-tier. A layer is *strong* with no
medium/high evidence, *moderate* with exactly one medium-tier metric, *weak* with any high-tier metric
or several medium-tier ones. The paper fixes the 0.85 off-anchor ratio and the 3-step rapid-rewrite
window; the other thresholds are planguard's, fixed here (see :data:`THRESHOLDS`):

===================  ======================  ==================================================  =====  =====
layer                metric                  meaning                                             good   warn
===================  ======================  ==================================================  =====  =====
file selection       off_anchor_ratio        share of C's reads/searches off the anchor set       0.50   0.85
                                             (or off R's read set when no anchors)
file selection       scope_drift             share of C's written source files outside R's        0.00   0.50
                                             write set (or the anchors)
file selection       missed_files            share of R's written source files (or anchors) C     0.00   0.50
                                             never writes
edit stability       rapid_rewrites          C rewrites of a file within 3 steps that revert the  0      2
                                             previous write, on files R does not rewrite so
edit stability       failed_excess           C's failed-action share minus R's                    0.10   0.25
edit stability       error_spirals           runs of ≥3 consecutive failed actions, C minus R     0      2
completion behavior dead_ends                C-only spans of ≥3 actions with a failed/reverted    0      2
                                             action and no surviving write
completion behavior out_of_order_ratio       C actions whose compatible R action is left          0.10   0.25
                                             unmatched (same work, other order), over C's actions
completion behavior missing_final_validation R validates after its last source write, C not      0      2
                                             (medium-tier evidence at most)
===================  ======================  ==================================================  =====  =====
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..actions.anchors import AnchorSet
from ..actions.classify import classify_action
from ..actions.effects import EffectLabeler, WriteLedger
from ..actions.types import Action, ActionType, Effect
from ..events import ToolEvent
from ..tools.paths import looks_like_file

__all__ = [
    "THRESHOLDS",
    "Alignment",
    "Layer",
    "Metric",
    "Row",
    "RunView",
    "Span",
    "align",
    "alignment_key",
    "run_view",
]


# ------------------------------------------------------------------------------------------ runs


@dataclass(slots=True)
class RunView:
    """One run as CONVERGE sees it: canonical actions with final effect labels."""

    label: str
    actions: list[Action]
    effects: list[Effect]
    events: list[ToolEvent] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.actions)


def run_view(
    events: Iterable[ToolEvent],
    *,
    label: str = "run",
    anchors: AnchorSet | None = None,
    classify: Callable[[ToolEvent], Action] = classify_action,
) -> RunView:
    """Classify a finished run and label its effects (final labels: reverts and end-of-run revisions)."""
    evs = list(events)
    actions = [classify(e) for e in evs]
    n = len(evs) + 1
    labeler = EffectLabeler(anchors, max_revisions=n, max_pending_reads=n, ledger=WriteLedger(n, n))
    effects = [labeler.label(i, a, e) for i, (a, e) in enumerate(zip(actions, evs, strict=True))]
    for i, eff in labeler.finish().items():
        effects[i] = eff
    return RunView(label, actions, effects, evs)


# ----------------------------------------------------------------------------------- compatibility

_OK = "ok"
_EFFECT_CLASS = {
    Effect.SURVIVED: _OK,
    Effect.JUSTIFIED: _OK,
    Effect.NEUTRAL: _OK,
    Effect.OFF_ANCHOR: _OK,
    Effect.FAILED: "failed",
    Effect.REVERTED: "reverted",
    Effect.RECORDED: "recorded",
    Effect.REASONING: "reasoning",
}


def alignment_key(action: Action, effect: Effect) -> tuple[str, str, str]:
    """Actions with equal keys are compatible (see the module docstring)."""
    t = action.type
    if t is ActionType.FILE_READ or t is ActionType.FILE_WRITE or t is ActionType.NAVIGATE:
        obj = action.target or "?"
    elif t is ActionType.SEARCH:
        obj = action.path or "."
    elif t is ActionType.COMMAND:
        if action.is_validation:
            obj = "validation"
        else:
            intent = action.intent or action.target or "?"
            obj = (
                intent.split(" ", 1)[0] if intent.startswith(("python ", "perl ", "bash ", "sh ")) else intent
            )
    else:
        obj = ""
    return t.value, obj, _EFFECT_CLASS.get(effect, str(effect))


# ----------------------------------------------------------------------------------------- result


@dataclass(frozen=True, slots=True)
class Row:
    """One line of the side-by-side view: a matched pair, or an action of one run only."""

    ref: int | None  # step index in the reference run
    cmp: int | None  # step index in the compared run
    kind: str  # "match", "ref-only", "cmp-only"
    out_of_order: bool = False


@dataclass(frozen=True, slots=True)
class Span:
    """A divergence span: unmatched steps of both runs between two matched pairs."""

    ref: tuple[int, ...]
    cmp: tuple[int, ...]
    out_of_order: int  # compared steps in the span with a compatible reference action elsewhere
    dead_end: bool  # C-side: ≥3 actions, a failed/reverted action, no surviving write


@dataclass(frozen=True, slots=True)
class Metric:
    name: str
    value: float
    good: float
    warn: float

    @property
    def tier(self) -> str:
        """``none``, ``medium`` or ``high``."""
        if self.value >= self.warn:
            return "high"
        if self.value > self.good:
            return "medium"
        return "none"


@dataclass(frozen=True, slots=True)
class Layer:
    name: str
    metrics: tuple[Metric, ...]

    @property
    def verdict(self) -> str:
        tiers = [m.tier for m in self.metrics]
        if "high" in tiers or tiers.count("medium") >= 2:
            return "weak"
        if "medium" in tiers:
            return "moderate"
        return "strong"


#: Frozen (good, warn) thresholds per metric.
THRESHOLDS: dict[str, tuple[float, float]] = {
    "off_anchor_ratio": (0.50, 0.85),
    "scope_drift": (0.0, 0.50),
    "missed_files": (0.0, 0.50),
    "rapid_rewrites": (0, 2),
    "failed_excess": (0.10, 0.25),
    "error_spirals": (0, 2),
    "dead_ends": (0, 2),
    "out_of_order_ratio": (0.10, 0.25),
    "missing_final_validation": (0, 2),
}
RAPID_REWRITE_STEPS = 3
SPIRAL_LENGTH = 3
DEAD_END_LENGTH = 3


@dataclass(slots=True)
class Alignment:
    ref: RunView
    cmp: RunView
    pairs: list[tuple[int, int]]
    rows: list[Row]
    spans: list[Span]
    layers: tuple[Layer, ...]
    anchors: AnchorSet | None = None
    summary: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        def act(view: RunView, i: int | None) -> dict[str, Any] | None:
            if i is None:
                return None
            a = view.actions[i]
            return {"step": i, "type": a.type.value, "target": a.target, "effect": view.effects[i].value}

        return {
            "reference": self.ref.label,
            "compared": self.cmp.label,
            "anchors": sorted(self.anchors.files) if self.anchors is not None else None,
            "summary": self.summary,
            "layers": {
                layer.name: {
                    "verdict": layer.verdict,
                    "metrics": {
                        m.name: {"value": m.value, "tier": m.tier, "good": m.good, "warn": m.warn}
                        for m in layer.metrics
                    },
                }
                for layer in self.layers
            },
            "spans": [
                {
                    "ref": list(s.ref),
                    "cmp": list(s.cmp),
                    "out_of_order": s.out_of_order,
                    "dead_end": s.dead_end,
                }
                for s in self.spans
            ],
            "rows": [
                {
                    "kind": r.kind,
                    "ref": act(self.ref, r.ref),
                    "cmp": act(self.cmp, r.cmp),
                    "out_of_order": r.out_of_order,
                }
                for r in self.rows
            ],
        }


# -------------------------------------------------------------------------------------------- LCS


def _lcs(a: Sequence[Any], b: Sequence[Any]) -> list[tuple[int, int]]:
    """One longest common subsequence of ``a`` and ``b`` as index pairs (Hunt–Szymanski)."""
    where: dict[Any, list[int]] = {}
    for j in range(len(b) - 1, -1, -1):
        where.setdefault(b[j], []).append(j)  # decreasing j
    thresh: list[int] = []
    links: list[tuple[int, int, Any]] = []
    for i, sym in enumerate(a):
        js = where.get(sym)
        if not js:
            continue
        for j in js:
            k = bisect_left(thresh, j)
            node = (i, j, links[k - 1] if k else None)
            if k == len(thresh):
                thresh.append(j)
                links.append(node)
            elif j < thresh[k]:
                thresh[k] = j
                links[k] = node
    out: list[tuple[int, int]] = []
    cur: Any = links[-1] if links else None
    while cur is not None:
        out.append((cur[0], cur[1]))
        cur = cur[2]
    out.reverse()
    return out


def _reordered(rkeys: list[Any], ckeys: list[Any], local: list[tuple[int, int]]) -> set[int]:
    """Unmatched compared positions that pair with an unmatched compatible reference action: work both
    runs did, in an order the monotonic alignment cannot match (repeats beyond the reference's are not)."""
    matched_r = {a for a, _ in local}
    matched_c = {b for _, b in local}
    spare: dict[Any, int] = {}
    for a, k in enumerate(rkeys):
        if a not in matched_r:
            spare[k] = spare.get(k, 0) + 1
    out: set[int] = set()
    for b, k in enumerate(ckeys):
        if b not in matched_c and spare.get(k, 0) > 0:
            spare[k] -= 1
            out.add(b)
    return out


# ---------------------------------------------------------------------------------------- align


def align(
    ref: RunView, cmp: RunView, *, anchors: AnchorSet | None = None, include_reasoning: bool = False
) -> Alignment:
    """Align ``cmp`` to the reference ``ref`` and classify the three layers."""

    def keep(view: RunView) -> list[int]:
        return [i for i, a in enumerate(view.actions) if include_reasoning or a.type is not ActionType.REASON]

    ri, ci = keep(ref), keep(cmp)
    rkeys = [alignment_key(ref.actions[i], ref.effects[i]) for i in ri]
    ckeys = [alignment_key(cmp.actions[i], cmp.effects[i]) for i in ci]
    local = _lcs(rkeys, ckeys)
    pairs = [(ri[a], ci[b]) for a, b in local]
    ooo_local = _reordered(rkeys, ckeys, local)

    # Rows and spans, walking both filtered sequences between consecutive matches.
    rows: list[Row] = []
    spans: list[Span] = []
    pa = pb = 0
    for a, b in [*local, (len(rkeys), len(ckeys))]:
        r_only = list(range(pa, a))
        c_only = list(range(pb, b))
        if r_only or c_only:
            rows.extend(Row(ri[x], None, "ref-only") for x in r_only)
            rows.extend(Row(None, ci[y], "cmp-only", y in ooo_local) for y in c_only)
            csteps = tuple(ci[y] for y in c_only)
            spans.append(
                Span(
                    tuple(ri[x] for x in r_only),
                    csteps,
                    sum(1 for y in c_only if y in ooo_local),
                    _dead_end(cmp, csteps),
                )
            )
        if a < len(rkeys):
            rows.append(Row(ri[a], ci[b], "match"))
        pa, pb = a + 1, b + 1

    layers = (
        _file_selection(ref, cmp, ri, ci, anchors),
        _edit_stability(ref, cmp, ri, ci),
        _completion(ref, cmp, ci, spans, len(ooo_local)),
    )
    summary = {
        "reference_actions": len(ri),
        "compared_actions": len(ci),
        "matched": len(local),
        "coverage": round(len(local) / len(ri), 4) if ri else 1.0,
        "added": round((len(ci) - len(local)) / len(ci), 4) if ci else 0.0,
        "out_of_order": len(ooo_local),
        "spans": len(spans),
    }
    return Alignment(ref, cmp, pairs, rows, spans, layers, anchors, summary)


def _m(name: str, value: float) -> Metric:
    good, warn = THRESHOLDS[name]
    return Metric(name, round(float(value), 4), good, warn)


def _ok(e: Effect) -> bool:
    return e is not Effect.FAILED


def _read_paths(view: RunView, idx: Iterable[int]) -> list[str]:
    """Paths of successful reads and searches (a search contributes its scope)."""
    out = []
    for i in idx:
        a = view.actions[i]
        if not _ok(view.effects[i]):
            continue
        if a.type is ActionType.FILE_READ and a.target:
            out.append(a.target)
        elif a.type is ActionType.SEARCH:
            out.append(a.path or ".")
    return out


def _written(view: RunView, idx: Iterable[int]) -> set[str]:
    """Source files the run wrote successfully (kept or later reverted)."""
    out: set[str] = set()
    for i in idx:
        a = view.actions[i]
        if (
            a.type is ActionType.FILE_WRITE
            and a.is_source_write
            and a.target
            and view.effects[i] in (Effect.SURVIVED, Effect.REVERTED)
        ):
            out.add(a.target)
    return out


def _covers(path: str, known: set[str]) -> bool:
    """``path`` is a known file, or a directory (search scope) containing one."""
    if path in known:
        return True
    if path == ".":
        return bool(known)
    if looks_like_file(path):
        return any(k.endswith("/" + path) or path.endswith("/" + k) for k in known)
    prefix = path.rstrip("/") + "/"
    return any(k.startswith(prefix) for k in known)


def _file_selection(
    ref: RunView, cmp: RunView, ri: list[int], ci: list[int], anchors: AnchorSet | None
) -> Layer:
    c_reads = _read_paths(cmp, ci)
    c_written = _written(cmp, ci)
    if anchors is not None:
        anchor_files = set(anchors.files)
        off = [p for p in c_reads if not (p in anchors or _covers(p, anchor_files))]
        drift = [f for f in c_written if f not in anchors]
        reference_writes: set[str] = anchor_files
    else:
        known = set(_read_paths(ref, ri)) | _written(ref, ri)
        off = [p for p in c_reads if not _covers(p, known)]
        reference_writes = _written(ref, ri)
        drift = [f for f in c_written if not _covers(f, reference_writes)]
    off_ratio = len(off) / len(c_reads) if c_reads else 0.0
    drift_ratio = len(drift) / len(c_written) if c_written else 0.0
    missed = [f for f in reference_writes if not _covers(f, c_written)]
    missed_ratio = len(missed) / len(reference_writes) if reference_writes else 0.0
    return Layer(
        "file_selection",
        (_m("off_anchor_ratio", off_ratio), _m("scope_drift", drift_ratio), _m("missed_files", missed_ratio)),
    )


def _rapid_rewrites(view: RunView, idx: list[int]) -> dict[str, int]:
    """Per file: writes overwritten or reversed by another write to it within 3 steps."""
    ledger = WriteLedger()
    out: dict[str, int] = {}
    for i in idx:
        a = view.actions[i]
        if a.type is not ActionType.FILE_WRITE or view.effects[i] is Effect.FAILED or not a.target:
            continue
        for earlier in ledger.record(i, a):
            if i - earlier <= RAPID_REWRITE_STEPS:
                out[a.target] = out.get(a.target, 0) + 1
    return out


def _spirals(view: RunView, idx: list[int]) -> int:
    count = run = 0
    for i in idx:
        if view.effects[i] is Effect.FAILED:
            run += 1
            if run == SPIRAL_LENGTH:
                count += 1
        else:
            run = 0
    return count


def _failed_share(view: RunView, idx: list[int]) -> float:
    return sum(1 for i in idx if view.effects[i] is Effect.FAILED) / len(idx) if idx else 0.0


def _edit_stability(ref: RunView, cmp: RunView, ri: list[int], ci: list[int]) -> Layer:
    r_rr = _rapid_rewrites(ref, ri)
    c_rr = _rapid_rewrites(cmp, ci)
    rapid = sum(n for f, n in c_rr.items() if f not in r_rr)
    failed_excess = max(0.0, _failed_share(cmp, ci) - _failed_share(ref, ri))
    spirals = max(0, _spirals(cmp, ci) - _spirals(ref, ri))
    return Layer(
        "edit_stability",
        (_m("rapid_rewrites", rapid), _m("failed_excess", failed_excess), _m("error_spirals", spirals)),
    )


def _dead_end(view: RunView, steps: tuple[int, ...]) -> bool:
    if len(steps) < DEAD_END_LENGTH:
        return False
    effects = [view.effects[i] for i in steps]
    return any(e in (Effect.FAILED, Effect.REVERTED) for e in effects) and Effect.SURVIVED not in effects


def _validated_at_end(view: RunView, idx: list[int]) -> bool:
    last_write = max((i for i in idx if view.actions[i].is_source_write), default=-1)
    return any(
        view.actions[i].is_validation and view.effects[i] is not Effect.FAILED for i in idx if i > last_write
    )


def _completion(ref: RunView, cmp: RunView, ci: list[int], spans: list[Span], out_of_order: int) -> Layer:
    dead = sum(1 for s in spans if s.dead_end)
    ooo = out_of_order / len(ci) if ci else 0.0
    ri = list(range(len(ref.actions)))
    missing = 1 if _validated_at_end(ref, ri) and not _validated_at_end(cmp, ci) else 0
    return Layer(
        "completion_behavior",
        (_m("dead_ends", dead), _m("out_of_order_ratio", ooo), _m("missing_final_validation", missing)),
    )
