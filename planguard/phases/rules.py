"""The paper's phase rules (two published versions, exact), and the registry of every rule set.

Classification is split in two so that it is both exact and cheap:

* a *plan* per sub-command is derived from the text alone (which branch of the rules applies, which
  paths it names, which test files it writes). Plans are pure, so they are cached per action text;
* the plans are then resolved against the session state: ``has_patch`` picks the reproduce or the
  validate family, and the created-test set picks ``newly_generated`` or ``regression``.

Within a step the sub-commands are resolved one after another exactly as the paper's pipeline does,
so a sub-command sees the patch or the test file of an earlier one of the same step.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache, partial
from operator import itemgetter
from typing import Any, NamedTuple

from planguard.actions.vocabulary import DEFAULT_CLASSIFIER, ActionClassifier, ToolCall
from planguard.events import ToolEvent
from planguard.phases.classifier import PhaseClassifier
from planguard.phases.inline_python import written_files
from planguard.phases.live import LiveRules
from planguard.phases.roles import (
    GENERAL,
    NAVIGATE,
    PATCH,
    REPRODUCE_NEW,
    REPRODUCE_REGRESSION,
    VALIDATE_NEW,
    VALIDATE_REGRESSION,
    Classification,
    Command,
    make_classification,
)
from planguard.phases.scaffolds import paper_commands
from planguard.phases.shell import (
    SRE_SUBCOMMANDS,
    SRE_TOOL,
    FlagValue,
    ParsedCommand,
    Piece,
    ToolArgValue,
    complex_command,
    editor_call,
    is_simple_heredoc,
    parse_action,
    parse_bash,
    piece_commands,
    plain_pieces,
    scan,
)
from planguard.phases.state import PhaseState, basename

__all__ = [
    "DEFAULT_VERSION",
    "LIVE",
    "PAPER_VERSION",
    "RULE_ALIASES",
    "RULE_VERSIONS",
    "PhaseClassifier",
    "PaperRules",
    "PhaseRules",
    "get_rules",
    "is_test_path_paper",
]

LIVE = "live"
#: The paper's newest classifier version (PHASE_RULES.md), what ``--rules v351278e`` selects.
PAPER_VERSION = "v351278e"
#: The rules a session uses unless told otherwise: the live rules.
DEFAULT_VERSION = LIVE
RULE_VERSIONS: tuple[str, ...] = (LIVE, "v351278e", "v8ec988e", "corrected")
#: Former names: ``corrected`` (the paper's rules with its quirks fixed) is now the live rules.
RULE_ALIASES = {"corrected": LIVE}

_GENERAL, _NAV, _PATCH, _TEST = 0, 1, 2, 3


class _Outcome(NamedTuple):
    """A role before the state is known.

    ``_TEST`` resolves through the created-test set: newly generated when a target is a created test,
    or, with no targets, when the code is inline; regression otherwise. ``created_alt`` (corrected
    rules) lists paths that make the outcome a newly-generated test interaction once the run has
    created one of them.
    """

    kind: int
    targets: tuple[str, ...] = ()
    inline: bool = False
    created_alt: tuple[str, ...] = ()


_O_GENERAL = _Outcome(_GENERAL)
_O_NAV = _Outcome(_NAV)
_O_PATCH = _Outcome(_PATCH)


class _Plan(NamedTuple):
    label: str
    node: int | None
    record: tuple[str, ...]
    pre: _Outcome
    post: _Outcome


# ``_Plan(...)`` runs a Python-level ``__new__``; a plan is built for every new sub-command.
_new_plan: Callable[[tuple[str, int | None, tuple[str, ...], _Outcome, _Outcome]], _Plan] = partial(
    tuple.__new__, _Plan
)


def _make_plan(label: str, node: int | None, record: Iterable[str], pre: _Outcome, post: _Outcome) -> _Plan:
    return _new_plan((label, node, tuple(dict.fromkeys(record)) if record else (), pre, post))


class _Commands(dict[tuple[str, str], Command]):
    """One rule set's ``Command`` per (label, role), built on first use: a ``Command`` costs a Python-level
    ``__new__``, and actions share their sub-commands' labels (``cd /testbed``, ``python reproduce.py``)."""

    MAX = 65536

    def __missing__(self, key: tuple[str, str]) -> Command:
        cmd = Command(*key)
        if len(self) < self.MAX:
            self[key] = cmd
        return cmd


