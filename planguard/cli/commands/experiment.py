"""``planguard experiment report RESULTS…`` and ``planguard experiment outcome RESULTS --session ID``."""

from __future__ import annotations

import argparse
import sys

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "experiment",
        help="plan experiments (plan A / plan B / no plan): report and record outcomes",
        description="Analyse plan experiments default-trap-safe (priority control, removal effects, "
        "defaults, coverage, task outcomes, cluster-bootstrap intervals).",
    )
    p.set_defaults(func=run, experiment_cmd=None)
    ps = p.add_subparsers(dest="experiment_cmd", metavar="COMMAND")
    r = ps.add_parser("report", help="report an experiment's results file(s)")
    r.add_argument("results", nargs="+", metavar="RESULTS", help="results JSONL file(s)")
    r.add_argument(
        "--cluster",
        metavar="KEY",
        default=None,
        help="cluster key for the bootstrap: cluster (default; falls back to the task), task, or a "
        "metadata key recorded with each session (e.g. customer)",
    )
    r.add_argument("--resamples", type=int, default=10_000, metavar="N", help="bootstrap resamples (10000)")
    r.add_argument("--seed", type=int, default=0, metavar="S", help="bootstrap seed (0)")
    r.add_argument("--format", choices=("table", "json", "csv"), default="table")
    o = ps.add_parser("outcome", help="append a session's task success / cost to a results file")
    o.add_argument("results", metavar="RESULTS")
    o.add_argument("--session", required=True, metavar="ID")
    o.add_argument("--success", choices=("1", "0", "true", "false"), default=None)
    o.add_argument("--tokens", type=float, default=None)
    o.add_argument("--tool-calls", type=float, default=None)


def run(args: argparse.Namespace) -> int:
    if args.experiment_cmd == "outcome":
        from ...experiment.records import record_outcome

        success = None if args.success is None else args.success in ("1", "true")
        record_outcome(
            args.results, args.session, success=success, tokens=args.tokens, tool_calls=args.tool_calls
        )
        return 0
    if args.experiment_cmd != "report":
        sys.stderr.write("usage: planguard experiment {report,outcome} …\n")
        return 2
    if args.resamples < 0:
        sys.stderr.write("planguard experiment report: --resamples: expected an integer >= 0\n")
        return 2
    try:
        from ...experiment.analysis import analyze
        from ...experiment.format import to_csv, to_json, to_table
    except ImportError as exc:  # numpy missing
        sys.stderr.write(
            f"planguard experiment report needs numpy: pip install 'planguard-agents[experiment]' ({exc})\n"
        )
        return 2
    from ...experiment.records import read_results

    episodes, problems = read_results(args.results)
    for p in problems:
        sys.stderr.write(f"{p}\n")
    if not episodes:
        sys.stderr.write("planguard experiment report: no result records\n")
        return 1
    try:
        report = analyze(episodes, cluster=args.cluster, resamples=args.resamples, seed=args.seed)
    except ValueError as exc:
        sys.stderr.write(f"planguard experiment report: {exc}\n")
        return 1
    render = {"table": to_table, "json": to_json, "csv": to_csv}[args.format]
    sys.stdout.write(render(report))
    return 0
