"""What policies answer: a ``Decision`` the integration applies in its framework's idiom."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from .findings import Finding

__all__ = ["ALLOW", "RECORDED_POLICY", "Decision", "DecisionKind"]

#: The policy name of a decision replayed from a recorded denial (a harness or hook refused the call when
#: it was recorded); sinks treat its message as content, since it may quote the call.
RECORDED_POLICY = "recorded"


class DecisionKind(StrEnum):
    ALLOW = "allow"  # run the call
    DENY = "deny"  # do not run the call; the model sees ``message`` as the tool's error
    REMIND = "remind"  # add ``message`` (the plan) to the next model request
    NUDGE = "nudge"  # add ``message`` (a targeted hint) to the next model request
    STOP = "stop"  # end the run gracefully with ``message`` as the final answer
    NOTIFY = "notify"  # tell the outside world (webhook); nothing changes for the agent
    LOG = "log"  # recorded in telemetry only


# CPython 3.11 resolves ``DecisionKind.DENY`` through the enum metaclass's ``__getattr__`` hook on every
# access (about 0.4 µs); ``blocks`` runs on every tool call, so its members are looked up once, here.
_BLOCKING = (DecisionKind.DENY, DecisionKind.STOP)
_INJECTING = (DecisionKind.REMIND, DecisionKind.NUDGE)


@dataclass(frozen=True, slots=True)
class Decision:
    kind: DecisionKind
    message: str = ""
    policy: str = ""  # name of the policy that decided
    finding: Finding | None = None
    # Delivered only in the next model request (not persisted in the agent's history) when True.
    ephemeral: bool = True

    @property
    def blocks(self) -> bool:
        """The tool call must not run."""
        return self.kind in _BLOCKING

    @property
    def injects(self) -> bool:
        """The decision carries text for the model's next request."""
        return self.kind in _INJECTING


ALLOW = Decision(DecisionKind.ALLOW)
