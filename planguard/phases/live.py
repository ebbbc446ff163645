"""The live phase rules: what a call *does*, on any scaffold and in any language (PHASES_LIVE.md).

The paper's rules (:mod:`planguard.phases.paper`) reproduce its classifier byte for byte, quirks and all;
these follow the definition a live monitor needs instead, with the same roles, letters and metrics:

* the call is read through the canonical-action vocabulary (:meth:`ActionClassifier.tool_call`): the
  tool's kind (shell, read, write, search, test, code, submit, plan, other), its shell line and its target
  paths come from the same mapping rules as its action, the user's ``actions.rules`` included;
* a shell line is the one reading the action verdict is made from (:mod:`planguard.shell.reading`, kept
  by :meth:`ShellClassifier.read` for lines of up to ``MEMO_TEXT_MAX`` characters): simple commands with
  their wrappers unwrapped, nested shells read in place; each gets one role or none (§1) from the one table
  of programs (:mod:`planguard.tools.programs`) and the one path model (:mod:`planguard.tools.paths`);
* ``patched`` (the first P) is the only switch between the reproduce and validate families (§2);
* a role that depends on a file is decided by what the run did with it (:mod:`planguard.run`): the
  scripts it created (by any tool, redirection, heredoc or copy; judged by place and content), the
  sources it created, the files it has seen, never by the file's name (§4).

A call's *plan* (its sub-commands, each judged as far as its text allows) is memoised per call in one
bounded table; the roles are then resolved against the session state: whether the run has patched, and
what the run model knows of the files that decide a role.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import NamedTuple

from planguard.actions.classify import DEFAULT_CLASSIFIER, MEMO_TEXT_MAX, ActionClassifier
from planguard.events import ToolEvent
from planguard.phases.base import (
    GENERAL,
    NAVIGATE,
    PATCH,
    REPRODUCE_NEW,
    REPRODUCE_REGRESSION,
    VALIDATE_NEW,
    VALIDATE_REGRESSION,
    Classification,
    Command,
)
from planguard.phases.state import PhaseState
from planguard.run import RunChanges, RunModel, is_script
from planguard.shell.inline_python import written_files
from planguard.shell.lexer import tokenize
from planguard.shell.reading import Simple, read
from planguard.tools.paths import (
    OUTSIDE,
    W_SOURCE,
    W_TEST,
    basename,
    extension,
    in_repo,
    is_artifact,
    is_harness_output,
    is_test_target,
    pathish,
    place,
    write_kind,
)
from planguard.tools.programs import (
    COMPLETION_MARKERS,
    Does,
    Program,
    program,
    snippet,
)
from planguard.tools.vocabulary import ToolCall

__all__ = ["LiveRules", "is_test_target"]


_MARKERS = tuple(m.lower() for m in COMPLETION_MARKERS)

# --------------------------------------------------------------------------- shell lines (§1)

_WRITES = (Does.WRITE, Does.REDIRECT, Does.COPY, Does.RESTORE)


def _simple_plans(cmd: Simple) -> list[Program]:
    """The plan of one simple command of the line's reading."""
    if cmd.loop:
        return [Program(cmd.words[0], Does.GENERAL)]
    if not cmd.words:
        if cmd.outputs:  # ``> file`` alone truncates it
            return [Program(">", Does.REDIRECT, tuple(cmd.outputs), tuple(cmd.outputs))]
        return []
    prog, args = cmd.words[0], cmd.words[1:]
    name = basename(prog)
    if name in ("cd", "pushd", "popd", "export", "source", ".", "set", "unset", "alias", "shopt", "ulimit"):
        return [Program(name, Does.GENERAL)]
    sub = program(prog, args, cmd.body)
    if cmd.outputs and sub.does in (Does.NAV, Does.GENERAL):
        # What a reader or printer sends to a file is what it writes (``cat > f << EOF``, ``echo x > f``,
        # ``git diff > patch.txt``). A program's or test run's output capture stays its run's role.
        return [Program(sub.label, Does.REDIRECT, tuple(cmd.outputs), tuple(cmd.outputs), cmd.body)]
    return [sub]


def _line_plans(pipelines: list[list[Simple]]) -> list[Program]:
    """The plans of a line's sub-commands, from its reading."""
    plans: list[Program] = []
    for pipeline in pipelines:
        first = _simple_plans(pipeline[0])
        # A pipeline means what its first stage does, unless a later stage writes a file (``| tee f``).
        for cmd in pipeline[1:]:
            later = _simple_plans(cmd)
            writes = [p for p in later if p.does in _WRITES and _writes_a_file(p)]
            if writes:
                first = writes
        plans.extend(first)
    return plans


