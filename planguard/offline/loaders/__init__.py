"""Recorded agent runs -> :class:`Trajectory` objects of :class:`~planguard.events.ToolEvent`.

The offline half of planguard replays these through the same pipeline the live integrations feed::

    for item in iter_trajectories(["runs/"]):
        if isinstance(item, LoadError):
            log.warning("%s", item)        # "runs/x.jsonl:17: 'steps' is missing; expected ..."
            continue
        replay(item.events)

Formats (see :data:`FORMATS`; each is detected from the file's content, not its name):

* ``swe-agent-jsonl`` - planguard's shared corpus, one SWE-agent run per line (streamed).
* ``swe-agent-traj`` - SWE-agent ``.traj`` files, 0.x (legacy tools) and 1.x (function calling).
* ``swe-agent-demo`` - SWE-agent demonstrations (``history`` only; ``.traj`` JSON or ``.yaml``).
* ``mini-swe-agent`` - ``.traj.json`` message lists and ``{"info", "messages"}`` files.
* ``claude-code`` - Claude Code session JSONL; sub-agent transcripts become separate runs.
* ``openhands`` - OpenHands serialised event lists.
* ``openhands-output`` - OpenHands evaluation and resolver ``output.jsonl`` (one instance per line,
  streamed; V0 and V1 event histories).
* ``codex`` - Codex CLI rollout files (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``).
* ``gemini-cli`` - Gemini CLI chat recordings (``~/.gemini/tmp/<project>/chats/session-*.json[l]``).
* ``opencode-export`` - ``opencode export <sessionID>`` output (``{info, messages: [{info, parts}]}``).
* ``opencode`` - OpenCode's session storage, given as a directory (``~/.local/share/opencode/storage``),
  or its database (``~/.local/share/opencode/opencode.db``, opencode 1.1x and later).
* ``tau-bench`` - tau-bench results (``historical_trajectories/*.json``: a list of ``{task_id, reward,
  info, traj, trial}``), one run per task and trial, the conversation's turns kept.
* ``tau2-bench`` - tau2-bench simulation files (``{timestamp, info, tasks, simulations}``), one run per
  simulation; the simulated user's own tool calls are not the agent's steps.
* ``agentdojo`` - AgentDojo run logs (``runs/<pipeline>/<suite>/<user_task>/<attack>/<injection>.json``).
* ``planguard-store`` - planguard's own session store files (read by
  :mod:`planguard.offline.loaders.planguard_store`).
* ``generic`` - one JSON object per tool call (:mod:`planguard.offline.loaders.generic`; ``planguard
export``).

Bad input never raises out of :func:`iter_trajectories`: a malformed file or line becomes a yielded
:class:`LoadError` and loading carries on with the next line or file.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from ._base import STANDARD_META_KEYS, LoadError, LoadNote, Trajectory, checked_run
from ._detect import FAMILY, FORMATS, LINE_FORMATS, Sniff, json_problem, parse_document, sniff
from ._json import loads
from .agentdojo import load_agentdojo
from .claude_code import load_claude_code
from .codex import load_codex
from .gemini_cli import load_gemini_cli
from .generic import load_generic
from .mini_swe_agent import load_mini_document
from .opencode import (
    is_opencode_db,
    is_opencode_storage,
    load_opencode_db,
    load_opencode_export,
    load_opencode_session_file,
    load_opencode_storage,
)
from .openhands import load_event_document, load_output_record
from .planguard_store import trajectories_from_records
from .swe_agent import load_demo_document, load_jsonl_record, load_traj_document
from .tau2_bench import load_tau2
from .tau_bench import load_tau_bench

__all__ = [
    "FORMATS",
    "STANDARD_META_KEYS",
    "TRAJECTORY_SUFFIXES",
    "LoadError",
    "LoadNote",
    "Trajectory",
    "detect_format",
    "iter_line_range",
    "iter_trajectories",
    "iter_walked",
    "line_ranges",
    "load_trajectories",
    "trajectory_files",
]

#: File name endings a directory walk considers; anything else in a directory is not a trajectory.
#: Files named explicitly are always tried, whatever their name.
TRAJECTORY_SUFFIXES: tuple[str, ...] = (".jsonl", ".ndjson", ".json", ".traj", ".yaml", ".yml")
# Longest first, so "x.traj.json" loses ".traj.json" rather than only ".json".
_STEM_SUFFIXES = (".traj.json", ".traj.yaml", ".jsonl", ".ndjson", ".json", ".traj", ".yaml", ".yml")
_SKIPPED_DIRS = frozenset({"__pycache__", "node_modules"})

SkipCallback = Callable[[Path, str], None]
_DocumentLoader = Callable[[Any, str, str], Trajectory]
_SessionLineLoader = Callable[
    [Iterable[tuple[int, Any] | LoadError], str, str], Iterator[Trajectory | LoadError]
]
#: Line formats that hold one session per file (read whole, not record by record).
_SESSION_LINE_LOADERS: dict[str, _SessionLineLoader] = {
    "claude-code": load_claude_code,
    "codex": load_codex,
    "gemini-cli": load_gemini_cli,
}
#: Benchmark results files: one document holding many runs.
_RESULTS_LOADERS: dict[str, Callable[[Any, str], Iterator[Trajectory | LoadError]]] = {
    "tau-bench": load_tau_bench,
    "tau2-bench": load_tau2,
    "opencode-export": load_opencode_export,
}
_DOCUMENT_LOADERS: dict[str, _DocumentLoader] = {
    "swe-agent-traj": load_traj_document,
    "swe-agent-demo": load_demo_document,
    "mini-swe-agent": load_mini_document,
    "openhands": load_event_document,
    "agentdojo": load_agentdojo,
}


def detect_format(path: str | os.PathLike[str]) -> str:
    """The format of one file, from its content. Raises :class:`LoadError` when the file cannot be read
    or is not a trajectory of any known format."""
    target = Path(path)
    try:
        found = sniff(target)
    except OSError as exc:
        raise LoadError(
            str(target), f"cannot read file ({exc.strerror or exc}); expected a readable trajectory"
        ) from None
    if found.format is None:
        raise LoadError(
            str(target), f"not a recognised trajectory: {found.reason}; expected one of {', '.join(FORMATS)}"
        )
    return found.format


def iter_trajectories(
    paths: Iterable[str | os.PathLike[str]] | str | os.PathLike[str],
    *,
    source_format: str | None = None,
    on_skip: SkipCallback | None = None,
) -> Iterator[Trajectory | LoadError]:
    """Yield every trajectory found in ``paths`` (files or directories), in input order.

    Directories are walked recursively in sorted order, skipping hidden entries, files whose names do
    not end in :data:`TRAJECTORY_SUFFIXES`, and well-formed files that are not trajectories (a labels
    file, a config); ``on_skip(path, reason)`` hears about the latter. JSON Lines are streamed, so a
    corpus never has to fit in memory. ``source_format`` forces a format for files whose content does
    not reveal it (within one producer the detected layout still wins, e.g. ``"openhands"`` on an
    ``output.jsonl`` reads it as ``openhands-output``).
    """
    if source_format is not None and source_format not in FORMATS:
        raise ValueError(f"unknown source_format {source_format!r}; expected one of {', '.join(FORMATS)}")
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    return _iterate(paths, source_format, on_skip)


#: Line formats whose every line is a run of its own: a file of them can be read in line ranges, apart.
RUN_PER_LINE_FORMATS = frozenset({"swe-agent-jsonl", "openhands-output"})


def line_ranges(
    path: str | os.PathLike[str], part_bytes: int, *, source_format: str | None = None
) -> Iterator[tuple[int, int, int]] | None:
    """Where a JSON Lines file of one run per line can be cut into parts of about ``part_bytes``: each
    part's (start byte, end byte, first line number), cut at line ends; ``None`` when the file is not one
    (other formats are read whole) or is no larger than a part. The file is read once, a block at a time,
    as the parts are taken: the first part can be replayed while the rest of a large file is still cut."""
    target = Path(path)
    try:
        size = target.stat().st_size
        if size <= part_bytes or _format_of(target, source_format) not in RUN_PER_LINE_FORMATS:
            return None
    except (OSError, LoadError):
        return None  # read whole: the error is reported (once) by the whole file's read
    return _cut_at_line_ends(target, part_bytes, size)


def _cut_at_line_ends(target: Path, part_bytes: int, size: int) -> Iterator[tuple[int, int, int]]:
    start = at = 0  # the current part's first byte; the block's first byte
    line = first = 1  # the line at ``done`` in the block; the current part's first line
    try:
        with target.open("rb") as handle:
            while block := handle.read(1 << 20):
                done = 0
                # Cut at the first line end past ``part_bytes`` into the part (if this block has one).
                while (end := block.find(b"\n", max(start + part_bytes - at, done))) >= 0:
                    cut = end + 1
                    line += block.count(b"\n", done, cut)
                    yield start, at + cut, first
                    start, first, done = at + cut, line, cut
                line += block.count(b"\n", done)
                at += len(block)
    except OSError:
        # The rest as one range: reading it reports the error (once), after the runs before it.
        at = max(at, size, start + 1)
    if start < at:
        yield start, at, first


def iter_line_range(
    path: str | os.PathLike[str], start: int, end: int, first_line: int, *, source_format: str | None = None
) -> Iterator[Trajectory | LoadError]:
    """The runs on the lines from byte ``start`` (line ``first_line``) to byte ``end`` of a file
    :func:`line_ranges` cut: what :func:`iter_trajectories` yields for those lines, line numbers included."""
    target = Path(path)
    try:
        found = sniff(target)
        fmt = _forced(found.format, source_format)
        if fmt not in RUN_PER_LINE_FORMATS:
            raise LoadError(str(target), f"not a file of one run per line ({fmt}); read it whole")
        yield from _load_lines(target, fmt, found, _JsonLines(target, start, end, first_line))
    except LoadError as exc:
        yield exc
    except OSError as exc:
        yield LoadError(
            str(target), f"cannot read file ({exc.strerror or exc}); expected a readable trajectory"
        )


def iter_walked(
    path: str | os.PathLike[str], *, source_format: str | None = None
) -> Iterator[Trajectory | LoadError]:
    """The runs of one input :func:`trajectory_files` found walking a directory, read as the walk reads it
    (a well-formed file that is not a trajectory is skipped, not an error)."""
    target = Path(path)
    storage = is_opencode_storage(target) if target.is_dir() else None
    if storage is not None:
        yield from load_opencode_storage(storage)
    else:
        yield from _load_file(target, source_format, None, explicit=False)


def _format_of(path: Path, source_format: str | None) -> str | None:
    return _forced(sniff(path).format, source_format)


def _forced(fmt: str | None, source_format: str | None) -> str | None:
    """The format a file is read as: ``source_format`` when the content does not say, or says another
    producer's."""
    if source_format is not None and (fmt is None or FAMILY[fmt] != FAMILY[source_format]):
        return source_format
    return fmt


