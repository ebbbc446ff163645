"""The standard ``OTEL_*`` variables, each against a real OTLP receiver on 127.0.0.1: an HTTP server decoding
the protobuf requests with ``opentelemetry-proto``, and a gRPC server implementing its TraceService and
MetricsService. Plus: the application's global providers win over everything planguard would build."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent import futures
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from opentelemetry import metrics as otel_metrics
from opentelemetry import trace
from opentelemetry.metrics import _internal as metrics_internal
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from planguard.events import ToolEvent
from planguard.session import Pipeline
from planguard.sinks.otel import attributes as A
from planguard.sinks.otel import build_sinks
from planguard.sinks.otel.config import TelemetryConfig
from planguard.sinks.otel.otel import OTelSink
from planguard.sinks.store.config import StoreConfig

ALL_VARIABLES = (
    "OTEL_SDK_DISABLED",
    "OTEL_TRACES_EXPORTER",
    "OTEL_METRICS_EXPORTER",
    "OTEL_LOGS_EXPORTER",
    "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL",
    "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
    "OTEL_EXPORTER_OTLP_TIMEOUT",
    "OTEL_METRIC_EXPORT_INTERVAL",
    "OTEL_BSP_SCHEDULE_DELAY",
    "OTEL_BSP_MAX_QUEUE_SIZE",
    "OTEL_BSP_MAX_EXPORT_BATCH_SIZE",
    "OTEL_BSP_EXPORT_TIMEOUT",
    "OTEL_SERVICE_NAME",
    "OTEL_RESOURCE_ATTRIBUTES",
)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ALL_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@dataclass
class Received:
    """What a receiver decoded: span names per request, metric names, and the headers that came along."""

    span_batches: list[list[str]] = field(default_factory=list)
    metric_names: set[str] = field(default_factory=set)
    #: (event name, gen_ai.evaluation.name) of every log record
    log_events: list[tuple[str, str]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    delay_s: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def spans(self) -> list[str]:
        return [name for batch in self.span_batches for name in batch]

    def take_traces(self, body: bytes, headers: dict[str, str], path: str = "") -> None:
        req = trace_service_pb2.ExportTraceServiceRequest()
        req.ParseFromString(body)
        names = [s.name for rs in req.resource_spans for ss in rs.scope_spans for s in ss.spans]
        with self.lock:
            self.span_batches.append(names)
            self.headers.append(headers)
            self.paths.append(path)

    def take_metrics(self, body: bytes, headers: dict[str, str], path: str = "") -> None:
        req = metrics_service_pb2.ExportMetricsServiceRequest()
        req.ParseFromString(body)
        with self.lock:
            for rm in req.resource_metrics:
                for sm in rm.scope_metrics:
                    self.metric_names.update(m.name for m in sm.metrics)
            self.headers.append(headers)
            self.paths.append(path)

    def take_logs(self, body: bytes, headers: dict[str, str], path: str = "") -> None:
        req = logs_service_pb2.ExportLogsServiceRequest()
        req.ParseFromString(body)
        with self.lock:
            for rl in req.resource_logs:
                for sl in rl.scope_logs:
                    for r in sl.log_records:
                        attrs = {a.key: a.value.string_value for a in r.attributes}
                        # (before OTel 1.35 the Events API puts the name in the event.name attribute)
                        name = getattr(r, "event_name", "") or attrs.get("event.name", "")
                        self.log_events.append((name, attrs.get("gen_ai.evaluation.name", "")))
            self.headers.append(headers)
            self.paths.append(path)

    def wait(self, what: str, timeout_s: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if (what == "spans" and self.spans) or (what == "metrics" and self.metric_names):
                return True
            time.sleep(0.02)
        return False


class _HttpHandler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        received: Received = self.server.received  # type: ignore[attr-defined]
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if received.delay_s:
            time.sleep(received.delay_s)
        headers = {k.lower(): v for k, v in self.headers.items()}
        if self.path.endswith("traces"):
            received.take_traces(body, headers, self.path)
        elif self.path.endswith("logs"):
            received.take_logs(body, headers, self.path)
        else:
            received.take_metrics(body, headers, self.path)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def http_receiver() -> Iterator[tuple[str, Received]]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _HttpHandler)
    server.received = Received()  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    host, port = server.server_address[:2]
    yield f"http://{host}:{port}", server.received  # type: ignore[attr-defined]
    server.shutdown()
    server.server_close()


@pytest.fixture
def grpc_receiver() -> Iterator[tuple[str, Received]]:
    """A real gRPC OTLP receiver. gRPC export is the optional otlp-grpc extra: where grpcio is not installed
    (CI's lowest-versions pass installs the core's extras only) the gRPC tests skip, saying so."""
    grpc = pytest.importorskip("grpc", reason="gRPC export needs the otlp-grpc extra (grpcio)")
    from opentelemetry.proto.collector.logs.v1 import logs_service_pb2_grpc
    from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2_grpc
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

    class Traces(trace_service_pb2_grpc.TraceServiceServicer):
        def Export(self, request: Any, context: Any) -> Any:
            headers = {k: v for k, v in context.invocation_metadata()}
            received.take_traces(request.SerializeToString(), headers, "grpc")
            return trace_service_pb2.ExportTraceServiceResponse()

    class Metrics(metrics_service_pb2_grpc.MetricsServiceServicer):
        def Export(self, request: Any, context: Any) -> Any:
            headers = {k: v for k, v in context.invocation_metadata()}
            received.take_metrics(request.SerializeToString(), headers, "grpc")
            return metrics_service_pb2.ExportMetricsServiceResponse()

    class Logs(logs_service_pb2_grpc.LogsServiceServicer):
        def Export(self, request: Any, context: Any) -> Any:
            headers = {k: v for k, v in context.invocation_metadata()}
            received.take_logs(request.SerializeToString(), headers, "grpc")
            return logs_service_pb2.ExportLogsServiceResponse()

    received = Received()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    logs_service_pb2_grpc.add_LogsServiceServicer_to_server(Logs(), server)
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Traces(), server)
    metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server(Metrics(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield f"http://127.0.0.1:{port}", received
    server.stop(grace=None)


def build_sink(**config: Any) -> OTelSink:
    (sink,) = build_sinks(TelemetryConfig(**config), StoreConfig(enabled=False))
    assert isinstance(sink, OTelSink)
    return sink


def run(sink: OTelSink, n: int = 2) -> None:
    s = Pipeline(sinks=(sink,)).session("env")
    for i in range(n):
        ev = ToolEvent.shell(f"cat /testbed/f{i}.py", call_id=f"c{i}")
        s.before_tool(ev)
        ev.exit_code = 0
        s.after_tool(ev)
    s.end()


# --------------------------------------------------------------------------- switches


def test_sdk_disabled_builds_nothing_and_sends_nothing(
    http_receiver: tuple[str, Received], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, received = http_receiver
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    sink = build_sink()
    assert sink._owned == []
    run(sink)
    sink.shutdown()
    assert received.span_batches == [] and received.metric_names == set()
    # and the store is kept, as nothing is exported
    sinks = build_sinks(TelemetryConfig(), StoreConfig(enabled=True, path="/tmp/planguard-env-test"))
    assert [type(s).__name__ for s in sinks] == ["OTelSink", "StoreSink"]
    for s in sinks:
        s.shutdown()


def test_traces_exporter_none_sends_no_spans_but_metrics(
    http_receiver: tuple[str, Received], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, received = http_receiver
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    sink = build_sink()
    run(sink)
    sink.shutdown()
    assert received.spans == []
    assert A.METRIC_TOOL_CALLS in received.metric_names


def test_traces_exporter_console_prints_spans_and_sends_none(
    http_receiver: tuple[str, Received], monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    url, received = http_receiver
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")
    sink = build_sink()
    run(sink)
    sink.shutdown()
    out = capfd.readouterr().out
    assert '"name": "execute_tool bash"' in out and '"name": "invoke_agent"' in out
    assert received.spans == [] and received.metric_names == set()


def test_traces_exporter_otlp_and_console_together(
    http_receiver: tuple[str, Received], monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    url, received = http_receiver
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "otlp,console")
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")
    sink = build_sink()
    run(sink)
    sink.shutdown()
    assert '"name": "execute_tool bash"' in capfd.readouterr().out
    assert sorted(received.spans) == ["execute_tool bash", "execute_tool bash", "invoke_agent"]


def test_metrics_exporter_none_sends_spans_only(
    http_receiver: tuple[str, Received], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, received = http_receiver
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")
    monkeypatch.setenv("OTEL_LOGS_EXPORTER", "none")
    sink = build_sink()
    run(sink)
    sink.shutdown()
    assert len(received.spans) == 3
    assert received.metric_names == set() and received.log_events == []
    assert all(p.endswith("/v1/traces") for p in received.paths)


def test_metrics_exporter_console(
    http_receiver: tuple[str, Received], monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    url, received = http_receiver
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "console")
    sink = build_sink()
    run(sink)
    sink.shutdown()
    out = capfd.readouterr().out
    assert A.METRIC_TOOL_CALLS in out and A.METRIC_TOOL_DURATION in out
    assert received.metric_names == set() and len(received.spans) == 3


# --------------------------------------------------------------------------- protocol, endpoints, headers


def test_endpoint_over_http_appends_the_signal_paths(
    http_receiver: tuple[str, Received], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, received = http_receiver
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url + "/")
    sink = build_sink()
    run(sink)
    sink.shutdown()
    assert set(received.paths) == {"/v1/traces", "/v1/metrics", "/v1/logs"}
    assert A.METRIC_TOOL_CALLS in received.metric_names and len(received.spans) == 3


def test_signal_endpoints_are_used_as_given(
    http_receiver: tuple[str, Received], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, received = http_receiver
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")  # overridden per signal
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", url + "/collect/traces")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", url + "/collect/metrics")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", url + "/collect/logs")
    sink = build_sink()
    run(sink)
    sink.shutdown()
    assert set(received.paths) == {"/collect/traces", "/collect/metrics", "/collect/logs"}
    assert sink.drops.total == 0


def test_headers_reach_the_receiver(
    http_receiver: tuple[str, Received], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, received = http_receiver
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20abc,x-tenant=t1")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "x-signal=traces")
    sink = build_sink()
    run(sink)
    sink.shutdown()
    by_path = dict(zip(received.paths, received.headers, strict=True))
    assert by_path["/v1/metrics"]["authorization"] == "Bearer abc"
    assert by_path["/v1/metrics"]["x-tenant"] == "t1"
    # a per-signal variable replaces the general one for that signal (the exporter spec)
    assert by_path["/v1/traces"]["x-signal"] == "traces"
    assert "x-tenant" not in by_path["/v1/traces"]


def test_protocol_grpc_sends_both_signals_over_grpc(
    grpc_receiver: tuple[str, Received], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, received = grpc_receiver
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-tenant=t1")
    sink = build_sink()
    run(sink)
    sink.shutdown()
    assert sorted(received.spans) == ["execute_tool bash", "execute_tool bash", "invoke_agent"]
    assert A.METRIC_TOOL_CALLS in received.metric_names and EVALUATIONS <= set(received.log_events)
    assert all(h.get("x-tenant") == "t1" for h in received.headers)
    assert sink.drops.total == 0


def test_per_signal_protocols(
    grpc_receiver: tuple[str, Received],
    http_receiver: tuple[str, Received],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    grpc_url, over_grpc = grpc_receiver
    http_url, over_http = http_receiver
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", grpc_url)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", http_url + "/v1/metrics")
    sink = build_sink()
    run(sink)
    sink.shutdown()
    assert len(over_grpc.spans) == 3 and over_grpc.metric_names == set()
    assert over_http.spans == [] and A.METRIC_TOOL_CALLS in over_http.metric_names

    # and the other way round
    over_grpc.metric_names.clear()
    over_http.span_batches.clear()
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "grpc")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", http_url + "/v1/traces")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", grpc_url)
    sink = build_sink()
    run(sink)
    sink.shutdown()
    assert len(over_http.spans) == 3 and A.METRIC_TOOL_CALLS in over_grpc.metric_names


# --------------------------------------------------------------------------- timing and batching


def test_metric_export_interval(http_receiver: tuple[str, Received], monkeypatch: pytest.MonkeyPatch) -> None:
    url, received = http_receiver
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    monkeypatch.setenv("OTEL_METRIC_EXPORT_INTERVAL", "100")
    sink = build_sink()
    run(sink)
    try:
        assert received.wait("metrics", 5.0)  # while the sink is live: exported on the interval
    finally:
        sink.shutdown()

    received.metric_names.clear()
    monkeypatch.delenv("OTEL_METRIC_EXPORT_INTERVAL")  # the default: a minute
    sink = build_sink()
    run(sink)
    assert not received.wait("metrics", 0.5)
    sink.shutdown()  # a last export on shutdown
    assert A.METRIC_TOOL_CALLS in received.metric_names


def test_bsp_schedule_delay(http_receiver: tuple[str, Received], monkeypatch: pytest.MonkeyPatch) -> None:
    url, received = http_receiver
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")
    monkeypatch.setenv("OTEL_LOGS_EXPORTER", "none")  # (spans only: a log batch would wait too)
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
    sink = build_sink()
    run(sink)
    try:
        assert received.wait("spans", 5.0)  # no flush: the processor's timer sent them
    finally:
        sink.shutdown()

    received.span_batches.clear()
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "60000")
    sink = build_sink()
    run(sink)
    assert not received.wait("spans", 0.5)
    sink.shutdown()
    assert len(received.spans) == 3


def test_bsp_max_export_batch_size(
    http_receiver: tuple[str, Received], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, received = http_receiver
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")
    monkeypatch.setenv("OTEL_LOGS_EXPORTER", "none")  # (spans only: a log batch would wait too)
    monkeypatch.setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "2")
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "60000")  # only full batches (and shutdown) export
    sink = build_sink()
    run(sink, n=5)
    assert received.wait("spans", 5.0)  # a full batch is sent at once, not on the timer
    sink.shutdown()
    assert len(received.spans) == 6
    assert max(len(b) for b in received.span_batches) == 2


def test_bsp_max_queue_size(http_receiver: tuple[str, Received], monkeypatch: pytest.MonkeyPatch) -> None:
    url, received = http_receiver
    received.delay_s = 1.0  # a slow collector: the queue fills behind the export in flight
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")
    monkeypatch.setenv("OTEL_LOGS_EXPORTER", "none")  # (spans only: a log batch would wait too)
    monkeypatch.setenv("OTEL_BSP_MAX_QUEUE_SIZE", "4")
    monkeypatch.setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "1")
    sink = build_sink()
    t0 = time.perf_counter()
    run(sink, n=20)
    assert time.perf_counter() - t0 < 0.5  # never waited for the collector
    dropped = sink.drops["span_queue_full"]
    sink.shutdown()
    assert dropped >= 21 - 4 - 2  # at most the queue and the batch in flight (and one being taken)


def test_bsp_export_timeout(http_receiver: tuple[str, Received], monkeypatch: pytest.MonkeyPatch) -> None:
    url, received = http_receiver
    received.delay_s = 3.0  # a collector that hangs past the timeout
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")
    monkeypatch.setenv("OTEL_LOGS_EXPORTER", "none")  # (spans only: a log batch would wait too)
    monkeypatch.setenv("OTEL_BSP_EXPORT_TIMEOUT", "300")
    sink = build_sink()
    run(sink)
    t0 = time.perf_counter()
    sink.force_flush(10)
    waited = time.perf_counter() - t0
    sink.shutdown()
    assert waited < 2.5, waited  # the export gave up after ~0.3 s (the exporter's own default: 10 s)
    assert sink.drops["span_export_failed"] == 3


# --------------------------------------------------------------------------- the application's providers


@pytest.fixture
def app_providers(
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[tuple[InMemorySpanExporter, InMemoryMetricReader]]:
    """Global providers set by 'the application' (the API sets them once per process: patched back after)."""
    spans = InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(spans))
    reader = InMemoryMetricReader()
    mp = MeterProvider(metric_readers=[reader])
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", tp)
    monkeypatch.setattr(metrics_internal, "_METER_PROVIDER", mp)
    assert trace.get_tracer_provider() is tp and otel_metrics.get_meter_provider() is mp
    yield spans, reader
    tp.shutdown()
    mp.shutdown()


def test_the_applications_global_providers_win(
    app_providers: tuple[InMemorySpanExporter, InMemoryMetricReader],
    http_receiver: tuple[str, Received],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    spans, reader = app_providers
    url, received = http_receiver
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)  # would make planguard build its own
    monkeypatch.setenv("OTEL_LOGS_EXPORTER", "none")  # (the application set no logger provider)
    sink = build_sink()
    assert sink._owned == []
    run(sink)
    sink.shutdown()
    assert sorted(s.name for s in spans.get_finished_spans()) == [
        "execute_tool bash",
        "execute_tool bash",
        "invoke_agent",
    ]
    data = reader.get_metrics_data()
    assert data is not None
    names = {m.name for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics}
    assert {A.METRIC_TOOL_CALLS, A.METRIC_TOOL_DURATION} <= names
    time.sleep(0.2)
    assert received.span_batches == [] and received.metric_names == set()


def test_own_providers_only_without_the_applications(
    http_receiver: tuple[str, Received], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, received = http_receiver
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
    assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)  # nothing set globally
    sink = build_sink()
    owned = sorted(type(p).__name__ for p in sink._owned)
    assert owned == ["LoggerProvider", "MeterProvider", "TracerProvider"]
    run(sink)
    sink.shutdown()
    assert len(received.spans) == 3


# --------------------------------------------------------------------------- OTEL_LOGS_EXPORTER

EVALUATIONS = {("gen_ai.evaluation.result", name) for name in ("PC", "PPC", "POC", "PPF")}


def test_logs_exporter_otlp_sends_the_evaluation_events_from_planguards_own_provider(
    http_receiver: tuple[str, Received], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No logger provider set by the application: planguard builds its own from OTEL_LOGS_EXPORTER (default
    otlp given an endpoint) and keeps it to itself: the global one stays the API's proxy."""
    from planguard.sinks.otel.providers import app_logger_provider

    url, received = http_receiver
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")
    sink = build_sink()
    run(sink)
    sink.shutdown()
    assert EVALUATIONS <= set(received.log_events)
    assert "/v1/logs" in received.paths and sink.drops.total == 0
    assert app_logger_provider() is None  # still the API's proxy


