"""Identical-call repeats: the failure users report most (the same search or command dozens of times).

Two patterns over the sequence of calls, keyed by tool + normalised arguments:

* **repeat**: the same call ``repeats`` (4) times in a row;
* **ping-pong**: two different calls alternating, A-B-A-B…, for ``cycles`` (3) full A-B cycles.

Each is reported when it first holds and again only after the pattern has broken. Normalisation
collapses whitespace and ignores cosmetic arguments (``description``, ``timeout``, ``thought``), so a
re-issued command with a different explanation still counts. Pure reasoning steps are not calls.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..events import THINK_TOOL, ToolEvent
from ..findings import Finding
from ..stages import Detector
from ._common import clip

if TYPE_CHECKING:
    from ..step import Step

__all__ = ["RepeatedCall", "call_key"]

#: Arguments that describe a call rather than define it.
COSMETIC_KEYS = frozenset(
    {
        "description",
        "timeout",
        "thought",
        "explanation",
        "reason",
        "run_in_background",
        "is_input",
        "security_risk",
    }
)
_SHORT = 512


def _norm(value: Any) -> Any:
    if isinstance(value, str):
        if len(value) > _SHORT or (
            "  " not in value
            and "\n" not in value
            and "\t" not in value
            and value[-1:] != " "
            and value[:1] != " "
        ):
            return value  # already normal (or too long to be worth it)
        return " ".join(value.split())
    return value  # compared with ==, so lists and dicts need no conversion


def call_key(event: ToolEvent) -> tuple[str, Any]:
    """Tool + normalised arguments, comparable with ``==`` (not necessarily hashable).

    The scaffold's own rendering of the call (``event.action``, SWE-agent's action string) is the
    cheapest faithful key when present; otherwise the arguments, cosmetic keys dropped.
    """
    action = event.action
    if isinstance(action, str) and action:
        return event.tool, _norm(action)
    args = event.arguments
    if isinstance(args, Mapping):
        if len(args) == 1:
            ((k, v),) = args.items()
            return event.tool, (k, _norm(v))
        if COSMETIC_KEYS.isdisjoint(args):
            return event.tool, tuple((k, _norm(v)) for k, v in args.items())
        return event.tool, tuple((k, _norm(v)) for k, v in args.items() if k not in COSMETIC_KEYS)
    return event.tool, _norm(args)


class _RepeatState:
    __slots__ = ("alt", "alt_fired", "alt_start", "prev", "prev2", "run", "run_fired", "run_start")

    def __init__(self) -> None:
        self.prev: tuple[str, Any] | None = None
        self.prev2: tuple[str, Any] | None = None
        self.run = 0
        self.run_start = 0
        self.run_fired = False
        self.alt = 0  # calls so far in the current A-B-A-B… stretch
        self.alt_start = 0
        self.alt_fired = False


class RepeatedCall(Detector):
    name = "repeated_call"

    def __init__(self, repeats: int = 4, cycles: int = 3) -> None:
        if repeats < 2 or cycles < 2:
            raise ValueError("repeats and cycles must be >= 2")
        self.repeats = repeats
        self.cycles = cycles

    def new_state(self) -> _RepeatState:
        return _RepeatState()

    def observe(self, step: Step, state: _RepeatState) -> Finding | None:
        event = step.event
        tool = event.tool
        if tool == THINK_TOOL:
            return None
        key = call_key(event)
        prev = state.prev
        prev2 = state.prev2
        state.prev2 = prev
        state.prev = key
        i = step.index
        if key == prev:
            state.run += 1
            if state.alt:
                state.alt = 0
                state.alt_fired = False
            if state.run >= self.repeats and not state.run_fired:
                state.run_fired = True
                return Finding(
                    self.name,
                    state.run_start,
                    i,
                    f"the same {tool or 'call'} call {state.run} times in a row "
                    f"(steps {state.run_start}–{i}): {clip(_show(key), 100)}",
                    {"pattern": "repeat", "count": state.run, "tool": tool},
                )
            return None
        state.run = 1
        state.run_start = i
        if state.run_fired:
            state.run_fired = False
        if prev is not None and key == prev2:
            if state.alt == 0:
                state.alt = 3
                state.alt_start = i - 2
            else:
                state.alt += 1
            if state.alt >= 2 * self.cycles and not state.alt_fired:
                state.alt_fired = True
                return Finding(
                    self.name,
                    state.alt_start,
                    i,
                    f"two calls alternating {state.alt // 2} times (steps {state.alt_start}–{i}): "
                    f"{clip(_show(prev2), 50)} ⇄ {clip(_show(prev), 50)}",
                    {"pattern": "ping-pong", "count": state.alt // 2, "tool": tool},
                )
        elif state.alt:
            state.alt = 0
            state.alt_fired = False
        return None


def _show(key: tuple[str, Any] | None) -> str:
    if key is None:
        return ""
    tool, args = key
    if (
        isinstance(args, tuple)
        and len(args) == 2
        and isinstance(args[0], str)
        and not isinstance(args[1], tuple)
    ):
        return f"{tool} {args[1]}"
    return f"{tool} {args}"