def load_trajectories(
    paths: Iterable[str | os.PathLike[str]] | str | os.PathLike[str], *, source_format: str | None = None
) -> tuple[list[Trajectory], list[LoadError]]:
    """Everything :func:`iter_trajectories` yields, split into runs and errors (for small inputs)."""
    runs: list[Trajectory] = []
    errors: list[LoadError] = []
    for item in iter_trajectories(paths, source_format=source_format):
        if isinstance(item, LoadError):
            errors.append(item)
        else:
            runs.append(item)
    return runs, errors


def trajectory_files(paths: Iterable[str | os.PathLike[str]]) -> Iterator[Path]:
    """The files :func:`iter_trajectories` would open for ``paths``, without opening them (e.g. for a
    progress total): explicit files as given, directories walked as it walks them; missing paths skipped."""
    for given in paths:
        target = Path(given)
        if target.is_dir():
            yield from _walk(target)
        elif target.exists():
            yield target


def run_id_from_name(name: str) -> str:
    lowered = name.lower()
    for suffix in _STEM_SUFFIXES:
        if lowered.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


# --------------------------------------------------------------------------------------------------


def _iterate(
    paths: Iterable[Any], source_format: str | None, on_skip: SkipCallback | None
) -> Iterator[Trajectory | LoadError]:
    for given in paths:
        try:
            target = Path(given)
            is_dir = target.is_dir()
            exists = is_dir or target.exists()
        except (TypeError, ValueError, OSError) as exc:
            yield LoadError(str(given), f"not a usable path ({exc}); expected a file or directory path")
            continue
        if is_dir:
            for path in _walk(target):
                storage = is_opencode_storage(path) if path.is_dir() else None
                if storage is not None:
                    yield from load_opencode_storage(storage)
                else:
                    yield from _load_file(path, source_format, on_skip, explicit=False)
        elif exists and source_format in (None, "opencode") and is_opencode_db(target):
            yield from load_opencode_db(target)
        elif exists:
            yield from _load_file(target, source_format, on_skip, explicit=True)
        else:
            yield LoadError(
                str(target), "no such file or directory; expected a trajectory file or a directory"
            )


