"""``planguard replay PATH... [--config FILE | --plan PRESET|FILE --rules VERSION] [--format F] [-o OUT]
[--export otlp [--otlp-endpoint URL]]``

The output contract (``--format jsonl``: one object per trajectory, input order) is what acceptance is
measured through; keep its keys stable. ``n_steps``, ``step_roles`` and ``actions`` count the calls that ran;
calls the recording shows were denied are ``n_denied``/``denials``. With ``--config`` the config's whole
pipeline runs (plan, rules or declared phases, actions vocabulary, detectors, policies) and ``decisions``
lists what its policies decided, or would have decided, at each step.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections import Counter
from typing import IO, Any

__all__ = ["register", "run", "result_record"]


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "replay",
        help="replay recorded trajectories through the monitoring pipeline",
        description="Classify every step of recorded agent runs into plan phases and score plan compliance.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="trajectory files or directories (recursive)")
    p.add_argument(
        "--plan",
        action="append",
        metavar="PRESET|FILE",
        help="plan to score against (repeatable); 'paper-settings' scores the paper's 7 settings "
        "(default: the standard plan)",
    )
    p.add_argument(
        "--rules",
        help="phase rules: live (default; PHASES_LIVE.md), v351278e, v8ec988e (the paper); corrected = live",
    )
    p.add_argument(
        "--config",
        metavar="FILE",
        help="run the pipeline this planguard config describes (plan, rules, actions, detectors, policies); "
        "not with --plan/--rules",
    )
    p.add_argument(
        "--format", choices=("table", "jsonl"), help="output format (default: table on a terminal)"
    )
    p.add_argument("--source", metavar="FORMAT", help="input format, if detection from content is not wanted")
    p.add_argument(
        "--no-diagnostics", action="store_true", help="phases and metrics only (no actions/detectors)"
    )
    p.add_argument("-o", "--output", metavar="OUT", help="write to OUT instead of standard output")
    p.add_argument(
        "--export",
        choices=("otlp",),
        help="also send each replayed run to an OpenTelemetry backend as spans (with the recording's own "
        "timestamps where it has them), configured by the standard OTEL_EXPORTER_OTLP_* variables",
    )
    p.add_argument(
        "--otlp-endpoint",
        metavar="URL",
        help="OTLP base URL for --export otlp (default: OTEL_EXPORTER_OTLP_ENDPOINT)",
    )
    p.set_defaults(func=run)


def result_record(result: Any) -> dict[str, Any]:
    """One trajectory's replay as the stable JSON record."""
    from ...actions import action_dict

    t, s = result.trajectory, result.summary
    ran = result.ran
    denied = result.denied
    return {
        "id": t.id,
        "source": t.source,
        "format": t.format,
        "meta": {k: v for k, v in t.meta.items() if v is not None and isinstance(v, (str, int, float, bool))},
        "n_steps": len(ran),
        "n_denied": len(denied),
        "step_roles": [list(step.roles) for step in ran],
        "letters": s.letters,
        "langutory": s.langutory,
        "metrics": {name: sc.as_dict() for name, sc in s.scores.items()},
        "actions": [action_dict(step) for step in ran] if ran and ran[0].action is not None else [],
        "denials": [{"step": step.index, "tool": step.event.tool} for step in denied],
        "decisions": result.decisions,
        "findings": [
            {
                "detector": f.detector,
                "first_step": f.first_step,
                "last_step": f.last_step,
                "evidence": f.evidence,
                "at_end": f.at_end,
            }
            for f in s.findings
        ],
    }


