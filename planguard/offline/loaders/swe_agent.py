"""SWE-agent: the shared one-run-per-line corpus, native ``.traj`` files (0.x and 1.x) and demonstrations.

One event per SWE-agent step, think steps (empty action) included as tool ``""``, because the paper's
per-step labels are indexed by step. A step's tool call is taken from ``tool_calls`` when the run used
function calling (recovered from ``history`` for ``.traj`` files, which do not store it per step), and the
step's byte-exact action string is kept in ``ToolEvent.action`` either way.
"""

from __future__ import annotations

from typing import Any

from planguard.events import THINK_TOOL, ToolEvent

from ._base import (
    LoadError,
    Trajectory,
    as_dict,
    as_float,
    as_int,
    as_str,
    coerce_content,
    coerce_mapping,
    dig,
    new_meta,
    parse_arguments,
    text_of,
    type_name,
)

__all__ = ["load_demo_document", "load_jsonl_record", "load_traj_document", "resolved_from_status"]

# How far ahead in ``history`` a step's assistant message may sit. Steps and assistant messages pair up
# one-to-one except around think steps and auto-submission, so a short window keeps matching linear.
_HISTORY_LOOKAHEAD = 4


def resolved_from_status(status: Any) -> bool | None:
    if status == "resolved":
        return True
    if status in ("unresolved", "not_resolved"):
        return False
    return None


# --------------------------------------------------------------------------------------------------
# The shared corpus: {"id", "run", ..., "steps": [{"i", "action", "tool_calls", "observation_head", ...}]}
# --------------------------------------------------------------------------------------------------


def load_jsonl_record(record: Any, path: str, line: int) -> Trajectory:
    """One line of the shared SWE-agent JSONL corpus; a malformed step is named with what is wrong in it."""
    if not isinstance(record, dict):
        raise LoadError(path, f"expected a JSON object (one trajectory), got {type_name(record)}", line)
    run_id = record.get("id")
    if not isinstance(run_id, str) or not run_id:
        got = "missing" if run_id is None else f"a {type_name(run_id)}"
        raise LoadError(path, f"'id' is {got}; expected a non-empty string", line)
    steps = record.get("steps")
    if not isinstance(steps, list):
        got = "missing" if "steps" not in record else f"a {type_name(steps)}"
        raise LoadError(path, f"'steps' is {got}; expected an array of step objects", line)

    events: list[ToolEvent] = []
    for index, step in enumerate(steps):
        problem = _step_problem(step)
        if problem is not None:
            raise LoadError(path, f"steps[{index}]: {problem}", line)
        action = step["action"]
        metadata = {
            "step": index,
            "observation_chars": step.get("observation_chars"),
            "thought_chars": step.get("thought_chars"),
        }
        events.append(_step_event(action, step.get("tool_calls"), step.get("observation_head"), metadata))

    status = record.get("resolution_status")
    meta = new_meta(
        instance_id=as_str(record.get("instance_id")),
        run=as_str(record.get("run")),
        resolution_status=as_str(status),
        resolved=resolved_from_status(status),
        exit_status=as_str(record.get("exit_status")),
        n_steps=as_int(record.get("n_steps")),
        swe_agent_version=as_str(record.get("swe_agent_version")),
        swe_agent_hash=as_str(record.get("swe_agent_hash")),
        upstream=record.get("source"),
        observations_truncated=True,
    )
    return Trajectory(id=run_id, source=f"{path}:{line}", format="swe-agent-jsonl", events=events, meta=meta)


