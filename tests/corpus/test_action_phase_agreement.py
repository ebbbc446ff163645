"""The action layer and the live phase layer read every call once, the same way (issue #29).

Over every shell call of the shared recorded runs (``realtraj/`` and the SWE-agent trajectories) the two
layers must agree on what the call is: a test run or a check, a write to a source file, a write to a test or
scratch script. Both are made from one reading (:mod:`planguard.shell.reading`), one table of programs
(:mod:`planguard.tools.programs`) and one path model (:mod:`planguard.tools.paths`).

The mapping between the two vocabularies, where the papers define a thing differently:

* the action's ``is_validation`` is the phases' "runs something that checks behaviour": r/v (the
  repository's tests, checks and builds) and R/V runs (a script or snippet the run created, the
  repository's program). A check before the first patch is general to the phases (PHASES_LIVE §5) and a
  validation to the action layer, so the phases are compared as they judge the call after a patch;
* a write the action layer does not count as a source write is R/V to the phases when it writes a test
  target or a script outside the repository (``write_kind == W_TEST``), and general otherwise (logs,
  backups, notes, artifacts); a removal is cleanup (general) unless it removes a source file.
"""

from __future__ import annotations

import copy
from pathlib import Path

from planguard import Config, Guard
from planguard.actions.classify import DEFAULT_CLASSIFIER
from planguard.actions.types import Action, ActionType, WriteKind
from planguard.events import ToolEvent
from planguard.offline.loaders import Trajectory, iter_trajectories
from planguard.phases import PATCH, VALIDATE_NEW, VALIDATE_REGRESSION
from planguard.session import Session
from planguard.sinks.store.config import StoreConfig
from planguard.tools.paths import W_TEST, write_kind

_VALIDATES = (VALIDATE_NEW, VALIDATE_REGRESSION)


def _facts_of_action(action: Action) -> tuple[bool, bool]:
    """(writes a source file, validates or writes a test script) as the action layer says."""
    writes = action.type is ActionType.FILE_WRITE
    source = writes and action.is_source_write
    test_write = (
        writes
        and action.write is not WriteKind.DELETE
        and not action.is_source_write
        and action.target is not None
        and write_kind(action.target) == W_TEST
    )
    return source, action.is_validation or test_write


def _facts_of_phases(session: Session, event: ToolEvent) -> tuple[bool, bool]:
    """The same two facts as the live phases say, judging the call as after a patch."""
    state = copy.deepcopy(session.phase_state)
    state.has_patch = True
    roles = session.pipeline.rules.classify(event, state).roles
    return PATCH in roles, any(r in _VALIDATES for r in roles)


def _disagreements(paths: list[Path]) -> tuple[int, list[str]]:
    guard = Guard(Config(store=StoreConfig(enabled=False)))  # nothing written into the repository
    calls = 0
    out: list[str] = []
    for n, trajectory in enumerate(iter_trajectories(paths)):
        if not isinstance(trajectory, Trajectory):
            continue
        session = guard.session(f"agreement-{n}")
        for event in trajectory.events:
            shell = DEFAULT_CLASSIFIER.tool_call(event).kind == "shell"
            phases = _facts_of_phases(session, event) if shell else None
            step = session.observe(event)
            if phases is None or step.action is None:
                continue
            calls += 1
            action = _facts_of_action(step.action)
            if action != phases:
                out.append(
                    f"{trajectory.source}: {str(event.arguments)[:120]!r}: action (source write, validates) "
                    f"{action}, phases {phases}"
                )
        session.end()
    return calls, out


def test_actions_and_phases_agree_on_every_recorded_shell_call(shared: Path) -> None:
    data = shared / "data"
    calls, disagreements = _disagreements([data / "realtraj", data / "swe-agent" / "trajectories.jsonl"])
    assert calls > 1000
    assert not disagreements, f"{len(disagreements)} of {calls}:\n" + "\n".join(disagreements)
