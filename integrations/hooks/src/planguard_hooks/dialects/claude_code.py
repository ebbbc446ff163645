"""Claude Code (``.claude/settings.json``): its hook contract is the common form itself.

Events ``PreToolUse``, ``PostToolUse``, ``PostToolUseFailure``, ``UserPromptSubmit``, ``SessionEnd``; a
denial is ``permissionDecision: deny`` with a reason the model reads, reminders are ``additionalContext``.
"""

from __future__ import annotations

from .base import Dialect

__all__ = ["CLAUDE_CODE", "ClaudeCodeDialect"]


class ClaudeCodeDialect(Dialect):
    name = "claude-code"


CLAUDE_CODE = ClaudeCodeDialect()
