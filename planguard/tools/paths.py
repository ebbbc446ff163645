"""Path normalisation: make file targets of different runs (and different work directories) comparable.

Agents address the same file as ``/testbed/pkg/mod.py``, ``pkg/mod.py``, ``./pkg//mod.py`` or
``/workspace/owner__repo__1.0/pkg/mod.py``. :class:`PathNormaliser` strips a known work-directory root
and cleans the rest lexically, so all of those become ``pkg/mod.py``.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence

__all__ = ["DEFAULT_ROOTS", "PathNormaliser", "is_scratch_path", "is_test_path", "looks_like_file"]

#: Work-directory roots of the supported scaffolds, tried in order (regular expressions, anchored at the
#: start, matching a whole directory). SWE-bench images mount the repo at ``/testbed``; OpenHands at
#: ``/workspace`` (SWE-bench runs: ``/workspace/<owner>__<repo>__<version>``); SWE-agent 0.x at
#: ``/<owner>__<repo>``.
DEFAULT_ROOTS: tuple[str, ...] = (
    r"/testbed",
    r"/workspace/[\w.-]+__[\w.-]+",
    r"/workspace",
    r"/repo",
    r"/[\w.-]+__[\w.-]+",
)

_QUOTES = "'\""
_ABSOLUTE = ("/", "~", "$")

# Test-ish: the plan-compliance paper's hints (PHASE_RULES §2) plus the scratch-script names agents use
# for checks (verify_fix.py, check_bug.py); a write to such a file is not a source write.
_TEST_HINT = re.compile(
    r"(?:^|/)(?:tests?|testing)/|(?:^|[/_])tests?_|_tests?\b|(?:^|/)tests?\.py$|reproduc|(?:^|/)repro|"
    r"(?:^|/)debug_|(?:^|/)verify_|(?:^|/)check_|(?:^|/)scratch|conftest\.py$",
    re.IGNORECASE,
)
_SCRATCH = re.compile(r"^(?:/tmp/|/var/tmp/|/dev/|~/|/root/|/home/[^/]+/\.)")
_HAS_EXT = re.compile(r"\.[A-Za-z0-9_]{1,8}$")
_FILE_NAMES = frozenset(
    {"Makefile", "Dockerfile", "LICENSE", "README", "AUTHORS", "CHANGES", "Gemfile", "Rakefile", "Procfile"}
)


def is_test_path(path: str) -> bool:
    """A test, reproduction or check script (not repository source): ``_TEST_HINT``."""
    return _TEST_HINT.search(path) is not None


def is_scratch_path(path: str) -> bool:
    """Outside the repository: temp files, home dot-dirs, devices."""
    return _SCRATCH.match(path) is not None


def looks_like_file(path: str) -> bool:
    """A file rather than a directory, judged from the name alone (no file system access)."""
    if not path or path.endswith("/"):
        return False
    base = path.rsplit("/", 1)[-1]
    return _HAS_EXT.search(base) is not None or base in _FILE_NAMES


class PathNormaliser:
    """Repo-relative, lexically clean paths. ``roots`` are regular expressions of work-directory roots."""

    __slots__ = ("_root_re",)

    def __init__(self, roots: Sequence[str] = DEFAULT_ROOTS) -> None:
        self._root_re: re.Pattern[str] | None = (
            re.compile("^(?:" + "|".join(f"(?:{r})" for r in roots) + r")(?:/|$)") if roots else None
        )

    def __call__(self, raw: str, cwd: str | None = None) -> str:
        p = raw.strip().strip(_QUOTES)
        if not p:
            return "."
        if cwd and not p.startswith(_ABSOLUTE):
            p = f"{cwd.rstrip('/')}/{p}"
        p = posixpath.normpath(p)
        if p.startswith("//"):
            p = p[1:]
        if p.startswith("/") and self._root_re is not None:
            m = self._root_re.match(p)
            if m is not None:
                p = p[m.end() :] or "."
        return p