class _ActionPlan:
    """The plans of one action's sub-commands, and the classifications they have resolved to.

    Given the sub-commands' order and roles, the classification is fixed, so it is built once per action
    and role combination (a repeated action then costs the role lookups only). ``fixed`` is the
    classification of a one-command action whose role cannot depend on the state (a view, an edit of a
    non-test file, ``cd``, ``grep``: most actions), built with the plan.
    """

    __slots__ = ("cache", "commands", "distinct", "fixed", "nodes", "plans")

    MAX_CACHED = 32

    def __init__(self, plans: tuple[_Plan, ...], commands: _Commands) -> None:
        self.plans = plans
        self.commands = commands
        self.cache: dict[str | tuple[str, ...], Classification] = {}
        self.fixed: Classification | None = None
        if len(plans) != 1:
            #: The plans' nodes (``None`` skipped), and whether every plan has its own node.
            self.nodes = tuple([p.node for p in plans if p.node is not None])
            self.distinct = len(set(self.nodes)) == len(plans)
            return
        p = plans[0]
        node = p.node
        self.nodes = (node,) if node is not None else ()
        self.distinct = node is not None
        pre, post = p.pre, p.post
        if (
            pre.kind != _TEST
            and not pre.created_alt
            and (pre is post or (post.kind == pre.kind and not post.created_alt))
        ):
            role = _FIXED_ROLE[pre.kind]
            self.fixed = make_classification((commands[p.label, role],), p.record, role == PATCH, self.nodes)


_THINK_PLAN = _make_plan("think", None, (), _O_GENERAL, _O_GENERAL)
#: An editor call's plan apart from its label and node: (paths recorded as created tests, outcome).
_EditorPlan = tuple[tuple[str, ...], _Outcome]

# --------------------------------------------------------------------------- shared vocabulary


def _pathish(token: str) -> bool:
    """The paper's path test, ``re.search(r"^[/~.]|/|\\.py$", token)`` (``$`` also matches before a final
    newline), with string methods: it runs for every word of every new command."""
    return "/" in token or token.startswith(("~", ".")) or token.endswith((".py", ".py\n"))


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
_PATH_START = ("~", ".")
#: The flags of a command without any (read only).
_NO_FLAGS: Mapping[str, FlagValue] = {}
_PY_END = (".py", ".py\n")


def _may_redirect(text: str) -> bool:
    """``re.search(r"[<>]|tee", text, re.IGNORECASE)``: no character but ``t``/``T``/``e``/``E`` lower-cases
    to (or case-insensitively matches) ``t`` or ``e``, and lower-casing never drops a character."""
    return "<" in text or ">" in text or "tee" in text.lower()


def _paper_tests(paths: list[str]) -> tuple[str, ...]:
    """The paths that pass :func:`is_test_path_paper`. Each of its hints contains ``test``, ``reproduc``
    or ``debug``, so one scan of all the paths usually settles it."""
    if len(paths) == 1:  # ``python reproduce.py``: one path, no join or comprehension
        return (paths[0],) if is_test_path_paper(paths[0]) else ()
    if not paths:
        return ()
    joined = "\x00".join(paths)
    if "test" not in joined and "reproduc" not in joined and "debug" not in joined:
        return ()
    return tuple([p for p in paths if is_test_path_paper(p)])


