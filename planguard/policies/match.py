"""Which tool calls a policy is about: a tool-name pattern plus optional argument predicates.

Used by gates ("deny ``submit`` until …") and by the finish detection of the violation policy. Patterns are
compiled once at configuration time; the per-call check is a dict lookup on the tool name and, only for a
matching tool, one ``re.search`` per argument predicate.
"""

from __future__ import annotations

import fnmatch
import importlib
import re
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..events import ToolEvent

__all__ = ["ToolMatcher", "ToolPattern", "compile_globs", "literal_hints"]

#: Distinct tool names a matcher remembers the answer for (tool vocabularies are small; this bounds memory).
_NAME_CACHE_MAX = 1024


class ToolPattern(BaseModel):
    """A tool call pattern: the tool name matches ``tool`` (globs) or ``tool_regex``, and every argument
    predicate matches.

    ``arguments`` maps an argument key to a regular expression searched in that argument's text, e.g.
    ``{command: '^\\s*submit\\b'}`` for a shell ``submit``. When the framework passed arguments as one raw
    string, each predicate is searched in that string.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    tool: str | list[str] = Field(
        "*", description="fnmatch glob(s) on the tool name, e.g. 'submit' or ['bash', 'execute_*']."
    )
    tool_regex: str | None = Field(
        None,
        description="Regular expression on the tool name (re.fullmatch); used instead of 'tool' when set.",
    )
    arguments: dict[str, str] = Field(
        default_factory=dict,
        description="Argument key -> regular expression (re.search) that the argument's text must match.",
    )

    @field_validator("tool_regex")
    @classmethod
    def _valid_tool_regex(cls, v: str | None) -> str | None:
        if v is not None:
            _compile(v)
        return v

    @field_validator("arguments")
    @classmethod
    def _valid_argument_regexes(cls, v: dict[str, str]) -> dict[str, str]:
        for pattern in v.values():
            _compile(pattern)
        return v

    def compile(self) -> ToolMatcher:
        return ToolMatcher([self])


def _compile(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"expected a valid regular expression, got {pattern!r} ({exc})") from None


def compile_globs(globs: str | Sequence[str]) -> re.Pattern[str]:
    """One regular expression equivalent to any of the fnmatch ``globs`` (case-sensitive)."""
    items = [globs] if isinstance(globs, str) else list(globs)
    if not items:
        return re.compile(r"(?!)")  # matches nothing
    return re.compile("|".join(f"(?:{fnmatch.translate(g)})" for g in items))


def literal_hints(pattern: str) -> tuple[str, ...] | None:
    """Substrings of which at least one occurs in every text ``pattern`` matches (None: no such knowledge).

    Commands can be kilobytes long (heredocs, file contents) and a regex that begins with an alternation
    is tried at every position; ``"submit" in text`` is a memchr-speed pre-check that skips almost all of
    them. Read off the parsed pattern: the longest literal run of each top-level branch.
    """
    try:
        parser: Any = importlib.import_module("re._parser")
        parsed = parser.parse(pattern)
    except Exception:  # an optimisation only: without hints every text is searched
        return None
    if parsed.state.flags & (re.IGNORECASE | re.VERBOSE):
        return None
    return _hints(list(parsed), parser)


def _hints(seq: list[Any], parser: Any) -> tuple[str, ...] | None:
    if len(seq) == 1 and seq[0][0] is parser.BRANCH:
        out: list[str] = []
        for branch in seq[0][1][1]:
            h = _hints(list(branch), parser)
            if h is None:
                return None
            out.extend(h)
        return tuple(out)
    best, run = "", []
    for op, av in seq:
        if op is parser.LITERAL:
            run.append(chr(av))
            continue
        if len(run) > len(best):
            best = "".join(run)
        run = []
    if len(run) > len(best):
        best = "".join(run)
    return (best,) if best else None


class _Compiled:
    __slots__ = ("arguments", "name")

    def __init__(self, p: ToolPattern):
        self.name = re.compile(p.tool_regex) if p.tool_regex is not None else compile_globs(p.tool)
        self.arguments = tuple((k, re.compile(v), literal_hints(v)) for k, v in p.arguments.items())


class ToolMatcher:
    """Any of several compiled :class:`ToolPattern` s; thread-safe (its cache only gains equal values)."""

    __slots__ = ("_by_name", "_patterns")

    def __init__(self, patterns: Sequence[ToolPattern]):
        self._patterns = tuple(_Compiled(p) for p in patterns)
        # tool name -> the argument predicates of the patterns whose name part matches it, in order: most
        # tools match no pattern, so most calls cost this one lookup
        self._by_name: dict[str, tuple[tuple[_Pred, ...], ...]] = {}

    def __bool__(self) -> bool:
        return bool(self._patterns)

    def _for_name(self, tool: str) -> tuple[tuple[_Pred, ...], ...]:
        preds: list[tuple[_Pred, ...]] = []
        for p in self._patterns:
            if p.name.fullmatch(tool):
                preds.append(p.arguments)
                if not p.arguments:  # matches every call of the tool: later patterns are never asked
                    break
        hit = tuple(preds)
        if len(self._by_name) < _NAME_CACHE_MAX:
            self._by_name[tool] = hit
        return hit

    def matches(self, event: ToolEvent) -> bool:
        preds = self._by_name.get(event.tool)
        if preds is None:
            preds = self._for_name(event.tool)
        for p in preds:  # noqa: SIM110 (a plain loop: any() over a generator costs more than the check)
            if not p or _arguments_match(event.arguments, p):
                return True
        return False


_Pred = tuple[str, re.Pattern[str], tuple[str, ...] | None]


def _search(rx: re.Pattern[str], hints: tuple[str, ...] | None, text: str) -> bool:
    if hints is not None:
        for h in hints:  # a plain loop: a generator here would cost more than the scans
            if h in text:
                break
        else:
            return False
    return rx.search(text) is not None


def _arguments_match(arguments: Mapping[str, Any] | str, preds: tuple[_Pred, ...]) -> bool:
    if isinstance(arguments, str):
        return all(_search(rx, hints, arguments) for _, rx, hints in preds)
    for key, rx, hints in preds:
        value = arguments.get(key)
        if value is None or not _search(rx, hints, value if isinstance(value, str) else str(value)):
            return False
    return True
