"""A fail-closed gate stays closed for a hook payload cut anywhere (issue 31): a payload that cannot be read
is denied unless what is left of it names another event than the CLI's tool start, in every dialect."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("planguard_hooks")
from planguard_hooks.dialects import DIALECTS
from planguard_hooks.service import HookRunner, answer_text
from planguard_hooks.state import SessionStore

CONFIG = """\
plan: plan
telemetry: {enabled: false}
store: {enabled: false}
fail_closed_gates: true
policies:
  gates:
    - name: validate-before-submit
      tool: Bash
      arguments: {command: 'submit'}
      until: {phase_after: {phase: V, after: P, strict: true}}
"""
#: The tool-start and tool-end events of each dialect, as its CLI names them.
EVENTS = {
    "claude-code": ("PreToolUse", "PostToolUse"),
    "codex": ("PreToolUse", "PostToolUse"),
    "gemini": ("BeforeTool", "AfterTool"),
    "opencode": ("PreToolUse", "PostToolUse"),
}


def _payload(event: str) -> bytes:
    return json.dumps(
        {
            "session_id": "cut-1",
            "transcript_path": "/home/u/.claude/projects/x/cut-1.jsonl",
            "cwd": "/tmp/w",
            "hook_event_name": event,
            "tool_name": "Bash",
            "tool_input": {"command": "./submit.sh"},
            "tool_use_id": "toolu_01",
        }
    ).encode()


def _denied(answer: dict[str, object]) -> bool:
    specific = answer.get("hookSpecificOutput")
    return answer.get("decision") == "deny" or (
        isinstance(specific, dict) and specific.get("permissionDecision") == "deny"
    )


@pytest.mark.parametrize("name", sorted(EVENTS))
def test_a_cut_payload_is_denied_unless_it_names_another_event(name: str, tmp_path: Path) -> None:
    config = tmp_path / "pg.yaml"
    config.write_text(CONFIG)
    store = SessionStore(tmp_path / "state")
    runner = HookRunner(str(config), store)
    try:
        start, end = EVENTS[name]
        whole = _payload(start)
        assert _denied(answer_text(whole, store, lambda: runner, None, DIALECTS[name]))  # the gate itself
        for cut in range(1, len(whole) - 1):
            answer = answer_text(whole[:cut], store, lambda: runner, None, DIALECTS[name])
            assert _denied(answer), (name, whole[:cut])
        after = _payload(end)
        named = after.index(end.encode()) + len(end) + 1
        for cut in range(1, len(after) - 1):
            answer = answer_text(after[:cut], store, lambda: runner, None, DIALECTS[name])
            assert _denied(answer) == (cut < named), (name, after[:cut])
    finally:
        runner.close()
