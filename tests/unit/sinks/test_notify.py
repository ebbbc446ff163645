"""Webhook notifications against real HTTP servers on 127.0.0.1: delivery, retries, and endpoints that are
down or hang — which must cost the agent nothing but a counter."""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from pydantic import ValidationError

from planguard.decisions import Decision, DecisionKind
from planguard.events import ToolEvent
from planguard.sinks.webhook import WebhookConfig, WebhookSink
from planguard.testing import ScriptedDetector, drive, guard_for_tests


class Endpoint:
    """A webhook receiver: answers with the queued statuses (then 200), or hangs when ``hang`` is set."""

    def __init__(self, statuses: list[int] | None = None, hang: bool = False):
        self.statuses = list(statuses or [])
        self.hang = hang
        self.received: list[dict] = []
        self.headers: list[dict[str, str]] = []
        self.release = threading.Event()
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # http.server's naming
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                if endpoint.hang:
                    endpoint.release.wait(30)
                    return
                endpoint.received.append(json.loads(body))
                endpoint.headers.append(dict(self.headers))
                status = endpoint.statuses.pop(0) if endpoint.statuses else 200
                self.send_response(status)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    e = Endpoint()
    yield e
    e.close()


@pytest.fixture
def hanging() -> Iterator[Endpoint]:
    e = Endpoint(hang=True)
    yield e
    e.close()


def refused_url() -> str:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now: connections are refused
    return f"http://127.0.0.1:{port}/hook"


SEARCH = ToolEvent("search", {"query": "secret-query"})
LOOP = ScriptedDetector("loop", lambda step: step.event.tool == "search", evidence="loop evidence")


def notify_guard(url: str, **notify):
    return guard_for_tests(
        policies={
            "reminder": {"enabled": False},
            "violations": {"enabled": False},
            "responses": {"findings": {"loop": {"ladder": {"warn": 1}}}},
        },
        webhook={"url": url, **notify},
        detectors=[LOOP],
    )


def webhook(guard) -> WebhookSink:
    (sink,) = [s for s in guard.pipeline.sinks if isinstance(s, WebhookSink)]
    return sink


@pytest.mark.parametrize(("content", "evidence"), [(None, None), (True, "loop evidence")])
def test_chosen_events_are_delivered_as_json(endpoint, monkeypatch, content, evidence):
    # Evidence (which quotes the calls) goes out only when content is opted into.
    monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raising=False)
    guard, _ = notify_guard(
        endpoint.url, events=["finding:loop", "decision:notify", "session_end"], content=content
    )
    drive(guard, "s1", [SEARCH, ToolEvent("edit")], end=True)
    sink = webhook(guard)
    assert sink.flush(5)
    events = {e["event"]: e for e in endpoint.received}
    assert set(events) == {"finding", "decision", "session_end"}
    assert events["finding"] | {"time": 0} == {
        "source": "planguard",
        "event": "finding",
        "session_id": "s1",
        "kind": "loop",
        "evidence": evidence,
        "first_step": 0,
        "last_step": 0,
        "at_end": False,
        "time": 0,
    }
    assert events["decision"]["kind"] == "notify" and events["decision"]["tool"] == "search"
    assert events["session_end"]["steps"] == 2
    assert "secret-query" not in json.dumps(endpoint.received)  # tool arguments are never sent
    assert sink.stats["sent"] == 3 and sink.stats["dropped"] == 0
    guard.shutdown()


def test_events_not_chosen_are_not_sent(endpoint):
    guard, _ = notify_guard(endpoint.url, events=["decision:stop"])
    drive(guard, "s", [SEARCH], end=True)
    assert webhook(guard).flush(5)
    assert endpoint.received == []
    guard.shutdown()


