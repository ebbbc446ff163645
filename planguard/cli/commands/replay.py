"""``planguard replay PATH... [--config FILE | --plan PRESET|FILE --rules VERSION] [--format F] [-o OUT]
[-j N] [--export otlp [--otlp-endpoint URL]]``

The output contract (``--format jsonl``: one object per trajectory, input order) is what acceptance is
measured through; keep its keys stable. ``n_steps``, ``step_roles`` and ``actions`` count the calls that ran;
calls the recording shows were denied are ``n_denied``/``denials``. With ``--config`` the config's whole
pipeline runs (plan, rules or declared phases, actions vocabulary, detectors, policies) and ``decisions``
lists what its policies decided, or would have decided, at each step.

``-j N`` replays on N cores (default: all): the corpus is cut into parts (files, and line ranges of large
JSON Lines files of one run per line), each replayed in a worker process with its own pipeline; records
come out in input order either way (see :mod:`planguard.offline.parallel`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import IO, TYPE_CHECKING, Any

from ..progress import RunProgress

if TYPE_CHECKING:
    from ...offline.parallel import Part
    from ...session import Pipeline

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
        "-j",
        "--jobs",
        type=int,
        default=0,
        metavar="N",
        help="worker processes (default: one per core; 1: this process only); output stays in input order",
    )
    p.add_argument(
        "--progress",
        action="store_true",
        help="draw the progress line (runs, bytes of input) on standard error even when it is no terminal",
    )
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
        **({"unjudged_calls": result.unjudged} if result.unjudged else {}),
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


@dataclass(frozen=True)
class _Recipe:
    """What a worker needs to build the pipeline and read its part (pickled to it)."""

    config: str | None
    plans: tuple[str, ...] | None
    rules: str | None
    diagnostics: bool
    source: str | None

    @property
    def recorded_plans(self) -> bool:
        """Without --config/--plan/--rules, a store session replays under the plan and rules it recorded."""
        return self.config is None and not self.plans and not self.rules


def _pipeline(recipe: _Recipe) -> Pipeline:
    """The recipe's pipeline. Raises ValueError or ConfigError."""
    from ...config import load_config
    from ...offline.replay import config_pipeline, replay_pipeline, resolve_plans
    from ...phases import DEFAULT_VERSION

    if recipe.config is not None:
        if recipe.plans or recipe.rules:
            raise ValueError("--config describes the plan and rules; leave out --plan and --rules")
        return config_pipeline(load_config(recipe.config))
    return replay_pipeline(
        resolve_plans(list(recipe.plans) if recipe.plans else None),
        recipe.rules or DEFAULT_VERSION,
        diagnostics=recipe.diagnostics,
    )


#: A worker's pipeline: built for its first part, reused for the next.
_worker_pipeline = lru_cache(maxsize=1)(_pipeline)

#: One input's outcome, as the output loop reads it: ("error", message, fatal) for a load error or note,
#: ("run", record, source, unobserved warning or None) for a replayed run.
_Outcome = tuple[Any, ...]


def _outcomes(items: Iterable[Any]) -> Iterator[_Outcome]:
    from ...offline.loaders import LoadError
    from ...unclassified import unobserved_reason

    for item in items:
        if isinstance(item, LoadError):
            yield ("error", str(item), item.fatal)
            continue
        s = item.summary
        unobserved = unobserved_reason(s.unclassified, s.unknown_tools, s.n_steps)
        if item.unjudged:
            unjudged = (
                f"session {item.trajectory.id!r}: {item.unjudged} call(s) were judged by argument patterns "
                "the recording kept no verdict for (it was stored without content under another config); "
                "their decisions under this config are not known and were taken as not matching"
            )
            unobserved = unjudged if unobserved is None else f"{unobserved}; {unjudged}"
        yield ("run", result_record(item), item.trajectory.source, unobserved)


def _replay_part(recipe: _Recipe, part: Part) -> list[_Outcome]:
    """A worker's job: one part of the corpus replayed, every outcome in input order."""
    from ...offline.parallel import iter_part
    from ...offline.replay import replay_items

    items = iter_part(part, source_format=recipe.source)
    replayed = replay_items(
        items,
        _worker_pipeline(recipe),
        keep_steps=True,
        recorded_plans=recipe.recorded_plans,
        diagnostics=recipe.diagnostics,
    )
    return list(_outcomes(replayed))


