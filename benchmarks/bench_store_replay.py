"""How much a metadata-only store (the default: no arguments, results or texts) keeps for replay.

    python benchmarks/bench_store_replay.py [PATH]

The 81 real SWE-agent runs (or PATH) are driven live through a ``Guard`` whose store keeps no content,
then replayed from the store, and compared with a replay of the original trajectories: letters, compliance
scores and finding counts per detector. Letters and scores come from each step's recorded command roles;
the detectors see recorded action types and keyed digests of calls, targets and paths.
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
from pathlib import Path

from planguard.config import Config
from planguard.guard import Guard
from planguard.offline.loaders import Trajectory, iter_trajectories
from planguard.offline.replay import replay, replay_pipeline

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "swe-agent" / "trajectories.jsonl"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", nargs="?", default=str(DEFAULT))
    args = ap.parse_args(argv)
    runs = [t for t in iter_trajectories([args.path]) if isinstance(t, Trajectory)]
    with tempfile.TemporaryDirectory() as store:
        cfg = {"telemetry": {"enabled": False}, "store": {"path": store, "content": False}}
        guard = Guard(Config.model_validate({**cfg, "sessions": {"idle_timeout_s": None}}))
        for t in runs:
            for ev in t.events:
                guard.before_model(t.id)
                guard.before_tool(t.id, ev)
                guard.after_tool(t.id, ev)
            guard.end(t.id)
        guard.shutdown()
        stored = {
            r.trajectory.id: r.summary for r in replay([store], replay_pipeline()) if hasattr(r, "summary")
        }
    offline = replay_pipeline()
    original = {}
    for t in runs:
        session = offline.session(t.id)
        for ev in t.events:
            session.observe(ev)
        original[t.id] = session.end()
    n = len(original)
    letters = sum(stored[k].letters == original[k].letters for k in original)
    scores = sum(
        all(stored[k].scores[p].as_dict() == s.as_dict() for p, s in original[k].scores.items())
        for k in original
    )
    findings = sum(dict(stored[k].finding_counts) == dict(original[k].finding_counts) for k in original)
    print(
        f"{n} runs: letters equal {letters}/{n}, scores equal {scores}/{n}, "
        f"finding counts equal {findings}/{n}"
    )
    by_orig: collections.Counter[str] = collections.Counter()
    by_store: collections.Counter[str] = collections.Counter()
    for k in original:
        by_orig.update(original[k].finding_counts)
        by_store.update(stored[k].finding_counts)
    print(f"  {'detector':28s} {'original':>9s} {'metadata-only store':>20s}")
    for d in sorted(set(by_orig) | set(by_store)):
        print(f"  {d:28s} {by_orig[d]:9d} {by_store[d]:20d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
