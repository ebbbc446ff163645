"""Where a session's record goes: telemetry, the local store, a console timeline.

Like an OpenTelemetry ``SpanProcessor``: each hook runs inline on the agent's path, so a sink must do only
cheap work there and hand anything slow (I/O, exporting) to a bounded queue and a background worker.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .decisions import Decision
    from .findings import Finding
    from .session import Session, SessionSummary
    from .step import Step

__all__ = ["Sink"]


class Sink:
    def on_session_start(self, session: Session) -> None: ...

    def on_tool_start(self, session: Session, step: Step) -> None: ...

    def on_tool_end(self, session: Session, step: Step) -> None: ...

    def on_finding(self, session: Session, step: Step | None, finding: Finding) -> None: ...

    def on_decision(self, session: Session, step: Step | None, decision: Decision) -> None: ...

    def on_session_end(self, session: Session, summary: SessionSummary) -> None: ...

    def shutdown(self) -> None:
        """Flush and stop background work."""
