"""A real mini-swe-agent run through the proxy: litellm's api_base points at the proxy, the model is the fake
upstream on 127.0.0.1, and the agent executes bash in a temp directory. Tool-calling mode (mini-swe-agent's
default since v2) and text-based mode (the command in a fenced block, read by the proxy's text actions)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from proxy_fakes import SCRIPTED_COMMANDS, RecordingSink, bash_agent_script, proxy_stack, text_agent_script
from test_proxy_e2e import reminder_calls

from planguard.sinks.telemetry.testing import TelemetryCapture

pytest.importorskip("minisweagent", reason="mini-swe-agent is installed by the proxy's test extra")

DRIVER = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    import yaml
    from minisweagent import package_dir
    from minisweagent.agents.default import DefaultAgent
    from minisweagent.environments.local import LocalEnvironment
    from minisweagent.models.litellm_model import LitellmModel
    from minisweagent.models.litellm_textbased_model import LitellmTextbasedModel

    api_base, cwd, mode = sys.argv[1:4]
    config_file = "default.yaml" if mode == "tools" else "mini_textbased.yaml"
    config = yaml.safe_load((Path(package_dir) / "config" / config_file).read_text())
    model_cls = LitellmModel if mode == "tools" else LitellmTextbasedModel
    model = model_cls(model_name="openai/fake-coder", cost_tracking="ignore_errors",
                      model_kwargs={"api_base": api_base, "api_key": "sk-mini-secret", "drop_params": True})
    agent_cfg = {k: v for k, v in config["agent"].items() if k != "mode"}
    agent_cfg.update(step_limit=20, cost_limit=0)
    agent = DefaultAgent(model, LocalEnvironment(cwd=cwd), **agent_cfg)
    result = agent.run("Fix add() in calc.py so that add(2, 2) == 4.")
    print(json.dumps({"exit_status": result.get("exit_status"), "n_calls": agent.n_calls}))
""")


@pytest.mark.parametrize("mode", ["tools", "text"])
def test_mini_swe_agent_run_through_proxy(mode: str, tmp_path: Path) -> None:
    work = tmp_path / "repo"
    work.mkdir()
    (work / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    cap = TelemetryCapture()
    rec = RecordingSink()
    script = bash_agent_script() if mode == "tools" else text_agent_script()
    settings: dict[str, Any] = {} if mode == "tools" else {"text_actions": {"enabled": True}}
    env = {
        **os.environ,
        "MSWEA_COST_TRACKING": "ignore_errors",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "MSWEA_SILENT_STARTUP": "1",
        "MSWEA_CONFIGURED": "true",
    }
    with proxy_stack(script, sinks=(cap.sink, rec), **settings) as stack:
        proc = subprocess.run(
            [sys.executable, str(driver), stack.url + "/v1", str(work), mode],
            capture_output=True,
            text=True,
            timeout=240,
            env=env,
            cwd=tmp_path,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        (sid,) = stack.app.monitor.conversations
        summary = stack.guard.session(sid).summary()
        open_calls = len(stack.app.monitor.conversations[sid].open)
    assert result == {"exit_status": "Submitted", "n_calls": len(SCRIPTED_COMMANDS)}
    assert "return a + b" in (work / "calc.py").read_text()  # the agent really ran the scripted patch
    # Phases and metrics: every bash command is one step; all but the final submit got their result.
    assert summary.n_model_calls == len(SCRIPTED_COMMANDS)
    assert summary.n_steps == len(SCRIPTED_COMMANDS)
    assert open_calls == 1  # the submit ends the run: no request carries its result
    ends = rec.of("tool_end")
    # Exit codes from <returncode>; the submit is closed without a result when the proxy ends the session.
    assert [e[2] for e in ends] == [0, 0, 0, 0, 1, 0, 0, 0, 0, None]
    roles = {r for e in ends for r in e[1]}
    assert any(r.startswith("L_navigate") for r in roles) and "P" in {r[:1] for r in roles}
    assert summary.letters and summary.scores
    assert cap.flush()
    assert len(cap.spans("execute_tool bash")) == len(SCRIPTED_COMMANDS)
    # The reminder is in the upstream request every 5 model calls, never in mini-swe-agent's own history.
    assert reminder_calls(stack) == [5, 10]
    assert stack.fake.requests[0].headers["authorization"] == "Bearer sk-mini-secret"
