"""Types shared by every loader, plus the small coercions the native formats force on us."""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from planguard.events import MessageEvent, ToolEvent

from ._json import loads

__all__ = ["STANDARD_META_KEYS", "LoadError", "LoadNote", "Trajectory", "add_turn", "new_meta"]

#: Keys every ``Trajectory.meta`` carries (``None`` when the source does not record them), so consumers
#: can index them without ``.get`` and without knowing the format.
STANDARD_META_KEYS: tuple[str, ...] = (
    "instance_id",
    "model",
    "run",
    "resolution_status",
    "resolved",
    "exit_status",
    "final_text",
    "task",
    "n_model_calls",
)


@dataclass(slots=True)
class Trajectory:
    """One recorded agent run, reduced to its tool calls and conversation turns.

    ``id`` is the JSONL record's id (or instance id) for line-oriented corpora and the file stem for
    single-run files; sub-agent transcripts of Claude Code get ``"<session>/<agentId>"``. ``source`` is
    ``"path"`` or ``"path:line"``. ``meta`` always holds :data:`STANDARD_META_KEYS` plus format extras.
    """

    id: str
    source: str
    format: str
    events: list[ToolEvent] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    #: The conversation turns (the assistant's text to the user, the user's replies), each with the number
    #: of ``events`` that came before it: not steps, but a plan may match them (``match: {message: ...}``).
    messages: list[tuple[int, MessageEvent]] = field(default_factory=list)

    def add_message(self, role: str, text: Any, time: float | None = None) -> None:
        """A turn after the events loaded so far (empty or non-text turns are left out)."""
        add_turn(self.messages, len(self.events), role, text, time)


def add_turn(
    turns: list[tuple[int, MessageEvent]], at: int, role: str, text: Any, time: float | None = None
) -> None:
    """A conversation turn after ``at`` events (for loaders that build the run's lists before the run);
    empty or non-text turns are left out."""
    if isinstance(text, str) and text.strip():
        turns.append((at, MessageEvent(role, text, time)))


class LoadError(Exception):
    """A file or JSONL line that could not be turned into a trajectory.

    ``str(err)`` is ``"PATH[:LINE]: what is wrong and what was expected"``. Loaders *yield* these instead
    of raising, so one bad record never hides the rest of a corpus.
    """

    # Positional args mirror ``self.args`` so the exception survives pickling (multiprocessing replay).
    def __init__(self, path: str | os.PathLike[str], message: str, line: int | None = None) -> None:
        super().__init__(str(path), message, line)
        self.path = str(path)
        self.message = message
        self.line = line

    #: Whether the input failed (replay exits 1); a :class:`LoadNote` only informs.
    fatal = True

    @property
    def location(self) -> str:
        return self.path if self.line is None else f"{self.path}:{self.line}"

    def __str__(self) -> str:
        return f"{self.location}: {self.message}"


class LoadNote(LoadError):
    """Something a reader should know about an input that is not a failure: a file skipped on purpose (a
    Claude Code compaction transcript) or a run with no tool calls at all. Yielded like a LoadError, so
    nothing is dropped silently, but ``fatal`` is False: replay prints it and still exits 0."""

    fatal = False


#: Record types that are tool calls in the formats planguard reads (Anthropic ``tool_use``, OpenAI
#: Responses ``function_call``/``custom_tool_call``/``local_shell_call``, OpenCode ``tool`` parts).
_CALL_TYPES = frozenset({"tool_use", "function_call", "custom_tool_call", "local_shell_call"})
#: OpenHands V0 action names that are not tool calls.
_NOT_CALL_ACTIONS = frozenset({"", "message", "system", "recall", "change_agent_state", "null"})
_WALK_LIMIT = 100_000


def count_tool_calls(value: Any) -> int:
    """How many tool calls a raw record or document holds, by the shapes of every format planguard reads
    (bounded: at most :data:`_WALK_LIMIT` nodes are visited, no recursion). Used only on a run that loaded
    with no events, to tell an unreadable run from one that called no tools."""
    found = 0
    stack = [value]
    visited = 0
    while stack and visited < _WALK_LIMIT:
        node = stack.pop()
        visited += 1
        if isinstance(node, list):
            stack.extend(node)
            continue
        if not isinstance(node, dict):
            continue
        kind = node.get("type")
        action = node.get("action")
        if (
            node.get("kind") == "ActionEvent"
            or (isinstance(kind, str) and kind in _CALL_TYPES)
            or (kind == "tool" and "callID" in node)  # an OpenCode tool part
        ):
            found += 1
        elif isinstance(node.get("tool_calls"), list) or isinstance(node.get("toolCalls"), list):
            calls = node.get("tool_calls") or node.get("toolCalls")
            found += len(calls) if isinstance(calls, list) else 0
        elif isinstance(action, str) and action.strip() and action not in _NOT_CALL_ACTIONS:
            found += 1
        stack.extend(v for v in node.values() if isinstance(v, (dict, list)))
    return found


