"""Added latency of the planguard proxy versus calling the model API directly (loopback, fake upstream).

The fake upstream (tests/proxy_fakes.py) and the proxy (``planguard proxy``) run as separate processes;
this process is the client. Agent-like traffic: conversations of 10 turns, each request carrying the
growing history (tool calls and their results), each response a bash tool call. For every request the
same body goes once directly to the fake and once through the proxy (interleaved, so drift hits both);
latency is time to the last byte. Added latency is reported as the difference of percentiles.

    python benchmarks/bench_proxy.py [--conversations 100] [--turns 10] [--telemetry]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]

FAKE = """
import sys
sys.path.insert(0, {tests!r})
import uvicorn
from proxy_fakes import FakeUpstream, Reply

def script(wire, body):
    k = sum(1 for m in body["messages"] if m.get("role") == "assistant")
    return Reply(text="Looking.", tool_calls=[("bash", {{"command": f"grep -rn 'def f{{k}}' src/ | head"}})])

fake = FakeUpstream(script)
fake.requests = type("NoRecord", (list,), {{"append": lambda self, x: None}})()
uvicorn.run(fake.app, host="127.0.0.1", port={port}, log_level="warning", access_log=False,
            timeout_keep_alive=75)
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_up(url: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"{url}: process exited ({proc.returncode})")
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise SystemExit(f"{url} did not come up")


def timed(client: httpx.Client, url: str, body: dict[str, Any]) -> tuple[float, float, dict[str, Any]]:
    """Seconds to the last byte and to the first body byte, and the tool call of the response."""
    t0 = time.perf_counter()
    if body.get("stream"):
        call = {"id": "", "arguments": ""}
        parts = []
        first = 0.0
        with client.stream("POST", url, json=body) as r:
            for part in r.iter_raw():
                if not parts:
                    first = time.perf_counter() - t0
                parts.append(part)
        raw = b"".join(parts)
        dt = time.perf_counter() - t0
        assert r.status_code == 200, raw[:300]
        for block in raw.split(b"\n\n"):
            if block.startswith(b"data: {"):
                for ch in json.loads(block[6:])["choices"]:
                    for tc in ch["delta"].get("tool_calls") or ():
                        call["id"] = tc.get("id") or call["id"]
                        call["arguments"] += (tc.get("function") or {}).get("arguments") or ""
        return dt, first, call
    r = client.post(url, json=body)
    dt = time.perf_counter() - t0
    assert r.status_code == 200, r.text[:300]
    tc = r.json()["choices"][0]["message"]["tool_calls"][0]
    return dt, dt, {"id": tc["id"], "arguments": tc["function"]["arguments"]}