def run(args: argparse.Namespace) -> int:
    from ...config import ConfigError, load_config
    from ...offline.loaders import LoadError
    from ...offline.replay import config_pipeline, replay, replay_pipeline, resolve_plans
    from ...phases import DEFAULT_VERSION
    from ...unclassified import logger as unclassified_logger
    from ...unclassified import unobserved_reason
    from ..output import open_output

    try:
        exporter, endpoint = _exporter(args)
        sinks = [] if exporter is None else [exporter]
        if args.config is not None:
            if args.plan or args.rules:
                raise ValueError("--config describes the plan and rules; leave out --plan and --rules")
            pipeline = config_pipeline(load_config(args.config), sinks=sinks)
            plans = pipeline.plans
        else:
            plans = resolve_plans(args.plan)
            pipeline = replay_pipeline(
                plans, args.rules or DEFAULT_VERSION, diagnostics=not args.no_diagnostics, sinks=sinks
            )
    except (ValueError, ConfigError) as exc:
        print(f"planguard replay: {exc}", file=sys.stderr)
        return 2
    with open_output(args.output) as out:
        fmt = args.format or ("table" if out.isatty() else "jsonl")
        failed = replayed = noted = 0
        rows: list[dict[str, Any]] = []
        # Progress whenever a person watches standard error, whatever the output format; its total is the
        # number of input files (a JSON Lines file holds many runs: counting those would read it all twice).
        progress = _Progress(args.paths if sys.stderr.isatty() else None)
        level = unclassified_logger.level
        unclassified_logger.setLevel(logging.ERROR)  # each file's warning below says it, naming the file
        try:
            # Without --config/--plan/--rules, a store session replays under the plan and rules it recorded.
            recorded = args.config is None and not args.plan and not args.rules
            for item in replay(
                args.paths,
                pipeline,
                source_format=args.source,
                keep_steps=True,
                recorded_plans=recorded,
                diagnostics=not args.no_diagnostics,
            ):
                if isinstance(item, LoadError):
                    if item.fatal:
                        failed += 1
                    else:  # a LoadNote (a skipped compaction transcript, ...) only informs
                        noted += 1
                    progress.print_error(str(item))
                    continue
                record = result_record(item)
                replayed += 1
                progress.advance(record["id"], item.trajectory.source)
                s = item.summary
                unobserved = unobserved_reason(s.unclassified, s.unknown_tools, s.n_steps)
                if unobserved is not None:  # a warning, not a failure: the run replayed
                    progress.print_warning(f"{item.trajectory.source or record['id']}: {unobserved}")
                if fmt == "jsonl":
                    out.write(json.dumps(record, ensure_ascii=False) + "\n")
                else:
                    rows.append(record)
        finally:
            unclassified_logger.setLevel(level)
            progress.close()
            if exporter is not None:
                _finish_export(exporter, replayed, endpoint)
            if fmt == "table":
                _print_table(rows, [p.name for p in plans if p.scored], out)
    if failed:
        print(f"planguard replay: {failed} input(s) failed", file=sys.stderr)
    elif not replayed and not noted:  # nothing at all was found to read
        print(
            f"planguard replay: no trajectories found in {', '.join(args.paths)} (expected trajectory files: "
            "*.jsonl, *.json, *.traj, *.yaml, or directories holding them)",
            file=sys.stderr,
        )
        return 1
    return 1 if failed else 0


def _exporter(args: argparse.Namespace) -> tuple[Any, str]:
    """The OpenTelemetry sink for ``--export otlp`` and where it sends (None without the option); a
    ValueError when no OTLP endpoint is configured."""
    if getattr(args, "export", None) != "otlp":
        return None, ""
    from ...sinks.store.config import StoreConfig
    from ...sinks.telemetry import build_sinks
    from ...sinks.telemetry.config import TelemetryConfig
    from ...sinks.telemetry.settings import export_settings

    config = TelemetryConfig(otlp_endpoint=args.otlp_endpoint)
    settings = export_settings(config)
    if settings.sdk_disabled or not settings.traces.otlp:
        raise ValueError(
            "--export otlp needs an OTLP endpoint: --otlp-endpoint URL or OTEL_EXPORTER_OTLP_ENDPOINT "
            "(and OTEL_SDK_DISABLED/OTEL_TRACES_EXPORTER not turning it off)"
        )
    (sink,) = build_sinks(config, StoreConfig(enabled=False))
    return sink, settings.traces.endpoint


