"""Dump every outcome planguard computes for the shared trajectories, to check a refactor changes none.

    python scripts/outcome_digest.py [--data ../shared/data] -o /tmp/before.jsonl
    ... change the code ...
    python scripts/outcome_digest.py -o /tmp/after.jsonl && cmp /tmp/before.jsonl /tmp/after.jsonl

One ``planguard replay --format jsonl`` record per trajectory (letters, step roles, canonical actions with
effects, findings, decisions, metrics) for every rule version, and once more through the example config's
whole pipeline (its policies' decisions). The last line is the SHA-256 of everything above it.
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TRAJECTORY_SUFFIXES = {".jsonl", ".json", ".traj", ".yaml", ".db"}
RUNS = (
    ("live", ["--rules", "live"]),
    ("v351278e", ["--rules", "v351278e"]),
    ("v8ec988e", ["--rules", "v8ec988e"]),
    ("config", ["--config", str(ROOT / "examples" / "planguard.yaml")]),
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("-o", "--output", type=Path, required=True)
    args = parser.parse_args()
    files = sorted(
        str(p.relative_to(args.data))
        for p in args.data.rglob("*")
        if p.is_file() and p.suffix in TRAJECTORY_SUFFIXES and "live-labels" not in p.parts
    )
    digest = hashlib.sha256()
    with args.output.open("w", encoding="utf-8") as out:
        for name, flags in RUNS:
            proc = subprocess.run(
                [sys.executable, "-m", "planguard", "replay", *files, "--format", "jsonl", *flags],
                cwd=args.data,
                capture_output=True,
                text=True,
                check=False,
            )
            lines = proc.stdout.splitlines()
            # replay exits 1 when a file did not load; no record at all means planguard did not run.
            if proc.returncode not in (0, 1) or not lines:
                sys.stderr.write(proc.stderr or f"outcome_digest: {name}: replay wrote no record\n")
                return proc.returncode or 1
            for line in lines:
                record = f"{name}\t{line}\n"
                digest.update(record.encode())
                out.write(record)
        out.write(f"sha256\t{digest.hexdigest()}\n")
    print(f"{args.output}: {digest.hexdigest()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
