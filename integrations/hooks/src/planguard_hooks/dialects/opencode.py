"""OpenCode has no command hooks: planguard's plugin (``opencode_plugin.js``, installed by
:mod:`planguard_hooks.opencode`) runs the hook client on ``tool.execute.before``/``after`` with payloads
already in the common form (its dialect only names the source) and throws to deny.
"""

from __future__ import annotations

from .base import Dialect

__all__ = ["OPENCODE", "OpenCodeDialect"]


class OpenCodeDialect(Dialect):
    name = "opencode"


OPENCODE = OpenCodeDialect()
