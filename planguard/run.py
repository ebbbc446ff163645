"""The run model: where a session's run works and which files it has made (PHASES_LIVE.md §2-§4).

A role that depends on a file is decided by what the run did with that file, not by the file's name:

* ``root`` is the repository: the session's working directory as its integration recorded it (session
  metadata ``cwd``/``work_dir``, a hook payload's ``cwd``, a loader's recording), wherever it lives. A
  repository under ``/tmp`` is a repository; *scratch* is outside the root. Only when nothing recorded a
  root are ``/tmp`` and ``/var/tmp`` taken for scratch. Where a path lies (outside the repository, at a
  script place, in the package's source) is the one path model's to say
  (:func:`planguard.tools.paths.place`).
* the files the run **created as scripts** (reproductions, checks, helpers, new tests: running or editing
  one is R/V), each with the repository source files its content writes when run (running it is then a
  patch through what it writes, §3);
* the files it **created as source** (a new module of the package: a patch, and removing it again is
  cleanup);
* the files it has **seen exist** (read, listed by name, edited): a whole-file write to one of those is a
  change, not a creation.

Paths are kept as the live rules judge them: lower-cased, relative to the root when under it. Every table
is bounded (oldest forgotten first) and every operation is a dictionary lookup or insert, so the model
costs the same per call however long the run is.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

from planguard.tools.paths import (
    SCRIPT_PLACE,
    SOURCE_PLACE,
    W_SOURCE,
    basename,
    extension,
    in_repo,
    is_code,
    is_project_file,
    pathish,
    place,
    write_kind,
)

__all__ = ["MAX_FILES", "RunChanges", "RunModel", "is_script", "script_content"]

#: At most this many files are remembered per table (created scripts, created sources, seen files).
MAX_FILES = 4096

_PYTHON_EXTENSIONS = frozenset({"py", "pyw", "ipy"})
_SHELL_EXTENSIONS = frozenset({"sh", "bash", "zsh"})
#: Top-level lines of other languages that run something: a call, a print, an assertion.
_RUNS_AT_TOP = re.compile(
    r"^(?:console\.\w+\(|print|puts |p |assert|echo |IO\.|require\(|await |[A-Za-z_$][\w$.]*\s*\()", re.M
)
#: Top-level lines of other languages that define a program or a module: classes, exports, modules.
_DEFINES_AT_TOP = re.compile(
    r"^(?:class |module |export |module\.exports|defmodule |package |func main)", re.M
)


def script_content(text: str | None, name: str) -> bool | None:
    """Whether a file's content (named ``name``) is a script — code that runs something when executed
    (top-level calls, prints or asserts, test functions, a ``__main__`` block that does more than start a
    program's classes, imports and nothing else) — rather than a program or module that defines things
    (§4). None when the content is not known or empty."""
    if not text or text.isspace():
        return None
    return _content_is_script(text, extension(name).lower())


@lru_cache(maxsize=4)
def _content_is_script(text: str, ext: str) -> bool | None:
    """:func:`script_content` of a text: a call's action and its phases judge the same created file by
    the same text (one string, its hash kept by the string), so it is read once."""
    if ext in _SHELL_EXTENSIONS:
        return True
    if ext in _PYTHON_EXTENSIONS:
        return _python_script(text)
    return _RUNS_AT_TOP.search(text) is not None and _DEFINES_AT_TOP.search(text) is None


def is_script(path: str, content: str | None, root: str | None, *, in_run_folder: bool = False) -> bool:
    """A repository file written whole is the run's script (when it is new) by place and content (§4): it
    lies outside the package's source directories (``in_run_folder``: in a folder the run made) and its
    content runs something; a file whose content is not known, by place and kind alone. A project file
    (``setup.py``) is the project's. ``path`` is lower-cased and relative to ``root`` when under it."""
    name = basename(path)
    at = SCRIPT_PLACE if in_run_folder else place(path, root)
    if is_project_file(name) or at == SOURCE_PLACE:
        return False
    judged = script_content(content, name)
    if judged is None:
        return at == SCRIPT_PLACE and is_code(name)
    return judged


# Python read by its top-level lines (column 0), not parsed: a parse of every created file's content would
# cost more than the rest of the call's classification together.
_TRIPLE_QUOTED = re.compile(r"(?s)\"\"\".*?\"\"\"|'''.*?'''")
_MAIN_GUARD = re.compile(r"^if\s+__name__\s*==\s*['\"]__main__['\"]\s*:", re.M)
_DEFINITION = re.compile(r"^(?:async\s+)?(def|class)\s+(\w+)\s*(\([^\n]*\))?", re.M)
_IMPORT = re.compile(r"^(?:import|from)\s", re.M)
#: A top-level statement that runs something: a call, an assertion, a loop or block, or an assignment of
#: a call's value.
_PY_RUNS = re.compile(
    r"^(?:print\b|assert\b|for\s|while\s|with\s|try\s*:|if\s(?!__name__)|[A-Za-z_][\w.]*\s*\(|"
    r"[A-Za-z_][\w.,\s\[\]]*?(?<![=!<>])=(?!=)[^\n]*\()",
    re.M,
)
_STARTS_ONLY = re.compile(r"^\s+(?:(?:sys\.)?exit\(|raise\s+SystemExit\()?\s*(\w+)\(\)?\)*\s*(?:#.*)?$")


def _python_script(code: str) -> bool | None:
    code = _TRIPLE_QUOTED.sub("", code)
    definitions = _DEFINITION.findall(code)
    for _kind, name, bases in definitions:
        if name.lower().startswith("test") or "TestCase" in bases:
            return True  # test functions or test cases: a test the run wrote
    guard = _MAIN_GUARD.search(code)
    body = code[guard.end() :] if guard is not None else ""
    if _PY_RUNS.search(code[: guard.start()] if guard is not None else code):
        return True
    if guard is not None:
        # A program's entry point only starts it (``main()``); a script's does the work itself.
        lines = [ln for ln in body.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
        block = lines[: next((i for i, ln in enumerate(lines) if not ln[:1].isspace()), len(lines))]
        started = _STARTS_ONLY.match(block[0]) if len(block) == 1 else None
        local = {name for _, name, _ in definitions}
        classes = any(kind == "class" for kind, _, _ in definitions)
        return not (classes and started is not None and started.group(1) in local)
    if definitions:
        return False  # a module: it defines things and runs nothing
    # Imports (of the package under work) and nothing else: a probe; nothing recognisable: place decides.
    return True if _IMPORT.search(code) is not None else None


class RunChanges(NamedTuple):
    """What one call adds to the run model, committed by :meth:`RunModel.apply` once the call has run."""

    #: Scripts the call created, each with the repository source files it writes when run.
    scripts: tuple[tuple[str, tuple[str, ...]], ...] = ()
    #: Repository source files the call created.
    sources: tuple[str, ...] = ()
    #: Files the call shows to exist (read, edited in place, restored).
    seen: tuple[str, ...] = ()
    #: Folders the call makes (``mkdir``).
    folders: tuple[str, ...] = ()


NO_CHANGES = RunChanges()


class RunModel:
    """One session's run model (see the module docs). Change it only through :meth:`apply`."""

    __slots__ = ("_dirs", "_script_names", "folders", "open_file", "root", "scripts", "seen", "sources")

    def __init__(self, root: str | None = None) -> None:
        self.root = root
        #: The file a windowed editor has open (SWE-agent 0.x ``open``): what an ``edit`` naming no file
        #: changes.
        self.open_file: str | None = None
        self.scripts: dict[str, tuple[str, ...]] = {}
        self.sources: dict[str, None] = {}
        self.seen: dict[str, None] = {}
        # File name -> path of the latest created script of that name: a script run from another directory
        # is named differently (``cd tests && python probe.py``).
        self._script_names: dict[str, str] = {}
        self._dirs: dict[str, None] = {}  # directories holding files the run created
        #: Folders the run made (``mkdir``): what it creates in them is its own.
        self.folders: dict[str, None] = {}

    # ------------------------------------------------------------------ questions

    def script(self, path: str) -> bool:
        """``path`` is a script the run created (by its path, or by its file name alone)."""
        return path in self.scripts or basename(path) in self._script_names

    def writes(self, path: str) -> tuple[str, ...]:
        """The repository source files the created script ``path`` writes when run (from its content)."""
        found = self.scripts.get(path)
        if found is None:
            named = self._script_names.get(basename(path))
            found = self.scripts.get(named) if named is not None else None
        return found or ()

    def created(self, path: str) -> bool:
        """The run created ``path`` (a script or a source file, a directory of its files, a folder it made
        or a file in one)."""
        return (
            path in self.sources
            or self.script(path)
            or path.rstrip("/") in self._dirs
            or path.rstrip("/") in self.folders
            or self.in_folder(path)
        )

    def in_folder(self, path: str) -> bool:
        """``path`` lies in a folder the run made."""
        if not self.folders:
            return False
        parent = path.rpartition("/")[0]
        while parent:
            if parent in self.folders:
                return True
            parent = parent.rpartition("/")[0]
        return False

    def known(self, path: str) -> bool:
        """``path`` is known to exist apart from this run's creations (the run has read or changed it)."""
        return path in self.seen

    def changes_source(
        self,
        path: str,
        *,
        whole: bool = False,
        content: str | None = None,
        removes: bool = False,
        redirected: bool = False,
        copied: bool = False,
    ) -> bool:
        """Whether writing ``path`` (as a tool or a command names it) changes a source file of the
        repository, as the run stands: a file of the repository (the one path model, judged against the
        root) that the run did not create as its script, and that is not a new script by place and
        ``content`` when the write creates it ``whole`` (§4). A removal (``removes``) changes source
        unless the run created the file. ``redirected``, ``copied``: as for
        :func:`~planguard.tools.paths.write_kind`."""
        root = self.root
        p = (in_repo(path, root) if root is not None else path).lower()
        if removes:
            return pathish(p) and write_kind(p, root=root) == W_SOURCE and not self.created(p)
        if write_kind(p, redirected=redirected, root=root, copied=copied) != W_SOURCE or p in self.scripts:
            return False
        if not whole or self.known(p):
            return True
        if self.in_folder(p):  # a new file in a folder the run made: its script by content
            return not is_script(p, content, root, in_run_folder=True)
        return self.created(p) or not is_script(p, content, root)

    # ------------------------------------------------------------------ changes

    def apply(self, changes: RunChanges) -> None:
        for path, writes in changes.scripts:
            self._add_script(path, writes)
            self._add_dir(path)
        for path in changes.sources:
            _put(self.sources, path)
            self._add_dir(path)
        for path in changes.seen:
            _put(self.seen, path)
        for path in changes.folders:
            if path not in self.seen:
                _put(self.folders, path)

    def _add_dir(self, path: str) -> None:
        """Remember the directory of a created file when the run created it too: not the root, and not a
        directory it has seen (a file of the repository in it)."""
        parent = path.rsplit("/", 1)[0] if "/" in path else ""
        if parent and parent not in self.seen:
            _put(self._dirs, parent)

    def _add_script(self, path: str, writes: tuple[str, ...]) -> None:
        scripts = self.scripts
        if path not in scripts:
            if len(scripts) >= MAX_FILES:
                oldest = next(iter(scripts))
                del scripts[oldest]
                if self._script_names.get(basename(oldest)) == oldest:
                    del self._script_names[basename(oldest)]
        elif not writes:
            return  # rewritten without content we can read: keep what its earlier content writes
        scripts[path] = writes
        self._script_names[basename(path)] = path


def _put(table: dict[str, None], path: str) -> None:
    if path in table:
        return
    if len(table) >= MAX_FILES:
        del table[next(iter(table))]
    table[path] = None
