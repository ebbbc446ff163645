"""OpenHands: serialised event streams (a JSON array of events) and evaluation ``output.jsonl`` records.

Two event vocabularies exist and both are read:

* **V0** (OpenHands/OpenHands ``openhands/events``): ``{"id", "source", "action": "run", "args": {...},
  "tool_call_metadata": {...}}`` actions and ``{"observation": "run", "cause": <action id>, "content",
  "extras"}`` observations.
* **V1** (the OpenHands software-agent-sdk, ``openhands-sdk/openhands/sdk/event/``): events tagged by
  ``"kind"``. ``ActionEvent`` (``llm_convertible/action.py``: ``tool_name``, ``tool_call_id``,
  ``tool_call`` = ``{"id", "name", "arguments": "<JSON text>"}``, ``action``, ``thought``,
  ``llm_response_id``), ``ObservationEvent`` (``llm_convertible/observation.py``: ``tool_name``,
  ``tool_call_id``, ``action_id``, ``observation`` = ``{"kind", "content": [{"type": "text", "text"}],
  "is_error", ...}``), ``UserRejectObservation`` (``rejection_reason``, ``rejection_source`` "user" or
  "hook": the call never ran, so it is a denial, not a step), ``AgentErrorEvent`` (``error``: the
  scaffold's error answer to a call) and ``MessageEvent`` (``llm_message``).

``output.jsonl`` records are evaluation outputs (``instance_id``, ``instruction``, ``history``,
``test_result``, ...) or resolver outputs (OpenHands ``openhands/resolver/resolver_output.py``:
``issue`` = ``{"owner", "repo", "number", ...}``, ``instruction``, ``history``, ``git_patch``,
``success``, no ``instance_id``), whose id is then ``owner/repo#number``.

Only the agent's actions become events; user messages, recalls, state changes and condensations are
context. Each event is named after the CodeAct tool the model actually called: when the action carries
``tool_call_metadata`` the function name and JSON arguments are recovered from the stored model
response (so an ``edit`` action becomes ``str_replace_editor`` with ``command=create``, as the model
wrote it), otherwise they are rebuilt from the action's ``args``. Observations are paired by ``cause``
(the action's event id), falling back to the tool-call id.
"""

from __future__ import annotations

from collections import Counter
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

__all__ = ["ACTION_TOOLS", "load_event_document", "load_output_record"]

#: OpenHands action type -> CodeAct tool name, for actions recorded without tool-call metadata.
ACTION_TOOLS: dict[str, str] = {
    "run": "execute_bash",
    "run_ipython": "execute_ipython_cell",
    "read": "str_replace_editor",
    "edit": "str_replace_editor",
    "write": "str_replace_editor",
    "think": "think",
    "finish": "finish",
    "browse": "web_read",
    "browse_interactive": "browser",
    "delegate": "delegate",
    "call_tool_mcp": "mcp",
    "task_tracking": "task_tracker",
}

_ERROR_OBSERVATIONS = frozenset({"error", "user_rejected"})


def load_event_document(doc: Any, path: str, run_id: str) -> Trajectory:
    if not isinstance(doc, list):
        raise LoadError(path, f"expected an array of OpenHands events, got {type_name(doc)}")
    builder = _Builder(path, None)
    builder.feed(doc, "")
    return Trajectory(id=run_id, source=path, format="openhands", events=builder.events, meta=builder.meta())


