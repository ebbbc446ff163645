"""Policies on the agent's own todo list (kept by :class:`~planguard.detectors.todo.TodoTracker`).

* **stale-plan reminder** — work has gone on for ``stale_after_calls`` tool calls with no update of a list
  that still has open items. Unlike the naive reminder users complain about (Claude Code's fires right
  after the agent updated its list, re-injects the whole list each time, ~15 times in three hours, and
  pushes toward performative list updates: anthropics/claude-code#56415, #52018), it names only the item in
  progress and what is left, never fires within ``quiet_after_update`` calls of an update, waits another
  ``stale_after_calls`` calls before repeating, is capped per session, says that it is automatic, and
  does not ask for an update for its own sake.
* **finish check** — a finish/submit call while items are open is denied (``finish_check: deny``, at most
  ``max_finish_denials`` times) or answered with a reminder (``remind``), naming the open items.

Both stay silent for an agent that has written no todo list: they activate once a todo tool is seen.
Reminders are delivered as the other policies' are (``delivery``); the tracker's
``todo_done_without_work`` findings go through ``policies.responses`` like every finding.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..decisions import Decision, DecisionKind
from ..detectors.todo import TodoState
from ..sinks.redact import redact_text
from ..stages import Policy
from ..tools.todo import TodoItem
from ._plan_view import REMINDER_PREFIX
from .match import ToolMatcher, ToolPattern
from .reminder import check_template
from .violations import DEFAULT_FINISH_TOOLS

if TYPE_CHECKING:
    from ..session import Session
    from ..step import Step

__all__ = ["TODO_FIELDS", "TodoConfig", "TodoPolicy"]

TODO_FIELDS: dict[str, str] = {
    "active": "the item in progress (or 'none marked in progress')",
    "left": "how many other items are still open, with the first few of them",
    "open": "every open item, quoted, separated by semicolons",
    "done": "items completed",
    "total": "items on the list (cancelled ones not counted)",
    "calls": "tool calls since the list was last updated",
    "count": "the number of this reminder in the session (1, 2, ...)",
}

DEFAULT_STALE_TEMPLATE = (
    "PLAN REMINDER: (automatic note from planguard, not a new instruction: your todo list has not changed "
    "in {calls} tool calls) In progress: {active}. Still open: {left}. If the list is still accurate, "
    "carry on; update it when an item is done or the plan changes."
)
DEFAULT_FINISH_TEMPLATE = (
    "PLAN REMINDER: your todo list still has open items ({done} of {total} done): {open}. Finish them, or "
    "mark them completed or cancelled if they are done or no longer needed, before you finish."
)
#: Open items the stale reminder names after the one in progress.
_LEFT_NAMED = 3
#: Open items the finish check names at most.
_OPEN_NAMED = 20
#: Characters of an item's text the reminders quote.
_QUOTE = 80


def _template(v: str) -> str:
    return check_template(v, TODO_FIELDS)


class TodoConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(True, description="Watch the agent's own todo list (only once it has written one).")
    stale_after_calls: int | None = Field(
        10, ge=1, description="Remind after this many tool calls with no list update (null: never)."
    )
    quiet_after_update: int = Field(
        5, ge=0, description="Never remind within this many tool calls of a list update."
    )
    max_per_session: int | None = Field(
        3, ge=0, description="At most this many stale-list reminders per session (null: no cap)."
    )
    finish_check: Literal["deny", "remind", "off"] = Field(
        "deny",
        description="A finish/submit call while items are open: deny it naming them, remind (the call "
        "runs; the reminder goes into the next model request), or do nothing.",
    )
    max_finish_denials: int = Field(1, ge=0, description="Deny a finish call at most this many times.")
    finish_tools: list[ToolPattern] | None = Field(
        None,
        description="Tool calls that mean 'I am done' (null: policies.violations' built-in patterns plus the "
        "canonical action's completion flag).",
    )
    delivery: Literal["ephemeral", "persisted"] = Field(
        "ephemeral", description="How reminders reach the model (see policies.reminder.delivery)."
    )
    message: str = Field(
        DEFAULT_STALE_TEMPLATE,
        description="Stale-list reminder template; fields: " + ", ".join("{" + f + "}" for f in TODO_FIELDS),
    )
    finish_message: str = Field(DEFAULT_FINISH_TEMPLATE, description="Finish-check text template.")

    _check = field_validator("message", "finish_message")(_template)


@dataclass(slots=True)
class _State:
    sent: int = 0
    last_sent_steps: int = -1  # the session's tool-call count when the last reminder was sent
    finish_denials: int = 0
    finish_told: bool = False


class TodoPolicy(Policy):
    name = "todo"

    def __init__(self, config: TodoConfig | None = None):
        self.config = config = config or TodoConfig()
        self._stale = config.stale_after_calls if config.enabled else None
        self._quiet = config.quiet_after_update
        self._cap = config.max_per_session
        self._finish_mode = config.finish_check if config.enabled else "off"
        self._by_action = config.finish_tools is None
        self._finish = ToolMatcher(
            DEFAULT_FINISH_TOOLS if config.finish_tools is None else config.finish_tools
        )
        self.tool_matchers = (self._finish,)
        self._ephemeral = config.delivery == "ephemeral"
        t = config.message
        self._template = t if t.lstrip().startswith(REMINDER_PREFIX) else f"{REMINDER_PREFIX} {t}"
        f = config.finish_message
        self._finish_template = f if f.lstrip().startswith(REMINDER_PREFIX) else f"{REMINDER_PREFIX} {f}"

    def new_state(self) -> _State:
        return _State()

    @staticmethod
    def _todo(session: Session) -> TodoState | None:
        """The session's todo list (read by name, not kept here: a saved and restored session must not end
        up with two copies), or None while the agent has written none."""
        todo: TodoState | None = session.facts("todo")
        return todo if todo is not None and todo.updates else None

    # ------------------------------------------------------------------ hooks

    def before_tool(self, step: Step, session: Session, state: _State) -> Decision | None:
        todo = self._todo(session)
        if todo is None or self._finish_mode == "off":
            return None  # no todo list in this session: the finish check does not apply
        if not self.is_finish(step):
            return None
        open_items = todo.open_items
        if not open_items:
            return None
        text = self._render(self._finish_template, todo, session, open_items, state.sent)
        if self._finish_mode == "deny":
            if state.finish_denials >= self.config.max_finish_denials:
                return None
            state.finish_denials += 1
            return Decision(DecisionKind.DENY, text, self.name)
        if state.finish_told:
            return None
        state.finish_told = True
        d = Decision(DecisionKind.REMIND, text, self.name, None, self._ephemeral)
        session.queue(d)
        return d

    def before_model(self, session: Session, state: _State) -> Iterable[Decision]:
        stale = self._stale
        if stale is None:
            return ()
        todo = self._todo(session)
        if todo is None:
            return ()
        n = session.n_steps
        since = todo.calls_since_update(n)
        if since < stale or since < self._quiet:
            return ()
        if state.last_sent_steps >= 0 and n - state.last_sent_steps < stale:
            return ()  # reminded already: another stale stretch first
        if self._cap is not None and state.sent >= self._cap:
            return ()
        open_items = todo.open_items
        if not open_items:
            return ()
        state.sent += 1
        state.last_sent_steps = n
        text = self._render(self._template, todo, session, open_items, state.sent)
        return (Decision(DecisionKind.REMIND, text, self.name, None, self._ephemeral),)

    # ------------------------------------------------------------------ helpers

    def is_finish(self, step: Step) -> bool:
        """The call ends the run: the configured patterns; by default also the canonical action's flag."""
        if self._by_action and getattr(step.action, "is_completion", False):
            return True
        return self._finish.matches(step.event)

    def _render(
        self, template: str, todo: TodoState, session: Session, open_items: list[TodoItem], count: int
    ) -> str:
        current = todo.current
        rest = [i for i in open_items if i is not current]
        if rest:
            named = "; ".join(_quote(i) for i in rest[:_LEFT_NAMED])
            more = f" and {len(rest) - _LEFT_NAMED} more" if len(rest) > _LEFT_NAMED else ""
            left = f"{len(rest)} item{'s' if len(rest) != 1 else ''} ({named}{more})"
        else:
            left = "nothing else"
        fields: dict[str, Any] = {
            "active": _quote(current) if current is not None else "none marked in progress",
            "left": left,
            "open": "; ".join(_quote(i) for i in open_items[:_OPEN_NAMED])
            + (f" and {len(open_items) - _OPEN_NAMED} more" if len(open_items) > _OPEN_NAMED else ""),
            "done": todo.done,
            "total": todo.total,
            "calls": todo.calls_since_update(session.n_steps),
            "count": count,
        }
        return template.format_map(fields)


def _quote(item: TodoItem) -> str:
    # Redacted before it is cut: a secret cut in half would no longer look like one to the sinks' redaction.
    return f'"{redact_text(item.text, _QUOTE)}"'
