"""The agent's own plan: the todo list it writes with its todo/plan tool, read from the tool's payload.

Every supported tool replaces the whole list on each call; the payload shapes are the tools' own:

* Claude Code ``TodoWrite``: ``{"todos": [{"content", "status", "activeForm"}]}``, status ``pending`` |
  ``in_progress`` | ``completed`` (Claude Code's tool schema as the Agent SDK types it; real session
  lines with this shape are parsed in public session readers, e.g. hrntknr/claude-code-protocol
  docs/05_tool_todo.md);
* LangChain ``TodoListMiddleware`` / deepagents ``write_todos``: ``{"todos": [{"content", "status"}]}``
  (``langchain/agents/middleware/todo.py``: ``Todo(TypedDict)``);
* Codex ``update_plan``: ``{"explanation"?, "plan": [{"step", "status"}]}`` (codex-rs
  ``protocol/src/plan_tool.rs``: ``UpdatePlanArgs``, ``PlanItemArg``);
* OpenCode ``todowrite``: ``{"todos": [{"content", "status", "priority", "id"}]}`` (sst/opencode
  ``packages/opencode/src/tool/todo.ts``: ``TodoInfo``; later versions add status ``cancelled``);
* Gemini CLI ``write_todos``: ``{"todos": [{"description", "status"}]}``, status also ``cancelled``
  (google-gemini/gemini-cli ``docs/tools/todos.md``);
* Claude Code ``TaskCreate`` / ``TaskUpdate`` (``TaskList`` reads): one task per call, not the whole list —
  ``{"subject", "description", "activeForm"?}`` creates task ``#N`` (its result says which), ``{"taskId",
  "status"?, "subject"?}`` changes one (status ``deleted`` removes it); :func:`apply_task_call` applies
  them to the list as it stood;
* any other tool whose arguments hold a list of items with a text (``content``, ``title``, ``step``,
  ``description``, ``task``, ``text``) and a ``status``, under ``todos``, ``plan``, ``tasks``, ``items``,
  ``steps`` or ``todo_list``.

Statuses are normalised to :data:`PENDING`, :data:`IN_PROGRESS`, :data:`COMPLETED` and :data:`CANCELLED`
(``done``, ``in-progress``, ``not_started``, ``canceled``… are accepted). Lists and texts are bounded
(:data:`MAX_ITEMS`, :data:`MAX_TEXT`), so a hostile payload costs no more than a long list.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..documents import loads_json
from ..events import RECORDED_KEY, ToolEvent

__all__ = [
    "recorded_todo_event",
    "todo_reading",
    "CANCELLED",
    "COMPLETED",
    "IN_PROGRESS",
    "MAX_ITEMS",
    "MAX_TEXT",
    "PENDING",
    "TodoItem",
    "apply_task_call",
    "parse_todos",
]

PENDING = "pending"
IN_PROGRESS = "in_progress"
COMPLETED = "completed"
CANCELLED = "cancelled"

#: Items of one list that are kept (the rest of a longer list is ignored).
MAX_ITEMS = 100
#: Characters of an item's text that are kept.
MAX_TEXT = 200
#: Raw (unparsed) argument text that is parsed at most; longer text is not a todo payload worth reading.
_MAX_RAW = 1 << 16

#: The task a TaskCreate result names ("Task #3 created successfully: ...").
_TASK_ID = re.compile(r"#(\d+)")
_LIST_KEYS = ("todos", "plan", "tasks", "items", "steps", "todo_list")
_TEXT_KEYS = ("content", "title", "step", "description", "task", "text")
_STATUS: dict[str, str] = {
    **dict.fromkeys(("pending", "todo", "not_started", "open", "new", "planned", "waiting"), PENDING),
    **dict.fromkeys(("in_progress", "active", "doing", "started", "current", "working"), IN_PROGRESS),
    **dict.fromkeys(("completed", "complete", "done", "finished", "resolved", "succeeded"), COMPLETED),
    **dict.fromkeys(("cancelled", "canceled", "skipped", "removed", "dropped", "abandoned"), CANCELLED),
}


@dataclass(frozen=True, slots=True)
class TodoItem:
    """One item of the agent's list. ``key`` identifies it across updates: the tool's id when it has one
    (OpenCode), else the text, case and spacing folded."""

    key: str
    text: str
    status: str

    @property
    def open(self) -> bool:
        return self.status == PENDING or self.status == IN_PROGRESS


def parse_todos(event: ToolEvent) -> list[TodoItem] | None:
    """The list a todo/plan tool call writes, or None when its arguments hold no such list (a ``TodoRead``,
    a plan-mode call, a malformed payload). An empty list is a list: the agent cleared it."""
    args: Any = event.arguments
    if isinstance(args, str):
        if len(args) > _MAX_RAW or not args.lstrip().startswith("{"):
            return None
        try:
            args = loads_json(args)  # the model's text: the document reader's depth limit applies
        except ValueError:
            return None
    if not isinstance(args, Mapping):
        return None
    for key in _LIST_KEYS:
        value = args.get(key)
        if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
            items = _items(value)
            if items is not None:
                return items
    return None


def _items(raw: Sequence[Any]) -> list[TodoItem] | None:
    out: list[TodoItem] = []
    seen: set[str] = set()
    for entry in raw[:MAX_ITEMS]:
        if not isinstance(entry, Mapping):
            return None
        text = next((v for k in _TEXT_KEYS if isinstance(v := entry.get(k), str)), None)
        status = entry.get("status")
        if text is None or not isinstance(status, str):
            return None
        text = " ".join(text.split())[:MAX_TEXT]
        ident = entry.get("id")
        key = str(ident)[:MAX_TEXT] if isinstance(ident, (str, int)) and not isinstance(ident, bool) else ""
        key = key or text.casefold()
        if key in seen:  # the same item twice: keep the first
            continue
        seen.add(key)
        word = "_".join(status.lower().replace("-", " ").split())  # "In Progress", "in-progress"
        out.append(TodoItem(key, text, _STATUS.get(word, PENDING)))
    return out


def apply_task_call(event: ToolEvent, items: Sequence[TodoItem]) -> list[TodoItem] | None:
    """The list after one call of a one-task-per-call tool (Claude Code ``TaskCreate``/``TaskUpdate``) on
    ``items``, the list as it stood; None when the arguments are neither a task created (a ``subject``) nor
    one changed (a ``taskId``). Read from the arguments' shape, as :func:`parse_todos` reads a list."""
    args = event.arguments
    if not isinstance(args, Mapping):
        return None
    ident = args.get("taskId")
    subject = args.get("subject")
    status = args.get("status")
    status = _STATUS.get("_".join(status.lower().split()), PENDING) if isinstance(status, str) else None
    out = list(items)
    if isinstance(ident, (str, int)) and not isinstance(ident, bool):
        key = str(ident)[:MAX_TEXT]
        at = next((i for i, item in enumerate(out) if item.key == key), None)
        if args.get("status") == "deleted":
            return [item for item in out if item.key != key]
        old = out[at] if at is not None else TodoItem(key, f"task {key}", PENDING)
        text = " ".join(subject.split())[:MAX_TEXT] if isinstance(subject, str) else old.text
        new = TodoItem(key, text, status or old.status)
        if at is None:
            out.append(new)
        else:
            out[at] = new
        return out[:MAX_ITEMS]
    if isinstance(subject, str):
        named = _TASK_ID.search(event.result or "")
        numbers = [int(item.key) for item in out if item.key.isdigit()]
        key = named.group(1) if named else str(max(numbers, default=0) + 1)
        out = [item for item in out if item.key != key]
        out.append(TodoItem(key, " ".join(subject.split())[:MAX_TEXT], status or PENDING))
        return out[:MAX_ITEMS]
    return None


