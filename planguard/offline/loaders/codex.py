"""Codex CLI rollout files (``~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl``).

Every line is a ``RolloutLine`` (openai/codex ``codex-rs/protocol/src/protocol.rs``):
``{"timestamp", "type": "session_meta" | "response_item" | "compacted" | "turn_context" | "event_msg",
"payload": {...}}``. ``session_meta`` carries ``id``, ``cwd``, ``cli_version``, ``originator``;
``turn_context`` the ``model``. The conversation is in ``response_item`` payloads, the ``ResponseItem``
enum of ``codex-rs/protocol/src/models.rs``:

* ``function_call`` ``{name, arguments: "<JSON text>", call_id}`` (``shell`` with ``command`` as an argv
  list, ``shell_command``/``exec_command`` with a command string, ``apply_patch``, ``update_plan``, MCP
  tools, ...) and its ``function_call_output`` ``{call_id, output}``, where ``output`` is the text (or a
  list of content items; Codex <= 0.4x wrote ``{"output", "metadata": {"exit_code"}}`` as JSON text);
* ``custom_tool_call`` ``{name, input, call_id}`` (the free-form ``apply_patch``) and its
  ``custom_tool_call_output``;
* ``local_shell_call`` ``{call_id, status, action: {type: "exec", command: [...], working_directory}}``;
* ``message`` (``role`` user/assistant, ``content`` of ``input_text``/``output_text`` items) and
  ``reasoning``, which are context.

``event_msg`` lines repeat what the items say for the UI and are skipped. Rollouts written before the
envelope existed (a first line ``{id, timestamp, instructions}``, then bare ``ResponseItem`` lines) are
read too. A call the user declined at the
approval prompt is answered ``"exec command rejected by user"`` / ``"patch rejected by user"`` (codex-rs
core normalises every human denial to these), and one the guardian declined ``"This action was rejected
due to unacceptable risk."``: those never ran and are denials, as are answers that are planguard's own
reason text. Checked against the codex-rs types above and published rollout lines of Codex CLI 0.46.0 and
0.65.0 (``session_meta.cli_version``); the run's version is kept in ``meta["codex_cli_version"]``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

from planguard.events import ASSISTANT, USER, MessageEvent, ToolEvent

from ._base import (
    LoadError,
    Trajectory,
    add_turn,
    as_dict,
    as_str,
    checked_run,
    new_meta,
    parse_arguments,
    parse_time,
    text_of,
)
from .claude_code import PLANGUARD_REASON_PREFIXES

__all__ = ["load_codex"]

_CALL_TYPES = frozenset({"function_call", "custom_tool_call", "local_shell_call"})
_OUTPUT_TYPES = frozenset({"function_call_output", "custom_tool_call_output"})
_LEGACY_ITEM_TYPES = _CALL_TYPES | _OUTPUT_TYPES | {"message", "reasoning"}
_REJECTED = ("exec command rejected by user", "patch rejected by user")
_GUARDIAN_REJECTED = "This action was rejected due to unacceptable risk."
# How codex 0.171 records a PreToolUse hook's denial as the call's output, before the hook's reason.
_HOOK_BLOCKED = ("Command blocked by PreToolUse hook:", "Tool call blocked by PreToolUse hook:")
# "Exit code: 1" (shell_command's freeform output) and "Process exited with code 1" (exec_command).
_EXIT_CODE = re.compile(r"^(?:Exit code: |Process exited with code )(-?\d+)", re.MULTILINE)
# User messages Codex itself injects before the person's first prompt.
_INJECTED = ("<environment_context>", "<user_instructions>", "# AGENTS.md", "<permissions", "<INSTRUCTIONS>")


def load_codex(
    records: Iterable[tuple[int, Any] | LoadError], path: str, stem: str
) -> Iterator[Trajectory | LoadError]:
    """One rollout file's ``(line, record)`` stream -> its session run."""
    events: list[ToolEvent] = []
    turns: list[tuple[int, MessageEvent]] = []
    pending: dict[str, ToolEvent] = {}
    meta_facts: dict[str, Any] = {}
    model: str | None = None
    task: str | None = None
    final_text: str | None = None
    n_orphans = 0
    raw_calls: list[Any] = []
    for item in records:
        if isinstance(item, LoadError):
            yield item
            continue
        line, record = item
        if not isinstance(record, dict):
            yield LoadError(path, "expected a JSON object (one rollout line)", line)
            continue
        kind = record.get("type")
        payload = as_dict(record.get("payload"))
        if "payload" not in record:
            # Rollouts before the {timestamp, type, payload} envelope: a first line {id, timestamp,
            # instructions}, then the ResponseItems themselves (and {"record_type": "state"} lines).
            if "type" not in record and isinstance(record.get("id"), str) and "timestamp" in record:
                meta_facts = {"session_id": as_str(record.get("id")), "cwd": None}
                continue
            if isinstance(kind, str) and kind in _LEGACY_ITEM_TYPES:
                payload, kind = record, "response_item"
        if kind == "session_meta":
            meta_facts = {
                "session_id": as_str(payload.get("id")),
                "cwd": as_str(payload.get("cwd")),
                "codex_cli_version": as_str(payload.get("cli_version")),
                "originator": as_str(payload.get("originator")),
            }
            continue
        if kind == "turn_context":
            model = as_str(payload.get("model")) or model
            continue
        if kind != "response_item":
            continue
        item_type = payload.get("type")
        if not isinstance(item_type, str):
            continue
        timestamp = parse_time(record.get("timestamp"))
        if item_type in _CALL_TYPES:
            raw_calls.append(payload)
            event = _call_event(item_type, payload, timestamp)
            if event is None:
                continue
            events.append(event)
            if event.call_id:
                pending[event.call_id] = event
        elif item_type in _OUTPUT_TYPES:
            event = pending.pop(as_str(payload.get("call_id")) or "", None)
            if event is None:
                n_orphans += 1
                continue
            _fill_result(event, payload.get("output"), timestamp)
        elif item_type == "message":
            text = text_of(payload.get("content"))
            if payload.get("role") == "user":
                if text.strip() and not text.lstrip().startswith(_INJECTED):
                    task = text if task is None else task
                    add_turn(turns, len(events), USER, text, timestamp)
            elif payload.get("role") == "assistant" and text.strip():
                final_text = text
                add_turn(turns, len(events), ASSISTANT, text, timestamp)
    meta = new_meta(
        model=model,
        task=task,
        final_text=final_text,
        unanswered_tool_calls=sum(1 for e in events if e.result is None),
        orphan_tool_results=n_orphans,
        **meta_facts,
    )
    run = Trajectory(
        id=meta_facts.get("session_id") or stem,
        source=path,
        format="codex",
        events=events,
        meta=meta,
        messages=turns,
    )
    yield from checked_run(run, raw_calls, path, None)


