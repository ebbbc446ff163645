"""Capture planguard's telemetry in memory and assert on it (as OTel's ``InMemorySpanExporter`` does).

::

    cap = TelemetryCapture()
    pipeline = Pipeline(sinks=(cap.sink,))
    ...
    cap.flush()
    (tool,) = cap.spans("execute_tool bash")
    assert tool.attributes["planguard.phase"] == "N"
    assert cap.metric("planguard.tool.calls", **{"planguard.phase": "N"}) == 1
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ..capture import CaptureMode
from .otel import OTelSink

try:  # the SDK's name since 1.39 (the old one warns)
    from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter as _InMemoryLogs
except ImportError:  # pragma: no cover - older SDKs
    from opentelemetry.sdk._logs.export import InMemoryLogExporter as _InMemoryLogs

__all__ = ["TelemetryCapture"]


def _attr(record: Any, key: str) -> Any:
    return (record.attributes or {}).get(key)


class TelemetryCapture:
    """An :class:`OTelSink` wired to in-memory span, metric and log readers."""

    def __init__(self, *, capture: CaptureMode = CaptureMode.NO_CONTENT, **sink_kwargs: Any) -> None:
        self.exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])
        self.log_exporter = _InMemoryLogs()  # type: ignore[no-untyped-call,unused-ignore]
        self.logger_provider = LoggerProvider()
        self.logger_provider.add_log_record_processor(SimpleLogRecordProcessor(self.log_exporter))
        self.sink = OTelSink(
            tracer_provider=self.tracer_provider,
            meter_provider=self.meter_provider,
            logger_provider=self.logger_provider,
            capture=capture,
            **sink_kwargs,
        )

    def flush(self, timeout_s: float = 5.0) -> bool:
        return self.sink.force_flush(timeout_s)

    def spans(self, name: str | None = None) -> list[ReadableSpan]:
        """Finished spans in end order, optionally only those named ``name``."""
        spans: Sequence[ReadableSpan] = self.exporter.get_finished_spans()
        return [s for s in spans if name is None or s.name == name]

    def events(self, name: str) -> list[Any]:
        """Log-based events named ``name`` (``gen_ai.evaluation.result``), as the SDK's readable records."""
        records = [r.log_record for r in self.log_exporter.get_finished_logs()]
        # (before 1.35 the SDK had no event name on a record: the Events API put it in ``event.name``)
        return [r for r in records if (getattr(r, "event_name", None) or _attr(r, "event.name")) == name]

    def children(self, parent: ReadableSpan) -> list[ReadableSpan]:
        pid = parent.context.span_id if parent.context is not None else None
        return [s for s in self.spans() if s.parent is not None and s.parent.span_id == pid]

    def metrics(self) -> dict[str, list[tuple[dict[str, Any], Any]]]:
        """Metric name → ``[(attributes, value)]``: the sum for counters, the data point for histograms."""
        out: dict[str, list[tuple[dict[str, Any], Any]]] = {}
        data = self.reader.get_metrics_data()
        if data is None:
            return out
        for rm in data.resource_metrics:
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    points = out.setdefault(m.name, [])
                    for dp in m.data.data_points:
                        points.append((dict(dp.attributes or {}), getattr(dp, "value", dp)))
        return out

    def metric(self, name: str, **attributes: Any) -> Any:
        """The value of one metric's data point whose attributes include ``attributes`` (0 if none)."""
        for attrs, value in self.metrics().get(name, []):
            if all(attrs.get(k) == v for k, v in attributes.items()):
                return value
        return 0

    def clear(self) -> None:
        self.exporter.clear()
        self.log_exporter.clear()

    def shutdown(self) -> None:
        self.sink.shutdown()
        self.tracer_provider.shutdown()
        self.meter_provider.shutdown()
        self.logger_provider.shutdown()
