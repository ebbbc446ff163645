"""Where a subcommand writes its output: the file ``-o`` names, else standard output."""

from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Iterator
from typing import IO

__all__ = ["open_output"]


@contextlib.contextmanager
def open_output(path: str | None) -> Iterator[IO[str]]:
    """``path`` opened for writing UTF-8 text (closed on exit), or standard output when there is no path.

    A recorded string may hold a lone surrogate (JSON allows "\\ud800"), which UTF-8 cannot encode; written
    as a backslash escape it stays valid JSON that decodes to the same string."""
    if not path:
        if isinstance(sys.stdout, io.TextIOWrapper):
            sys.stdout.reconfigure(errors="backslashreplace")
        yield sys.stdout
        return
    with open(path, "w", encoding="utf-8", errors="backslashreplace") as out:
        yield out
