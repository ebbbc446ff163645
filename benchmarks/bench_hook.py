"""Wall time of the Claude Code hook: one process per hook call, as Claude Code runs it.

    python benchmarks/bench_hook.py [--calls 40] [--config FILE]

Reports the median and p90 wall time per hook call for ``planguard hook claude-code`` and for the
``planguard-claude-code-hook`` entry point (same hook, without the planguard CLI's subcommand discovery),
then where the time goes: interpreter start-up, imports, Guard construction, and the in-process work of
one call (lock, restore, run, save) as the session grows.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

CONFIG = """\
plan: plan
telemetry: {enabled: false}
store: {enabled: false}
policies:
  gates:
    - name: validate-before-submit
      tool: Bash
      arguments: {command: 'submit'}
      until: {phase_after: {phase: V, after: P}}
"""
SID = "bench-0000-0000-0000-000000000000"


def payloads(n: int) -> list[dict[str, Any]]:
    """A realistic mix of Pre/Post pairs: reads, a test script, runs, edits."""
    base = {"session_id": SID, "transcript_path": "/x.jsonl", "cwd": "/srv/w"}
    tools = [
        ("Read", {"file_path": "/srv/w/pkg/calc.py"}, {"type": "text", "file": {"content": "x = 1\n" * 200}}),
        ("Grep", {"pattern": "def add", "path": "/srv/w"}, {"filenames": ["/srv/w/pkg/calc.py"]}),
        ("Bash", {"command": "python3 test_calc.py"}, {"stdout": "ok\n", "stderr": ""}),
        (
            "Edit",
            {"file_path": "/srv/w/pkg/calc.py", "old_string": "a - b", "new_string": "a + b"},
            {"filePath": "x"},
        ),
    ]
    out = []
    for i in range(n // 2):
        tool, inp, resp = tools[i % len(tools)]
        tid = f"toolu_{i:04d}"
        out.append(
            {
                **base,
                "hook_event_name": "PreToolUse",
                "tool_name": tool,
                "tool_input": inp,
                "tool_use_id": tid,
            }
        )
        out.append(
            {
                **base,
                "hook_event_name": "PostToolUse",
                "tool_name": tool,
                "tool_input": inp,
                "tool_response": resp,
                "tool_use_id": tid,
                "duration_ms": 5,
            }
        )
    return out


def time_command(cmd: list[str], calls: list[dict[str, Any]]) -> list[float]:
    times = []
    env = {**os.environ, "PLANGUARD_CONFIG": ""}
    for p in calls:
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, input=json.dumps(p), capture_output=True, text=True, env=env)
        times.append(time.perf_counter() - t0)
        if proc.returncode != 0:
            raise SystemExit(f"hook failed: {proc.stderr}")
    return times


def median_ms(xs: list[float]) -> str:
    qs = statistics.quantiles(xs, n=10) if len(xs) >= 10 else [max(xs)] * 9
    return f"median {statistics.median(xs) * 1000:7.1f} ms   p90 {qs[8] * 1000:7.1f} ms   (n={len(xs)})"


def py_time(code: str, repeat: int = 7) -> float:
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=40, help="hook calls per variant (Pre/Post pairs)")
    ap.add_argument("--config", help="planguard config (default: a gate, telemetry and store off)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="pg-bench-"))
    try:
        config = Path(args.config) if args.config else tmp / "pg.yaml"
        if not args.config:
            config.write_text(CONFIG)
        calls = payloads(args.calls)
        bindir = Path(sys.executable).parent
        variants = {
            "planguard hook claude-code": [str(bindir / "planguard"), "hook", "claude-code"],
            "planguard-claude-code-hook": [str(bindir / "planguard-claude-code-hook")],
        }
        print(f"Claude Code hook, one process per call ({sys.executable})")
        for i, (name, cmd) in enumerate(variants.items()):
            state = tmp / f"state{i}"
            times = time_command([*cmd, "--config", str(config), "--state-dir", str(state)], calls)
            print(f"  {name:32s} {median_ms(times)}")

        print("where the time goes (median of 7 fresh interpreters):")
        base = py_time("pass")
        steps = {
            "interpreter start-up": "pass",
            "import planguard.guard": "import planguard.guard",
            "+ Guard(config)": f"from planguard.guard import Guard; Guard.from_file({str(config)!r})",
            "+ planguard CLI parser": "from planguard.cli import build_parser; build_parser()",
        }
        for label, code in steps.items():
            t = py_time(code)
            print(
                f"  {label:32s} {t * 1000:7.1f} ms"
                + ("" if code == "pass" else f"   (+{(t - base) * 1000:.1f})")
            )

        from planguard_claude_code.hook import HookRunner
        from planguard_claude_code.state import SessionStore

        runner = HookRunner(str(config), SessionStore(tmp / "inproc"))
        per_call: list[float] = []
        for p in payloads(400):
            t0 = time.perf_counter()
            runner.handle(p)
            per_call.append(time.perf_counter() - t0)
        runner.close()
        early, late = per_call[:40], per_call[-40:]
        print("in-process work of one call (lock, restore snapshot, run, journal, save):")
        print(f"  calls 1-40     {median_ms(early)}")
        print(f"  calls 361-400  {median_ms(late)}")
        snap = next((tmp / "inproc").glob("*.snap"))
        log = next((tmp / "inproc").glob("*.log"))
        print(f"  after 400 calls: snapshot {snap.stat().st_size} B, journal {log.stat().st_size} B")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