def test_server_errors_are_retried_with_backoff():
    e = Endpoint(statuses=[503, 500])
    try:
        sink = WebhookSink(WebhookConfig(url=e.url, events=["decision:*"], backoff_s=0.01, max_retries=3))
        sink.on_decision(_Session("s"), None, Decision(DecisionKind.DENY, "no"), None)
        assert sink.flush(5)
        assert (sink.sent, sink.failed, sink.retries) == (1, 0, 2)
        assert len(e.received) == 3  # two failures, then the delivery
        sink.shutdown()
    finally:
        e.close()


def test_client_errors_are_not_retried():
    e = Endpoint(statuses=[404])
    try:
        sink = WebhookSink(WebhookConfig(url=e.url, events=["decision:*"], backoff_s=0.01))
        sink.on_decision(_Session("s"), None, Decision(DecisionKind.DENY, "no"), None)
        assert sink.flush(5)
        assert (sink.sent, sink.failed, sink.retries) == (0, 1, 0)
        sink.shutdown()
    finally:
        e.close()


def test_refused_endpoint_costs_the_agent_nothing_and_counts_failures(caplog):
    url = refused_url()
    guard, _ = notify_guard(
        url, events=["finding", "decision:*"], max_retries=2, backoff_s=0.01, timeout_s=0.5
    )
    t0 = time.perf_counter()
    with caplog.at_level(logging.WARNING, logger="planguard.sinks.webhook"):
        for i in range(20):
            drive(guard, f"s{i}", [SEARCH, ToolEvent("edit")])
        agent_time = time.perf_counter() - t0
        sink = webhook(guard)
        assert sink.flush(10)
    assert agent_time < 0.5, agent_time
    assert sink.failed == 40 and sink.retries == 80 and sink.sent == 0  # (finding + notify) x 20
    warnings = [r for r in caplog.records if r.name == "planguard.sinks.webhook"]
    assert len(warnings) == 1  # logged once, then only counted
    guard.shutdown()


def test_hanging_endpoint_costs_the_agent_nothing_drops_rise_and_shutdown_is_bounded(hanging):
    guard, _ = notify_guard(
        hanging.url, events=["finding", "decision:*"], timeout_s=1.0, max_retries=0, queue_size=4
    )
    sink = webhook(guard)
    worst = 0.0
    start = time.perf_counter()
    for i in range(100):
        t0 = time.perf_counter()
        drive(guard, f"s{i}", [SEARCH])
        worst = max(worst, time.perf_counter() - t0)
    elapsed = time.perf_counter() - start
    # 200 events (finding + notify decision per session) against a queue of 4 and one worker stuck for 1 s
    # per request: no hook call waited for the network, and all but a handful of events were dropped.
    assert worst < 0.5, worst
    assert sink.dropped >= 200 - 4 - 1 - int(elapsed) - 1, (sink.stats, elapsed)
    assert sink.sent == 0
    t0 = time.perf_counter()
    guard.shutdown()
    assert time.perf_counter() - t0 < 3.5  # guard end_sessions + sink flush/stop, bounded by timeouts
    st = sink.stats
    # every event is accounted for when shutdown returns: the request still hanging was cut and dropped
    assert st["sent"] + st["failed"] + st["dropped"] == 200 and st["pending"] == 0, st


def test_header_values_come_from_the_environment_and_are_never_logged(monkeypatch, caplog):
    monkeypatch.setenv("PG_TEST_TOKEN", "s3cr3t-token")
    e = Endpoint(statuses=[500])
    try:
        cfg = WebhookConfig(
            url=e.url,
            events=["decision:*"],
            headers={"Authorization": "Bearer ${PG_TEST_TOKEN}"},
            max_retries=1,
            backoff_s=0.01,
        )
        sink = WebhookSink(cfg)
        with caplog.at_level(logging.DEBUG):
            sink.on_decision(_Session("s"), None, Decision(DecisionKind.STOP, "bye"), None)
            assert sink.flush(5)
        assert e.headers[-1]["Authorization"] == "Bearer s3cr3t-token"
        assert "s3cr3t" not in caplog.text
        sink.shutdown()
    finally:
        e.close()


