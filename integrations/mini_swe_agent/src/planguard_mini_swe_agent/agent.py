"""``PlanguardAgent``: a ``mini`` agent whose environment and model are guarded, with the session ended
when the run ends and the live phases and metrics saved in the trajectory (``info.planguard``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from minisweagent.agents.default import DefaultAgent
from minisweagent.agents.interactive import InteractiveAgent

from .environment import PlanguardEnvironment
from .guards import default_session_id, get_guard
from .model import PlanguardModel

if TYPE_CHECKING:
    from planguard.guard import Guard
    from planguard.session import SessionSummary

__all__ = ["PlanguardAgent", "PlanguardAgentMixin", "PlanguardDefaultAgent"]


class PlanguardAgentMixin:
    """Put before a mini-swe-agent agent class: ``class MyAgent(PlanguardAgentMixin, DefaultAgent)``."""

    guard: Guard
    planguard_session: str
    planguard_summary: SessionSummary | None

    def __init__(
        self,
        model: Any,
        env: Any,
        *,
        planguard_config: str | None = None,
        planguard_session: str | None = None,
        **kwargs: Any,
    ) -> None:
        # An environment/model class that is already guarded brings its guard and session; else wrap.
        guarded = next(
            (x for x in (env, model) if isinstance(x, (PlanguardEnvironment, PlanguardModel))), None
        )
        if guarded is not None and planguard_config is None:
            guard, session = guarded.guard, planguard_session or guarded.session_id
        else:
            guard, session = get_guard(planguard_config), planguard_session or default_session_id()
        self.guard, self.planguard_session, self.planguard_summary = guard, session, None
        for part in (env, model):
            if isinstance(part, (PlanguardEnvironment, PlanguardModel)):
                part.guard, part.session_id = guard, session
        if not isinstance(env, PlanguardEnvironment):
            env = PlanguardEnvironment.wrap(env, guard, session)
        if not isinstance(model, PlanguardModel):
            model = PlanguardModel.wrap(model, guard, session)
        super().__init__(model, env, **kwargs)  # type: ignore[call-arg]

    def run(self, task: str = "", **kwargs: Any) -> dict[str, Any]:
        self.guard.session(self.planguard_session, source="mini-swe-agent", task=task[:2000])
        try:
            result: dict[str, Any] = super().run(task, **kwargs)  # type: ignore[misc]
        finally:
            self.planguard_summary = self.guard.end(self.planguard_session)
            self.save(self.config.output_path)  # type: ignore[attr-defined]
        return result

    def serialize(self, *extra_dicts: dict[str, Any]) -> dict[str, Any]:
        data: dict[str, Any] = super().serialize(*extra_dicts)  # type: ignore[misc]
        data.setdefault("info", {})["planguard"] = self.planguard_record()
        return data

    def planguard_record(self) -> dict[str, Any]:
        """The session's phases and metrics: the final summary once the run has ended, else the live view."""
        summary = self.planguard_summary
        if summary is None:
            if self.planguard_session not in self.guard:
                return {"session_id": self.planguard_session}
            summary = self.guard.session(self.planguard_session).summary()
        return {
            "session_id": summary.session_id,
            "ended": self.planguard_summary is not None,
            "n_steps": summary.n_steps,
            "n_model_calls": summary.n_model_calls,
            "letters": summary.letters,
            "langutory": list(summary.langutory),
            "metrics": {name: sc.as_dict() for name, sc in summary.scores.items()},
            "finding_counts": dict(summary.finding_counts),
            "decision_counts": dict(summary.decision_counts),
        }


class PlanguardAgent(PlanguardAgentMixin, InteractiveAgent):
    """``mini``'s interactive agent, guarded (``--agent-class planguard_mini_swe_agent.PlanguardAgent``)."""


class PlanguardDefaultAgent(PlanguardAgentMixin, DefaultAgent):
    """mini-swe-agent's non-interactive default agent, guarded (batch runs, scripts)."""
