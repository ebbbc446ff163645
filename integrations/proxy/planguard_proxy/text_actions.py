"""Text actions: agents without tool calling put the command in a fenced block of the assistant text.

mini-swe-agent's text-based mode asks for exactly one ```` ```mswea_bash_command ```` block (its v1 format and
SWE-agent-style prompts use ```` ```bash ````); the agent runs it and sends the output back as the next user
message, ``<returncode>N</returncode>`` first. The proxy reads such a block as a ``ToolEvent.shell`` when
the response has no tool calls, and the next user message as its result.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["DEFAULT_ACTION_REGEX", "DEFAULT_RETURNCODE_REGEX", "TextActions"]

DEFAULT_ACTION_REGEX = r"```(?:mswea_bash_command|bash|sh|shell)[ \t]*\r?\n(.*?)\r?\n[ \t]*```"
DEFAULT_RETURNCODE_REGEX = r"<returncode>\s*(-?\d+)\s*</returncode>"


@dataclass(frozen=True)
class TextActions:
    action_regex: str = DEFAULT_ACTION_REGEX
    returncode_regex: str = DEFAULT_RETURNCODE_REGEX
    exactly_one: bool = True  # mini-swe-agent runs nothing unless there is exactly one block

    def __post_init__(self) -> None:
        object.__setattr__(self, "_action", re.compile(self.action_regex, re.DOTALL))
        object.__setattr__(self, "_rc", re.compile(self.returncode_regex))

    def extract(self, text: str) -> list[tuple[str, str]]:
        """``(block as written, command)`` for each action block the agent will run."""
        found = [(m.group(0), m.group(1).strip()) for m in self._action.finditer(text)]  # type: ignore[attr-defined]
        found = [f for f in found if f[1]]
        if self.exactly_one and len(found) != 1:
            return []
        return found

    def exit_code(self, observation: str) -> int | None:
        m = self._rc.search(observation)  # type: ignore[attr-defined]
        return int(m.group(1)) if m else None