def test_queue_is_bounded_and_put_never_blocks(hanging):
    sink = WebhookSink(
        WebhookConfig(url=hanging.url, events=["decision:*"], queue_size=3, timeout_s=5, max_retries=0)
    )
    t0 = time.perf_counter()
    for _ in range(1000):
        sink.on_decision(_Session("s"), None, Decision(DecisionKind.DENY, "x"), None)
    assert time.perf_counter() - t0 < 0.5
    assert sink.dropped >= 1000 - 4  # 3 queued + at most 1 in flight
    sink.shutdown(timeout=0.2)


def test_notify_config_errors():
    with pytest.raises(ValidationError, match="expected an http:// or https:// URL"):
        WebhookConfig(url="ftp://example.org/x")
    with pytest.raises(ValidationError, match="unknown event 'decision:maybe'"):
        WebhookConfig(events=["decision:maybe"])


class _Session:
    """The two attributes the sink reads from a session."""

    def __init__(self, sid: str):
        self.id = sid
        self.metadata: dict = {}


class Trickle:
    """An endpoint that answers one byte every ``every_s`` seconds: each read is quick, the answer is not."""

    def __init__(self, every_s: float = 0.3, total_s: float = 12.0):
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(8)
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/hook"
        self.every_s, self.total_s = every_s, total_s
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._trickle, args=(conn,), daemon=True).start()

    def _trickle(self, conn: socket.socket) -> None:
        answer = b"HTTP/1.1 200 OK\r\n" + b"x-pad: " + b"a" * 1000 + b"\r\ncontent-length: 0\r\n\r\n"
        deadline = time.monotonic() + self.total_s
        with conn:
            try:
                conn.recv(65536)
                for byte in answer:
                    if self.stop.is_set() or time.monotonic() > deadline:
                        return
                    conn.sendall(bytes([byte]))
                    self.stop.wait(self.every_s)
            except OSError:
                return

    def close(self) -> None:
        self.stop.set()
        self.listener.close()


def test_timeout_is_a_deadline_for_the_whole_attempt():
    """httpx's timeouts are per read: a server trickling a byte every 0.3 s never trips a 1 s read timeout
    and held one delivery for the whole 12 s it trickled. ``timeout_s`` bounds the attempt end to end."""
    trickle = Trickle(every_s=0.3, total_s=12.0)
    try:
        sink = WebhookSink(
            WebhookConfig(url=trickle.url, events=["decision:*"], timeout_s=1.0, max_retries=0)
        )
        t0 = time.perf_counter()
        sink.on_decision(_Session("s"), None, Decision(DecisionKind.STOP, "bye"), None)
        assert sink.flush(10)
        assert time.perf_counter() - t0 < 3.0
        assert sink.stats == {"sent": 0, "failed": 1, "dropped": 0, "retries": 0, "pending": 0}
        sink.shutdown()
    finally:
        trickle.close()


def test_shutdown_leaves_nothing_pending_and_counts_the_request_in_flight(hanging):
    """A request hanging at shutdown is cut at the shutdown's deadline and counted as dropped; the
    counters are final when shutdown returns and stay so."""
    sink = WebhookSink(
        WebhookConfig(url=hanging.url, events=["decision:*"], queue_size=10, timeout_s=30, max_retries=0)
    )
    for _ in range(5):
        sink.on_decision(_Session("s"), None, Decision(DecisionKind.DENY, "x"), None)
    time.sleep(0.2)  # the first one is in flight
    t0 = time.perf_counter()
    sink.shutdown(timeout=0.5)
    assert time.perf_counter() - t0 < 1.5
    assert sink.stats == {"sent": 0, "failed": 0, "dropped": 5, "retries": 0, "pending": 0}
    time.sleep(0.3)
    assert sink.stats["dropped"] == 5 and sink.stats["pending"] == 0
