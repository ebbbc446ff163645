"""Getting spans and metrics out of the process: OTLP (HTTP or gRPC) and console exporters from the standard
``OTEL_*`` variables (see :mod:`planguard.sinks.telemetry.settings`), and a Prometheus scrape endpoint.

Exporters run on background threads behind bounded queues: an endpoint that refuses connections or
hangs costs the agent nothing but a rising drop counter (``planguard.telemetry.dropped``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import import_module
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from ...errors import ErrorCounter
from ..drops import DropCounter
from ..worker import BackgroundWorker
from .config import TelemetryConfig
from .settings import PROTOCOL_GRPC, PROTOCOL_HTTP, ExportSettings, SignalSettings, export_settings

__all__ = [
    "BoundedSpanProcessor",
    "OtlpProviders",
    "PrometheusEndpoint",
    "configure_otlp",
    "shutdown_providers",
    "start_prometheus_exporter",
]

_log = logging.getLogger("planguard.sinks.telemetry")


class BoundedSpanProcessor(SpanProcessor):
    """Batches finished spans to an exporter on a worker thread, dropping (and counting) instead of blocking.

    Like the SDK's ``BatchSpanProcessor``, plus what planguard's reliability contract needs: every span
    that does not reach the exporter is counted in ``drops`` — ``span_queue_full`` when the queue is
    full, ``span_export_failed`` when the exporter refused or raised — and ``shutdown`` returns within
    its timeout even when the exporter hangs, counting the batch it leaves hanging as
    ``span_export_abandoned`` (and the spans still queued as ``span-export_unsent_at_shutdown``), so
    the counters are final when it returns.
    """

    def __init__(
        self,
        exporter: SpanExporter,
        *,
        drops: DropCounter | None = None,
        max_queue_size: int = 2048,
        max_export_batch_size: int = 512,
        schedule_delay_s: float = 5.0,
        shutdown_timeout_s: float = 5.0,
        errors: ErrorCounter | None = None,
    ) -> None:
        self.exporter = exporter
        self.drops = drops if drops is not None else DropCounter()
        self._shutdown_timeout = shutdown_timeout_s
        self._lock = threading.Lock()
        self._in_flight = 0  # spans of the batch the exporter has now; 0 once counted
        self._worker: BackgroundWorker[ReadableSpan] = BackgroundWorker(
            "span-export",
            self._export,
            drops=self.drops,
            drop_reason="span_queue_full",
            max_queue=max_queue_size,
            max_batch=max_export_batch_size,
            interval_s=schedule_delay_s,
            errors=errors,
            # As the SDK's BatchSpanProcessor: export every ``schedule_delay_s``, or as soon as a full batch
            # is queued (``OTEL_BSP_SCHEDULE_DELAY``, ``OTEL_BSP_MAX_EXPORT_BATCH_SIZE``).
            wake_at=max_export_batch_size,
        )

    def on_end(self, span: ReadableSpan) -> None:
        ctx = span.context
        if ctx is not None and ctx.trace_flags.sampled:
            self._worker.submit(span)

    def _export(self, batch: list[ReadableSpan]) -> None:
        with self._lock:
            self._in_flight = len(batch)
        try:
            result = self.exporter.export(batch)
        except Exception:
            result = SpanExportResult.FAILURE
        with self._lock:
            unsettled, self._in_flight = self._in_flight, 0  # 0: shutdown counted it already
        if result is not SpanExportResult.SUCCESS:
            self.drops.add("span_export_failed", unsettled)

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self._worker.flush(timeout_millis / 1000)

    def shutdown(self) -> None:
        if not self._worker.shutdown(self._shutdown_timeout):
            with self._lock:
                abandoned, self._in_flight = self._in_flight, 0
            self.drops.add("span_export_abandoned", abandoned)
        try:
            self.exporter.shutdown()
        except Exception as exc:
            _log.debug("span exporter shutdown failed: %r", exc)


@dataclass
class OtlpProviders:
    """What :func:`configure_otlp` built; ``owned`` lists the providers for whoever shuts them down."""

    tracer_provider: TracerProvider | None
    meter_provider: MeterProvider | None
    drops: DropCounter
    owned: list[Any] = field(default_factory=list)


#: The least a provider gets when an earlier one used up the shared deadline (its last export is dropped).
_MIN_PROVIDER_S = 0.05


def shutdown_providers(providers: Sequence[Any], timeout_s: float) -> None:
    """Shut providers down in order within one shared deadline, where the SDK lets us bound it (a tracer
    provider's processors bound themselves: :class:`BoundedSpanProcessor` has its own timeout)."""
    import time

    deadline = time.monotonic() + timeout_s
    for provider in providers:
        if isinstance(provider, MeterProvider):
            left = max(_MIN_PROVIDER_S, deadline - time.monotonic())
            provider.shutdown(timeout_millis=left * 1000)
        else:
            provider.shutdown()


def _resource(service_name: str) -> Resource:
    # The standard variables name the service when set (OTEL_SERVICE_NAME, or service.name in
    # OTEL_RESOURCE_ATTRIBUTES); ``service_name`` is the fallback. Resource.create merges the rest.
    import os

    env_attrs = os.environ.get("OTEL_RESOURCE_ATTRIBUTES", "")
    named_by_env = bool(os.environ.get("OTEL_SERVICE_NAME", "").strip()) or any(
        part.split("=", 1)[0].strip() == "service.name" for part in env_attrs.split(",")
    )
    base: dict[str, str] = {} if named_by_env else {"service.name": service_name}
    return Resource.create(base)


def configure_otlp(
    config: TelemetryConfig | None = None,
    *,
    traces_endpoint: str | None = None,
    metrics_endpoint: str | None = None,
    drops: DropCounter | None = None,
    errors: ErrorCounter | None = None,
    metric_interval_s: float | None = None,
    settings: ExportSettings | None = None,
) -> OtlpProviders | None:
    """SDK providers configured like any OTel SDK app, from ``config`` and the standard variables as
    :func:`~planguard.sinks.telemetry.settings.export_settings` reads them (exporters, protocols, endpoints,
    ``OTEL_BSP_*``, the metric interval; the exporters read their own headers, timeout, compression and
    certificates). ``traces_endpoint`` (an OTLP/HTTP URL) forces OTLP/HTTP spans there and no metrics unless
    ``metrics_endpoint`` is given too.

    ``None`` with ``OTEL_SDK_DISABLED=true`` or when no signal has an exporter. The providers are not made
    global.
    """
    config = config if config is not None else TelemetryConfig()
    settings = settings if settings is not None else export_settings(config)
    if settings.sdk_disabled:
        return None
    traces, metrics = settings.traces, settings.metrics
    if traces_endpoint is not None:  # (and metrics only where metrics_endpoint says)
        traces = SignalSettings(("otlp",), PROTOCOL_HTTP, traces_endpoint)
        metrics = SignalSettings((), PROTOCOL_HTTP, "")
    if metrics_endpoint is not None:
        metrics = SignalSettings(("otlp",), PROTOCOL_HTTP, metrics_endpoint)
    if not traces.exporters and not metrics.exporters:
        return None
    drops = drops if drops is not None else DropCounter()
    resource = _resource(config.service_name)
    out = OtlpProviders(None, None, drops)
    if traces.exporters:
        tp = TracerProvider(resource=resource)
        for name in traces.exporters:
            span_exporter = (
                _otlp_exporter("trace", traces, settings.span_export_timeout_s)
                if name == "otlp"
                else _console_exporter("trace")
            )
            processor = BoundedSpanProcessor(
                span_exporter,
                drops=drops,
                max_queue_size=settings.bsp_max_queue_size,
                max_export_batch_size=settings.bsp_max_export_batch_size,
                schedule_delay_s=settings.bsp_schedule_delay_ms / 1000,
                errors=errors,
                shutdown_timeout_s=config.shutdown_timeout_s,
            )
            tp.add_span_processor(processor)
        out.tracer_provider = tp
        out.owned.append(tp)
    interval_ms = metric_interval_s * 1000 if metric_interval_s is not None else settings.metric_interval_ms
    readers = [
        PeriodicExportingMetricReader(
            _otlp_exporter("metric", metrics, config.export_timeout_s)
            if name == "otlp"
            else _console_exporter("metric"),
            export_interval_millis=interval_ms,
            export_timeout_millis=settings.metric_timeout_ms,
        )
        for name in metrics.exporters
        if name != "prometheus"  # served by start_prometheus_exporter (telemetry.prometheus_port)
    ]
    if readers:
        mp = MeterProvider(metric_readers=readers, resource=resource)
        out.meter_provider = mp
        out.owned.append(mp)
    return out


def _otlp_exporter(kind: str, signal: SignalSettings, timeout: float | None) -> Any:
    """The OTLP exporter of spans (``kind`` "trace") or metrics ("metric") over the signal's protocol (it
    reads its own headers, compression and certificates from the variables)."""
    grpc = signal.protocol == PROTOCOL_GRPC
    module = f"opentelemetry.exporter.otlp.proto.{'grpc' if grpc else 'http'}.{kind}_exporter"
    name = "OTLPSpanExporter" if kind == "trace" else "OTLPMetricExporter"
    try:
        exporter = getattr(import_module(module), name)
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImportError(_GRPC_MISSING if grpc else _HTTP_MISSING) from exc
    return exporter(endpoint=signal.endpoint, timeout=timeout)


def _console_exporter(kind: str) -> Any:
    import sys

    from opentelemetry.sdk.metrics.export import ConsoleMetricExporter
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter

    exporter = ConsoleSpanExporter if kind == "trace" else ConsoleMetricExporter
    return exporter(out=sys.stdout)  # stdout as it is now (the SDK's default is bound at import)


_HTTP_MISSING = (
    "OTLP/HTTP export needs opentelemetry-exporter-otlp-proto-http: pip install 'planguard-agents[otlp]'"
)
_GRPC_MISSING = (
    "OTLP/gRPC export needs opentelemetry-exporter-otlp-proto-grpc: pip install 'planguard-agents[otlp-grpc]'"
)


@dataclass
class PrometheusEndpoint:
    """A scrape endpoint serving a planguard ``MeterProvider``'s metrics (``/metrics``)."""

    meter_provider: MeterProvider
    host: str
    port: int
    _server: Any = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/metrics"

    def shutdown(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        self.meter_provider.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True  # pull-based: Prometheus reads current values at scrape time


def start_prometheus_exporter(
    port: int = 9464,
    host: str = "127.0.0.1",
    *,
    service_name: str = "planguard",
    views: Sequence[Any] = (),
) -> PrometheusEndpoint:
    """A ``MeterProvider`` whose metrics Prometheus can scrape at ``http://host:port/metrics``.

    Uses ``opentelemetry-exporter-prometheus`` with a private registry (nothing global is touched) and
    ``prometheus_client``'s HTTP server on a daemon thread, bound to ``host`` (loopback by default).
    Pass ``port=0`` for any free port; the chosen one is in ``.port``. OTel metric names map to
    Prometheus names with dots as underscores and ``_total`` on counters
    (``planguard.tool.calls`` → ``planguard_tool_calls_total``).
    """
    try:
        from opentelemetry.exporter.prometheus import PrometheusMetricReader
        from prometheus_client import CollectorRegistry, start_http_server
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImportError(
            "Prometheus export needs opentelemetry-exporter-prometheus: "
            "pip install 'planguard-agents[prometheus]'"
        ) from exc
    registry = CollectorRegistry(auto_describe=True)
    reader = PrometheusMetricReader(registry=registry)
    server, _thread = start_http_server(port, addr=host, registry=registry)
    mp = MeterProvider(metric_readers=[reader], resource=_resource(service_name), views=list(views))
    return PrometheusEndpoint(mp, host, int(server.server_address[1]), server)
