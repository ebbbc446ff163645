"""The live phase rules: what a call *does*, on any scaffold and in any language (PHASES_LIVE.md).

The paper's rules (:mod:`planguard.phases.paper`) reproduce its classifier byte for byte, quirks and all;
these follow the definition a live monitor needs instead, with the same roles, letters and metrics:

* the call is read through the canonical-action vocabulary (:meth:`ActionClassifier.tool_call`): the
  tool's kind (shell, read, write, search, test, code, submit, plan, other), its shell line and its target
  paths come from the same mapping rules as its action, the user's ``actions.rules`` included;
* a shell line is read in the words the action layer's lexer cut it into for the call's action
  (:meth:`ShellClassifier.read`: a line of up to ``MEMO_TEXT_MAX`` characters is lexed once), as
  sub-commands; wrappers (``cd``, ``export``, ``VAR=1``, ``timeout``, ``time``, ``env``, ``bash -c``, …)
  are transparent, and each sub-command gets one role or none (§1);
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
from planguard.shell.lexer import Stage, tokenize
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
    ASSIGNMENT,
    COMPLETION_MARKERS,
    CONTROL,
    LOOP_WORDS,
    NPX,
    RUN_PREFIXES,
    SHELLS,
    WRAPPERS,
    Does,
    Program,
    operands,
    program,
    snippet,
)
from planguard.tools.vocabulary import ToolCall

__all__ = ["LiveRules", "is_test_target"]

#: Nested ``bash -c '…'`` levels looked into.
_MAX_DEPTH = 3

_MARKERS = tuple(m.lower() for m in COMPLETION_MARKERS)

# --------------------------------------------------------------------------- shell lines (§1)


def _unwrap(words: list[str]) -> tuple[int, bool]:
    """(index of the program, whether the words are a loop header or end), skipping transparent words."""
    i = 0
    n = len(words)
    while i < n:
        w = words[i]
        if w in CONTROL or ASSIGNMENT.match(w):
            i += 1
        elif w in WRAPPERS:
            i += 1
            while i < n and words[i].startswith("-"):
                i += 2 if words[i] in ("-I", "-n", "-P", "-d", "-L", "-u") else 1
        elif w in ("timeout", "nice"):
            i += 1
            while i < n and words[i].startswith("-"):
                i += 2 if words[i] in ("-s", "-k", "-n") else 1
            if w == "timeout":
                i += 1  # the duration
        elif w == "env":
            i += 1
            while i < n and (words[i].startswith("-") or ASSIGNMENT.match(words[i])):
                i += 1
        elif w in LOOP_WORDS:
            return i, True
        else:
            prefixes = RUN_PREFIXES.get(w)
            if prefixes and i + 1 < n and words[i + 1] in prefixes:
                i += 2
            elif w in NPX:
                i += 1
                while i < n and words[i].startswith("-"):
                    i += 1
            else:
                return i, False
    return i, False


def _stage_plans(words: list[str], outputs: list[str], body: str | None, depth: int) -> list[Program]:
    """The plans of one simple command (several for ``bash -c 'a && b'``)."""
    # Discarded output (``> /dev/null``, ``&> /dev/null``) is no write; ``2>&1`` never reaches here.
    outputs = [o for o in outputs if not o.startswith("/dev/")]
    at, loop = _unwrap(words)
    if loop:
        return [Program(words[at], Does.GENERAL)]
    if at >= len(words):
        if outputs:  # ``> file`` alone truncates it
            return [Program(">", Does.REDIRECT, tuple(outputs), tuple(outputs))]
        return []
    prog, args = words[at], words[at + 1 :]
    name = basename(prog)
    if name in ("cd", "pushd", "popd", "export", "source", ".", "set", "unset", "alias", "shopt", "ulimit"):
        return [Program(name, Does.GENERAL)]
    if name in SHELLS and depth < _MAX_DEPTH:
        for k, a in enumerate(args):
            if a.startswith("-") and "c" in a and not a.startswith("--") and k + 1 < len(args):
                return _line_plans(tokenize(args[k + 1]), depth + 1)
        ops = operands(args)
        if ops:
            return [Program(name, Does.RUN, (ops[0],))]
        if body:
            return _line_plans(tokenize(body), depth + 1)
        return [Program(name, Does.GENERAL)]
    sub = program(prog, args, body)
    if outputs and sub.does in (Does.NAV, Does.GENERAL):
        # What a reader or printer sends to a file is what it writes (``cat > f << EOF``, ``echo x > f``,
        # ``git diff > patch.txt``). A program's or test run's output capture stays its run's role.
        return [Program(sub.label, Does.REDIRECT, tuple(outputs), tuple(outputs))]
    return [sub]


def _loop_variable(words: list[str]) -> tuple[str, str] | None:
    """``for f in tests/*.py`` → ``("f", "tests/*.py")``: the loop body is judged on the first item."""
    if len(words) >= 4 and words[0] == "for" and words[2] == "in":
        return words[1], words[3]
    return None


def _substitute(words: list[str], loop_vars: dict[str, str]) -> list[str]:
    if not loop_vars:
        return words
    out = []
    for w in words:
        if w.startswith("$"):
            name = w[2:-1] if w.startswith("${") and w.endswith("}") else w[1:]
            w = loop_vars.get(name, w)
        out.append(w)
    return out


def _line_plans(segments: list[list[Stage]], depth: int = 0) -> list[Program]:
    """The plans of a lexed line's sub-commands."""
    plans: list[Program] = []
    loop_vars: dict[str, str] = {}
    for pipeline in segments:
        head = pipeline[0]
        loop = _loop_variable(head.words)
        if loop is not None:
            loop_vars[loop[0]] = loop[1]
        first = _stage_plans(_substitute(head.words, loop_vars), head.outputs, head.body, depth)
        # A pipeline means what its first stage does, unless a later stage writes a file (``| tee f``).
        for stage in pipeline[1:]:
            later = _stage_plans(_substitute(stage.words, loop_vars), stage.outputs, stage.body, depth)
            writes = [p for p in later if p.does in (Does.WRITE, Does.REDIRECT) and _writes_a_file(p)]
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

    def classify(self, event: ToolEvent, state: PhaseState) -> Classification:
        """Classify one tool call. Never mutates ``state`` and never raises."""
        try:
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
                # The words the action classifier cut the line into for the call's action (its one memo keeps
                # them); a line it read as a SWE-agent tool command, without the lexer, is lexed here.
                segments = self.actions.shell.read(line).segments
                if segments is None:
                    segments = tokenize(line)
                subs = _line_plans(segments) or (Program(line.strip()[:40] or "think", Does.GENERAL),)
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
    if does in (Does.WRITE, Does.REDIRECT):
        kinds = [write_kind(p, redirected=does == Does.REDIRECT) for p in paths]
        if W_SOURCE in kinds:
            return _Judged(label, _J_PATCH)
        if W_TEST in kinds:
            created = (in_repo(p, root) for p in sub.created)
            return _Judged(
                label, _J_NEW, records=tuple(p.lower() for p in created if write_kind(p) == W_TEST)
            )
        return _Judged(label, _J_GENERAL)
    if does == Does.REMOVE:
        sources = tuple(p.lower() for p in paths if pathish(p) and write_kind(p) == W_SOURCE)
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
