"""Path normalisation: make file targets of different runs (and different work directories) comparable.

Agents address the same file as ``/testbed/pkg/mod.py``, ``pkg/mod.py``, ``./pkg//mod.py`` or
``/workspace/owner__repo__1.0/pkg/mod.py``. :class:`PathNormaliser` strips a known work-directory root
and cleans the rest lexically, so all of those become ``pkg/mod.py``. Results are memoised in a bounded
table: a run touches few distinct paths, so the hot path is one dict lookup.
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

_CACHE_MAX = 4096
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


# _TEST_HINT's alternatives around one occurrence of "test" (lower-cased path), matched from the
# character before it (``_TEST_AFTER``) or at the start (``_TEST_AT_START``); "conftest.py" is apart.
_TEST_AFTER = re.compile(r"[/_]tests?_|/(?:tests?|testing)/|_tests?\b|/tests?\.py$")
_TEST_AT_START = re.compile(r"(?:tests?|testing)/|tests?_|tests?\.py$")
_AT_ROOT_OR_DIR = ("repro", "debug_", "verify_", "check_", "scratch")
_IN_DIR = tuple("/" + word for word in _AT_ROOT_OR_DIR)


def is_test_path(path: str) -> bool:
    """A test, reproduction or check script (not repository source): ``_TEST_HINT``, computed from the few
    places it can match (the unanchored case-insensitive regex costs microseconds on a long path)."""
    if not path.isascii():  # non-ASCII case folding is the regex's business
        return _TEST_HINT.search(path) is not None
    low = path.lower()
    i = low.find("test")
    while i >= 0:
        if _TEST_AFTER.match(low, i - 1) if i else _TEST_AT_START.match(low):
            return True
        i = low.find("test", i + 1)
    if low.endswith(("conftest.py", "conftest.py\n")) or "reproduc" in low:
        return True
    if low.startswith(_AT_ROOT_OR_DIR):
        return True
    for word in _IN_DIR:  # noqa: SIM110 - a generator costs more than the five substring tests
        if word in low:
            return True
    return False


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

    __slots__ = ("_cache", "_lead", "_root_re")

    def __init__(self, roots: Sequence[str] = DEFAULT_ROOTS) -> None:
        self._root_re: re.Pattern[str] | None = (
            re.compile("^(?:" + "|".join(f"(?:{r})" for r in roots) + r")(?:/|$)") if roots else None
        )
        # The first root, when it is a plain directory (``/testbed``), followed by "/": a path starting so
        # is what the regex's first alternative strips, found with one ``startswith``.
        self._lead: str | None = roots[0] + "/" if roots and re.escape(roots[0]) == roots[0] else None
        self._cache: dict[str, str] = {}

    def __call__(self, raw: str, cwd: str | None = None) -> str:
        key = raw if cwd is None else f"{cwd}\0{raw}"
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        # Normalised in line (no helper call): a run's first sight of each path comes through here.
        p = raw.strip().strip(_QUOTES)
        if not p:
            p = "."
        else:
            if cwd and not p.startswith(_ABSOLUTE):
                p = f"{cwd.rstrip('/')}/{p}"
            if "//" in p or "/." in p or p.startswith("./") or p.endswith("/"):
                p = posixpath.normpath(p)
                if p.startswith("//"):
                    p = p[1:]
            if p.startswith("/") and self._root_re is not None:
                lead = self._lead
                if lead is not None and p.startswith(lead):
                    p = p[len(lead) :] or "."
                else:
                    m = self._root_re.match(p)
                    if m is not None:
                        p = p[m.end() :] or "."
        cache = self._cache
        if len(cache) >= _CACHE_MAX:
            cache.clear()
        cache[key] = p
        return p
