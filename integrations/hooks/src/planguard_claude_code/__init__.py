"""The previous name of :mod:`planguard_hooks` (distribution ``planguard-agents-claude-code``), kept so that
what was written for it goes on working: hook commands in settings written by earlier versions
(``python -S …/planguard_claude_code/launch.py``, see :mod:`.launch`) and code importing its public names
(``from planguard_claude_code import hook_matchers``). New code imports :mod:`planguard_hooks`."""

from __future__ import annotations

import warnings
from typing import Any

import planguard_hooks

__all__ = list(planguard_hooks.__all__)


def __getattr__(name: str) -> Any:
    value = getattr(planguard_hooks, name)
    warnings.warn(
        f"planguard_claude_code is now planguard_hooks: import {name} from there",
        DeprecationWarning,
        stacklevel=2,
    )
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
