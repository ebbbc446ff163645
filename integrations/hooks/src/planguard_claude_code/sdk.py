"""The previous module path of :mod:`planguard_hooks.sdk` (the Claude Agent SDK hooks)."""

from planguard_hooks.sdk import SDK_HOOK_EVENTS, hook_matchers

__all__ = ["SDK_HOOK_EVENTS", "hook_matchers"]