def _writes_a_file(sub: Program) -> bool:
    """A write into the repository or a test script, not a log or an output capture (``| tee out.log``)."""
    return any(write_kind(p, redirected=True) in (W_TEST, W_SOURCE) for p in sub.paths)


# --------------------------------------------------------------------------- the rules


class LiveRules:
    """The live phase rules. Stateless itself: all per-session facts live in :class:`PhaseState`.

    ``actions`` is the canonical-action classifier whose vocabulary (built-in rules plus the user's
    ``actions.rules``) says what each tool is.

    One bounded memo (LRU): a call (its tool, its canonical call, the working directory) → its
    :class:`_CallPlan`, which is resolved against the session state on every call.
    """

    name = "live"

    def __init__(self, actions: ActionClassifier | None = None, cache_size: int = 4096) -> None:
        self.actions = actions if actions is not None else DEFAULT_CLASSIFIER
        self._memo = lru_cache(maxsize=cache_size)(self._plan)

    def new_state(self) -> PhaseState:
        return PhaseState()

    @property
    def call_reader(self) -> ActionClassifier:
        """The classifier whose reading of a call (:meth:`ActionClassifier.read`) :meth:`classify` takes."""
        return self.actions

    def classify(self, event: ToolEvent, state: PhaseState, call: ToolCall | None = None) -> Classification:
        """Classify one tool call. Never mutates ``state`` and never raises. ``call`` is the call as
        :attr:`actions` read it (:meth:`ActionClassifier.read`, the session hands it over), else read
        here."""
        try:
            if call is None:
                call = self.actions.tool_call(event)
            if call.kind == "write" and not call.paths and state.open_file is not None:
                # SWE-agent 0.x ``edit``/``insert`` change the open file; a recording may not name it.
                call = ToolCall("write", paths=(state.open_file,))
            tool = event.tool if isinstance(event.tool, str) and event.tool else "think"
            root = _work_dir(event) or state.root
            text = call.command if call.content is None else call.content
            if text is not None and len(text) > MEMO_TEXT_MAX:
                plan = self._plan(tool, call, root)  # long texts rarely repeat: not kept
            else:
                plan = self._memo(tool, call, root)
            return plan.resolve(state)
        except Exception:
            label = event.tool if isinstance(event.tool, str) and event.tool else "unknown"
            return Classification(commands=(Command(label, GENERAL),))

    def _plan(self, tool: str, call: ToolCall, root: str | None) -> _CallPlan:
        """The judged plan of one call (pure: its text, the vocabulary's reading, the working directory)."""
        kind = call.kind
        if kind == "shell":
            line = call.command or ""
            low = line.lower()
            if any(m in low for m in _MARKERS):  # mini-swe-agent's submission: ``echo COMPLETE_…`` (§4, §5)
                subs: Sequence[Program] = (Program("submit", Does.GENERAL),)
            else:
                # The reading the action classifier made the call's action from (its one memo keeps it); a
                # line it read as a SWE-agent tool command, without the lexer, is read here.
                pipelines = self.actions.shell.read(line).reading
                if pipelines is None:
                    pipelines = read(tokenize(line))
                subs = _line_plans(pipelines) or (Program(line.strip()[:40] or "think", Does.GENERAL),)
        elif kind == "read":
            harness = any(is_harness_output(p) for p in call.paths)
            subs = (Program(tool, Does.GENERAL) if harness else Program(tool, Does.NAV, call.paths),)
        elif kind == "search":
            subs = (Program(tool, Does.NAV),)
        elif kind == "write":
            subs = [
                Program(tool, Does.WRITE, (p,), (p,), call.content)
                if p in call.created
                else Program(tool, Does.WRITE, (p,))
                for p in call.paths or ("?",)
            ]
        elif kind == "test":
            subs = (Program(tool, Does.TESTS),)
        elif kind == "code":
            subs = (snippet(tool, call.command or ""),)
        else:
            subs = (Program(tool, Does.GENERAL),)
        opened = call.paths[0] if kind == "read" and len(call.paths) == 1 else None
        norm = self.actions.norm
        judged = tuple(_judge(sub, root, norm) for sub in subs)
        seen = tuple(p for j in judged if j.kind == _J_NAV for p in j.paths)
        folders = tuple(p for j in judged if j.kind == _J_MKDIR for p in j.paths)
        made = RunChanges(seen=seen, folders=folders) if seen or folders else None
        return _CallPlan(judged, kind == "write", opened, not call.mapped, made)


