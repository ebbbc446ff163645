"""Hook dialects: one hook service, each coding CLI's own hook contract at the edges.

The hook service (client, daemon, :class:`~planguard_claude_code.hook.HookRunner`, the adapter) speaks
one event form internally: Claude Code's hook payloads and answers (``PreToolUse``/``PostToolUse``/
``PostToolUseFailure``/``UserPromptSubmit``/``SessionEnd``). A :class:`Dialect` maps a CLI's payload onto
that form (:meth:`Dialect.common`) and the service's answer back into what the CLI understands
(:meth:`Dialect.answer`); nothing else knows which CLI is on the other end. Classification, metrics and
policies stay in planguard's core, which sees the CLI's own tool names and arguments.

Contracts, as the CLIs' releases checked against define them (``README.md`` names the versions):

* **Claude Code**: the common form itself.
* **Codex CLI** (``codex-rs/hooks``; ``.codex/hooks.json``): Claude-compatible events ``PreToolUse``,
  ``PostToolUse``, ``UserPromptSubmit``, ``SessionEnd`` with ``session_id``, ``turn_id``, ``tool_name``,
  ``tool_input``, ``tool_use_id`` and ``tool_response``. A denial is ``permissionDecision: deny`` with its
  reason (the model reads it as the tool's output); Codex rejects ``continue``/``stopReason`` on
  ``PreToolUse``, so a STOP is answered as a denial. Reminders are ``additionalContext`` of
  ``PostToolUse``/``UserPromptSubmit``; ``SessionEnd`` (0.171) ends the session. Codex reports no
  failed-call event: a failed call is a ``PostToolUse`` whose ``tool_response`` says so.
* **Gemini CLI** (``docs/hooks/reference.md``; ``.gemini/settings.json``): ``BeforeTool``, ``AfterTool``,
  ``BeforeAgent``, ``SessionEnd`` with ``session_id``, ``tool_name``, ``tool_input`` and ``tool_response``
  ``{llmContent, returnDisplay, error}``, no call id. A denial is ``decision: deny`` with a ``reason`` the
  model gets as the tool's error; reminders are ``hookSpecificOutput.additionalContext`` of ``AfterTool``
  (appended to the tool result) and ``BeforeAgent`` (appended to the prompt).
* **OpenCode** has no command hooks: planguard's plugin (``opencode_plugin.js``, installed by
  :mod:`planguard_claude_code.opencode`) runs the hook client on ``tool.execute.before``/``after`` with
  payloads already in the common form (its dialect only names the source) and throws to deny.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, ClassVar

from .translate import (
    POST_TOOL_USE,
    POST_TOOL_USE_FAILURE,
    PRE_TOOL_USE,
    SESSION_END,
    USER_PROMPT_SUBMIT,
)

__all__ = ["CLAUDE_CODE", "CODEX", "DIALECTS", "GEMINI", "OPENCODE", "Dialect", "dialect"]

_COMMON_FIELDS = ("session_id", "transcript_path", "cwd", "agent_id", "agent_type")
# run_shell_command's result text: "Command: ...\nDirectory: ...\nOutput: ...\nExit Code: 1".
_GEMINI_EXIT_CODE = re.compile(r"^Exit Code: (-?\d+)", re.MULTILINE)


class Dialect:
    """One CLI's hook contract. ``events`` maps the CLI's hook event names to the common ones; the base
    class is Claude Code's, where both are the same."""

    name = "claude-code"
    #: CLI event name -> common event name (only these are answered).
    events: ClassVar[Mapping[str, str]] = {
        e: e for e in (PRE_TOOL_USE, POST_TOOL_USE, POST_TOOL_USE_FAILURE, USER_PROMPT_SUBMIT, SESSION_END)
    }

    def gate_mark(self) -> str:
        """Text a raw payload of the CLI's before-tool event contains (for a payload too broken to read:
        a fail-closed gate must still deny it)."""
        pre = next(k for k, v in self.events.items() if v == PRE_TOOL_USE)
        return json.dumps(pre)

    def common(self, payload: Mapping[str, Any]) -> dict[str, Any] | None:
        """The payload in the common (Claude Code) form; None when planguard does not handle it."""
        event = payload.get("hook_event_name")
        if not isinstance(event, str) or event not in self.events:
            return None
        return {**payload, "hook_event_name": self.events[event]}

    def answer(self, answer: Mapping[str, Any], payload: Mapping[str, Any]) -> dict[str, Any]:
        """The service's answer (common form) as the CLI expects it; ``payload`` is the CLI's own."""
        return dict(answer)


class CodexDialect(Dialect):
    name = "codex"
    events: ClassVar[Mapping[str, str]] = {
        PRE_TOOL_USE: PRE_TOOL_USE,
        POST_TOOL_USE: POST_TOOL_USE,
        USER_PROMPT_SUBMIT: USER_PROMPT_SUBMIT,
        SESSION_END: SESSION_END,
    }

    def answer(self, answer: Mapping[str, Any], payload: Mapping[str, Any]) -> dict[str, Any]:
        out = dict(answer)
        if payload.get("hook_event_name") == PRE_TOOL_USE:
            # Codex refuses continue/stopReason on PreToolUse (the hook's whole answer would be dropped,
            # denial included): a STOP stays a denial the model reads.
            out.pop("continue", None)
            out.pop("stopReason", None)
        return out


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
        out: dict[str, Any] = {k: payload[k] for k in _COMMON_FIELDS if k in payload}
        out["hook_event_name"] = self.events[event]
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


class OpenCodeDialect(Dialect):
    name = "opencode"


CLAUDE_CODE = Dialect()
CODEX = CodexDialect()
GEMINI = GeminiDialect()
OPENCODE = OpenCodeDialect()
DIALECTS: dict[str, Dialect] = {d.name: d for d in (CLAUDE_CODE, CODEX, GEMINI, OPENCODE)}


def dialect(name: str | None) -> Dialect:
    """The dialect called ``name`` (None: Claude Code). Raises ValueError naming the known ones."""
    if name is None:
        return CLAUDE_CODE
    try:
        return DIALECTS[name]
    except KeyError:
        raise ValueError(f"unknown hook dialect {name!r}; expected one of {', '.join(DIALECTS)}") from None