def _step_problem(step: Any) -> str | None:
    """What is wrong with one step of the corpus (None: nothing)."""
    if not isinstance(step, dict):
        return f"expected a step object, got {type_name(step)}"
    if "action" not in step:
        return "'action' is missing; expected the SWE-agent action string"
    if not isinstance(step["action"], str):
        return f"'action' is a {type_name(step['action'])}; expected a string"
    observation = step.get("observation_head")
    if observation is not None and not isinstance(observation, str):
        return f"'observation_head' is a {type_name(observation)}; expected a string or null"
    calls = step.get("tool_calls")
    if not calls:
        return None
    if not isinstance(calls, list):
        return f"'tool_calls' is a {type_name(calls)}; expected null or an array of tool calls"
    call = calls[0]
    if not isinstance(call, dict) or not isinstance(call.get("function"), dict):
        return "tool_calls[0] has no 'function' object; expected {'function': {'name', 'arguments'}, 'id'}"
    function = call["function"]
    if not isinstance(function.get("name"), str):
        return "tool_calls[0].function.name is missing or not a string"
    if not isinstance(function.get("arguments"), (str, dict)):
        return "tool_calls[0].function.arguments is missing; expected a JSON string or an object"
    return None


# --------------------------------------------------------------------------------------------------
# Native .traj files: {"trajectory": [...], "history": [...], "info": {...}, "replay_config": ...}
# --------------------------------------------------------------------------------------------------


def load_traj_document(doc: Any, path: str, run_id: str) -> Trajectory:
    if not isinstance(doc, dict):
        raise LoadError(path, f"expected a SWE-agent trajectory object, got {type_name(doc)}")
    steps = doc.get("trajectory")
    if steps is None:
        return load_demo_document(doc, path, run_id)
    if not isinstance(steps, list):
        raise LoadError(path, f"'trajectory' is a {type_name(steps)}; expected an array of steps")
    history = doc.get("history")
    if history is not None and not isinstance(history, list):
        raise LoadError(path, f"'history' is a {type_name(history)}; expected an array of messages")
    assistant = [
        m
        for m in history or ()
        if isinstance(m, dict) and m.get("role") == "assistant" and not m.get("is_demo")
    ]

    events: list[ToolEvent] = []
    cursor = 0
    final_text: str | None = None
    for index, step in enumerate(steps):
        if not isinstance(step, dict):
            raise LoadError(path, f"trajectory[{index}] is a {type_name(step)}; expected a step object")
        action = step.get("action")
        if not isinstance(action, str):
            raise LoadError(path, f"trajectory[{index}].action is {type_name(action)}; expected a string")
        message = None
        for probe in range(cursor, min(cursor + _HISTORY_LOOKAHEAD, len(assistant))):
            candidate = assistant[probe].get("action")
            if isinstance(candidate, str) and (candidate == action or candidate.strip() == action.strip()):
                message = assistant[probe]
                cursor = probe + 1
                break
        thought = as_str(step.get("thought")) or as_str(step.get("response")) or ""
        if thought.strip():
            final_text = thought
        metadata: dict[str, Any] = {"step": index, "thought": thought}
        execution_time = as_float(step.get("execution_time"))
        if execution_time is not None:
            metadata["execution_time"] = execution_time
        metadata.update(_state_facts(step.get("state")))
        observation = step.get("observation")
        result = observation if isinstance(observation, str) else text_of(coerce_content(observation))
        events.append(_step_event(action, message.get("tool_calls") if message else None, result, metadata))

    info = coerce_mapping(doc.get("info")) or {}
    replay = coerce_mapping(doc.get("replay_config")) or {}
    stats = coerce_mapping(info.get("model_stats")) or {}
    meta = new_meta(
        instance_id=as_str(dig(replay, "problem_statement", "id")),
        model=_model_name(replay),
        exit_status=as_str(info.get("exit_status")),
        final_text=final_text,
        task=_task_text(replay, history or []),
        n_model_calls=as_int(stats.get("api_calls")),
        submission=as_str(info.get("submission")),
        swe_agent_version=as_str(info.get("swe_agent_version")),
        environment=as_str(doc.get("environment")),
        cost=as_float(stats.get("instance_cost")),
    )
    return Trajectory(id=run_id, source=path, format="swe-agent-traj", events=events, meta=meta)