# What a judged sub-command's role depends on (besides ``patched``, which picks the family).
_J_GENERAL, _J_NAV, _J_PATCH, _J_NEW, _J_CHECK = 0, 1, 2, 3, 4
_J_NEW_IF_CREATED = 5  # a test run: new when the run created one of ``paths``, else regression
_J_PATCH_UNLESS_CREATED = 6  # a removal: a patch unless the run created every one of ``paths``
_J_WRITE = (
    7  # a write of repository files: a patch, unless they are (or it creates them as) the run's scripts
)
_J_RUN = (
    8  # runs a script: new (the run's own or the repository's program), or a patch through what it writes
)
_J_MKDIR = 9  # makes folders (``paths``): general, and the run's folders from now on

#: What Python that writes a file shows (a write mode, ``write_text``); code without one is not parsed.
_PYTHON_WRITES = re.compile(r"""['"][wax]b?\+?['"]|mode\s*=|write_(?:text|bytes)""")
#: A script the run creates (lower-cased path) and the repository source files it writes when run.
_Script = tuple[str, "_ScriptText | None"]


class _Judged(NamedTuple):
    """A sub-command's plan with every judgement of its text made: what is left depends on the run model."""

    label: str
    kind: int
    paths: tuple[str, ...] = ()  # lower-cased: the files whose provenance decides a conditional kind
    scripts: tuple[_Script, ...] = ()  # scripts it creates, with their text (for _J_WRITE: if they are new)
    whole: tuple[str, ...] = ()  # _J_WRITE: the ``paths`` it writes whole (creates, when they are new)
    content: str | None = None  # _J_WRITE: the text it writes them with (judged in a folder the run made)


#: The judgement of a sub-command that needs none of its paths (they are not normalised).
_PATHLESS = {Does.GENERAL: _J_GENERAL, Does.CHECK: _J_CHECK, Does.SNIPPET: _J_NEW}


def _judge(sub: Program, root: str | None, norm: Callable[[str], str]) -> _Judged:
    does = sub.does
    label = sub.label
    pathless = _PATHLESS.get(does)
    if pathless is not None:
        return _Judged(label, pathless)
    # One name per file (§4: absolute and relative paths name the same file), as tool paths are named.
    named = {p: in_repo(norm(p), root) if root is not None else norm(p) for p in sub.paths}
    paths = tuple(named[p] for p in sub.paths)
    if does == Does.NAV:
        files = [p for p in paths if pathish(p)]
        if files and all(is_harness_output(p) or is_artifact(p) for p in files):
            return _Judged(label, _J_GENERAL)  # reading a background run's output or a patch artifact (§5)
        return _Judged(label, _J_NAV, tuple(p.lower() for p in files))
    if does in _WRITES:
        redirected, copied = does == Does.REDIRECT, does == Does.COPY
        kinds = [write_kind(p, redirected=redirected, root=root, copied=copied) for p in paths]
        created = {
            named[p] if p in named else in_repo(norm(p), root) if root is not None else norm(p)
            for p in sub.created
        }
        if W_SOURCE in kinds:
            sources = tuple(p.lower() for p, k in zip(paths, kinds, strict=True) if k == W_SOURCE)
            whole = tuple(
                p.lower() for p, k in zip(paths, kinds, strict=True) if k == W_SOURCE and p in created
            )
            scripts = tuple(
                (p, _ScriptText.of(sub.content, p, root, norm))
                for p in whole
                if is_script(p, sub.content, root)
            )
            return _Judged(label, _J_WRITE, sources, scripts, whole, sub.content)
        if W_TEST in kinds:
            scripts = tuple(
                (p.lower(), _ScriptText.of(sub.content, p, root, norm))
                for p in created
                if write_kind(p, root=root) == W_TEST
            )
            return _Judged(label, _J_NEW, scripts=scripts)
        return _Judged(label, _J_GENERAL)
    if does == Does.REMOVE:
        sources = tuple(p.lower() for p in paths if pathish(p) and write_kind(p, root=root) == W_SOURCE)
        return _Judged(label, _J_PATCH_UNLESS_CREATED, sources) if sources else _Judged(label, _J_GENERAL)
    if does == Does.MKDIR:
        return _Judged(label, _J_MKDIR, tuple(p.lower().rstrip("/") for p in paths if p not in ("", ".")))
    if does == Does.RUN:
        script = paths[0]
        if is_test_target(script) and place(script.lower(), root) != OUTSIDE:
            return _Judged(label, _J_NEW_IF_CREATED, (script.lower(),))  # an existing test, unless created
        return _Judged(label, _J_RUN, (script.lower(),))
    if does == Does.TESTS:
        return _Judged(label, _J_NEW_IF_CREATED, tuple(p.lower() for p in paths))
    return _Judged(label, _J_GENERAL)


