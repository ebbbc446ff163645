"""README "Privacy and failure", the failure half, each promise with the test that fails when it breaks:
planguard fails open (an internal error is counted, logged once, and the agent goes on); a store that
cannot be written (read-only, full) costs a drop counter and nothing else; servers bind 127.0.0.1.
Real parts: a real tmpfs for the store where the machine lets us mount one, a real Prometheus HTTP server,
real OTel meter readers. (Fail-closed gates, dead exporters and webhooks, killed daemons and SIGTERM have
their tests next to their components; the lead's table lists them all.)"""

from __future__ import annotations

import contextlib
import logging
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from planguard.decisions import DecisionKind
from planguard.events import ToolEvent
from planguard.session import Pipeline
from planguard.sinks import Sink
from planguard.sinks.drops import DropCounter
from planguard.sinks.store.config import StoreConfig
from planguard.sinks.store.writer import StoreSink
from planguard.sinks.telemetry import attributes as A
from planguard.sinks.telemetry.testing import TelemetryCapture
from planguard.stages import Detector


class Exploding(Detector):
    name = "exploding"

    def observe(self, step, state):  # type: ignore[no-untyped-def]
        raise RuntimeError("detector bug")


class ExplodingSink(Sink):
    def on_tool_end(self, session, step, state):  # type: ignore[no-untyped-def]
        raise ValueError("sink bug")


def test_fail_open_counts_each_error_logs_it_once_and_the_agent_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from dataclasses import replace

    from planguard import Guard
    from planguard.config import Config

    cap = TelemetryCapture()  # only for its in-memory providers: the guard builds its own OTel sink on them
    config = Config.model_validate(
        {"store": {"enabled": False}, "policies": {"reminder": {"enabled": False}}}
    )
    guard = Guard(
        config,
        tracer_provider=cap.tracer_provider,
        meter_provider=cap.meter_provider,
        sinks=[ExplodingSink()],
    )
    guard.pipeline = replace(guard.pipeline, detectors=(Exploding(),))
    with caplog.at_level(logging.WARNING, logger="planguard"):
        for i in range(3):
            event = ToolEvent.shell(f"ls {i}", call_id=f"c{i}")
            assert guard.before_tool("s", event).kind is DecisionKind.ALLOW
            assert guard.after_tool("s", event) is not None  # the step still happened
    assert guard.errors.total == 6, guard.errors.counts
    assert len(guard.errors.counts) == 2
    logged = [r for r in caplog.records if "planguard internal error" in r.getMessage()]
    assert len(logged) == 2  # once per kind, not once per error
    guard.shutdown(end_sessions=False)
    assert cap.metric(A.METRIC_INTERNAL_ERRORS) == 6
    cap.shutdown()


@contextlib.contextmanager
def tmpfs(path: Path, options: str) -> Iterator[Path]:
    path.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], capture_output=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({proc.stderr.decode(errors='replace').strip()})")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def store_session(store: Path, drops: DropCounter, n_sessions: int, result_chars: int) -> StoreSink:
    sink = StoreSink(StoreConfig(path=str(store), max_result_chars=0), drops=drops)
    pipeline = Pipeline(sinks=(sink,))
    for s in range(n_sessions):
        session = pipeline.session(f"s{s}")
        for i in range(5):
            event = ToolEvent.shell(f"cat f{i}", call_id=f"c{i}")
            session.before_tool(event)
            event.result = "x" * result_chars
            session.after_tool(event)
        session.end()
    assert sink.flush(10)
    return sink


def test_a_full_store_costs_a_drop_counter(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "small", "size=64k") as mnt:
        drops = DropCounter()
        sink = store_session(mnt / "sessions", drops, n_sessions=20, result_chars=4000)  # ~400 KB into 64 KB
        assert drops["store_write_failed"] >= 1, drops.counts
        assert sink.errors.total >= 1
        sink.shutdown()


def test_a_read_only_store_costs_a_drop_counter(tmp_path: Path) -> None:
    (tmp_path / "ro").mkdir()
    with tmpfs(tmp_path / "ro", "ro,size=64k") as mnt:
        drops = DropCounter()
        sink = store_session(mnt / "sessions", drops, n_sessions=2, result_chars=10)
        assert drops["store_write_failed"] >= 1, drops.counts
        sink.shutdown()


def test_the_prometheus_endpoint_binds_loopback_by_default() -> None:
    pytest.importorskip("opentelemetry.exporter.prometheus", reason="the prometheus extra is not installed")
    from planguard.sinks.telemetry.config import TelemetryConfig
    from planguard.sinks.telemetry.export import start_prometheus_exporter

    assert TelemetryConfig().prometheus_host == "127.0.0.1"
    prom = start_prometheus_exporter(0)
    try:
        assert prom._server.server_address[0] == "127.0.0.1"
    finally:
        prom.shutdown()


def test_the_proxy_binds_loopback_by_default() -> None:
    proxy_config = pytest.importorskip("planguard_proxy.config")
    assert proxy_config.ProxyConfig().host == "127.0.0.1"