def _walk(root: Path) -> Iterator[Path]:
    """The trajectory files under ``root``, and OpenCode storage directories (read as one input each)."""
    if is_opencode_storage(root) is not None:
        yield root
        return
    try:
        entries = sorted(os.scandir(root), key=lambda entry: entry.name)
    except OSError:
        return
    for entry in entries:
        if entry.name.startswith(".") or entry.name in _SKIPPED_DIRS:
            continue
        try:
            # Symlinked directories are not followed: a link back up the tree would never end.
            if entry.is_dir(follow_symlinks=False):
                yield from _walk(Path(entry.path))
            elif entry.is_file() and entry.name.lower().endswith(TRAJECTORY_SUFFIXES):
                yield Path(entry.path)
        except OSError:
            continue


def _load_file(
    path: Path, source_format: str | None, on_skip: SkipCallback | None, *, explicit: bool
) -> Iterator[Trajectory | LoadError]:
    shown = str(path)
    try:
        found = sniff(path)
    except LoadError as exc:
        yield exc
        return
    except OSError as exc:
        yield LoadError(shown, f"cannot read file ({exc.strerror or exc}); expected a readable trajectory")
        return
    except Exception as exc:  # bad input must become a LoadError, whatever broke
        yield LoadError(shown, f"cannot sniff format ({type(exc).__name__}: {exc})")
        return

    fmt = _forced(found.format, source_format)
    if fmt is None:
        if explicit:
            yield LoadError(
                shown, f"not a recognised trajectory: {found.reason}; expected one of {', '.join(FORMATS)}"
            )
        elif on_skip is not None:
            on_skip(path, found.reason)
        return

    try:
        if fmt in LINE_FORMATS:
            yield from _load_lines(path, fmt, found)
        elif fmt == "opencode":
            document = found.document if found.has_document else parse_document(path)
            yield from load_opencode_session_file(path, document if isinstance(document, dict) else {})
        elif fmt in _RESULTS_LOADERS:  # one file, many runs
            document = found.document if found.has_document else parse_document(path)
            yield from _RESULTS_LOADERS[fmt](document, shown)
        else:
            document = found.document if found.has_document else parse_document(path)
            run = _DOCUMENT_LOADERS[fmt](document, shown, run_id_from_name(path.name))
            if found.truncated is not None:
                yield found.truncated
                run.meta["partial"] = True
            yield from checked_run(run, document, shown, None)
    except LoadError as exc:
        yield exc
    except OSError as exc:
        yield LoadError(shown, f"cannot read file ({exc.strerror or exc}); expected a readable trajectory")
    except Exception as exc:  # a loader bug on odd input must not end the whole replay
        yield LoadError(shown, f"cannot load as {fmt} ({type(exc).__name__}: {exc})")