def load_demo_document(doc: Any, path: str, run_id: str) -> Trajectory:
    """A demonstration (``history`` only, JSON ``.traj`` or YAML): SWE-agent's ``traj-to-demo`` output.

    Without ``trajectory`` the steps are the assistant messages of ``history``; their observation is the
    next tool/user message. YAML demos omit the action string, so ``action`` stays ``None`` there and
    classifiers fall back to ``tool``/``arguments``.
    """
    if not isinstance(doc, dict):
        raise LoadError(path, f"expected a SWE-agent demonstration object, got {type_name(doc)}")
    history = doc.get("history")
    if not isinstance(history, list):
        got = "missing" if history is None else f"a {type_name(history)}"
        raise LoadError(path, f"'history' is {got}; expected an array of chat messages (or a 'trajectory')")
    events: list[ToolEvent] = []
    final_text: str | None = None
    pending: ToolEvent | None = None
    for index, message in enumerate(history):
        if not isinstance(message, dict):
            raise LoadError(path, f"history[{index}] is a {type_name(message)}; expected a message object")
        role = message.get("role")
        if message.get("is_demo"):
            continue
        if role == "assistant":
            text = text_of(coerce_content(message.get("content")))
            if text.strip():
                final_text = text
            calls = message.get("tool_calls")
            action = message.get("action")
            if not calls and not isinstance(action, str):
                pending = None
                continue
            metadata: dict[str, Any] = {
                "step": len(events),
                "thought": as_str(message.get("thought")) or text,
            }
            pending = _step_event(action if isinstance(action, str) else None, calls, None, metadata)
            events.append(pending)
        elif role in ("tool", "user") and pending is not None:
            pending.result = text_of(coerce_content(message.get("content")))
            pending = None
    replay = coerce_mapping(doc.get("replay_config")) or {}
    meta = new_meta(
        instance_id=as_str(dig(replay, "problem_statement", "id")),
        model=_model_name(replay),
        final_text=final_text,
        task=_task_text(replay, history),
        demonstration=True,
    )
    return Trajectory(id=run_id, source=path, format="swe-agent-demo", events=events, meta=meta)


def _step_event(action: str | None, calls: Any, result: str | None, metadata: dict[str, Any]) -> ToolEvent:
    if isinstance(calls, list) and calls and isinstance(calls[0], dict):
        call = calls[0]
        function = as_dict(call.get("function"))
        name = function.get("name") if isinstance(function.get("name"), str) else None
        if name:
            if len(calls) > 1:
                metadata["extra_tool_calls"] = calls[1:]
            return ToolEvent(
                tool=name,
                arguments=parse_arguments(function.get("arguments")),
                call_id=as_str(call.get("id")),
                action=action,
                result=result,
                metadata=metadata,
            )
    if action:
        return ToolEvent.shell(action, result=result, metadata=metadata)
    return ToolEvent(
        tool=THINK_TOOL,
        arguments={},
        action="" if action is not None else None,
        result=result,
        metadata=metadata,
    )


def _state_facts(state: Any) -> dict[str, Any]:
    # 1.1 raw trajectories put the whole repo diff into every step's state; keep only the cheap facts.
    mapping = state if isinstance(state, dict) else None
    if mapping is None and isinstance(state, str) and len(state) < 4096:
        mapping = coerce_mapping(state)
    if mapping is None and isinstance(state, str):
        facts: dict[str, Any] = {}
        for key in ("working_dir", "open_file"):
            marker = f"'{key}': '"
            start = state.find(marker)
            if start >= 0:
                start += len(marker)
                end = state.find("'", start)
                if end > start:
                    facts[key] = state[start:end]
        return facts
    if mapping is None:
        return {}
    return {k: mapping[k] for k in ("working_dir", "open_file") if isinstance(mapping.get(k), str)}


def _model_name(replay: dict[str, Any]) -> str | None:
    model = dig(replay, "agent", "model")
    if model is None:
        return None
    return as_str(dig(model, "name")) or as_str(dig(model, "model_name"))


def _task_text(replay: dict[str, Any], history: list[Any]) -> str | None:
    text = as_str(dig(replay, "problem_statement", "text"))
    if text:
        return text
    for message in history:
        if isinstance(message, dict) and message.get("role") == "user" and not message.get("is_demo"):
            return text_of(coerce_content(message.get("content"))) or None
    return None
