"""Plan-experiment tables in the report.

Built in: :func:`experiment_result_tables` reads the result files of :mod:`planguard.experiment`
(``ResultRecorder`` JSONL, ``type: result``/``outcome`` lines, read with ``read_results``) into an
endpoint-distribution table per condition, plus the contrasts of ``planguard.experiment.analysis.analyze``
when numpy is installed. Other result formats plug in as a *reader* that turns a file into tables::

    from planguard.offline.report.experiments import register_experiment_reader

    def read(path: Path) -> list[ExperimentTable] | None:   # None: "not my file"
        ...
    register_experiment_reader(read)

A table is ``{"title": str, "columns": [str, ...], "rows": [[cell, ...], ...], "note": str}`` with cells
that are str, int, float or None. Files a reader claims are not replayed as trajectories.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from .records import first_object

__all__ = [
    "ExperimentReader",
    "ExperimentTable",
    "experiment_result_tables",
    "read_experiments",
    "register_experiment_reader",
]

ExperimentTable = dict[str, Any]
ExperimentReader = Callable[[Path], "list[ExperimentTable] | None"]
_READERS: list[ExperimentReader] = []


def register_experiment_reader(reader: ExperimentReader) -> None:
    if reader not in _READERS:
        _READERS.append(reader)


def experiment_result_tables(path: Path) -> list[ExperimentTable] | None:
    """Tables of a ``planguard.experiment`` result file; ``None`` when the file is not one."""
    first = first_object(path)
    if not (
        isinstance(first, dict)
        and first.get("type") == "result"
        and "session_id" in first
        and "condition" in first
        and "endpoint" in first
    ):
        return None
    from ...experiment import ENDPOINTS, read_results
    from ...experiment.config import CONDITIONS

    episodes, problems = read_results([path])
    name = str(first.get("experiment") or path.name)
    conds = [c for c in CONDITIONS if any(e.condition == c for e in episodes)]
    rows: list[list[Any]] = []
    for c in conds:
        eps = [e for e in episodes if e.condition == c]
        cells: list[Any] = [c, len(eps)]
        for ep in ENDPOINTS:
            k = sum(e.endpoint == ep for e in eps)
            cells.append(f"{100 * k / len(eps):.1f}% ({k})")
        succ = [e.success for e in eps if e.success is not None]
        calls = [e.tool_calls for e in eps if e.tool_calls is not None]
        cells.append(sum(succ) / len(succ) if succ else None)
        cells.append(sum(calls) / len(calls) if calls else None)
        rows.append(cells)
    tables: list[ExperimentTable] = [
        {
            "title": f"Plan experiment {name}: endpoint distribution by condition",
            "columns": [
                "condition",
                "episodes",
                *[e.value for e in ENDPOINTS],
                "success rate",
                "mean tool calls",
            ],
            "rows": rows,
            "note": f"{len(episodes)} episodes from {path}"
            + (f"; {len(problems)} unreadable lines" if problems else ""),
        }
    ]
    try:
        from ...experiment.analysis import analyze

        report = analyze(episodes, resamples=2000)
        tables.append(
            {
                "title": f"Plan experiment {name}: contrasts (95% cluster-bootstrap interval)",
                "columns": ["estimate", "value", "lo", "hi", "unit", "tasks"],
                "rows": [[e.name, e.value, e.lo, e.hi, e.unit, e.n_tasks] for e in report.estimates],
                "note": "; ".join(report.warnings),
            }
        )
    except Exception as exc:  # numpy missing or too few episodes: the descriptive table still shows
        tables[0]["note"] += f"; contrasts not computed ({type(exc).__name__}: {exc})"
    return tables


def _valid(table: Any) -> bool:
    return (
        isinstance(table, dict)
        and isinstance(table.get("title"), str)
        and isinstance(table.get("columns"), list)
        and isinstance(table.get("rows"), list)
    )


def read_experiments(files: Iterable[Path]) -> tuple[list[ExperimentTable], list[Path], list[str]]:
    """(tables, files no reader claimed, errors). A failing reader is reported, not raised."""
    readers = [*_READERS, experiment_result_tables]
    tables: list[ExperimentTable] = []
    rest: list[Path] = []
    errors: list[str] = []
    for path in files:
        claimed = False
        for reader in readers if path.is_file() else ():  # (a directory is OpenCode storage, replayed)
            try:
                got = reader(path)
            except Exception as exc:  # a reader bug must not lose the rest of the report
                errors.append(
                    f"{path}: experiment reader {getattr(reader, '__name__', reader)} failed "
                    f"({type(exc).__name__}: {exc})"
                )
                continue
            if got is not None:
                claimed = True
                for t in got:
                    if _valid(t):
                        tables.append(t)
                    else:
                        errors.append(f"{path}: experiment table without title/columns/rows; skipped")
                break
        if not claimed:
            rest.append(path)
    return tables, rest, errors
