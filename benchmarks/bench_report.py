"""Report build time and size over a synthetic 10,000-run corpus made from the real SWE-agent runs.

Each synthetic run splices two real runs of the same SWE-agent run set (model): the first k steps of one
and the steps after k of another (k random), keeping the first run's outcome, so step counts, tool mixes
and phase patterns stay realistic while every run differs. The corpus is written as N JSONL shards (the
unit of parallel replay). Measured:

* ``trajectories``: collect (load + replay through phases/metrics/actions/detectors) + aggregate + HTML;
* ``replay-jsonl``: the same report from ``planguard replay --format jsonl`` output (aggregate + HTML only).

    python benchmarks/bench_report.py [--runs 10000] [--jobs 2] [--shards 8] [--keep DIR]

Acceptance: a 10,000-run report builds in ≤ 30 s and the HTML stays under 5 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
CORPUS = REPO.parent / "shared" / "data" / "swe-agent" / "trajectories.jsonl"


def synthesise(n: int, shards: int, out_dir: Path, seed: int = 7) -> list[Path]:
    real = [json.loads(line) for line in CORPUS.open(encoding="utf-8") if line.strip()]
    by_run: dict[str, list[dict[str, Any]]] = {}
    for r in real:
        by_run.setdefault(r["run"], []).append(r)
    rng = random.Random(seed)
    paths = [out_dir / f"synthetic-{i:02d}.jsonl" for i in range(shards)]
    handles = [p.open("w", encoding="utf-8") for p in paths]
    try:
        for i in range(n):
            a = rng.choice(real)
            b = rng.choice(by_run[a["run"]])
            k = rng.randint(1, max(1, len(a["steps"]) - 1))
            steps = [dict(s) for s in a["steps"][:k] + b["steps"][k:]] or [dict(s) for s in a["steps"]]
            for j, s in enumerate(steps):
                s["i"] = j
            rec = dict(
                a,
                id=f"{a['run']}/synthetic-{i:05d}",
                instance_id=f"synthetic-{i:05d}",
                steps=steps,
                n_steps=len(steps),
            )
            handles[i % shards].write(json.dumps(rec) + "\n")
    finally:
        for h in handles:
            h.close()
    return paths


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=10_000)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--shards", type=int, default=8)
    ap.add_argument("--keep", metavar="DIR", help="keep the corpus and reports in DIR")
    ap.add_argument("--repeat", type=int, default=3, help="builds per input kind (best and all are printed)")
    args = ap.parse_args()
    if not CORPUS.exists():
        print(f"shared corpus not found at {CORPUS}", file=sys.stderr)
        return 2

    from planguard.cli import main as cli
    from planguard.offline.report import build_report, collect, render_html
    from planguard.offline.report.records import RunRecord

    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-report-"))
    work.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    shards = synthesise(args.runs, args.shards, work)
    print(
        f"corpus: {args.runs} synthetic runs in {len(shards)} shards "
        f"({sum(p.stat().st_size for p in shards) / 1e6:.1f} MB) made in {time.perf_counter() - t0:.1f} s"
    )

    def build(inputs: list[Path], jobs: int, name: str) -> None:
        t = time.perf_counter()
        records = [r for r in collect(inputs, jobs=jobs) if isinstance(r, RunRecord)]
        t_collect = time.perf_counter() - t
        report = build_report(records, group_by="model")
        t_agg = time.perf_counter() - t - t_collect
        html = render_html(report)
        total = time.perf_counter() - t
        out = work / f"report-{name}.html"
        out.write_text(html, encoding="utf-8")
        size = len(html.encode("utf-8"))
        print(
            f"{name:>13}: {len(records)} runs · jobs {jobs} · collect {t_collect:.1f} s · "
            f"aggregate {t_agg:.2f} s"
            f" · render {total - t_collect - t_agg:.2f} s · total {total:.1f} s · {size / 1e6:.2f} MB "
            f"· {'OK' if total <= 30 and size < 5e6 else 'OVER BUDGET'}"
        )

    for _ in range(args.repeat):
        build(shards, args.jobs, "trajectories")
    replayed = work / "replayed.jsonl"
    t = time.perf_counter()
    cli(["replay", *map(str, shards), "--format", "jsonl", "-o", str(replayed)])
    print(
        f"(planguard replay --format jsonl of the corpus: {time.perf_counter() - t:.1f} s, "
        "not part of the report)"
    )
    for _ in range(args.repeat):
        build([replayed], 1, "replay-jsonl")
    print(f"files in {work}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
