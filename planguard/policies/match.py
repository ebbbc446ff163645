"""Which tool calls a policy is about: a tool-name pattern plus optional argument predicates.

Used by gates ("deny ``submit`` until …") and by the finish detection of the violation policy. Patterns are
compiled once at configuration time; the per-call check is a lookup of the tool name's answer (remembered for
up to ``_NAME_CACHE_MAX`` names) and, only for a matching tool, one ``re.search`` per argument predicate.

A store kept without content has no arguments to search: it keeps, per call, each argument predicate's
verdict by the predicate's id (:meth:`ToolMatcher.argument_facts`; an id is a hash of the key and the
regular expression, the same in every process), and a replay of it answers from those
(``RECORDED_KEY`` in the event's metadata, ``"args"``). A predicate the recording has no verdict for does
not match, and the call is marked ``"unjudged"`` there so that replay can say so.
"""

from __future__ import annotations

import fnmatch
import hashlib
import re
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..events import RECORDED_KEY, ToolEvent

__all__ = ["ToolMatcher", "ToolPattern", "compile_globs"]

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
        "*",
        description="fnmatch glob(s) on the tool name, e.g. 'submit' or ['bash', 'execute_*']; "
        "case-insensitive unless tool_case_sensitive (scaffolds spell one tool Bash, bash or BASH).",
    )
    tool_case_sensitive: bool = Field(False, description="Match the 'tool' globs case-sensitively.")
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


def compile_globs(globs: str | Sequence[str], *, case_sensitive: bool = False) -> re.Pattern[str]:
    """One regular expression equivalent to any of the fnmatch ``globs`` (case-insensitive by default)."""
    items = [globs] if isinstance(globs, str) else list(globs)
    if not items:
        return re.compile(r"(?!)")  # matches nothing
    flags = 0 if case_sensitive else re.IGNORECASE
    return re.compile("|".join(f"(?:{fnmatch.translate(g)})" for g in items), flags)


def predicate_id(key: str, pattern: str) -> str:
    """An argument predicate's id: a hash of its key and regular expression (config, not content)."""
    return hashlib.blake2b(f"{key}\0{pattern}".encode(), digest_size=6).hexdigest()


class _Compiled:
    __slots__ = ("arguments", "name")

    def __init__(self, p: ToolPattern):
        if p.tool_regex is not None:
            self.name = re.compile(p.tool_regex)
        else:
            self.name = compile_globs(p.tool, case_sensitive=p.tool_case_sensitive)
        self.arguments = tuple((k, re.compile(v), predicate_id(k, v)) for k, v in p.arguments.items())


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
        return any(not p or _arguments_match(event, p) for p in preds)

    def argument_facts(self, event: ToolEvent, into: dict[str, bool]) -> None:
        """Add to ``into`` whether each argument predicate of the patterns naming the event's tool matches
        the call, by predicate id: what a store without content keeps so that a replay can answer
        :meth:`matches`. A predicate ``into`` holds already (the same key and pattern in another matcher:
        the finish patterns are in several policies) is not judged again."""
        preds = self._by_name.get(event.tool)
        if preds is None:
            preds = self._for_name(event.tool)
        for p in preds:
            for pred in p:
                if pred[2] not in into:
                    into[pred[2]] = _arguments_match(event, (pred,))


_Pred = tuple[str, re.Pattern[str], str]  # (argument key, its regular expression, the predicate's id)


def _arguments_match(event: ToolEvent, preds: tuple[_Pred, ...]) -> bool:
    arguments = event.arguments
    if isinstance(arguments, str):
        return all(rx.search(arguments) is not None for _, rx, _ in preds)
    for key, rx, _ in preds:
        value = arguments.get(key)
        if value is None:  # (a call recorded without content has no arguments: its recorded verdicts)
            return _recorded_match(event, preds)
        if rx.search(value if isinstance(value, str) else str(value)) is None:
            return False
    return True


def _recorded_match(event: ToolEvent, preds: tuple[_Pred, ...]) -> bool:
    """The verdicts a recording without content kept for ``preds``: a predicate with none does not match,
    and the call is marked ``unjudged``. (No recording: no match.)"""
    recorded = event.metadata.get(RECORDED_KEY) if event.metadata else None
    if not isinstance(recorded, dict):
        return False
    facts = recorded.get("args")
    for _, _, pid in preds:
        verdict = facts.get(pid) if isinstance(facts, Mapping) else None
        if not isinstance(verdict, bool):
            recorded["unjudged"] = True
            return False
        if not verdict:
            return False
    return True
