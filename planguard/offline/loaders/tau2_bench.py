"""tau2-bench simulation files: ``{timestamp, info, tasks, simulations}``, one run per simulation.

This is ``Results`` of ``src/tau2/data_model/simulation.py`` (github.com/sierra-research/tau2-bench,
checked at commit a2c0247), which ``tau2 run`` saves under ``data/simulations/``. Each ``SimulationRun``
holds its ``messages`` (``src/tau2/data_model/message.py``): ``assistant`` and ``user`` messages with
``content`` and ``tool_calls`` (``{id, name, arguments, requestor}``), and ``tool`` messages (``{id,
content, requestor, error}``, or a ``MultiToolMessage`` holding ``tool_messages``). In the dual-control
domains (telecom) the simulated user calls tools of its own on its phone: those calls (``requestor: user``)
are counted in the run's metadata, not made the agent's steps. The user's and the assistant's texts are
conversation turns. A full-duplex (voice) simulation records ``ticks`` instead of messages and is not read.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from planguard.events import ASSISTANT, USER, ToolEvent

from ._base import (
    LoadError,
    Trajectory,
    as_dict,
    as_str,
    checked_run,
    new_meta,
    parse_arguments,
    parse_time,
    text_of,
)

__all__ = ["FORMAT", "is_tau2_results", "load_tau2"]

FORMAT = "tau2-bench"


def is_tau2_results(document: Any) -> bool:
    """A ``Results`` object: ``simulations`` and ``tasks`` lists beside ``info``."""
    return (
        isinstance(document, dict)
        and isinstance(document.get("simulations"), list)
        and isinstance(document.get("tasks"), list)
        and "info" in document
    )


def load_tau2(document: Any, path: str) -> Iterator[Trajectory | LoadError]:
    """One run per simulation, in file order; one that cannot be read is a LoadError naming it."""
    info = as_dict(as_dict(document).get("info"))
    agent_model = as_str(as_dict(info.get("agent_info")).get("llm"))
    domain = as_str(as_dict(info.get("environment_info")).get("domain_name"))
    for index, simulation in enumerate(as_dict(document).get("simulations") or ()):
        where = f"{path}: simulations[{index}]"
        if not isinstance(simulation, dict):
            yield LoadError(path, f"simulations[{index}] is not an object; expected a simulation run")
            continue
        if not isinstance(simulation.get("messages"), list):
            reason = "a full-duplex simulation (ticks), which is not read" if simulation.get("ticks") else ""
            yield LoadError(path, f"simulations[{index}]: no 'messages' list; {reason or 'expected one'}")
            continue
        run = Trajectory(
            id=str(simulation.get("id") or f"simulation-{index}"),
            source=path,
            format=FORMAT,
            meta=new_meta(
                instance_id=as_str(simulation.get("task_id")),
                run=str(simulation["trial"]) if simulation.get("trial") is not None else None,
                model=agent_model,
                exit_status=as_str(simulation.get("termination_reason")),
                domain=domain,
            ),
        )
        reward = as_dict(simulation.get("reward_info")).get("reward")
        if isinstance(reward, (int, float)) and not isinstance(reward, bool):
            run.meta.update(reward=reward, resolved=reward == 1)
        _read_messages(run, simulation["messages"])
        yield from checked_run(run, simulation, where, None)


def _read_messages(run: Trajectory, messages: list[Any]) -> None:
    agent_calls: dict[str, ToolEvent] = {}
    user_calls: list[str] = []
    n_model_calls = 0
    for message in messages:
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        at = parse_time(message.get("timestamp"))
        if role in (ASSISTANT, USER):
            if role == ASSISTANT:
                n_model_calls += 1
            run.add_message(role, text_of(message.get("content")), at)
            for call in message.get("tool_calls") or ():
                call = as_dict(call)
                name = as_str(call.get("name"))
                if not name:
                    continue
                if call.get("requestor", role) == USER:  # the simulated user's own device tools
                    user_calls.append(name)
                    continue
                event = ToolEvent(
                    tool=name,
                    arguments=parse_arguments(call.get("arguments")),
                    call_id=as_str(call.get("id")),
                    start_time=at,
                    metadata={"n_model_calls": n_model_calls},
                )
                run.events.append(event)
                if event.call_id:
                    agent_calls[event.call_id] = event
        elif role == "tool":
            for answer in message.get("tool_messages") or (message,):  # a MultiToolMessage, or one
                answer = as_dict(answer)
                answered = agent_calls.get(as_str(answer.get("id")) or "")
                if answered is not None:
                    answered.result = text_of(answer.get("content"))
                    answered.is_error = answer.get("error") is True
                    answered.end_time = parse_time(answer.get("timestamp"))
    run.meta["n_model_calls"] = n_model_calls
    run.meta["user_tool_calls"] = len(user_calls)
    run.meta["user_tools"] = sorted(set(user_calls))
