"""Added latency of the planguard proxy versus calling the model API directly (loopback, fake upstream).

The fake upstream (tests/support/proxy_fakes.py) and the proxy (``planguard proxy``) run as separate
processes; this process is the client (one ``httpx.Client``, warm keep-alive connections to both). Agent-like
traffic: conversations of 10 turns, each request carrying the growing history (tool calls and their results),
each response a bash tool call. Every request body goes once directly to the fake and once through the proxy,
back to back, the order alternating (so drift and order effects hit both sides alike); latency is time to the
last byte. The modes (plain, stream) run in alternating rounds, so a burst of load from elsewhere on the
machine lands on both. Reported per mode:

* added p50/p90/p99 — percentile of proxied minus the same percentile of direct;
* paired median / p90 — of the per-request differences (proxied minus its own direct twin);
* proxy CPU per request (user+system, from /proc) — the cost that does not depend on the machine's load;
* the load average before and after (the machine has 2 CPUs; other work on it inflates p99 first).

    python benchmarks/bench_proxy.py [--conversations 200] [--turns 10] [--rounds 4] [--telemetry]
                                     [--no-guard] [--redis redis://127.0.0.1:6379/0]
                                     [--http-client builtin|httpx|both]

``--http-client both`` runs two proxies side by side in one run, one on the proxy's own connection pool
(``builtin``) and one on httpx's transport, and alternates between them round by round (modes
``plain/builtin``, ``plain/httpx``, ...), so both meet the same load.
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
        parts: list[bytes] = []
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


class Samples:
    """Latencies of one mode: direct and proxied, pairwise (the same body both ways)."""

    def __init__(self) -> None:
        self.direct: list[float] = []
        self.proxied: list[float] = []
        self.direct_first: list[float] = []
        self.proxied_first: list[float] = []
        self.rounds: list[tuple[int, int]] = []  # sample index range of each round

    def summary(self) -> dict[str, Any]:
        d, p = self.direct, self.proxied
        diffs = [b - a for a, b in zip(d, p, strict=True)]
        out: dict[str, Any] = {"requests": len(p)}
        # Per round: a burst of load from elsewhere shows up as one round out of line with the others.
        out["added_p50_ms_per_round"] = [
            round((pct(p[i:j], 50) - pct(d[i:j], 50)) * 1e3, 3) for i, j in self.rounds if j > i
        ]
        for q in (50, 90, 99):
            out[f"direct_p{q}_ms"] = pct(d, q) * 1e3
            out[f"proxy_p{q}_ms"] = pct(p, q) * 1e3
            out[f"added_p{q}_ms"] = (pct(p, q) - pct(d, q)) * 1e3
        out["added_paired_p50_ms"] = statistics.median(diffs) * 1e3
        out["added_paired_p90_ms"] = pct(diffs, 90) * 1e3
        out["added_first_byte_p50_ms"] = (pct(self.proxied_first, 50) - pct(self.direct_first, 50)) * 1e3
        out["added_first_byte_p99_ms"] = (pct(self.proxied_first, 99) - pct(self.direct_first, 99)) * 1e3
        return out


def conversation(
    client: httpx.Client, c: int, turns: int, stream: bool, direct: str, proxy: str, into: Samples | None
) -> None:
    """One agent run of ``turns`` model calls, each sent both ways; ``into`` None: warm-up, not recorded."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent. " * 20},
        {"role": "user", "content": f"Fix issue #{c} in the repository ({'stream' if stream else 'plain'})."},
    ]
    for turn in range(turns):
        body = {"model": "fake", "messages": messages, "stream": stream}
        if (c + turn) % 2:
            dt_p, first_p, call = timed(client, proxy + "/v1/chat/completions", body)
            dt_d, first_d, _ = timed(client, direct + "/v1/chat/completions", body)
        else:
            dt_d, first_d, _ = timed(client, direct + "/v1/chat/completions", body)
            dt_p, first_p, call = timed(client, proxy + "/v1/chat/completions", body)
        if into is not None:
            into.direct.append(dt_d)
            into.proxied.append(dt_p)
            into.direct_first.append(first_d)
            into.proxied_first.append(first_p)
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
                "content": "<returncode>0</returncode>\n<output>\n" + "src/a.py:1: x\n" * 30 + "</output>",
            },
        ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--conversations", type=int, default=200, help="per mode (default 200)")
    ap.add_argument("--turns", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=4, help="modes alternate this many times (default 4)")
    ap.add_argument("--warmup", type=int, default=5, help="conversations per mode not recorded (default 5)")
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
    ap.add_argument("--redis", metavar="URL", help="conversation store in Redis (replicas' setting)")
    ap.add_argument(
        "--http-client",
        choices=("builtin", "httpx", "both"),
        default="builtin",
        help="proxy.http_client (both: one proxy of each, side by side)",
    )
    args = ap.parse_args()
    clients = ["builtin", "httpx"] if args.http_client == "both" else [args.http_client]
    fake_port = free_port()
    direct = f"http://127.0.0.1:{fake_port}"
    with tempfile.TemporaryDirectory() as tmp:
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
        section += f"proxy:\n  upstream: {direct}\n"
        if args.redis:
            prefix = f"planguard:bench:{os.getpid()}:"
            section += (
                f"  store: {{backend: redis, url: {json.dumps(args.redis)}, key_prefix: {prefix!r}, "
                "ttl_s: 600}\n"
            )
        env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": ""}
        fake = subprocess.Popen(
            [sys.executable, "-c", FAKE.format(tests=str(ROOT / "tests" / "support"), port=fake_port)]
        )
        procs: dict[str, tuple[str, subprocess.Popen[bytes]]] = {}  # http client -> (url, process)
        for name in clients:
            cfg = Path(tmp) / f"planguard-{name}.yaml"
            # (http_client only when not the default: older proxies do not know the key)
            cfg.write_text(section + (f"  http_client: {name}\n" if name != "builtin" else ""))
            port = free_port()
            procs[name] = (
                f"http://127.0.0.1:{port}",
                subprocess.Popen(
                    [
                        sys.executable,
                        *os.environ.get("BENCH_PROXY_PYTHON_ARGS", "").split(),
                        "-m",
                        "planguard",
                        "proxy",
                        "--config",
                        str(cfg),
                        "--listen",
                        f"127.0.0.1:{port}",
                    ],
                    env=env,
                ),
            )
        # mode -> (streaming, http client of the proxy it goes through)
        modes = {
            (m if len(clients) == 1 else f"{m}/{name}"): (stream, name)
            for m, stream in (("plain", False), ("stream", True))
            for name in clients
        }
        samples = {mode: Samples() for mode in modes}
        cpu = {mode: [0.0, 0.0] for mode in modes}  # proxy, fake
        load_before = os.getloadavg()
        t0 = time.monotonic()
        try:
            wait_up(direct + "/v1/models", fake)
            for url, px in procs.values():
                wait_up(url + "/_planguard/health", px)
            with httpx.Client(timeout=30) as client:
                for stream, name in modes.values():
                    for c in range(args.warmup):
                        conversation(client, -1 - c, args.turns, stream, direct, procs[name][0], None)
                per_round = max(1, args.conversations // args.rounds)
                for rnd in range(args.rounds):
                    for mode, (stream, name) in modes.items():
                        proxy, px = procs[name]
                        cpu0, fcpu0 = cpu_seconds(px.pid), cpu_seconds(fake.pid)
                        first = len(samples[mode].proxied)
                        for c in range(rnd * per_round, (rnd + 1) * per_round):
                            conversation(client, c, args.turns, stream, direct, proxy, samples[mode])
                        samples[mode].rounds.append((first, len(samples[mode].proxied)))
                        cpu[mode][0] += cpu_seconds(px.pid) - cpu0
                        cpu[mode][1] += cpu_seconds(fake.pid) - fcpu0
            health = httpx.get(procs[clients[0]][0] + "/_planguard/health").json()
        finally:
            for _url, p in procs.values():
                p.terminate()
                p.wait(timeout=15)
            fake.terminate()
            fake.wait(timeout=15)
    elapsed = time.monotonic() - t0
    load_after = os.getloadavg()
    results: dict[str, dict[str, Any]] = {}
    for mode in modes:
        r = results[mode] = samples[mode].summary()
        n = r["requests"]
        r["proxy_cpu_ms_per_request"] = cpu[mode][0] / n * 1e3
        # The fake answered 2n requests (direct and proxied): its CPU per request is the yardstick of what
        # serving one HTTP request costs on this machine.
        r["upstream_cpu_ms_per_request"] = cpu[mode][1] / (2 * n) * 1e3
    print(
        f"planguard proxy added latency (loopback; telemetry {'on' if args.telemetry else 'off'}"
        f"{'; planguard disabled' if args.no_guard else ''}; store {'redis' if args.redis else 'memory'}; "
        f"http_client {args.http_client}; {args.conversations} conversations x {args.turns} turns per mode, "
        f"{args.rounds} rounds; {elapsed:.0f} s)"
    )
    print(
        f"load average before {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, "
        f"after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f} ({os.cpu_count()} CPUs)"
    )
    print(
        f"{'mode':14} {'direct p50':>10} {'proxy p50':>9} {'added p50':>9} {'p90':>7} {'p99':>7} "
        f"{'paired p50':>10} {'p90':>7} {'proxy CPU/req':>13} {'fake CPU/req':>12}  "
        "added p50 per round (median)"
    )
    for mode, r in results.items():
        print(
            f"{mode:14} {r['direct_p50_ms']:8.2f}ms {r['proxy_p50_ms']:7.2f}ms {r['added_p50_ms']:7.2f}ms "
            f"{r['added_p90_ms']:5.2f}ms {r['added_p99_ms']:5.2f}ms {r['added_paired_p50_ms']:8.2f}ms "
            f"{r['added_paired_p90_ms']:5.2f}ms {r['proxy_cpu_ms_per_request']:11.2f}ms "
            f"{r['upstream_cpu_ms_per_request']:10.2f}ms  "
            + " ".join(f"{x:.2f}" for x in r["added_p50_ms_per_round"])
            + f" ({statistics.median(r['added_p50_ms_per_round']):.2f})"
        )
    print(
        json.dumps(
            {
                "results": results,
                "load_average": {"before": load_before, "after": load_after},
                "proxy": {k: health[k] for k in ("requests", "calls", "results", "fail_open")},
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
