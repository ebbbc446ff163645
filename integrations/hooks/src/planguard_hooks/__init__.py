"""planguard for Claude Code: the ``planguard hook claude-code`` command (hooks in ``settings.json``,
one process per hook call, answered by a warm daemon, session state on disk) and the same adapter for the
Claude Agent SDK's in-process hooks.

* :func:`client.main` — the hook command (``planguard hook claude-code``): hands the call to the daemon
  (:mod:`.daemon`), or answers it in-process with :func:`service.main`.
* :func:`settings.install` — writes the hook entries into Claude Code settings (``planguard install
  claude-code``).
* :func:`sdk.hook_matchers` — ``ClaudeAgentOptions(hooks=...)`` for the Claude Agent SDK.
* :class:`ClaudeCodeAdapter` — payload → Guard calls → answer, for any other host of these hooks.

Names resolve lazily: the hook's fast path imports ``planguard_hooks.client`` and nothing else.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = [
    "HOOK_EVENTS",
    "ClaudeCodeAdapter",
    "HookState",
    "call_event",
    "hook_matchers",
    "result_event",
    "session_key",
]

_EXPORTS = {
    "ClaudeCodeAdapter": "adapter",
    "HookState": "adapter",
    "hook_matchers": "sdk",
    "HOOK_EVENTS": "translate",
    "call_event": "translate",
    "result_event": "translate",
    "session_key": "translate",
}

if TYPE_CHECKING:
    from .adapter import ClaudeCodeAdapter, HookState
    from .sdk import hook_matchers
    from .translate import HOOK_EVENTS, call_event, result_event, session_key


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'planguard_hooks' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