def is_test_path_paper(path: str) -> bool:
    """The paper's test hint: a plain substring test on the (already lower-cased) path."""
    # _PAPER_HINTS unrolled: six substring tests cost a fraction of one regex alternation.
    return (
        "test_" in path
        or "reproduc" in path
        or "debug" in path
        or "_test" in path
        or "/tests/" in path
        or "/test/" in path
    )


def _lower_all(items: Sequence[str]) -> list[str]:
    """``[s.lower() for s in items]``, in three C calls for longer lists: lower-casing maps NUL to itself
    and nothing else to NUL, and a NUL ends the context of a final sigma as the end of a string does."""
    if len(items) < 4:
        return [items[0].lower()] if len(items) == 1 else [s.lower() for s in items]
    out = "\x00".join(items).lower().split("\x00")
    return out if len(out) == len(items) else [s.lower() for s in items]  # an item held a NUL


def _flatten_flags(flags: Iterable[tuple[str, FlagValue]]) -> list[str]:
    out: list[str] = []
    for key, value in flags:
        out.append(key.lower())
        out.append(str(value).lower())
    return out


def _pathish_tokens(tokens: list[str]) -> list[str]:
    """``[t for t in tokens if _pathish(t)]``. Every path-like token contains ``/``, ``~`` or ``.``; most
    commands' flags and many of their words have none, which one scan of all of them shows."""
    if len(tokens) == 1:
        t = tokens[0]
        return [t] if "/" in t or t.startswith(_PATH_START) or t.endswith(_PY_END) else []
    joined = "\x00".join(tokens)
    if "/" not in joined and "." not in joined and "~" not in joined:
        return []
    return [t for t in tokens if "/" in t or t.startswith(_PATH_START) or t.endswith(_PY_END)]


def _contains_redirection(tokens: Sequence[str]) -> bool:
    # Every redirection the loop below recognises contains "<", ">" or "tee"; most commands have none.
    joined = "\x00".join(tokens)
    if "<" not in joined and ">" not in joined and "tee" not in joined:
        return False
    for t in tokens:
        if len(t) >= 2 and ((t[0] == '"' and t[-1] == '"') or (t[0] == "'" and t[-1] == "'")):
            continue
        if t in _REDIR_OPS or t.startswith(_REDIR_PREFIX):
            return True
        if ("<" in t or ">" in t) and any(op in t for op in _REDIR_EMBEDDED):
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
        return False  # every other outcome below is False when a token looks like a path
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


_first = itemgetter(0)


def _by_key(pairs: tuple[tuple[str, Any], ...]) -> tuple[tuple[str, Any], ...]:
    """``pairs`` sorted by key (stable), as a tuple."""
    return pairs if len(pairs) < 2 else tuple(sorted(pairs, key=_first))


# --------------------------------------------------------------------------- rule engines


#: Longer texts (file bodies, inline scripts, edits) are not memoised: they rarely repeat, and a memo full of
#: them would pin tens of megabytes. Bounding the entries does not bound what their texts hold.
MEMO_TEXT_MAX = 2048