def test_logs_exporter_none_sends_no_log_records(
    http_receiver: tuple[str, Received], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, received = http_receiver
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
    monkeypatch.setenv("OTEL_LOGS_EXPORTER", "none")
    sink = build_sink()
    assert sink._evaluations is None
    run(sink)
    sink.shutdown()
    assert received.log_events == [] and len(received.spans) == 3


def test_logs_exporter_console_prints_the_evaluation_events(
    http_receiver: tuple[str, Received], monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    url, received = http_receiver
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
    monkeypatch.setenv("OTEL_LOGS_EXPORTER", "console")
    sink = build_sink()
    run(sink)
    sink.shutdown()
    out = capfd.readouterr().out
    assert out.count('"gen_ai.evaluation.name": "P') == 4 and "gen_ai.evaluation.result" in out
    assert received.log_events == [] and len(received.spans) == 3


def test_logs_exporter_alone_builds_only_a_logger_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_LOGS_EXPORTER", "console")  # no endpoint: traces and metrics stay off
    sink = build_sink()
    assert [type(p).__name__ for p in sink._owned] == ["LoggerProvider"]
    sink.shutdown()


def test_a_refused_log_export_is_counted(
    http_receiver: tuple[str, Received], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, _ = http_receiver
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "http://127.0.0.1:9/v1/logs")  # nothing listens
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "500")
    sink = build_sink(export_timeout_s=0.5)
    run(sink)
    sink.shutdown()
    assert sink.drops["log_export_failed"] >= 4


def test_the_applications_logger_provider_wins(
    http_receiver: tuple[str, Received], monkeypatch: pytest.MonkeyPatch
) -> None:
    from opentelemetry._logs import _internal as logs_internal
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs import export as logs_export

    in_memory = getattr(logs_export, "InMemoryLogRecordExporter", None) or logs_export.InMemoryLogExporter
    exporter = in_memory()
    app = LoggerProvider()
    app.add_log_record_processor(logs_export.SimpleLogRecordProcessor(exporter))
    monkeypatch.setattr(logs_internal, "_LOGGER_PROVIDER", app)
    url, received = http_receiver
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
    sink = build_sink()
    assert "LoggerProvider" not in [type(p).__name__ for p in sink._owned]
    run(sink)
    sink.shutdown()
    records = [r.log_record for r in exporter.get_finished_logs()]
    names = {(getattr(r, "event_name", None) or dict(r.attributes or {}).get("event.name"),
              dict(r.attributes or {}).get(A.GEN_AI_EVALUATION_NAME)) for r in records}  # fmt: skip
    assert EVALUATIONS <= names
    assert received.log_events == []
