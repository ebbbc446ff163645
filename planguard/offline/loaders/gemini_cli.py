"""Gemini CLI chat recordings (``~/.gemini/tmp/<project>/chats/session-<time>-<id>.json[l]``).

The shapes are those of google-gemini/gemini-cli ``packages/core/src/services/chatRecordingTypes.ts``
(written by ``chatRecordingService.ts``): a ``ConversationRecord`` ``{sessionId, projectHash, startTime,
lastUpdated, messages, summary?, directories?, kind?}`` whose ``messages`` are ``MessageRecord`` ``{id,
timestamp, type: "user" | "gemini" | "info" | "error" | "warning", content, toolCalls?, model?}``, each
tool call a ``ToolCallRecord`` ``{id, name, args, result, status, timestamp, ...}`` (``result`` is the
``functionResponse`` part list the model was sent; ``status`` is the scheduler's: ``success``,
``error``, ``cancelled``, or unfinished).

Two file layouts exist: the whole record as one JSON document (``.json``, older releases), and an
append-only log (``.jsonl``, as gemini-cli 0.61's service writes it): a metadata line, then message
records (a message is written again in full each time its tool calls or results change, so the last
write of an id wins, in first-write order), ``{"$set": {...}}`` patches (whose ``messages``, when
present, are upserted too: a compression replaces the model's context, not the calls that ran) and
``{"$rewindTo": id}`` markers (counted; the calls after it still ran). :func:`load_gemini_cli` reads
both.

The run's working directory (what the live phase rules judge paths against) is the record's first
``directories`` entry, else the project directory gemini-cli's project registry (``projectRegistry.ts``)
writes to ``<project>/.project_root`` beside ``chats/`` — taken only when its SHA-256 is the record's
``projectHash`` (how gemini-cli names a project), so another project's marker is never used.

A call whose status is ``cancelled`` (the user declined the confirmation, or the turn was cancelled
before it ran) is not a step; one answered with planguard's own reason text is a denial.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
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
    parse_time,
    text_of,
    type_name,
)
from .claude_code import PLANGUARD_REASON_PREFIXES

__all__ = ["load_gemini_cli"]

# run_shell_command answers "Command: ...\nDirectory: ...\nOutput: ...\nExit Code: 1\n...".
_EXIT_CODE = re.compile(r"^Exit Code: (-?\d+)", re.MULTILINE)
_HOOK_BLOCKED = "Tool execution blocked:"
_UNFINISHED = frozenset({"validating", "scheduled", "awaiting_approval", "executing"})


def load_gemini_cli(
    records: Iterable[tuple[int, Any] | LoadError], path: str, stem: str
) -> Iterator[Trajectory | LoadError]:
    """A chat recording's ``(line, record)`` stream (one record for the ``.json`` layout) -> its run."""
    metadata: dict[str, Any] = {}
    messages: dict[str, dict[str, Any]] = {}  # by id, in first-write order
    n_rewinds = 0
    for item in records:
        if isinstance(item, LoadError):
            yield item
            continue
        line, record = item
        if not isinstance(record, dict):
            yield LoadError(path, f"expected a JSON object (a chat record), got {type_name(record)}", line)
            continue
        if isinstance(record.get("$rewindTo"), str):
            n_rewinds += 1
        elif isinstance(record.get("id"), str) and "type" in record:
            messages[record["id"]] = record
        else:
            patch = as_dict(record.get("$set")) if "$set" in record else record
            metadata.update({k: v for k, v in patch.items() if k != "messages"})
            for message in patch.get("messages") or ():
                if isinstance(message, dict) and isinstance(message.get("id"), str):
                    messages[message["id"]] = message

    events: list[ToolEvent] = []
    turns: list[tuple[int, MessageEvent]] = []
    task: str | None = None
    final_text: str | None = None
    model: str | None = None
    n_model_calls = 0
    for message in messages.values():
        kind = message.get("type")
        text = text_of(message.get("content"))
        at = parse_time(message.get("timestamp"))
        if kind == "user":
            if text.strip() and not text.lstrip().startswith("/"):
                task = text if task is None else task
                add_turn(turns, len(events), USER, text, at)
            continue
        if kind != "gemini":
            continue
        n_model_calls += 1
        model = as_str(message.get("model")) or model
        if text.strip():
            final_text = text
            add_turn(turns, len(events), ASSISTANT, text, at)
        for call in message.get("toolCalls") or ():
            event = _tool_event(call)
            if event is not None:
                events.append(event)
    directories = metadata.get("directories")
    project_hash = as_str(metadata.get("projectHash"))
    if isinstance(directories, list) and directories and isinstance(directories[0], str):
        cwd: str | None = directories[0]
    else:
        cwd = _project_root(path, project_hash)
    meta = new_meta(
        model=model,
        task=task,
        final_text=final_text,
        n_model_calls=n_model_calls or None,
        session_id=as_str(metadata.get("sessionId")),
        project_hash=project_hash,
        cwd=cwd,
        summary=as_str(metadata.get("summary")),
        n_rewinds=n_rewinds,
        unanswered_tool_calls=sum(1 for e in events if e.result is None and e.blocked is None),
    )
    run_id = as_str(metadata.get("sessionId")) or stem
    run = Trajectory(id=run_id, source=path, format="gemini-cli", events=events, meta=meta, messages=turns)
    yield from checked_run(run, list(messages.values()), path, None)


