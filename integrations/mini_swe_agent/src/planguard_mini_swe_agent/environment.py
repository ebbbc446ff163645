"""``PlanguardEnvironment``: any mini-swe-agent environment, with every bash action gated and recorded."""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any

from planguard.decisions import DecisionKind
from planguard.events import ToolEvent

from .guards import default_session_id, get_guard

if TYPE_CHECKING:
    from planguard.guard import Guard

__all__ = ["DENIED_RETURNCODE", "MARKER", "PlanguardEnvironment"]

#: Return code of a denied action's observation (it did not run).
DENIED_RETURNCODE = 1
#: Key in a denied observation's ``extra`` (and so in the trajectory message's ``extra``).
MARKER = "planguard"


class PlanguardEnvironment:
    """Wraps the environment ``planguard_inner`` (a ``mini`` name like ``local``/``docker`` or an import path)
    built from the remaining keyword arguments; or an existing environment object via :meth:`wrap`."""

    def __init__(
        self,
        *,
        planguard_inner: str = "local",
        planguard_config: str | None = None,
        planguard_session: str | None = None,
        **kwargs: Any,
    ) -> None:
        from minisweagent.environments import get_environment_class

        self.inner = get_environment_class(planguard_inner)(**kwargs)
        self.guard: Guard = get_guard(planguard_config)
        self.session_id = planguard_session or default_session_id()

    @classmethod
    def wrap(cls, inner: Any, guard: Guard, session_id: str) -> PlanguardEnvironment:
        env = cls.__new__(cls)
        env.inner, env.guard, env.session_id = inner, guard, session_id
        return env

    @property
    def config(self) -> Any:
        return self.inner.config

    def execute(self, action: dict[str, Any], cwd: str = "", **kwargs: Any) -> dict[str, Any]:
        from minisweagent.exceptions import InterruptAgentFlow, Submitted

        command = action.get("command", "")
        call_id = action.get("tool_call_id")
        # The directory the command runs in is the repository the live phase rules judge paths against.
        work_dir = cwd or getattr(getattr(self.inner, "config", None), "cwd", "") or os.getcwd()
        event = ToolEvent.shell(
            command if isinstance(command, str) else str(command),
            call_id=call_id if isinstance(call_id, str) else None,
            metadata={"cwd": work_dir} if isinstance(work_dir, str) else {},
        )
        decision = self.guard.before_tool(self.session_id, event)
        if decision.blocks:
            marker = {MARKER: {"decision": decision.kind.value, "policy": decision.policy}}
            if decision.kind is DecisionKind.STOP:
                raise InterruptAgentFlow(
                    {
                        "role": "exit",
                        "content": decision.message,
                        "extra": {"exit_status": "PlanguardStop", "submission": "", **marker},
                    }
                )
            return {
                "output": decision.message,
                "returncode": DENIED_RETURNCODE,
                "exception_info": "",
                "extra": marker,
            }
        try:
            output: dict[str, Any] = self.inner.execute(action, cwd, **kwargs)
        except Submitted as exc:
            # The submit ran and succeeded; mini reports that by raising. Record it, let it end the run.
            event.result = str(exc.messages[0].get("content", "")) if exc.messages else ""
            event.exit_code = 0
            self._finish(event)
            raise
        except Exception as exc:
            event.result = f"{type(exc).__name__}: {exc}"
            event.is_error = True
            self._finish(event)
            raise
        out = output.get("output")
        event.result = out if isinstance(out, str) else None
        rc = output.get("returncode")
        event.exit_code = rc if isinstance(rc, int) and not isinstance(rc, bool) else None
        event.is_error = bool(output.get("exception_info"))
        self._finish(event)
        return output

    def _finish(self, event: ToolEvent) -> None:
        event.end_time = time.time()
        self.guard.after_tool(self.session_id, event)

    def get_template_vars(self, **kwargs: Any) -> dict[str, Any]:
        out: dict[str, Any] = self.inner.get_template_vars(**kwargs)
        return out

    def serialize(self) -> dict[str, Any]:
        data: dict[str, Any] = self.inner.serialize()
        info = data.setdefault("info", {}).setdefault("config", {})
        info["planguard_environment"] = {
            "session_id": self.session_id,
            "inner": f"{type(self.inner).__module__}.{type(self.inner).__name__}",
        }
        return data

    def __getattr__(self, name: str) -> Any:
        # Environment-specific extras (cleanup(), container ids, ...) stay reachable.
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)
