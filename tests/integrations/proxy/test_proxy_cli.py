"""``planguard proxy``: the CLI command, its config section, and the install hint."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from planguard_proxy.config import load_proxy_config

from planguard.cli import main


def test_help_does_not_import_the_server_stack() -> None:
    code = (
        "import sys; from planguard.cli import build_parser; build_parser(); "
        "heavy = ('starlette', 'uvicorn', 'planguard_proxy', 'redis'); "
        "print(any(m.split('.')[0] in heavy for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    r = subprocess.run([sys.executable, "-m", "planguard", "proxy", "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "--upstream" in r.stdout and "--listen" in r.stdout


def test_missing_package_prints_install_hint(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "planguard_proxy", None)
    monkeypatch.setitem(sys.modules, "planguard_proxy.config", None)
    assert main(["proxy"]) == 2
    err = capsys.readouterr().err
    assert "pip install 'planguard-agents[proxy]'" in err and "bootstrap.sh" in err


def test_proxy_section_is_read_and_validated(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "planguard.yaml"
    f.write_text(
        "plan: no_reproduce\ntelemetry: {enabled: false}\nproxy:\n  listen: 127.0.0.1:9999\n"
        "  gate: annotate\n  upstreams: {anthropic: 'http://127.0.0.1:1'}\n  text_actions: {enabled: true}\n"
    )
    config, proxy = load_proxy_config(f)
    assert config.followed_plan.name == "no_reproduce" and not config.telemetry.enabled
    assert (proxy.host, proxy.port, proxy.gate, proxy.text_actions.enabled) == (
        "127.0.0.1",
        9999,
        "annotate",
        True,
    )
    assert proxy.upstream_for("anthropic") == "http://127.0.0.1:1"
    assert proxy.upstream_for("openai") == "https://api.openai.com"
    f.write_text("proxy:\n  gate: block\n")
    assert main(["proxy", "--config", str(f)]) == 2
    err = capsys.readouterr().err
    assert str(f) in err and "proxy.gate" in err
    f.write_text("proxy:\n  listen: nowhere\n")
    assert main(["proxy", "--config", str(f)]) == 2
    assert "expected HOST:PORT" in capsys.readouterr().err
    f.write_text("plan: no_such_preset\nproxy: {}\n")
    assert main(["proxy", "--config", str(f)]) == 2
    assert "plan" in capsys.readouterr().err


def test_defaults_bind_loopback() -> None:
    _, proxy = load_proxy_config(None)
    assert proxy.host == "127.0.0.1" and proxy.store.backend == "memory" and proxy.gate == "rewrite"
