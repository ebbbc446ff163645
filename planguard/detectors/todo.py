"""The todo tracker: keeps the agent's own todo list per session and reports items marked done with no
work behind them.

It is shown only plan-tool calls (to read the list) and file writes and commands (to note the latest work):
for an agent with no todo tool that is one short call on those steps, and no todo state beyond three
integers.

``todo_done_without_work`` — an item turns ``completed`` with no work since it became ``in_progress`` (or,
when it was never marked in progress, since the list update before, when it was still open). Work is a
file write, a test run, or a call of a custom non-shell tool (which may act: a support agent's
``refund_order``). One finding per update, naming every such item; an item is reported at most once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..actions.types import ActionType
from ..findings import Finding
from ..stages import Detector
from ..tools.todo import (
    COMPLETED,
    IN_PROGRESS,
    PENDING,
    TodoItem,
    apply_task_call,
    parse_todos,
    recorded_todo_event,
)

if TYPE_CHECKING:
    from ..step import Step

__all__ = ["DONE_WITHOUT_WORK", "TodoState", "TodoTracker"]

DONE_WITHOUT_WORK = "todo_done_without_work"
#: Items named in one finding's evidence (the data carries the count).
_NAMED = 5


class _Tracked:
    """What the tracker remembers of one item between updates."""

    __slots__ = ("item", "reported", "since")

    def __init__(self, item: TodoItem, since: int) -> None:
        self.item = item
        self.since = since  # step index from which work counts towards this item
        self.reported = False


class TodoState:
    """One session's todo list as the agent last wrote it, and where it stands."""

    __slots__ = ("_tracked", "last_update", "last_work", "updates")

    def __init__(self) -> None:
        self._tracked: dict[str, _Tracked] = {}  # by item key, in list order
        self.updates = 0  # list writes seen
        self.last_update = -1  # step index of the latest list write
        self.last_work = -1  # step index of the latest file write or test call

    @property
    def active(self) -> bool:
        """The agent has written a todo list in this session."""
        return self.updates > 0

    @property
    def items(self) -> list[TodoItem]:
        return [t.item for t in self._tracked.values()]

    @property
    def open_items(self) -> list[TodoItem]:
        return [t.item for t in self._tracked.values() if t.item.open]

    @property
    def current(self) -> TodoItem | None:
        """The item in progress (the first, should the agent mark several)."""
        return next((t.item for t in self._tracked.values() if t.item.status == IN_PROGRESS), None)

    @property
    def done(self) -> int:
        return sum(1 for t in self._tracked.values() if t.item.status == COMPLETED)

    @property
    def total(self) -> int:
        """Items on the list, cancelled ones not counted."""
        return sum(1 for t in self._tracked.values() if t.item.open or t.item.status == COMPLETED)

    def calls_since_update(self, n_steps: int) -> int:
        """Tool calls run since the latest list write (``n_steps``: the session's count)."""
        return n_steps - 1 - self.last_update if self.active else 0

    def summary(self, n_steps: int) -> dict[str, Any]:
        current = self.current
        return {
            "done": self.done,
            "total": self.total,
            "active": None if current is None else current.text,
            "open": [i.text for i in self.open_items],
            "updates": self.updates,
            "calls_since_update": self.calls_since_update(n_steps),
        }

    def update(self, index: int, items: list[TodoItem]) -> list[TodoItem]:
        """Take the list written at step ``index``; returns the items it completes with no work behind
        them."""
        previous = self._tracked
        tracked: dict[str, _Tracked] = {}
        unearned: list[TodoItem] = []
        for item in items:
            old = previous.get(item.key)
            was_open = old is None or old.item.open
            if old is None:
                # New: work counts from now (from the previous write, if it arrives already done).
                t = _Tracked(item, self.last_update if item.status == COMPLETED else index)
                t.reported = item.status == COMPLETED and self.last_update < 0  # done before any list
            else:
                t = old
                if item.open and not old.item.open:  # reopened: a new piece of work
                    t.reported = False
                if item.status == PENDING or (item.status == IN_PROGRESS and old.item.status != IN_PROGRESS):
                    t.since = index  # work counts from when it was started, or last seen still to do
                t.item = item
            if item.status == COMPLETED and not t.reported and was_open:
                t.reported = True
                if self.last_work <= t.since:
                    unearned.append(item)
            tracked[item.key] = t
        self._tracked = tracked
        self.updates += 1
        self.last_update = index
        return unearned


class TodoTracker(Detector):
    """Reads the agent's todo list from its plan-tool calls (see :mod:`planguard.tools.todo`)."""

    name = DONE_WITHOUT_WORK
    types = frozenset({ActionType.PLAN, ActionType.FILE_WRITE, ActionType.COMMAND})
    provides = "todo"

    def new_state(self) -> TodoState:
        return TodoState()

    def observe(self, step: Step, state: TodoState) -> Finding | None:
        action = step.action
        if action is None:  # a pipeline without canonical actions: nothing to go by
            return None
        if action.type is not ActionType.PLAN:
            # Work: a file write, a test run, or a call of the agent's own tool that is not a shell (a
            # support agent's refund_order is a COMMAND: it may act, so it counts, as a read of it would).
            if (
                action.type is ActionType.FILE_WRITE
                or action.is_validation
                or (action.type is ActionType.COMMAND and action.shell is None)
            ):
                state.last_work = step.index
            return None
        if step.event.failed:  # the tool refused the list: it is not the agent's list
            return None
        event = recorded_todo_event(step.event)  # (a call recorded without content: what it wrote)
        items = parse_todos(event)
        if items is None:
            items = apply_task_call(event, state.items)
        if items is None:
            return None
        unearned = state.update(step.index, items)
        if not unearned:
            return None
        names = "; ".join(f'"{i.text}"' for i in unearned[:_NAMED])
        more = f" and {len(unearned) - _NAMED} more" if len(unearned) > _NAMED else ""
        return Finding(
            DONE_WITHOUT_WORK,
            step.index,
            step.index,
            f"todo item(s) marked completed with no file write or test run since they were started: "
            f"{names}{more}",
            {"items": len(unearned)},
        )
