"""Writes planguard's hook entries into a CLI's hook settings (``planguard install claude-code|codex|
gemini``).

Claude Code (``.claude/settings.json``), Codex CLI (``.codex/hooks.json``) and Gemini CLI
(``.gemini/settings.json``) share one layout: ``hooks`` → event → groups ``{matcher?, hooks: [{type:
"command", command, timeout}]}``; what differs (event names, the tool matcher, the timeout's unit) is a
:class:`Target`. Only planguard's own entries are touched: installing twice leaves one set, other hooks
and settings are kept as they are, and ``uninstall`` removes exactly what ``install`` added. The file is
replaced atomically; a file that is not a JSON object is an error naming it, never overwritten.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from planguard.documents import DocumentError, loads_json

from .translate import (
    HOOK_EVENTS,
    POST_TOOL_USE,
    POST_TOOL_USE_FAILURE,
    PRE_TOOL_USE,
    SESSION_END,
    USER_PROMPT_SUBMIT,
)

__all__ = [
    "TARGETS",
    "Scope",
    "Target",
    "hook_command",
    "install",
    "is_planguard_hook",
    "merged",
    "settings_path",
    "uninstall",
]

Scope = Literal["project", "local", "user"]
_TOOL_EVENTS = (PRE_TOOL_USE, POST_TOOL_USE, POST_TOOL_USE_FAILURE)
#: What identifies planguard's handlers: the CLI form, the entry point, the hook client script.
_MARKS = (
    "hook claude-code",
    "hook codex",
    "hook gemini",
    "hook opencode",
    "planguard-hook",
    "planguard_hooks/launch.py",
    "planguard_hooks/client.py",
    # What earlier versions (planguard-agents-claude-code) installed: refreshed or removed like the rest.
    "planguard-claude-code-hook",
    "planguard_claude_code/launch.py",
    "planguard_claude_code/client.py",
)
#: Seconds a hook call answered in-process may spend building planguard (a loaded machine included).
BUILD_S = 10


def hook_bound_s(environ: Any = None) -> int:
    """The longest one hook call takes to answer, in whole seconds: the daemon's answer timeout
    (``PLANGUARD_HOOK_DAEMON_TIMEOUT_S``), then, answered in-process, the session lock's timeout and
    building planguard. A CLI that waited less would give up on the hook first (and Claude Code, Codex and
    Gemini CLI then let the call through: a fail-closed gate would not be asked), so this is the timeout
    ``install`` writes unless told otherwise."""
    from . import client
    from .state import LOCK_TIMEOUT_S

    return int(client.timeout_s(environ) + LOCK_TIMEOUT_S + BUILD_S + 0.999)


#: Seconds the CLI waits for one hook call before going on without it (the hook's bound, as set up here).
DEFAULT_TIMEOUT_S = hook_bound_s({})


@dataclass(frozen=True, slots=True)
class Target:
    """Where and how one CLI registers command hooks."""

    dialect: str  # the hook dialect its command speaks (planguard_hooks.dialects)
    folder: str  # the settings folder, in the project and in the home directory
    file: str  # the settings file in it
    events: tuple[str, ...]  # the CLI's hook events planguard registers
    tool_events: tuple[str, ...]  # those that take a tool matcher
    matcher: str | None  # the matcher for every tool (None: none, which matches all)
    timeout_factor: int = 1  # the timeout's unit: 1 = seconds, 1000 = milliseconds


TARGETS: dict[str, Target] = {
    "claude-code": Target("claude-code", ".claude", "settings.json", HOOK_EVENTS, _TOOL_EVENTS, "*"),
    "codex": Target(
        "codex",
        ".codex",
        "hooks.json",
        (PRE_TOOL_USE, POST_TOOL_USE, USER_PROMPT_SUBMIT, SESSION_END),
        (PRE_TOOL_USE, POST_TOOL_USE),
        None,
    ),
    "gemini": Target(
        "gemini",
        ".gemini",
        "settings.json",
        ("BeforeTool", "AfterTool", "BeforeAgent", "SessionEnd"),
        ("BeforeTool", "AfterTool"),
        ".*",
        timeout_factor=1000,
    ),
}


def settings_path(
    scope: Scope, project_dir: str | os.PathLike[str] | None = None, target: Target = TARGETS["claude-code"]
) -> Path:
    """``project``: ``<dir>/.claude/settings.json`` (shared with the team); ``local``:
    ``<dir>/.claude/settings.local.json`` (yours only, Claude Code only); ``user``:
    ``~/.claude/settings.json`` (all projects) — with ``target``'s folder and file for another CLI."""
    if scope == "user":
        return Path.home() / target.folder / target.file
    base = Path(project_dir) if project_dir is not None else Path.cwd()
    if scope == "local":
        if target.dialect != "claude-code":
            raise ValueError(f"{target.dialect} has no local settings scope; use project or user")
        return base / target.folder / "settings.local.json"
    return base / target.folder / target.file


