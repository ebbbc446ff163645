"""mini-swe-agent end to end: the real ``mini`` command (and the agent classes in-process) against a local
fake OpenAI-compatible server through litellm, with real bash execution in a temporary directory. The gate
denies an early submit; reminders reach the model query; the saved trajectory replays to the live phases."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("minisweagent")
pytest.importorskip("planguard_mini_swe_agent")

pytestmark = pytest.mark.e2e

SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
CALC = "def add(a, b):\n    return a - b\n"
TEST = "from calc import add\nassert add(2, 3) == 5, add(2, 3)\nprint('ok')\n"

CONFIG = """\
plan: plan
telemetry: {enabled: false}
store: {enabled: false}
policies:
  reminder: {every_model_calls: 3, min_gap_model_calls: 0}
  gates:
    - name: validate-before-submit
      tool: bash
      arguments: {command: 'COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT'}
      until: {phase_after: {phase: V, after: P, strict: true}}
"""

SCRIPT = [
    "ls",
    f"cat > test_calc.py <<'EOF'\n{TEST}EOF",
    "python3 test_calc.py",
    "sed -i 's/a - b/a + b/' calc.py",
    SUBMIT,  # too early: the patch is not validated yet -> denied, never runs
    "python3 test_calc.py",
    SUBMIT,
]


class FakeOpenAI:
    """``POST /v1/chat/completions``: one scripted bash tool call per request; records the requests."""

    def __init__(self, commands: list[str]) -> None:
        self.commands = commands
        self.requests: list[dict[str, Any]] = []
        self.unknown: list[str] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    fake.unknown.append(self.path)
                    self._send(404, {"error": {"message": "fake: unknown endpoint"}})
                    return
                fake.requests.append(body)
                n = len(fake.requests)
                command = fake.commands[min(n, len(fake.commands)) - 1]
                call = {
                    "id": f"call_{n:02d}",
                    "type": "function",
                    "function": {"name": "bash", "arguments": json.dumps({"command": command})},
                }
                self._send(
                    200,
                    {
                        "id": f"chatcmpl-{n}",
                        "object": "chat.completion",
                        "created": 1700000000,
                        "model": body.get("model", "fake"),
                        "choices": [
                            {
                                "index": 0,
                                "finish_reason": "tool_calls",
                                "message": {
                                    "role": "assistant",
                                    "content": f"Step {n}.",
                                    "tool_calls": [call],
                                },
                            }
                        ],
                        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                    },
                )

            def _send(self, status: int, obj: dict[str, Any]) -> None:
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake() -> Any:
    server = FakeOpenAI(SCRIPT)
    yield server
    server.close()


@pytest.fixture
def work(tmp_path: Path) -> Path:
    w = tmp_path / "repo"
    w.mkdir()
    (w / "calc.py").write_text(CALC)
    (tmp_path / "planguard.yaml").write_text(CONFIG)
    return w


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MSWEA_", "PLANGUARD_"))}
    env.update(
        {
            "MSWEA_CONFIGURED": "true",
            "MSWEA_SILENT_STARTUP": "1",
            "MSWEA_COST_TRACKING": "ignore_errors",
            "MSWEA_GLOBAL_CONFIG_DIR": str(tmp_path / "mswea"),
            "OPENAI_API_KEY": "sk-fake",
            "PLANGUARD_CONFIG": str(tmp_path / "planguard.yaml"),
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        }
    )
    return env


def _check_run(fake: FakeOpenAI, work: Path, traj: dict[str, Any]) -> dict[str, Any]:
    assert not fake.unknown, fake.unknown
    assert traj["info"]["exit_status"] == "Submitted"
    assert (work / "calc.py").read_text() == CALC.replace("a - b", "a + b")
    messages = traj["messages"]
    # The denied submit: an observation carrying planguard's marker and the gate's reason, not a submission.
    denied = [m for m in messages if isinstance(m.get("extra"), dict) and "planguard" in m["extra"]]
    assert len(denied) == 1
    assert denied[0]["extra"]["planguard"]["decision"] == "deny"
    assert "PLANGUARD GATE (validate-before-submit)" in denied[0]["content"]
    # Reminders went into the model query only (ephemeral): seen by the server, absent from the history.
    sent = [json.dumps(r["messages"]) for r in fake.requests]
    assert any("PLAN REMINDER:" in s for s in sent[2:])
    assert not any("PLAN REMINDER:" in json.dumps(m.get("content")) for m in messages)
    live = traj["info"]["planguard"]
    assert live["ended"] is True
    assert live["letters"] == "NRRPV"
    assert live["decision_counts"]["deny"] == 1
    assert live["n_model_calls"] == len(fake.requests) == len(SCRIPT)
    return live


def _offline(path: Path, live: dict[str, Any]) -> None:
    """Offline = live: the saved trajectory replays to the same phases and metrics."""
    from planguard.guard import Guard
    from planguard.offline.replay import replay

    guard = Guard.from_file(path.parent.parent / "planguard.yaml")
    try:
        (result,) = [r for r in replay([str(path)], guard.pipeline) if not isinstance(r, Exception)]
    finally:
        guard.shutdown()
    assert result.summary.letters == live["letters"]
    assert result.summary.langutory == live["langutory"]
    assert {k: v.as_dict() for k, v in result.summary.scores.items()} == live["metrics"]
    assert result.summary.n_steps == live["n_steps"]
    assert result.summary.decision_counts.get("deny") == live["decision_counts"].get("deny")


def test_mini_command_with_planguard_classes(fake: FakeOpenAI, work: Path, tmp_path: Path) -> None:
    traj_path = tmp_path / "out" / "run.traj.json"
    traj_path.parent.mkdir()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "minisweagent.run.mini",
            "--agent-class",
            "planguard_mini_swe_agent.PlanguardAgent",
            "--environment-class",
            "planguard_mini_swe_agent.PlanguardEnvironment",
            "--model-class",
            "planguard_mini_swe_agent.PlanguardModel",
            "-m",
            "openai/fake-coder",
            "-t",
            "Fix add() in calc.py",
            "-y",
            "--exit-immediately",
            "-l",
            "0",
            "-o",
            str(traj_path),
            "-c",
            "mini.yaml",
            "-c",
            f"model.model_kwargs.api_base={fake.url}",
            "-c",
            f"environment.cwd={work}",
        ],
        cwd=work,
        env=_env(tmp_path),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    traj = json.loads(traj_path.read_text())
    live = _check_run(fake, work, traj)
    assert live["session_id"].startswith("mini-")
    _offline(traj_path, live)


def test_default_agent_in_process_with_plain_environment_and_model(
    fake: FakeOpenAI, work: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent class alone wraps mini's own LocalEnvironment and LitellmModel."""
    for k, v in _env(tmp_path).items():
        monkeypatch.setenv(k, v)
    import yaml
    from minisweagent.config import builtin_config_dir
    from minisweagent.environments.local import LocalEnvironment
    from minisweagent.models.litellm_model import LitellmModel
    from planguard_mini_swe_agent import PlanguardDefaultAgent, get_guard

    from planguard.config import load_config
    from planguard.guard import Guard

    agent_cfg = yaml.safe_load((builtin_config_dir / "mini.yaml").read_text())["agent"]
    agent_cfg.pop("mode", None)
    traj_path = tmp_path / "out" / "inproc.traj.json"
    traj_path.parent.mkdir()
    model = LitellmModel(
        model_name="openai/fake-coder", model_kwargs={"api_base": fake.url}, cost_tracking="ignore_errors"
    )
    env = LocalEnvironment(cwd=str(work))
    agent = PlanguardDefaultAgent(
        model, env, planguard_session="inproc-1", **{**agent_cfg, "cost_limit": 0, "output_path": traj_path}
    )
    assert isinstance(agent.guard, Guard)
    assert agent.guard is get_guard(None)
    assert agent.guard.config == load_config(tmp_path / "planguard.yaml")
    agent.run("Fix add() in calc.py")
    traj = json.loads(traj_path.read_text())
    live = _check_run(fake, work, traj)
    assert live["session_id"] == "inproc-1"
    _offline(traj_path, live)
