"""The subcommands this integration adds to the ``planguard`` command (entry-point group
``planguard.commands``, see ``pyproject.toml``):

* ``planguard hook claude-code|codex|gemini|opencode [--config FILE] [--state-dir DIR] [--no-daemon]``
  reads one hook payload of that CLI on standard input and prints the answer in its idiom
  (:mod:`.service`, :mod:`.dialects`): one hook service, one daemon, for every CLI. Nothing is imported at
  module level beyond argparse; ``run_hook`` imports only the small client (:mod:`.client`), which hands
  the call to the warm daemon; planguard itself is imported only when the call is answered in-process.
* ``planguard install claude-code|codex|gemini|opencode [--scope project|local|user] [--config FILE]
  [--uninstall]`` writes planguard's hook entries into a CLI's settings (:mod:`.install`): Claude Code
  ``project`` → ``.claude/settings.json`` (shared with the team), ``local`` → ``.claude/settings.local.json``,
  ``user`` → ``~/.claude/settings.json``; Codex CLI ``.codex/hooks.json``; Gemini CLI
  ``.gemini/settings.json`` (in the project, or the home folder for ``user``). OpenCode gets planguard's
  plugin in ``.opencode/plugin/planguard.js`` (``user``: ``~/.config/opencode/plugin/``). Other settings and
  hooks are kept; running it again refreshes planguard's entries instead of adding more.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

__all__ = ["add_options", "register_hook", "register_install", "run_hook", "run_install"]

#: The CLIs planguard hooks into, and how each one runs planguard.
_HOOK_AGENTS = {
    "claude-code": "Claude Code hooks (PreToolUse, PostToolUse, PostToolUseFailure, UserPromptSubmit, "
    "SessionEnd)",
    "codex": "Codex CLI hooks (PreToolUse, PostToolUse, UserPromptSubmit, SessionEnd)",
    "gemini": "Gemini CLI hooks (BeforeTool, AfterTool, BeforeAgent, SessionEnd)",
    "opencode": "OpenCode plugin events (tool.execute.before/after, session.idle)",
}
_INSTALL_AGENTS = {
    "claude-code": "write the hooks into Claude Code's settings.json",
    "codex": "write the hooks into Codex CLI's .codex/hooks.json",
    "gemini": "write the hooks into Gemini CLI's .gemini/settings.json",
    "opencode": "install planguard's OpenCode plugin into .opencode/plugin/",
}


# --------------------------------------------------------------------------- planguard hook


def register_hook(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "hook",
        help="answer a coding CLI's hook call (Claude Code, Codex, Gemini CLI, OpenCode)",
        description="Answer one hook call of a coding agent: gate the tool call, record it, add reminders.",
    )
    agents = p.add_subparsers(dest="agent", metavar="AGENT", required=True)
    for agent, about in _HOOK_AGENTS.items():
        cli = agents.add_parser(
            agent,
            help=about,
            description=f"Read one {about.split(' hooks')[0]} hook payload (JSON) on standard input; print "
            "the hook's JSON answer. Always exits 0: planguard never breaks the agent (errors go to "
            "<state dir>/hook-errors.log).",
        )
        add_options(cli)
    p.set_defaults(func=run_hook)


def add_options(parser: argparse.ArgumentParser, *, dialect: bool = False) -> None:
    """The options of one agent's hook command: declared once, here, for ``planguard hook AGENT`` and for
    the ``planguard-hook`` entry point (:func:`planguard_hooks.service.cli`, which also takes
    ``--dialect``)."""
    if dialect:
        parser.add_argument("--dialect", default="claude-code", help="the CLI whose payloads are read")
    parser.add_argument(
        "--config", metavar="FILE", help="planguard config (default: $PLANGUARD_CONFIG, else defaults)"
    )
    parser.add_argument(
        "--state-dir",
        metavar="DIR",
        help="session state directory (default: $PLANGUARD_STATE_DIR, else $XDG_STATE_HOME/planguard/hooks)",
    )
    parser.add_argument(
        "--no-daemon",
        action="store_true",
        help="answer in this process instead of through the warm hook daemon (also: PLANGUARD_HOOK_DAEMON=0)",
    )
    parser.add_argument(
        "--fail-closed",
        action="store_true",
        help="block a tool call when planguard cannot answer it at all (exit 2; written by install for a "
        "config with a fail-closed gate; also: PLANGUARD_FAIL_CLOSED_GATES=1)",
    )
    parser.add_argument(
        "--show",
        metavar="SESSION_ID",
        help="print what planguard recorded for a session (phases, metrics, decisions) as JSON, and exit",
    )
    parser.add_argument(
        "--stop-daemons",
        action="store_true",
        help="stop the hook daemons of the state directory (they also exit when idle), and exit",
    )


def run_hook(args: argparse.Namespace) -> int:
    from . import client

    if args.show or args.stop_daemons:
        from . import service

        return service.run_arguments(args)
    return client.main(
        args.config,
        args.state_dir,
        daemon=not args.no_daemon,
        dialect=args.agent,
        fail_closed=args.fail_closed,
    )


# --------------------------------------------------------------------------- planguard install


def register_install(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "install",
        help="register planguard's hooks with a coding CLI (claude-code, codex, gemini, opencode)",
        description="Register planguard's hook command in an agent's settings (or its plugin, OpenCode).",
    )
    agents = p.add_subparsers(dest="agent", metavar="AGENT", required=True)
    for agent, about in _INSTALL_AGENTS.items():
        _add_install_options(
            agents.add_parser(agent, help=about, description=about[0].upper() + about[1:] + ".")
        )
    p.set_defaults(func=run_install)


def _add_install_options(cc: argparse.ArgumentParser) -> None:
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
        "--timeout",
        type=int,
        metavar="S",
        help="seconds the CLI waits per hook call (default: the hook's own bound, the daemon's answer "
        "timeout + the session lock's + building planguard; less is refused)",
    )
    cc.add_argument("--uninstall", action="store_true", help="remove planguard's hooks instead")
    cc.add_argument(
        "--print", dest="dry_run", action="store_true", help="print the settings instead of writing"
    )


def run_install(args: argparse.Namespace) -> int:
    from . import install, opencode

    bound = install.hook_bound_s()
    if args.timeout is None:
        args.timeout = bound
    elif args.timeout < bound and not args.uninstall:
        print(
            f"planguard install {args.agent}: --timeout {args.timeout} is shorter than the hook's own bound "
            f"({bound} s): the CLI would give up on a slow call and let it through; nothing was written",
            file=sys.stderr,
        )
        return 2
    if args.config is not None and not args.uninstall:
        # A hook whose config does not load fails open on every call: refuse it now, as check-config would.
        import os

        from planguard.cli.commands.check_config import validate

        config, problems, _ = validate(args.config, os.environ)
        if problems or config is None:
            print(
                f"planguard install {args.agent}: the config is not usable; nothing was written",
                file=sys.stderr,
            )
            for line in problems:
                print(f"error: {line}", file=sys.stderr)
            return 2
        # A gate that fails closed stays closed when planguard cannot even start: the hook command says so.
        args.fail_closed = any(
            gate.fail_closed if gate.fail_closed is not None else config.fail_closed_gates
            for gate in config.policies.gates
        )
    try:
        if args.agent == "opencode":
            message = _install_opencode(args, opencode, install)
        else:
            message = _install_hooks(args, install)
    except (ValueError, OSError) as exc:
        print(f"planguard install {args.agent}: {exc}", file=sys.stderr)
        return 2
    print(message)
    return 0


def _install_hooks(args: argparse.Namespace, install: Any) -> str:
    """Write (or remove, or only show) the hook entries; what to tell the user."""
    target = install.TARGETS[args.agent]
    path = (
        install.settings_path(args.scope, args.project_dir, target)
        if args.settings is None
        else args.settings
    )
    if args.uninstall:
        return f"removed {install.uninstall(path)} planguard hook(s) from {path}"
    command = install.hook_command(
        args.config,
        args.state_dir,
        daemon=not args.no_daemon,
        dialect=target.dialect,
        fail_closed=getattr(args, "fail_closed", False),
    )
    if args.dry_run:
        return json.dumps(install.merged(path, command, timeout=args.timeout, target=target), indent=2)
    install.install(path, command, timeout=args.timeout, target=target)
    return f"planguard hooks written to {path}\n  command: {command}"


def _install_opencode(args: argparse.Namespace, opencode: Any, install: Any) -> str:
    """Write (or remove, or only show) planguard's OpenCode plugin; what to tell the user."""
    path = opencode.plugin_path(args.scope, args.project_dir) if args.settings is None else args.settings
    if args.uninstall:
        removed = opencode.uninstall(path)
        return f"removed planguard's plugin {path}" if removed else f"no planguard plugin at {path}"
    command = install.hook_command(
        args.config,
        args.state_dir,
        daemon=not args.no_daemon,
        dialect="opencode",
        fail_closed=getattr(args, "fail_closed", False),
    )
    text = opencode.plugin_text(command, timeout_s=args.timeout)
    if args.dry_run:
        return str(text)
    opencode.install(path, text)
    return f"planguard plugin written to {path}\n  command: {command}"
