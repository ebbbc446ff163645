"""Replay on every core: a corpus cut into parts, each replayed in a worker process, results in input order.

A part is a run of input files, or a line range of one large JSON Lines file of one run per line (the
shared SWE-agent corpus, OpenHands ``output.jsonl``): cut at about :data:`PART_BYTES` of input, so a
worker holds one part's runs and results at a time however large the corpus, and one big file spreads over
every core. At most two parts per worker are in flight: results stream out in input order, while the
memory the parent holds stays bounded.

Workers are spawned, not forked: a fork copies the caller's threads' locks and signal handlers (a worker
that inherited a server's SIGTERM handler outlived the pool's end). Input small enough for one part is
read in the calling process, without a pool.
"""

from __future__ import annotations

import multiprocessing
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from .loaders import (
    LoadError,
    Trajectory,
    iter_line_range,
    iter_trajectories,
    iter_walked,
    line_ranges,
    trajectory_files,
)

__all__ = ["PART_BYTES", "Piece", "corpus_parts", "default_jobs", "iter_part", "map_parts"]

#: Input per part: large enough that a worker's start and a part's hand-over are noise beside replaying
#: it (~4 MB is about 80 SWE-agent runs), small enough that a worker's memory stays a few tens of MB.
PART_BYTES = 4 << 20

R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class Piece:
    """One input of a part: a path as given (a file, a directory or a store read whole), or the line
    range ``[start, end)`` of a file, whose first line is ``first_line``."""

    path: str
    start: int = 0
    end: int | None = None
    first_line: int = 1
    walked: bool = False  # found walking a directory: read as the walk reads it


Part = tuple[Piece, ...]


def default_jobs() -> int:
    """Worker processes by default: every core this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def corpus_parts(
    paths: Iterable[str | os.PathLike[str]],
    *,
    source_format: str | None = None,
    part_bytes: int | None = None,
) -> Iterator[Part]:
    """The parts of a corpus, in input order: files gathered until a part holds ``part_bytes``, a large
    file of one run per line cut into line ranges. Directories are walked as :func:`iter_trajectories`
    walks them; what is not a file (a missing path, an OpenCode storage) is a piece of its own, read as
    ``iter_trajectories`` reads it. ``part_bytes`` defaults to :data:`PART_BYTES`."""
    part_bytes = part_bytes or PART_BYTES
    part: list[Piece] = []
    size = 0
    for given in paths:
        target = Path(given)
        files = list(trajectory_files([target])) if target.is_dir() else [target]
        for path in files:
            ranges = line_ranges(path, part_bytes, source_format=source_format) if path.is_file() else None
            if ranges is not None:
                if part:
                    yield tuple(part)
                    part, size = [], 0
                for start, end, first_line in ranges:
                    yield (Piece(str(path), start, end, first_line, walked=path is not target),)
                continue
            part.append(Piece(str(given)) if path is target else Piece(str(path), walked=True))
            size += path.stat().st_size if path.is_file() else 0
            if size >= part_bytes:
                yield tuple(part)
                part, size = [], 0
    if part:
        yield tuple(part)


def iter_part(part: Sequence[Piece], *, source_format: str | None = None) -> Iterator[Trajectory | LoadError]:
    """What :func:`iter_trajectories` yields for the part's inputs."""
    for piece in part:
        if piece.end is not None:
            yield from iter_line_range(
                piece.path, piece.start, piece.end, piece.first_line, source_format=source_format
            )
        elif piece.walked:
            yield from iter_walked(piece.path, source_format=source_format)
        else:
            yield from iter_trajectories([piece.path], source_format=source_format)


def map_parts(work: Callable[[Part], R], parts: Iterable[Part], jobs: int) -> Iterator[R]:
    """``work(part)`` for every part, in input order: in ``jobs`` spawned worker processes when there is
    more than one part (``work`` must then pickle: a module-level function or a ``functools.partial`` of
    one), else here. At most ``2 * jobs`` parts are in flight."""
    it = iter(parts)
    first = next(it, None)
    if first is None:
        return
    second = next(it, None)
    if second is None or jobs <= 1:
        yield work(first)
        if second is not None:
            yield work(second)
            for part in it:
                yield work(part)
        return
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(jobs, mp_context=spawn) as pool:
        pending: deque[Future[R]] = deque([pool.submit(work, first), pool.submit(work, second)])
        for part in it:
            if len(pending) >= 2 * jobs:
                yield pending.popleft().result()
            pending.append(pool.submit(work, part))
        while pending:
            yield pending.popleft().result()
