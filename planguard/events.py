"""The events integrations and loaders produce: a tool call, and a conversation turn.

An integration fills what it knows before the call runs (``tool``, ``arguments``, ``call_id``) and the
rest after it (``result``, ``is_error``, ``exit_code``, timing). Loaders fill everything at once.

A :class:`MessageEvent` is what the assistant said to the user or what the user (or a simulated user)
replied. It is not a step: it never changes tool-call metrics; a plan may match it (``match: {message:
...}``) to observe a phase that happens in the conversation, such as a customer's confirmation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ASSISTANT",
    "MESSAGE_ROLES",
    "RECORDED_KEY",
    "SHELL_TOOL",
    "THINK_TOOL",
    "USER",
    "MessageEvent",
    "ToolEvent",
]

#: ``ToolEvent.metadata`` key under which the store's reader hands replay a step's recorded classification —
#: ``{"commands": [[label, role], ...], "action": {...}, "args": {...}, "todo": {...}}`` — when the session
#: was kept without content (there are no arguments to classify again; see planguard/offline/replay.py):
#: its commands' roles, its action, and the facts argument-dependent decisions read of the call
#: (``args``: see planguard/policies/match.py; ``todo``: see planguard/tools/todo.py).
RECORDED_KEY = "planguard.recorded"
#: Tool name of a step that called no tool (a pure "think" step).
THINK_TOOL = ""
#: Tool name used for a raw shell line (SWE-agent string actions, mini-swe-agent bash blocks).
SHELL_TOOL = "bash"
#: A message's role: the user's (or a simulated user's) turn, or the assistant's text to the user.
USER = "user"
ASSISTANT = "assistant"
#: Role spellings of the frameworks and formats planguard reads -> the message role.
MESSAGE_ROLES: Mapping[str, str] = {
    USER: USER,
    "human": USER,
    ASSISTANT: ASSISTANT,
    "ai": ASSISTANT,
    "agent": ASSISTANT,
    "model": ASSISTANT,
}
#: ``metadata`` key of an event observed before, elsewhere, whose classification travels instead of its
#: content: a stored step's ``{"commands": [[label, role], ...], "action": {...}}`` (the store kept no
#: arguments; see planguard/offline/replay.py), or a turn's ``{"commands": ..., "hits": [...]}`` (a proxy
#: replica's log keeps the match, never the text).
RECORDED_KEY = "planguard.recorded"


@dataclass(slots=True)
class ToolEvent:
    """One tool call of an agent, before and/or after it ran.

    ``arguments`` is the parsed argument object when the framework has one, or the raw argument string
    when it could not be parsed (classifiers must accept both). ``action`` is the scaffold's own text
    rendering of the call when it has one (SWE-agent's byte-exact action string); the paper's rules
    classify that text, as the paper did, and fall back to ``tool``/``arguments`` when it is absent.
    """

    tool: str
    arguments: Mapping[str, Any] | str = field(default_factory=dict)
    call_id: str | None = None
    action: str | None = None
    # --- known after execution ---
    result: str | None = None
    is_error: bool = False
    exit_code: int | None = None
    start_time: float | None = None  # seconds since the epoch
    end_time: float | None = None
    # Free-form facts from the source (model name, message id, ...); never read on the hot path.
    metadata: Mapping[str, Any] = field(default_factory=dict)
    # Set when the agent's harness blocked the call before it ran (a recorded hook or guard denial), with
    # the reason the model saw: replay then counts a denial instead of a step, as the live run did.
    blocked: str | None = None

    @classmethod
    def shell(cls, command: str, **kwargs: Any) -> ToolEvent:
        """A raw shell line, as SWE-agent string actions and mini-swe-agent bash blocks are."""
        return cls(tool=SHELL_TOOL, arguments={"command": command}, action=command, **kwargs)

    @property
    def duration(self) -> float | None:
        if self.start_time is None or self.end_time is None:
            return None
        return self.end_time - self.start_time

    @property
    def failed(self) -> bool:
        """The call errored or exited non-zero."""
        return self.is_error or (self.exit_code is not None and self.exit_code != 0)

    def argument(self, key: str, default: Any = None) -> Any:
        """One argument, tolerant of raw-string arguments (returns ``default`` then)."""
        if isinstance(self.arguments, Mapping):
            return self.arguments.get(key, default)
        return default


@dataclass(slots=True)
class MessageEvent:
    """One conversation turn: ``role`` is :data:`USER` or :data:`ASSISTANT`, ``text`` what was said.

    Message text is content: planguard matches it in memory and keeps only the match (the phase it
    observed) unless content capture is on (``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``)."""

    role: str
    text: str
    time: float | None = None  # seconds since the epoch
    # Free-form facts from the source (a loader's turn index, a recorded match).
    metadata: Mapping[str, Any] = field(default_factory=dict)
