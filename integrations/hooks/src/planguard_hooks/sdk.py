"""The Claude Agent SDK's in-process hooks (``ClaudeAgentOptions(hooks=...)``), served by the same adapter
as the ``planguard hook claude-code`` command. Session state stays in the Guard's memory here.

    from claude_agent_sdk import ClaudeAgentOptions, query
    from planguard import Guard
    from planguard_hooks import hook_matchers

    guard = Guard.from_file("planguard.yaml")
    options = ClaudeAgentOptions(hooks=hook_matchers(guard), allowed_tools=["Bash", "Read", "Edit"])
    async for message in query(prompt="...", options=options):
        ...
    guard.end(session_id)   # the SDK has no SessionEnd hook: end the session when the run is over

Requires the ``sdk`` extra (``claude-agent-sdk``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .adapter import ClaudeCodeAdapter, GuardLike
from .translate import POST_TOOL_USE, POST_TOOL_USE_FAILURE, PRE_TOOL_USE, USER_PROMPT_SUBMIT

if TYPE_CHECKING:
    from claude_agent_sdk import HookMatcher

__all__ = ["SDK_HOOK_EVENTS", "hook_matchers"]

#: The SDK's hook events planguard answers (the SDK has no SessionEnd).
SDK_HOOK_EVENTS: tuple[str, ...] = (PRE_TOOL_USE, POST_TOOL_USE, POST_TOOL_USE_FAILURE, USER_PROMPT_SUBMIT)


def hook_matchers(
    guard: GuardLike, *, adapter: ClaudeCodeAdapter | None = None, timeout: float | None = None
) -> dict[str, list[HookMatcher]]:
    """``hooks=`` for ``ClaudeAgentOptions``: one matcher per event, every tool."""
    from claude_agent_sdk import HookMatcher

    adapter = adapter if adapter is not None else ClaudeCodeAdapter(guard)

    async def planguard_hook(input_data: Any, tool_use_id: str | None, context: Any) -> dict[str, Any]:
        # The guard's work is microseconds and never blocks on I/O, so it runs on the event loop.
        answer = adapter.handle(input_data)
        if "continue" in answer:  # the SDK spells the reserved word with a trailing underscore
            answer["continue_"] = answer.pop("continue")
        return answer

    return {
        event: [HookMatcher(matcher=None, hooks=[planguard_hook], timeout=timeout)]  # type: ignore[list-item]
        for event in SDK_HOOK_EVENTS
    }
