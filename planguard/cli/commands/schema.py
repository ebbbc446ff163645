"""``planguard schema [-o FILE]``: the JSON Schema of the config file (for editors and CI validation)."""

from __future__ import annotations

import argparse
import json
import sys

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

    text = json.dumps(config_schema(), indent=args.indent, ensure_ascii=False) + "\n"
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0
