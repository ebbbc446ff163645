"""``planguard export STORE_PATH... [-o OUT]``: stored sessions as the generic trajectory format.

Each input is a store directory or one session file; the output has one JSON object per tool call (see
planguard/offline/loaders/generic.py), which ``planguard replay`` reads back.
"""

from __future__ import annotations

import argparse
import json
import sys

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "export",
        help="write stored sessions as generic trajectory JSONL (one object per tool call)",
        description="Convert planguard session store files into the generic trajectory format, "
        "which 'planguard replay' reads.",
    )
    p.add_argument(
        "paths", nargs="+", metavar="STORE_PATH", help="store directories or session files (.jsonl)"
    )
    p.add_argument("-o", "--output", metavar="OUT", help="write to OUT instead of standard output")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ...offline.export import generic_records
    from ...offline.loaders.planguard_store import StoreReadError, iter_sessions
    from ..output import open_output

    failed = 0
    with open_output(args.output) as out:
        for path in args.paths:
            for item in iter_sessions(path):
                if isinstance(item, StoreReadError):
                    failed += 1
                    print(item, file=sys.stderr)
                    continue
                for err in item.errors:
                    failed += 1
                    print(err, file=sys.stderr)
                for record in generic_records(item):
                    out.write(json.dumps(record, ensure_ascii=False) + "\n")
    if failed:
        print(f"planguard export: {failed} problem(s) reading the store", file=sys.stderr)
    return 1 if failed else 0
