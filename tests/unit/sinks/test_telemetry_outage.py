"""A collector that is down or hangs: the guard's shutdown stays short, every span that does not leave is
counted, and the local store keeps the sessions meanwhile. Real OTLP/HTTP exporters against a real
receiver on 127.0.0.1 that accepts connections and never answers (or a port nothing listens on)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.exporter.otlp.proto.http")

from planguard import Guard
from planguard.config import Config
from planguard.events import ToolEvent
from planguard.offline.loaders.planguard_store import iter_sessions
from planguard.sinks.telemetry.otel import OTelSink


class HangingReceiver:
    """Accepts TCP connections on 127.0.0.1 and never answers (a wedged collector)."""

    def __init__(self) -> None:
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.connections: list[socket.socket] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections.append(conn)

    def close(self) -> None:
        self.listener.close()
        for c in self.connections:
            c.close()


@pytest.fixture
def hanging() -> Iterator[HangingReceiver]:
    r = HangingReceiver()
    yield r
    r.close()


def refused_url() -> str:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"http://127.0.0.1:{port}"


def guard_for(endpoint: str, tmp_path: Path, **telemetry: object) -> Guard:
    return Guard(
        Config.model_validate(
            {
                "telemetry": {"otlp_endpoint": endpoint, **telemetry},
                "store": {"path": str(tmp_path / "store")},
                "policies": {"reminder": {"enabled": False}},
            }
        )
    )


def run(guard: Guard, sid: str) -> None:
    for i in range(3):
        event = ToolEvent("Read", {"path": f"f{i}.py"}, call_id=f"c{i}")
        guard.before_tool(sid, event)
        guard.after_tool(sid, event)
    guard.end(sid)


@pytest.mark.parametrize("collector", ["hanging", "refused"])
def test_shutdown_is_short_when_the_collector_is_down(
    collector: str, hanging: HangingReceiver, tmp_path: Path
) -> None:
    """It took 10 s: 5 for the span queue behind a hung export, 5 for the meter provider's last export."""
    guard = guard_for(hanging.url if collector == "hanging" else refused_url(), tmp_path)
    run(guard, "s1")
    (otel,) = [s for s in guard.pipeline.sinks if isinstance(s, OTelSink)]
    t0 = time.perf_counter()
    guard.shutdown()
    took = time.perf_counter() - t0
    assert took < 3.0, took  # the default telemetry.shutdown_timeout_s is 2 s
    # Nothing vanished uncounted: the spans that did not reach the collector are counted as dropped.
    assert sum(otel.drops.counts.values()) >= 1, otel.drops.counts


def test_shutdown_timeout_is_configurable(hanging: HangingReceiver, tmp_path: Path) -> None:
    guard = guard_for(hanging.url, tmp_path, shutdown_timeout_s=0.3)
    run(guard, "s1")
    t0 = time.perf_counter()
    guard.shutdown()
    assert time.perf_counter() - t0 < 1.5


def test_the_store_keeps_sessions_while_the_collector_is_down(
    hanging: HangingReceiver, tmp_path: Path
) -> None:
    guard = guard_for(hanging.url, tmp_path, shutdown_timeout_s=0.3)
    run(guard, "s1")
    guard.shutdown()
    (stored,) = list(iter_sessions(tmp_path / "store"))
    assert stored.id == "s1" and len(stored.steps) == 3  # type: ignore[union-attr]
