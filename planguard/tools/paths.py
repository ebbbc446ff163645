"""Path normalisation: make file targets of different runs (and different work directories) comparable.

Agents address the same file as ``/testbed/pkg/mod.py``, ``pkg/mod.py``, ``./pkg//mod.py`` or
``/workspace/owner__repo__1.0/pkg/mod.py``. :class:`PathNormaliser` strips a known work-directory root
and cleans the rest lexically, so all of those become ``pkg/mod.py``.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence

__all__ = [
    "DEFAULT_ROOTS",
    "OUTSIDE",
    "SCRATCH_DIRS",
    "SCRIPT_PLACE",
    "SOURCE_PLACE",
    "UNKNOWN_PLACE",
    "W_GENERAL",
    "W_NONE",
    "W_SOURCE",
    "W_TEST",
    "PathNormaliser",
    "basename",
    "extension",
    "in_repo",
    "is_artifact",
    "is_backup",
    "is_cache",
    "is_code",
    "is_harness_output",
    "is_project_file",
    "is_scratch_path",
    "is_test_path",
    "is_test_target",
    "looks_like_file",
    "pathish",
    "place",
    "write_kind",
]

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


# ------------------------------------------------------------------- what a path is (PHASES_LIVE §3, §4, §5)


def basename(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def pathish(word: str) -> bool:
    """A word that names a file: it has a directory or an extension."""
    return "/" in word or "." in basename(word).lstrip(".")


_TEST_DIRS = frozenset({"test", "tests", "spec", "__tests__"})
_TEST_NAME = re.compile(r"^(?:test_.*|.*_test\..*|.*_spec\..*|.*\.test\..*|.*\.spec\..*|conftest\.py)$")
SCRATCH_DIRS = ("/tmp/", "/var/tmp/")
_CODE_EXTENSIONS = frozenset(
    {
        "py", "js", "mjs", "cjs", "ts", "tsx", "jsx", "sh", "bash", "rb", "go", "rs", "java", "kt", "ex",
        "exs", "php", "c", "cc", "cpp", "h", "hpp", "cs", "swift", "scala", "lua", "pl", "r", "jl",
    }
)  # fmt: skip
#: Output files a redirection fills (logs, captures): generated output, not a change to the repository.
_OUTPUT_EXTENSIONS = frozenset({"txt", "log", "out", "output", "err"})
_ARTIFACT_NAMES = frozenset({"patch.txt", "diff.txt", "model.patch", "fix.patch", "changes.diff"})
_NOTES_NAMES = frozenset({"plan.md", "notes.md", "todo.md", "progress.md", "scratchpad.md", "memory.md"})
#: Files of a project that run code when executed but belong to it (manifests, entry points): writing one
#: is a change to the repository, whatever its content.
_PROJECT_FILES = frozenset(
    {"setup.py", "manage.py", "noxfile.py", "fabfile.py", "tasks.py", "__init__.py", "__main__.py", "wsgi.py",
     "asgi.py", "dodo.py", "gulpfile.js", "gruntfile.js", "rakefile", "gemfile", "makefile"}
)  # fmt: skip
_OUTSIDE_PREFIXES = ("~", "/root/.", "/etc/", "/usr/", "/opt/", "/proc/", "/sys/")


def extension(name: str) -> str:
    return name.rsplit(".", 1)[1] if "." in name.lstrip(".") else ""


def is_test_target(path: str) -> bool:
    """A test file (PHASES_LIVE.md §4), by path and name alone: a file under a ``test``/``tests``/``spec``/
    ``__tests__`` directory, or named like a test (``test_*``, ``*_test.*``, ``*_spec.*``, ``*.test.*``,
    ``*.spec.*``, ``conftest.py``). A script the run created is a test target too, by provenance: the run
    model knows those (:class:`planguard.run.RunModel`), whatever they are called."""
    parts = path.lower().split("/")
    if any(d in _TEST_DIRS for d in parts[:-1]):
        return True
    return _TEST_NAME.match(parts[-1]) is not None


def is_code(name: str) -> bool:
    """A file of program code, by its extension (``.py``, ``.js``, ``.sh``, …)."""
    return extension(name.lower()) in _CODE_EXTENSIONS


def is_project_file(name: str) -> bool:
    """A project's own runnable file (``setup.py``, ``manage.py``, ``__init__.py``, ``Makefile``, …): never
    the run's script, whatever its content."""
    return name.lower() in _PROJECT_FILES


# Where a file lies (§4: a script lies "outside the package's source directories (the repository root, a
# scripts/-like folder, anywhere outside the repository)").
OUTSIDE = 0  # outside the repository (scratch, the user's home, system directories)
SCRIPT_PLACE = 1  # the repository's top level or a scripts-like folder
SOURCE_PLACE = 2  # inside a source directory of the repository
UNKNOWN_PLACE = 3  # an absolute path, and no root recorded to say whether it is inside the repository

#: Folders of a repository that hold scripts rather than the package's source.
_SCRIPT_DIRS = frozenset(
    {
        "scripts", "script", "tools", "bin", "examples", "example", "benchmarks", "bench", "demo", "demos",
        "scratch", "tmp", "sandbox", "playground", "debug", "dev", "manual_tests",
    }
)  # fmt: skip


