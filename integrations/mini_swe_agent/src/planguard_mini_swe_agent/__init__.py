"""planguard for mini-swe-agent: classes that plug into ``mini`` by name.

* ``--environment-class planguard_mini_swe_agent.PlanguardEnvironment`` — gates and records every bash
  action (a denied action is not run; its observation is the denial, return code 1).
* ``--model-class planguard_mini_swe_agent.PlanguardModel`` — adds the reminders and nudges that are due to
  the model query (ephemeral ones only to that query, persisted ones to the agent's history).
* ``--agent-class planguard_mini_swe_agent.PlanguardAgent`` (interactive, like ``mini``'s default) or
  ``PlanguardDefaultAgent`` — wraps whatever environment and model it is given with the two above, ends the
  planguard session when the run ends, and writes the live phases and metrics into the trajectory's
  ``info.planguard``.

Each class takes ``planguard_config`` (a config file; default ``$PLANGUARD_CONFIG``, else defaults) and
``planguard_session`` (default: one id per process, so separately configured environment and model classes
share a session) from its section of the ``mini`` config, e.g. ``-c agent.planguard_config=planguard.yaml``.
"""

from __future__ import annotations

from .agent import PlanguardAgent, PlanguardAgentMixin, PlanguardDefaultAgent
from .environment import PlanguardEnvironment
from .guards import default_session_id, get_guard
from .model import PlanguardModel

__all__ = [
    "PlanguardAgent",
    "PlanguardAgentMixin",
    "PlanguardDefaultAgent",
    "PlanguardEnvironment",
    "PlanguardModel",
    "default_session_id",
    "get_guard",
]
