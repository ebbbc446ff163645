"""Export over real sockets on 127.0.0.1: an OTLP/HTTP receiver, an endpoint that refuses, one that hangs,
and the Prometheus scrape endpoint. A dead exporter must cost the agent nothing but a drop counter."""

from __future__ import annotations

import socket
import statistics
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from planguard.events import ToolEvent
from planguard.session import Pipeline
from planguard.sinks.drops import DropCounter
from planguard.sinks.telemetry.config import TelemetryConfig
from planguard.sinks.telemetry.export import configure_otlp, start_prometheus_exporter
from planguard.sinks.telemetry.otel import OTelSink
from planguard.sinks.telemetry.settings import export_settings


class _Receiver(BaseHTTPRequestHandler):
    requests: list[tuple[str, bytes]]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.server.received.append((self.path, body))  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    server.received = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def url_of(server: ThreadingHTTPServer) -> str:
    host, port = server.server_address[:2]
    return f"http://{host}:{port}"


def run_session(sink: OTelSink, n: int, session_id: str = "x") -> list[float]:
    """Drive ``n`` tool calls; returns the seconds each before_tool+after_tool took."""
    s = Pipeline(sinks=(sink,)).session(session_id)
    costs = []
    for i in range(n):
        ev = ToolEvent.shell(f"cat /testbed/f{i}.py", call_id=str(i))
        t0 = time.perf_counter()
        s.before_tool(ev)
        ev.exit_code = 0
        s.after_tool(ev)
        costs.append(time.perf_counter() - t0)
    s.end()
    return costs


def test_endpoint_resolution() -> None:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:6006/"}
    assert export_settings(None, env).traces.endpoint == "http://127.0.0.1:6006/v1/traces"
    assert export_settings(None, env).metrics.endpoint == "http://127.0.0.1:6006/v1/metrics"
    env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = "http://collector:4318/custom"
    assert export_settings(None, env).traces.endpoint == "http://collector:4318/custom"
    assert export_settings(None, {**env, "OTEL_METRICS_EXPORTER": "none"}).metrics.exporters == ()
    cfg = TelemetryConfig(otlp_endpoint="http://127.0.0.1:9/")
    assert export_settings(cfg, env).traces.endpoint == "http://127.0.0.1:9/v1/traces"
    assert export_settings(None, {}).traces.exporters == ()


def test_configure_otlp_needs_an_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in (
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    ):
        monkeypatch.delenv(var, raising=False)
    assert configure_otlp() is None
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    assert configure_otlp() is None


def test_spans_arrive_at_a_real_otlp_http_receiver(
    receiver: ThreadingHTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url_of(receiver))
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=test")
    built = configure_otlp(TelemetryConfig(service_name="pg-test"))
    assert built is not None and built.meter_provider is None
    sink = OTelSink(tracer_provider=built.tracer_provider, owned=built.owned, drops=built.drops)
    run_session(sink, 3, "otlp")
    assert sink.force_flush(10)
    sink.shutdown()
    paths = {p for p, _ in receiver.received}  # type: ignore[attr-defined]
    assert paths == {"/v1/traces"}
    spans, resources = [], []
    for _, body in receiver.received:  # type: ignore[attr-defined]
        req = ExportTraceServiceRequest()
        req.ParseFromString(body)
        for rs in req.resource_spans:
            resources.append({kv.key: kv.value.string_value for kv in rs.resource.attributes})
            for ss in rs.scope_spans:
                spans.extend(ss.spans)
    assert resources[0]["service.name"] == "pg-test"
    assert resources[0]["deployment.environment"] == "test"
    names = sorted(s.name for s in spans)
    assert names == ["execute_tool bash"] * 3 + ["invoke_agent"]
    (agent,) = [s for s in spans if s.name == "invoke_agent"]
    assert all(s.parent_span_id == agent.span_id for s in spans if s is not agent)
    assert built.drops.total == 0


def test_standard_variables_name_the_service(monkeypatch: pytest.MonkeyPatch) -> None:
    from planguard.sinks.telemetry.export import _resource

    monkeypatch.delenv("OTEL_SERVICE_NAME", raising=False)
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "team=a")
    assert _resource("planguard").attributes["service.name"] == "planguard"
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "service.name=from-attrs,team=a")
    assert _resource("planguard").attributes["service.name"] == "from-attrs"
    monkeypatch.setenv("OTEL_SERVICE_NAME", "from-env")
    assert _resource("planguard").attributes["service.name"] == "from-env"


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed on exit: nothing listens there


