"""``planguard hook AGENT``: run as an agent's hook command, one hook call per process.

``planguard hook claude-code|codex|gemini [--config FILE] [--state-dir DIR] [--no-daemon]`` reads one
hook payload of that CLI on standard input and prints the answer in its idiom (see
``planguard_claude_code.hook`` and ``planguard_claude_code.dialects``): one hook service, one daemon, for
every CLI. Claude Code starts
this once per tool call, so nothing is imported here at module level beyond argparse, and ``run`` imports
only the integration's small client, which hands the call to a warm daemon
(``planguard_claude_code.client``); planguard itself is imported only when the call is answered in-process.
"""

from __future__ import annotations

import argparse
import sys

__all__ = ["add_options", "register", "run"]

_MISSING = (
    "planguard hook {agent}: the hook service (the Claude Code integration) is not installed "
    "(pip install 'planguard-agents[claude-code]', or from a checkout: bash scripts/bootstrap.sh)"
)
#: The CLIs with command hooks, and the hook events each registers.
_AGENTS = {
    "claude-code": "Claude Code hooks (PreToolUse, PostToolUse, PostToolUseFailure, UserPromptSubmit, "
    "SessionEnd)",
    "codex": "Codex CLI hooks (PreToolUse, PostToolUse, UserPromptSubmit, SessionEnd)",
    "gemini": "Gemini CLI hooks (BeforeTool, AfterTool, BeforeAgent, SessionEnd)",
}


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "hook",
        help="answer an agent's hook call (Claude Code runs this for each tool call)",
        description="Answer one hook call of a coding agent: gate the tool call, record it, add reminders.",
    )
    agents = p.add_subparsers(dest="agent", metavar="AGENT", required=True)
    for agent, about in _AGENTS.items():
        cli = agents.add_parser(
            agent,
            help=about,
            description=f"Read one {about.split(' hooks')[0]} hook payload (JSON) on standard input; print "
            "the hook's JSON answer. Always exits 0: planguard never breaks the agent (errors go to "
            "<state dir>/hook-errors.log).",
        )
        add_options(cli)
    p.set_defaults(func=run)


def add_options(parser: argparse.ArgumentParser) -> None:
    """The options of one agent's hook command: declared once, here, for ``planguard hook AGENT`` and for
    the integration's own ``planguard-claude-code-hook`` (``planguard_claude_code.hook.cli``)."""
    parser.add_argument(
        "--config", metavar="FILE", help="planguard config (default: $PLANGUARD_CONFIG, else defaults)"
    )
    parser.add_argument(
        "--state-dir",
        metavar="DIR",
        help="session state directory (default: $PLANGUARD_STATE_DIR, else "
        "$XDG_STATE_HOME/planguard/claude-code)",
    )
    parser.add_argument(
        "--no-daemon",
        action="store_true",
        help="answer in this process instead of through the warm hook daemon (also: PLANGUARD_HOOK_DAEMON=0)",
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


def run(args: argparse.Namespace) -> int:
    try:
        from planguard_claude_code import client
    except ImportError:
        print(_MISSING.format(agent=args.agent), file=sys.stderr)
        # Exit 1 is a non-blocking hook error for Claude Code: the user sees it, the agent goes on.
        return 1
    if args.show or args.stop_daemons:
        from planguard_claude_code import hook

        return hook.run_arguments(args)
    return client.main(args.config, args.state_dir, daemon=not args.no_daemon, dialect=args.agent)
