"""``planguard schema [-o FILE]``: the JSON Schema of the config file (for editors and CI validation)."""

from __future__ import annotations

import argparse
import json

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "schema",
        help="print the JSON Schema of the config file",
        description="Print the JSON Schema of planguard's config file (YAML/TOML/JSON).",
    )
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of standard output")
    p.add_argument("--indent", type=int, default=2, help="JSON indentation (default 2)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ...config import config_schema
    from ..output import open_output

    text = json.dumps(config_schema(), indent=args.indent, ensure_ascii=False) + "\n"
    with open_output(args.output) as out:
        out.write(text)
    return 0
