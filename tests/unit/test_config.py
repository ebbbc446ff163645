"""Config files: formats, error messages (file, line, key path, expected value), env overrides, CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from planguard.cli import main
from planguard.config import ENV_OVERRIDES, Config, ConfigError, config_schema, default_config, load_config

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "planguard.yaml"


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def error_of(path: Path, env: dict[str, str] | None = None) -> str:
    with pytest.raises(ConfigError) as info:
        load_config(path, env=env or {})
    return str(info.value)


# --------------------------------------------------------------------------- valid files


def test_defaults_are_a_valid_config():
    c = Config()
    assert c.followed_plan.name == "plan" and c.rules == "live"
    assert c.policies.reminder.every_model_calls == 5
    assert c.sessions.max_sessions == 10_000


def test_example_file_is_valid_and_sets_up_what_it_documents():
    c = load_config(EXAMPLE, env={})
    assert c.policies.reminder.every_model_calls == 5 and c.policies.reminder.delivery == "ephemeral"
    assert c.policies.responses.findings["search_loop"].ladder.nudge == 1
    gate = c.policies.gates[0]
    assert gate.tool == ["submit", "finish"]
    assert gate.until.phase_after is not None and (
        gate.until.phase_after.phase,
        gate.until.phase_after.after,
    ) == (
        "V",
        "P",
    )


def test_yaml_toml_and_json_give_the_same_config(tmp_path):
    data = {
        "plan": "no_reproduce",
        "policies": {
            "reminder": {"every_model_calls": 7, "delivery": "persisted"},
            "gates": [{"name": "v", "tool": "submit", "until": {"min_steps": 2}}],
        },
        "sessions": {"max_sessions": 5},
    }
    y = load_config(write(tmp_path, "c.yaml", yaml.safe_dump(data)), env={})
    j = load_config(write(tmp_path, "c.json", json.dumps(data)), env={})
    t = load_config(
        write(
            tmp_path,
            "c.toml",
            """
plan = "no_reproduce"
[policies.reminder]
every_model_calls = 7
delivery = "persisted"
[[policies.gates]]
name = "v"
tool = "submit"
until = { min_steps = 2 }
[sessions]
max_sessions = 5
""",
        ),
        env={},
    )
    assert y == j == t
    assert y.followed_plan.name == "no_reproduce"


def test_empty_file_is_the_defaults(tmp_path):
    assert load_config(write(tmp_path, "c.yaml", "# nothing\n"), env={}) == Config()


def test_inline_plan_and_plan_file_relative_to_the_config(tmp_path):
    c = load_config(
        write(
            tmp_path,
            "c.yaml",
            """
plan:
  name: mine
  phases:
    - {id: L_navigate, symbol: N, name: Look}
    - {id: P, symbol: P, name: Fix}
""",
        ),
        env={},
    )
    assert [p.name for p in c.followed_plan.phases] == ["Look", "Fix"]
    sub = tmp_path / "conf"
    sub.mkdir()
    write(sub, "myplan.yaml", "name: filed\nphases: [{id: P, symbol: P, name: Fix}]\n")
    c = load_config(write(sub, "c.yaml", "plan: myplan.yaml\nscore_plans: [plan, no_validation]\n"), env={})
    assert [p.name for p in c.plans] == ["filed", "plan", "no_validation"]


# --------------------------------------------------------------------------- errors


def test_unknown_key_names_file_line_path_and_the_expected_keys(tmp_path):
    p = write(tmp_path, "c.yaml", "policies:\n  reminder:\n    enabled: true\n    every_model_call: 5\n")
    assert error_of(p) == (
        f"{p}:4: policies.reminder.every_model_call: unknown key 'every_model_call' (did you mean "
        "'every_model_calls'?); expected one of: enabled, every_model_calls, every_tool_calls, delivery, "
        "max_per_session, min_gap_model_calls, min_gap_s, template"
    )


def test_wrong_values_name_the_expected_value(tmp_path):
    p = write(
        tmp_path,
        "c.yaml",
        """
policies:
  reminder:
    every_model_calls: 0
    delivery: sometimes
sessions:
  max_sessions: lots
""",
    )
    assert error_of(p).splitlines() == [
        f"{p}:4: policies.reminder.every_model_calls: expected greater than or equal to 1 (got 0)",
        f"{p}:5: policies.reminder.delivery: expected 'ephemeral' or 'persisted' (got 'sometimes')",
        f"{p}:7: sessions.max_sessions: expected a valid integer, unable to parse string as an integer "
        "(got 'lots')",
    ]


def test_errors_deep_in_lists_and_unions(tmp_path):
    p = write(
        tmp_path,
        "c.yaml",
        """
plan:
  phases:
    - {id: P, name: Fix}
policies:
  gates:
    - name: v
      tool: submit
      until:
        phase_after: {phase: V}
