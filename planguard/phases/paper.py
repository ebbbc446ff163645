"""The paper's phase rules (two published versions, exact), and the paper's reading of a canonical call.

Classification is split in two:

* a *plan* per sub-command is derived from the text alone (which branch of the rules applies, which
  paths it names, which test files it writes). Plans are pure, so they are memoised per call;
* the plans are then resolved against the session state: ``has_patch`` picks the reproduce or the
  validate family, and the created-test set picks ``newly_generated`` or ``regression``.

Within a step the sub-commands are resolved one after another exactly as the paper's pipeline does,
so a sub-command sees the patch or the test file of an earlier one of the same step.

The paper's reading of a call (PHASE_RULES section 6), :func:`paper_commands`. The paper classified SWE-
agent's byte-exact action strings; an event that carries ``action`` goes through the paper's parser as it is
(:class:`PaperRules`). Any other call is first read by the action vocabulary (built-in tool rules plus the
user's ``actions.rules``) into one :class:`~planguard.tools.vocabulary.ToolCall`, and this module maps that
onto the paper's vocabulary:

* a call with a shell line (``bash``, ``Bash``, ``execute_bash``, a user's ``kind: shell`` tool, ...)
  -> the line through the paper's parser;
* a read -> the editor's ``view`` of its path; a write -> ``create`` (a new file) or ``str_replace``;
* a search or listing (``Grep``/``Glob``/``LS``, ...) -> the read-only command rule (``grep``/``find``/
  ``ls``) on its scope, pattern and glob: navigation, or a test interaction when they name tests;
* a test run (a ``validation`` rule) -> ``pytest``;
* a reasoning step (``think``, the empty tool) -> a think step;
* anything else (a submission, a plan update, an unknown tool) -> one general command labelled with
  the tool name.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any, NamedTuple

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
from planguard.phases.paper_parser import SRE_TOOL, FlagValue, ParsedCommand, ToolArgValue, parse_action
from planguard.phases.state import PhaseState, basename
from planguard.shell.inline_python import written_files
from planguard.tools.vocabulary import ToolCall

__all__ = ["PAPER_VERSION", "THINK", "PaperRules", "PhaseRules", "is_test_path_paper", "paper_commands"]

#: The paper's newest classifier version (PHASE_RULES.md), what ``--rules v351278e`` selects.
PAPER_VERSION = "v351278e"

# --------------------------------------------------------------------------- the paper's reading of a call

#: Marker for a step that called no tool.
THINK: tuple[ParsedCommand, ...] = (ParsedCommand(kind="think"),)

#: The read-only shell program a structured search or listing stands for.
_PROGRAM_OF_READER = {"search": "grep", "find": "find", "navigate": "ls"}


def _editor(sub: str, path: str | None, label: str) -> ParsedCommand:
    tool_args: tuple[tuple[str, str], ...] = (("path", path),) if path is not None else ()
    return ParsedCommand(kind="tool", tool=SRE_TOOL, subcommand=sub, tool_args=tool_args, label=label)


def paper_commands(tool: str, call: ToolCall) -> tuple[ParsedCommand, ...]:
    """The sub-commands the paper's rules see for ``call`` (a call of ``tool`` with no action string)."""
    if call.thought:
        return THINK
    if call.command is not None and call.kind != "code":
        return parse_action(call.command)
    # SWE-agent's own editor keeps the paper's label (``str_replace_editor: view``); others their name.
    label = "" if call.reader == "editor" else tool
    program = _PROGRAM_OF_READER.get(call.reader)
    if program is not None:
        return (ParsedCommand(kind="bash", command=program, args=call.operands, label=label),)
    if call.kind == "read":
        return (_editor("view", call.operands[0] if call.operands else None, label),)
    if call.kind == "write":
        if not call.operands:
            return (_editor("str_replace", None, label),)
        return tuple(
            _editor("create" if path in call.created else "str_replace", raw, label)
            for raw, path in zip(call.operands, call.paths, strict=False)
        )
    if call.kind == "test":
        return (ParsedCommand(kind="bash", command="pytest", label=label),)
    return (ParsedCommand(kind="other", label=tool or "unknown"),)


