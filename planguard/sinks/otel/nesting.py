"""Where planguard's spans go in the application's trace: under the current span, and onto the tool span an
instrumented framework already opened for the same call instead of a second one.

Parent: the OpenTelemetry context's current span, or — when OpenInference's LangChain instrumentation is
active — the root span of the current LangChain run (OpenInference never attaches its spans to the OTel
context, so without this the session span would be a sibling of the agent's LangGraph span, or in a trace
of its own).

Tool spans (``telemetry.tool_spans``): a framework's tool span for a call either is the current span when
planguard's hook runs (a framework that makes it current around its tool hooks), or starts inside the
call's execution (OpenInference's LangChain tracer starts it when the tool runs, under ``wrap_tool_call``).
The first case is seen at ``before_tool``. For the second, an integration runs the tool's execution in
:func:`tool_scope` and hands the span its framework opened there to :func:`adopt_tool_span` while it records
(the LangChain integration does, from a LangChain callback at the tool run's start). Either way the sink
puts its attributes on that span, and its findings and decisions as events while the span is open; what is
known only after the framework ended its span (the call's effect, findings on its result) goes to the
session span as events naming the call (``gen_ai.tool.call.id``, ``planguard.step.index``).

planguard never adds a span processor (or anything else) to a provider it did not create: some providers
treat an added processor as replacing their exporter (Phoenix's ``register()`` does), which would silently
stop the application's own spans.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span

from . import attributes as A

if TYPE_CHECKING:
    from ...events import ToolEvent

__all__ = [
    "adopt_tool_span",
    "current_parent",
    "is_tool_span_for",
    "tool_scope",
]

#: OpenInference's span-kind attribute and its value for tool spans.
OPENINFERENCE_SPAN_KIND = "openinference.span.kind"
OPENINFERENCE_TOOL = "TOOL"
_OPENINFERENCE_LANGCHAIN = "openinference.instrumentation.langchain"

_SCOPE_KEY = otel_context.create_key("planguard.tool_scope")


class _Adopting(Protocol):
    def adopt_tool_span(self, event: ToolEvent, span: Span) -> None: ...


class _Scope:
    """The call whose execution is running and the sinks that want its framework span (attached to the OTel
    context by :func:`tool_scope`)."""

    __slots__ = ("adopted", "event", "sinks")

    def __init__(self, event: ToolEvent, sinks: Sequence[_Adopting]) -> None:
        self.event = event
        self.sinks = sinks
        self.adopted = False


@contextmanager
def tool_scope(event: ToolEvent, sinks: Sequence[_Adopting]) -> Iterator[None]:
    """Run a tool call's execution inside this so that a tool span a framework opens for it (handed to
    :func:`adopt_tool_span`) is enriched by ``sinks`` instead of duplicated. Cheap: one context attach."""
    token = otel_context.attach(otel_context.set_value(_SCOPE_KEY, _Scope(event, sinks)))
    try:
        yield
    finally:
        otel_context.detach(token)


def adopt_tool_span(span: Span) -> bool:
    """A framework opened ``span`` inside the current :func:`tool_scope`: the first one named for the scope's
    tool becomes the call's span for the scope's sinks (their attributes now, while it records). ``False``
    when there is no scope, the name differs or the scope's call has its span already."""
    scope = otel_context.get_value(_SCOPE_KEY)
    if not isinstance(scope, _Scope) or scope.adopted or getattr(span, "name", None) != scope.event.tool:
        return False
    scope.adopted = True
    for sink in scope.sinks:
        sink.adopt_tool_span(scope.event, span)
    return True


def _openinference_span() -> Span | None:
    """The root span of the current LangChain run, when OpenInference's LangChain instrumentation is loaded
    (not imported here otherwise: planguard does not depend on it)."""
    module = sys.modules.get(_OPENINFERENCE_LANGCHAIN)
    if module is None:
        return None
    try:
        ancestors = module.get_ancestor_spans()
        span = ancestors[-1] if ancestors else module.get_current_span()
    except Exception:  # another version's API: fall back to the OTel context
        return None
    return span if isinstance(span, Span) and span.get_span_context().is_valid else None


def current_parent() -> otel_context.Context:
    """The context planguard's session span starts in: OpenInference's run span when there is one, else
    the OTel context's current span (or none)."""
    span = _openinference_span()
    current = otel_context.get_current()
    return trace.set_span_in_context(span, current) if span is not None else current


def is_tool_span_for(span: Span, event: ToolEvent, strict: bool) -> bool:
    """``span`` is an open tool span for ``event``'s call: a GenAI ``execute_tool`` span or an OpenInference
    TOOL span, with the same call id when both sides have one (``strict``: the call id, else the tool name,
    must match too)."""
    if not span.is_recording():
        return False
    attrs: Any = getattr(span, "attributes", None) or {}
    is_tool = (
        attrs.get(A.GEN_AI_OPERATION_NAME) == A.OP_EXECUTE_TOOL
        or attrs.get(OPENINFERENCE_SPAN_KIND) == OPENINFERENCE_TOOL
    )
    if not is_tool:
        return False
    call_id = attrs.get(A.GEN_AI_TOOL_CALL_ID) or attrs.get("tool_call.id")
    if call_id is not None and event.call_id is not None:
        return bool(call_id == event.call_id)
    if not strict:
        return True
    name = attrs.get(A.GEN_AI_TOOL_NAME) or attrs.get("tool.name") or getattr(span, "name", None)
    return bool(name == event.tool)
