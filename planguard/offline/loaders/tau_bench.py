"""tau-bench results: a JSON list of ``{task_id, reward, info, traj, trial}``, one per task and trial.

This is ``EnvRunResult`` of ``tau_bench/types.py`` (github.com/sierra-research/tau-bench), which
``tau_bench/run.py`` writes and the repository publishes under ``historical_trajectories/`` (checked:
``gpt-4o-airline.json`` at commit 59a200c). ``traj`` is the tool-calling agent's chat in OpenAI's format:
``system``, ``user`` (the simulated user), ``assistant`` (text and/or ``tool_calls`` with
``function.name``/``function.arguments``, a JSON string) and ``tool`` messages (``tool_call_id``,
``content``). Each call is a step with its result; the user's and the assistant's texts are conversation
turns (a plan's ``match: {message: ...}`` reads them, so a replayed run scores ``confirm`` as a live one).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from planguard.events import ASSISTANT, USER, ToolEvent

from ._base import LoadError, Trajectory, as_dict, as_str, checked_run, new_meta, parse_arguments, text_of

__all__ = ["FORMAT", "is_tau_bench_results", "load_tau_bench"]

FORMAT = "tau-bench"
#: The simulated user's end-of-conversation token (tau_bench/envs/user.py): not something it said.
STOP_TOKEN = "###STOP###"


def is_tau_bench_results(document: Any) -> bool:
    """A list of ``EnvRunResult`` objects (its first items have ``task_id`` and ``traj``)."""
    if not isinstance(document, list) or not document:
        return False
    sample = [item for item in document[:8] if isinstance(item, dict)]
    return bool(sample) and all("traj" in item and "task_id" in item for item in sample)


def load_tau_bench(document: Any, path: str) -> Iterator[Trajectory | LoadError]:
    """One run per result (task and trial), in file order; a malformed result is a LoadError naming it."""
    for index, result in enumerate(document if isinstance(document, list) else []):
        where = f"{path}[{index}]"
        if not isinstance(result, dict) or not isinstance(result.get("traj"), list):
            yield LoadError(where, "expected a result object with a 'traj' list of chat messages")
            continue
        run = _run(result, path)
        yield from checked_run(run, result, where, None)


def _run(result: dict[str, Any], path: str) -> Trajectory:
    task_id, trial = result.get("task_id"), result.get("trial")
    reward = result.get("reward")
    task = as_dict(as_dict(result.get("info")).get("task"))
    run = Trajectory(
        id=f"task-{task_id}" + (f"-trial-{trial}" if trial is not None else ""),
        source=path,
        format=FORMAT,
        meta=new_meta(
            instance_id=str(task_id) if task_id is not None else None,
            run=str(trial) if trial is not None else None,
            resolved=reward == 1 if isinstance(reward, (int, float)) else None,
            task=as_str(task.get("instruction")),
            reward=reward,
        ),
    )
    read_chat(run, result["traj"])
    return run


def read_chat(run: Trajectory, messages: list[Any]) -> None:
    """OpenAI chat messages into ``run``: each tool call a step (its result from the ``tool`` message that
    answers it), each user and assistant text a turn. Shared by the formats that record such chats."""
    by_id: dict[str, ToolEvent] = {}
    n_model_calls = 0
    for message in messages:
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        if role == "assistant":
            n_model_calls += 1
            run.add_message(ASSISTANT, text_of(message.get("content")))
            for call in message.get("tool_calls") or ():
                fn = as_dict(as_dict(call).get("function"))
                name = as_str(fn.get("name"))
                if not name:
                    continue
                call_id = as_str(as_dict(call).get("id"))
                event = ToolEvent(
                    tool=name,
                    arguments=parse_arguments(fn.get("arguments")),
                    call_id=call_id,
                    metadata={"n_model_calls": n_model_calls},
                )
                run.events.append(event)
                if call_id:
                    by_id[call_id] = event
        elif role == "tool":
            answered = by_id.get(as_str(message.get("tool_call_id")) or "")
            if answered is not None:
                answered.result = text_of(message.get("content"))
                # tau_bench/envs/base.py answers a tool's exception with f"Error: {e}"
                answered.is_error = answered.result.startswith("Error:")
        elif role == "user":
            text = text_of(message.get("content"))
            if text.strip() != STOP_TOKEN:
                run.add_message(USER, text)
    run.meta["n_model_calls"] = n_model_calls