def load_output_record(record: Any, path: str, line: int | None) -> Trajectory:
    """One instance of an OpenHands evaluation ``output.jsonl`` (``EvalOutput``)."""
    if not isinstance(record, dict):
        raise LoadError(
            path, f"expected a JSON object (one evaluated instance), got {type_name(record)}", line
        )
    instance_id = record.get("instance_id")
    if isinstance(instance_id, (int, float)) and not isinstance(instance_id, bool):
        instance_id = str(instance_id)
    if not isinstance(instance_id, str) or not instance_id:
        instance_id = _resolver_id(record.get("issue"))
    if instance_id is None:
        raise LoadError(
            path,
            "'instance_id' is missing and there is no resolver 'issue' {owner, repo, number}; "
            "expected the instance id string",
            line,
        )
    history = record.get("history")
    if not isinstance(history, list):
        got = "missing" if history is None else f"a {type_name(history)}"
        raise LoadError(path, f"'history' is {got}; expected an array of events", line)
    builder = _Builder(path, line)
    builder.feed(history, "history")

    metadata = as_dict(record.get("metadata"))
    test_result = as_dict(record.get("test_result"))
    resolved = _resolved(record, test_result)
    if resolved is None and isinstance(record.get("success"), bool) and "issue" in record:
        resolved = record["success"]  # a resolver output's own verdict
    meta = builder.meta()
    meta.update(
        instance_id=instance_id,
        model=as_str(dig(metadata, "llm_config", "model"))
        or as_str(metadata.get("model_name"))
        or meta["model"],
        resolved=resolved,
        resolution_status=None if resolved is None else ("resolved" if resolved else "unresolved"),
        task=as_str(record.get("instruction"))
        or as_str(dig(record, "instance", "problem_statement"))
        or meta["task"],
        error=as_str(record.get("error")),
        agent_class=as_str(metadata.get("agent_class")),
        git_patch=as_str(test_result.get("git_patch")) or as_str(record.get("git_patch")),
        cost=as_float(dig(record, "metrics", "accumulated_cost")),
    )
    source = path if line is None else f"{path}:{line}"
    return Trajectory(
        id=instance_id, source=source, format="openhands-output", events=builder.events, meta=meta
    )


def _resolver_id(issue: Any) -> str | None:
    """``owner/repo#number`` of a resolver output's issue, or None when it is not one."""
    if not isinstance(issue, dict):
        return None
    number = issue.get("number")
    owner, repo = as_str(issue.get("owner")), as_str(issue.get("repo"))
    if isinstance(number, bool) or not isinstance(number, (int, str)) or not owner or not repo:
        return None
    return f"{owner}/{repo}#{number}"


def _event_key(value: Any) -> int | str | None:
    # Event ids are ints in every OpenHands version; anything else cannot be a cause to pair with.
    if isinstance(value, (int, str)) and not isinstance(value, bool):
        return value
    return None


def _resolved(record: dict[str, Any], test_result: dict[str, Any]) -> bool | None:
    for candidate in (
        dig(test_result, "report", "resolved"),
        dig(record, "report", "resolved"),
        test_result.get("resolved"),
        record.get("resolved"),
    ):
        if isinstance(candidate, bool):
            return candidate
    return None


