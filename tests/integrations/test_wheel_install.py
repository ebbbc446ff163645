"""What a user gets from the published wheels, with no checkout: the core and every integration build into
wheels that require each other by name and version (never ``file://``), install together from one wheel
directory, and ``pip install "planguard-agents[langchain]"`` then ``planguard demo`` runs the demo.

Slow (it builds six wheels and fills a fresh virtualenv; pip fetches the third-party dependencies from the
package index), so it runs once, in CI's normal pass."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

from planguard._version import __version__

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
INTEGRATIONS = sorted(p.parent for p in (REPO / "integrations").glob("*/pyproject.toml"))


def _run(
    cmd: list[str], *, cwd: Path | None = None, timeout: float = 900
) -> subprocess.CompletedProcess[str]:
    # A user's shell: no checkout on the path, no planguard settings, no API keys, no telemetry endpoint.
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "VIRTUAL_ENV")
        and not (k.endswith("_API_KEY") or k.startswith(("OTEL_", "PLANGUARD_", "LANGSMITH_", "LANGCHAIN_")))
    }
    env["NO_COLOR"] = "1"
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def _metadata(wheel: Path) -> dict[str, list[str]]:
    with zipfile.ZipFile(wheel) as z:
        name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        msg = Parser().parsestr(z.read(name).decode())
    return {key: msg.get_all(key) or [] for key in ("Name", "Version", "Requires-Dist", "Provides-Extra")}


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheels")
    sources = [str(REPO), *map(str, INTEGRATIONS)]
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), *sources])
    return out


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    venv = tmp_path_factory.mktemp("venv")
    _run([sys.executable, "-m", "venv", str(venv)])
    return venv / "bin"


def test_every_wheel_requires_the_core_by_name_and_version(wheels: Path) -> None:
    built = sorted(wheels.glob("*.whl"))
    meta = {m["Name"][0]: m for m in map(_metadata, built)}
    assert set(meta) == {
        "planguard-agents",
        "planguard-agents-claude-code",
        "planguard-agents-langchain",
        "planguard-agents-mini-swe-agent",
        "planguard-agents-openai-agents",
        "planguard-agents-proxy",
    }
    core_version = meta["planguard-agents"]["Version"][0]
    for name, m in meta.items():
        requires = m["Requires-Dist"]
        assert not any("@" in r for r in requires), (name, requires)  # no direct (file://) references
        if name != "planguard-agents":
            assert m["Version"] == [core_version]
            assert any(r.replace(" ", "").startswith("planguard-agents>=") for r in requires), (
                name,
                requires,
            )
    # Every integration is also an extra of the core, so one install command names it.
    extras = set(meta["planguard-agents"]["Provides-Extra"])
    assert {"langchain", "proxy", "claude-code", "openai-agents", "mini-swe-agent"} <= extras
    # The core does not require what it never imports.
    core = [r.split(";")[0] for r in meta["planguard-agents"]["Requires-Dist"] if "extra ==" not in r]
    assert not any(r.startswith(("langgraph", "langchain")) for r in core), core


def test_pip_install_langchain_extra_then_planguard_demo(
    wheels: Path, fresh_venv: Path, tmp_path: Path
) -> None:
    _run([str(fresh_venv / "python"), "-m", "pip", "install", "-q", "--find-links", str(wheels),
          "planguard-agents[langchain]"])  # fmt: skip
    version = _run([str(fresh_venv / "planguard"), "--version"], cwd=tmp_path)
    assert version.stdout.strip() == f"planguard {__version__}"
    store = tmp_path / "sessions"
    demo = _run([str(fresh_venv / "planguard"), "demo", "--no-color", "--store", str(store)], cwd=tmp_path)
    assert "compliance PC 0.77" in demo.stdout and "tests pass" in demo.stdout  # as in test_langchain_demo
    assert len(list(store.glob("*.jsonl"))) == 1
    # It ran the installed copy, not this checkout.
    where = _run([str(fresh_venv / "python"), "-c", "import planguard, planguard_langchain.demo as d; "
                  "print(planguard.__file__); print(d.DEFAULT_CONFIG)"], cwd=tmp_path)  # fmt: skip
    assert str(REPO) not in where.stdout and "site-packages" in where.stdout


def test_all_wheels_install_together_from_one_directory(
    wheels: Path, fresh_venv: Path, tmp_path: Path
) -> None:
    _run([str(fresh_venv / "python"), "-m", "pip", "install", "-q", *map(str, sorted(wheels.glob("*.whl")))])
    _run([str(fresh_venv / "python"), "-m", "pip", "check"])
    imports = "import planguard_langchain, planguard_proxy, planguard_openai_agents, planguard_mini_swe_agent"
    _run([str(fresh_venv / "python"), "-c", imports + ", planguard_claude_code"], cwd=tmp_path)
    _run([str(fresh_venv / "planguard"), "proxy", "--help"], cwd=tmp_path)