def place(path: str, root: str | None) -> int:
    """Where ``path`` lies: :data:`OUTSIDE`, :data:`SCRIPT_PLACE`, :data:`SOURCE_PLACE` or
    :data:`UNKNOWN_PLACE`. ``path`` is already relative to ``root`` when it lies under it (:func:`in_repo`),
    so an absolute path with a recorded root is outside the repository; with none, only ``/tmp``,
    ``/var/tmp`` and the home directory are taken for scratch (§4)."""
    if path.startswith(("/", "~")):
        if root is not None or path.startswith(SCRATCH_DIRS) or path.startswith("~"):
            return OUTSIDE
        parent = path.rsplit("/", 2)
        return SCRIPT_PLACE if len(parent) == 3 and parent[1] in _SCRIPT_DIRS else UNKNOWN_PLACE
    while path.startswith("./"):
        path = path[2:]
    parts = path.split("/")
    if len(parts) == 1 or parts[0] in _SCRIPT_DIRS:
        return SCRIPT_PLACE
    return SOURCE_PLACE


def is_harness_output(path: str) -> bool:
    """A background run's output or a harness log (§5: reading one is general)."""
    p = path.lower()
    name = basename(p)
    if name.endswith(".output") or "/tool-results/" in p or "/.claude/" in p:
        return True
    return p.startswith(SCRATCH_DIRS) and extension(name) in _OUTPUT_EXTENSIONS


def is_artifact(path: str) -> bool:
    name = basename(path.lower())
    return extension(name) in ("patch", "diff") or name in _ARTIFACT_NAMES


_BACKUP_EXTENSIONS = frozenset({"bak", "orig", "backup", "old"})


def is_backup(path: str) -> bool:
    """A backup copy, by its name (``mod.py.bak``, ``mod.py.orig``, ``mod.py~``)."""
    name = basename(path.lower())
    return extension(name) in _BACKUP_EXTENSIONS or name.endswith("~")


# What writing a path is: nothing (``/dev/null``), general (artifacts, backups, notes, files outside the
# repository, output captures), a test (test targets) or a patch (any other file of the repository).
W_NONE, W_GENERAL, W_TEST, W_SOURCE = 0, 1, 2, 3


def write_kind(path: str, redirected: bool = False, root: str | None = None, copied: bool = False) -> int:
    """What writing (or removing) ``path`` is: :data:`W_NONE`, :data:`W_GENERAL`, :data:`W_TEST` or
    :data:`W_SOURCE`. ``root`` is the repository when the run records it, ``path`` already made relative
    to it (:func:`in_repo`): an absolute path is then outside the repository (§4, §5). ``redirected``: a
    program's output sent there (a ``.log``/``.txt`` is output); ``copied``: a copy put there (outside the
    repository, a deployed or backed-up file, §5)."""
    p = path.lower()
    if not p or p.startswith("/dev/"):
        return W_NONE
    name = basename(p)
    ext = extension(name)
    if is_cache(p):
        return W_GENERAL  # caches and build output (§5: removing them is cleanup)
    if is_artifact(name):
        return W_GENERAL  # a patch artifact (mini-swe-agent's submission, ``git format-patch``)
    if is_backup(name):
        return W_GENERAL  # a backup copy
    if name in _NOTES_NAMES or "/.claude/" in p:
        return W_GENERAL  # the agent's own plan or notes
    if p.startswith(_OUTSIDE_PREFIXES) or (p.startswith("/home/") and "/." in p):
        return W_GENERAL  # system directories, the user's home and its dot-directories
    if place(p, root) == OUTSIDE:
        # Outside the repository (§4: scratch): a script written there is the run's own (R/V); anything
        # else is scratch output, a backup or a copy deployed outside (§5).
        return W_TEST if ext in _CODE_EXTENSIONS and not copied else W_GENERAL
    if is_test_target(p):
        return W_TEST
    if redirected and ext in _OUTPUT_EXTENSIONS:
        return W_GENERAL
    return W_SOURCE


#: Caches and build output (§5): removing them is cleanup, whatever the repository.
_CACHE_DIRS = frozenset(
    {
        "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".tox", ".nox", "node_modules", "dist",
        "build", ".eggs", ".cache", ".next", ".parcel-cache", "_build", "htmlcov",
    }
)  # fmt: skip
_CACHE_EXTENSIONS = frozenset({"pyc", "pyo", "o", "class"})


def is_cache(path: str) -> bool:
    """A cache or build output: ``__pycache__``, ``*.pyc``, ``.pytest_cache``, ``node_modules``, ``dist/``,
    ``build/``, … (by any directory of the path, or the file's extension)."""
    parts = path.lower().rstrip("/").split("/")
    return any(part in _CACHE_DIRS or part.endswith(".egg-info") for part in parts) or (
        extension(parts[-1]) in _CACHE_EXTENSIONS
    )


def in_repo(path: str, root: str | None) -> str:
    """``path`` relative to the run's working directory when it lies under it (``/tmp/w/src/a.py`` with root
    ``/tmp/w`` is ``src/a.py``): a repository that lives under /tmp is still a repository."""
    if root is None or root + "/" in SCRATCH_DIRS:
        return path  # working in /tmp itself: its files are scratch (§4)
    if path.startswith(root) and path[len(root) : len(root) + 1] == "/":
        return path[len(root) + 1 :]
    return path
