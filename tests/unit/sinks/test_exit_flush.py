"""What is queued for the background writers when the process ends: on SIGTERM and at interpreter exit it
is flushed within a bounded time, anything dropped is counted, and SIGTERM still does what it did before
planguard (the application's handler runs; the default action ends the process by the signal). Real
processes, a real store directory, a real signal."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

from planguard.sinks.drops import DropCounter
from planguard.sinks.worker import BackgroundWorker

CHILD = """\
import os, signal, sys, time
from planguard import Guard
from planguard.config import Config
from planguard.events import ToolEvent

{before}
guard = Guard(Config.model_validate({{
    "telemetry": {{"enabled": False}},
    "store": {{"path": sys.argv[1], "max_queue": 5000}},
    "policies": {{"reminder": {{"enabled": False}}}},
}}))
for i in range(1000):
    guard.after_tool("s1", ToolEvent("Read", {{"path": f"f{{i}}.py"}}, call_id=f"c{{i}}"))
os.kill(os.getpid(), signal.SIGTERM)
{after}
"""


def stored_steps(store: Path) -> int:
    lines = [json.loads(line) for f in store.glob("*.jsonl") for line in f.read_text().splitlines()]
    return sum(1 for rec in lines if rec.get("type") == "step")


def run_child(
    tmp_path: Path, before: str = "", after: str = "time.sleep(30)"
) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "child.py"
    script.write_text(CHILD.format(before=textwrap.dedent(before), after=textwrap.dedent(after)))
    return subprocess.run(
        [sys.executable, str(script), str(tmp_path / "store")],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_sigterm_flushes_the_queue_and_still_ends_the_process(tmp_path: Path) -> None:
    t0 = time.perf_counter()
    proc = run_child(tmp_path)
    assert proc.returncode == -signal.SIGTERM, proc.stderr  # killed by the signal, as without planguard
    assert time.perf_counter() - t0 < 30
    assert stored_steps(tmp_path / "store") == 1000


def test_sigterm_chains_to_the_applications_handler(tmp_path: Path) -> None:
    before = """
        def on_term(signum, frame):
            print("app handler ran", flush=True)
            sys.exit(3)
        signal.signal(signal.SIGTERM, on_term)
    """
    proc = run_child(tmp_path, before=before)
    assert proc.returncode == 3 and "app handler ran" in proc.stdout, proc.stderr
    assert stored_steps(tmp_path / "store") == 1000


def test_exit_flushes_within_its_deadline_and_counts_what_it_drops() -> None:
    from planguard.sinks.worker import flush_at_exit

    release = threading.Event()
    drops = DropCounter()
    worker: BackgroundWorker[int] = BackgroundWorker(
        "stuck", lambda batch: release.wait(30), drops=drops, drop_reason="q_full", max_batch=1
    )
    try:
        for i in range(10):
            worker.submit(i)
        time.sleep(0.2)  # the first item is stuck in the handler
        t0 = time.perf_counter()
        dropped = flush_at_exit(0.3)
        assert time.perf_counter() - t0 < 1.0
        assert dropped == 9 and drops["stuck_unsent_at_exit"] == 9
    finally:
        release.set()
        worker.shutdown(1.0)


PROBE = """\
import os, signal, sys, threading
from planguard import Guard
from planguard.config import Config, load_config
from planguard.sinks.worker import _on_sigterm

{before}
def make_guard():
    cfg = load_config(sys.argv[2]) if len(sys.argv) > 2 else Config.model_validate({{
        "telemetry": {{"enabled": False}}, "store": {{"path": sys.argv[1]}},
    }})
    return Guard(cfg)
{make}
handler = signal.getsignal(signal.SIGTERM)
name = handler.name if isinstance(handler, signal.Handlers) else handler
print("handler:", "planguard" if handler is _on_sigterm else name, flush=True)
"""


def probe(tmp_path: Path, before: str = "", make: str = "guard = make_guard()", *args: str) -> str:
    """The SIGTERM handler a child process has after making a guard with a store (a background writer)."""
    script = tmp_path / "probe.py"
    script.write_text(PROBE.format(before=textwrap.dedent(before), make=textwrap.dedent(make)))
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("PLANGUARD_")}
    if args and args[0].startswith("PLANGUARD_"):
        key, _, value = args[0].partition("=")
        env[key] = value
        args = args[1:]
    proc = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "store"), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    (line,) = [ln for ln in proc.stdout.splitlines() if ln.startswith("handler:")]
    return line.removeprefix("handler: ")


def test_the_sigterm_handler_is_installed_by_default(tmp_path: Path) -> None:
    assert probe(tmp_path) == "planguard"


def test_an_ignored_sigterm_stays_ignored(tmp_path: Path) -> None:
    assert probe(tmp_path, before="signal.signal(signal.SIGTERM, signal.SIG_IGN)") == "SIG_IGN"
    # And the process survives the signal, as it was set up to.
    script = tmp_path / "ignored.py"
    script.write_text(
        CHILD.format(before="signal.signal(signal.SIGTERM, signal.SIG_IGN)", after="print('survived')")
    )
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "store2")], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and "survived" in done.stdout, done.stderr
    assert stored_steps(tmp_path / "store2") == 1000  # written at exit, as without a signal


def test_no_handler_is_installed_off_the_main_thread(tmp_path: Path) -> None:
    make = """
        t = threading.Thread(target=make_guard)
        t.start(); t.join()
    """
    assert probe(tmp_path, make=make) == "SIG_DFL"


def test_flush_on_sigterm_false_installs_no_handler(tmp_path: Path) -> None:
    config = tmp_path / "planguard.yaml"
    store = f"telemetry: {{enabled: false}}\nstore: {{path: {tmp_path}/s}}\n"
    config.write_text("flush_on_sigterm: false\n" + store)
    assert probe(tmp_path, "", "guard = make_guard()", str(config)) == "SIG_DFL"
    on = tmp_path / "on.yaml"
    on.write_text(store)
    assert probe(tmp_path, "", "guard = make_guard()", "PLANGUARD_FLUSH_ON_SIGTERM=0", str(on)) == ("SIG_DFL")
    assert probe(tmp_path, "", "guard = make_guard()", str(on)) == "planguard"
    # Turned off after a first guard installed it: the application's handler is back.
    make = """
        def app_handler(signum, frame):
            pass
        signal.signal(signal.SIGTERM, app_handler)
        store = {"path": sys.argv[1]}
        first = Guard(Config.model_validate({"telemetry": {"enabled": False}, "store": store}))
        assert signal.getsignal(signal.SIGTERM) is _on_sigterm
        second = Guard(load_config(sys.argv[2]))
    """
    assert probe(tmp_path, "", make, str(config)).startswith("<function app_handler")
