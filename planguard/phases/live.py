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
* ``patched`` (the first P) is the only switch between the reproduce and validate families (§2).

A call's *plan* (its sub-commands, each judged as far as its text allows) is memoised per call in one
bounded table; the roles are then resolved against the session state: whether the run has patched, and
which of the files that decide a role the run created.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import NamedTuple

from planguard.actions.classify import DEFAULT_CLASSIFIER, ActionClassifier
from planguard.actions.shell import MEMO_TEXT_MAX
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
from planguard.shell.lexer import tokenize
from planguard.shell.reading import Simple, read
from planguard.tools.paths import (
    W_SOURCE,
    W_TEST,
    basename,
    in_repo,
    is_artifact,
    is_check_script,
    is_harness_output,
    is_test_target,
    pathish,
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

_WRITES = (Does.WRITE, Does.REDIRECT, Does.COPY)


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
        return [Program(sub.label, Does.REDIRECT, tuple(cmd.outputs), tuple(cmd.outputs))]
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
            text = call.command
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
            subs = (
                Program(tool, Does.GENERAL if any(is_harness_output(p) for p in call.paths) else Does.NAV),
            )
        elif kind == "search":
            subs = (Program(tool, Does.NAV),)
        elif kind == "write":
            subs = [
                Program(tool, Does.WRITE, (p,), (p,) if p in call.created else ())
                for p in call.paths or ("?",)
            ]
        elif kind == "test":
            subs = (Program(tool, Does.TESTS),)
        elif kind == "code":
            subs = (snippet(tool, call.command or ""),)
        else:
            subs = (Program(tool, Does.GENERAL),)
        opened = call.paths[0] if kind == "read" and len(call.paths) == 1 else None
        return _CallPlan(tuple(_judge(sub, root) for sub in subs), kind == "write", opened, not call.mapped)


# What a judged sub-command's role depends on (besides ``patched``, which picks the family).
_J_GENERAL, _J_NAV, _J_PATCH, _J_NEW, _J_CHECK = 0, 1, 2, 3, 4
_J_NEW_IF_CREATED = 5  # a run or test run: new when the run created one of ``paths``, else regression
_J_PATCH_UNLESS_CREATED = 6  # a removal: a patch unless the run created every one of ``paths``


class _Judged(NamedTuple):
    """A sub-command's plan with every judgement of its text made: what is left depends on the state."""

    label: str
    kind: int
    paths: tuple[str, ...] = ()  # lower-cased: the files whose creation decides a conditional kind
    records: tuple[str, ...] = ()  # test files it writes, recorded as created when its role is R/V


def _judge(sub: Program, root: str | None) -> _Judged:
    paths = tuple(in_repo(p, root) for p in sub.paths) if root is not None else sub.paths
    does = sub.does
    label = sub.label
    if does == Does.NAV:
        files = [p for p in paths if pathish(p)]
        if files and all(is_harness_output(p) or is_artifact(p) for p in files):
            return _Judged(label, _J_GENERAL)  # reading a background run's output or a patch artifact (§5)
        return _Judged(label, _J_NAV)
    if does in _WRITES:
        redirected, copied = does == Does.REDIRECT, does == Does.COPY
        kinds = [write_kind(p, redirected=redirected, root=root, copied=copied) for p in paths]
        if W_SOURCE in kinds:
            return _Judged(label, _J_PATCH)
        if W_TEST in kinds:
            created = (in_repo(p, root) for p in sub.created)
            return _Judged(
                label, _J_NEW, records=tuple(p.lower() for p in created if write_kind(p) == W_TEST)
            )
        return _Judged(label, _J_GENERAL)
    if does == Does.REMOVE:
        sources = tuple(p.lower() for p in paths if pathish(p) and write_kind(p, root=root) == W_SOURCE)
        return _Judged(label, _J_PATCH_UNLESS_CREATED, sources) if sources else _Judged(label, _J_GENERAL)
    if does == Does.SNIPPET:
        return _Judged(label, _J_NEW)
    if does == Does.RUN:
        script = paths[0]
        if is_check_script(script) or not is_test_target(script):
            return _Judged(label, _J_NEW)  # a check script, or the repository's program
        return _Judged(label, _J_NEW_IF_CREATED, (script.lower(),))
    if does == Does.TESTS:
        return _Judged(label, _J_NEW_IF_CREATED, tuple(p.lower() for p in paths))
    if does == Does.CHECK:
        return _Judged(label, _J_CHECK)
    return _Judged(label, _J_GENERAL)


class _CallPlan(NamedTuple):
    """A call's judged sub-commands; their roles are resolved against the session state on each call."""

    subs: tuple[_Judged, ...]
    #: The files of one structured write (``apply_patch``) give one role per distinct kind of file.
    per_file: bool
    opened: str | None  # the file a read leaves open in a windowed editor
    unknown: bool  # no mapping rule knows the tool

    def resolve(self, state: PhaseState) -> Classification:
        """Roles in order: a patch early in the step makes later tests validation, and a test file written
        early in the step is a created one for the sub-commands after it."""
        patched = state.has_patch
        local: list[str] = []
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
                local.extend(j.records)
            elif k == _J_CHECK:
                role = VALIDATE_REGRESSION if patched else GENERAL
            elif k == _J_NEW_IF_CREATED:
                new = any(_made(p, state, local) for p in j.paths)
                role = (
                    (VALIDATE_NEW if new else VALIDATE_REGRESSION)
                    if patched
                    else (REPRODUCE_NEW if new else REPRODUCE_REGRESSION)
                )
            elif k == _J_PATCH_UNLESS_CREATED:
                # A removal of only files the run created is cleanup.
                role = GENERAL if all(_made(p, state, local) for p in j.paths) else PATCH
            else:
                role = GENERAL
            if role == PATCH:
                patched = patches = True
            command = Command(j.label, role)
            if not (self.per_file and commands and commands[-1] == command):
                commands.append(command)
        if self.unknown:
            return Classification(tuple(commands), unknown=True)
        return Classification(
            tuple(commands),
            created=tuple(dict.fromkeys(local)),
            patched=patches,
            opened=self.opened,
        )


def _made(path: str, state: PhaseState, local: list[str]) -> bool:
    """The run created ``path``: before this call (``state``) or earlier in it (``local``)."""
    return state.is_created(path) or path in local or basename(path) in (basename(c) for c in local)


def _work_dir(event: ToolEvent) -> str | None:
    """The working directory an integration recorded on the call (``metadata["cwd"]``), if any."""
    cwd = event.metadata.get("cwd") if event.metadata else None
    return cwd.rstrip("/") if isinstance(cwd, str) and cwd.startswith("/") and len(cwd) > 1 else None
