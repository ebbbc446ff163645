"""The standard ``OTEL_*`` variables, read once into :class:`ExportSettings`, as the OpenTelemetry SDK's
environment-variable specification defines them (``opentelemetry.sdk.environment_variables``).

Only what planguard's own providers need is read here; exporters still read their own variables
(``OTEL_EXPORTER_OTLP_*_HEADERS``, ``_TIMEOUT``, ``_COMPRESSION``, ``_CERTIFICATE``, ``_INSECURE``) when they
are built. Nothing here imports the SDK: reading the settings is cheap and has no side effects.

Endpoints follow the OTLP exporter spec: over HTTP the base ``OTEL_EXPORTER_OTLP_ENDPOINT`` gets
``/v1/traces`` / ``/v1/metrics`` appended and a per-signal ``OTEL_EXPORTER_OTLP_{TRACES,METRICS}_ENDPOINT`` is
used as given; over gRPC both are used as given (``host:port``, no path).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from .config import TelemetryConfig

__all__ = [
    "DEFAULT_GRPC_ENDPOINT",
    "DEFAULT_HTTP_ENDPOINT",
    "ENV_VARIABLES",
    "PROTOCOLS",
    "ExportSettings",
    "SignalSettings",
    "export_settings",
]

_log = logging.getLogger("planguard.sinks.telemetry")

PROTOCOL_HTTP: Final = "http/protobuf"
PROTOCOL_GRPC: Final = "grpc"
PROTOCOLS: Final = (PROTOCOL_HTTP, PROTOCOL_GRPC)
#: The spec's default OTLP endpoints (used when an exporter is asked for by name with no endpoint set).
DEFAULT_HTTP_ENDPOINT: Final = "http://localhost:4318"
DEFAULT_GRPC_ENDPOINT: Final = "http://localhost:4317"
#: ``OTEL_TRACES_EXPORTER`` / ``OTEL_METRICS_EXPORTER`` values planguard's own providers know.
TRACE_EXPORTERS: Final = ("otlp", "console", "none")
METRIC_EXPORTERS: Final = ("otlp", "console", "prometheus", "none")

#: Every variable read here, with what it does (the generated docs list them).
ENV_VARIABLES: Final[dict[str, str]] = {
    "OTEL_SDK_DISABLED": "`true`: planguard builds no providers and emits nothing (default `false`).",
    "OTEL_TRACES_EXPORTER": "`otlp`, `console`, `none`, comma-separated (default `otlp` given an endpoint).",
    "OTEL_METRICS_EXPORTER": "`otlp`, `console`, `prometheus`, `none` (default as for traces).",
    "OTEL_EXPORTER_OTLP_PROTOCOL": "`http/protobuf` (default) or `grpc`.",
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "Overrides the protocol for spans.",
    "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "Overrides the protocol for metrics.",
    "OTEL_EXPORTER_OTLP_ENDPOINT": "Base URL; over HTTP `/v1/traces` and `/v1/metrics` are appended.",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "Spans' URL, used as given.",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "Metrics' URL, used as given.",
    "OTEL_EXPORTER_OTLP_HEADERS": "`key=value,...` sent with every export (read by the exporter).",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "Headers for spans only (read by the exporter).",
    "OTEL_EXPORTER_OTLP_METRICS_HEADERS": "Headers for metrics only (read by the exporter).",
    "OTEL_EXPORTER_OTLP_TIMEOUT": "Per-request timeout in ms (read by the exporter; default 10000).",
    "OTEL_METRIC_EXPORT_INTERVAL": "Milliseconds between two metric exports (default 60000).",
    "OTEL_METRIC_EXPORT_TIMEOUT": "Milliseconds one metric export may take (default 30000).",
    "OTEL_BSP_SCHEDULE_DELAY": "Milliseconds between two span exports (default 5000).",
    "OTEL_BSP_MAX_QUEUE_SIZE": "Spans queued for export at most (default: `telemetry.max_queue_size`, 2048).",
    "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "Spans per export at most (default 512).",
    "OTEL_BSP_EXPORT_TIMEOUT": "Milliseconds one span export may take (default 30000).",
    "OTEL_SERVICE_NAME": "service.name of planguard's providers (default `telemetry.service_name`).",
    "OTEL_RESOURCE_ATTRIBUTES": "`key=value,...` resource attributes of planguard's providers.",
}


@dataclass(frozen=True)
class SignalSettings:
    """How one signal (traces or metrics) leaves the process when planguard builds its provider."""

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
    configured = bool(base or env_base or traces_specific or metrics_specific)
    # Without an endpoint, OTLP is only on when asked for by name: planguard then writes its local store
    # instead of sending to a collector on localhost that is most likely not there.
    default = ("otlp",) if configured else ()
    trace_names = _exporters(env, "OTEL_TRACES_EXPORTER", TRACE_EXPORTERS, default)
    metric_names = _exporters(env, "OTEL_METRICS_EXPORTER", METRIC_EXPORTERS, default)
    t_proto, m_proto = _protocol(env, "TRACES"), _protocol(env, "METRICS")
    base = base or env_base
    traces = SignalSettings(trace_names, t_proto, _endpoint(base, traces_specific, t_proto, "traces"))
    metrics = SignalSettings(metric_names, m_proto, _endpoint(base, metrics_specific, m_proto, "metrics"))
    queue_default = config.max_queue_size if config is not None else 2048
    span_timeout_s = config.export_timeout_s if config is not None else None
    if _text(env, "OTEL_BSP_EXPORT_TIMEOUT"):
        own_s = span_timeout_s or _number(env, "OTEL_EXPORTER_OTLP_TIMEOUT", 10_000) / 1000
        span_timeout_s = min(own_s, _number(env, "OTEL_BSP_EXPORT_TIMEOUT", 30_000, 1) / 1000)
    return ExportSettings(
        sdk_disabled=_text(env, "OTEL_SDK_DISABLED").lower() == "true",
        traces=traces,
        metrics=metrics,
        metric_interval_ms=_number(env, "OTEL_METRIC_EXPORT_INTERVAL", 60_000, 1),
        metric_timeout_ms=_number(env, "OTEL_METRIC_EXPORT_TIMEOUT", 30_000, 1),
        bsp_schedule_delay_ms=_number(env, "OTEL_BSP_SCHEDULE_DELAY", 5_000, 1),
        bsp_max_queue_size=int(_number(env, "OTEL_BSP_MAX_QUEUE_SIZE", queue_default, 1)),
        bsp_max_export_batch_size=int(_number(env, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512, 1)),
        span_export_timeout_s=span_timeout_s,
    )