_GENERAL, _NAV, _PATCH, _TEST = 0, 1, 2, 3


class _Outcome(NamedTuple):
    """A role before the state is known.

    ``_TEST`` resolves through the created-test set: newly generated when a target is a created test,
    or, with no targets, when the code is inline; regression otherwise.
    """

    kind: int
    targets: tuple[str, ...] = ()
    inline: bool = False


_O_GENERAL = _Outcome(_GENERAL)
_O_NAV = _Outcome(_NAV)
_O_PATCH = _Outcome(_PATCH)


def _test_outcome(targets: Sequence[str], inline: bool = False) -> _Outcome:
    return _Outcome(_TEST, tuple(targets), inline)


class _Plan(NamedTuple):
    """One sub-command as far as its text decides it: its label and node, the test files it records as
    created, and its outcome before (``pre``) and after (``post``) the run's first patch."""

    label: str
    node: int | None
    record: tuple[str, ...]
    pre: _Outcome
    post: _Outcome


def _plan(label: str, node: int | None, out: _Outcome, record: Iterable[str] = ()) -> _Plan:
    return _Plan(label, node, tuple(dict.fromkeys(record)), out, out)


_THINK_PLAN = _plan("think", None, _O_GENERAL)

# --------------------------------------------------------------------------- shared vocabulary

#: The paper's path test (a token that looks like a path).
_PATHISH = re.compile(r"^[/~.]|/|\.py$")
_MAY_REDIRECT = re.compile(r"[<>]|tee", re.IGNORECASE)
_PAPER_HINTS = ("test_", "reproduc", "debug", "_test", "/tests/", "/test/")
_READONLY = frozenset({"grep", "find", "cat", "ls", "head", "tail", "awk", "nl"})
_PY = frozenset({"python", "python3", "python2", "pytest", "pylint"})
_PY_INLINE = frozenset({"python", "python2", "python3"})
_SRE_EDITS = frozenset({"create", "str_replace", "insert", "undo_edit"})
_REDIR_OPS = frozenset({">", ">>", "1>", "2>", ">|", "<<<", "<<", "<>", ">&", "2>&1"})
_REDIR_PREFIX = (">", ">>", "1>", "2>")
_REDIR_EMBEDDED = (" <<", "<<", " >>", ">>", " 1>", " 2>", " >", " >|", "<>", ">&", "2>&1")
_TARGET_OPS = frozenset({">", ">>", "1>", "2>", ">|"})
# Commands with a rule of their own; any other command is general unless it shows redirection.
_SHAPED = _READONLY | _PY | frozenset({"sed", "perl", "touch"})


def _pathish(token: str) -> bool:
    return _PATHISH.search(token) is not None


def is_test_path_paper(path: str) -> bool:
    """The paper's test hint: a plain substring test on the (already lower-cased) path."""
    return any(hint in path for hint in _PAPER_HINTS)


def _flatten_flags(flags: Iterable[tuple[str, FlagValue]]) -> list[str]:
    out: list[str] = []
    for key, value in flags:
        out.append(key.lower())
        out.append(str(value).lower())
    return out


def _contains_redirection(tokens: Sequence[str]) -> bool:
    for t in tokens:
        if len(t) >= 2 and ((t[0] == '"' and t[-1] == '"') or (t[0] == "'" and t[-1] == "'")):
            continue
        if t in _REDIR_OPS or t.startswith(_REDIR_PREFIX):
            return True
        if any(op in t for op in _REDIR_EMBEDDED):
            return True
        if t == "tee" or " tee " in t:
            return True
    return False


def _paths_after_redirection(tokens: Sequence[str]) -> list[str]:
    out: list[str] = []
    last = len(tokens) - 1
    for i, t in enumerate(tokens):
        if i < last and (t in _TARGET_OPS or t.startswith(_REDIR_PREFIX) or " >" in t):
            nxt = tokens[i + 1]
            if _pathish(nxt):
                out.append(nxt)
    return out


