"""Codex CLI (``codex-rs/hooks``; ``.codex/hooks.json``).

Claude-compatible events ``PreToolUse``, ``PostToolUse``, ``UserPromptSubmit``, ``SessionEnd`` with
``session_id``, ``turn_id``, ``tool_name``, ``tool_input``, ``tool_use_id`` and ``tool_response``. A denial is
``permissionDecision: deny`` with its reason (the model reads it as the tool's output); Codex rejects
``continue``/``stopReason`` on ``PreToolUse``, so a STOP is answered as a denial. Reminders are
``additionalContext`` of ``PostToolUse``/``UserPromptSubmit``; ``SessionEnd`` (0.171) ends the session. Codex
reports no failed-call event: a failed call is a ``PostToolUse`` whose ``tool_response`` says so.

Tool inputs are the model's own arguments, except for Codex's edit tool: ``apply_patch`` (a free-form tool
the model calls with the patch as its whole input) reaches hooks as ``tool_input: {"command": PATCH}``
(``codex-rs/core/src/tools/handlers/apply_patch.rs``, ``pre_tool_use_payload``; its test
``pre_tool_use_payload_uses_freeform_patch_input``), while the session file records it as the call's
``input`` (a rollout's ``custom_tool_call``). The dialect gives the call the form the rollout has, so
live monitoring and the replay of Codex's own file read the same call.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from ..translate import POST_TOOL_USE, PRE_TOOL_USE, SESSION_END, USER_PROMPT_SUBMIT
from .base import Dialect

__all__ = ["APPLY_PATCH", "CODEX", "CodexDialect"]

#: Codex's edit tool, as its hooks name it (``HookToolName::apply_patch``).
APPLY_PATCH = "apply_patch"


class CodexDialect(Dialect):
    name = "codex"
    events: ClassVar[Mapping[str, str]] = {
        PRE_TOOL_USE: PRE_TOOL_USE,
        POST_TOOL_USE: POST_TOOL_USE,
        USER_PROMPT_SUBMIT: USER_PROMPT_SUBMIT,
        SESSION_END: SESSION_END,
    }

    def common(self, payload: Mapping[str, Any]) -> dict[str, Any] | None:
        out = super().common(payload)
        if out is not None and out.get("tool_name") == APPLY_PATCH:
            tool_input = out.get("tool_input")
            if isinstance(tool_input, Mapping) and isinstance(tool_input.get("command"), str):
                out["tool_input"] = {"input": tool_input["command"]}
        return out

    def answer(self, answer: Mapping[str, Any], payload: Mapping[str, Any]) -> dict[str, Any]:
        out = dict(answer)
        if payload.get("hook_event_name") == PRE_TOOL_USE:
            # Codex refuses continue/stopReason on PreToolUse (the hook's whole answer would be dropped,
            # denial included): a STOP stays a denial the model reads.
            out.pop("continue", None)
            out.pop("stopReason", None)
        return out


CODEX = CodexDialect()
