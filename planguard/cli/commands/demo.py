"""``planguard demo [--agent coding|support] [--config FILE] [--store DIR] [--keep-repo] [--no-color]``

A monitored agent run that needs no API key and no network: a LangChain v1 agent with a scripted model and
real tools fixes a bug in a throw-away repository (``coding``, the default) or handles a refund request over
an in-memory order database under a plan of declared phases (``support``), while planguard prints its live
timeline and records the session. The agent, its tools and its config ship in the LangChain integration
(``planguard_langchain.demo``, installed by ``pip install "planguard-agents[langchain]"``); it is imported
only here, inside ``run``, so the core never depends on it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["INSTALL_HINT", "register", "run"]

INSTALL_HINT = (
    "planguard demo needs the LangChain integration:\n"
    '    pip install "planguard-agents[langchain]"      (from a checkout: bash scripts/bootstrap.sh)'
)


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "demo",
        help="run a monitored LangChain agent (coding or support) with a scripted model (no API key)",
        description="A LangChain v1 coding agent (scripted model, real tools) fixes a bug in a throw-away "
        "repository; planguard reminds, nudges and gates it live, prints a timeline and records the session.",
    )
    p.add_argument(
        "--agent",
        choices=("coding", "support"),
        default="coding",
        help="coding (default): fix a bug in a throw-away repository; support: a refund request over an "
        "in-memory order database, under a plan of declared phases and a confirm-before-refund gate",
    )
    p.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="planguard config (default: the demo's own planguard.yaml, or support.yaml for --agent support)",
    )
    p.add_argument(
        "--store", type=Path, metavar="DIR", help="session store directory (default: the config's)"
    )
    p.add_argument("--keep-repo", action="store_true", help="keep the throw-away repository for inspection")
    p.add_argument("--no-color", action="store_true", help="plain text even on a terminal")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        import langchain.agents  # noqa: F401
        from planguard_langchain import demo
    except ImportError as exc:
        print(f"{INSTALL_HINT}\n({exc})", file=sys.stderr)
        return 2
    return int(demo.run_from_args(args))
