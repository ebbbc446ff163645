"""``planguard install claude-code [--scope project|local|user] [--config FILE] [--uninstall]``

Writes planguard's hook entries into Claude Code's settings: ``project`` → ``.claude/settings.json`` (shared
with the team), ``local`` → ``.claude/settings.local.json``, ``user`` → ``~/.claude/settings.json``. Other
settings and hooks are kept; running it again refreshes planguard's entries instead of adding more.
"""

from __future__ import annotations

import argparse
import sys

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "install",
        help="register planguard's hooks with an agent (claude-code)",
        description="Register planguard's hook command in an agent's settings.",
    )
    agents = p.add_subparsers(dest="agent", metavar="AGENT", required=True)
    cc = agents.add_parser("claude-code", help="write the hooks into Claude Code's settings.json")
    cc.add_argument(
        "--scope",
        choices=("project", "local", "user"),
        default="project",
        help="project: .claude/settings.json (default); local: .claude/settings.local.json; "
        "user: ~/.claude/settings.json",
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
        "--timeout", type=int, default=30, metavar="S", help="seconds Claude Code waits per hook call"
    )
    cc.add_argument("--uninstall", action="store_true", help="remove planguard's hooks instead")
    cc.add_argument(
        "--print", dest="dry_run", action="store_true", help="print the settings instead of writing"
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        from planguard_claude_code import settings
    except ImportError:
        print(
            "planguard install claude-code: the Claude Code integration is not installed "
            "(pip install 'planguard-agents[claude-code]')",
            file=sys.stderr,
        )
        return 2
    path = settings.settings_path(args.scope, args.project_dir) if args.settings is None else args.settings
    try:
        if args.uninstall:
            removed = settings.uninstall(path)
            print(f"removed {removed} planguard hook(s) from {path}")
            return 0
        command = settings.hook_command(args.config, args.state_dir, daemon=not args.no_daemon)
        if args.dry_run:
            import json

            print(json.dumps(settings.merged(path, command, timeout=args.timeout), indent=2))
            return 0
        settings.install(path, command, timeout=args.timeout)
    except (ValueError, OSError) as exc:
        print(f"planguard install claude-code: {exc}", file=sys.stderr)
        return 2
    print(f"planguard hooks written to {path}\n  command: {command}")
    return 0
