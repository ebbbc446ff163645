"""Hands the tool span OpenInference's LangChain tracer opens for a call to planguard while it records.

OpenInference starts a tool's span in a LangChain callback when the tool run starts, inside the call's
execution, and never makes it the current OpenTelemetry span. planguard finds it the LangChain way: while a
call's execution runs (:func:`handing_over_tool_spans`, inside the guard's tool scope), a LangChain
configure hook adds :class:`ToolSpanHandoff` to the callback manager of the tool's run; at the run's start,
after OpenInference's tracer (added when the manager was made) has opened the span, the handler passes that
span to :func:`planguard.sinks.otel.nesting.adopt_tool_span` (an ``async def`` tool's run: at its end, before
OpenInference ends the span). Nothing is added to any OpenTelemetry
provider, and outside a call's execution the hook adds nothing.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.tracers.context import register_configure_hook

__all__ = ["ToolSpanHandoff", "handing_over_tool_spans"]

_OPENINFERENCE_LANGCHAIN = "openinference.instrumentation.langchain"


class ToolSpanHandoff(BaseCallbackHandler):
    """At a tool run's start, the span OpenInference opened for it goes to planguard's tool scope."""

    # Inline: called in the run's own thread and context (the tool scope is in the OTel context). A sync run
    # calls handlers in the manager's order, so at the start OpenInference's tracer (which the manager got
    # first) has opened the span. An async run (an ``async def`` tool) calls inline handlers before the
    # others: at its start the span is not open yet, and at its end it is still open (OpenInference ends
    # it after us), so the end hands it over instead.
    run_inline = True

    def on_tool_start(
        self, serialized: dict[str, Any], input_str: str, *, run_id: UUID, **kwargs: Any
    ) -> None:
        _hand_over(run_id)

    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        _hand_over(run_id)

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        _hand_over(run_id)


def _hand_over(run_id: UUID) -> None:
    span = _openinference_span(run_id)
    if span is not None and span.is_recording():  # (once handed over, the scope takes no other)
        from planguard.sinks.otel.nesting import adopt_tool_span

        adopt_tool_span(span)


def _openinference_span(run_id: UUID) -> Any:
    """OpenInference's span for a LangChain run, when its LangChain instrumentation is loaded (not imported
    otherwise: planguard does not depend on it)."""
    module = sys.modules.get(_OPENINFERENCE_LANGCHAIN)
    if module is None:
        return None
    instrumentor = module.LangChainInstrumentor()  # a singleton
    if getattr(instrumentor, "_tracer", None) is None:  # loaded, not instrumenting (get_span would print)
        return None
    get_span = getattr(instrumentor, "get_span", None)
    return get_span(run_id) if callable(get_span) else None


_HANDOFF = ToolSpanHandoff()
_handoff_var: ContextVar[ToolSpanHandoff | None] = ContextVar("planguard_tool_span_handoff", default=None)
# LangChain adds the variable's handler to every callback manager configured while it is set (not to child
# runs' managers through inheritance: each configures its own while the variable is still set).
register_configure_hook(_handoff_var, inheritable=False)


@contextmanager
def handing_over_tool_spans() -> Iterator[None]:
    """Run a call's execution inside this (and inside the guard's tool scope)."""
    token = _handoff_var.set(_HANDOFF)
    try:
        yield
    finally:
        _handoff_var.reset(token)
