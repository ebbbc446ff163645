"""The dialect contract: a CLI's hook payloads onto the common (Claude Code) form, the answers back.

The hook service (client, daemon, :class:`~planguard_hooks.service.HookRunner`, the adapter) speaks one event
form internally: Claude Code's hook payloads and answers (``PreToolUse``/``PostToolUse``/
``PostToolUseFailure``/``UserPromptSubmit``/``SessionEnd``). A :class:`Dialect` maps a CLI's payload onto
that form (:meth:`Dialect.common`) and the service's answer back into what the CLI understands
(:meth:`Dialect.answer`); nothing else knows which CLI is on the other end.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar

from ..translate import (
    POST_TOOL_USE,
    POST_TOOL_USE_FAILURE,
    PRE_TOOL_USE,
    SESSION_END,
    USER_PROMPT_SUBMIT,
)

__all__ = ["COMMON_FIELDS", "Dialect"]

#: Payload fields every CLI's events share with the common form.
COMMON_FIELDS = ("session_id", "transcript_path", "cwd", "agent_id", "agent_type")


class Dialect:
    """One CLI's hook contract. ``events`` maps the CLI's hook event names to the common ones; the base
    class is Claude Code's, where both are the same."""

    name = "claude-code"
    #: CLI event name -> common event name (only these are answered).
    events: ClassVar[Mapping[str, str]] = {
        e: e for e in (PRE_TOOL_USE, POST_TOOL_USE, POST_TOOL_USE_FAILURE, USER_PROMPT_SUBMIT, SESSION_END)
    }

    def gate_mark(self) -> str:
        """Text a raw payload of the CLI's before-tool event contains (for a payload too broken to read:
        a fail-closed gate must still deny it)."""
        pre = next(k for k, v in self.events.items() if v == PRE_TOOL_USE)
        return json.dumps(pre)

    def common(self, payload: Mapping[str, Any]) -> dict[str, Any] | None:
        """The payload in the common (Claude Code) form; None when planguard does not handle it."""
        event = payload.get("hook_event_name")
        if not isinstance(event, str) or event not in self.events:
            return None
        return {**payload, "hook_event_name": self.events[event]}

    def answer(self, answer: Mapping[str, Any], payload: Mapping[str, Any]) -> dict[str, Any]:
        """The service's answer (common form) as the CLI expects it; ``payload`` is the CLI's own."""
        return dict(answer)