def _inline_key(cmd: str, tokens: Sequence[str], paths: Sequence[str]) -> bool:
    """The paper's "dynamic key": python run with -c/-m, no path-like token, and not pytest."""
    if cmd not in _PY_INLINE or paths:
        return False
    last = len(tokens) - 1
    for i, t in enumerate(tokens):
        if t.startswith(("pytest", "py.test")):
            return False
        if t in ("-m", "m") and i < last and tokens[i + 1].startswith(("pytest", "py.test")):
            return False
        if t.startswith("-m") and t != "-m" and t[2:].startswith(("pytest", "py.test")):
            return False
    return any(t in ("-c", "-m", "c", "m") or t.startswith(("-c", "-m")) for t in tokens)


def _inline_code(cmd: ParsedCommand, flags: Mapping[str, FlagValue]) -> str | None:
    if cmd.heredoc:
        for item in cmd.args:
            looks_like_code = (
                len(item) > 20 or "\n" in item or "Path(" in item or "open(" in item or "write" in item
            )
            if looks_like_code and item not in ("-", ">"):
                return item
    code = flags.get("c")
    if isinstance(code, str) and len(code) > 5:
        return code
    return None


def _label(cmd: ParsedCommand, action: str) -> str:
    if cmd.label:
        return cmd.label
    if cmd.kind == "tool":
        return f"{cmd.tool}: {cmd.subcommand}" if cmd.subcommand else cmd.tool
    return cmd.command.strip() or action.strip() or cmd.text.strip()


def _node(cmd: ParsedCommand, label: str) -> int:
    """Identity of a sub-command, as the paper's graph dedupes nodes (label, args, flags)."""
    if cmd.kind == "tool":
        if cmd.text:
            return hash((label, cmd.text))
        return hash((label, _by_key(cmd.tool_args)))
    return hash((label, cmd.args, _by_key(cmd.flags)))


def _by_key(pairs: tuple[tuple[str, Any], ...]) -> tuple[tuple[str, Any], ...]:
    """``pairs`` sorted by key (stable), as a tuple."""
    return tuple(sorted(pairs, key=lambda pair: pair[0]))


# --------------------------------------------------------------------------- rule engines


#: What a call's plans are memoised under: its action text, or (tool, canonical call) without one.
_PlanKey = str | tuple[str, ToolCall]


class PhaseRules(ABC):
    """A phase classifier. Stateless itself: all per-session facts live in :class:`PhaseState`.

    One bounded memo (LRU): a call's plans per action text, or per tool and canonical call for calls
    without action text (function calling), so a repeated call is parsed once; texts longer than
    ``MEMO_TEXT_MAX`` are planned afresh. The plans are resolved against the state on every call.
    """

    name: str

    def __init__(self, actions: ActionClassifier | None = None, cache_size: int = 4096) -> None:
        #: The canonical-action classifier whose vocabulary reads calls without an action string.
        self.actions = actions if actions is not None else DEFAULT_CLASSIFIER
        self._plans: Callable[[_PlanKey], tuple[_Plan, ...]] = lru_cache(maxsize=cache_size)(self._compile)

    def new_state(self) -> PhaseState:
        return PhaseState()

    def classify(self, event: ToolEvent, state: PhaseState) -> Classification:
        """Classify one tool call. Never mutates ``state`` and never raises."""
        try:
            key: _PlanKey
            if isinstance(event.action, str):
                key, text = event.action, event.action
            else:
                tool = event.tool if isinstance(event.tool, str) else str(event.tool)
                call = self.actions.tool_call(event)
                key, text = (tool, call), call.command or ""
            plans = self._plans(key) if len(text) <= MEMO_TEXT_MAX else self._compile(key)
            return _resolve(plans, state)
        except Exception:
            label = event.tool if isinstance(event.tool, str) and event.tool else "unknown"
            return Classification(commands=(Command(label, GENERAL),))

    def _compile(self, key: _PlanKey) -> tuple[_Plan, ...]:
        """The plans of an action text (the paper's parser) or of a canonical call (its paper reading)."""
        if isinstance(key, str):
            if not key.strip():
                return (_THINK_PLAN,)
            return self._plan_commands(parse_action(key), key)
        return self._plan_commands(paper_commands(*key), "")

    def _plan_commands(self, commands: Sequence[ParsedCommand], action: str) -> tuple[_Plan, ...]:
        return tuple([self._plan(cmd, action) for cmd in commands])

    def _plan(self, cmd: ParsedCommand, action: str) -> _Plan:
        """The state-independent part of the rules for one sub-command."""
        if cmd.kind == "think":
            return _THINK_PLAN
        label = _label(cmd, action)
        node = _node(cmd, label)
        if cmd.kind == "other" or (cmd.kind == "tool" and cmd.tool != SRE_TOOL):
            return _plan(label, node, _O_GENERAL)
        if cmd.kind == "tool":
            record, out = self._editor_outcome(cmd.subcommand, cmd.tool_arg("path"))
            return _plan(label, node, out, record)
        return self._plan_shell(cmd, label, node)  # bash, complex_command, set_env

    @abstractmethod
    def _plan_shell(self, cmd: ParsedCommand, label: str, node: int) -> _Plan:
        """The rules for a ``bash`` sub-command (and a ``complex_command`` or ``set_env``, whose text
        only the redirection rule can match)."""

    @abstractmethod
    def _editor_outcome(self, sub: str, raw_path: ToolArgValue | None) -> tuple[tuple[str, ...], _Outcome]:
        """``(paths recorded as created tests, outcome)`` of an editor call with this subcommand and path."""


