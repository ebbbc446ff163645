"""The application's own providers, once it has set them: what planguard's sinks use before building any."""

from __future__ import annotations

from opentelemetry import metrics, trace
from opentelemetry._logs import LoggerProvider, NoOpLoggerProvider, get_logger_provider
from opentelemetry._logs._internal import ProxyLoggerProvider  # the API exports no public name for it
from opentelemetry.metrics import MeterProvider
from opentelemetry.metrics._internal import _ProxyMeterProvider  # the API exports no public name for it
from opentelemetry.trace import TracerProvider

__all__ = ["app_logger_provider", "app_meter_provider", "app_tracer_provider"]


def app_tracer_provider() -> TracerProvider | None:
    """The application's global tracer provider, or ``None`` while it has set none (the API's proxy)."""
    provider = trace.get_tracer_provider()
    return None if isinstance(provider, trace.ProxyTracerProvider) else provider


def app_meter_provider() -> MeterProvider | None:
    """The application's global meter provider, or ``None`` while it has set none (the API's proxy)."""
    provider = metrics.get_meter_provider()
    return None if isinstance(provider, _ProxyMeterProvider) else provider


def app_logger_provider() -> LoggerProvider | None:
    """The application's global logger provider, or ``None`` while it has set none (the API's proxy)."""
    provider = get_logger_provider()
    return None if isinstance(provider, (ProxyLoggerProvider, NoOpLoggerProvider)) else provider
