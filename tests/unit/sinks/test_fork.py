"""A process that forks after planguard started (a pre-fork server, ``multiprocessing`` with fork, a tool
that forks): the child has none of the parent's threads, so its background writers must start their own.
Before, everything a forked child recorded stayed queued (no store file, no webhook), and a child that
shut its guard down ended the parent's sessions a second time. Real processes: a script that forks, a
real store directory, a real HTTP endpoint on 127.0.0.1 in the parent."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")

# Run in a fresh interpreter: forking the test process itself would copy pytest's and other tests' threads.
SCRIPT = """\
import json, os, sys, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from planguard import Guard
from planguard.config import Config
from planguard.events import ToolEvent

received = []

class Endpoint(BaseHTTPRequestHandler):
    def do_POST(self):
        received.append(json.loads(self.rfile.read(int(self.headers["content-length"]))))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass

server = ThreadingHTTPServer(("127.0.0.1", 0), Endpoint)
threading.Thread(target=server.serve_forever, daemon=True).start()
guard = Guard(Config.model_validate({
    "telemetry": {"enabled": False},
    "store": {"path": sys.argv[1]},
    "policies": {"reminder": {"enabled": False}},
    "webhook": {"url": f"http://127.0.0.1:{server.server_port}/hook", "events": ["session_end"]},
}))
for i in range(30):
    guard.after_tool("parent", ToolEvent("Read", {"path": f"f{i}.py"}, call_id=f"p{i}"))
pid = os.fork()
if pid == 0:
    code = 0
    try:
        for i in range(20):
            guard.after_tool("child", ToolEvent("Read", {"path": f"g{i}.py"}, call_id=f"c{i}"))
        guard.shutdown()  # ends only the child's own session
    except BaseException as exc:
        print(repr(exc), file=sys.stderr)
        code = 1
    os._exit(code)
_, status = os.waitpid(pid, 0)
guard.shutdown()
print(json.dumps({"child_exit": os.waitstatus_to_exitcode(status),
                  "webhooks": sorted(e["session_id"] for e in received if e.get("event") == "session_end")}))
"""


def test_a_forked_child_records_its_own_sessions_and_not_the_parents(tmp_path: Path) -> None:
    script = tmp_path / "forks.py"
    script.write_text(SCRIPT)
    store = tmp_path / "store"
    proc = subprocess.run(
        [sys.executable, str(script), str(store)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["child_exit"] == 0
    files: dict[str, list[dict[str, object]]] = {}
    for f in store.glob("*.jsonl"):
        records = [json.loads(line) for line in f.read_text().splitlines()]
        kinds = [r["type"] for r in records]
        files.setdefault(str(records[0]["session_id"]), []).append(
            {"steps": kinds.count("step"), "ends": kinds.count("end")}
        )
    # One file and one end record per session, each with its own steps: nothing lost, nothing twice.
    assert files == {"parent": [{"steps": 30, "ends": 1}], "child": [{"steps": 20, "ends": 1}]}, files
    assert out["webhooks"] == ["child", "parent"]
