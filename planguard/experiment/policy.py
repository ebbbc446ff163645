"""``ExperimentPolicy``: runs one arm per session live and labels its decision-window endpoint.

Injection goes through the runtime's own mechanism: a REMIND decision at the session's first model call
(persisted, so the plan stays in the agent's history as the paper's plans remain visible) and periodic
reminders by the runtime's ``ReminderConfig`` rules. The no-plan arm injects nothing.

The endpoint is decided from the calls inside the window (paper §3.1), O(1) per event:

* before a call: preparation calls (``ignore``) pass; a write or a call outside ``reads`` ends the window
  as WRITE and, by default, is denied so it never changes state;
* after a call: a failed call ends it as ERROR; otherwise the read is labelled A, B, BOTH or OTHER;
* at a model call: the previous response had no tool call → YIELD; more than ``budget`` responses → BUDGET;
* at the end of the run: an open window ends as YIELD (last response had no call) or BUDGET.

With ``window.stop_agent`` the run is stopped at its next model call once the window has closed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..decisions import Decision, DecisionKind
from ..events import ToolEvent
from ..policies._plan_view import REMINDER_PREFIX
from ..stages import Policy
from .config import ARM_KEY, ArmConfig, ExperimentConfig, assign_arm
from .endpoints import Endpoint, MatcherSet

if TYPE_CHECKING:
    from ..session import Session
    from ..step import Step

__all__ = ["RESULT_KEY", "ExperimentPolicy", "result_record"]

#: Session metadata key holding the finished result record (read by :class:`ResultRecorder`).
RESULT_KEY = "planguard.experiment.result"

FIRST_TEMPLATE = f"{REMINDER_PREFIX} (planguard: the plan for this task)\n{{plan}}"
PERIODIC_TEMPLATE = (
    f"{REMINDER_PREFIX} (automatic reminder from planguard of the plan you were given; not a new "
    "instruction)\n{plan}"
)


@dataclass(slots=True)
class _State:
    arm: ArmConfig | None = None
    assign_error: str | None = None
    endpoint: Endpoint | None = None
    endpoint_step: int | None = None
    endpoint_tool: str | None = None
    window_calls: int = 0  # model responses requested while the window was open
    attempts: int = 0  # tool calls attempted (including denied ones)
    attempts_at_model: int = 0  # attempts when the previous model call was made
    last_failed: bool = False
    stop_sent: bool = False
    reminders: int = 0
    last_reminder_call: int = 0
    # The label computed before the call, reused after it (None: not computed for this step).
    pending_step: int = -1
    pending_label: Endpoint | None = None
    pending_ignored: bool = False


class ExperimentPolicy(Policy):
    """Put it first among the policies so that it sees every attempted call."""

    name = "experiment"

    def __init__(self, config: ExperimentConfig, *, base_dir: str | Path | None = None) -> None:
        self.config = config
        base = Path(base_dir) if base_dir is not None else None
        # Plan files are read once, here: a missing file is a config error, not a failure mid-run.
        self._plans: dict[str, str | None] = {a.name: a.plan_text(base) for a in config.arms}
        self._every = config.reminder.every_model_calls if config.reminder.enabled else None
        self._cap = config.reminder.max_per_session
        self._ephemeral = config.reminder.delivery == "ephemeral"
        self._window = config.window
        self._a = MatcherSet(config.targets.a)
        self._b = MatcherSet(config.targets.b)
        self._ignore = MatcherSet(config.ignore)
        self._writes = MatcherSet(config.writes)
        self._reads = MatcherSet(config.reads) if config.reads is not None else None

    def new_state(self) -> _State:
        return _State()

    # ------------------------------------------------------------------ hooks

    def before_model(self, session: Session, state: _State) -> Iterable[Decision]:
        arm = self._arm(session, state)
        calls = session.n_model_calls
        if state.endpoint is None and calls > 1:
            if state.attempts == state.attempts_at_model:
                self._close(state, Endpoint.YIELD, None)
            elif state.window_calls >= self._window.budget:
                self._close(state, Endpoint.BUDGET, None)
        if state.endpoint is None:
            state.window_calls += 1
        state.attempts_at_model = state.attempts
        if state.endpoint is not None and self._window.stop_agent and not state.stop_sent:
            state.stop_sent = True
            return (self._stop(state),)
        plan = self._plans.get(arm.name) if arm is not None else None
        if plan is None:
            return ()
        if calls == 1:
            state.last_reminder_call = calls
            return (Decision(DecisionKind.REMIND, FIRST_TEMPLATE.format(plan=plan), self.name, None, False),)
        every = self._every
        if (
            every is not None
            and calls - state.last_reminder_call >= every
            and (self._cap is None or state.reminders < self._cap)
        ):
            state.reminders += 1
            state.last_reminder_call = calls
            return (
                Decision(
                    DecisionKind.REMIND, PERIODIC_TEMPLATE.format(plan=plan), self.name, None, self._ephemeral
                ),
            )
        return ()

    def before_tool(self, step: Step, session: Session, state: _State) -> Decision | None:
        self._arm(session, state)
        state.attempts += 1
        if state.endpoint is not None:
            return None
        event = step.event
        ignored = self._ignore.matches(event)
        label = None if ignored else self._label(event)
        state.pending_step, state.pending_label, state.pending_ignored = step.index, label, ignored
        if ignored or label is not None:
            return None
        if self._writes.matches(event) or (self._reads is not None and not self._reads.matches(event)):
            self._close(state, Endpoint.WRITE, step)
            if self._window.block_writes:
                return Decision(
                    DecisionKind.DENY,
                    "planguard experiment: this call is outside the approved read set and was not run.",
                    self.name,
                )
        return None

    def after_tool(self, step: Step, session: Session, state: _State) -> Iterable[Decision]:
        if state.endpoint is not None:
            return ()
        event = step.event
        if event.failed:
            if self._window.retry_errors:
                state.last_failed = True
            else:
                self._close(state, Endpoint.ERROR, step)
            return ()
        state.last_failed = False
        if state.pending_step == step.index:
            ignored, label = state.pending_ignored, state.pending_label
        else:  # the integration reported only the result
            ignored = self._ignore.matches(event)
            label = None if ignored else self._label(event)
        if ignored:
            return ()
        self._close(state, label or Endpoint.OTHER, step)
        if self._window.stop_agent and not state.stop_sent:
            # Stop at the next model call: the measured read has run and its result is in the history.
            state.stop_sent = True
            session.queue(self._stop(state))
        return ()

    def on_end(self, session: Session, state: _State) -> Iterable[Decision]:
        self._arm(session, state)
        if state.endpoint is None:
            if (session.n_model_calls == 0 and state.attempts == 0) or state.last_failed:
                # The executor never answered, or the window's last call failed (retry_errors).
                self._close(state, Endpoint.ERROR, None)
            elif state.attempts > state.attempts_at_model and state.window_calls >= self._window.budget:
                self._close(state, Endpoint.BUDGET, None)
            else:
                self._close(state, Endpoint.YIELD, None)
        record = result_record(self.config, session, state)
        session.metadata[RESULT_KEY] = record
        # A LOG decision puts the result on the session span (event) and in the session store file.
        return (Decision(DecisionKind.LOG, json.dumps(record, default=str, sort_keys=True), self.name),)

    # ------------------------------------------------------------------ internals

    def _arm(self, session: Session, state: _State) -> ArmConfig | None:
        if state.arm is None and state.assign_error is None:
            explicit = session.metadata.get(ARM_KEY)
            try:
                state.arm = assign_arm(self.config, session.id, None if explicit is None else str(explicit))
            except ValueError as exc:
                state.assign_error = str(exc)
        return state.arm

    def _label(self, event: ToolEvent) -> Endpoint | None:
        a = self._a.matches(event)
        b = self._b.matches(event)
        if a and b:
            return Endpoint.BOTH
        if a:
            return Endpoint.A
        if b:
            return Endpoint.B
        return None

    @staticmethod
    def _close(state: _State, endpoint: Endpoint, step: Step | None) -> None:
        state.endpoint = endpoint
        if step is not None:
            state.endpoint_step = step.index
            state.endpoint_tool = step.event.tool

    def _stop(self, state: _State) -> Decision:
        label = state.endpoint.value if state.endpoint is not None else "?"
        return Decision(
            DecisionKind.STOP,
            f"planguard experiment: decision window closed ({label}); run stopped.",
            self.name,
        )


def _jsonable(v: Any) -> Any:
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return str(v)


def result_record(config: ExperimentConfig, session: Session, state: Any) -> dict[str, Any]:
    """The one result record of a finished session (what the report reads)."""
    meta: Mapping[str, Any] = session.metadata
    arm: ArmConfig | None = state.arm
    task = meta.get("task")
    return {
        "type": "result",
        "experiment": config.name,
        "session_id": session.id,
        "arm": arm.name if arm is not None else None,
        "condition": arm.condition if arm is not None else None,
        "text": arm.text if arm is not None else None,
        "task": _jsonable(task if task is not None else session.id),
        "cluster": _jsonable(meta.get("cluster")),
        "repeat": _jsonable(meta.get("repeat")),
        "endpoint": state.endpoint.value if state.endpoint is not None else None,
        "endpoint_step": state.endpoint_step,
        "endpoint_tool": state.endpoint_tool,
        "model_calls": session.n_model_calls,
        "tool_calls": state.attempts,
        "tokens": _jsonable(meta.get("tokens")),
        "success": _jsonable(meta.get("success")),
        "meta": {
            k: _jsonable(v) for k, v in meta.items() if isinstance(k, str) and not k.startswith("planguard.")
        },
        "error": state.assign_error,
        "ended_at": time.time(),
    }
