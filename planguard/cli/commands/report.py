"""``planguard report INPUT... [-o report.html] [--group-by model|setting|FIELD] [--format html|terminal]``

Inputs are trajectories (any loader format), ``planguard replay --format jsonl`` output, or store files
(``.planguard/sessions``); experiment results are rendered when a reader is registered for them
(:mod:`planguard.offline.report.experiments`). Without ``-o`` on a terminal the report is printed as tables.
"""

from __future__ import annotations

import argparse
import os
import sys

from ..progress import RunProgress

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "report",
        help="compliance report (self-contained HTML or terminal tables) over many runs",
        description="Summarise plan compliance, phase flow, detectors and effect labels over recorded runs.",
    )
    p.add_argument(
        "paths",
        nargs="+",
        metavar="INPUT",
        help="trajectory files/directories, replay jsonl output, or store files",
    )
    p.add_argument("-o", "--output", metavar="FILE", help="write the HTML report to FILE")
    p.add_argument(
        "--format",
        choices=("html", "terminal"),
        help="html (default with -o or when standard output is not a terminal) or terminal",
    )
    p.add_argument(
        "--group-by",
        default="model",
        metavar="model|setting|FIELD",
        help="group runs by model (default), setting, format, outcome, or any run metadata field",
    )
    p.add_argument(
        "--plan",
        action="append",
        metavar="PRESET|FILE",
        help="plan(s) to score replayed trajectories against (default: the standard plan)",
    )
    p.add_argument(
        "--rules",
        help="phase rules for replayed trajectories, as in replay: live (default; PHASES_LIVE.md), "
        "v351278e, v8ec988e (the paper)",
    )
    p.add_argument("--title", default="planguard compliance report")
    p.add_argument("--max-groups", type=int, default=12, help="groups shown separately (rest: 'other')")
    p.add_argument(
        "--max-drill",
        type=int,
        default=1000,
        help="runs embedded in the per-run drill-down (deterministic sample above this)",
    )
    p.add_argument(
        "--progress",
        action="store_true",
        help="draw the progress line (runs, bytes of input) on standard error even when it is no terminal",
    )
    p.add_argument(
        "-j",
        "--jobs",
        type=int,
        default=0,
        help="replay the input in N processes (default 0: one per core), cut by file and by line range",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ...offline.parallel import default_jobs
    from ...offline.replay import resolve_plans
    from ...offline.report import build_report, collect, read_experiments, render_html, render_terminal
    from ...offline.report.records import RunRecord, expand_paths
    from ...phases import DEFAULT_VERSION
    from ..output import open_output

    fmt = args.format or ("html" if args.output or not sys.stdout.isatty() else "terminal")
    files = expand_paths(args.paths)
    experiments, files, errors = read_experiments(f for f in files if f.exists())
    missing = [str(p) for p in args.paths if not os.path.exists(p)]
    errors += [
        f"{p}: no such file or directory; expected a trajectory, replay jsonl or store file" for p in missing
    ]
    records: list[RunRecord] = []
    shown = sys.stderr.isatty() or args.progress
    progress = RunProgress([str(f) for f in files] if shown else None, force=args.progress)
    try:
        for item in collect(
            files,
            plans=args.plan,
            rules=args.rules or DEFAULT_VERSION,
            jobs=args.jobs if args.jobs > 0 else default_jobs(),
        ):
            if isinstance(item, str):
                errors.append(item)
                progress.print_error(item)
            else:
                records.append(item)
                progress.advance(item.id, item.source)
    except ValueError as exc:  # a bad --plan
        print(f"planguard report: {exc}", file=sys.stderr)
        return 2
    finally:
        progress.close()
    if not records and not experiments:
        print("planguard report: no runs found in the input", file=sys.stderr)
        return 1
    report = build_report(
        records,
        plans=resolve_plans(args.plan) if args.plan else (),
        group_by=args.group_by,
        errors=errors,
        title=args.title,
        max_groups=args.max_groups,
        max_drill=args.max_drill,
        experiments=experiments,
    )
    with open_output(args.output) as out:
        if fmt == "terminal":
            render_terminal(report, out, width=160 if args.output else None)  # a file: wide tables
        else:
            html = render_html(report)
            out.write(html)
    if args.output and fmt == "html":
        print(
            f"planguard report: {len(records)} runs → {args.output} ({len(html.encode()) / 1e6:.2f} MB)",
            file=sys.stderr,
        )
    return 1 if errors else 0
