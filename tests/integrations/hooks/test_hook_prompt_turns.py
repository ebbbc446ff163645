"""The CLIs' prompt hooks hand the user's turn to the session: Claude Code's and Codex's ``UserPromptSubmit``
(``prompt``; Codex: ``codex-rs/hooks/schema/generated/user-prompt-submit.command.input.schema.json``) and
Gemini CLI's ``BeforeAgent`` (``prompt``; ``docs/hooks/reference.md``). A plan whose confirm phase is the
user's yes in chat gates a consequential call on it: the call goes through after the yes and is denied
without it. Each call is answered by the hook service as the CLI runs it (state on disk between calls);
the session's files keep the turn's match, never its text, and a session rebuilt from its journal has it."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("planguard_hooks")
from planguard_hooks import service
from planguard_hooks.dialects import dialect
from test_hook_dialects import _gemini

CONFIG = """\
telemetry: {enabled: false}
store: {enabled: false}
plan:
  name: cancel-with-consent
  phases:
    - {id: identify, symbol: I, name: Identify the user, match: {tool: find_user}}
    - {id: confirm, symbol: C, name: Confirm, match: {message: {role: user, text: '^\\W*yes\\b'}}}
    - {id: act, symbol: A, name: Act, match: {tool: cancel_order}}
policies:
  violations: {enabled: false}
  gates:
    - {name: confirm-before-cancel, tool: cancel_order, until: {phases_seen: [confirm]}}
"""
SECRET_YES = "Yes, please cancel order 4417-PRIVATE"


def _claude(event: str, **fields: Any) -> dict[str, Any]:
    base = {"session_id": "s1", "transcript_path": "/t/s1.jsonl", "cwd": "/w", "permission_mode": "default"}
    return {**base, "hook_event_name": event, **fields}


def _codex(event: str, **fields: Any) -> dict[str, Any]:
    base = {
        "session_id": "s1",
        "turn_id": "t1",
        "transcript_path": None,
        "cwd": "/w",
        "model": "gpt-5",
        "permission_mode": "default",
    }
    return {**base, "hook_event_name": event, **fields}


#: dialect -> (its payload maker, its prompt / before-tool / after-tool events, a tool response)
DIALECTS: dict[str, tuple[Callable[..., dict[str, Any]], tuple[str, str, str], Any]] = {
    "claude-code": (_claude, ("UserPromptSubmit", "PreToolUse", "PostToolUse"), "ok"),
    "codex": (_codex, ("UserPromptSubmit", "PreToolUse", "PostToolUse"), "ok"),
    "gemini": (_gemini, ("BeforeAgent", "BeforeTool", "AfterTool"), {"llmContent": "ok"}),
}


def _denies(answer: dict[str, Any]) -> bool:
    """A denial in the CLI's idiom (Gemini: ``decision: deny``; the others: ``permissionDecision``)."""
    specific = answer.get("hookSpecificOutput", {})
    return answer.get("decision") == "deny" or specific.get("permissionDecision") == "deny"


def _ask(config: Path, state: Path, payload: dict[str, Any], speaks: str) -> dict[str, Any]:
    out = io.StringIO()
    service.main(
        str(config), str(state), stdin=io.StringIO(json.dumps(payload)), stdout=out, dialect=dialect(speaks)
    )
    return json.loads(out.getvalue()) if out.getvalue().strip() else {}


def _run(tmp_path: Path, speaks: str, replies: list[str], *, rebuild: bool = False) -> tuple[bool, Path]:
    """Task prompt, find_user, the user's replies, cancel_order: whether the cancellation was denied."""
    config = tmp_path / "planguard.yaml"
    config.write_text(CONFIG)
    state = tmp_path / "state"
    make, (on_prompt, on_pre, on_post), response = DIALECTS[speaks]
    ask = lambda payload: _ask(config, state, payload, speaks)  # noqa: E731

    def call(event: str, tool: str, cid: str, **extra: Any) -> dict[str, Any]:
        ids = {} if speaks == "gemini" else {"tool_use_id": cid}  # Gemini's tool events carry no call id
        return ask(make(event, tool_name=tool, tool_input={"id": "4417"}, **ids, **extra))

    ask(make(on_prompt, prompt="I want to cancel order 4417."))
    assert not _denies(call(on_pre, "find_user", "c1"))
    call(on_post, "find_user", "c1", tool_response=response)
    for reply in replies:
        ask(make(on_prompt, prompt=reply))
    if rebuild:  # the snapshot is gone: the session is rebuilt from its journal
        for snap in state.glob("*.snap"):
            snap.unlink()
    return _denies(call(on_pre, "cancel_order", "c2")), state


@pytest.mark.parametrize("speaks", list(DIALECTS))
def test_the_users_yes_in_a_prompt_opens_the_gate(tmp_path: Path, speaks: str) -> None:
    denied, state = _run(tmp_path, speaks, [SECRET_YES])
    assert not denied
    files = [p for p in state.rglob("*") if p.is_file()]
    assert files and not any(b"4417-PRIVATE" in p.read_bytes() for p in files)  # the match, not the text


@pytest.mark.parametrize("speaks", list(DIALECTS))
def test_without_the_yes_the_gate_denies(tmp_path: Path, speaks: str) -> None:
    denied, _state = _run(tmp_path, speaks, ["What would the refund be?"])
    assert denied


def test_a_session_rebuilt_from_its_journal_keeps_the_turns_match(tmp_path: Path) -> None:
    denied, state = _run(tmp_path, "claude-code", [SECRET_YES], rebuild=True)
    assert not denied
    journal = "".join(p.read_text() for p in state.glob("*.log"))
    assert '"op":"message"' in journal and "PRIVATE" not in journal
