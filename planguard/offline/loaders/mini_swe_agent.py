"""mini-swe-agent ``.traj.json``: a bare message list (early 1.x), or ``{"info", "messages",
"trajectory_format"}`` (``mini-swe-agent-1`` and the 2.x ``mini-swe-agent-1.1`` layout).

Each assistant message executes at most one bash command (text mode: exactly one fenced block, else the
agent raised a format error and ran nothing) or, in 2.x tool-call mode, one command per ``bash`` tool
call. The command's observation is the next user/tool message. 2.x records the parsed actions and the raw
output in each message's ``extra``; those are preferred over re-parsing the rendered text.
"""

from __future__ import annotations

import re
from typing import Any

from planguard.events import ToolEvent

from ._base import (
    LoadError,
    Trajectory,
    as_dict,
    as_float,
    as_int,
    as_str,
    dig,
    new_meta,
    parse_arguments,
    parse_time,
    text_of,
    type_name,
)

__all__ = ["SUBMIT_MARKERS", "load_mini_document"]

#: Output lines that make mini-swe-agent stop and submit (2.x and 1.x spellings).
SUBMIT_MARKERS = ("COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "MINI_SWE_AGENT_FINAL_OUTPUT")

# The agent's own action regexes: 2.x text mode fences with ``mswea_bash_command`` (so bash examples in
# the prompt do not count), 1.x with ``bash``. A message is parsed with whichever fence it uses.
_FENCE_V2 = re.compile(r"```mswea_bash_command\s*\n(.*?)\n```", re.DOTALL)
_FENCE_V1 = re.compile(r"```bash\s*\n(.*?)\n```", re.DOTALL)
_RETURNCODE = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>")


def load_mini_document(doc: Any, path: str, run_id: str) -> Trajectory:
    info: dict[str, Any] = {}
    if isinstance(doc, dict):
        messages = doc.get("messages")
        info = as_dict(doc.get("info"))
        if not isinstance(messages, list):
            got = "missing" if messages is None else f"a {type_name(messages)}"
            raise LoadError(path, f"'messages' is {got}; expected an array of chat messages")
        layout = as_str(doc.get("trajectory_format")) or "mini-swe-agent-1"
    elif isinstance(doc, list):
        messages = doc
        layout = "message-list"
    else:
        raise LoadError(path, f"expected a message array or an object with 'messages', got {type_name(doc)}")

    events: list[ToolEvent] = []
    pending: list[ToolEvent] = []
    task: str | None = None
    final_text: str | None = None
    n_assistant = 0
    n_format_errors = 0
    exit_status = as_str(info.get("exit_status"))
    inferred_exit = False
    submission = as_str(info.get("submission"))

    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            raise LoadError(
                path, f"messages[{index}] is a {type_name(message)}; expected a chat message object"
            )
        role = message.get("role")
        extra = as_dict(message.get("extra"))
        content = text_of(message.get("content"))
        if role == "assistant":
            n_assistant += 1
            pending = []
            if content.strip():
                final_text = content
            for command, call_id in _actions(message, content, extra):
                metadata: dict[str, Any] = {"message_index": index}
                if _is_submit(command):
                    metadata["submit"] = True
                event = ToolEvent.shell(
                    command,
                    call_id=call_id,
                    start_time=parse_time(extra.get("timestamp")),
                    metadata=metadata,
                )
                events.append(event)
                pending.append(event)
        elif role in ("user", "tool"):
            if not pending:
                if task is None and not events:
                    task = content
                elif extra.get("interrupt_type") == "FormatError" or "EXACTLY ONE" in content:
                    n_format_errors += 1
                continue
            event = _take_pending(pending, message)
            _fill_observation(event, content, extra)
            if event.exit_code is None and isinstance(event.metadata, dict) and event.metadata.get("submit"):
                # A submitting command's output is reported as the bare submission, without the
                # <returncode> wrapper: that shape means the agent really exited here.
                submission = submission if submission is not None else event.result
                if exit_status is None:
                    exit_status, inferred_exit = "Submitted", True
        elif role == "exit":
            exit_status = as_str(extra.get("exit_status")) or exit_status
            submission = as_str(extra.get("submission")) or submission

    stats = as_dict(info.get("model_stats"))
    meta = new_meta(
        instance_id=as_str(info.get("instance_id")),
        model=as_str(dig(info, "config", "model", "model_name")),
        exit_status=exit_status,
        final_text=final_text,
        task=task,
        n_model_calls=as_int(stats.get("api_calls")) or n_assistant or None,
        submission=submission,
        trajectory_format=layout,
        mini_version=as_str(info.get("mini_version")),
        cost=as_float(stats.get("instance_cost")),
        n_format_errors=n_format_errors,
        submitted=any(isinstance(e.metadata, dict) and e.metadata.get("submit") for e in events),
    )
    if inferred_exit:
        meta["exit_status_inferred"] = True
    return Trajectory(id=run_id, source=path, format="mini-swe-agent", events=events, meta=meta)


def _actions(message: dict[str, Any], content: str, extra: dict[str, Any]) -> list[tuple[str, str | None]]:
    recorded = extra.get("actions")
    if isinstance(recorded, list) and recorded:
        actions = []
        for action in recorded:
            if isinstance(action, dict) and isinstance(action.get("command"), str):
                actions.append((action["command"], as_str(action.get("tool_call_id"))))
        if actions:
            return actions
    calls = message.get("tool_calls")
    if isinstance(calls, list) and calls:
        actions = []
        for call in calls:
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(function, dict):
                continue
            arguments = parse_arguments(function.get("arguments"))
            command = arguments.get("command") if isinstance(arguments, dict) else None
            if isinstance(command, str):
                actions.append((command, as_str(call.get("id"))))
        return actions
    fence = _FENCE_V2 if "```mswea_bash_command" in content else _FENCE_V1
    blocks = fence.findall(content)
    # Zero or several blocks is a FormatError in mini-swe-agent: nothing was executed.
    return [(blocks[0].strip(), None)] if len(blocks) == 1 else []


def _take_pending(pending: list[ToolEvent], message: dict[str, Any]) -> ToolEvent:
    call_id = message.get("tool_call_id")
    if isinstance(call_id, str):
        for position, event in enumerate(pending):
            if event.call_id == call_id:
                return pending.pop(position)
    return pending.pop(0)


def _fill_observation(event: ToolEvent, content: str, extra: dict[str, Any]) -> None:
    returncode = as_int(extra.get("returncode"))
    raw_output = extra.get("raw_output")
    if returncode is None:
        match = _RETURNCODE.search(content)
        if match:
            returncode = int(match.group(1))
    if isinstance(raw_output, str):
        result = raw_output
    else:
        result = content
        start, end = content.find("<output>"), content.rfind("</output>")
        if start >= 0 and end > start:
            result = content[start + len("<output>") : end].removeprefix("\n")
    event.result = result
    event.exit_code = returncode
    event.end_time = parse_time(extra.get("timestamp"))
    # 1.x reported timeouts through a template with no <returncode>; 2.x sets exception_info.
    if extra.get("exception_info") or (returncode is None and "timed out and has been killed" in content):
        event.is_error = True
    # planguard_mini_swe_agent's environment marks an action its guard denied (it never ran).
    marker = extra.get("planguard")
    if isinstance(marker, dict) and marker.get("decision") in ("deny", "stop"):
        event.blocked = result.strip()


def _is_submit(command: str) -> bool:
    stripped = command.lstrip()
    return any(stripped.startswith(f"echo {marker}") for marker in SUBMIT_MARKERS)