""",
    )
    assert error_of(p).splitlines() == [
        f"{p}:4: plan.phases.0.symbol: required key is missing",
        f"{p}:10: policies.gates.0.until.phase_after.after: required key is missing",
    ]


def test_unknown_plan_and_bad_rules(tmp_path):
    p = write(tmp_path, "c.yaml", "rules: v9\nplan: plan_with_typo\n")
    lines = error_of(p).splitlines()
    assert lines[0].startswith(f"{p}:2: plan: unknown plan 'plan_with_typo': expected a preset (")
    assert lines[1] == f"{p}:1: rules: expected 'live', 'v351278e', 'v8ec988e' or 'corrected' (got 'v9')"


def test_model_level_errors_name_their_key(tmp_path):
    p = write(
        tmp_path,
        "c.yaml",
        """
policies:
  responses:
    findings:
      search_loop:
        ladder: {nudge: 3, block: 2}
  reminder:
    template: "PLAN REMINDER: {plans}"
""",
    )
    lines = error_of(p).splitlines()
    assert lines == [
        f"{p}:8: policies.reminder.template: unknown template field {{plans}}; expected one of: {{plan}}, "
        "{plan_name}, {order}, {phase}, {missing}, {next}, {done}, {status}, {count}, {model_calls}, {steps}",
        f"{p}:6: policies.responses.findings.search_loop.ladder: thresholds must not decrease along "
        "log → warn → nudge → block → stop (got block=2 after nudge=3)",
    ]


def test_syntax_errors_name_the_line(tmp_path):
    p = write(tmp_path, "c.yaml", "policies:\n  reminder: {every_model_calls: 5\n")
    assert error_of(p).startswith(f"{p}:3: not valid YAML: ")
    p = write(tmp_path, "c.json", '{"plan": "plan",\n "rules": }')
    assert error_of(p).startswith(f"{p}:2: not valid JSON: ")
    p = write(tmp_path, "c.toml", "plan = \n")
    assert error_of(p).startswith(f"{p}: not valid TOML: ")
    p = write(tmp_path, "c.yaml", "- just\n- a list\n")
    assert error_of(p) == f"{p}:1: expected a mapping of sections at the top, got list"
    assert error_of(tmp_path / "missing.yaml").startswith(
        f"{tmp_path / 'missing.yaml'}: cannot read the file"
    )


def test_toml_errors_find_the_line(tmp_path):
    p = write(tmp_path, "c.toml", "[policies.reminder]\nenabled = true\nevery_model_calls = -1\n")
    assert error_of(p).startswith(f"{p}:3: policies.reminder.every_model_calls: expected greater than")


def test_json_errors_find_the_line(tmp_path):
    p = write(tmp_path, "c.json", '{\n  "sessions": {\n    "idle_timeout_s": -5\n  }\n}\n')
    assert error_of(p) == f"{p}:3: sessions.idle_timeout_s: expected greater than 0 (got -5)"


# --------------------------------------------------------------------------- environment


def test_env_overrides_apply_on_top_of_the_file(tmp_path):
    p = write(
        tmp_path, "c.yaml", "policies: {reminder: {every_model_calls: 5}}\ntelemetry: {enabled: true}\n"
    )
    c = load_config(
        p,
        env={
            "PLANGUARD_REMINDER_EVERY": "8",
            "PLANGUARD_TELEMETRY": "0",
            "PLANGUARD_STORE_DIR": "/tmp/pg-store",
            "PLANGUARD_PLAN": "no_validation",
            "PLANGUARD_WEBHOOK_URL": "http://127.0.0.1:9/x",
            "PLANGUARD_FAIL_CLOSED_GATES": "true",
            "PLANGUARD_MAX_SESSIONS": "12",
            "PLANGUARD_IDLE_TIMEOUT_S": "none",
        },
    )
    assert c.policies.reminder.every_model_calls == 8
    assert c.telemetry.enabled is False
    assert c.store.path == "/tmp/pg-store"
    assert c.followed_plan.name == "no_validation"
    assert c.webhook.url == "http://127.0.0.1:9/x"
    assert c.fail_closed_gates is True and c.sessions.max_sessions == 12 and c.sessions.idle_timeout_s is None
    assert load_config(p, env={"PLANGUARD_REMINDER_EVERY": "0"}).policies.reminder.every_model_calls is None
    assert load_config(p, env={"PLANGUARD_ENABLED": "off"}).enabled is False


def test_moved_keys_are_still_read_with_a_warning_naming_the_new_key(tmp_path):
    p = write(
        tmp_path,
        "old.yaml",
        "detectors:\n  actions: {rules: [{tool: sbx, kind: shell, target: [script]}]}\n"
        "  search_loop: {threshold: 3}\n"
        "policies:\n  notify: {url: 'http://127.0.0.1:9/old', timeout_s: 5}\n",
    )
    with pytest.warns(DeprecationWarning) as caught:
        c = load_config(p, env={"PLANGUARD_WEBHOOK_URL": "http://127.0.0.1:9/new"})
    assert sorted(str(w.message) for w in caught) == [
        "detectors.actions is deprecated: write it as the top-level tools: section",
        "policies.notify is deprecated: write it as the top-level webhook: section",
    ]
    assert [r.tool for r in c.tools.rules] == ["sbx"] and c.detectors.search_loop.threshold == 3
    # What the new key sets (here from the environment) wins over the old place, key by key.
    assert (c.webhook.url, c.webhook.timeout_s) == ("http://127.0.0.1:9/new", 5)


def test_switching_detectors_off_keeps_the_canonical_actions():
    from planguard.events import ToolEvent
    from planguard.guard import Guard

    config = {"detectors": {"enabled": False}, "telemetry": {"enabled": False}, "store": {"enabled": False}}
    with Guard(Config.model_validate(config)) as guard:
        assert guard.pipeline.detectors == ()
        step = guard.session("s").observe(ToolEvent("write_file", {"path": "src/app.py", "content": "x"}))
        assert step.action is not None and step.action.type == "FILE_WRITE"


def test_bad_env_value_names_the_variable(tmp_path):
    p = write(tmp_path, "c.yaml", "")
    assert error_of(p, {"PLANGUARD_REMINDER_EVERY": "often"}) == (
        f"{p}: policies.reminder.every_model_calls: expected a valid integer, unable to parse string as an "
        "integer (got 'often') (from environment variable PLANGUARD_REMINDER_EVERY)"
    )


def test_default_config_reads_planguard_config(tmp_path):
    p = write(tmp_path, "c.yaml", "plan: no_reproduce\n")
    assert default_config(env={"PLANGUARD_CONFIG": str(p)}).followed_plan.name == "no_reproduce"
    assert default_config(env={}) == Config()
    assert default_config(env={"PLANGUARD_RULES": "v8ec988e"}).rules == "v8ec988e"


def test_every_env_override_targets_a_real_key():
    schema = config_schema()
    for var, (path, _, _) in ENV_OVERRIDES.items():
        node = schema
        for key in path:
            props = node.get("properties")
            if props is None:
                ref = next(x["$ref"] for x in node.get("anyOf", [node]) if "$ref" in x)
                node = schema["$defs"][ref.rsplit("/", 1)[1]]
                props = node["properties"]
            assert key in props, var
            node = props[key]
            if "$ref" in node:
                node = schema["$defs"][node["$ref"].rsplit("/", 1)[1]]


# --------------------------------------------------------------------------- schema and CLI


def test_schema_is_json_schema_of_the_config():
    schema = config_schema()
    assert schema["$schema"].startswith("https://json-schema.org/")
    assert {
        "plan",
        "rules",
        "policies",
        "detectors",
        "telemetry",
        "store",
        "sessions",
        "fail_closed_gates",
    } <= set(schema["properties"])
    assert schema["additionalProperties"] is False
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(yaml.safe_load(EXAMPLE.read_text()), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"policies": {"reminder": {"every_model_call": 5}}}, schema)


def test_cli_schema(capsys):
    assert main(["schema"]) == 0
    assert json.loads(capsys.readouterr().out) == config_schema()


def test_cli_check_config_valid_prints_a_summary(capsys, monkeypatch):
    monkeypatch.delenv("PLANGUARD_REMINDER_EVERY", raising=False)
    assert main(["check-config", str(EXAMPLE)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"{EXAMPLE}: valid"
    assert "plan: plan: Navigation → Reproduction → Patch → Validation" in out
    assert any(
        line.startswith("reminder: every 5 model calls, ephemeral, at most 12 per session") for line in out
    )
    assert any(line.startswith("responses: search_loop: log@1, nudge@1, block@3") for line in out)
    assert "gate validate-before-submit: deny submit, finish until V after P; max denials 3; fail-open" in out


def test_cli_check_config_invalid_exits_1_with_the_error_line(tmp_path, capsys):
    p = write(tmp_path, "bad.yaml", "policies:\n  reminder:\n    delivery: later\n")
    assert main(["check-config", str(p), "--no-env"]) == 1
    err = capsys.readouterr().err
    assert (
        err
        == f"error: {p}:3: policies.reminder.delivery: expected 'ephemeral' or 'persisted' (got 'later')\n"
    )


def test_cli_check_config_as_a_process(tmp_path):
    p = write(tmp_path, "bad.toml", "[sessions]\nmax_sessions = 0\n")
    r = subprocess.run(
        [sys.executable, "-m", "planguard", "check-config", str(p)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    assert r.returncode == 1
    assert r.stderr.startswith(f"error: {p}:2: sessions.max_sessions: expected greater than or equal to 1")
