"""Writes planguard's hook entries into a Claude Code ``settings.json`` (``planguard install claude-code``).

Only planguard's own entries are touched: installing twice leaves one set, other hooks and settings are
kept as they are, and ``uninstall`` removes exactly what ``install`` added. The file is replaced
atomically; a file that is not a JSON object is an error naming it, never overwritten.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from .translate import HOOK_EVENTS, POST_TOOL_USE, POST_TOOL_USE_FAILURE, PRE_TOOL_USE

__all__ = ["Scope", "hook_command", "install", "is_planguard_hook", "merged", "settings_path", "uninstall"]

Scope = Literal["project", "local", "user"]
_TOOL_EVENTS = (PRE_TOOL_USE, POST_TOOL_USE, POST_TOOL_USE_FAILURE)
_MARK = "hook claude-code"
#: Seconds Claude Code waits for one hook call before going on without it.
DEFAULT_TIMEOUT_S = 30


def settings_path(scope: Scope, project_dir: str | os.PathLike[str] | None = None) -> Path:
    """``project``: ``<dir>/.claude/settings.json`` (shared with the team); ``local``:
    ``<dir>/.claude/settings.local.json`` (yours only); ``user``: ``~/.claude/settings.json`` (all
    projects)."""
    if scope == "user":
        return Path.home() / ".claude" / "settings.json"
    base = Path(project_dir) if project_dir is not None else Path.cwd()
    return base / ".claude" / ("settings.local.json" if scope == "local" else "settings.json")


def hook_command(
    config: str | os.PathLike[str] | None = None,
    state_dir: str | os.PathLike[str] | None = None,
    executable: str | None = None,
) -> str:
    """The shell command Claude Code runs: this installation's ``planguard`` by absolute path (Claude Code's
    PATH may not include the virtualenv), or ``python -m planguard`` when there is no script."""
    if executable is None:
        script = Path(sys.executable).with_name("planguard")
        found = str(script) if script.exists() else shutil.which("planguard")
        parts = [found] if found else [sys.executable, "-m", "planguard"]
    else:
        parts = [executable]
    parts += ["hook", "claude-code"]
    if config is not None:
        parts += ["--config", str(Path(config).resolve())]
    if state_dir is not None:
        parts += ["--state-dir", str(Path(state_dir).resolve())]
    return shlex.join(parts)


def is_planguard_hook(handler: Any) -> bool:
    return (
        isinstance(handler, dict)
        and isinstance(handler.get("command"), str)
        and (_MARK in handler["command"] or "planguard-claude-code-hook" in handler["command"])
    )


def _read(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"{path}:{exc.lineno}: not valid JSON ({exc.msg}); fix or move the file first"
        ) from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object of settings, got {type(data).__name__}")
    hooks = data.get("hooks")
    if hooks is not None and not isinstance(hooks, dict):
        raise ValueError(f"{path}: 'hooks' must be an object of hook events, got {type(hooks).__name__}")
    return data


def _write(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _strip(hooks: dict[str, Any]) -> int:
    """Remove planguard's handlers from every event (dropping groups left empty); returns how many."""
    removed = 0
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept_groups = []
        for group in groups:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                handlers = [h for h in group["hooks"] if not is_planguard_hook(h)]
                removed += len(group["hooks"]) - len(handlers)
                if not handlers:
                    continue
                group = {**group, "hooks": handlers}
            kept_groups.append(group)
        if kept_groups:
            hooks[event] = kept_groups
        else:
            del hooks[event]
    return removed


def merged(
    path: str | os.PathLike[str],
    command: str,
    *,
    events: Sequence[str] = HOOK_EVENTS,
    timeout: int = DEFAULT_TIMEOUT_S,
) -> dict[str, Any]:
    """The settings at ``path`` with planguard's hooks added or refreshed (nothing written)."""
    data = _read(Path(path))
    hooks: dict[str, Any] = dict(data.get("hooks") or {})
    _strip(hooks)
    for event in events:
        group: dict[str, Any] = {"hooks": [{"type": "command", "command": command, "timeout": timeout}]}
        if event in _TOOL_EVENTS:
            group = {"matcher": "*", **group}
        hooks.setdefault(event, []).append(group)
    data["hooks"] = hooks
    return data


def install(
    path: str | os.PathLike[str],
    command: str,
    *,
    events: Sequence[str] = HOOK_EVENTS,
    timeout: int = DEFAULT_TIMEOUT_S,
) -> dict[str, Any]:
    """Add (or refresh) planguard's hooks in the settings file at ``path``; returns the new settings."""
    data = merged(path, command, events=events, timeout=timeout)
    _write(Path(path), data)
    return data


def uninstall(path: str | os.PathLike[str]) -> int:
    """Remove planguard's hooks from the settings file; returns how many handlers were removed."""
    p = Path(path)
    data = _read(p)
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return 0
    removed = _strip(hooks)
    if removed:
        if not hooks:
            del data["hooks"]
        _write(p, data)
    return removed
