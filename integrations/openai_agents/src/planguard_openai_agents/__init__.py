"""planguard for the OpenAI Agents SDK.

Three SDK extension points, each doing one job:

* a **tool input guardrail** on every function tool: asks the guard before the call runs; a denial becomes
  ``reject_content`` (the tool does not run, the model sees the reason as its output), a stop becomes
  ``raise_exception`` (the run ends with ``ToolInputGuardrailTripwireTriggered``). Calls it blocks never
  reach ``on_tool_start``, so it records them itself.
* **RunHooks** for observation: ``on_tool_start`` records calls the guardrail did not see (tools without it),
  ``on_tool_end`` records results.
* ``RunConfig.call_model_input_filter``: counts each model call and appends the reminders and nudges due
  to the request's input (for that request only: the filter cannot change the run's history).

The guardrail finds its session through the run's ``RunConfig`` (the filter object carries the session id),
so one guardrail instance serves every run.
"""

from __future__ import annotations

from .guarded import Planguard, PlanguardModelInputFilter, PlanguardRunHooks, tool_event

__all__ = ["Planguard", "PlanguardModelInputFilter", "PlanguardRunHooks", "tool_event"]