#: The role of an outcome that does not depend on the session state.
_FIXED_ROLE = {_GENERAL: GENERAL, _NAV: NAVIGATE, _PATCH: PATCH}


def _role(outcome: _Outcome, has_patch: bool, state: PhaseState, local: Sequence[str]) -> str:
    if outcome.kind != _TEST:
        return _FIXED_ROLE[outcome.kind]
    newly = _any_created(outcome.targets, state, local) if outcome.targets else outcome.inline
    if has_patch:
        return VALIDATE_NEW if newly else VALIDATE_REGRESSION
    return REPRODUCE_NEW if newly else REPRODUCE_REGRESSION


def _in_node_order(plans: tuple[_Plan, ...], state: PhaseState) -> Sequence[_Plan]:
    """The paper lists a step's sub-commands in the order their graph nodes were created: those seen in
    earlier steps first (by first sighting), then the new ones in source order (a sub-command without a
    node, and each repeat of a new node, counting as new)."""
    ranks: list[int] = []
    fresh: dict[int, int] = {}
    for p in plans:
        rank = state.nodes.get(p.node) if p.node is not None else None
        if rank is None:
            key = p.node if p.node is not None else -len(fresh) - 1
            rank = fresh.setdefault(key, state.node_count + len(fresh))
        ranks.append(rank)
    if ranks == sorted(ranks):
        return plans
    return [plans[k] for k in sorted(range(len(plans)), key=ranks.__getitem__)]


def _resolve(plans: tuple[_Plan, ...], state: PhaseState) -> Classification:
    """Roles in node order: a patch early in the step makes later tests validation, and a test file
    recorded early in the step is a created one for the sub-commands after it."""
    has_patch = state.has_patch
    local: list[str] = []
    commands: list[Command] = []
    for p in _in_node_order(plans, state):
        for path in p.record:
            if path not in local:
                local.append(path)
        role = _role(p.post if has_patch else p.pre, has_patch, state, local)
        if role == PATCH:
            has_patch = True
        commands.append(Command(p.label, role))
    nodes = tuple(p.node for p in plans if p.node is not None)
    return Classification(tuple(commands), tuple(local), any(c.role == PATCH for c in commands), nodes)


def _any_created(paths: tuple[str, ...], state: PhaseState, local: Sequence[str]) -> bool:
    """Whether the run (``state``) or this step (``local``) created one of ``paths`` (by path or name)."""
    for t in paths:
        if state.is_created(t):
            return True
        name = basename(t)
        if any(c == t or basename(c) == name for c in local):
            return True
    return False


