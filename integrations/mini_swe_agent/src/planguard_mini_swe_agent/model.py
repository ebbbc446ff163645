"""``PlanguardModel``: any mini-swe-agent model, with due reminders and nudges added to each query."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .guards import default_session_id, get_guard

if TYPE_CHECKING:
    from planguard.guard import Guard

__all__ = ["REMINDER_MARK", "PlanguardModel"]

#: ``extra`` key of a reminder message planguard added to the agent's history (persisted delivery).
REMINDER_MARK = "planguard_reminder"


class PlanguardModel:
    """Wraps the model class ``planguard_inner`` (a ``mini`` name like ``litellm`` or an import path; default:
    the class ``mini`` would choose for ``model_name``) built from the remaining keyword arguments."""

    def __init__(
        self,
        *,
        planguard_inner: str = "",
        planguard_config: str | None = None,
        planguard_session: str | None = None,
        **kwargs: Any,
    ) -> None:
        from minisweagent.models import get_model_class

        self.inner = get_model_class(str(kwargs.get("model_name", "")), planguard_inner)(**kwargs)
        self.guard: Guard = get_guard(planguard_config)
        self.session_id = planguard_session or default_session_id()

    @classmethod
    def wrap(cls, inner: Any, guard: Guard, session_id: str) -> PlanguardModel:
        model = cls.__new__(cls)
        model.inner, model.guard, model.session_id = inner, guard, session_id
        return model

    @property
    def config(self) -> Any:
        return self.inner.config

    def query(self, messages: list[dict[str, Any]], **kwargs: Any) -> dict[str, Any]:
        decisions = [d for d in self.guard.before_model(self.session_id) if d.message]
        if decisions:
            persisted = [d for d in decisions if not d.ephemeral]
            ephemeral = [d for d in decisions if d.ephemeral]
            for d in persisted:
                # ``messages`` is the agent's own history: what is added here stays for later queries.
                msg = self.inner.format_message(role="user", content=d.message)
                msg.setdefault("extra", {})[REMINDER_MARK] = d.kind.value
                messages.append(msg)
            if ephemeral:
                text = "\n\n".join(d.message for d in ephemeral)
                messages = [*messages, self.inner.format_message(role="user", content=text)]
        result: dict[str, Any] = self.inner.query(messages, **kwargs)
        return result

    def format_message(self, **kwargs: Any) -> dict[str, Any]:
        out: dict[str, Any] = self.inner.format_message(**kwargs)
        return out

    def format_observation_messages(
        self,
        message: dict[str, Any],
        outputs: list[dict[str, Any]],
        template_vars: dict[str, Any] | None = None,
    ) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = self.inner.format_observation_messages(message, outputs, template_vars)
        return out

    def get_template_vars(self, **kwargs: Any) -> dict[str, Any]:
        out: dict[str, Any] = self.inner.get_template_vars(**kwargs)
        return out

    def serialize(self) -> dict[str, Any]:
        data: dict[str, Any] = self.inner.serialize()
        return data

    def __getattr__(self, name: str) -> Any:
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)
