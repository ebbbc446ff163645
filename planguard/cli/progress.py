"""The progress line of the commands that replay many runs: runs done and the input's bytes."""

from __future__ import annotations

import sys
from typing import IO, Any

__all__ = ["RunProgress"]


class RunProgress:
    """A progress line on standard error for long replays (``replay``, ``report``); errors print above it.

    It counts runs and measures the input in bytes: a file is done once a run of the next one comes, and
    within a JSON Lines file whose runs name their line (``path:line``: SWE-agent, OpenHands) the bar moves
    with the line reached, so one large file does not show a full bar from its first run (the lines are
    counted by a plain read running ahead of the replay, never parsed twice)."""

    def __init__(self, paths: list[str] | None, *, force: bool = False) -> None:
        """``paths``: the inputs, to measure their files for the total; ``None``: no progress line.
        ``force``: drawn even when standard error is no terminal (``--progress``)."""
        self._progress: Any = None
        self._runs = 0
        self._sizes: dict[str, int] = {}
        self._done = 0  # bytes of the files finished
        self._current: str | None = None
        self._reader: IO[bytes] | None = None  # the current file, read as far as the line reached
        self._line = 0
        self._offset = 0
        if paths is not None:
            from rich.console import Console
            from rich.progress import BarColumn, DownloadColumn, Progress, SpinnerColumn, TextColumn

            from ..offline.loaders import trajectory_files

            for path in trajectory_files(paths):
                self._sizes[str(path)] = path.stat().st_size
            self._progress = Progress(
                SpinnerColumn(),
                TextColumn("replayed {task.fields[runs]} runs"),
                BarColumn(),
                DownloadColumn(),
                TextColumn("· {task.description}"),
                console=Console(file=sys.stderr, force_terminal=force or None),
                transient=True,
            )
            self._progress.start()
            self._task = self._progress.add_task("", total=sum(self._sizes.values()) or 1, runs=0)

    def advance(self, run_id: str, source: str) -> None:
        if self._progress is None:
            return
        self._runs += 1
        # A trajectory's source is "path" or, for a line of a JSON Lines file, "path:line".
        path, _, line = source.rpartition(":") if source[-1:].isdigit() else (source, "", "")
        if path != self._current:
            self._next_file(path)
        at = self._offset_at(int(line)) if line else self._sizes.get(path, 0)
        self._progress.update(self._task, completed=self._done + at, runs=self._runs, description=run_id)

    def _next_file(self, path: str) -> None:
        if self._current is not None:
            self._done += self._sizes.get(self._current, 0)
        if self._reader is not None:
            self._reader.close()
        self._current, self._reader, self._line, self._offset = path, None, 0, 0

    def _offset_at(self, line: int) -> int:
        """Bytes of the current file up to the end of ``line`` (1-based)."""
        if self._reader is None and self._current is not None:
            try:
                self._reader = open(self._current, "rb")  # noqa: SIM115 - held open across runs
            except OSError:
                return 0
        while self._reader is not None and self._line < line:
            chunk = self._reader.readline()
            if not chunk:
                break
            self._line += 1
            self._offset += len(chunk)
        return self._offset

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
        if self._reader is not None:
            self._reader.close()
        if self._progress is not None:
            self._progress.stop()