class PaperRules(PhaseRules):
    """The paper's rule classifier, version ``v351278e`` (newest) or ``v8ec988e`` (paper artifacts)."""

    def __init__(
        self, version: str = PAPER_VERSION, actions: ActionClassifier | None = None, cache_size: int = 4096
    ) -> None:
        if version not in ("v351278e", "v8ec988e"):
            raise ValueError(f"unknown paper rule version {version!r}; valid: v351278e, v8ec988e")
        self.name = version
        self._new = version == "v351278e"
        super().__init__(actions, cache_size)

    def _editor_outcome(self, sub: str, raw_path: ToolArgValue | None) -> tuple[tuple[str, ...], _Outcome]:
        sub = sub.lower()
        paths: tuple[str, ...] = ()
        test = False
        if isinstance(raw_path, str):
            paths = (raw_path.lower(),)
            test = is_test_path_paper(paths[0])
        record: tuple[str, ...] = ()
        if sub in _SRE_EDITS:
            if sub == "create" and test:
                record = paths
            out = _test_outcome(paths) if test else _O_PATCH
        elif sub == "view":
            out = _test_outcome(paths) if test else _O_NAV
        else:
            out = _O_GENERAL
        return record, out

    def _plan_shell(self, cmd: ParsedCommand, label: str, node: int) -> _Plan:
        name = cmd.command.lower().strip()
        if name not in _SHAPED and _MAY_REDIRECT.search(cmd.text) is None:
            # Only the redirection rule could apply, and nothing in the text can look like one.
            return _plan(label, node, _O_GENERAL)
        arg_tokens = [a.lower() for a in cmd.args]
        flag_tokens = _flatten_flags(cmd.flags)
        tokens = arg_tokens + flag_tokens
        flags = dict(cmd.flags)
        paths = [t for t in arg_tokens if _pathish(t)]
        if _pathish(name):
            paths.append(name)
        paths.extend(t for t in flag_tokens if _pathish(t))
        test_paths = [p for p in paths if is_test_path_paper(p)]

        if name in _PY:
            heredoc = bool(flags.get("__heredoc__", False))
            if _contains_redirection(tokens) and not (heredoc and self._new):
                return _redirect_plan(label, node, tokens, None)
            code = _inline_code(cmd, flags)
            edited = written_files(code) if code else ()
            if edited:
                tests = [f for f in edited if is_test_path_paper(f)]
                return _plan(label, node, _test_outcome(tests) if tests else _O_PATCH)
            inline = _inline_key(name, tokens, paths) or heredoc
            post = _test_outcome(test_paths, inline)
            if heredoc or test_paths or name == "pytest" or inline:
                return _plan(label, node, post)
            return _Plan(label, node, (), _O_GENERAL, post)

        sed_read = self._new and name == "sed" and "i" not in flags and "n" in flags
        perl_read = (
            self._new
            and name == "perl"
            and "i" not in flags
            and ("n" in flags or "p" in flags)
            and bool(paths)
        )
        if name in _READONLY or sed_read or perl_read:
            redirect = _contains_redirection(tokens)
            piped = name in _READONLY and "|" in "".join(tokens) and not redirect
            if redirect and not piped:
                return _redirect_plan(label, node, tokens, _O_PATCH)
            return _plan(label, node, _test_outcome(test_paths) if test_paths else _O_NAV)
        if self._new and name == "perl" and "i" not in flags and test_paths:
            return _plan(label, node, _test_outcome(test_paths))
        if self._new:
            edit = name == "touch" or (name in ("sed", "perl") and "i" in flags)
        else:
            edit = name in ("sed", "touch")
        if edit:
            return _plan(label, node, _test_outcome(test_paths) if test_paths else _O_PATCH)
        if _contains_redirection(tokens):
            return _redirect_plan(label, node, tokens, _O_PATCH)
        return _plan(label, node, _O_GENERAL)


def _redirect_plan(label: str, node: int, tokens: Sequence[str], fallback: _Outcome | None) -> _Plan:
    """The paper's redirection rule: test files written to are created tests; else ``fallback``."""
    targets = [t for t in _paths_after_redirection(tokens) if is_test_path_paper(t)]
    out = _test_outcome(targets) if (targets or fallback is None) else fallback
    return _plan(label, node, out, targets)