def todo_reading(event: ToolEvent, digest: Callable[[str], str]) -> dict[str, Any] | None:
    """What :func:`parse_todos` and :func:`apply_task_call` read of the call, without its texts — what a
    store kept without content records so that a replay keeps the list as the live run did: an argument
    object of the same shape, each item's key and text and a task's subject replaced by ``digest`` of
    them (equal texts, equal digests), a task id kept when it is a number, statuses as their words, and
    the task number the call's result names. None when the call's arguments hold no list and no task."""
    items = parse_todos(event)
    if items is not None:
        todos = [{"id": (d := digest(i.key)), "content": f"#{d}", "status": i.status} for i in items]
        return {"arguments": {"todos": todos}}
    args = event.arguments
    if not isinstance(args, Mapping):
        return None
    ident, subject, status = args.get("taskId"), args.get("subject"), args.get("status")
    has_id = isinstance(ident, (str, int)) and not isinstance(ident, bool)
    if not has_id and not isinstance(subject, str):
        return None
    out: dict[str, Any] = {}
    if has_id:
        key = str(ident)[:MAX_TEXT]
        out["taskId"] = key if key.isdigit() else f"#{digest(key)}"
    if isinstance(subject, str):
        out["subject"] = f"#{digest(' '.join(subject.split())[:MAX_TEXT])}"
    if isinstance(status, str):
        out["status"] = (
            "deleted" if status == "deleted" else _STATUS.get("_".join(status.lower().split()), PENDING)
        )
    named = _TASK_ID.search(event.result or "") if not has_id else None
    return {"arguments": out, "result": f"#{named.group(1)}" if named else None}


def recorded_todo_event(event: ToolEvent) -> ToolEvent:
    """The call as :func:`todo_reading` recorded it, when it was recorded without content; else ``event``."""
    recorded = event.metadata.get(RECORDED_KEY) if event.metadata else None
    reading = recorded.get("todo") if isinstance(recorded, Mapping) else None
    if not isinstance(reading, Mapping) or not isinstance(reading.get("arguments"), Mapping):
        return event
    result = reading.get("result")
    return ToolEvent(
        tool=event.tool,
        arguments=dict(reading["arguments"]),
        result=result if isinstance(result, str) else None,
    )
