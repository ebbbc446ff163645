"""``planguard demo [--agent coding|support] [--config FILE] [--store DIR] [--keep-repo] [--no-color]``: the
subcommand this integration adds to the ``planguard`` command (entry-point group ``planguard.commands``).

A monitored agent run that needs no API key and no network: a LangChain v1 agent with a scripted model and
real tools fixes a bug in a throw-away repository (``coding``, the default) or handles a refund request over
an in-memory order database under a plan of declared phases (``support``), while planguard prints its live
timeline and records the session."""

from __future__ import annotations

import argparse

from .agent import add_arguments, run_from_args

__all__ = ["register"]


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "demo",
        help="run a monitored LangChain agent (coding or support) with a scripted model (no API key)",
        description="A LangChain v1 coding agent (scripted model, real tools) fixes a bug in a throw-away "
        "repository; planguard reminds, nudges and gates it live, prints a timeline and records the session.",
    )
    add_arguments(p)
    p.set_defaults(func=run_from_args)