class PhaseRules(ABC):
    """A phase classifier. Stateless itself: all per-session facts live in :class:`PhaseState`.

    Plans are memoised at two levels (both bounded LRU tables): per action text, so a repeated call
    costs one lookup, and per top-level sub-command text, since agents repeat sub-commands inside new
    actions (``cd /testbed && python reproduce.py`` is a new action for every new script, while its
    ``cd /testbed`` is always the same). Editor calls, the most frequent actions, differ in their text
    but rarely in their subcommand and path, which alone decide their plan.
    """

    name: str

    def __init__(self, actions: ActionClassifier | None = None, cache_size: int = 4096) -> None:
        #: The canonical-action classifier whose vocabulary reads calls without an action string.
        self.actions = actions if actions is not None else DEFAULT_CLASSIFIER
        self._commands = _Commands()
        self._action_plans: Callable[[str], _ActionPlan] = lru_cache(maxsize=cache_size)(self._compile)
        self._piece_plans: Callable[[str, bool], tuple[_Plan, ...] | None] = lru_cache(maxsize=cache_size)(
            self._plan_piece
        )
        self._editor_plans: Callable[[str, ToolArgValue | None], _EditorPlan] = lru_cache(maxsize=cache_size)(
            self._editor_outcome
        )
        # Calls without action text (function calling: LangChain, Claude Code, OpenHands, the proxy), by their
        # canonical call, so that a live agent's repeated calls are classified once, as repeated action
        # texts are.
        self._call_plans: Callable[[str, ToolCall], _ActionPlan] = lru_cache(maxsize=cache_size)(
            self._compile_call
        )

    def new_state(self) -> PhaseState:
        return PhaseState()

    def classify(self, event: ToolEvent, state: PhaseState) -> Classification:
        """Classify one tool call. Never mutates ``state`` and never raises."""
        try:
            action = event.action
            if isinstance(action, str):
                short = len(action) <= MEMO_TEXT_MAX
                plan = self._action_plans(action) if short else self._compile(action)
            else:
                plan = self._structured_plan(event)
            fixed = plan.fixed
            return fixed if fixed is not None else _resolve(plan, state)
        except Exception:
            label = event.tool if isinstance(event.tool, str) and event.tool else "unknown"
            return Classification(commands=(Command(label, GENERAL),))

    def _compile(self, action: str) -> _ActionPlan:
        return _ActionPlan(self._plan_action(action), self._commands)

    def _structured_plan(self, event: ToolEvent) -> _ActionPlan:
        call = self.actions.tool_call(event)
        tool = event.tool if isinstance(event.tool, str) else str(event.tool)
        if call.command is not None and len(call.command) > MEMO_TEXT_MAX:
            return self._compile_call(tool, call)
        return self._call_plans(tool, call)

    def _compile_call(self, tool: str, call: ToolCall) -> _ActionPlan:
        return _ActionPlan(self._plan_commands(paper_commands(tool, call), ""), self._commands)

    def _plan_action(self, action: str) -> tuple[_Plan, ...]:
        """The plans of an action text: :func:`~planguard.phases.shell.parse_action`, then :meth:`_plan`."""
        # clean_action(action), stripping first: the NUL test then runs on the stripped text only.
        s = action.strip()
        if not s:
            return (_THINK_PLAN,)
        if "\x00" in s:
            s = s.replace("\x00", "").strip()
            if not s:
                return ()
        if s.startswith(SRE_TOOL):
            editor = editor_call(s)
            if editor is not None:
                sub, path = editor
                label = _EDITOR_LABELS[sub]
                record, out = self._editor_plans(sub, path)
                return (_new_plan((label, hash((label, s)), record, out, out)),)
        plain = plain_pieces(s)
        if plain is not None:
            if len(plain) == 1:
                return self._plans_of_piece(s, False, action, True)
            plans: list[_Plan] = []
            for text in plain:
                plans.extend(self._plans_of_piece(text, False, action, True))
            return tuple(plans)
        if is_simple_heredoc(s):
            return self._plan_commands(parse_action(s), action)
        scanned = scan(s)  # what action_pieces(s) does once plain_pieces(s) is None
        if scanned is None:
            return self._plan_commands((complex_command(s),), action)
        pieces: Sequence[tuple[str, bool]] = scanned or (Piece(s, False),)
        plans = []
        for text, compound in pieces:
            plans.extend(self._plans_of_piece(text, compound, action))
        return tuple(plans)

    def _plans_of_piece(
        self, text: str, compound: bool, action: str, plain: bool = False
    ) -> tuple[_Plan, ...]:
        if compound:
            plans = None
        elif len(text) <= MEMO_TEXT_MAX:
            plans = self._piece_plans(text, plain)
        else:
            plans = self._plan_piece(text, plain)
        if plans is None:
            plans = self._plan_commands(piece_commands(Piece(text, compound)), action)
        return plans

    def _plan_piece(self, text: str, plain: bool) -> tuple[_Plan, ...] | None:
        """The plans of one top-level piece, or ``None`` when they depend on the rest of the action.

        A command whose first word is empty (``"" x``) is labelled with the whole action text.
        ``plain``: the piece is plain words separated by spaces (:func:`plain_pieces`).
        """
        if plain and "=" not in text and not text.startswith(SRE_TOOL):
            # piece_commands without its detours: no assignment, no editor call, and shlex splits plain
            # words at their spaces. The command word is not empty, so the action text is not needed.
            words = text.split()
            if words[0] != "submit":
                return (self._plan_bash(parse_bash(words, text)),)
        commands = piece_commands(Piece(text, False))
        for cmd in commands:
            if cmd.kind == "bash" and not cmd.command.strip():
                return None
        return tuple([self._plan(cmd, "") for cmd in commands])

    def _plan_commands(self, commands: Sequence[ParsedCommand], action: str) -> tuple[_Plan, ...]:
        if len(commands) == 1 and commands[0].kind == "think":
            return (_THINK_PLAN,)
        return tuple([self._plan(cmd, action) for cmd in commands])

    @abstractmethod
    def _plan(self, cmd: ParsedCommand, action: str) -> _Plan:
        """The state-independent part of the rules for one sub-command."""

    def _plan_bash(self, cmd: ParsedCommand) -> _Plan:
        """``_plan(cmd, "")`` for a ``bash`` command whose command word is not blank."""
        label = cmd.command.strip()
        return self._plan_shell(cmd, label, hash((label, cmd.args, _by_key(cmd.flags))))

    @abstractmethod
    def _plan_shell(self, cmd: ParsedCommand, label: str, node: int) -> _Plan:
        """The rules for a ``bash`` sub-command."""

    @abstractmethod
    def _editor_outcome(self, sub: str, raw_path: ToolArgValue | None) -> _EditorPlan:
        """``(paths recorded as created tests, outcome)`` of an editor call with this subcommand and path."""

    def _plan_editor(self, cmd: ParsedCommand, label: str, node: int) -> _Plan:
        record, out = self._editor_plans(cmd.subcommand, cmd.tool_arg("path"))
        return _Plan(label, node, record, out, out)


