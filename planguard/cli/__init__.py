"""The ``planguard`` command. Each core subcommand is one module in ``planguard.cli.commands`` with a
``register`` function; integrations add theirs through the entry-point group ``planguard.commands`` (name:
the subcommand, value: its ``register`` function), so the core names no integration. Modules import their
heavy dependencies inside ``run`` so start-up stays fast, and only the subcommand being run is loaded."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Callable, Sequence
from importlib.metadata import EntryPoint, entry_points

from .._version import __version__
from . import commands

__all__ = ["COMMANDS_GROUP", "build_parser", "integration_commands", "main"]

#: The entry-point group integrations register their subcommands in.
COMMANDS_GROUP = "planguard.commands"
#: Subcommands that ship with an integration, and the extra of ``planguard-agents`` that installs it: only
#: what the "not installed" message says (nothing is imported by these names).
_EXTRA_OF = {"install": "hooks", "hook": "hooks", "proxy": "proxy", "demo": "langchain"}
#: ``planguard hook`` runs as a coding CLI's hook: exit 2 would block the agent's tool call there.
_MISSING_EXIT = {"hook": 1}

Register = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], None]


def integration_commands() -> dict[str, EntryPoint]:
    """The subcommands installed integrations register (``planguard.commands`` entry points), by name."""
    return {ep.name: ep for ep in entry_points(group=COMMANDS_GROUP)}


def _core_names() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(commands.__path__) if not m.name.startswith("_"))


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every subcommand, or of ``only`` (a subcommand's name) when it exists: hooks run one
    subcommand per tool call and need not import the others. Without ``only``, an integration's
    subcommand is listed (with its distribution's summary) but not imported."""
    parser = argparse.ArgumentParser(prog="planguard", description="Live plan monitoring for LLM agents.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    core = _core_names()
    module = only.replace("-", "_") if only else None
    if module in core:
        importlib.import_module(f"{commands.__name__}.{module}").register(sub)
        return parser
    plugins = integration_commands()
    if only in plugins:
        register: Register = plugins[only].load()
        register(sub)
        return parser
    for name in core:
        importlib.import_module(f"{commands.__name__}.{name}").register(sub)
    for name, ep in sorted(plugins.items()):
        if name.replace("-", "_") in core:
            continue  # a core subcommand is not replaced from outside
        summary = ep.dist.metadata["Summary"] if ep.dist is not None else None
        sub.add_parser(name, help=f"(from {ep.dist.name if ep.dist else ep.value}) {summary or ''}".strip())
    return parser


def missing_integration(command: str, problem: str | None = None) -> int:
    """Say which distribution brings ``command`` and how to install it; the exit status to return."""
    extra = _EXTRA_OF[command]
    print(
        f"planguard {command}: this command comes with the planguard-agents-{extra} integration, which is "
        f"not installed{f' ({problem})' if problem else ''}:\n"
        f'    pip install "planguard-agents[{extra}]"      (from a checkout: bash scripts/bootstrap.sh)',
        file=sys.stderr,
    )
    return _MISSING_EXIT.get(command, 2)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = next((a for a in argv if not a.startswith("-")), None)
    if command in _EXTRA_OF and command not in integration_commands():
        return missing_integration(command)
    try:
        parser = build_parser(command)
    except ImportError as exc:  # an integration's entry point whose package (or a dependency) is gone
        if command in _EXTRA_OF:
            return missing_integration(command, str(exc))
        raise
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except ImportError as exc:  # a part of the integration (or its dependency) is gone since it registered
        if command in _EXTRA_OF and (exc.name or "").split(".")[0] != "planguard":
            return missing_integration(command, str(exc))
        raise
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
