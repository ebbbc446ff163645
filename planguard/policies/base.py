"""The policy extension point: hooks named for the moment they run, answering with decisions."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..decisions import Decision

if TYPE_CHECKING:
    from ..session import Session
    from ..step import Step

__all__ = ["Policy"]


class Policy:
    """Override the hooks you need. State lives in ``new_state()``'s object, one per session.

    ``before_tool`` may return a blocking decision (deny/stop) for the call about to run; the other hooks
    return decisions to deliver (reminders and nudges reach the model at its next request).
    """

    name: str = "policy"

    def new_state(self) -> Any:
        return None

    def before_tool(self, step: Step, session: Session, state: Any) -> Decision | None:
        return None

    def after_tool(self, step: Step, session: Session, state: Any) -> Iterable[Decision]:
        return ()

    def before_model(self, session: Session, state: Any) -> Iterable[Decision]:
        return ()

    def on_end(self, session: Session, state: Any) -> Iterable[Decision]:
        return ()
