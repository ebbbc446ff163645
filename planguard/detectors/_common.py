"""Small shared pieces of the built-in detectors."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..actions.types import Action
from ..actions.vocabulary import SURFACES, ToolSurface, classify_action
from ..sinks.redact import redact

if TYPE_CHECKING:
    from ..step import Step

__all__ = ["SurfaceTracker", "action_of", "clip"]


def action_of(step: Step) -> Action:
    """The step's canonical action; classified here when the pipeline has no action stage."""
    action = step.action
    if isinstance(action, Action):
        return action
    return classify_action(step.event)


_NO_SURFACE = ToolSurface()  # immutable: one shared instance, not one per session


class SurfaceTracker:
    """Which structured tools the run's scaffold exposes: configured, or the union of what its tools name.

    ``seen`` holds the scaffolds already learned, so callers skip :meth:`learn` for them: nearly every
    action of a run names the same one.
    """

    __slots__ = ("fixed", "seen", "surface")

    def __init__(self, scaffold: str | None = None) -> None:
        self.fixed = scaffold is not None
        self.surface: ToolSurface = SURFACES.get(scaffold or "", _NO_SURFACE)
        self.seen: set[str] = set()

    def learn(self, action: Action) -> ToolSurface:
        scaffold = action.scaffold
        if scaffold is not None and scaffold not in self.seen:
            self.seen.add(scaffold)
            known = None if self.fixed else SURFACES.get(scaffold)
            if known is not None:
                # Nothing learned yet: the scaffold's own (shared) surface, not a copy per session.
                self.surface = known if self.surface is _NO_SURFACE else self.surface | known
        return self.surface


def clip(text: str | None, limit: int = 80) -> str:
    """``text`` on one line, at most ``limit`` characters, for a finding's evidence. Redacted before it is
    cut: a cut through a secret would leave a prefix no pattern recognises (this runs only as a detector
    fires, a few times a session)."""
    if not text:
        return ""
    text = redact(" ".join(text.split()))
    return text if len(text) <= limit else text[: limit - 1] + "…"
