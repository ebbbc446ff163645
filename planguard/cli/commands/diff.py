"""``planguard diff RUN_A RUN_B [--id-a ID] [--id-b ID] [--anchors DIFF|FILES] [--format text|json]``

Aligns run B (compared) to run A (reference) over canonical actions (TraceProbe's CONVERGE), prints the
two runs side by side and the file-selection / edit-stability / completion-behaviour verdicts.
A run is a trajectory file of any supported format; ``FILE:ID`` (or ``--id-a``/``--id-b``) picks one
run out of a multi-run file such as a JSONL corpus (the id may be a unique suffix, e.g. the run name).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Any

__all__ = ["load_run", "register", "render_text", "run"]

_TYPE_SHORT = {
    "FILE_READ": "read",
    "FILE_WRITE": "write",
    "SEARCH": "search",
    "COMMAND": "cmd",
    "PLAN": "plan",
    "NAVIGATE": "nav",
    "FETCH": "fetch",
    "AGENT_SPAWN": "spawn",
    "REASON": "think",
}
_EFFECT_SHORT = {
    "SURVIVED": "ok",
    "FAILED": "FAIL",
    "REVERTED": "REVERTED",
    "JUSTIFIED": "just",
    "RECORDED": "rec",
    "OFF_ANCHOR": "off",
    "REASONING": "",
    "NEUTRAL": "",
}


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "diff",
        help="align two runs over canonical actions and rate where they diverge",
        description="Align RUN_B (compared) to RUN_A (reference) over canonical actions and print both side "
        "by side with the file-selection, edit-stability and completion-behaviour verdicts (strong / "
        "moderate / weak agreement with the reference).",
    )
    p.add_argument("run_a", metavar="RUN_A", help="reference run: a trajectory file, or FILE:ID")
    p.add_argument("run_b", metavar="RUN_B", help="compared run: a trajectory file, or FILE:ID")
    p.add_argument("--id-a", metavar="ID", help="run id inside RUN_A (for multi-run files)")
    p.add_argument("--id-b", metavar="ID", help="run id inside RUN_B (for multi-run files)")
    p.add_argument(
        "--anchors",
        metavar="DIFF|FILES",
        help="task-relevant files: a unified diff file, a file listing paths, or comma-separated paths",
    )
    p.add_argument("--include-reasoning", action="store_true", help="align reasoning-only steps too")
    p.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")
    p.add_argument("--width", type=int, default=None, help="text width (default: the terminal's)")
    p.add_argument("--source", metavar="FORMAT", help="input format, if detection from content is not wanted")
    p.add_argument("-o", "--output", metavar="OUT", help="write to OUT instead of standard output")
    p.set_defaults(func=run)


class RunSelectionError(ValueError):
    pass


def _split_spec(spec: str, explicit_id: str | None) -> tuple[str, str | None]:
    if explicit_id is not None or Path(spec).exists() or ":" not in spec:
        return spec, explicit_id
    path, _, run_id = spec.rpartition(":")
    if Path(path).exists():
        return path, run_id
    return spec, explicit_id


def load_run(spec: str, run_id: str | None = None, source_format: str | None = None) -> Any:
    """The one trajectory ``spec`` (``FILE`` or ``FILE:ID``) names. Raises :class:`RunSelectionError`."""
    from ...offline.loaders import LoadError, iter_trajectories

    path, wanted = _split_spec(spec, run_id)
    if not Path(path).exists():
        raise RunSelectionError(f"{path}: no such file")
    found: list[Any] = []
    errors: list[str] = []
    ids: list[str] = []
    for item in iter_trajectories([path], source_format=source_format):
        if isinstance(item, LoadError):
            errors.append(str(item))
            continue
        ids.append(item.id)
        if wanted is None:
            found.append(item)
            if len(found) > 1:
                break
        elif item.id == wanted:
            return item
        elif item.id.endswith(wanted) or item.id.startswith(wanted):
            found.append(item)
    if wanted is None:
        if len(found) == 1:
            return found[0]
        if not found:
            raise RunSelectionError(f"{path}: no run could be loaded" + (f" ({errors[0]})" if errors else ""))
        raise RunSelectionError(
            f"{path} holds several runs; pick one with {path}:ID or --id-a/--id-b (e.g. {ids[0]!r})"
        )
    if len(found) == 1:
        return found[0]
    if len(found) > 1:
        raise RunSelectionError(
            f"{path}: id {wanted!r} is ambiguous "
            f"({', '.join(t.id for t in found[:4])}{', …' if len(found) > 4 else ''})"
        )
    hint = f"; ids look like {ids[0]!r}" if ids else ""
    raise RunSelectionError(f"{path}: no run with id {wanted!r}{hint}")


def _anchors(spec: str | None) -> Any:
    if spec is None:
        return None
    from ...actions.anchors import AnchorSet

    p = Path(spec)
    text = p.read_text(encoding="utf-8") if p.exists() else spec
    anchors = AnchorSet.parse(text)
    if not anchors.files:
        raise RunSelectionError(
            f"--anchors {spec}: no file paths found (expected a unified diff or a path list)"
        )
    return anchors


def _cell(view: Any, i: int | None, width: int) -> str:
    if i is None:
        return ""
    a = view.actions[i]
    eff = _EFFECT_SHORT.get(view.effects[i].value, view.effects[i].value)
    head = f"{i:>3} {_TYPE_SHORT.get(a.type.value, a.type.value):<6} "
    tail = f" [{eff}]" if eff else ""
    room = width - len(head) - len(tail)
    target = (a.target or "").replace("\n", " ")
    if room < 1:
        return (head + tail)[:width]
    if len(target) > room:
        target = target[: max(room - 1, 0)] + "…"
    return head + target + tail


def render_text(al: Any, width: int = 120) -> str:
    """The side-by-side view and the layer verdicts as plain text."""
    col = max(24, (width - 3) // 2)
    lines = [
        f"reference (A): {al.ref.label}  ·  {al.summary['reference_actions']} actions",
        f"compared  (B): {al.cmp.label}  ·  {al.summary['compared_actions']} actions",
    ]
    if al.anchors is not None:
        lines.append(f"anchors: {', '.join(sorted(al.anchors.files))}")
    lines.append("")
    lines.append(f"{'A (reference)':<{col}} | B (compared)")
    lines.append(f"{'-' * col}-+-{'-' * col}")
    for r in al.rows:
        left = _cell(al.ref, r.ref, col)
        right = _cell(al.cmp, r.cmp, col)
        mark = (
            "=" if r.kind == "match" else ("~" if r.out_of_order else ("<" if r.kind == "ref-only" else ">"))
        )
        lines.append(f"{left:<{col}} {mark} {right}".rstrip())
    s = al.summary
    lines += [
        "",
        f"= matched {s['matched']}  < only in A {s['reference_actions'] - s['matched']}  "
        f"> only in B {s['compared_actions'] - s['matched']}  ~ reordered {s['out_of_order']}  ·  "
        f"coverage {s['coverage']:.0%}  added {s['added']:.0%}  ·  {s['spans']} divergence span(s)",
        "",
        "layer                 agreement  evidence",
    ]
    for layer in al.layers:
        ev = ", ".join(f"{m.name}={_fmt(m.value)} ({m.tier})" for m in layer.metrics if m.tier != "none")
        lines.append(f"{layer.name:<21} {layer.verdict:<10} {ev or '—'}")
    return "\n".join(lines) + "\n"


def _fmt(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:.2f}"


def run(args: argparse.Namespace) -> int:
    from ...offline.diff import align, run_view
    from ..output import open_output

    try:
        traj_a = load_run(args.run_a, args.id_a, args.source)
        traj_b = load_run(args.run_b, args.id_b, args.source)
        anchors = _anchors(args.anchors)
    except (RunSelectionError, OSError) as exc:
        print(f"planguard diff: {exc}", file=sys.stderr)
        return 2
    ref = run_view(traj_a.events, label=traj_a.id, anchors=anchors)
    cmp = run_view(traj_b.events, label=traj_b.id, anchors=anchors)
    al = align(ref, cmp, anchors=anchors, include_reasoning=args.include_reasoning)
    with open_output(args.output) as out:
        if args.format == "json":
            out.write(json.dumps(al.as_dict(), ensure_ascii=False) + "\n")
        else:
            width = args.width or shutil.get_terminal_size((120, 24)).columns
            out.write(render_text(al, width))
    return 0