class _Builder:
    """Accumulates one run's events; shared by the event-list and the output.jsonl layouts."""

    def __init__(self, path: str, line: int | None) -> None:
        self.path = path
        self.line = line
        self.events: list[ToolEvent] = []
        self._by_event_id: dict[int | str, ToolEvent] = {}
        self._by_call_id: dict[str, ToolEvent] = {}
        self._response_ids: set[str] = set()
        self._plain_messages = 0
        self._unpaired = 0
        self._skipped: Counter[str] = Counter()
        self._model: str | None = None
        self._task: str | None = None
        self._final_text: str | None = None
        self._agent_state: str | None = None
        self._finished = False

    def feed(self, items: list[Any], where: str) -> None:
        for index, item in enumerate(items):
            label = f"{where}[{index}]" if where else f"events[{index}]"
            # Pre-0.10 output.jsonl stored history as [action, observation] pairs.
            if isinstance(item, list) and len(item) == 2 and all(isinstance(part, dict) for part in item):
                event = self._action(item[0], label)
                self._observation(item[1], fallback=event)
                continue
            if not isinstance(item, dict):
                raise LoadError(
                    self.path, f"{label} is a {type_name(item)}; expected an event object", self.line
                )
            kind = item.get("kind")
            if isinstance(kind, str):
                self._v1_event(kind, item)
            elif "observation" in item:
                self._observation(item, fallback=None)
            elif "action" in item:
                self._action(item, label)

    def _action(self, item: dict[str, Any], label: str) -> ToolEvent | None:
        kind = item.get("action")
        args = _fields(item, "args")
        source = item.get("source")
        metadata_block = item.get("tool_call_metadata")
        tool_meta = metadata_block if isinstance(metadata_block, dict) else None
        response = tool_meta.get("model_response") if tool_meta else None
        if isinstance(response, dict):
            response_id = response.get("id")
            if isinstance(response_id, str):
                self._response_ids.add(response_id)
            self._model = self._model or as_str(response.get("model"))

        if kind == "message":
            text = as_str(args.get("content")) or as_str(item.get("message")) or ""
            if source == "user":
                if self._task is None and text:
                    self._task = text
            elif text.strip():
                self._final_text = text
                if tool_meta is None:
                    self._plain_messages += 1  # an LLM reply with no tool call is still a model call
            return None
        if source == "user" or not isinstance(kind, str) or (kind not in ACTION_TOOLS and tool_meta is None):
            self._skipped[str(kind)] += 1
            return None

        tool, arguments = _tool_call(kind, args, item, tool_meta)
        call_id = as_str(tool_meta.get("tool_call_id")) if tool_meta else None
        thought = as_str(args.get("thought")) or ""
        metadata: dict[str, Any] = {"openhands_action": kind}
        if thought:
            metadata["thought"] = thought
        event = self._record(tool, arguments, call_id, item, metadata)
        if kind == "finish":
            self._finished = True
            text = (
                as_str(args.get("final_thought"))
                or as_str(args.get("message"))
                or as_str(item.get("message"))
                or thought
            )
            if text and text.strip():
                self._final_text = text
        return event

    def _observation(self, item: dict[str, Any], fallback: ToolEvent | None) -> None:
        kind = as_str(item.get("observation"))  # (a malformed kind, a list or an object, is no kind)
        extras = _fields(item, "extras")
        if kind == "agent_state_changed":
            self._agent_state = as_str(extras.get("agent_state")) or self._agent_state
            return
        cause = _event_key(item.get("cause"))
        event = self._by_event_id.get(cause) if cause is not None else None
        if event is None:
            call_id = dig(item, "tool_call_metadata", "tool_call_id")
            if isinstance(call_id, str):
                event = self._by_call_id.get(call_id)
        if event is None and fallback is None and "cause" not in item and self.events:
            # The resolver's flattened history has no ids: an observation answers the action before it.
            event = self.events[-1]
        event = event or fallback
        if event is None or event.result is not None:
            if kind not in (None, "null", "recall"):
                self._unpaired += 1
            return
        content = item.get("content")
        event.result = content if isinstance(content, str) else text_of(content)
        exit_code = as_int(dig(extras, "metadata", "exit_code"))
        event.exit_code = exit_code if exit_code is not None else as_int(extras.get("exit_code"))
        event.is_error = kind in _ERROR_OBSERVATIONS or extras.get("error") is True
        event.end_time = parse_time(item.get("timestamp"))
        if isinstance(event.metadata, dict):
            event.metadata["observation"] = kind

    # ---------------------------------------------------------------- V1 (software-agent-sdk) events

    def _v1_event(self, kind: str, item: dict[str, Any]) -> None:
        if kind == "ActionEvent":
            self._v1_action(item)
        elif kind == "ObservationEvent":
            event = self._v1_paired(item)
            if event is None:
                return
            observation = as_dict(item.get("observation"))
            content = observation.get("content")
            if content is None:
                content = observation.get("output")  # SDK versions before content blocks
            event.result = content if isinstance(content, str) else text_of(content)
            exit_code = as_int(observation.get("exit_code"))
            event.exit_code = (
                exit_code if exit_code is not None else as_int(dig(observation, "metadata", "exit_code"))
            )
            event.is_error = observation.get("is_error") is True or bool(observation.get("error"))
            event.end_time = parse_time(item.get("timestamp"))
            if isinstance(event.metadata, dict):
                event.metadata["observation"] = as_str(observation.get("kind")) or kind
        elif kind == "UserRejectObservation":
            event = self._v1_paired(item)
            if event is not None:
                # Rejected by the user in confirmation mode, or blocked by a PreToolUse hook: never ran.
                source = as_str(item.get("rejection_source")) or "user"
                reason = as_str(item.get("rejection_reason")) or "User rejected the action"
                event.blocked = f"{reason} (rejected by {source})"
                event.result = reason
        elif kind == "AgentErrorEvent":
            event = self._v1_paired(item)
            if event is not None:
                event.result = as_str(item.get("error")) or ""
                event.is_error = True
                event.end_time = parse_time(item.get("timestamp"))
        elif kind == "MessageEvent":
            message = as_dict(item.get("llm_message"))
            text = text_of(message.get("content"))
            if item.get("source") == "user" or message.get("role") == "user":
                if self._task is None and text:
                    self._task = text
            elif text.strip():
                self._final_text = text
                self._plain_messages += 1
        else:
            self._skipped[kind] += 1

    def _v1_action(self, item: dict[str, Any]) -> None:
        call = as_dict(item.get("tool_call"))
        action = as_dict(item.get("action"))
        tool = as_str(item.get("tool_name")) or as_str(call.get("name"))
        if not tool:
            self._skipped["ActionEvent without tool_name"] += 1
            return
        # The model's own arguments (tool_call.arguments) as it wrote them; the parsed action otherwise.
        arguments: dict[str, Any] | str
        if "arguments" in call:
            arguments = parse_arguments(call.get("arguments"))
        else:
            arguments = {k: v for k, v in action.items() if k != "kind"}
        response_id = as_str(item.get("llm_response_id"))
        if response_id:
            self._response_ids.add(response_id)
        call_id = as_str(item.get("tool_call_id")) or as_str(call.get("id"))
        metadata: dict[str, Any] = {"openhands_action": as_str(action.get("kind")) or "ActionEvent"}
        thought = text_of(item.get("thought"))
        if thought:
            metadata["thought"] = thought
        self._record(tool, arguments, call_id, item, metadata)
        if tool == "finish":
            self._finished = True
            message = action.get("message") if isinstance(arguments, str) else arguments.get("message")
            if isinstance(message, str) and message.strip():
                self._final_text = message

    def _record(
        self, tool: str, arguments: Any, call_id: str | None, item: dict[str, Any], metadata: dict[str, Any]
    ) -> ToolEvent:
        """Append the call of one action (V0 event or V1 ActionEvent) and index it for its observation."""
        event_id = _event_key(item.get("id"))
        if event_id is not None:
            metadata["event_id"] = event_id
        event = ToolEvent(
            tool=tool,
            arguments=arguments,
            call_id=call_id,
            start_time=parse_time(item.get("timestamp")),
            metadata=metadata,
        )
        self.events.append(event)
        if event_id is not None:
            self._by_event_id[event_id] = event
        if call_id:
            self._by_call_id[call_id] = event
        return event

    def _v1_paired(self, item: dict[str, Any]) -> ToolEvent | None:
        """The action an observation-like V1 event answers (by ``action_id``, else ``tool_call_id``)."""
        event: ToolEvent | None = None
        action_id = _event_key(item.get("action_id"))
        if action_id is not None:
            event = self._by_event_id.get(action_id)
        if event is None:
            call_id = as_str(item.get("tool_call_id"))
            event = self._by_call_id.get(call_id) if call_id else None
        if event is None or event.result is not None:
            self._unpaired += 1
            return None
        return event

    def meta(self) -> dict[str, Any]:
        n_calls = len(self._response_ids) + self._plain_messages
        return new_meta(
            model=self._model,
            exit_status=self._agent_state,
            final_text=self._final_text,
            task=self._task,
            n_model_calls=n_calls or None,
            finished=self._finished,
            skipped_actions=dict(self._skipped),
            unpaired_observations=self._unpaired,
        )


