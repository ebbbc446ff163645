"""``build_sinks``: the sinks a config asks for, wired to the right providers."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.trace import NoOpTracerProvider

from ...errors import ErrorCounter
from .. import Sink
from ..drops import DropCounter
from .config import TelemetryConfig
from .env import configure_otlp, export_settings, start_prometheus_exporter
from .providers import app_logger_provider, app_meter_provider, app_tracer_provider

if TYPE_CHECKING:
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import TracerProvider

    from ..store.config import StoreConfig

__all__ = ["build_sinks"]

_log = logging.getLogger("planguard.sinks.otel")


def build_sinks(
    telemetry: TelemetryConfig | None = None,
    store: StoreConfig | None = None,
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    *,
    errors: ErrorCounter | None = None,
    drops: DropCounter | None = None,
    recorded: bool = False,
) -> list[Sink]:
    """Sinks for one pipeline, from the ``telemetry:`` and ``store:`` config sections.

    * OpenTelemetry (``telemetry.enabled``), for each signal the first of: the provider passed in; the
      application's global provider, once it has set one (``opentelemetry-instrument``, an OpenInference
      ``register()``); else providers built here from the ``OTEL_*`` variables (:mod:`.settings`), owned
      by the sink, and none with ``OTEL_SDK_DISABLED=true``. ``telemetry.prometheus_port`` (or
      ``OTEL_METRICS_EXPORTER=prometheus``) serves metrics for Prometheus when no meter provider is found.
      The evaluation events go to the application's global logger provider once it has set one, else to one
      built here from ``OTEL_LOGS_EXPORTER`` and owned by the sink (never made global).
    * The local JSONL store (``store.enabled``), with or without an OTLP exporter: while a collector is
      down the store still keeps every session (``store: {enabled: false}`` turns it off).
    * The console timeline when ``telemetry.console``.

    All sinks share one :class:`DropCounter`, reported as the ``planguard.telemetry.dropped`` metric.
    ``recorded``: every session is a recording being replayed (its spans keep the recorded times).
    """
    from ..store.config import StoreConfig

    telemetry = telemetry if telemetry is not None else TelemetryConfig()
    store = store if store is not None else StoreConfig()
    drops = drops if drops is not None else DropCounter()
    sinks: list[Sink] = []
    settings = export_settings(telemetry)
    if telemetry.enabled:
        from .otel import OTelSink

        owned: list[Any] = []
        tp, mp, lp = tracer_provider, meter_provider, app_logger_provider()
        if tp is None:
            tp = app_tracer_provider()
        if mp is None:
            mp = app_meter_provider()
        if (tp is None or mp is None or lp is None) and not settings.sdk_disabled:
            built = configure_otlp(
                telemetry,
                drops=drops,
                errors=errors,
                settings=replace(
                    settings,
                    traces=settings.traces if tp is None else replace(settings.traces, exporters=()),
                    metrics=settings.metrics if mp is None else replace(settings.metrics, exporters=()),
                    logs=settings.logs if lp is None else replace(settings.logs, exporters=()),
                ),
            )
            if built is not None:
                tp = tp if tp is not None else built.tracer_provider
                mp = mp if mp is not None else built.meter_provider
                lp = lp if lp is not None else built.logger_provider
                owned.extend(built.owned)
        wants_prometheus = telemetry.prometheus_port is not None or "prometheus" in settings.metrics.exporters
        if mp is None and wants_prometheus and not settings.sdk_disabled:
            prom = start_prometheus_exporter(
                settings.prometheus_port,
                settings.prometheus_host,
                service_name=telemetry.service_name,
                drops=drops,
            )
            _log.info("planguard metrics for Prometheus at %s", prom.url)
            mp = prom.meter_provider
            owned.append(prom)
        if settings.sdk_disabled:
            tp = tp if tp is not None else NoOpTracerProvider()
            mp = mp if mp is not None else NoOpMeterProvider()
        sinks.append(
            OTelSink(
                tracer_provider=tp,
                meter_provider=mp,
                agent_name=telemetry.agent_name,
                provider_name=telemetry.provider_name,
                tool_spans=telemetry.tool_spans,
                capture=telemetry.capture_mode(),
                max_content_chars=telemetry.max_content_chars,
                max_queue_size=telemetry.max_queue_size,
                drops=drops,
                errors=errors,
                owned=owned,
                defer_spans=telemetry.defer_spans,
                shutdown_timeout_s=telemetry.shutdown_timeout_s,
                recorded=recorded,
                logger_provider=lp,
            )
        )
    if store.enabled:
        from ..store.writer import StoreSink

        sinks.append(StoreSink(store, drops=drops, errors=errors))
    if telemetry.console:
        from ..console import ConsoleSink

        sinks.append(ConsoleSink(drops=drops))
    return sinks
