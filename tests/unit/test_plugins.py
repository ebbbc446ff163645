"""Extension points: a detector, policy and sink named in config (import path, built-in name, entry point)
or passed to ``Guard(...)`` take part in a real session; a bad name is a config error naming the key."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from plugin_stages import Collecting, DenyTool, ToolNamed

import planguard
from planguard import Guard, ToolEvent
from planguard.config import Config, ConfigError, load_config
from planguard.detectors.structural import SearchLoop
from planguard.plugins import PluginSpec, load_plugin

OFF = "telemetry: {enabled: false}\nstore: {enabled: false}\n"


def _write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "planguard.yaml"
    path.write_text(textwrap.dedent(body) + OFF, encoding="utf-8")
    return path


def _run(guard: Guard, sid: str = "s1") -> tuple[list[bool], planguard.SessionSummary | None]:
    blocked = []
    for i, tool in enumerate(["ls_files", "deploy", "ls_files", "deploy"]):
        event = ToolEvent(tool, {"target": "prod"}, call_id=f"c{i}")
        decision = guard.before_tool(sid, event)
        blocked.append(decision.blocks)
        if not decision.blocks:
            guard.after_tool(sid, ToolEvent(tool, call_id=f"c{i}", result="ok"))
    return blocked, guard.end(sid)


def _entry_points(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A real installed distribution (a dist-info folder on sys.path) that registers one stage per group."""
    dist = tmp_path / "site" / "planguard_test_plugins-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: planguard-test-plugins\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[planguard.detectors]\ntool_named_ep = plugin_stages:ToolNamed\n\n"
        "[planguard.policies]\ndeny_tool_ep = plugin_stages:DenyTool\n\n"
        "[planguard.sinks]\ncollecting_ep = plugin_stages:Collecting\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path / "site"))


def _configured_sink(guard: Guard) -> Collecting:
    found = [s for s in guard.pipeline.sinks if isinstance(s, Collecting)]
    assert len(found) == 1
    return found[0]


def test_detector_policy_and_sink_by_import_path_through_guard_from_file(tmp_path):
    path = _write(
        tmp_path,
        """
        detectors:
          custom: [{class: "plugin_stages:ToolNamed", options: {tool: deploy}}]
        policies:
          custom: [{class: "plugin_stages:DenyTool", options: {tool: rm_everything}}]
        sinks:
          custom: [{class: "plugin_stages:Collecting", options: {label: from-config}}]
        """,
    )
    with Guard.from_file(path) as guard:
        sink = _configured_sink(guard)
        blocked, summary = _run(guard)
    assert blocked == [False, False, False, False]
    assert summary is not None
    assert [f.detector for f in summary.findings].count("tool_named") == 2
    assert sink.label == "from-config"
    assert sink.events[0] == ("start", "s1") and sink.events[-1] == ("end", "s1")
    assert [e for e in sink.events if e[0] == "finding"] == [("finding", "tool_named")] * 2
    assert [e[1] for e in sink.events if e[0] == "tool"] == ["ls_files", "deploy", "ls_files", "deploy"]


def test_stages_registered_by_entry_point(tmp_path, monkeypatch):
    _entry_points(tmp_path, monkeypatch)
    path = _write(
        tmp_path,
        """
        detectors:
          custom: [{class: tool_named_ep}]
        policies:
          custom: [{class: deny_tool_ep}]
        sinks:
          custom: [{class: collecting_ep}]
        """,
    )
    with Guard.from_file(path) as guard:
        sink = _configured_sink(guard)
        blocked, summary = _run(guard)
    assert blocked == [False, True, False, True]  # the policy's default tool is deploy
    assert summary is not None
    # The denied calls never ran, so the detector saw none of them.
    assert "tool_named" not in [f.detector for f in summary.findings]
    assert ("decision", "deny") in sink.events


def test_builtin_detector_by_name_with_options():
    spec = PluginSpec.model_validate({"class": "search_loop", "options": {"threshold": 3}})
    detector = load_plugin("detectors", spec, "detectors.custom.0")
    assert isinstance(detector, SearchLoop)


def test_stages_passed_in_code_run_after_the_configured_ones():
    sink = Collecting("in-code")
    config = Config(telemetry={"enabled": False}, store={"enabled": False})
    with Guard(config, detectors=[ToolNamed()], policies=[DenyTool()], sinks=[sink]) as guard:
        assert guard.pipeline.sinks[-1] is sink
        assert isinstance(guard.pipeline.detectors[-1], ToolNamed)
        assert isinstance(guard.pipeline.policies[-1], DenyTool)
        blocked, _ = _run(guard)
    assert blocked == [False, True, False, True]


@pytest.mark.parametrize(
    ("section", "spec", "message"),
    [
        ("detectors", "no_such_detector", "detectors.custom.0.class: no built-in and no entry point"),
        ("sinks", "no_such_module:Thing", "sinks.custom.0.class: cannot import"),
        ("policies", "plugin_stages:ToolNamed", "policies.custom.0.class: expected a Policy subclass"),
    ],
)
def test_a_bad_name_is_an_error_naming_the_key(tmp_path, section, spec, message):
    """Detectors are built when the file loads (their names are finding kinds the config may respond to);
    policies and sinks when the guard is built."""
    path = _write(tmp_path, f'{section}:\n  custom: [{{class: "{spec}"}}]\n')
    with pytest.raises(ValueError, match=message.replace(".", r"\.")):
        Guard(load_config(path))


def test_bad_options_name_the_options_key():
    spec = PluginSpec.model_validate({"class": "plugin_stages:ToolNamed", "options": {"nope": 1}})
    with pytest.raises(ValueError, match=r"detectors\.custom\.0\.options: plugin_stages:ToolNamed"):
        load_plugin("detectors", spec, "detectors.custom.0")


def test_malformed_class_is_rejected_by_the_schema(tmp_path):
    path = _write(tmp_path, 'sinks:\n  custom: [{class: "not a name"}]\n')
    with pytest.raises(ConfigError, match=r"sinks\.custom\.0\.class"):
        load_config(path)


def test_public_face():
    # Equality, as httpx tests its face: a name added to or dropped from the face is a decision this test
    # records, not a side effect.
    assert planguard.__all__ == [
        "ALLOW", "PRESETS", "Action", "ActionType", "Config", "ConfigError", "Decision", "DecisionKind",
        "Detector", "Effect", "Finding", "Guard", "Pipeline", "Plan", "PlanPhase", "Policy", "Session",
        "SessionSummary", "Sink", "Step", "ToolEvent", "__version__", "default_config", "load_config",
    ]  # fmt: skip
    # Every lazily resolved name is exported, and only those (with the version).
    assert set(planguard.__all__) == set(planguard._EXPORTS) | {"__version__"}
    for name in planguard.__all__:
        assert getattr(planguard, name) is not None, name
    assert planguard.Detector.__module__ == "planguard.stages"


def test_check_config_resolves_custom_stages(tmp_path, capsys):
    from planguard.cli import main

    good = _write(tmp_path, 'detectors:\n  custom: [{class: "plugin_stages:ToolNamed"}]\n')
    assert main(["check-config", str(good), "--no-env"]) == 0
    assert "custom detector: plugin_stages:ToolNamed" in capsys.readouterr().out
    bad = _write(tmp_path, 'sinks:\n  custom: [{class: "plugin_stages:ToolNamed"}]\n')
    assert main(["check-config", str(bad), "--no-env"]) == 1
    err = capsys.readouterr().err
    assert "sinks.custom.0.class: expected a Sink subclass" in err and str(bad) in err