def _tool_call(
    kind: str, args: dict[str, Any], item: dict[str, Any], tool_meta: dict[str, Any] | None
) -> tuple[str, dict[str, Any] | str]:
    if tool_meta is not None:
        name = as_str(tool_meta.get("function_name"))
        call = _find_call(tool_meta)
        if name and call is not None:
            return name, parse_arguments(dig(call, "function", "arguments"))
        if name:
            return name, _arguments_from_args(kind, args, item)[1]
    return _arguments_from_args(kind, args, item)


def _find_call(tool_meta: dict[str, Any]) -> dict[str, Any] | None:
    wanted = tool_meta.get("tool_call_id")
    choices = dig(tool_meta, "model_response", "choices")
    if not isinstance(choices, list):
        return None
    for choice in choices:
        calls = dig(choice, "message", "tool_calls")
        if isinstance(calls, list):
            for call in calls:
                if isinstance(call, dict) and call.get("id") == wanted:
                    return call
    return None


#: An event's own keys, around its ``args`` (an action) or ``extras`` (an observation).
_ENVELOPE = frozenset(
    {
        "id",
        "source",
        "timestamp",
        "message",
        "action",
        "observation",
        "cause",
        "content",
        "tool_call_metadata",
        "llm_metrics",
        "timeout",
        "hidden",
    }
)