def _project_root(path: str, project_hash: str | None) -> str | None:
    """The project directory of a recording at ``<project>/chats/<file>``, from ``<project>/.project_root``
    when the directory's SHA-256 is ``project_hash``; else None."""
    if not project_hash:
        return None
    marker = Path(path).parent.parent / ".project_root"
    try:
        with open(marker, "rb") as f:
            root = f.read(4097).decode("utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not root.startswith("/") or len(root) > 4096:
        return None
    return root if hashlib.sha256(root.encode()).hexdigest() == project_hash else None


def _tool_event(call: Any) -> ToolEvent | None:
    if not isinstance(call, dict):
        return None
    name = as_str(call.get("name"))
    if not name:
        return None
    args = call.get("args")
    status = as_str(call.get("status"))
    result = _result_text(call.get("result"))
    if not result and isinstance(call.get("resultDisplay"), str):
        result = call["resultDisplay"]
    event = ToolEvent(
        tool=name,
        arguments=args if isinstance(args, dict) else {},
        call_id=as_str(call.get("id")),
        start_time=parse_time(call.get("timestamp")),
        result=result if status not in _UNFINISHED else None,
        is_error=status == "error",
        metadata={"gemini_status": status, "display_name": as_str(call.get("displayName"))},
    )
    match = _EXIT_CODE.search(result[:4000]) if result else None
    if match:
        event.exit_code = int(match.group(1))
    if status == "cancelled":
        event.blocked = f"cancelled before it ran ({result.strip()[:200] or 'no reason recorded'})"
    elif status == "error" and _planguard_reason(result):
        event.blocked = result.strip()
    return event


def _planguard_reason(result: str) -> bool:
    """A hook's denial: as gemini-cli 0.61 records a ``BeforeTool`` hook's ``decision: deny`` (``"Tool
    execution blocked: <reason>"``, whatever the reason says: a gate's custom ``message:`` too), or
    planguard's bare reason."""
    return result.strip().startswith((_HOOK_BLOCKED, *PLANGUARD_REASON_PREFIXES))


def _result_text(result: Any) -> str:
    """The text of a ``PartListUnion`` result: ``functionResponse.response`` outputs or errors, text parts."""
    if result is None:
        return ""
    if isinstance(result, str):
        return result
    parts = result if isinstance(result, list) else [result]
    texts: list[str] = []
    for part in parts:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict):
            response = as_dict(as_dict(part.get("functionResponse")).get("response"))
            for key in ("output", "error", "content", "llmContent"):
                value = response.get(key)
                if isinstance(value, str) and value:
                    texts.append(value)
                    break
            if isinstance(part.get("text"), str):
                texts.append(part["text"])
    return "\n".join(texts)