def hook_command(
    config: str | os.PathLike[str] | None = None,
    state_dir: str | os.PathLike[str] | None = None,
    executable: str | None = None,
    *,
    daemon: bool = True,
    dialect: str = "claude-code",
    fail_closed: bool = False,
) -> str:
    """The shell command Claude Code runs.

    By default this installation's Python runs the hook client (``launch.py``) with ``-S``: the client needs
    only the standard library (it hands the call to the warm daemon), and skipping ``site`` (``.pth``
    files, editable-install finders) halves the start-up of every hook call; should it answer in-process,
    it loads ``site`` then. With ``executable``, that program is run as ``EXECUTABLE hook claude-code``
    (e.g. a ``planguard`` script). ``daemon=False`` adds ``--no-daemon``; ``dialect`` is the CLI whose
    payloads it reads (``--dialect`` of the client); ``fail_closed`` adds ``--fail-closed`` (a call planguard
    cannot answer at all is blocked, not let through: the config has a fail-closed gate)."""
    if executable is None:
        launcher = Path(__file__).resolve().with_name("launch.py")
        parts = [sys.executable, "-S", str(launcher)]
        if dialect != "claude-code":
            parts += ["--dialect", dialect]
    else:
        parts = [executable, "hook", dialect]
    if config is not None:
        parts += ["--config", str(Path(config).resolve())]
    if state_dir is not None:
        parts += ["--state-dir", str(Path(state_dir).resolve())]
    if not daemon:
        parts.append("--no-daemon")
    if fail_closed:
        parts.append("--fail-closed")
    return shlex.join(parts)


def is_planguard_hook(handler: Any) -> bool:
    return (
        isinstance(handler, dict)
        and isinstance(handler.get("command"), str)
        and any(mark in handler["command"] for mark in _MARKS)
    )


def _read(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    if not text.strip():
        return {}
    try:
        data = loads_json(text)
    except DocumentError as exc:
        where = f"{path}:{exc.line}" if exc.line else str(path)
        raise ValueError(f"{where}: {exc.problem}; fix or move the file first") from None
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
    events: Sequence[str] | None = None,
    timeout: int = DEFAULT_TIMEOUT_S,
    target: Target = TARGETS["claude-code"],
) -> dict[str, Any]:
    """The settings at ``path`` with planguard's hooks added or refreshed (nothing written); ``events``
    default to ``target``'s, ``timeout`` is in seconds."""
    data = _read(Path(path))
    hooks: dict[str, Any] = dict(data.get("hooks") or {})
    _strip(hooks)
    handler = {"type": "command", "command": command, "timeout": timeout * target.timeout_factor}
    for event in target.events if events is None else events:
        group: dict[str, Any] = {"hooks": [handler]}
        if event in target.tool_events and target.matcher is not None:
            group = {"matcher": target.matcher, **group}
        hooks.setdefault(event, []).append(group)
    data["hooks"] = hooks
    return data


def install(
    path: str | os.PathLike[str],
    command: str,
    *,
    events: Sequence[str] | None = None,
    timeout: int = DEFAULT_TIMEOUT_S,
    target: Target = TARGETS["claude-code"],
) -> dict[str, Any]:
    """Add (or refresh) planguard's hooks in the settings file at ``path``; returns the new settings."""
    data = merged(path, command, events=events, timeout=timeout, target=target)
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