def checked_run(run: Trajectory, raw: Any, path: str, line: int | None) -> Iterator[Trajectory | LoadError]:
    """``run``, unless it came back empty: a run with no events although ``raw`` holds tool calls is a
    loader that could not read the format, reported as a LoadError (replay exits 1) instead of a silent
    zero-step run; a run that truly called no tools is yielded with a :class:`LoadNote` saying so."""
    if run.events:
        yield run
        return
    n_calls = count_tool_calls(raw)
    if n_calls:
        yield LoadError(
            path,
            f"{run.id}: holds {n_calls} tool call(s) but none loaded as a step; expected a {run.format} "
            "trajectory in a layout this loader reads (please report this layout)",
            line,
        )
        return
    yield run
    yield LoadNote(path, f"{run.id}: no tool calls; it replays with 0 steps", line)


def new_meta(**values: Any) -> dict[str, Any]:
    meta: dict[str, Any] = dict.fromkeys(STANDARD_META_KEYS)
    meta.update(values)
    return meta


def type_name(value: Any) -> str:
    """JSON vocabulary for error messages: users wrote JSON, not Python."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def text_of(content: Any) -> str:
    """Flatten chat ``content`` (a string or a list of typed blocks) to plain text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict):
                text = block.get("text")
                if isinstance(text, str):
                    parts.append(text)
                elif block.get("type") in ("image", "image_url"):
                    parts.append("[image]")
                else:
                    inner = block.get("content")
                    if inner is not None and inner is not content:
                        parts.append(text_of(inner))
        return "\n".join(parts)
    return str(content)


def coerce_mapping(value: Any) -> dict[str, Any] | None:
    """A dict, or a dict serialised as JSON or as a Python repr.

    Several public SWE-agent corpora were flattened by ``str()``-ing nested objects, so ``replay_config``,
    ``model_stats`` and ``state`` arrive as ``"{'name': 'gpt-4o', ...}"``; ``literal_eval`` reads those
    without executing anything.
    """
    if isinstance(value, dict):
        return value
    if not isinstance(value, str):
        return None
    text = value.strip()
    if not text.startswith("{"):
        return None
    try:
        parsed = loads(text)
    except (ValueError, RecursionError):
        try:
            parsed = ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return None
    return parsed if isinstance(parsed, dict) else None


def coerce_content(value: Any) -> Any:
    """Chat content that was ``str()``-ed from a block list (``"[{'type': 'text', ...}]"``) back to a list."""
    if isinstance(value, str) and value.startswith("[{") and value.endswith("}]"):
        try:
            parsed = ast.literal_eval(value)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return value
        if isinstance(parsed, list):
            return parsed
    return value


def dig(value: Any, *keys: str) -> Any:
    """``value[k1][k2]...`` through dicts or stringified dicts; ``None`` as soon as a level is missing."""
    for key in keys:
        mapping = coerce_mapping(value)
        if mapping is None:
            return None
        value = mapping.get(key)
    return value


def as_dict(value: Any) -> dict[str, Any]:
    """``value`` if it is an object, else an empty one: optional sub-objects are read without guards."""
    return value if isinstance(value, dict) else {}


def as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return None
    return None


def as_float(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def as_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def parse_time(value: Any) -> float | None:
    """Seconds since the epoch from an ISO-8601 string or a number (seconds or milliseconds).

    Naive ISO timestamps (OpenHands writes them) are taken as UTC: the recorder's zone is not stored,
    and a consistent guess keeps durations right, which is what monitors use.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        number = float(value)
        return number / 1000.0 if number > 1e11 else number
    if not isinstance(value, str) or not value:
        return None
    text = value.strip()
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def parse_arguments(raw: Any) -> dict[str, Any] | str:
    """Function-call arguments: the parsed object, or the raw text when it is not a JSON object."""
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            parsed = loads(raw)
        except (ValueError, RecursionError):
            return raw
        return parsed if isinstance(parsed, dict) else raw
    if raw is None:
        return {}
    return str(raw)
