"""One tool vocabulary: the live phase rules read each call through the canonical-action mapping rules.

The user's ``tools.rules`` (``MappingRule``: ``tool``, ``kind``/``type``, ``target``, …) decide
both what a tool's call is as an action and what its phase is; the built-in rules map common tool names
of other frameworks without any config.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from quiet_guard import quiet_config

from planguard import Guard
from planguard.actions import classify_action
from planguard.actions.types import ActionType
from planguard.events import ToolEvent
from planguard.phases import get_rules
from planguard.phases.base import GENERAL, NAVIGATE, PATCH, VALIDATE_REGRESSION

SANDBOX_RULES = {"rules": [{"tool": "sandbox_exec", "kind": "shell", "target": ["script"]}]}
SANDBOX_CALL = {"script": "sed -i 's/a/b/' src/app.py"}


@pytest.mark.parametrize("rules", ["live", "v351278e", "v8ec988e"])
def test_a_user_mapping_rule_decides_the_action_and_the_phase(rules: str) -> None:
    guard = Guard(quiet_config(rules=rules, tools=SANDBOX_RULES))
    event = ToolEvent(tool="sandbox_exec", arguments=SANDBOX_CALL, call_id="c1")
    assert not guard.before_tool("s", event).blocks
    step = guard.after_tool("s", ToolEvent(tool="sandbox_exec", call_id="c1", result="", exit_code=0))
    assert step is not None
    assert step.action.type is ActionType.FILE_WRITE and step.action.target == "src/app.py"
    assert step.classification.letters == "P"
    guard.shutdown()


@pytest.mark.parametrize("rules", ["live", "v351278e"])
def test_replay_with_the_config_reads_the_user_rule_too(tmp_path: Path, rules: str) -> None:
    config = tmp_path / "planguard.yaml"
    config.write_text(
        f"rules: {rules}\ntelemetry: {{enabled: false}}\nstore: {{enabled: false}}\n"
        "tools:\n  rules: [{tool: sandbox_exec, kind: shell, target: [script]}]\n"
    )
    run = tmp_path / "run.jsonl"
    calls = [("sandbox_exec", SANDBOX_CALL), ("sandbox_exec", {"script": "cat src/app.py"})]
    run.write_text(
        "".join(
            json.dumps({"session": "s", "tool": t, "arguments": a, "result": "", "is_error": False}) + "\n"
            for t, a in calls
        )
    )
    out = subprocess.run(
        [sys.executable, "-m", "planguard", "replay", str(run), "--config", str(config), "--format", "jsonl"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    (record,) = [json.loads(line) for line in out.splitlines()]
    assert record["letters"] == "PN"
    assert [(a["type"], a["target"]) for a in record["actions"]] == [
        ("FILE_WRITE", "src/app.py"),
        ("FILE_READ", "src/app.py"),
    ]


@pytest.mark.parametrize("version", ["live", "v351278e"])
def test_without_a_rule_an_unknown_tool_has_no_action_kind_and_no_phase(version: str) -> None:
    event = ToolEvent(tool="sbx", arguments={"payload": "sed -i 's/a/b/' src/app.py"})
    rules = get_rules(version)
    assert "P" not in rules.classify(event, rules.new_state()).letters
    sbx_rules = {"rules": [{"tool": "sbx", "kind": "shell", "target": ["payload"]}]}
    guard = Guard(quiet_config(rules=version, tools=sbx_rules))
    step = guard.session("s").observe(event)
    assert step.action.type is ActionType.FILE_WRITE and step.classification.letters == "P"
    guard.shutdown()


def test_a_user_rule_for_a_test_tool_is_validation_after_a_patch() -> None:
    cfg = quiet_config(tools={"rules": [{"tool": "ci_run", "type": "COMMAND", "validation": True}]})
    guard = Guard(cfg)
    session = guard.session("s")
    session.observe(ToolEvent(tool="write_file", arguments={"path": "src/app.py", "content": "x"}))
    step = session.observe(ToolEvent(tool="ci_run", arguments={}))
    assert step.classification.letters == "v" and step.action.is_validation
    guard.shutdown()


@pytest.mark.parametrize(
    ("name", "arguments", "action_type", "letters"),
    [
        ("read_file", {"path": "src/app.py"}, ActionType.FILE_READ, "N"),
        ("view_file", {"file_path": "src/app.py"}, ActionType.FILE_READ, "N"),
        ("write_file", {"path": "src/app.py", "content": "x"}, ActionType.FILE_WRITE, "P"),
        ("create_file", {"path": "tests/test_new.py", "content": "x"}, ActionType.FILE_WRITE, "R"),
        ("edit_file", {"path": "src/app.py", "content": "x"}, ActionType.FILE_WRITE, "P"),
        ("search", {"query": "def f"}, ActionType.SEARCH, "N"),
        ("grep", {"pattern": "def f", "path": "src"}, ActionType.SEARCH, "N"),
        ("search_code", {"query": "def f"}, ActionType.SEARCH, "N"),
        ("find_files", {"pattern": "*.py"}, ActionType.SEARCH, "N"),
        ("list_dir", {"path": "src"}, ActionType.NAVIGATE, "N"),
        ("run_tests", {}, ActionType.COMMAND, "r"),
        ("run_command", {"command": "pytest -q"}, ActionType.COMMAND, "r"),
        ("execute", {"command": "cat src/app.py"}, ActionType.FILE_READ, "N"),
        ("shell", {"command": "go test ./..."}, ActionType.COMMAND, "r"),
        ("python", {"code": "import app; print(app.f())"}, ActionType.COMMAND, "R"),
    ],
)
def test_common_tool_names_are_mapped_without_config(
    name: str, arguments: dict[str, Any], action_type: ActionType, letters: str
) -> None:
    event = ToolEvent(tool=name, arguments=arguments)
    assert classify_action(event).type is action_type
    rules = get_rules()
    assert rules.classify(event, rules.new_state()).letters == letters


def test_swe_agent_and_opencode_edit_are_told_apart_by_argument_shape() -> None:
    rules = get_rules()
    opencode = ToolEvent(
        tool="edit", arguments={"filePath": "/p/src/app.ts", "oldString": "a", "newString": "b"}
    )
    action = classify_action(opencode)
    assert action.type is ActionType.FILE_WRITE and action.target == "/p/src/app.ts"
    assert rules.classify(opencode, rules.new_state()).letters == "P"
    swe = ToolEvent(tool="edit", arguments={"search": "a", "replace": "b"}, action="edit 'a' 'b'")
    assert classify_action(swe).type is ActionType.FILE_WRITE  # the open file's edit, as before


@pytest.mark.parametrize(
    ("name", "action_type"),
    [
        ("readFile", ActionType.FILE_READ),
        ("file.read", ActionType.FILE_READ),
        ("READ-FILE", ActionType.FILE_READ),
        ("sandbox_exec", ActionType.FILE_WRITE),  # ``exec``: a shell; its script is the sed below
        ("frobnicate", ActionType.COMMAND),  # holds ``cat``, but not as a word
        ("thread_dump", ActionType.COMMAND),  # holds ``read``, but not as a word
    ],
)
def test_name_heuristics_match_whole_words_of_the_name(name: str, action_type: ActionType) -> None:
    event = ToolEvent(tool=name, arguments={"path": "src/app.py", "script": "sed -i 's/a/b/' src/app.py"})
    assert classify_action(event).type is action_type
    for version in ("live", "v351278e"):
        rules = get_rules(version)
        letters = rules.classify(event, rules.new_state()).letters
        assert ("N" in letters) == (action_type is ActionType.FILE_READ)


def test_a_shell_line_is_lexed_once_for_its_action_and_its_phase(monkeypatch: pytest.MonkeyPatch) -> None:
    """The live rules read the words the action classifier lexed the line into (ToolCall.segments)."""
    import planguard.actions.classify as action_shell
    import planguard.phases.live as live

    lexed: list[str] = []

    def counting(line: str) -> Any:
        lexed.append(line)
        return real(line)

    real = action_shell.tokenize
    monkeypatch.setattr(action_shell, "tokenize", counting)
    monkeypatch.setattr(live, "tokenize", counting)
    guard = Guard(quiet_config())
    # Lines no other test uses: the default classifier's memo is shared by the process.
    lines = [
        "cd /testbed && grep -rn lexed_once src | head",
        "sed -i 's/lexed/once/' src/app.py",
        "python -m pytest -x -k lexed_once",
    ]
    roles = []
    for k, line in enumerate(lines):
        event = ToolEvent.shell(line, call_id=f"c{k}")
        assert not guard.before_tool("s", event).blocks
        step = guard.after_tool("s", ToolEvent(tool="bash", call_id=f"c{k}", result="", exit_code=0))
        assert step is not None and step.classification is not None
        roles.append([c.role for c in step.classification.commands])
    assert lexed == lines
    assert roles == [[GENERAL, NAVIGATE], [PATCH], [VALIDATE_REGRESSION]]
