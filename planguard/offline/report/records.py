"""One compact :class:`RunRecord` per run, from any input the report accepts.

Inputs (detected per file, from content):

* trajectories in any format :mod:`planguard.offline.loaders` reads — replayed through the offline pipeline
  (phases, metrics, canonical actions, effect labels, detectors);
* ``planguard replay --format jsonl`` output — used as recorded (no replay);
* the embedded store (``.planguard/sessions``) — replayed like trajectories, and the policy decisions the
  live run recorded are read back from the store files (a replay has no policies).

A record keeps what the report needs and nothing else (no tool arguments or results), so 10,000 runs fit
in memory easily and records cross process boundaries cheaply.

**Model of a run** (``RunRecord.model``): the loader's ``meta["model"]`` when the source records one;
otherwise derived from the run name (``meta["run"]``, or for SWE-agent JSONL ids ``"<run>/<instance>"``
the part before the slash). SWE-bench/experiments run names are ``<YYYYMMDD>_<scaffold>_<model>`` and the
shared corpus's other runs are ``<collector>_<model>``, so the rule is: drop a leading 8-digit date and
its ``_``, then drop the first ``_``-separated token; the rest is the model
(``20250511_sweagent_lm_32b`` → ``lm_32b``, ``20250522_sweagent_claude-4-sonnet-20250514`` →
``claude-4-sonnet-20250514``, ``christsakm_gpt-5-2025-08-07`` → ``gpt-5-2025-08-07``). A name without
``_`` is the model itself; a run with neither is ``"unknown"``.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...documents import loads_json
from ...phases import DEFAULT_VERSION, LETTER_OF
from ..loaders import LoadError, trajectory_files
from ..parallel import Part, Piece, corpus_parts, iter_part, map_parts
from ..replay import replay_items, replay_pipeline, resolve_plans

__all__ = [
    "EFFECT_CODES",
    "RunRecord",
    "collect",
    "expand_paths",
    "first_object",
    "is_replay_jsonl",
    "model_from_run",
    "record_from_replay",
    "record_from_replay_json",
]

#: One character per effect label in ``RunRecord.effects`` (``-``: no label, e.g. no effect tracker).
EFFECT_CODES: dict[str, str] = {
    "SURVIVED": "S",
    "FAILED": "F",
    "REVERTED": "X",
    "JUSTIFIED": "J",
    "RECORDED": "C",
    "OFF_ANCHOR": "O",
    "REASONING": "Z",
    "NEUTRAL": "N",
}
GENERAL_CODE = "."  # a step with no plan-phase role
_DATE_PREFIX = re.compile(r"^\d{8}_")
# Metadata values worth keeping for --group-by FIELD (scalars only; no texts of the run).
_MAX_META_VALUE = 200


@dataclass(slots=True)
class RunRecord:
    id: str
    source: str
    format: str
    outcome: str  # "resolved" | "unresolved" | "unknown"
    model: str
    setting: str
    steps: str  # one phase letter per step (first role of the step), "." for general steps
    letters: str  # the Langutory's letters (all roles, in order)
    metrics: dict[str, dict[str, float]]  # plan name -> {PPC, POC, PPF, PC}
    effects: str = ""  # one EFFECT_CODES char per step ("" when the input has no effect labels)
    findings: list[tuple[str, int, int, bool]] = field(default_factory=list)  # detector, first, last, at_end
    decisions: list[tuple[int, str, str, str]] = field(default_factory=list)  # step, kind, policy, message
    meta: dict[str, Any] = field(default_factory=dict)  # scalar metadata, for grouping by any field

    @property
    def n_steps(self) -> int:
        return len(self.steps)

    def group(self, by: str) -> str:
        if by in ("model", "setting", "format", "outcome", "source"):
            return str(getattr(self, by))
        key = by.removeprefix("meta.")
        value = self.meta.get(key)
        return "unknown" if value is None else str(value)


def model_from_run(run: str | None) -> str | None:
    """The model a run name stands for (see the module docs for the rule)."""
    if not run:
        return None
    name = _DATE_PREFIX.sub("", run.strip())
    _scaffold, sep, rest = name.partition("_")
    return rest if sep and rest else name or None


def _outcome(resolved: Any, status: Any = None) -> str:
    if resolved is True or status == "resolved":
        return "resolved"
    if resolved is False or status in ("unresolved", "not_resolved"):
        return "unresolved"
    return "unknown"


def _scalar_meta(meta: Mapping[str, Any]) -> dict[str, Any]:
    return {
        k: v
        for k, v in meta.items()
        if v is None
        or isinstance(v, (bool, int, float))
        or (isinstance(v, str) and len(v) <= _MAX_META_VALUE)
    }


def _step_codes(step_roles: Iterable[Sequence[str]], letter_of: Mapping[str, str] | None = None) -> str:
    letters = LETTER_OF if letter_of is None else letter_of
    return "".join(letters.get(roles[0], "X") if roles else GENERAL_CODE for roles in step_roles)


def _model_and_setting(meta: Mapping[str, Any], run_id: str, fmt: str) -> tuple[str, str]:
    model = meta.get("model")
    if not model:
        run = meta.get("run")
        if not run and fmt == "swe-agent-jsonl" and "/" in run_id:
            run = run_id.split("/", 1)[0]
        model = model_from_run(run)
    setting = meta.get("setting") or meta.get("plan_setting") or meta.get("plan") or "default"
    return str(model or "unknown"), str(setting)


def record_from_replay(result: Any, decisions: list[tuple[int, str, str, str]] | None = None) -> RunRecord:
    """A record from a :class:`planguard.offline.replay.ReplayResult` (kept steps)."""
    t, s = result.trajectory, result.summary
    meta = t.meta or {}
    model, setting = _model_and_setting(meta, t.id, t.format)
    ran = result.ran  # the recording's denied calls are denials, not steps
    effects = "".join(
        EFFECT_CODES.get(str(step.effect), "-") if step.effect is not None else "-" for step in ran
    )
    if effects and set(effects) == {"-"}:
        effects = ""
    rec_decisions = list(decisions or [])
    if decisions is None:  # a store file's own records already hold its denials
        for step in result.denied:
            d = step.decision
            rec_decisions.append((step.index, str(d.kind), d.policy, d.message[:200]))
    return RunRecord(
        id=t.id,
        source=t.source,
        format=t.format,
        outcome=_outcome(meta.get("resolved"), meta.get("resolution_status")),
        model=model,
        setting=setting,
        steps=_step_codes((step.roles for step in ran), result.letter_of),
        letters=s.letters,
        metrics={name: sc.as_dict() for name, sc in s.scores.items()},
        effects=effects,
        findings=[(f.detector, f.first_step, f.last_step, f.at_end) for f in s.findings],
        decisions=rec_decisions,
        meta=_scalar_meta(meta),
    )


def record_from_replay_json(obj: Mapping[str, Any], where: str) -> RunRecord:
    """A record from one ``planguard replay --format jsonl`` object. Raises ``ValueError`` naming the key.

    The replay record carries no run metadata today, so outcome is ``unknown`` unless the object has a
    ``meta`` mapping or top-level ``resolved``/``resolution_status``/``run``/``model``/``setting`` keys.
    """

    def need(key: str, kind: type | tuple[type, ...]) -> Any:
        if key not in obj:
            raise ValueError(f"{where}: '{key}' is missing; expected a planguard replay jsonl record")
        value = obj[key]
        if not isinstance(value, kind):
            raise ValueError(f"{where}: '{key}' has the wrong type; expected {kind}")
        return value

    run_id = str(need("id", (str, int)))
    fmt = str(obj.get("format") or "replay-jsonl")
    metrics = need("metrics", dict)
    step_roles = need("step_roles", list)
    letters = need("letters", str)
    meta = dict(obj.get("meta") or {})
    for key in ("resolved", "resolution_status", "run", "model", "setting", "instance_id"):
        if key in obj and key not in meta:
            meta[key] = obj[key]
    model, setting = _model_and_setting(meta, run_id, fmt)
    effects = ""
    actions = obj.get("actions") or []
    if isinstance(actions, list) and actions:
        effects = "".join(EFFECT_CODES.get(str((a or {}).get("effect")), "-") for a in actions)
    findings = []
    for i, f in enumerate(obj.get("findings") or []):
        try:
            findings.append(
                (str(f["detector"]), int(f["first_step"]), int(f["last_step"]), bool(f.get("at_end")))
            )
        except (KeyError, TypeError, ValueError):
            raise ValueError(
                f"{where}: findings[{i}] is malformed; expected detector, first_step, last_step"
            ) from None
    try:
        steps = _step_codes(r if isinstance(r, list) else [] for r in step_roles)
        clean_metrics = {str(p): {k: float(v) for k, v in m.items()} for p, m in metrics.items()}
    except (TypeError, ValueError, AttributeError):
        raise ValueError(
            f"{where}: 'metrics' or 'step_roles' malformed; expected plan -> {{PPC, ...}} and lists"
        ) from None
    return RunRecord(
        id=run_id,
        source=str(obj.get("source") or where),
        format=fmt,
        outcome=_outcome(meta.get("resolved"), meta.get("resolution_status")),
        model=model,
        setting=setting,
        steps=steps,
        letters=letters,
        metrics=clean_metrics,
        effects=effects,
        findings=findings,
        meta=_scalar_meta(meta),
    )


def first_object(path: Path) -> Any:
    """The file's first non-blank line as JSON (None when the file cannot be read or the line is not JSON):
    what tells the kind of a JSON Lines input."""
    try:
        with path.open("rb") as handle:
            for raw in handle:
                if raw.strip():
                    return loads_json(raw)
    except (OSError, ValueError):
        return None
    return None


def is_replay_jsonl(path: Path) -> bool:
    """The file's first JSON line looks like a ``planguard replay --format jsonl`` record."""
    obj = first_object(path)
    return isinstance(obj, dict) and {"id", "letters", "metrics", "step_roles"} <= obj.keys()


