"""Decision-window endpoints (Default-Trap paper §3.1) and the tool-call matchers that define targets.

Every window ends in exactly one of eight labels and every label stays in the analysis: A and B (a read of
one designated target), BOTH (one read covering both), OTHER (another read), ERROR (a terminal tool or
argument error), YIELD (a model response without a tool call), WRITE (a call outside the approved read set,
stopped before it changes state) and BUDGET (the response budget ran out first).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..events import ToolEvent

__all__ = ["ENDPOINTS", "ArgPredicate", "Endpoint", "MatcherSet", "ToolMatcher"]


class Endpoint(StrEnum):
    A = "A"
    B = "B"
    BOTH = "BOTH"
    OTHER = "OTHER"
    ERROR = "ERROR"
    YIELD = "YIELD"
    WRITE = "WRITE"
    BUDGET = "BUDGET"


#: All eight labels in the paper's order (analysis tables keep this order).
ENDPOINTS: tuple[Endpoint, ...] = tuple(Endpoint)


class ArgPredicate(BaseModel):
    """One condition on one argument. Exactly one of ``equals``/``in``/``regex``/``glob``/``exists``."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    key: str = Field(description="Argument name; dotted for nested objects (``filter.id``).")
    equals: Any = Field(None, description="The argument equals this value (numbers compare as numbers).")
    in_: list[Any] | None = Field(None, alias="in", description="The argument is one of these values.")
    regex: str | None = Field(None, description="The argument, as text, matches this regular expression.")
    glob: str | None = Field(None, description="The argument, as text, matches this shell pattern.")
    exists: bool | None = Field(None, description="The argument is present (true) or absent (false).")

    @model_validator(mode="after")
    def _one_test(self) -> ArgPredicate:
        given = [n for n in ("in_", "regex", "glob", "exists") if getattr(self, n) is not None]
        if self.equals is not None:
            given.append("equals")
        if len(given) != 1:
            raise ValueError("expected exactly one of equals, in, regex, glob, exists")
        if self.regex is not None:
            try:
                re.compile(self.regex)
            except re.error as exc:
                raise ValueError(f"regex: expected a valid regular expression ({exc})") from None
        return self

    def test(self, arguments: Mapping[str, Any] | str) -> bool:
        found, value = _lookup(arguments, self.key)
        if self.exists is not None:
            return found is self.exists
        if not found:
            return False
        if self.equals is not None:
            return bool(
                value == self.equals or (not isinstance(value, str) and str(value) == str(self.equals))
            )
        if self.in_ is not None:
            return value in self.in_ or str(value) in {str(v) for v in self.in_}
        text = value if isinstance(value, str) else str(value)
        if self.regex is not None:
            return re.search(self.regex, text) is not None
        return fnmatch.fnmatchcase(text, self.glob or "")


class ToolMatcher(BaseModel):
    """A tool call matches when its name matches ``tool`` (shell pattern) and every predicate in ``args``
    holds (``match: any``: at least one)."""

    model_config = ConfigDict(extra="forbid")

    tool: str = Field(description="Tool name or shell pattern (``get_order*``).")
    args: list[ArgPredicate] = Field(default_factory=list, description="Conditions on the arguments.")
    match: Literal["all", "any"] = Field("all", description="all: every predicate holds; any: one does.")

    def matches(self, event: ToolEvent) -> bool:
        # (fnmatch keeps the compiled patterns; a name without wildcards must equal the tool's)
        if not fnmatch.fnmatchcase(event.tool, self.tool):
            return False
        if not self.args:
            return True
        held = (p.test(event.arguments) for p in self.args)
        return all(held) if self.match == "all" else any(held)


class MatcherSet:
    """Several matchers; ``matches(event)`` is true when any of them matches."""

    __slots__ = ("_ms",)

    def __init__(self, matchers: list[ToolMatcher] | None) -> None:
        self._ms = tuple(matchers or ())

    def __bool__(self) -> bool:
        return bool(self._ms)

    def matches(self, event: ToolEvent) -> bool:
        return any(m.matches(event) for m in self._ms)


def _lookup(arguments: Mapping[str, Any] | str, key: str) -> tuple[bool, Any]:
    value: Any = arguments
    for part in key.split("."):
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        else:
            return False, None
    return True, value
