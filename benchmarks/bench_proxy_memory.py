"""A long-running proxy's memory after conversations end: does it return to its baseline (±10 %)?

The fake upstream (tests/support/proxy_fakes.py) and the proxy (``planguard proxy``) run as separate
processes, as in bench_proxy.py; this process is the client. Agent-like conversations (each turn: a bash tool
call, its result of ``--result-kb`` KB sent back in the next request) run in batches; the proxy ends a
conversation after ``--idle-s`` seconds without a request (``sessions.idle_timeout_s``). The proxy's resident
set (VmRSS from /proc) is read

* at baseline: after a warm-up batch has run and ended (imports, caches and pools are then warm);
* at the peak: right after the measured batches, while their conversations are still live;
* after: once every conversation has ended (``ended`` in /_planguard/health) and a few seconds more.

    python benchmarks/bench_proxy_memory.py [--conversations 200] [--turns 10] [--result-kb 60]
                                            [--batches 3] [--idle-s 2]

Prints one JSON object; ``after_vs_baseline`` is (after - baseline) / baseline, the target |x| <= 0.10.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_proxy import FAKE, ROOT, free_port, wait_up


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def run_conversation(client: httpx.Client, proxy: str, c: int, turns: int, result: str) -> None:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": f"Fix issue #{c} in the repository."},
    ]
    for _ in range(turns):
        r = client.post(proxy + "/v1/chat/completions", json={"model": "fake", "messages": messages})
        r.raise_for_status()
        tc = r.json()["choices"][0]["message"]["tool_calls"][0]
        messages += [
            {"role": "assistant", "content": "Looking.", "tool_calls": [tc]},
            {"role": "tool", "tool_call_id": tc["id"], "content": result},
        ]


def health(client: httpx.Client, proxy: str) -> dict[str, Any]:
    out: dict[str, Any] = client.get(proxy + "/_planguard/health").json()
    return out


def wait_ended(client: httpx.Client, proxy: str, n: int, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        h = health(client, proxy)
        if h["ended"] >= n and h["conversations"] == 0:
            return
        time.sleep(0.5)
    raise SystemExit(f"conversations did not end: {health(client, proxy)}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--conversations", type=int, default=200, help="per batch (default 200)")
    ap.add_argument("--turns", type=int, default=10)
    ap.add_argument("--result-kb", type=int, default=60, help="tool result size per turn (default 60)")
    ap.add_argument("--batches", type=int, default=3)
    ap.add_argument("--idle-s", type=float, default=2.0, help="sessions.idle_timeout_s (default 2)")
    args = ap.parse_args()
    fake_port, proxy_port = free_port(), free_port()
    direct, proxy = f"http://127.0.0.1:{fake_port}", f"http://127.0.0.1:{proxy_port}"
    result = ("src/module.py:12: def f(x): return x  # " + "y" * 40 + "\n") * (args.result_kb * 1024 // 90)
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Path(tmp) / "planguard.yaml"
        cfg.write_text(
            "telemetry: {enabled: false}\nstore: {enabled: false}\n"
            f"sessions: {{idle_timeout_s: {args.idle_s}}}\n"
            f"proxy:\n  upstream: {direct}\n"
        )
        env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": ""}
        fake = subprocess.Popen(
            [sys.executable, "-c", FAKE.format(tests=str(ROOT / "tests" / "support"), port=fake_port)]
        )
        px = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "planguard",
                "proxy",
                "--config",
                str(cfg),
                "--listen",
                f"127.0.0.1:{proxy_port}",
            ],
            env=env,
        )
        try:
            wait_up(direct + "/v1/models", fake)
            wait_up(proxy + "/_planguard/health", px)
            with httpx.Client(timeout=60) as client:
                started = 0
                for c in range(args.conversations):  # warm-up batch
                    run_conversation(client, proxy, c, args.turns, result)
                started += args.conversations
                wait_ended(client, proxy, started, 120)
                time.sleep(args.idle_s)
                baseline = rss_mb(px.pid)
                peaks = []
                afters = []
                for b in range(args.batches):
                    for c in range(args.conversations):
                        run_conversation(client, proxy, started + c, args.turns, result)
                    started += args.conversations
                    peaks.append(rss_mb(px.pid))
                    wait_ended(client, proxy, started, 120)
                    time.sleep(args.idle_s)
                    afters.append(rss_mb(px.pid))
                    print(
                        f"batch {b + 1}: peak {peaks[-1]:.1f} MB, after {afters[-1]:.1f} MB", file=sys.stderr
                    )
                counters = health(client, proxy)
        finally:
            for p in (px, fake):
                p.terminate()
                p.wait(10)
    out = {
        "conversations": started,
        "turns": args.turns,
        "result_kb": args.result_kb,
        "baseline_mb": round(baseline, 1),
        "peak_mb": [round(x, 1) for x in peaks],
        "after_mb": [round(x, 1) for x in afters],
        "after_vs_baseline": round((afters[-1] - baseline) / baseline, 3),
        "ended": counters["ended"],
    }
    print(json.dumps(out))
    return 0 if abs(out["after_vs_baseline"]) <= 0.10 else 1


if __name__ == "__main__":
    raise SystemExit(main())
