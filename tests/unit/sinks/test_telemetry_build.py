"""build_sinks: which sinks a config gives, with which providers."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider

from planguard.events import ToolEvent
from planguard.offline.loaders.planguard_store import iter_sessions
from planguard.session import Pipeline
from planguard.sinks.console import ConsoleSink
from planguard.sinks.otel import build_sinks
from planguard.sinks.otel.config import TelemetryConfig
from planguard.sinks.otel.otel import OTelSink
from planguard.sinks.store.config import StoreConfig
from planguard.sinks.store.writer import StoreSink

OTLP_VARS = (
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
)


@pytest.fixture(autouse=True)
def no_otlp_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in OTLP_VARS:
        monkeypatch.delenv(var, raising=False)


def kinds(sinks: list[object]) -> list[str]:
    return [type(s).__name__ for s in sinks]


def test_default_is_global_otel_plus_local_store(tmp_path: Path) -> None:
    sinks = build_sinks(TelemetryConfig(), StoreConfig(path=str(tmp_path)))
    assert kinds(sinks) == ["OTelSink", "StoreSink"]
    s = Pipeline(sinks=tuple(sinks)).session("d")
    s.observe(ToolEvent.shell("ls"))
    s.end()
    assert sinks[1].flush()  # type: ignore[attr-defined]
    assert [x.id for x in iter_sessions(tmp_path)] == ["d"]  # type: ignore[union-attr]
    for sink in sinks:
        sink.shutdown()


def test_the_store_stays_on_with_an_otlp_endpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With an endpoint the store used to be off, so a collector outage kept nothing at all."""
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")
    sinks = build_sinks(TelemetryConfig(), StoreConfig(path=str(tmp_path)))
    assert kinds(sinks) == ["OTelSink", "StoreSink"]
    otel = sinks[0]
    assert isinstance(otel, OTelSink) and len(otel._owned) == 2  # its own OTLP tracer and logger providers
    for sink in sinks:
        sink.shutdown()
    assert kinds(build_sinks(TelemetryConfig(), StoreConfig(path=str(tmp_path), enabled=False))) == [
        "OTelSink"
    ]


def test_passed_providers_win_and_nothing_is_owned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setenv("OTEL_LOGS_EXPORTER", "none")  # (no logger provider is passed in)
    provider = TracerProvider()
    meters = MeterProvider()
    (otel,) = build_sinks(
        TelemetryConfig(), StoreConfig(enabled=False), tracer_provider=provider, meter_provider=meters
    )
    assert isinstance(otel, OTelSink) and otel._owned == []
    # one signal passed in: planguard builds (and owns) only the other one, from the variables
    (otel,) = build_sinks(TelemetryConfig(), StoreConfig(enabled=False), tracer_provider=provider)
    assert isinstance(otel, OTelSink) and [type(p).__name__ for p in otel._owned] == ["MeterProvider"]
    otel.shutdown()


def test_disabled_and_console(tmp_path: Path) -> None:
    assert build_sinks(TelemetryConfig(enabled=False), StoreConfig(enabled=False)) == []
    sinks = build_sinks(TelemetryConfig(enabled=False, console=True), StoreConfig(path=str(tmp_path)))
    assert [type(s) for s in sinks] == [StoreSink, ConsoleSink]


def test_prometheus_port_from_config() -> None:
    (otel,) = build_sinks(TelemetryConfig(prometheus_port=0), StoreConfig(enabled=False))
    assert isinstance(otel, OTelSink)
    (prom,) = otel._owned
    s = Pipeline(sinks=(otel,)).session("p")
    s.observe(ToolEvent.shell("ls"))
    s.end()
    assert "planguard_tool_calls_total" in httpx.get(prom.url, timeout=5).text
    otel.shutdown()


def test_config_rejects_unknown_keys() -> None:
    with pytest.raises(ValueError, match="otlp_endpont"):
        TelemetryConfig.model_validate({"otlp_endpont": "x"})
    with pytest.raises(ValueError, match="max_queue"):
        StoreConfig.model_validate({"max_queue": 0})
