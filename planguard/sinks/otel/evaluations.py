"""planguard's scores as GenAI evaluation results: ``gen_ai.evaluation.result`` events.

The GenAI semantic conventions define ``gen_ai.evaluation.result`` as an event, that is a log record with
that event name, parented to the operation span it evaluates (its trace and span ids), with
``gen_ai.evaluation.name`` (required), ``gen_ai.evaluation.score.value`` and ``gen_ai.evaluation.score.label``
(when applicable) and ``gen_ai.evaluation.explanation``. :class:`EvaluationEvents` emits them through the
OpenTelemetry logs API; the sink also keeps them as span events of the same name for backends that read
only spans.

Score direction: every planguard score is in [0, 1] and higher is better. The compliance scores (PC, PPC,
POC, PPF) are labelled ``complete`` (1), ``partial`` or ``none`` (0). A finding is an evaluation named
``planguard.finding.<detector>`` with score 0 (the run failed that check) and the label ``detected``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from opentelemetry import trace

from ..._version import __version__
from . import attributes as A

if TYPE_CHECKING:
    from opentelemetry._logs import LoggerProvider
    from opentelemetry.trace import Span

    from ...findings import Finding

__all__ = ["EvaluationEvents", "finding_evaluation", "score_evaluation", "score_label"]


def score_label(value: float) -> str:
    """``complete`` for 1, ``none`` for 0, ``partial`` between (higher is better)."""
    if value >= 1.0:
        return A.LABEL_COMPLETE
    return A.LABEL_PARTIAL if value > 0.0 else A.LABEL_NONE


def score_evaluation(name: str, value: float, plan: str, missing: list[str]) -> dict[str, Any]:
    """The attributes of a compliance score's evaluation result (no content: names and phases only)."""
    explanation = f"{A.EVALUATIONS[name]}; plan {plan!r}; 0-1, higher is better"
    if missing:
        explanation += f"; missing phases: {', '.join(missing)}"
    return {
        A.GEN_AI_EVALUATION_NAME: name,
        A.GEN_AI_EVALUATION_SCORE_VALUE: float(value),
        A.GEN_AI_EVALUATION_SCORE_LABEL: score_label(value),
        A.GEN_AI_EVALUATION_EXPLANATION: explanation,
    }


def finding_evaluation(finding: Finding) -> dict[str, Any]:
    """A finding as a failed check: score 0, label ``detected``. The explanation names steps only: the
    finding's evidence is content (exported only with capture on, on the ``planguard.finding`` event)."""
    where = "at the end of the run" if finding.at_end else f"steps {finding.first_step}-{finding.last_step}"
    return {
        A.GEN_AI_EVALUATION_NAME: A.FINDING_EVALUATION_PREFIX + finding.detector,
        A.GEN_AI_EVALUATION_SCORE_VALUE: 0.0,
        A.GEN_AI_EVALUATION_SCORE_LABEL: A.LABEL_DETECTED,
        A.GEN_AI_EVALUATION_EXPLANATION: f"anti-pattern {finding.detector!r} detected over {where} "
        "(score 0: the check failed; higher is better)",
    }


class EvaluationEvents:
    """Emits ``gen_ai.evaluation.result`` log records parented to the span they evaluate."""

    def __init__(self, provider: LoggerProvider) -> None:
        self._provider = provider
        self._logger = provider.get_logger(A.TRACER_NAME, __version__)
        self._event_logger: Any = None

    def emit(self, span: Span, attributes: dict[str, Any], timestamp_ns: int | None) -> None:
        from opentelemetry._logs import LogRecord

        try:
            record = LogRecord(
                timestamp=timestamp_ns,
                context=trace.set_span_in_context(span),
                attributes=attributes,
                event_name=A.EVENT_EVALUATION_RESULT,
            )
        except TypeError:  # an API before 1.35: no event name on a log record yet, events have their API
            self._emit_event(span, attributes, timestamp_ns)
            return
        self._logger.emit(record)

    def _emit_event(self, span: Span, attributes: dict[str, Any], timestamp_ns: int | None) -> None:
        # (the Events API of those versions; gone from later ones, hence not imported by name)
        from importlib import import_module

        if self._event_logger is None:
            sdk_events = import_module("opentelemetry.sdk._events")
            provider = sdk_events.EventLoggerProvider(logger_provider=self._provider)
            self._event_logger = provider.get_event_logger(A.TRACER_NAME, __version__)
        ctx = span.get_span_context()
        self._event_logger.emit(
            import_module("opentelemetry._events").Event(
                A.EVENT_EVALUATION_RESULT,
                timestamp=timestamp_ns,
                trace_id=ctx.trace_id,
                span_id=ctx.span_id,
                trace_flags=ctx.trace_flags,
                attributes=attributes,
            )
        )