def _finish_export(sink: Any, runs: int, endpoint: str) -> None:
    sink.shutdown()  # flushes every span to the backend (bounded by the exporter's timeout)
    dropped = sink.drops.total
    print(
        f"planguard replay: exported {runs} run(s) over OTLP to {endpoint}"
        + (f" ({dropped} item(s) dropped: {dict(sink.drops.counts)})" if dropped else ""),
        file=sys.stderr,
    )


class _Progress:
    """A progress line on standard error for long replays; errors print above it."""

    def __init__(self, paths: list[str] | None) -> None:
        """``paths``: the inputs, to count their files for the total; ``None``: no progress line."""
        self._progress: Any = None
        self._runs = 0
        self._files: set[str] = set()
        if paths is not None:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn

            from ...offline.loaders import trajectory_files

            total = sum(1 for _ in trajectory_files(paths))
            self._progress = Progress(
                SpinnerColumn(),
                TextColumn("replayed"),
                MofNCompleteColumn(),
                TextColumn("files"),
                BarColumn(),
                TextColumn("{task.fields[runs]} runs · {task.description}"),
                console=Console(file=sys.stderr),
                transient=True,
            )
            self._progress.start()
            self._task = self._progress.add_task("", total=total, runs=0)

    def advance(self, run_id: str, source: str) -> None:
        if self._progress is not None:
            self._runs += 1
            # A trajectory's source is "path" or, for a line of a JSON Lines file, "path:line".
            self._files.add(source.rsplit(":", 1)[0] if source[-1:].isdigit() else source)
            self._progress.update(self._task, completed=len(self._files), runs=self._runs, description=run_id)

    def print_error(self, message: str) -> None:
        if self._progress is not None:
            self._progress.console.print(f"[red]error[/red] {message}", highlight=False, markup=True)
        else:
            print(message, file=sys.stderr)

    def print_warning(self, message: str) -> None:
        if self._progress is not None:
            self._progress.console.print(f"[yellow]warning[/yellow] {message}", highlight=False, markup=True)
        else:
            print(f"warning: {message}", file=sys.stderr)

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()


def _print_table(rows: list[dict[str, Any]], plan_names: list[str], out: IO[str]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(file=out, soft_wrap=False)
    table = Table(title=f"planguard replay · {len(rows)} runs", title_justify="left")
    table.add_column("run", overflow="fold", max_width=48)
    table.add_column("steps", justify="right")
    table.add_column("denied", justify="right")
    table.add_column("letters", overflow="ellipsis", max_width=40)
    single = len(plan_names) == 1
    if single:
        for col in ("PPC", "POC", "PPF", "PC"):
            table.add_column(col, justify="right")
    else:
        for name in plan_names:
            table.add_column(f"PC {name}", justify="right")
    table.add_column("findings", overflow="fold", max_width=30)
    for r in rows:
        metrics = r["metrics"]
        cells = [r["id"], str(r["n_steps"]), str(r["n_denied"]), r["letters"] or "—"]
        if single:
            m = metrics.get(plan_names[0], {})
            cells += [f"{m.get(k, 0.0):.3f}" for k in ("PPC", "POC", "PPF", "PC")]
        else:
            cells += [f"{metrics.get(n, {}).get('PC', 0.0):.3f}" for n in plan_names]
        kinds = Counter(f["detector"] for f in r["findings"])
        cells.append(", ".join(f"{k}×{v}" if v > 1 else k for k, v in kinds.items()) or "")
        table.add_row(*cells)
    console.print(table)
    if rows and plan_names:
        mean = sum(r["metrics"].get(plan_names[0], {}).get("PC", 0.0) for r in rows) / len(rows)
        console.print(f"mean PC ({plan_names[0]}): {mean:.3f}")