def _replayed(args: argparse.Namespace, recipe: _Recipe, pipeline: Pipeline) -> Iterator[_Outcome]:
    """Every input's outcome in input order: on ``--jobs`` workers when the corpus has several parts and
    nothing is exported (an exporter's spans and drops belong to this process), else here."""
    from ...offline.parallel import corpus_parts, default_jobs, map_parts
    from ...offline.replay import replay

    jobs = args.jobs if args.jobs > 0 else default_jobs()
    if jobs > 1 and pipeline.sinks == ():
        parts = corpus_parts(args.paths, source_format=args.source)
        for outcomes in map_parts(partial(_replay_part, recipe), parts, jobs):
            yield from outcomes
        return
    yield from _outcomes(
        replay(
            args.paths,
            pipeline,
            source_format=args.source,
            keep_steps=True,
            recorded_plans=recipe.recorded_plans,
            diagnostics=recipe.diagnostics,
        )
    )


def run(args: argparse.Namespace) -> int:
    from ...config import ConfigError
    from ...unclassified import logger as unclassified_logger
    from ..output import open_output

    recipe = _Recipe(
        args.config, tuple(args.plan) if args.plan else None, args.rules, not args.no_diagnostics, args.source
    )
    try:
        exporter, endpoint = _exporter(args)
        pipeline = _pipeline(recipe)
        if exporter is not None:
            pipeline = dataclasses.replace(pipeline, sinks=(exporter,))
        plans = pipeline.plans
    except (ValueError, ConfigError) as exc:
        print(f"planguard replay: {exc}", file=sys.stderr)
        return 2
    with open_output(args.output) as out:
        fmt = args.format or ("table" if out.isatty() else "jsonl")
        failed = replayed = noted = 0
        rows: list[dict[str, Any]] = []
        # Progress whenever a person watches standard error, whatever the output format: runs replayed, and
        # the input's bytes (a JSON Lines file holds many runs: counting those would parse it twice).
        shown = sys.stderr.isatty() or args.progress
        progress = RunProgress(args.paths if shown else None, force=args.progress)
        level = unclassified_logger.level
        unclassified_logger.setLevel(logging.ERROR)  # each file's warning below says it, naming the file
        try:
            for outcome in _replayed(args, recipe, pipeline):
                if outcome[0] == "error":
                    _, message, fatal = outcome
                    if fatal:
                        failed += 1
                    else:  # a LoadNote (a skipped compaction transcript, ...) only informs
                        noted += 1
                    progress.print_error(message)
                    continue
                _, record, source, unobserved = outcome
                replayed += 1
                progress.advance(record["id"], source)
                if unobserved is not None:  # a warning, not a failure: the run replayed
                    progress.print_warning(f"{source or record['id']}: {unobserved}")
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
    from ...sinks.otel import build_sinks
    from ...sinks.otel.config import TelemetryConfig
    from ...sinks.otel.env import export_settings
    from ...sinks.store.config import StoreConfig

    config = TelemetryConfig(otlp_endpoint=args.otlp_endpoint)
    settings = export_settings(config)
    if settings.sdk_disabled or not settings.traces.otlp:
        raise ValueError(
            "--export otlp needs an OTLP endpoint: --otlp-endpoint URL or OTEL_EXPORTER_OTLP_ENDPOINT "
            "(and OTEL_SDK_DISABLED/OTEL_TRACES_EXPORTER not turning it off)"
        )
    (sink,) = build_sinks(config, StoreConfig(enabled=False), recorded=True)
    return sink, settings.traces.endpoint


def _finish_export(sink: Any, runs: int, endpoint: str) -> None:
    sink.shutdown()  # flushes every span to the backend (bounded by the exporter's timeout)
    dropped = sink.drops.total
    print(
        f"planguard replay: exported {runs} run(s) over OTLP to {endpoint}"
        + (f" ({dropped} item(s) dropped: {dict(sink.drops.counts)})" if dropped else ""),
        file=sys.stderr,
    )


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