def cpu_seconds(pid: int) -> float:
    """User+system CPU time of a process (Linux /proc), independent of how busy the machine is."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q / 100 * (len(xs) - 1)))]


def run(conversations: int, turns: int, stream: bool, direct: str, proxy: str) -> dict[str, float]:
    d_lat: list[float] = []
    p_lat: list[float] = []
    d_first: list[float] = []
    p_first: list[float] = []
    with httpx.Client(timeout=30) as client:
        for c in range(conversations):
            messages: list[dict[str, Any]] = [
                {"role": "system", "content": "You are a coding agent. " * 20},
                {
                    "role": "user",
                    "content": f"Fix issue #{c} in the repository ({'stream' if stream else 'plain'}).",
                },
            ]
            for _ in range(turns):
                body = {"model": "fake", "messages": messages, "stream": stream}
                dt_d, first_d, _ = timed(client, direct + "/v1/chat/completions", body)
                dt_p, first_p, call = timed(client, proxy + "/v1/chat/completions", body)
                d_lat.append(dt_d)
                p_lat.append(dt_p)
                d_first.append(first_d)
                p_first.append(first_p)
                messages = [
                    *messages,
                    {
                        "role": "assistant",
                        "content": "Looking.",
                        "tool_calls": [
                            {
                                "id": call["id"],
                                "type": "function",
                                "function": {"name": "bash", "arguments": call["arguments"]},
                            }
                        ],
                    },
                    {
                        "role": "tool",
                        "tool_call_id": call["id"],
                        "content": "<returncode>0</returncode>\n<output>\n"
                        + "src/a.py:1: x\n" * 30
                        + "</output>",
                    },
                ]
    warm = min(len(d_lat) // 10, 50)
    d_lat, p_lat = d_lat[warm:], p_lat[warm:]
    d_first, p_first = d_first[warm:], p_first[warm:]
    out = {}
    for q in (50, 90, 99):
        out[f"direct_p{q}_ms"] = pct(d_lat, q) * 1e3
        out[f"proxy_p{q}_ms"] = pct(p_lat, q) * 1e3
        out[f"added_p{q}_ms"] = (pct(p_lat, q) - pct(d_lat, q)) * 1e3
    out["added_first_byte_p50_ms"] = (pct(p_first, 50) - pct(d_first, 50)) * 1e3
    out["added_first_byte_p99_ms"] = (pct(p_first, 99) - pct(d_first, 99)) * 1e3
    out["added_median_paired_ms"] = statistics.median(p - d for p, d in zip(p_lat, d_lat, strict=True)) * 1e3
    out["requests"] = len(p_lat)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--conversations", type=int, default=100)
    ap.add_argument("--turns", type=int, default=10)
    ap.add_argument(
        "--no-guard",
        action="store_true",
        help="planguard disabled (enabled: false): the cost of the HTTP proxying alone",
    )
    ap.add_argument(
        "--telemetry",
        action="store_true",
        help="proxy with planguard's default telemetry and local store (else both off)",
    )
    args = ap.parse_args()
    fake_port, proxy_port = free_port(), free_port()
    direct, proxy = f"http://127.0.0.1:{fake_port}", f"http://127.0.0.1:{proxy_port}"
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Path(tmp) / "planguard.yaml"
        section = (
            (
                "telemetry: {enabled: true}\nstore: {enabled: true, path: "
                + json.dumps(str(Path(tmp) / "s"))
                + "}\n"
            )
            if args.telemetry
            else "telemetry: {enabled: false}\nstore: {enabled: false}\n"
        )
        if args.no_guard:
            section += "enabled: false\n"
        cfg.write_text(section + f"proxy:\n  upstream: {direct}\n")
        env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": ""}
        fake = subprocess.Popen(
            [sys.executable, "-c", FAKE.format(tests=str(ROOT / "tests"), port=fake_port)]
        )
        px = subprocess.Popen(
            [
                sys.executable,
                *os.environ.get("BENCH_PROXY_PYTHON_ARGS", "").split(),
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
            results = {}
            for mode in ("plain", "stream"):
                cpu0, fcpu0 = cpu_seconds(px.pid), cpu_seconds(fake.pid)
                results[mode] = run(args.conversations, args.turns, mode == "stream", direct, proxy)
                n = args.conversations * args.turns
                results[mode]["proxy_cpu_ms_per_request"] = (cpu_seconds(px.pid) - cpu0) / n * 1e3
                # The fake answered 2n requests (direct and proxied): its CPU per request is the yardstick
                # of what one HTTP hop costs on this machine.
                results[mode]["upstream_cpu_ms_per_request"] = (cpu_seconds(fake.pid) - fcpu0) / (2 * n) * 1e3
            health = httpx.get(proxy + "/_planguard/health").json()
        finally:
            for p in (px, fake):
                p.terminate()
                p.wait(timeout=15)
    print(
        f"planguard proxy added latency (loopback; telemetry {'on' if args.telemetry else 'off'}"
        f"{'; planguard disabled' if args.no_guard else ''}; "
        f"{args.conversations} conversations x {args.turns} turns per mode)"
    )
    print(
        f"{'mode':8} {'direct p50':>11} {'proxy p50':>10} {'added p50':>10} "
        f"{'added p99':>10} {'paired med':>11} {'1st byte +p50':>14} {'+p99':>7} {'proxy CPU/req':>14} "
        f"{'fake CPU/req':>13}"
    )
    for mode, r in results.items():
        print(
            f"{mode:8} {r['direct_p50_ms']:10.2f}ms {r['proxy_p50_ms']:9.2f}ms {r['added_p50_ms']:9.2f}ms "
            f"{r['added_p99_ms']:9.2f}ms {r['added_median_paired_ms']:10.2f}ms "
            f"{r['added_first_byte_p50_ms']:12.2f}ms {r['added_first_byte_p99_ms']:5.2f}ms "
            f"{r['proxy_cpu_ms_per_request']:12.2f}ms {r['upstream_cpu_ms_per_request']:11.2f}ms"
        )
    print(
        json.dumps(
            {
                "results": results,
                "proxy": {k: health[k] for k in ("requests", "calls", "results", "fail_open")},
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
