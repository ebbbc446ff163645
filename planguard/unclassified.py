"""Calls whose tool no mapping rule knows: their phases cannot be observed.

An agent whose tools planguard does not know (``frob_file``, ``run_it``) gets no phases, so a plan
reminder would claim every phase is missing and a phase gate would deny forever. A session counts those
calls; once most of its calls are unclassified it says so once (a log line naming the tools to map in
``tools.rules``), its summary and telemetry carry the count and the tool names, and the
policies that judge phases stand down (:meth:`Unclassified.reason`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["MAX_UNKNOWN_TOOLS", "NOTICE_AFTER", "Unclassified", "logger", "unobserved_reason"]

#: The notice's logger (a child of ``planguard``): ``planguard replay`` prints its own line per file instead.
logger = logging.getLogger("planguard.unclassified")

#: At most this many distinct unknown tool names are kept per session (their calls are all counted).
MAX_UNKNOWN_TOOLS = 32
#: Longer tool names are clipped (a name is text the agent or the framework chose).
MAX_TOOL_NAME = 100
#: A session is warned about once it has this many calls (one odd call is not a pattern).
NOTICE_AFTER = 3


@dataclass(slots=True)
class Unclassified:
    """Per-session count of calls of unknown tools, by tool name (bounded)."""

    calls: int = 0
    tools: dict[str, int] = field(default_factory=dict)
    noticed: bool = False

    def add(self, tool: object) -> None:
        """Count one call of ``tool`` (whatever the source put there: named by its text, clipped)."""
        self.calls += 1
        tool = (tool if isinstance(tool, str) else repr(tool))[:MAX_TOOL_NAME]
        if tool in self.tools or len(self.tools) < MAX_UNKNOWN_TOOLS:
            self.tools[tool] = self.tools.get(tool, 0) + 1

    def mostly(self, n_steps: int) -> bool:
        """More than half of the session's calls are unclassified."""
        return self.calls > 0 and 2 * self.calls > n_steps

    def reason(self, n_steps: int) -> str | None:
        """Why phases cannot be judged now (None when they can): most calls use unknown tools."""
        return unobserved_reason(self.calls, self.tools, n_steps)

    def notice(self, session_id: str, n_steps: int) -> None:
        """Log once per session, when most of at least :data:`NOTICE_AFTER` calls are unclassified."""
        if self.noticed or n_steps < NOTICE_AFTER or not self.mostly(n_steps):
            return
        self.noticed = True
        logger.warning(
            "planguard: session %s: %s; phase reminders and gates stand down until its phases are seen",
            session_id,
            self.reason(n_steps),
        )


def unobserved_reason(calls: int, tools: Mapping[str, int], n_steps: int) -> str | None:
    """``"7 of 9 tool calls use tools planguard cannot classify (frob, zap); map them in actions.rules"`` when
    more than half of ``n_steps`` calls are of unknown ``tools``, else None."""
    if calls <= 0 or 2 * calls <= n_steps:
        return None
    names = ", ".join(sorted(tools, key=lambda t: (-tools[t], t))) or "?"
    return (
        f"{calls} of {n_steps} tool calls use tools planguard cannot classify ({names}); "
        "map them in the config's tools.rules"
    )
