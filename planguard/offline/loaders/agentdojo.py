"""AgentDojo run logs: one JSON file per task run, as AgentDojo's ``TraceLogger`` writes them.

``src/agentdojo/logging.py`` (github.com/ethz-spylab/agentdojo; the published package's ``TraceLogger.save``)
writes ``runs/<pipeline>/<suite>/<user_task_id>/<attack_type|none>/<injection_task_id|none>.json``:
``{suite_name, pipeline_name, user_task_id, injection_task_id, attack_type, injections, messages, error,
utility, security, duration, evaluation_timestamp, agentdojo_package_version, ...}``. ``messages`` are
``src/agentdojo/types.py``'s chat messages: ``system``, ``user``, ``assistant`` (``content`` a string or, from
0.1.30, a list of ``{type: "text", content}`` blocks; ``tool_calls``: ``{function, args, id}``) and ``tool``
(``tool_call_id``, ``tool_call``, ``content``, ``error``: the exception text the model saw, or null). Checked
against run logs of agentdojo 0.1.35 published in github.com/deconvolute-labs/interbolt-agentdojo.
"""

from __future__ import annotations

from typing import Any

from planguard.events import ASSISTANT, USER, ToolEvent

from ._base import Trajectory, as_dict, as_str, new_meta, text_of

__all__ = ["FORMAT", "is_agentdojo_run", "load_agentdojo"]

FORMAT = "agentdojo"


def is_agentdojo_run(document: Any) -> bool:
    """A TraceLogger payload: its suite, user task and pipeline beside the messages."""
    return (
        isinstance(document, dict)
        and isinstance(document.get("messages"), list)
        and "suite_name" in document
        and "user_task_id" in document
        and "pipeline_name" in document
    )


def load_agentdojo(document: Any, path: str, run_id: str) -> Trajectory:
    doc = as_dict(document)
    suite, task = as_str(doc.get("suite_name")), as_str(doc.get("user_task_id"))
    attack, injection = as_str(doc.get("attack_type")), as_str(doc.get("injection_task_id"))
    utility = doc.get("utility")
    run = Trajectory(
        id="/".join(x or "none" for x in (as_str(doc.get("pipeline_name")), suite, task, attack, injection)),
        source=path,
        format=FORMAT,
        meta=new_meta(
            instance_id=f"{suite}/{task}" if suite and task else task,
            model=as_str(doc.get("pipeline_name")),
            resolved=utility if isinstance(utility, bool) else None,
            exit_status=as_str(doc.get("error")),
            attack_type=attack,
            injection_task_id=injection,
            security=doc.get("security") if isinstance(doc.get("security"), bool) else None,
        ),
    )
    by_id: dict[str, ToolEvent] = {}
    n_model_calls = 0
    for message in doc.get("messages") or ():
        message = as_dict(message)
        role = message.get("role")
        if role == USER:
            run.add_message(USER, text_of(message.get("content")))
        elif role == ASSISTANT:
            n_model_calls += 1
            run.add_message(ASSISTANT, text_of(message.get("content")))
            for call in message.get("tool_calls") or ():
                call = as_dict(call)
                name = as_str(call.get("function"))
                if not name:
                    continue
                args = call.get("args")
                event = ToolEvent(
                    tool=name,
                    arguments=args if isinstance(args, dict) else {},
                    call_id=as_str(call.get("id")),
                    metadata={"n_model_calls": n_model_calls},
                )
                run.events.append(event)
                if event.call_id:
                    by_id[event.call_id] = event
        elif role == "tool":
            answered = by_id.get(as_str(message.get("tool_call_id")) or "")
            if answered is not None:
                error = as_str(message.get("error"))
                answered.result = text_of(message.get("content")) or error or ""
                answered.is_error = error is not None
    run.meta["n_model_calls"] = n_model_calls
    if task is None:
        run.id = run_id
    return run
