"""``planguard install opencode``: planguard's plugin for OpenCode, shipped with this package.

OpenCode runs no hook commands; plugins (JavaScript modules in ``.opencode/plugin/``, or
``~/.config/opencode/plugin/``) get ``tool.execute.before`` (throw to refuse the call: the model reads the
error) and ``tool.execute.after`` (``output.output`` is what the model reads next). The plugin
(``opencode_plugin.js``) forwards both, as common-form hook payloads, to the same hook client and warm
daemon the other CLIs use, appends reminders to the tool's output, and ends the planguard session when
OpenCode's session goes idle. The hook command is written into the installed copy.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

__all__ = ["MARK", "install", "plugin_path", "plugin_text", "uninstall"]

#: The first line of planguard's plugin (what ``uninstall`` checks before deleting a file).
MARK = "// planguard plugin for OpenCode"
_TEMPLATE = Path(__file__).with_name("opencode_plugin.js")
_PLACEHOLDER = "/*PLANGUARD_COMMAND*/ []"
_TIMEOUT_PLACEHOLDER = "/*PLANGUARD_TIMEOUT_MS*/ 30000"


def plugin_path(scope: str = "project", project_dir: str | os.PathLike[str] | None = None) -> Path:
    """``project``: ``<dir>/.opencode/plugin/planguard.js``; ``user``:
    ``$XDG_CONFIG_HOME/opencode/plugin/planguard.js`` (``~/.config/...``)."""
    if scope == "user":
        config = os.environ.get("XDG_CONFIG_HOME") or os.path.join(Path.home(), ".config")
        return Path(config) / "opencode" / "plugin" / "planguard.js"
    if scope != "project":
        raise ValueError(f"opencode has no {scope} scope; use project or user")
    base = Path(project_dir) if project_dir is not None else Path.cwd()
    return base / ".opencode" / "plugin" / "planguard.js"


def plugin_text(command: str, *, timeout_s: int = 30) -> str:
    """The plugin with ``command`` (a shell command line, as :func:`settings.hook_command` makes it) as the
    hook client it runs."""
    text = _TEMPLATE.read_text(encoding="utf-8")
    if _PLACEHOLDER not in text or _TIMEOUT_PLACEHOLDER not in text:
        raise ValueError(f"{_TEMPLATE}: the plugin template lacks its placeholders")
    argv = json.dumps(shlex.split(command))
    return text.replace(_PLACEHOLDER, argv).replace(_TIMEOUT_PLACEHOLDER, str(int(timeout_s * 1000)))


def install(path: str | os.PathLike[str], text: str) -> None:
    p = Path(path)
    if p.exists() and not p.read_text(encoding="utf-8", errors="replace").startswith(MARK):
        raise ValueError(f"{p}: exists and is not planguard's plugin; move it first")
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, p)


def uninstall(path: str | os.PathLike[str]) -> bool:
    """Remove planguard's plugin file; False when there is none (another file there is left alone)."""
    p = Path(path)
    try:
        if not p.read_text(encoding="utf-8", errors="replace").startswith(MARK):
            return False
    except FileNotFoundError:
        return False
    p.unlink()
    return True
