"""``build_sinks``: the sinks a config asks for, wired to the right providers."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ..errors import ErrorCounter
from ..sinks import Sink
from .config import TelemetryConfig, resolve_traces_endpoint
from .drops import DropCounter

if TYPE_CHECKING:
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import TracerProvider

    from ..store.config import StoreConfig

__all__ = ["build_sinks"]

_log = logging.getLogger("planguard.telemetry")


def build_sinks(
    telemetry: TelemetryConfig | None = None,
    store: StoreConfig | None = None,
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    *,
    errors: ErrorCounter | None = None,
    drops: DropCounter | None = None,
) -> list[Sink]:
    """Sinks for one pipeline, from the ``telemetry:`` and ``store:`` config sections.

    * OpenTelemetry (``telemetry.enabled``): spans/metrics go to the providers passed in; else, when an
      OTLP endpoint is configured (config or ``OTEL_EXPORTER_OTLP_*``), to OTLP/HTTP providers built
      here and owned by the sink; else to the global providers (no-ops until the app configures OTel).
      ``telemetry.prometheus_port`` serves metrics for Prometheus when no meter provider is passed.
    * The local JSONL store (``store.enabled``), with or without an OTLP endpoint: while a collector is
      down the store still keeps every session (``store: {enabled: false}`` turns it off).
    * The console timeline when ``telemetry.console``.

    All sinks share one :class:`DropCounter`, reported as the ``planguard.telemetry.dropped`` metric.
    """
    from ..store.config import StoreConfig

    telemetry = telemetry if telemetry is not None else TelemetryConfig()
    store = store if store is not None else StoreConfig()
    drops = drops if drops is not None else DropCounter()
    sinks: list[Sink] = []
    endpoint = resolve_traces_endpoint(telemetry)
    if telemetry.enabled:
        from .otel import OTelSink

        owned: list[Any] = []
        tp, mp = tracer_provider, meter_provider
        if tp is None and endpoint is not None:
            from .export import configure_otlp

            built = configure_otlp(telemetry, drops=drops, errors=errors)
            if built is not None:
                tp = built.tracer_provider
                mp = mp if mp is not None else built.meter_provider
                owned.extend(built.owned)
        if mp is None and telemetry.prometheus_port is not None:
            from .export import start_prometheus_exporter

            prom = start_prometheus_exporter(
                telemetry.prometheus_port, telemetry.prometheus_host, service_name=telemetry.service_name
            )
            _log.info("planguard metrics for Prometheus at %s", prom.url)
            mp = prom.meter_provider
            owned.append(prom)
        sinks.append(
            OTelSink(
                tracer_provider=tp,
                meter_provider=mp,
                agent_name=telemetry.agent_name,
                capture=telemetry.capture_mode(),
                max_content_chars=telemetry.max_content_chars,
                max_queue_size=telemetry.max_queue_size,
                drops=drops,
                errors=errors,
                owned=owned,
                defer_spans=telemetry.defer_spans,
                shutdown_timeout_s=telemetry.shutdown_timeout_s,
            )
        )
    if store.enabled:
        from ..store.writer import StoreSink

        sinks.append(StoreSink(store, drops=drops, errors=errors))
    if telemetry.console:
        from ..console import ConsoleSink

        sinks.append(ConsoleSink(drops=drops))
    return sinks