@pytest.fixture
def hanging_endpoint() -> Iterator[str]:
    """A socket that accepts connections and reads requests but never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    stop = threading.Event()
    held: list[socket.socket] = []

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
                held.append(conn)
            except OSError:
                continue

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    t.join(2)
    for c in held:
        c.close()
    server.close()


@pytest.mark.parametrize("kind", ["refused", "hanging"])
def test_a_dead_endpoint_costs_the_agent_nothing(kind: str, request: pytest.FixtureRequest) -> None:
    url = (
        f"http://127.0.0.1:{_dead_port()}"
        if kind == "refused"
        else request.getfixturevalue("hanging_endpoint")
    )
    drops = DropCounter()
    cfg = TelemetryConfig(max_queue_size=16, export_timeout_s=1.0)
    built = configure_otlp(cfg, traces_endpoint=url + "/v1/traces", drops=drops)
    assert built is not None
    sink = OTelSink(tracer_provider=built.tracer_provider, owned=built.owned, drops=drops)
    costs = run_session(sink, 400, kind)
    # Every call stays in-process: no socket work on the agent's thread.
    assert statistics.median(costs) < 0.005, statistics.median(costs)
    assert max(costs) < 0.25, max(costs)
    t0 = time.perf_counter()
    sink.shutdown()  # bounded even though the exporter is stuck or failing
    assert time.perf_counter() - t0 < 8
    assert drops["span_queue_full"] > 0
    # Every span is accounted for: dropped when the queue was full, failed, or unsent at shutdown (the
    # batch stuck in the exporter is counted when its request times out).
    deadline = time.monotonic() + 10
    while drops.total < 401 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert drops.total == 401, drops.counts


def test_a_hanging_metrics_endpoint_does_not_hold_up_shutdown(hanging_endpoint: str) -> None:
    cfg = TelemetryConfig(export_timeout_s=1.0)
    built = configure_otlp(
        cfg,
        traces_endpoint=hanging_endpoint + "/v1/traces",
        metrics_endpoint=hanging_endpoint + "/v1/metrics",
        metric_interval_s=0.2,
    )
    assert built is not None and built.meter_provider is not None
    sink = OTelSink(
        tracer_provider=built.tracer_provider,
        meter_provider=built.meter_provider,
        owned=built.owned,
        drops=built.drops,
    )
    costs = run_session(sink, 50, "metrics-hang")
    assert max(costs) < 0.25
    time.sleep(0.5)  # let the periodic reader start an export that will hang
    t0 = time.perf_counter()
    sink.shutdown()
    assert time.perf_counter() - t0 < 12


def test_prometheus_endpoint_serves_planguard_counters() -> None:
    prom = start_prometheus_exporter(port=0)
    try:
        assert prom.host == "127.0.0.1"
        sink = OTelSink(meter_provider=prom.meter_provider, tracer_provider=None)
        run_session(sink, 4, "prom")
        text = httpx.get(prom.url, timeout=5).text
        line = next(ln for ln in text.splitlines() if ln.startswith("planguard_tool_calls_total{"))
        assert 'planguard_phase="N"' in line and line.rstrip().endswith(" 4.0")
        assert "planguard_session_pc_bucket" in text
        assert "planguard_internal_errors_total" in text
    finally:
        prom.shutdown()
    with pytest.raises(httpx.TransportError):
        httpx.get(prom.url, timeout=1)


def test_metrics_name_the_drop_reason() -> None:
    prom = start_prometheus_exporter(port=0)
    try:
        drops = DropCounter()
        sink = OTelSink(meter_provider=prom.meter_provider, drops=drops)
        assert sink.drops is drops  # the sink stays alive: its counts are reported while it lives
        drops.add("span_queue_full", 7)
        text = httpx.get(prom.url, timeout=5).text
        (line,) = [ln for ln in text.splitlines() if ln.startswith("planguard_telemetry_dropped_total{")]
        assert 'planguard_drop_reason="span_queue_full"' in line and line.endswith(" 7.0")
    finally:
        prom.shutdown()