def _call_event(item_type: Any, payload: dict[str, Any], timestamp: float | None) -> ToolEvent | None:
    call_id = as_str(payload.get("call_id")) or as_str(payload.get("id"))
    arguments: dict[str, Any] | str
    if item_type == "local_shell_call":
        action = as_dict(payload.get("action"))
        name = "local_shell"
        arguments = {k: v for k, v in action.items() if k != "type" and v is not None}
    else:
        name = as_str(payload.get("name")) or ""
        if not name:
            return None
        if item_type == "custom_tool_call":
            arguments = {"input": payload.get("input") if isinstance(payload.get("input"), str) else ""}
        else:
            arguments = parse_arguments(payload.get("arguments"))
    return ToolEvent(
        tool=name,
        arguments=arguments,
        call_id=call_id,
        start_time=timestamp,
        metadata={"codex_item": item_type},
    )


def _fill_result(event: ToolEvent, output: Any, timestamp: float | None) -> None:
    exit_code: int | None = None
    success: bool | None = None
    if isinstance(output, dict):  # a FunctionCallOutputPayload written as an object
        success = output.get("success") if isinstance(output.get("success"), bool) else None
        output = output.get("content", "")
    text = output if isinstance(output, str) else text_of(output)
    if text.startswith("{"):
        # Codex <= 0.4x: the shell tool answered {"output": "...", "metadata": {"exit_code": 0, ...}}.
        structured = parse_arguments(text)
        if isinstance(structured, dict) and "output" in structured:
            code = as_dict(structured.get("metadata")).get("exit_code")
            exit_code = code if isinstance(code, int) and not isinstance(code, bool) else None
            text = structured["output"] if isinstance(structured["output"], str) else text
    if exit_code is None:
        match = _EXIT_CODE.search(text[:2000])
        exit_code = int(match.group(1)) if match else None
    event.result = text
    event.exit_code = exit_code
    event.is_error = success is False
    event.end_time = timestamp
    stripped = text.strip()
    if stripped in _REJECTED:
        event.blocked = f"{stripped} (declined at the approval prompt)"
    elif stripped.startswith((_GUARDIAN_REJECTED, *_HOOK_BLOCKED, *PLANGUARD_REASON_PREFIXES)):
        # Codex's own record of a PreToolUse hook's denial, whatever its reason says (a gate's custom
        # ``message:`` too), or planguard's bare reason.
        event.blocked = stripped
