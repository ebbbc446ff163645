"""Gemini CLI (``docs/hooks/reference.md``; ``.gemini/settings.json``).

``BeforeTool``, ``AfterTool``, ``BeforeAgent``, ``SessionEnd`` with ``session_id``, ``tool_name``,
``tool_input`` and ``tool_response`` ``{llmContent, returnDisplay, error}``, no call id. A denial is
``decision: deny`` with a ``reason`` the model gets as the tool's error; reminders are
``hookSpecificOutput.additionalContext`` of ``AfterTool`` (appended to the tool result) and ``BeforeAgent``
(appended to the prompt).

A tool that errs (``tool_response.error``) reaches the model as its error message alone: the scheduler
builds the error response from ``error.message`` and drops ``llmContent``, where ``AfterTool``'s context
went (``createErrorResult`` in ``packages/core/src/scheduler``; the 0.61.0 bundle). Such a result is marked
:data:`~planguard_hooks.translate.UNDELIVERED_CONTEXT`, so a reminder due then is not lost but held for the
next request's context.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, ClassVar

from .. import translate
from ..translate import POST_TOOL_USE, POST_TOOL_USE_FAILURE, PRE_TOOL_USE, SESSION_END, USER_PROMPT_SUBMIT
from .base import COMMON_FIELDS, Dialect

__all__ = ["GEMINI", "GeminiDialect"]

# run_shell_command's result text: "Command: ...\nDirectory: ...\nOutput: ...\nExit Code: 1".
_GEMINI_EXIT_CODE = re.compile(r"^Exit Code: (-?\d+)", re.MULTILINE)


class GeminiDialect(Dialect):
    name = "gemini"
    events: ClassVar[Mapping[str, str]] = {
        "BeforeTool": PRE_TOOL_USE,
        "AfterTool": POST_TOOL_USE,
        "BeforeAgent": USER_PROMPT_SUBMIT,
        "SessionEnd": SESSION_END,
    }

    def common(self, payload: Mapping[str, Any]) -> dict[str, Any] | None:
        event = payload.get("hook_event_name")
        if not isinstance(event, str) or event not in self.events:
            return None
        out: dict[str, Any] = {k: payload[k] for k in COMMON_FIELDS if k in payload}
        out["hook_event_name"] = self.events[event]
        if event == "BeforeAgent":
            out["prompt"] = payload.get("prompt")  # the user's prompt, as UserPromptSubmit has it
        if event in ("BeforeTool", "AfterTool"):
            out["tool_name"] = payload.get("tool_name")
            out["tool_input"] = payload.get("tool_input")
        if event == "AfterTool":
            response = payload.get("tool_response")
            response = response if isinstance(response, Mapping) else {}
            text = _gemini_text(response.get("llmContent"))
            error = response.get("error")
            exit_code = _GEMINI_EXIT_CODE.search(text)
            if error:
                message = error.get("message") if isinstance(error, Mapping) else error
                out["hook_event_name"] = POST_TOOL_USE_FAILURE
                out["error"] = str(message) if message else text
                out[translate.UNDELIVERED_CONTEXT] = True
            elif exit_code is not None and exit_code.group(1) != "0":
                # A shell command that failed: the common form of Claude Code's failed Bash call.
                out["hook_event_name"] = POST_TOOL_USE_FAILURE
                out["error"] = f"Exit code {exit_code.group(1)}\n{text}"
            else:
                out["tool_response"] = text
        return out

    def answer(self, answer: Mapping[str, Any], payload: Mapping[str, Any]) -> dict[str, Any]:
        specific = answer.get("hookSpecificOutput")
        specific = specific if isinstance(specific, Mapping) else {}
        out: dict[str, Any] = {}
        if specific.get("permissionDecision") == "deny":
            out["decision"] = "deny"
            out["reason"] = str(specific.get("permissionDecisionReason") or "blocked by planguard")
        context = specific.get("additionalContext")
        if isinstance(context, str) and context:
            out["hookSpecificOutput"] = {
                "hookEventName": payload.get("hook_event_name"),
                "additionalContext": context,
            }
        for key in ("continue", "stopReason", "systemMessage"):
            if key in answer:
                out[key] = answer[key]
        return out


def _gemini_text(content: Any) -> str:
    """``llmContent``: a string, or a part (list) the model was sent (``{text}``, ``{functionResponse}``)."""
    if isinstance(content, str):
        return content
    if isinstance(content, Mapping):
        content = [content]
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif isinstance(part, Mapping):
                texts.append(json.dumps(part, ensure_ascii=False, default=str))
        return "\n".join(texts)
    return "" if content is None else json.dumps(content, ensure_ascii=False, default=str)


GEMINI = GeminiDialect()
