"""The ``planguard`` command. Each subcommand is one module in ``planguard.cli.commands`` with a ``register``
function; modules import their heavy dependencies inside ``run`` so start-up stays fast (hooks run the CLI
once per tool call)."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Sequence

from .._version import __version__
from . import commands

__all__ = ["main", "build_parser"]


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every subcommand, or of ``only`` (a module name in ``planguard.cli.commands``) when it
    exists: the hooks run one subcommand per tool call and need not import the others."""
    parser = argparse.ArgumentParser(prog="planguard", description="Live plan monitoring for LLM agents.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    names = sorted(m.name for m in pkgutil.iter_modules(commands.__path__) if not m.name.startswith("_"))
    for name in [only] if only in names else names:
        importlib.import_module(f"{commands.__name__}.{name}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = next((a for a in argv if not a.startswith("-")), None)
    parser = build_parser(command.replace("-", "_") if command else None)
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