def _load_lines(
    path: Path, fmt: str, found: Sniff, lines: _JsonLines | None = None
) -> Iterator[Trajectory | LoadError]:
    shown = str(path)
    # A pretty-printed single record (e.g. one output.jsonl instance saved as .json) was already parsed.
    records: Iterable[tuple[int, Any] | LoadError]
    lines = lines if lines is not None else _JsonLines(path)
    records = [(1, found.document)] if found.has_document else lines
    if fmt in _SESSION_LINE_LOADERS:
        # One session per file: a file whose last line is cut short (still being written, or a copy that
        # stopped) still gives its run, marked partial beside the line's error.
        for loaded in _SESSION_LINE_LOADERS[fmt](records, shown, run_id_from_name(path.name)):
            if isinstance(loaded, Trajectory) and lines.last_line_failed:
                loaded.meta["partial"] = True
            yield loaded
        return
    if fmt == "planguard-store":
        yield from trajectories_from_records(records, shown, run_id_from_name(path.name))
        return
    if fmt == "generic":
        yield from load_generic(records, shown)
        return
    load_record = load_jsonl_record if fmt == "swe-agent-jsonl" else load_output_record
    for item in records:
        if isinstance(item, LoadError):
            yield item
            continue
        line, record = item
        try:
            yield from checked_run(load_record(record, shown, line), record, shown, line)
        except LoadError as exc:
            yield exc
        except Exception as exc:  # one odd record must not hide the rest of the corpus
            yield LoadError(shown, f"cannot load record as {fmt} ({type(exc).__name__}: {exc})", line)


class _JsonLines:
    """The ``(line, record)`` items of a JSON Lines file (a LoadError for a line that is not JSON), read
    as they are iterated; ``last_line_failed`` tells afterwards whether the file's last line was cut."""

    def __init__(self, path: Path, start: int = 0, end: int | None = None, first_line: int = 1) -> None:
        self.path = path
        self.last_line_failed = False
        self.range = start, end, first_line  # (the whole file by default)

    def __iter__(self) -> Iterator[tuple[int, Any] | LoadError]:
        shown = str(self.path)
        start, end, first_line = self.range
        with self.path.open("rb") as handle:
            handle.seek(start)
            at = start
            for line, raw in enumerate(handle, first_line):
                if end is not None:
                    if at >= end:
                        break
                    at += len(raw)
                if raw.isspace():
                    continue
                try:
                    record = loads(raw)
                except (ValueError, RecursionError) as exc:
                    self.last_line_failed = True
                    yield LoadError(
                        shown, f"invalid JSON ({json_problem(exc)}); expected one JSON object per line", line
                    )
                    continue
                self.last_line_failed = False
                yield line, record