#: A quoted path in code (``'src/app.py'``): what a script may write, looked at before its code is parsed.
_PATH_LITERAL = re.compile(r"""['"]([^'"\s]{1,300}\.[A-Za-z0-9]{1,8})['"]""")


class _ScriptText:
    """A created script's content, read for the repository source files it writes when run (§3: running it
    is then a patch through them) only when it names a file the run knows: parsing every script a run
    writes would cost more than the rest of the call. Python: files its code opens for writing; a shell
    script: files its commands write."""

    __slots__ = ("_written", "content", "names", "norm", "path", "root")

    def __init__(self, content: str, path: str, root: str | None, norm: Callable[[str], str]) -> None:
        self.content, self.path, self.root, self.norm = content, path, root, norm
        self._written: tuple[str, ...] | None = None
        #: The repository source files it names (a superset of those it writes).
        self.names = self._sources(_PATH_LITERAL.findall(content)) if path.endswith(".py") else self.writes()

    @classmethod
    def of(
        cls, content: str | None, path: str, root: str | None, norm: Callable[[str], str]
    ) -> _ScriptText | None:
        if not content or extension(basename(path.lower())) not in ("py", "sh", "bash"):
            return None
        if path.lower().endswith(".py") and _PYTHON_WRITES.search(content) is None:
            return None  # no write mode, no ``write_text``: it writes no file
        return cls(content, path.lower(), root, norm)

    def writes(self) -> tuple[str, ...]:
        if self._written is None:
            if self.path.endswith(".py"):
                written: Sequence[str] = written_files(self.content, lenient=True)
            else:
                plans = _line_plans(read(tokenize(self.content)))
                written = [p for sub in plans if sub.does in _WRITES for p in sub.paths]
            self._written = self._sources(written)
        return self._written

    def _sources(self, raws: Sequence[str]) -> tuple[str, ...]:
        out = []
        root = self.root
        for raw in raws:
            p = self.norm(raw)
            p = in_repo(p, root) if root is not None else p
            if write_kind(p, root=root) == W_SOURCE:
                out.append(p.lower())
        return tuple(dict.fromkeys(out))


class _CallPlan(NamedTuple):
    """A call's judged sub-commands; their roles are resolved against the session state on each call."""

    subs: tuple[_Judged, ...]
    #: The files of one structured write (``apply_patch``) give one role per distinct kind of file.
    per_file: bool
    opened: str | None  # the file a read leaves open in a windowed editor
    unknown: bool  # no mapping rule knows the tool
    seen: RunChanges | None  # the files its sub-commands read: the run has seen them exist

    def resolve(self, state: PhaseState) -> Classification:
        """Roles in order: a patch early in the step makes later tests validation, and a script written
        early in the step is a created one for the sub-commands after it."""
        patched = state.has_patch
        # The run model as this call sees it, made when a role depends on it (most calls: none does).
        run: _CallRun | None = None
        patches = False  # a sub-command of this call patches
        commands: list[Command] = []
        for j in self.subs:
            k = j.kind
            if k == _J_NAV:
                role = NAVIGATE
            elif k == _J_PATCH:
                role = PATCH
            elif k == _J_NEW:
                role = VALIDATE_NEW if patched else REPRODUCE_NEW
                if j.scripts:
                    run = run or _CallRun(state.run, self.seen)
                    run.add_scripts(j.scripts)
            elif k == _J_WRITE:
                run = run or _CallRun(state.run, self.seen)
                role = PATCH if run.write_patches(j) else (VALIDATE_NEW if patched else REPRODUCE_NEW)
            elif k == _J_CHECK:
                role = VALIDATE_REGRESSION if patched else GENERAL
            elif k in (_J_RUN, _J_NEW_IF_CREATED):
                run = run or _CallRun(state.run, self.seen)
                scripts = [p for p in j.paths if run.script(p)]
                if any(run.writes(p) for p in scripts):
                    role = PATCH  # a created script that rewrites a source file when run (§3)
                elif scripts or k == _J_RUN:
                    role = VALIDATE_NEW if patched else REPRODUCE_NEW
                else:
                    role = VALIDATE_REGRESSION if patched else REPRODUCE_REGRESSION
            elif k == _J_PATCH_UNLESS_CREATED:
                # A removal of only files the run created is cleanup.
                run = run or _CallRun(state.run, self.seen)
                role = GENERAL if all(run.created(p) for p in j.paths) else PATCH
            else:
                role = GENERAL
            if role == PATCH:
                patched = patches = True
            command = Command(j.label, role)
            if not (self.per_file and commands and commands[-1] == command):
                commands.append(command)
        if self.unknown:
            return Classification(tuple(commands), unknown=True)
        changes = run.changes() if run is not None else self.seen
        return Classification(
            tuple(commands), patched=patches, opened=self.opened, run=changes, source_write=patches
        )


