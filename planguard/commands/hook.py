"""``planguard hook AGENT``: run as an agent's hook command, one hook call per process.

``planguard hook claude-code [--config FILE] [--state-dir DIR]`` reads a Claude Code hook payload on
standard input and prints the answer (see ``planguard_claude_code.hook``). Claude Code starts this once per
tool call, so nothing is imported here at module level beyond argparse; the integration is imported in
``run`` and imports only planguard itself.
"""

from __future__ import annotations

import argparse
import sys

__all__ = ["register", "run"]

_MISSING = (
    "planguard hook claude-code: the Claude Code integration is not installed "
    "(pip install planguard-claude-code, or pip install -e integrations/claude_code)"
)


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "hook",
        help="answer an agent's hook call (Claude Code runs this for each tool call)",
        description="Answer one hook call of a coding agent: gate the tool call, record it, add reminders.",
    )
    agents = p.add_subparsers(dest="agent", metavar="AGENT", required=True)
    cc = agents.add_parser(
        "claude-code",
        help="Claude Code hooks (PreToolUse, PostToolUse, PostToolUseFailure, UserPromptSubmit, SessionEnd)",
        description="Read one Claude Code hook payload (JSON) on standard input; print the hook's JSON "
        "answer. "
        "Always exits 0: planguard never breaks the agent (errors go to <state dir>/hook-errors.log).",
    )
    cc.add_argument(
        "--config", metavar="FILE", help="planguard config (default: $PLANGUARD_CONFIG, else defaults)"
    )
    cc.add_argument(
        "--state-dir",
        metavar="DIR",
        help="session state directory (default: $PLANGUARD_STATE_DIR, else "
        "$XDG_STATE_HOME/planguard/claude-code)",
    )
    cc.add_argument(
        "--show",
        metavar="SESSION_ID",
        help="print what planguard recorded for a session (phases, metrics, decisions) as JSON, and exit",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        from planguard_claude_code import hook
    except ImportError:
        print(_MISSING, file=sys.stderr)
        # Exit 1 is a non-blocking hook error for Claude Code: the user sees it, the agent goes on.
        return 1
    if args.show:
        import json

        summary = hook.read_summary(args.show, args.config, args.state_dir)
        if summary is None:
            print(f"planguard hook claude-code: no recorded session {args.show!r}", file=sys.stderr)
            return 1
        print(json.dumps(summary, indent=2, ensure_ascii=False))
        return 0
    return hook.main(args.config, args.state_dir)
