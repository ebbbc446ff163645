"""Telemetry sinks: OpenTelemetry spans/events/metrics (GenAI conventions), plus the helpers that get them
out of the process (OTLP/HTTP, Prometheus). See :mod:`planguard.sinks.otel.attributes` for every name."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from ..capture import CaptureMode
from ..drops import DropCounter
from .build import build_sinks
from .config import TelemetryConfig

if TYPE_CHECKING:
    from .env import BoundedSpanProcessor, configure_otlp, start_prometheus_exporter
    from .otel import OTelSink

__all__ = [
    "BoundedSpanProcessor",
    "CaptureMode",
    "DropCounter",
    "OTelSink",
    "TelemetryConfig",
    "build_sinks",
    "configure_otlp",
    "start_prometheus_exporter",
]

_LAZY = {
    "OTelSink": "otel",
    "BoundedSpanProcessor": "env",
    "configure_otlp": "env",
    "start_prometheus_exporter": "env",
}


def __getattr__(name: str) -> Any:
    # The OTel SDK pieces load on first use, so importing planguard's config stays cheap.
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{module}"), name)