class _CallRun:
    """The run model as one call sees it: the session's, plus what earlier sub-commands of the call made."""

    __slots__ = ("folders", "model", "scripts", "seen", "sources")

    def __init__(self, model: RunModel, made: RunChanges | None) -> None:
        self.model = model
        self.scripts: dict[str, tuple[str, ...]] = {}
        self.sources: dict[str, None] = {}
        # What the call reads, and the folders it makes.
        self.seen: dict[str, None] = dict.fromkeys(made.seen) if made is not None else {}
        self.folders: tuple[str, ...] = made.folders if made is not None else ()

    def script(self, path: str) -> bool:
        if self.model.script(path) or path in self.scripts:
            return True
        name = basename(path)
        return any(basename(p) == name for p in self.scripts)

    def writes(self, path: str) -> tuple[str, ...]:
        return self.scripts.get(path) or self.model.writes(path)

    def created(self, path: str) -> bool:
        return self.model.created(path) or path in self.sources or self.script(path) or self.in_folder(path)

    def in_folder(self, path: str) -> bool:
        """``path`` lies in a folder the run made (``mkdir``), before this call or earlier in it."""
        return self.model.in_folder(path) or any(path.startswith(f + "/") for f in self.folders)

    def known(self, path: str) -> bool:
        """A file of the repository the run has seen or made as source (what a script may rewrite)."""
        return (
            self.model.known(path) or path in self.seen or path in self.model.sources or path in self.sources
        )

    def add_scripts(self, scripts: tuple[_Script, ...]) -> None:
        for path, text in scripts:
            self.scripts[path] = self._writes(text)

    def _writes(self, text: _ScriptText | None) -> tuple[str, ...]:
        """The files the run knows that a created script writes when run (read from its text only when it
        names one of them)."""
        if text is None or not any(self.known(n) for n in text.names):
            return ()
        return tuple(w for w in text.writes() if self.known(w))

    def write_patches(self, j: _Judged) -> bool:
        """Whether a write of repository files (``j``) is a patch: a change to a file the run did not create
        as its script, or a new file that is not a script by place and content (§4). Records what it makes."""
        patch = False
        scripts = dict(j.scripts)
        for p in j.paths:
            if p in self.scripts or p in self.model.scripts:
                if scripts.get(p) is not None:
                    self.scripts[p] = self._writes(scripts[p])  # rewritten whole: what it writes now
            elif p in scripts and not self.model.known(p) and p not in self.seen and not self.created(p):
                self.scripts[p] = self._writes(scripts[p])
            elif (
                p in j.whole
                and self.in_folder(p)
                and not self.known(p)
                and p not in self.scripts
                and is_script(p, j.content, self.model.root, in_run_folder=True)
            ):
                self.scripts[p] = ()  # a script in a folder the run made for it (§4: not a source folder)
            else:
                patch = True
                if p in j.whole and not self.model.known(p) and not self.created(p):
                    self.sources[p] = None
                else:
                    self.seen[p] = None
        return patch

    def changes(self) -> RunChanges | None:
        if not (self.scripts or self.sources or self.seen or self.folders):
            return None
        return RunChanges(tuple(self.scripts.items()), tuple(self.sources), tuple(self.seen), self.folders)


def _work_dir(event: ToolEvent) -> str | None:
    """The working directory an integration recorded on the call (``metadata["cwd"]``), if any."""
    cwd = event.metadata.get("cwd") if event.metadata else None
    return cwd.rstrip("/") if isinstance(cwd, str) and cwd.startswith("/") and len(cwd) > 1 else None
