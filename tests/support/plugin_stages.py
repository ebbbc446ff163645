"""Stages a user would write, for tests/unit/test_plugins.py: named in config, by entry point, or in code."""

from __future__ import annotations

from typing import Any, ClassVar

from planguard import Decision, DecisionKind, Detector, Finding, Policy, Sink
from planguard.session import Session, SessionSummary
from planguard.step import Step


class ToolNamed(Detector):
    """A finding each time a call to ``tool`` runs (the simplest real predicate: a tool that needs review)."""

    name = "tool_named"

    def __init__(self, tool: str = "deploy") -> None:
        self.tool = tool

    def new_state(self) -> list[int]:
        return [0]  # calls seen so far in this session

    def observe(self, step: Step, state: list[int]) -> Finding | None:
        if step.event.tool != self.tool:
            return None
        state[0] += 1
        return Finding(self.name, step.index, step.index, f"{self.tool} call #{state[0]}")


class Collecting(Sink):
    """Keeps what it receives, per instance; ``instances`` lets a test find one the config built."""

    instances: ClassVar[list[Collecting]] = []

    def __init__(self, label: str = "") -> None:
        self.label = label
        self.events: list[tuple[str, Any]] = []
        Collecting.instances.append(self)

    def on_session_start(self, session: Session, state: Any) -> None:
        self.events.append(("start", session.id))

    def on_tool_end(self, session: Session, step: Step, state: Any) -> None:
        self.events.append(("tool", step.event.tool))

    def on_finding(self, session: Session, step: Step | None, finding: Finding, state: Any) -> None:
        self.events.append(("finding", finding.detector))

    def on_decision(self, session: Session, step: Step | None, decision: Decision, state: Any) -> None:
        self.events.append(("decision", str(decision.kind)))

    def on_session_end(self, session: Session, summary: SessionSummary, state: Any) -> None:
        self.events.append(("end", session.id))


class DenyTool(Policy):
    """Denies every call to ``tool``."""

    name = "deny_tool"

    def __init__(self, tool: str = "deploy") -> None:
        self.tool = tool

    def before_tool(self, step: Step, session: Session, state: Any) -> Decision | None:
        if step.event.tool == self.tool:
            return Decision(DecisionKind.DENY, f"{self.tool} is not allowed", policy=self.name)
        return None


class Broken(Detector):
    """A detector with a bug, failing in ``where``: ``new_state`` (so no session of the pipeline can be
    made) or ``observe`` (every finished call). For the fail-open / fail-closed promises."""

    name = "broken"

    def __init__(self, where: str = "new_state") -> None:
        self.where = where

    def new_state(self) -> None:
        if self.where == "new_state":
            raise RuntimeError("broken detector: new_state")

    def observe(self, step: Step, state: Any) -> Finding | None:
        if self.where == "observe":
            raise RuntimeError("broken detector: observe")
        return None
