"""Where planguard's spans go in the application's trace: under the current span, and onto the tool span an
instrumented framework already opened for the same call instead of a second one.

Parent: the OpenTelemetry context's current span, or — when OpenInference's LangChain instrumentation is
active — the root span of the current LangChain run (OpenInference never attaches its spans to the OTel
context, so without this the session span would be a sibling of the agent's LangGraph span, or in a trace
of its own).

Tool spans (``telemetry.tool_spans``): a framework's tool span for a call either is the current span when
planguard's hook runs (a framework that makes it current around its tool hooks), or starts inside the
call's execution (OpenInference's LangChain tracer starts it when the tool runs, under ``wrap_tool_call``).
The first case is seen at ``before_tool``. For the second, an integration wraps the tool's execution in
:func:`tool_scope`, and :class:`ToolSpanAdopter` (a span processor planguard adds once to the application's
SDK tracer provider) hands the first span started there with the tool's name to the sink. Either way the
sink puts its attributes on that span, and its findings and decisions as events while the span is open;
what is known only after the framework ended its span (the call's effect, findings on its result) goes to
the session span as events naming the call (``gen_ai.tool.call.id``, ``planguard.step.index``).

Cost to the application: the adopter is one span processor on its tracer provider, whose ``on_start`` is a
context lookup per span (about a third of a microsecond); ``telemetry.tool_spans: own`` adds none.
"""

from __future__ import annotations

import sys
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.trace import SpanProcessor
from opentelemetry.trace import Span

from . import attributes as A

if TYPE_CHECKING:
    from ...events import ToolEvent

__all__ = [
    "ToolSpanAdopter",
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
    """The call whose execution is running (attached to the OTel context by :func:`tool_scope`)."""

    __slots__ = ("adopted", "event")

    def __init__(self, event: ToolEvent) -> None:
        self.event = event
        self.adopted = False


@contextmanager
def tool_scope(event: ToolEvent) -> Iterator[None]:
    """Run a tool call's execution inside this so that a tool span a framework opens for it is enriched
    by planguard instead of duplicated (see the module docstring). Cheap: one context attach."""
    token = otel_context.attach(otel_context.set_value(_SCOPE_KEY, _Scope(event)))
    try:
        yield
    finally:
        otel_context.detach(token)


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


class ToolSpanAdopter(SpanProcessor):
    """Hands the first span started inside a :func:`tool_scope` and named for its tool to the sinks that
    asked (one processor per tracer provider, shared by every sink on it)."""

    def __init__(self) -> None:
        self._sinks: weakref.WeakSet[Any] = weakref.WeakSet()

    def add(self, sink: _Adopting) -> None:
        self._sinks.add(sink)

    def on_start(self, span: Any, parent_context: otel_context.Context | None = None) -> None:
        scope = otel_context.get_value(_SCOPE_KEY)
        if not isinstance(scope, _Scope) or scope.adopted or getattr(span, "name", None) != scope.event.tool:
            return
        scope.adopted = True
        for sink in list(self._sinks):
            sink.adopt_tool_span(scope.event, span)


_adopters: weakref.WeakKeyDictionary[Any, ToolSpanAdopter] = weakref.WeakKeyDictionary()
_adopters_lock = threading.Lock()


def watch_tool_spans(provider: Any, sink: _Adopting) -> bool:
    """Have ``sink`` adopt the tool spans started on ``provider`` inside a :func:`tool_scope`. ``False`` when
    the provider takes no span processors (not the SDK's)."""
    add = getattr(provider, "add_span_processor", None)
    if add is None:
        return False
    with _adopters_lock:
        adopter = _adopters.get(provider)
        if adopter is None:
            adopter = _adopters[provider] = ToolSpanAdopter()
            add(adopter)
    adopter.add(sink)
    return True
