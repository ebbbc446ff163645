"""``planguard install claude-code|codex|gemini|opencode [--scope project|local|user] [--config FILE]
[--uninstall]``

Writes planguard's hook entries into a CLI's settings: Claude Code ``project`` → ``.claude/settings.json``
(shared with the team), ``local`` → ``.claude/settings.local.json``, ``user`` → ``~/.claude/settings.json``;
Codex CLI ``.codex/hooks.json``; Gemini CLI ``.gemini/settings.json`` (in the project, or the home folder
for ``user``). OpenCode gets planguard's plugin in ``.opencode/plugin/planguard.js`` (``user``:
``~/.config/opencode/plugin/``). Other settings and hooks are kept; running it again refreshes planguard's
entries instead of adding more.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "install",
        help="register planguard's hooks with an agent (claude-code, codex, gemini, opencode)",
        description="Register planguard's hook command in an agent's settings (or its plugin, OpenCode).",
    )
    agents = p.add_subparsers(dest="agent", metavar="AGENT", required=True)
    for agent, about in _AGENTS.items():
        _add_options(agents.add_parser(agent, help=about, description=about[0].upper() + about[1:] + "."))
    p.set_defaults(func=run)


_AGENTS = {
    "claude-code": "write the hooks into Claude Code's settings.json",
    "codex": "write the hooks into Codex CLI's .codex/hooks.json",
    "gemini": "write the hooks into Gemini CLI's .gemini/settings.json",
    "opencode": "install planguard's OpenCode plugin into .opencode/plugin/",
}


def _add_options(cc: argparse.ArgumentParser) -> None:
    cc.add_argument(
        "--scope",
        choices=("project", "local", "user"),
        default="project",
        help="project: the project's settings (default); local: .claude/settings.local.json (Claude Code "
        "only); user: the settings in your home folder",
    )
    cc.add_argument(
        "--project-dir", metavar="DIR", help="project folder for project/local scope (default: .)"
    )
    cc.add_argument("--settings", metavar="FILE", help="write this settings file instead of the scope's")
    cc.add_argument(
        "--config", metavar="FILE", help="planguard config the hook should use (stored as absolute path)"
    )
    cc.add_argument("--state-dir", metavar="DIR", help="session state directory the hook should use")
    cc.add_argument(
        "--no-daemon",
        action="store_true",
        help="answer every hook call in its own process instead of through the warm hook daemon "
        "(slower start-up per call)",
    )
    cc.add_argument(
        "--timeout", type=int, default=30, metavar="S", help="seconds the CLI waits per hook call"
    )
    cc.add_argument("--uninstall", action="store_true", help="remove planguard's hooks instead")
    cc.add_argument(
        "--print", dest="dry_run", action="store_true", help="print the settings instead of writing"
    )


def run(args: argparse.Namespace) -> int:
    try:
        from planguard_claude_code import opencode, settings
    except ImportError:
        print(
            f"planguard install {args.agent}: the hook service (the Claude Code integration) is not "
            "installed (pip install 'planguard-agents[claude-code]')",
            file=sys.stderr,
        )
        return 2
    try:
        if args.agent == "opencode":
            message = _install_opencode(args, opencode, settings)
        else:
            message = _install_hooks(args, settings)
    except (ValueError, OSError) as exc:
        print(f"planguard install {args.agent}: {exc}", file=sys.stderr)
        return 2
    print(message)
    return 0


def _install_hooks(args: argparse.Namespace, settings: Any) -> str:
    """Write (or remove, or only show) the hook entries; what to tell the user."""
    target = settings.TARGETS[args.agent]
    path = (
        settings.settings_path(args.scope, args.project_dir, target)
        if args.settings is None
        else args.settings
    )
    if args.uninstall:
        return f"removed {settings.uninstall(path)} planguard hook(s) from {path}"
    command = settings.hook_command(
        args.config, args.state_dir, daemon=not args.no_daemon, dialect=target.dialect
    )
    if args.dry_run:
        return json.dumps(settings.merged(path, command, timeout=args.timeout, target=target), indent=2)
    settings.install(path, command, timeout=args.timeout, target=target)
    return f"planguard hooks written to {path}\n  command: {command}"


def _install_opencode(args: argparse.Namespace, opencode: Any, settings: Any) -> str:
    """Write (or remove, or only show) planguard's OpenCode plugin; what to tell the user."""
    path = opencode.plugin_path(args.scope, args.project_dir) if args.settings is None else args.settings
    if args.uninstall:
        removed = opencode.uninstall(path)
        return f"removed planguard's plugin {path}" if removed else f"no planguard plugin at {path}"
    command = settings.hook_command(
        args.config, args.state_dir, daemon=not args.no_daemon, dialect="opencode"
    )
    text = opencode.plugin_text(command, timeout_s=args.timeout)
    if args.dry_run:
        return str(text)
    opencode.install(path, text)
    return f"planguard plugin written to {path}\n  command: {command}"