def expand_paths(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """The inputs a replay reads: files named (missing ones too, to be reported), and under directories what
    :func:`planguard.offline.loaders.trajectory_files` walks to (trajectory files, OpenCode storage)."""
    return [
        found
        for given in paths
        for found in (trajectory_files([given]) if Path(given).is_dir() else [Path(given)])
    ]


def _store_decisions(source: str) -> list[tuple[int, str, str, str]]:
    from ..loaders.planguard_store import read_session

    try:
        session = read_session(source)
    except Exception:  # decisions are an extra; the replayed run still reports
        return []
    out = [(st.index, d.kind, d.policy, d.message[:200]) for st in session.steps for d in st.decisions]
    out += [(b.at_step, d.kind, d.policy, d.message[:200]) for b in session.blocked for d in b.decisions]
    last = session.steps[-1].index if session.steps else 0
    out += [(last, d.kind, d.policy, d.message[:200]) for d in session.decisions]
    return sorted(out, key=lambda d: d[0])


def _part_records(part: Part, plans: tuple[str, ...] | None, rules: str) -> list[RunRecord | str]:
    """Every record (or error message) one part of the input yields."""
    out: list[RunRecord | str] = []
    for piece in part:
        out += _piece_records(piece, plans, rules)
    return out


def _piece_records(piece: Piece, plans: tuple[str, ...] | None, rules: str) -> list[RunRecord | str]:
    out: list[RunRecord | str] = []
    path = Path(piece.path)
    if piece.end is None and path.is_file() and is_replay_jsonl(path):
        with path.open("rb") as handle:
            for line, raw in enumerate(handle, 1):
                if not raw.strip():
                    continue
                where = f"{path}:{line}"
                try:
                    obj = loads_json(raw)
                    if not isinstance(obj, dict):
                        raise ValueError(f"{where}: expected a JSON object per line")
                    out.append(record_from_replay_json(obj, where))
                except ValueError as exc:
                    out.append(str(exc) if str(exc).startswith(where) else f"{where}: {exc}")
        return out

    pipeline = replay_pipeline(resolve_plans(list(plans) if plans else None), rules)
    for item in replay_items(iter_part((piece,)), pipeline, keep_steps=True):
        if isinstance(item, LoadError):
            out.append(str(item))
            continue
        decisions = (
            _store_decisions(item.trajectory.source) if item.trajectory.format == "planguard-store" else None
        )
        out.append(record_from_replay(item, decisions))
    return out


def collect(
    paths: Iterable[str | os.PathLike[str]],
    *,
    plans: Sequence[str] | None = None,
    rules: str | None = None,
    jobs: int = 1,
) -> Iterator[RunRecord | str]:
    """Records of every run under ``paths``, in input order; unreadable input yields an error string.
    Trajectories are replayed with ``rules`` (default: the live rules, as ``planguard replay``).

    ``jobs > 1`` replays the input in that many processes, cut into parts by file and, for large JSON
    Lines files of one run per line, by line range (:mod:`planguard.offline.parallel`).
    """
    read = functools.partial(
        _part_records, plans=tuple(plans) if plans else None, rules=rules or DEFAULT_VERSION
    )
    files = expand_paths(paths)
    missing = [f for f in files if not f.exists()]
    for f in missing:
        yield f"{f}: no such file or directory; expected a trajectory, replay jsonl or store file"
    for records in map_parts(read, corpus_parts(f for f in files if f.exists()), jobs):
        yield from records
