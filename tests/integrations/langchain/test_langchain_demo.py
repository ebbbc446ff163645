"""The README's first command, ``planguard demo``: a real ``create_agent`` run with a scripted model and real
tools on a throw-away repository, monitored by planguard with the demo's packaged ``planguard.yaml``
(``examples/planguard.yaml`` in the repository). tests/integrations/test_wheel_install.py runs it from
built wheels."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain.agents", reason="the demo needs the LangChain integration")

from langchain_core.messages import HumanMessage, ToolMessage
from planguard_langchain import is_planguard_message
from planguard_langchain.demo import DEFAULT_CONFIG, run_demo

REPO = Path(__file__).resolve().parents[3]


def _clean_env(**extra: str) -> dict[str, str]:
    """The environment of a fresh machine: no API keys, no telemetry endpoint."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not (k.endswith("_API_KEY") or k.startswith(("OTEL_", "PLANGUARD_", "LANGSMITH_", "LANGCHAIN_")))
    }
    env["NO_COLOR"] = "1"
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, str]:
    import io

    out = io.StringIO()
    store = tmp_path_factory.mktemp("store")
    result = run_demo(store_dir=store, stream=out, color=False)
    return result, out.getvalue()


def _injected(messages: list[Any]) -> list[str]:
    return [str(m.content) for m in messages if isinstance(m, HumanMessage) and is_planguard_message(m)]


def test_demo_fixes_the_bug_and_planguard_reminds_nudges_and_gates(demo_run: tuple[Any, str]) -> None:
    result, _ = demo_run
    assert result.fixed  # the agent's edit really fixed the throw-away repository
    s = result.summary
    # Live rules: the reproduction script written and run after the patch is V, the existing unittest suite v.
    assert s is not None and s.letters == "N" * 12 + "P" + "VVv"
    assert s.decision_counts.get("deny") == 2 and s.decision_counts.get("nudge") == 1
    assert {"search_loop", "redundant_search"} <= set(s.finding_counts)
    # The reproduction phase was skipped, and regression tests are not a phase of the demo's plan.
    assert round(s.primary.PC, 2) == 0.77 and s.primary.PPC == 0.75

    requests = result.model.requests
    periodic = [
        i + 1
        for i, r in enumerate(requests)
        if any(t.startswith("PLAN REMINDER: (automatic") for t in _injected(r.messages))
    ]
    assert periodic == [5, 10, 15]  # every 5 model calls, per examples/planguard.yaml
    nudged = [
        i for i, r in enumerate(requests) if any("searched and read" in t for t in _injected(r.messages))
    ]
    assert len(nudged) == 1
    # The early submit was answered by the gate, as a tool error, and the model saw it.
    denials = [m for m in result.messages if isinstance(m, ToolMessage) and m.status == "error"]
    assert [m.name for m in denials] == ["submit", "submit"]
    assert "validate-before-submit" in str(denials[0].content)
    # Ephemeral: the reminders reached the model but are not in the agent's history.
    assert not _injected(result.messages)


def test_demo_prints_a_readable_timeline_and_records_the_session(demo_run: tuple[Any, str]) -> None:
    result, text = demo_run
    lines = text.splitlines()
    assert lines[0].startswith("planguard demo")
    step_lines = [ln for ln in lines if f"{result.session_id} #" in ln]
    assert len(step_lines) == 17 + 2  # 17 tool calls + 2 blocked submits
    assert sum("✗ blocked" in ln for ln in step_lines) == 2
    assert any("search_loop" in ln and "nudge" in ln for ln in step_lines)
    assert sum("↳ remind: PLAN REMINDER" in ln for ln in lines) == 3
    assert any(ln.startswith("  agent ▸ ") for ln in lines)
    told = [ln for ln in lines if ln.startswith("  planguard ▸ to the model: ")]
    assert len(told) == 3 and "searched and read" in told[0] and "without doing Reproduction" in told[1]
    assert "Regression tests after the patch is not a phase of your plan" in told[2]
    assert "compliance PC 0.77" in text and "tests pass" in text

    files = list(result.store_dir.glob("*.jsonl"))
    assert len(files) == 1 and result.session_id in files[0].name
    replayed = subprocess.run(
        [sys.executable, "-m", "planguard", "replay", str(files[0]), "--format", "jsonl"],
        capture_output=True,
        text=True,
        check=True,
        env=_clean_env(),
        timeout=120,
    )
    record = json.loads(replayed.stdout.splitlines()[0])
    assert record["letters"] == result.summary.letters  # the stored session replays to the same phases


def test_the_packaged_config_is_the_example_config() -> None:
    # examples/planguard.yaml (the README's annotated example) is a link to the file the wheel ships.
    assert DEFAULT_CONFIG.is_file() and DEFAULT_CONFIG.parent.name == "demo"
    assert (REPO / "examples" / "planguard.yaml").resolve() == DEFAULT_CONFIG


def test_planguard_demo_command_on_a_clean_environment(tmp_path: Path) -> None:
    store = tmp_path / "sessions"
    proc = subprocess.run(
        [sys.executable, "-m", "planguard", "demo", "--store", str(store), "--no-color"],
        capture_output=True,
        text=True,
        cwd=tmp_path,  # not the checkout: the demo and its config come from the installed packages
        env=_clean_env(),
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "compliance PC 0.77" in proc.stdout
    assert len(list(store.glob("*.jsonl"))) == 1
    assert "Traceback" not in proc.stderr


def test_demo_without_the_integration_says_how_to_install_it(tmp_path: Path) -> None:
    stub = tmp_path / "planguard_langchain"
    stub.mkdir()
    (stub / "__init__.py").write_text(
        "raise ImportError('simulated: planguard-langchain is not installed')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "planguard", "demo"],
        capture_output=True,
        text=True,
        env=_clean_env(PYTHONPATH=str(tmp_path)),
        timeout=120,
    )
    assert proc.returncode == 2
    assert 'pip install "planguard-agents[langchain]"' in proc.stderr
    assert "Traceback" not in proc.stderr


def test_cli_start_up_does_not_import_the_integration() -> None:
    code = (
        "import sys; from planguard.cli import build_parser; build_parser(); "
        "print(sorted(m for m in sys.modules if m.startswith(('planguard_langchain', 'langchain.agents'))))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert proc.stdout.strip() == "[]"