def _fields(item: dict[str, Any], key: str) -> dict[str, Any]:
    """An event's ``args`` or ``extras``. The resolver's ``output.jsonl`` (openhands/resolver, e.g.
    tests/unit/resolver/mock_output/output.jsonl in All-Hands-AI/OpenHands) stores its history flattened:
    ``{"action": "run", "command": ..., "thought": ...}`` and ``{"observation": "run", "content": ...,
    "exit_code": 0}``, the fields beside the envelope instead of under ``args``/``extras``."""
    nested = item.get(key)
    if isinstance(nested, dict):
        return nested
    return {k: v for k, v in item.items() if k not in _ENVELOPE}


def _arguments_from_args(kind: str, args: dict[str, Any], item: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    def present(*keys: str) -> dict[str, Any]:
        return {k: args[k] for k in keys if args.get(k) not in (None, "")}

    tool = ACTION_TOOLS.get(kind, kind)
    if kind == "run":
        arguments = present("command")
        if args.get("is_input"):
            arguments["is_input"] = "true"
        return tool, arguments
    if kind == "run_ipython":
        return tool, present("code")
    if kind == "read":
        return tool, {"command": "view", **present("path", "view_range")}
    if kind == "edit":
        if args.get("command"):
            return tool, present("command", "path", "file_text", "old_str", "new_str", "insert_line")
        # The LLM-based editor (``edit_file``) rewrites a line range with ``content``.
        return "edit_file", present("path", "content", "start", "end")
    if kind == "write":
        return tool, {"command": "create", **present("path"), "file_text": args.get("content", "")}
    if kind == "think":
        return tool, present("thought")
    if kind == "finish":
        message = (
            args.get("final_thought") or args.get("message") or item.get("message") or args.get("thought")
        )
        arguments = {"message": message} if message else {}
        if isinstance(args.get("task_completed"), (str, bool)):
            arguments["task_completed"] = args["task_completed"]
        return tool, arguments
    if kind == "browse":
        return tool, present("url")
    if kind == "browse_interactive":
        return tool, {"code": args.get("browser_actions", "")}
    if kind == "delegate":
        return tool, present("agent", "inputs")
    if kind == "call_tool_mcp":
        name = as_str(args.get("name")) or tool
        inner = args.get("arguments")
        return name, inner if isinstance(inner, dict) else {}
    if kind == "task_tracking":
        return tool, present("command", "task_list")
    return tool, {k: v for k, v in args.items() if k != "thought"}