_EDITOR_LABELS = {sub: f"{SRE_TOOL}: {sub}" for sub in SRE_SUBCOMMANDS}


#: The role of an outcome that does not depend on the session state (no test, no ``created_alt``).
_FIXED_ROLE = {_GENERAL: GENERAL, _NAV: NAVIGATE, _PATCH: PATCH}


def _role(outcome: _Outcome, has_patch: bool, state: PhaseState, local: Sequence[str]) -> str:
    kind = outcome.kind
    if kind != _TEST:
        role = _FIXED_ROLE[kind]
    else:
        newly = _any_created(outcome.targets, state, local) if outcome.targets else outcome.inline
        if has_patch:
            role = VALIDATE_NEW if newly else VALIDATE_REGRESSION
        else:
            role = REPRODUCE_NEW if newly else REPRODUCE_REGRESSION
    if (
        outcome.created_alt
        and role not in (REPRODUCE_NEW, VALIDATE_NEW)
        and _any_created(outcome.created_alt, state, local)
    ):
        role = VALIDATE_NEW if has_patch else REPRODUCE_NEW
    return role


def _resolve(action: _ActionPlan, state: PhaseState) -> Classification:
    if action.fixed is not None:
        return action.fixed
    plans = action.plans
    cache = action.cache
    if len(plans) == 1:
        p = plans[0]
        has_patch = state.has_patch
        out = p.post if has_patch else p.pre
        if out.kind != _TEST and not out.created_alt:
            role = _FIXED_ROLE[out.kind]
        else:
            role = _role(out, has_patch, state, p.record)
        c = cache.get(role)
        if c is None:
            single: tuple[int, ...] = (p.node,) if p.node is not None else ()
            c = make_classification((action.commands[p.label, role],), p.record, role == PATCH, single)
            cache[role] = c
        return c
    order: Sequence[_Plan] = plans
    ordered = True
    if len(plans) > 1:
        # The paper lists a step's sub-commands in the order their graph nodes were created: those seen
        # in earlier steps first (by first sighting), then the new ones in source order.
        seen = state.nodes
        if action.distinct:
            # Distinct nodes: new ones rank after every seen one, in source order, so the source order
            # holds exactly when the seen ones come first, in the order they were seen.
            last = -1
            for n in action.nodes:
                rank = seen.get(n)
                if rank is None:
                    last = state.node_count
                elif rank < last:
                    ordered = False
                    break
                else:
                    last = rank
        if not action.distinct or not ordered:
            ordered = True
            ranks: list[int] = []
            fresh: dict[int, int] = {}
            base = state.node_count
            last = -1
            for p in plans:
                node = p.node
                rank = seen.get(node) if node is not None else None
                if rank is None:
                    key = node if node is not None else -len(fresh) - 1
                    rank = fresh.get(key)
                    if rank is None:
                        rank = fresh[key] = base + len(fresh)
                if rank < last:
                    ordered = False
                last = rank
                ranks.append(rank)
            if not ordered:
                order = [plans[k] for k in sorted(range(len(plans)), key=ranks.__getitem__)]
    has_patch = state.has_patch
    local: list[str] = []
    roles: list[str] = []
    for p in order:
        if p.record:
            for path in p.record:
                if path not in local:
                    local.append(path)
        out = p.post if has_patch else p.pre
        if out.kind != _TEST and not out.created_alt:
            role = _FIXED_ROLE[out.kind]
        else:
            role = _role(out, has_patch, state, local)
        if role == PATCH:
            has_patch = True
        roles.append(role)
    # For a given order, the roles decide the rest (labels, created tests, patched, nodes).
    key_roles = tuple(roles)
    if ordered and cache:
        c = cache.get(key_roles)
        if c is not None:
            return c
    c = make_classification(
        tuple([action.commands[p.label, r] for p, r in zip(order, roles, strict=True)]),
        tuple(local),
        PATCH in key_roles,
        action.nodes,
    )
    if ordered and len(cache) < _ActionPlan.MAX_CACHED:
        cache[key_roles] = c
    return c


