"""Hook dialects: one hook service, each coding CLI's own hook contract at the edges, one module per CLI
(:mod:`.claude_code`, :mod:`.codex`, :mod:`.gemini`, :mod:`.opencode`; the contract in :mod:`.base`).

Classification, metrics and policies stay in planguard's core, which sees the CLI's own tool names and
arguments; ``README.md`` names the CLI releases each dialect was checked against.
"""

from __future__ import annotations

from .base import Dialect
from .claude_code import CLAUDE_CODE
from .codex import CODEX
from .gemini import GEMINI
from .opencode import OPENCODE

__all__ = ["CLAUDE_CODE", "CODEX", "DIALECTS", "GEMINI", "OPENCODE", "Dialect", "dialect"]

DIALECTS: dict[str, Dialect] = {d.name: d for d in (CLAUDE_CODE, CODEX, GEMINI, OPENCODE)}


def dialect(name: str | None) -> Dialect:
    """The dialect called ``name`` (None: Claude Code). Raises ValueError naming the known ones."""
    if name is None:
        return CLAUDE_CODE
    try:
        return DIALECTS[name]
    except KeyError:
        raise ValueError(f"unknown hook dialect {name!r}; expected one of {', '.join(DIALECTS)}") from None
