"""The standard ``OTEL_*`` variables and getting spans and metrics out of the process.

:func:`export_settings` reads the variables once into :class:`ExportSettings`, as the OpenTelemetry SDK's
environment-variable specification defines them (``opentelemetry.sdk.environment_variables``). Only what
planguard's own providers need is read here; exporters still read their own variables
(``OTEL_EXPORTER_OTLP_*_HEADERS``, ``_TIMEOUT``, ``_COMPRESSION``, ``_CERTIFICATE``, ``_INSECURE``) when they
are built. Endpoints follow the OTLP exporter spec: over HTTP the base ``OTEL_EXPORTER_OTLP_ENDPOINT`` gets
``/v1/traces`` / ``/v1/metrics`` appended and a per-signal ``OTEL_EXPORTER_OTLP_{TRACES,METRICS}_ENDPOINT`` is
used as given; over gRPC both are used as given (``host:port``, no path).

:func:`configure_otlp` builds OTLP (HTTP or gRPC) and console exporters from those settings, and
:func:`start_prometheus_exporter` a Prometheus scrape endpoint. Exporters run on background threads behind
bounded queues: an endpoint that refuses connections or hangs costs the agent nothing but a rising drop
counter (``planguard.telemetry.dropped``).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import import_module
from typing import Any, Final

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import ConsoleMetricExporter, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SpanExporter, SpanExportResult

from ...errors import ErrorCounter
from ..drops import DropCounter
from ..worker import BackgroundWorker
from .config import TelemetryConfig

__all__ = [
    "DEFAULT_GRPC_ENDPOINT",
    "DEFAULT_HTTP_ENDPOINT",
    "ENV_VARIABLES",
    "PROTOCOLS",
    "BoundedSpanProcessor",
    "ExportSettings",
    "OtlpProviders",
    "PrometheusEndpoint",
    "SignalSettings",
    "configure_otlp",
    "export_settings",
    "shutdown_providers",
    "start_prometheus_exporter",
]

_log = logging.getLogger("planguard.sinks.otel")


PROTOCOL_HTTP: Final = "http/protobuf"
PROTOCOL_GRPC: Final = "grpc"
PROTOCOLS: Final = (PROTOCOL_HTTP, PROTOCOL_GRPC)
#: The spec's default OTLP endpoints (used when an exporter is asked for by name with no endpoint set).
DEFAULT_HTTP_ENDPOINT: Final = "http://localhost:4318"
DEFAULT_GRPC_ENDPOINT: Final = "http://localhost:4317"
#: ``OTEL_TRACES_EXPORTER`` / ``OTEL_METRICS_EXPORTER`` / ``OTEL_LOGS_EXPORTER`` values planguard's own
#: providers know.
TRACE_EXPORTERS: Final = ("otlp", "console", "none")
LOG_EXPORTERS: Final = ("otlp", "console", "none")
METRIC_EXPORTERS: Final = ("otlp", "console", "prometheus", "none")

#: Every variable read here, with what it does (the generated docs list them).
ENV_VARIABLES: Final[dict[str, str]] = {
    "OTEL_SDK_DISABLED": "`true`: planguard builds no providers and emits nothing (default `false`).",
    "OTEL_TRACES_EXPORTER": "`otlp`, `console`, `none`, comma-separated (default `otlp` given an endpoint).",
    "OTEL_METRICS_EXPORTER": "`otlp`, `console`, `prometheus`, `none` (default as for traces).",
    "OTEL_LOGS_EXPORTER": "`otlp`, `console`, `none` for the `gen_ai.evaluation.result` events when the "
    "application set no logger provider (default as for traces).",
    "OTEL_EXPORTER_OTLP_PROTOCOL": "`http/protobuf` (default) or `grpc`.",
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "Overrides the protocol for spans.",
    "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "Overrides the protocol for metrics.",
    "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL": "Overrides the protocol for log records (evaluation events).",
    "OTEL_EXPORTER_OTLP_ENDPOINT": "Base URL; over HTTP `/v1/traces`, `/v1/metrics`, `/v1/logs` are "
    "appended.",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "Spans' URL, used as given.",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "Metrics' URL, used as given.",
    "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": "Log records' URL, used as given.",
    "OTEL_EXPORTER_OTLP_HEADERS": "`key=value,...` sent with every export (read by the exporter).",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "Headers for spans only (read by the exporter).",
    "OTEL_EXPORTER_OTLP_METRICS_HEADERS": "Headers for metrics only (read by the exporter).",
    "OTEL_EXPORTER_OTLP_LOGS_HEADERS": "Headers for log records only (read by the exporter).",
    "OTEL_EXPORTER_OTLP_TIMEOUT": "Per-request timeout in ms (read by the exporter; default 10000).",
    "OTEL_METRIC_EXPORT_INTERVAL": "Milliseconds between two metric exports (default 60000).",
    "OTEL_METRIC_EXPORT_TIMEOUT": "Milliseconds one metric export may take (default 30000).",
    "OTEL_BSP_SCHEDULE_DELAY": "Milliseconds between two span exports (default 5000).",
    "OTEL_BSP_MAX_QUEUE_SIZE": "Spans queued for export at most (default: `telemetry.max_queue_size`, 2048).",
    "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "Spans per export at most (default 512).",
    "OTEL_BSP_EXPORT_TIMEOUT": "Milliseconds one span export may take (default 30000).",
    "OTEL_SERVICE_NAME": "service.name of planguard's providers (default `telemetry.service_name`).",
    "OTEL_RESOURCE_ATTRIBUTES": "`key=value,...` resource attributes of planguard's providers.",
    "OTEL_EXPORTER_PROMETHEUS_HOST": "Address the Prometheus endpoint binds (`telemetry.prometheus_host` "
    "wins when set; default 127.0.0.1).",
    "OTEL_EXPORTER_PROMETHEUS_PORT": "Port of the Prometheus endpoint (`telemetry.prometheus_port` wins when "
    "set; default 9464).",
}


@dataclass(frozen=True)
class SignalSettings:
    """How one signal (traces, metrics or logs) leaves the process when planguard builds its provider."""

    exporters: tuple[str, ...]  # empty: the signal is off
    protocol: str
    endpoint: str  # the URL (HTTP) or target (gRPC) the OTLP exporter sends to

    @property
    def otlp(self) -> bool:
        return "otlp" in self.exporters


@dataclass(frozen=True)
class ExportSettings:
    sdk_disabled: bool
    traces: SignalSettings
    metrics: SignalSettings
    metric_interval_ms: float
    metric_timeout_ms: float
    bsp_schedule_delay_ms: float
    bsp_max_queue_size: int
    bsp_max_export_batch_size: int
    #: The OTLP span exporter's timeout: ``telemetry.export_timeout_s`` or the exporter's own default
    #: (``OTEL_EXPORTER_OTLP_TIMEOUT``, 10 s), capped by ``OTEL_BSP_EXPORT_TIMEOUT`` when that is set;
    #: ``None``: the exporter's own.
    span_export_timeout_s: float | None
    #: Where the Prometheus endpoint listens: the config's keys when set, else ``OTEL_EXPORTER_PROMETHEUS_*``.
    prometheus_host: str = "127.0.0.1"
    prometheus_port: int = 9464
    #: planguard's own evaluation events (``gen_ai.evaluation.result``), when the application set no logger
    #: provider.
    logs: SignalSettings = SignalSettings((), PROTOCOL_HTTP, "")


def _text(env: Mapping[str, str], key: str) -> str:
    return env.get(key, "").strip()


def _number(env: Mapping[str, str], key: str, default: float, minimum: float = 0) -> float:
    raw = _text(env, key)
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        _log.warning("%s=%r is not a number; using %s", key, raw, default)
        return default
    if value < minimum:
        _log.warning("%s=%r is below %s; using %s", key, raw, minimum, default)
        return default
    return value


def _exporters(
    env: Mapping[str, str], key: str, known: tuple[str, ...], default: tuple[str, ...]
) -> tuple[str, ...]:
    raw = _text(env, key).lower()
    if not raw:
        return default
    names = tuple(dict.fromkeys(n.strip() for n in raw.split(",") if n.strip()))
    if "none" in names:
        return ()
    unknown = [n for n in names if n not in known]
    if unknown:
        _log.warning("%s: planguard does not know exporter(s) %s; ignored", key, ", ".join(unknown))
    return tuple(n for n in names if n in known)


def _protocol(env: Mapping[str, str], signal: str) -> str:
    raw = (
        _text(env, f"OTEL_EXPORTER_OTLP_{signal}_PROTOCOL") or _text(env, "OTEL_EXPORTER_OTLP_PROTOCOL")
    ).lower()
    if not raw:
        return PROTOCOL_HTTP
    if raw not in PROTOCOLS:
        _log.warning(
            "OTLP protocol %r is not supported (use http/protobuf or grpc); using http/protobuf", raw
        )
        return PROTOCOL_HTTP
    return raw


def _endpoint(base: str | None, specific: str | None, protocol: str, signal: str) -> str:
    if specific:
        return specific
    if protocol == PROTOCOL_GRPC:
        return base or DEFAULT_GRPC_ENDPOINT
    return (base or DEFAULT_HTTP_ENDPOINT).rstrip("/") + f"/v1/{signal}"


def export_settings(
    config: TelemetryConfig | None = None, environ: Mapping[str, str] | None = None
) -> ExportSettings:
    """The settings planguard's own providers are built with: ``config`` first, then the variables."""
    env = os.environ if environ is None else environ
    base = config.otlp_endpoint.strip() if config is not None and config.otlp_endpoint else None
    env_base = _text(env, "OTEL_EXPORTER_OTLP_ENDPOINT") or None
    traces_specific = None if base else _text(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or None
    metrics_specific = None if base else _text(env, "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") or None
    logs_specific = None if base else _text(env, "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT") or None
    configured = bool(base or env_base or traces_specific or metrics_specific or logs_specific)
    # Without an endpoint, OTLP is only on when asked for by name: planguard then writes its local store
    # instead of sending to a collector on localhost that is most likely not there.
    default = ("otlp",) if configured else ()
    trace_names = _exporters(env, "OTEL_TRACES_EXPORTER", TRACE_EXPORTERS, default)
    metric_names = _exporters(env, "OTEL_METRICS_EXPORTER", METRIC_EXPORTERS, default)
    log_names = _exporters(env, "OTEL_LOGS_EXPORTER", LOG_EXPORTERS, default)
    t_proto, m_proto, l_proto = _protocol(env, "TRACES"), _protocol(env, "METRICS"), _protocol(env, "LOGS")
    base = base or env_base
    traces = SignalSettings(trace_names, t_proto, _endpoint(base, traces_specific, t_proto, "traces"))
    metrics = SignalSettings(metric_names, m_proto, _endpoint(base, metrics_specific, m_proto, "metrics"))
    logs = SignalSettings(log_names, l_proto, _endpoint(base, logs_specific, l_proto, "logs"))
    queue_default = config.max_queue_size if config is not None else 2048
    span_timeout_s = config.export_timeout_s if config is not None else None
    if _text(env, "OTEL_BSP_EXPORT_TIMEOUT"):
        own_s = span_timeout_s or _number(env, "OTEL_EXPORTER_OTLP_TIMEOUT", 10_000) / 1000
        span_timeout_s = min(own_s, _number(env, "OTEL_BSP_EXPORT_TIMEOUT", 30_000, 1) / 1000)
    prom_host = _text(env, "OTEL_EXPORTER_PROMETHEUS_HOST") or "127.0.0.1"
    prom_port = int(_number(env, "OTEL_EXPORTER_PROMETHEUS_PORT", 9464))
    if config is not None:
        if "prometheus_host" in config.model_fields_set or not _text(env, "OTEL_EXPORTER_PROMETHEUS_HOST"):
            prom_host = config.prometheus_host
        if config.prometheus_port is not None:
            prom_port = config.prometheus_port
    return ExportSettings(
        prometheus_host=prom_host,
        prometheus_port=min(prom_port, 65535),
        sdk_disabled=_text(env, "OTEL_SDK_DISABLED").lower() == "true",
        traces=traces,
        metrics=metrics,
        logs=logs,
        metric_interval_ms=_number(env, "OTEL_METRIC_EXPORT_INTERVAL", 60_000, 1),
        metric_timeout_ms=_number(env, "OTEL_METRIC_EXPORT_TIMEOUT", 30_000, 1),
        bsp_schedule_delay_ms=_number(env, "OTEL_BSP_SCHEDULE_DELAY", 5_000, 1),
        bsp_max_queue_size=int(_number(env, "OTEL_BSP_MAX_QUEUE_SIZE", queue_default, 1)),
        bsp_max_export_batch_size=int(_number(env, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512, 1)),
        span_export_timeout_s=span_timeout_s,
    )


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
    logger_provider: Any = None  # an SDK LoggerProvider (the SDK's logs module is still underscored)


#: The least a provider gets when an earlier one used up the shared deadline (its last export is dropped).
_MIN_PROVIDER_S = 0.05


def shutdown_providers(providers: Sequence[Any], timeout_s: float) -> None:
    """Shut providers down in order within one shared deadline. A meter provider takes the time it has
    left; a tracer provider's processors bound themselves (:class:`BoundedSpanProcessor` has its own
    timeout); any other (the logger provider, whose batch processor has no deadline) is shut down on a
    thread of its own and left to finish in the background when the deadline passes."""
    deadline = time.monotonic() + timeout_s
    for provider in providers:
        left = max(_MIN_PROVIDER_S, deadline - time.monotonic())
        if isinstance(provider, MeterProvider):
            provider.shutdown(timeout_millis=left * 1000)
        elif isinstance(provider, TracerProvider):
            provider.shutdown()
        else:
            closing = threading.Thread(target=provider.shutdown, name="planguard-otel-shutdown", daemon=True)
            closing.start()
            closing.join(left)
            if closing.is_alive():
                _log.debug("%s still shutting down at the deadline; left to finish", type(provider).__name__)


def _resource(service_name: str) -> Resource:
    # The standard variables name the service when set (OTEL_SERVICE_NAME, or service.name in
    # OTEL_RESOURCE_ATTRIBUTES); ``service_name`` is the fallback. Resource.create merges the rest.
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
    :func:`~planguard.sinks.otel.env.export_settings` reads them (exporters, protocols, endpoints,
    ``OTEL_BSP_*``, the metric interval; the exporters read their own headers, timeout, compression and
    certificates). ``traces_endpoint`` (an OTLP/HTTP URL) forces OTLP/HTTP spans there and no metrics or
    logs unless ``metrics_endpoint`` is given too. The logger provider carries planguard's evaluation events
    (``OTEL_LOGS_EXPORTER``); the caller uses it only when the application set none.

    ``None`` with ``OTEL_SDK_DISABLED=true`` or when no signal has an exporter. The providers are not made
    global.
    """
    config = config if config is not None else TelemetryConfig()
    settings = settings if settings is not None else export_settings(config)
    if settings.sdk_disabled:
        return None
    traces, metrics, logs = settings.traces, settings.metrics, settings.logs
    if traces_endpoint is not None:  # (and metrics only where metrics_endpoint says)
        traces = SignalSettings(("otlp",), PROTOCOL_HTTP, traces_endpoint)
        metrics = logs = SignalSettings((), PROTOCOL_HTTP, "")
    if metrics_endpoint is not None:
        metrics = SignalSettings(("otlp",), PROTOCOL_HTTP, metrics_endpoint)
    if not traces.exporters and not metrics.exporters and not logs.exporters:
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
    if logs.exporters:
        out.logger_provider = _logger_provider(logs, resource, drops, settings, config)
        out.owned.append(out.logger_provider)
    return out


def _logger_provider(
    logs: SignalSettings,
    resource: Resource,
    drops: DropCounter,
    settings: ExportSettings,
    config: TelemetryConfig,
) -> Any:
    """An SDK logger provider for planguard's own evaluation events, one batch processor per exporter; a
    batch the exporter refuses is counted (``log_export_failed``). Never made global."""
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor

    provider = LoggerProvider(resource=resource)
    for name in logs.exporters:
        # A hung collector must not hold the sink's shutdown past its deadline: a log batch gets at most
        # that long (the SDK's log processor has no deadline of its own).
        timeout = config.export_timeout_s or config.shutdown_timeout_s
        exporter = _otlp_exporter("log", logs, timeout) if name == "otlp" else _console_exporter("log")
        # (duck-typed: the SDK's exporter base class was renamed in 1.39)
        counting: Any = _CountingLogExporter(exporter, drops)
        provider.add_log_record_processor(
            BatchLogRecordProcessor(
                counting,
                max_queue_size=settings.bsp_max_queue_size,
                max_export_batch_size=min(settings.bsp_max_export_batch_size, settings.bsp_max_queue_size),
                schedule_delay_millis=settings.bsp_schedule_delay_ms,
            )
        )
    return provider


class _CountingLogExporter:
    """Hands batches to a log exporter and counts the records of a batch it refuses or raises on."""

    def __init__(self, exporter: Any, drops: DropCounter) -> None:
        self._exporter = exporter
        self._drops = drops

    def export(self, batch: Sequence[Any]) -> Any:
        try:
            result = self._exporter.export(batch)
        except Exception as exc:
            _log.debug("log export raised: %r", exc)
            failure = import_module("opentelemetry.sdk._logs.export").LogExportResult.FAILURE
            return self._failed(batch, failure)
        # (by name: the result enum was renamed LogRecordExportResult in 1.39, the old name kept as another)
        return result if getattr(result, "name", None) == "SUCCESS" else self._failed(batch, result)

    def _failed(self, batch: Sequence[Any], result: Any) -> Any:
        self._drops.add("log_export_failed", len(batch))
        return result

    def shutdown(self) -> None:
        self._exporter.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return bool(self._exporter.force_flush(timeout_millis))


def _otlp_exporter(kind: str, signal: SignalSettings, timeout: float | None) -> Any:
    """The OTLP exporter of spans (``kind`` "trace"), metrics ("metric") or log records ("log") over the
    signal's protocol (it reads its own headers, compression and certificates from the variables)."""
    grpc = signal.protocol == PROTOCOL_GRPC
    module = f"opentelemetry.exporter.otlp.proto.{'grpc' if grpc else 'http'}.{_EXPORTER_MODULES[kind]}"
    name = {"trace": "OTLPSpanExporter", "metric": "OTLPMetricExporter", "log": "OTLPLogExporter"}[kind]
    try:
        exporter = getattr(import_module(module), name)
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImportError(_GRPC_MISSING if grpc else _HTTP_MISSING) from exc
    return exporter(endpoint=signal.endpoint, timeout=timeout)


_EXPORTER_MODULES: Final = {"trace": "trace_exporter", "metric": "metric_exporter", "log": "_log_exporter"}


def _console_exporter(kind: str) -> Any:
    if kind == "log":  # (ConsoleLogExporter before 1.39)
        logs_export = import_module("opentelemetry.sdk._logs.export")
        console = getattr(logs_export, "ConsoleLogRecordExporter", None) or logs_export.ConsoleLogExporter
        return console(out=sys.stdout)
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
    max_threads: int = 4,
    request_timeout_s: float = 10.0,
    drops: DropCounter | None = None,
) -> PrometheusEndpoint:
    """A ``MeterProvider`` whose metrics Prometheus can scrape at ``http://host:port/metrics``.

    Uses ``opentelemetry-exporter-prometheus`` with a private registry (nothing global is touched) and
    ``prometheus_client``'s WSGI app, served on a daemon thread bound to ``host`` (loopback by default).
    Bounded in threads, as it lives in the agent's process: at most ``max_threads`` connections are
    served at once, each with ``request_timeout_s`` to send its request; a connection that finds every
    thread busy is closed at once and counted (``prometheus_connection_refused`` in ``drops``), so
    half-sent requests cannot pile up threads. Pass ``port=0`` for any free port; the chosen one is in
    ``.port``. OTel metric names map to Prometheus names with dots as underscores and ``_total`` on counters
    (``planguard.tool.calls`` → ``planguard_tool_calls_total``).
    """
    try:
        from opentelemetry.exporter.prometheus import PrometheusMetricReader
        from prometheus_client import CollectorRegistry
        from prometheus_client.exposition import make_wsgi_app
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImportError(
            "Prometheus export needs opentelemetry-exporter-prometheus: "
            "pip install 'planguard-agents[prometheus]'"
        ) from exc
    from .scrape import BoundedWSGIServer

    registry = CollectorRegistry(auto_describe=True)
    reader = PrometheusMetricReader(registry=registry)
    server = BoundedWSGIServer(
        (host, port),
        make_wsgi_app(registry),
        max_threads=max_threads,
        request_timeout_s=request_timeout_s,
        drops=drops if drops is not None else DropCounter(),
    )
    threading.Thread(target=server.serve_forever, name="planguard-prometheus", daemon=True).start()
    mp = MeterProvider(metric_readers=[reader], resource=_resource(service_name), views=list(views))
    return PrometheusEndpoint(mp, host, int(server.server_address[1]), server)
