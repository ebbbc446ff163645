"""``planguard check-config`` (and ``load_config``) on what one section's model cannot see alone: responses to
finding kinds no detector produces, gates waiting for phases the plan lacks, and the proxy's ``proxy:``
section in the same file."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from planguard.cli import main
from planguard.config import ConfigError, load_config
from planguard.detectors import FINDING_KINDS
from planguard.testing import ScriptedDetector

HAS_PROXY = importlib.util.find_spec("planguard_proxy") is not None


class CustomLoop(ScriptedDetector):
    """A user's own detector, listed under detectors.custom (its name is the finding kind)."""

    def __init__(self, tool: str = "search") -> None:
        super().__init__("my_loop", lambda step: step.event.tool == tool)


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "planguard.yaml"
    p.write_text(text, encoding="utf-8")
    return p


def _errors(path: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    assert main(["check-config", str(path), "--no-env"]) == 1
    return capsys.readouterr().err.splitlines()


def test_an_unknown_finding_kind_is_rejected_naming_the_key_and_the_known_kinds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    p = _write(
        tmp_path,
        "policies:\n  responses:\n    findings:\n      search_loop: {ladder: {nudge: 1}}\n"
        "      serch_loop: {ladder: {block: 2}}\n",
    )
    (line,) = _errors(p, capsys)
    assert line.startswith(f"error: {p}:5: policies.responses.findings.serch_loop: unknown finding kind")
    assert all(kind in line for kind in FINDING_KINDS)
    assert "detectors.custom" in line


def test_a_custom_detectors_kind_is_accepted_and_its_detector_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    p = _write(
        tmp_path,
        "detectors:\n  custom:\n    - {class: 'test_check_config_cross:CustomLoop', options: {tool: grep}}\n"
        "policies:\n  responses:\n    findings:\n      my_loop: {ladder: {nudge: 1}}\n",
    )
    assert main(["check-config", str(p), "--no-env"]) == 0
    assert "responses: my_loop: " in capsys.readouterr().out

    from planguard.events import ToolEvent
    from planguard.guard import Guard

    quiet = _write(tmp_path, p.read_text() + "telemetry: {enabled: false}\nstore: {enabled: false}\n")
    guard = Guard(load_config(quiet, env={}))
    try:
        guard.before_tool("s", ToolEvent("grep", {"q": "x"}, call_id="1"))
        step = guard.after_tool("s", ToolEvent("grep", call_id="1", result="x"))
        assert step is not None and [f.detector for f in step.findings] == ["my_loop"]
    finally:
        guard.shutdown()


def test_a_custom_detector_that_cannot_be_imported_is_named_by_its_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    p = _write(tmp_path, "detectors:\n  custom:\n    - {class: 'no_such_module:Detector'}\n")
    (line,) = _errors(p, capsys)
    assert f"{p}:3: detectors.custom.0.class: cannot import 'no_such_module:Detector'" in line


def test_a_gate_naming_a_phase_the_plan_lacks_is_rejected(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    p = _write(
        tmp_path,
        "plan: no_reproduce\n"
        "policies:\n  gates:\n    - name: reproduce-first\n      tool: [edit]\n"
        "      until:\n        phases_seen: [L_reproduce]\n",
    )
    (line,) = _errors(p, capsys)
    assert f"{p}:7: policies.gates.0.until.phases_seen.0: 'L_reproduce' names no phase of the plan" in line
    assert "'no_reproduce'" in line and "L_navigate" in line
    # The same gate under a plan that has the phase, and role prefixes at any depth, are fine.
    ok = _write(
        tmp_path,
        "plan: plan\npolicies:\n  gates:\n    - name: g\n      tool: [submit]\n      until:\n"
        "        phases_seen: [L_reproduce_newly_generated_test]\n"
        "        phase_after: {phase: V, after: P}\n",
    )
    assert main(["check-config", str(ok), "--no-env"]) == 0


def test_without_a_plan_a_gate_is_checked_against_the_classifier_roles(tmp_path: Path) -> None:
    p = _write(
        tmp_path,
        "plan: no_plan\npolicies:\n  gates:\n    - name: g\n      tool: submit\n      until:\n"
        "        phase_after: {phase: Validate, after: P}\n",
    )
    with pytest.raises(ConfigError) as exc:
        load_config(p, env={})
    assert "policies.gates.0.until.phase_after.phase: 'Validate' names no phase of the classifier" in str(
        exc.value
    )


def test_the_example_config_passes_the_cross_checks() -> None:
    example = Path(__file__).resolve().parents[3] / "examples" / "planguard.yaml"
    assert load_config(example, env={}).policies.gates


PROXY_SECTION = """plan: plan
policies: {reminder: {every_model_calls: 5}}
proxy:
  listen: 127.0.0.1:8787
  upstream: https://api.openai.com
  upstreams: {anthropic: https://api.anthropic.com}
  gate: rewrite
  text_actions: {enabled: false}
  timeouts: {connect: 10, read: 600, write: 60, pool: 10}
  store: {backend: memory}
"""


@pytest.mark.skipif(not HAS_PROXY, reason="planguard-agents-proxy is not installed")
def test_the_proxy_section_of_the_proxy_readme_is_accepted_and_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    p = _write(tmp_path, PROXY_SECTION)
    assert main(["check-config", str(p), "--no-env"]) == 0
    assert "proxy: listen 127.0.0.1:8787, gate rewrite, store memory" in capsys.readouterr().out
    bad = _write(tmp_path, PROXY_SECTION.replace("gate: rewrite", "gate: rewrit"))
    (line,) = _errors(bad, capsys)
    assert line.startswith(f"error: {bad}:7: proxy.gate: expected 'rewrite', 'annotate' or 'observe'")


def test_without_the_proxy_installed_its_section_is_reported_not_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "planguard_proxy", None)
    monkeypatch.setitem(sys.modules, "planguard_proxy.config", None)
    p = _write(tmp_path, PROXY_SECTION)
    assert main(["check-config", str(p), "--no-env"]) == 0
    assert "proxy: present, not checked" in capsys.readouterr().out
