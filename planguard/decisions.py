"""What policies answer: a ``Decision`` the integration applies in its framework's idiom."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from .findings import Finding

__all__ = ["ALLOW", "OWN_POLICIES", "RECORDED_POLICY", "Decision", "DecisionKind", "is_own_text"]

#: The policy name of a decision replayed from a recorded denial (a harness or hook refused the call when
#: it was recorded); sinks treat its message as content, since it may quote the call.
RECORDED_POLICY = "recorded"
#: The names of planguard's own policies (and its gates', ``gate:<name>``): their messages are planguard's
#: text, from its templates and the plan. Any other policy's message is content, since it may quote the
#: call (sinks without content drop it). A custom policy may not take one of these names.
OWN_POLICIES = frozenset({"reminder", "responses", "violations", "todo", "experiment"})
GATE_PREFIX = "gate:"
#: Own policies whose messages quote what the agent wrote (the todo policy names its todo items: a card
#: number, an e-mail): content, which sinks without content drop.
_QUOTES_CONTENT = frozenset({"todo"})


class DecisionKind(StrEnum):
    ALLOW = "allow"  # run the call
    DENY = "deny"  # do not run the call; the model sees ``message`` as the tool's error
    REMIND = "remind"  # add ``message`` (the plan) to the next model request
    NUDGE = "nudge"  # add ``message`` (a targeted hint) to the next model request
    STOP = "stop"  # end the run gracefully with ``message`` as the final answer
    NOTIFY = "notify"  # tell the outside world (webhook); nothing changes for the agent
    LOG = "log"  # recorded in telemetry only


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
        return self.kind is DecisionKind.DENY or self.kind is DecisionKind.STOP

    @property
    def injects(self) -> bool:
        """The decision carries text for the model's next request."""
        return self.kind is DecisionKind.REMIND or self.kind is DecisionKind.NUDGE


ALLOW = Decision(DecisionKind.ALLOW)


def is_own_text(decision: Decision) -> bool:
    """Whether ``decision``'s message is planguard's own text (a plan reminder, a gate's refusal from its
    template) rather than content: one answering a finding quotes its evidence, a recorded harness denial
    the harness's reason, and a custom policy's may quote anything."""
    if decision.finding is not None:
        return False
    policy = decision.policy
    if policy in _QUOTES_CONTENT:
        return False
    return policy in OWN_POLICIES or policy.startswith(GATE_PREFIX)


def is_reserved_policy_name(name: str) -> bool:
    """Whether a custom policy's ``name`` is one of planguard's own (see :data:`OWN_POLICIES`)."""
    return name in OWN_POLICIES or name.startswith(GATE_PREFIX) or name == RECORDED_POLICY