def _any_created(paths: tuple[str, ...], state: PhaseState, local: Sequence[str]) -> bool:
    created, names = state.created, state.created_basenames
    for t in paths:
        if t in created or t.rsplit("/", 1)[-1] in names:  # state.is_created(t), inlined
            return True
        if local:
            name = basename(t)
            for c in local:
                if c == t or basename(c) == name:
                    return True
    return False


_new_outcome: Callable[[tuple[int, tuple[str, ...], bool, tuple[str, ...]]], _Outcome] = partial(
    tuple.__new__, _Outcome
)


def _test_outcome(targets: Sequence[str], inline: bool = False) -> _Outcome:
    return _new_outcome((_TEST, tuple(targets), inline, ()))


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

    def _plan(self, cmd: ParsedCommand, action: str) -> _Plan:
        label = _label(cmd, action)
        if cmd.kind == "think":
            return _THINK_PLAN
        node = _node(cmd, label)
        if cmd.kind == "other" or (cmd.kind == "tool" and cmd.tool != SRE_TOOL):
            return _make_plan(label, node, (), _O_GENERAL, _O_GENERAL)
        if cmd.kind == "tool":
            return self._plan_editor(cmd, label, node)
        return self._plan_shell(cmd, label, node)

    def _editor_outcome(self, sub: str, raw_path: ToolArgValue | None) -> _EditorPlan:
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
        if name not in _SHAPED and not _may_redirect(cmd.text):
            # Only the redirection rule could apply, and nothing in the text can look like one.
            return _new_plan((label, node, (), _O_GENERAL, _O_GENERAL))
        arg_tokens = _lower_all(cmd.args)
        paths = _pathish_tokens(arg_tokens)
        if "/" in name or name.startswith(_PATH_START) or name.endswith(_PY_END):  # _pathish(name)
            paths.append(name)
        if cmd.flags:
            flag_tokens = _flatten_flags(cmd.flags)
            tokens = arg_tokens + flag_tokens
            paths.extend(_pathish_tokens(flag_tokens))
            flags: Mapping[str, FlagValue] = dict(cmd.flags)
        else:
            tokens = arg_tokens
            flags = _NO_FLAGS
        test_paths = _paper_tests(paths) if paths else ()

        # Helpers are inlined below where their first test settles them: a Python-level call costs
        # about as much as the work each does, and this runs for every new shaped command.
        if name in _PY:
            heredoc = bool(flags.get("__heredoc__", False))
            if _contains_redirection(tokens) and not (heredoc and self._new):
                return _redirect_plan(label, node, tokens, None)
            # _inline_code(cmd, flags) is None without a heredoc or a -c flag.
            code = _inline_code(cmd, flags) if cmd.heredoc or "c" in flags else None
            edited = written_files(code) if code else ()
            if edited:
                tests = [f for f in edited if is_test_path_paper(f)]
                out = _test_outcome(tests) if tests else _O_PATCH
                return _new_plan((label, node, (), out, out))
            # _inline_key is False when a token looks like a path.
            inline = (not paths and _inline_key(name, tokens, paths)) or heredoc
            post = _new_outcome((_TEST, test_paths, inline, ()))  # _test_outcome(test_paths, inline)
            if heredoc or test_paths or name == "pytest" or inline:
                return _new_plan((label, node, (), post, post))
            return _new_plan((label, node, (), _O_GENERAL, post))

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
            out = _test_outcome(test_paths) if test_paths else _O_NAV
            return _new_plan((label, node, (), out, out))
        if self._new and name == "perl" and "i" not in flags and test_paths:
            out = _test_outcome(test_paths)
            return _new_plan((label, node, (), out, out))
        if self._new:
            edit = name == "touch" or (name in ("sed", "perl") and "i" in flags)
        else:
            edit = name in ("sed", "touch")
        if edit:
            out = _test_outcome(test_paths) if test_paths else _O_PATCH
            return _new_plan((label, node, (), out, out))
        if _contains_redirection(tokens):
            return _redirect_plan(label, node, tokens, _O_PATCH)
        return _new_plan((label, node, (), _O_GENERAL, _O_GENERAL))


