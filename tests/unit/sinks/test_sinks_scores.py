"""Scores through the backends' own APIs: ``langfuse_scores`` against a local fake of Langfuse's public
score API (``POST /api/public/scores``, HTTP Basic with the project's keys, as documented: no Langfuse server
can run here), configured by name in ``sinks.custom`` with Langfuse's standard variables. Phoenix's
annotations are tested against a real Phoenix in tests/e2e/test_phoenix_e2e.py."""

from __future__ import annotations

import base64
import json
import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from quiet_guard import quiet_config

from planguard import Config, Guard
from planguard.events import ToolEvent
from planguard.sinks.scores import LangfuseScores

PUBLIC, SECRET = "pk-lf-test", "sk-lf-" + "S3CR3T" * 4
DATA_TYPES = {"NUMERIC", "CATEGORICAL", "BOOLEAN"}


class _FakeLangfuse(BaseHTTPRequestHandler):
    """Langfuse's ``POST /api/public/scores``: Basic auth with the public and secret key, a JSON score with
    ``traceId``, ``name`` and ``value`` required, ``dataType`` one of NUMERIC/CATEGORICAL/BOOLEAN (a numeric
    value for NUMERIC), optional ``observationId`` and ``comment``; answers ``{"id": ...}``."""

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        expected = "Basic " + base64.b64encode(f"{PUBLIC}:{SECRET}".encode()).decode()
        if self.path != "/api/public/scores":
            return self._answer(404, {"message": "not found"})
        if self.headers.get("Authorization") != expected:
            return self._answer(401, {"message": "Invalid credentials"})
        score = json.loads(body)
        problems = [k for k in ("traceId", "name", "value") if k not in score]
        if score.get("dataType", "NUMERIC") not in DATA_TYPES:
            problems.append("dataType")
        if score.get("dataType") == "NUMERIC" and not isinstance(score.get("value"), (int, float)):
            problems.append("value")
        unknown = set(score) - {"id", "traceId", "observationId", "name", "value", "dataType", "comment"}
        if problems or unknown:
            return self._answer(400, {"message": f"invalid: {problems} {sorted(unknown)}"})
        self.server.scores.append(score)  # type: ignore[attr-defined]
        self._answer(200, {"id": f"score-{len(self.server.scores)}"})  # type: ignore[attr-defined]

    def _answer(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def langfuse() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeLangfuse)
    server.scores = []  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", server.scores  # type: ignore[attr-defined]
    server.shutdown()
    server.server_close()


def run_session(guard: Guard) -> Any:
    commands = ["cat src/app.py", *["grep -rn parse src"] * 6, "python -m pytest tests"]
    for i, command in enumerate(commands):
        ev = ToolEvent.shell(command, call_id=f"c{i}")
        guard.before_tool("lf-1", ev)
        ev.result, ev.exit_code = ("1 failed", 1) if "pytest" in command else ("ok", 0)
        guard.after_tool("lf-1", ev)
    return guard.end("lf-1")


def guard_with_scores(exporter: InMemorySpanExporter) -> Guard:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    config = Config.model_validate(
        {"store": {"enabled": False}, "sinks": {"custom": [{"class": "langfuse_scores"}]}}
    )
    return Guard(config, tracer_provider=provider)


def test_scores_reach_langfuse_on_the_sessions_trace(
    langfuse: tuple[str, list[dict[str, Any]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, received = langfuse
    monkeypatch.setenv("LANGFUSE_HOST", url)
    monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", PUBLIC)
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", SECRET)
    exporter = InMemorySpanExporter()
    guard = guard_with_scores(exporter)
    summary = run_session(guard)
    guard.shutdown()
    (sink,) = [s for s in guard.pipeline.sinks if isinstance(s, LangfuseScores)]
    assert sink.drops.total == 0 and sink.errors.total == 0, sink.errors.counts

    (agent,) = [s for s in exporter.get_finished_spans() if s.name.startswith("invoke_agent")]
    assert agent.context is not None
    trace_id, span_id = f"{agent.context.trace_id:032x}", f"{agent.context.span_id:016x}"
    by_name = {s["name"]: s for s in received}
    scores = summary.scores[guard.pipeline.plan.name]
    for name in ("PC", "PPC", "POC", "PPF"):
        score = by_name[name]
        assert score["value"] == pytest.approx(getattr(scores, name))
        assert (score["traceId"], score["observationId"], score["dataType"]) == (trace_id, span_id, "NUMERIC")
        assert "higher is better" in score["comment"]
    findings = {n for n in by_name if n.startswith("planguard.finding.")}
    assert findings == {f"planguard.finding.{d}" for d in summary.finding_counts}
    assert findings and all(by_name[n]["value"] == 0 for n in findings)


def test_a_refused_score_is_counted_and_the_key_never_logged(
    langfuse: tuple[str, list[dict[str, Any]]],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    url, received = langfuse
    monkeypatch.setenv("LANGFUSE_HOST", url)
    monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", PUBLIC)
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", SECRET[:-1] + "X")  # a wrong key: 401
    guard = guard_with_scores(InMemorySpanExporter())
    with caplog.at_level(logging.DEBUG):
        run_session(guard)
        guard.shutdown()
    (sink,) = [s for s in guard.pipeline.sinks if isinstance(s, LangfuseScores)]
    assert received == []
    assert sink.drops.counts["score_export_failed"] >= 1
    assert "HTTP 401" in caplog.text
    assert SECRET[:-1] not in caplog.text and "Authorization" not in caplog.text


def test_a_session_without_a_span_is_skipped_and_counted(
    langfuse: tuple[str, list[dict[str, Any]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, received = langfuse
    sink = LangfuseScores(host=url, public_key=PUBLIC, secret_key=SECRET)
    guard = Guard(quiet_config(), sinks=[sink])
    run_session(guard)
    guard.shutdown()
    assert received == [] and sink.drops.counts == {"score_no_span": 1}
