"""Claude Code hook payloads → :class:`~planguard.events.ToolEvent`, and decisions → hook answers.

Claude Code's tools are passed through under their own names (``Read``, ``Edit``, ``Bash``, ...) with
their own inputs, exactly as the transcript loader (``planguard.offline.loaders.claude_code``) reads them from
a session JSONL, so a live session and the replay of its transcript classify the same events. The mapping
onto the paper's rules (PHASE_RULES §6) is the phase rules' job, not this module's.

Answers follow the hooks reference: a blocking decision is a ``PreToolUse`` ``permissionDecision: deny``
whose reason the model sees as the tool's error; reminders and nudges are ``additionalContext`` (added to
the model's next request). Allowed calls get no answer at all, so Claude Code's own permission flow is
untouched.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable, Mapping
from typing import Any

from planguard.decisions import Decision, DecisionKind
from planguard.events import ToolEvent

__all__ = [
    "HOOK_EVENTS",
    "MAX_RESULT_CHARS",
    "POST_TOOL_USE",
    "POST_TOOL_USE_FAILURE",
    "PRE_TOOL_USE",
    "SESSION_END",
    "UNDELIVERED_CONTEXT",
    "USER_PROMPT_SUBMIT",
    "call_event",
    "context_answer",
    "deny_answer",
    "injected_text",
    "result_event",
    "session_key",
]

PRE_TOOL_USE = "PreToolUse"
POST_TOOL_USE = "PostToolUse"
POST_TOOL_USE_FAILURE = "PostToolUseFailure"
USER_PROMPT_SUBMIT = "UserPromptSubmit"
SESSION_END = "SessionEnd"
#: Set on a common-form result payload whose CLI drops the answer's ``additionalContext`` (Gemini CLI for a
#: tool that errs): what the model request after it would carry waits for the next one.
UNDELIVERED_CONTEXT = "planguard_undelivered_context"
#: The hook events planguard listens to (what ``planguard install claude-code`` registers).
HOOK_EVENTS: tuple[str, ...] = (
    PRE_TOOL_USE,
    POST_TOOL_USE,
    POST_TOOL_USE_FAILURE,
    USER_PROMPT_SUBMIT,
    SESSION_END,
)

#: Tool output kept per call. Detectors look at the start and end of outputs; a 2 MB file read must not
#: travel through the session state (which a hook process persists) in full.
MAX_RESULT_CHARS = 16_384

_EXIT_CODE = re.compile(r"^Exit code (-?\d+)")


def session_key(payload: Mapping[str, Any]) -> str:
    """The planguard session of a hook call: the Claude Code session, or ``<session>/<agent_id>`` inside a
    Task sub-agent (the id the transcript loader gives a sub-agent's run)."""
    session = payload.get("session_id")
    sid = session if isinstance(session, str) and session else "unknown-session"
    agent = payload.get("agent_id")
    return f"{sid}/{agent}" if isinstance(agent, str) and agent else sid


def call_event(payload: Mapping[str, Any], source: str = "claude-code") -> ToolEvent:
    """The tool call a ``PreToolUse``/``PostToolUse*`` payload is about, before it runs. ``source``: the
    CLI it came from (the hook dialect's name)."""
    name = payload.get("tool_name")
    tool_input = payload.get("tool_input")
    call_id = payload.get("tool_use_id")
    metadata: dict[str, Any] = {"source": source}
    agent_type = payload.get("agent_type")
    if isinstance(agent_type, str):
        metadata["agent_type"] = agent_type
    cwd = payload.get("cwd")
    if isinstance(cwd, str) and cwd:
        metadata["cwd"] = cwd  # the project directory: the live phase rules judge paths against it
    return ToolEvent(
        tool=name if isinstance(name, str) else "",
        arguments=tool_input if isinstance(tool_input, (dict, str)) else {},
        call_id=call_id if isinstance(call_id, str) and call_id else None,
        metadata=metadata,
    )


def result_event(
    payload: Mapping[str, Any], now: float | None = None, source: str = "claude-code"
) -> ToolEvent:
    """The finished call of a ``PostToolUse`` (success) or ``PostToolUseFailure`` payload."""
    event = call_event(payload, source)
    event.end_time = time.time() if now is None else now
    duration = payload.get("duration_ms")
    if isinstance(duration, (int, float)) and not isinstance(duration, bool) and duration >= 0:
        event.start_time = event.end_time - duration / 1000.0
    if payload.get("hook_event_name") == POST_TOOL_USE_FAILURE:
        error = payload.get("error")
        text = error if isinstance(error, str) else ""
        event.is_error = True
        event.result = _clip(text)
        match = _EXIT_CODE.match(text)
        if match:
            event.exit_code = int(match.group(1))
        if payload.get("is_interrupt") is True:
            event.metadata = {**event.metadata, "interrupted": True}
    else:
        event.result = _clip(response_text(payload.get("tool_response")))
    return event


def response_text(response: Any) -> str:
    """The text a tool's structured response stands for (what the model mostly saw)."""
    if response is None:
        return ""
    if isinstance(response, str):
        return response
    if isinstance(response, Mapping):
        stdout, stderr = response.get("stdout"), response.get("stderr")
        if isinstance(stdout, str) or isinstance(stderr, str):  # Bash
            out = stdout if isinstance(stdout, str) else ""
            err = stderr if isinstance(stderr, str) else ""
            return f"{out}\n{err}" if out and err else out or err
        file = response.get("file")
        if isinstance(file, Mapping) and isinstance(file.get("content"), str):  # Read
            return str(file["content"])
        content = response.get("content")
        if isinstance(content, str):
            return content
    try:
        return json.dumps(response, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(response)


def _clip(text: str) -> str:
    if len(text) <= MAX_RESULT_CHARS:
        return text
    half = MAX_RESULT_CHARS // 2
    return f"{text[:half]}\n[… {len(text) - MAX_RESULT_CHARS} characters cut by planguard …]\n{text[-half:]}"


def injected_text(decisions: Iterable[Decision]) -> str:
    """Reminders and nudges joined into one block for the model (other decision kinds carry nothing)."""
    return "\n\n".join(d.message for d in decisions if d.injects and d.message)


def deny_answer(decision: Decision, injected: Iterable[Decision] = ()) -> dict[str, Any]:
    """``PreToolUse`` answer for a blocking decision. A STOP also ends the run (``continue: false``)."""
    reason = decision.message or f"blocked by planguard ({decision.policy or decision.kind.value})"
    extra = injected_text(injected)
    if extra:
        # A denied call gets no PostToolUse, so reminders due now travel with the reason.
        reason = f"{reason}\n\n{extra}"
    answer: dict[str, Any] = {
        "hookSpecificOutput": {
            "hookEventName": PRE_TOOL_USE,
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
    }
    if decision.kind is DecisionKind.STOP:
        answer["continue"] = False
        answer["stopReason"] = decision.message or "stopped by planguard"
    return answer


def context_answer(hook_event: str, injected: Iterable[Decision]) -> dict[str, Any]:
    """``additionalContext`` answer for ``PostToolUse``/``PostToolUseFailure``/``UserPromptSubmit`` (empty
    when there is nothing to add)."""
    text = injected_text(injected)
    if not text:
        return {}
    return {"hookSpecificOutput": {"hookEventName": hook_event, "additionalContext": text}}
