"""Wall time of the Claude Code hook: one process per hook call, as Claude Code runs it.

    python benchmarks/bench_hook.py [--calls 40] [--cold 5] [--config FILE]

Reports the median and p90 wall time per hook call, each beside a bare interpreter start
(``python -S -c pass``) timed alternately with it in the same run, and their ratio (the machine's load
moves both alike):

* through the warm daemon, for each way to launch the hook: the command ``planguard install claude-code``
  writes (``python -S .../planguard_hooks/launch.py``), ``planguard hook claude-code`` and the
  ``planguard-claude-code-hook`` entry point; and the installed command with the session store on (the
  default config's: each call's records are in the session's file before the hook answers);
* for the first call, which starts the daemon (cold start, a fresh state directory each time);
* with the daemon off (``--no-daemon`` / ``PLANGUARD_HOOK_DAEMON=0``: every call builds planguard itself),
  which is also what a hook does when the daemon is unavailable;

then where the time goes (interpreter start-up, imports, Guard construction) and the in-process work of one
call (lock, restore, run, save) in a hook process and in the daemon, as the session grows. The daemons run
in a private temporary ``XDG_RUNTIME_DIR`` and are stopped at the end. The load average is printed before
and after: on a busy machine the figures are only comparable with others taken under similar load.
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
store: {enabled: %s, path: '%s'}
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
    out: list[dict[str, Any]] = []
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


BARE = [sys.executable, "-S", "-c", "pass"]


def time_command(
    cmd: list[str], calls: list[dict[str, Any]], env: dict[str, str], bare: list[float] | None = None
) -> list[float]:
    """Wall time of each hook call; with ``bare``, a bare ``python -S -c pass`` start is timed after each
    call and appended there (the same conditions, call for call)."""
    times = []
    for p in calls:
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, input=json.dumps(p), capture_output=True, text=True, env=env)
        times.append(time.perf_counter() - t0)
        if proc.returncode != 0 or proc.stderr:
            raise SystemExit(f"hook failed: {proc.stderr}")
        if bare is not None:
            t0 = time.perf_counter()
            subprocess.run(BARE, capture_output=True, env=env, check=True)
            bare.append(time.perf_counter() - t0)
    return times


def p90(xs: list[float]) -> float:
    return statistics.quantiles(xs, n=10)[8] if len(xs) >= 10 else max(xs)


def beside_bare(xs: list[float], bare: list[float]) -> str:
    """``median_ms(xs)`` with the bare starts timed beside them and the ratios."""
    m, b = statistics.median(xs), statistics.median(bare)
    return (
        f"{median_ms(xs)}\n  {'':32s} bare python -S: median {b * 1000:5.1f} ms   "
        f"p90 {p90(bare) * 1000:5.1f} ms   -> {m / b:4.1f}x median, {p90(xs) / p90(bare):4.1f}x p90"
    )


def median_ms(xs: list[float]) -> str:
    return f"median {statistics.median(xs) * 1000:7.1f} ms   p90 {p90(xs) * 1000:7.1f} ms   (n={len(xs)})"


def py_time(args: list[str], env: dict[str, str], repeat: int = 9) -> float:
    subprocess.run([sys.executable, *args], check=True, capture_output=True, env=env)  # bytecode cache
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, *args], check=True, capture_output=True, env=env)
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def instructions(cmd: list[str], stdin: bytes, env: dict[str, str]) -> int:
    """Instructions one process executes from start to exit, counted by callgrind (children not traced:
    the daemon a hook call talks to is another process)."""
    with tempfile.TemporaryDirectory(prefix="pg-bench-cg-") as tmp:
        out = Path(tmp) / "cg.out"
        vg = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "--dump-line=no"]
        subprocess.run([*vg, *cmd], input=stdin, env=env, capture_output=True, check=True)
        for line in out.read_text(errors="replace").splitlines():
            if line.startswith(("summary: ", "totals: ")):
                return int(line.split()[1])
    raise RuntimeError(f"no callgrind totals for {cmd}")


def instructions_beside_bare(cmd: list[str], env: dict[str, str], runs: int) -> None:
    """The hook client's instructions per call through the warm daemon, each run beside a bare
    ``python -S -c pass`` counted right after it (the acceptance figure of issue 31: at most 2.5x)."""
    pre = json.dumps(payloads(2)[0]).encode()
    time_command(cmd, payloads(2), env)  # the daemon is up (and warm) before counting
    ratios = []
    for _ in range(runs):
        hook = instructions(cmd, pre, env)
        bare = instructions([sys.executable, "-S", "-c", "pass"], b"", env)
        ratios.append(hook / bare)
        counts = f"hook call {hook / 1e6:7.2f}M, bare python -S {bare / 1e6:6.2f}M instructions"
        print(f"  {counts}: {ratios[-1]:.2f}x")
    print(f"  median ratio {statistics.median(ratios):.2f}x (goal: at most 2.5x)")


def main() -> None:
    from planguard_hooks import client, install

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=40, help="hook calls per variant (Pre/Post pairs)")
    ap.add_argument("--cold", type=int, default=5, help="cold starts measured (each a fresh daemon)")
    ap.add_argument(
        "--steps", type=int, default=1000, help="hook calls of the in-process series (a session this long)"
    )
    ap.add_argument(
        "--config", help="planguard config (default: a gate, telemetry off, the store on and off)"
    )
    ap.add_argument(
        "--no-bytecode-cache",
        action="store_true",
        help="keep PYTHONDONTWRITEBYTECODE as it is (by default the runs get a private bytecode cache, as "
        "an installed package has: without one every module is compiled again in every process)",
    )
    ap.add_argument(
        "--instructions",
        type=int,
        metavar="RUNS",
        help="only count the installed command's instructions per call (callgrind, through the warm "
        "daemon) beside a bare python -S start, RUNS times",
    )
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="pg-bench-"))
    runtime = tmp / "rt"
    runtime.mkdir(mode=0o700)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("PLANGUARD_", "CLAUDE_PROJECT_DIR"))},
        "XDG_RUNTIME_DIR": str(runtime),
        # A working tree others edit would restart the daemon mid-series (it follows planguard's code).
        client.ENV_WATCH: "0",
    }
    if not args.no_bytecode_cache:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")  # outside the source tree
    state_dirs: list[Path] = []

    def state(name: str) -> Path:
        state_dirs.append(tmp / name)
        return tmp / name

    try:
        config = Path(args.config) if args.config else tmp / "pg.yaml"
        with_store = config if args.config else tmp / "pg-store.yaml"
        if not args.config:
            config.write_text(CONFIG % ("false", tmp / "store"))
            with_store.write_text(CONFIG % ("true", tmp / "store"))
        calls = payloads(args.calls)
        bindir = Path(sys.executable).parent
        installed = install.hook_command()  # python -S .../launch.py
        client_dir = str(Path(client.__file__).parent)
        launchers = {
            "installed command (python -S)": installed.split(),
            "planguard hook claude-code": [str(bindir / "planguard"), "hook", "claude-code"],
            "planguard-claude-code-hook": [str(bindir / "planguard-claude-code-hook")],
        }
        print(f"Claude Code hook, one process per call ({sys.executable})")
        print(f"  {load()}")
        print(f"  installed command: {installed}")
        cached = "PYTHONDONTWRITEBYTECODE" not in env
        print(f"  bytecode cache: {'private, warmed up first' if cached else 'as in the environment'}")
        if cached:  # fill the cache, as installing a package does
            subprocess.run(
                [sys.executable, "-m", "compileall", "-q", str(Path(client.__file__).parent)],
                env=env,
                check=True,
            )

        if args.instructions:
            print("instructions of one hook call through the warm daemon (callgrind):")
            cmd = [*installed.split(), "--config", str(config), "--state-dir", str(state("warm"))]
            instructions_beside_bare(cmd, env, args.instructions)
            return
        print("through the warm daemon (started before timing):")
        variants = [(name, cmd, config) for name, cmd in launchers.items()]
        variants.append(("installed command, store on", installed.split(), with_store))
        for name, cmd, cfg in variants:
            cmd = [*cmd, "--config", str(cfg), "--state-dir", str(state("warm"))]
            time_command(cmd, payloads(2), env)  # the daemon is up before the clock starts
            bare: list[float] = []
            print(f"  {name:32s} {beside_bare(time_command(cmd, calls, env, bare), bare)}")
        errors_log = tmp / "warm" / "hook-errors.log"
        fallbacks = errors_log.read_text().count("hook daemon unavailable") if errors_log.exists() else 0

        print("first call, which starts the daemon (cold start):")
        cold: list[float] = []
        second: list[float] = []
        for i in range(args.cold):
            cmd = [*launchers["installed command (python -S)"], "--config", str(config)]
            cmd += ["--state-dir", str(state(f"cold{i}"))]
            first, nxt = time_command(cmd, payloads(2), env)
            cold.append(first)
            second.append(nxt)
            client.stop_daemons(str(tmp / f"cold{i}"), env)
        print(f"  {'first call':32s} {median_ms(cold)}")
        print(f"  {'the call after it':32s} {median_ms(second)}")

        print("daemon off (--no-daemon / PLANGUARD_HOOK_DAEMON=0; also the fallback path):")
        off = {**env, client.ENV_DAEMON: "0"}
        variants = [(name, cmd, config) for name, cmd in launchers.items()]
        variants.append(("installed command, store on", installed.split(), with_store))
        for name, cmd, cfg in variants:
            cmd = [*cmd, "--config", str(cfg), "--state-dir", str(state("off"))]
            bare = []
            times = time_command(cmd, calls[: max(10, len(calls) // 2)], off, bare)
            print(f"  {name:32s} {beside_bare(times, bare)}")

        print("where the time goes (median of 9 fresh interpreters):")
        steps = {
            "interpreter start-up, -S": ["-S", "-c", "pass"],
            "+ hook client (stdlib only)": [
                "-S",
                "-c",
                f"import sys; sys.path.insert(0, {client_dir!r}); import client",
            ],
            "interpreter start-up (site)": ["-c", "pass"],
            "+ import planguard.guard": ["-c", "import planguard.guard"],
            "+ Guard(config)": ["-c", f"from planguard.guard import Guard; Guard.from_file({str(config)!r})"],
            "+ planguard CLI parser": ["-c", "from planguard.cli import build_parser; build_parser()"],
        }
        for label, code in steps.items():
            print(f"  {label:32s} {py_time(code, env) * 1000:7.1f} ms")

        from planguard_hooks.service import HookRunner
        from planguard_hooks.state import SessionStore

        print(f"in-process work of one call (lock, restore, run, store, journal, save), {args.steps} calls:")
        last = f"{args.steps - 39}-{args.steps}"
        runs = [
            (label, long_lived, cfg, tag)
            for long_lived, label in ((False, "hook process"), (True, "daemon (session in memory)"))
            for cfg, tag in ((config, ""), (with_store, ", store on"))
        ]
        for label, long_lived, cfg, tag in runs:
            name = f"inproc-{long_lived}{'-store' if tag else ''}"
            runner = HookRunner(str(cfg), SessionStore(state(name)), long_lived=long_lived)
            per_call: list[float] = []
            for p in payloads(args.steps):
                t0 = time.perf_counter()
                runner.handle(p)
                per_call.append(time.perf_counter() - t0)
            runner.close()
            print(f"  {label + tag + ', calls 1-40':54s} {median_ms(per_call[:40])}")
            print(f"  {label + tag + ', calls ' + last:54s} {median_ms(per_call[-40:])}")
        snap = next((tmp / "inproc-False-store").glob("*.snap"))
        log = next((tmp / "inproc-False-store").glob("*.log"))
        print(
            f"  after {args.steps} calls: snapshot {snap.stat().st_size} B, journal {log.stat().st_size} B; "
            f"{len(list((tmp / 'store').glob('*.jsonl')))} store files (4 sessions ran with the store on)"
        )
        print(f"  ({fallbacks} of the warm-daemon calls were answered in-process instead; {load()})")
    finally:
        for d in state_dirs:
            client.stop_daemons(str(d), env)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