def _redirect_plan(label: str, node: int, tokens: Sequence[str], fallback: _Outcome | None) -> _Plan:
    """The paper's redirection rule: test files written to are created tests; else ``fallback``."""
    targets = [t for t in _paths_after_redirection(tokens) if is_test_path_paper(t)]
    out = _test_outcome(targets) if (targets or fallback is None) else fallback
    return _make_plan(label, node, tuple(targets), out, out)


# --------------------------------------------------------------------------- registry


_INSTANCES: dict[str, PhaseClassifier] = {}


def get_rules(name: str = DEFAULT_VERSION) -> PhaseClassifier:
    """The rules named ``live`` (default: PHASES_LIVE.md), ``v351278e`` (the paper's newest) or ``v8ec988e``
    (the paper's artifacts); ``corrected`` is an alias of ``live``.

    Instances are shared: rules hold no session state, only bounded caches of parsed actions.
    """
    if name not in RULE_VERSIONS:
        raise ValueError(f"unknown phase rules {name!r}; valid choices: {', '.join(RULE_VERSIONS)}")
    name = RULE_ALIASES.get(name, name)
    rules = _INSTANCES.get(name)
    if rules is None:
        rules = LiveRules() if name == LIVE else PaperRules(name)
        _INSTANCES[name] = rules
    return rules
