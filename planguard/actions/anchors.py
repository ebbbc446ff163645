"""Anchor sets: the task-relevant files (TraceProbe: the files a gold patch touches).

Accepts a unified diff (``diff --git a/x b/x`` / ``+++ b/x`` headers) or a list of paths. Paths are
normalised like action targets, and a target matches an anchor when it is the anchor or ends with
``/anchor`` (so an absolute path in an unknown work directory still matches a repo-relative anchor).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..tools.paths import PathNormaliser

__all__ = ["AnchorSet", "files_of_diff"]

_DIFF_GIT = re.compile(r"^diff --git a/(\S+) b/(\S+)", re.MULTILINE)
_PLUS = re.compile(r"^\+\+\+ (?:b/)?(\S+)", re.MULTILINE)
_MINUS = re.compile(r"^--- (?:a/)?(\S+)", re.MULTILINE)


def files_of_diff(diff: str) -> list[str]:
    """Files a unified diff touches, in order of first appearance (``/dev/null`` sides skipped)."""
    seen: dict[str, None] = {}
    for m in _DIFF_GIT.finditer(diff):
        seen.setdefault(m.group(2), None)
    if not seen:
        for rx in (_PLUS, _MINUS):
            for m in rx.finditer(diff):
                if m.group(1) != "/dev/null":
                    seen.setdefault(m.group(1), None)
    return list(seen)


class AnchorSet:
    """An immutable set of repo-relative anchor paths; a path is in it when it is one or ends with one."""

    __slots__ = ("_suffixes", "files")

    def __init__(self, files: Iterable[str], normaliser: PathNormaliser | None = None) -> None:
        norm = normaliser or PathNormaliser()
        self.files: frozenset[str] = frozenset(norm(f) for f in files if f and f.strip())
        self._suffixes = tuple("/" + f for f in self.files)

    @classmethod
    def parse(cls, spec: str | Iterable[str], normaliser: PathNormaliser | None = None) -> AnchorSet:
        """From a unified diff, a newline/comma separated file list, or an iterable of paths."""
        if isinstance(spec, str):
            if "\n+++ " in spec or spec.startswith(("diff --git", "--- ")) or "\ndiff --git" in spec:
                return cls(files_of_diff(spec), normaliser)
            return cls((p.strip() for p in re.split(r"[\n,]", spec)), normaliser)
        return cls(spec, normaliser)

    def __contains__(self, path: object) -> bool:
        if not isinstance(path, str) or not path:
            return False
        return path in self.files or path.endswith(self._suffixes)

    def mentioned_in(self, text: str) -> bool:
        """Some anchor path appears in ``text`` (a search's output)."""
        return any(f in text for f in self.files)

    def __len__(self) -> int:
        return len(self.files)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(sorted(self.files))

    def __repr__(self) -> str:
        return f"AnchorSet({sorted(self.files)!r})"
