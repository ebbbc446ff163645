"""planguard for Claude Code: the ``planguard hook claude-code`` command (hooks in ``settings.json``,
one process per hook call, session state on disk) and the same adapter for the Claude Agent SDK's
in-process hooks.

* :func:`hook.main` — the hook command (``planguard hook claude-code``).
* :func:`settings.install` — writes the hook entries into Claude Code settings (``planguard install
  claude-code``).
* :func:`sdk.hook_matchers` — ``ClaudeAgentOptions(hooks=...)`` for the Claude Agent SDK.
* :class:`ClaudeCodeAdapter` — payload → Guard calls → answer, for any other host of these hooks.
"""

from __future__ import annotations

from .adapter import ClaudeCodeAdapter, HookState
from .sdk import hook_matchers
from .translate import HOOK_EVENTS, call_event, result_event, session_key

__all__ = [
    "HOOK_EVENTS",
    "ClaudeCodeAdapter",
    "HookState",
    "call_event",
    "hook_matchers",
    "result_event",
    "session_key",
]
