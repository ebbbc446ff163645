"""``planguard replay --export otlp``: recorded runs reach a real OTLP/HTTP receiver (protobuf decoded with
``opentelemetry-proto``) as one trace per run, stamped with the recording's own times."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from planguard.cli import main
from planguard.offline.loaders import iter_trajectories
from planguard.sinks.otel import attributes as A


class _Receiver(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path == "/v1/traces":
            req = ExportTraceServiceRequest()
            req.ParseFromString(body)
            for rs in req.resource_spans:
                for ss in rs.scope_spans:
                    self.server.spans.extend(ss.spans)  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[tuple[str, list[Any]]]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    server.spans = []  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    host, port = server.server_address[:2]
    yield f"http://{host}:{port}", server.spans  # type: ignore[attr-defined]
    server.shutdown()
    server.server_close()


def attrs_of(span: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in span.attributes:
        v = kv.value
        out[kv.key] = getattr(v, v.WhichOneof("value")) if v.WhichOneof("value") else None
    return out


def test_replay_exports_runs_with_their_recorded_times(
    shared: Path,
    receiver: tuple[str, list[Any]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url, spans = receiver
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")
    path = shared / "data/realtraj/claude-code/spotter_tool_heavy.jsonl"
    (trajectory,) = list(iter_trajectories([path]))
    recorded = [e for e in trajectory.events if e.start_time is not None]
    assert recorded, "the recording has timestamps"
    out = tmp_path / "out.jsonl"
    before = time.time()
    code = main(
        ["replay", str(path), "--export", "otlp", "--otlp-endpoint", url, "--format", "jsonl", "-o", str(out)]
    )
    assert code == 0
    assert "exported 1 run(s) over OTLP" in capsys.readouterr().err
    record = json.loads(out.read_text())

    (agent,) = [s for s in spans if s.name == "invoke_agent"]
    tools = [s for s in spans if attrs_of(s).get(A.GEN_AI_OPERATION_NAME) == A.OP_EXECUTE_TOOL]
    assert len(tools) == record["n_steps"] == len(trajectory.events)
    # a Claude Code transcript names its model only: the provider is the model's
    assert attrs_of(agent)[A.GEN_AI_REQUEST_MODEL] == trajectory.meta["model"] == "claude-opus-4-6"
    assert attrs_of(agent)[A.GEN_AI_PROVIDER_NAME] == "anthropic"
    assert {s.trace_id for s in spans} == {agent.trace_id}
    assert all(s.parent_span_id == agent.span_id for s in tools)
    # the recording's clock, not the replay's
    first = min(e.start_time for e in recorded)  # type: ignore[type-var]
    last = max(e.end_time or e.start_time for e in recorded)  # type: ignore[type-var]
    assert agent.start_time_unix_nano == int(first * 1e9)
    assert agent.end_time_unix_nano == int(last * 1e9)
    assert last < before - 86_400  # recorded long before this test ran
    by_index = {attrs_of(s)[A.STEP_INDEX]: s for s in tools}
    for i, event in enumerate(trajectory.events):
        if event.start_time is not None:
            assert by_index[i].start_time_unix_nano == int(event.start_time * 1e9)
        if event.end_time is not None:
            assert by_index[i].end_time_unix_nano == int(event.end_time * 1e9)
    # the evaluation results, stamped inside the session span
    results = [e for e in agent.events if e.name == A.EVENT_EVALUATION_RESULT]
    assert len(results) == 4
    assert all(agent.start_time_unix_nano <= e.time_unix_nano <= agent.end_time_unix_nano for e in results)
    pc = next(e for e in results if attrs_of(e)[A.GEN_AI_EVALUATION_NAME] == "PC")
    assert attrs_of(pc)[A.GEN_AI_EVALUATION_SCORE_VALUE] == pytest.approx(record["metrics"]["plan"]["PC"])


def test_export_without_an_endpoint_is_a_clear_error(
    shared: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_EXPORTER"):
        monkeypatch.delenv(name, raising=False)
    path = shared / "data/realtraj/claude-code/spotter_tool_heavy.jsonl"
    assert main(["replay", str(path), "--export", "otlp", "--format", "jsonl"]) == 2
    assert "--export otlp needs an OTLP endpoint" in capsys.readouterr().err


def test_a_recorded_run_of_0_9_s_with_a_denial_exports_as_0_9_s(
    receiver: tuple[str, list[Any]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Denied calls and the session span keep the recording's clock too: a run recorded over 0.9 s a year
    ago, whose last call was refused, is 0.9 s long in the backend, its denial at its recorded time."""
    url, spans = receiver
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")
    t0 = time.time() - 365 * 86_400
    calls = [
        {"tool": "bash", "arguments": {"command": "cat src/app.py"}, "time": t0},
        {"tool": "bash", "arguments": {"command": "python -m pytest tests"}, "time": t0 + 0.3},
        {"tool": "bash", "arguments": {"command": "grep -rn parse src"}, "time": t0 + 0.6},
        {"tool": "bash", "arguments": {"command": "rm -rf /"}, "time": t0 + 0.9, "blocked": "refused"},
    ]
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps({"session": "r1", "result": "ok", **c}) + "\n" for c in calls))
    out = tmp_path / "out.jsonl"
    code = main(["replay", str(path), "--export", "otlp", "--otlp-endpoint", url, "-o", str(out)])
    assert code == 0, capsys.readouterr().err
    (agent,) = [s for s in spans if s.name == "invoke_agent"]
    assert (agent.end_time_unix_nano - agent.start_time_unix_nano) / 1e9 == pytest.approx(0.9, abs=1e-6)
    (denied,) = [s for s in spans if attrs_of(s).get(A.BLOCKED)]
    assert denied.start_time_unix_nano == denied.end_time_unix_nano == int((t0 + 0.9) * 1e9)
    assert all(agent.start_time_unix_nano <= s.start_time_unix_nano for s in spans)
    assert all(s.end_time_unix_nano <= agent.end_time_unix_nano for s in spans)


@pytest.mark.parametrize(
    ("model", "provider"),
    [
        ("claude-opus-4-6", "anthropic"),  # Claude Code transcripts
        ("claude-sonnet-4-20250514", "anthropic"),  # SWE-agent
        ("gpt-4o-2024-08-06", "openai"),  # OpenHands
        ("gpt-5-codex", "openai"),  # Codex
        ("o3-mini", "openai"),
        ("gemini-2.5-pro", "gcp.gemini"),  # Gemini CLI
        ("anthropic/claude-3-5-sonnet-20241022", "anthropic"),  # LiteLLM / OpenCode provider/model ids
        ("bedrock/anthropic.claude-3-sonnet", "aws.bedrock"),
        ("vertex_ai/gemini-1.5-pro", "gcp.vertex_ai"),
        ("azure/gpt-4o", "azure.ai.openai"),
        ("openrouter/mistralai/devstral-small", "mistral_ai"),  # an unknown router: the model's family
        ("deepseek-chat", "deepseek"),
        ("Qwen2.5-Coder-32B", None),
        ("replay", None),  # SWE-agent's replay model
        ("", None),
    ],
)
def test_the_provider_of_a_recorded_model(model: str, provider: str | None) -> None:
    assert A.provider_for_model(model) == provider


def test_a_run_whose_model_names_no_provider_stays_unknown(
    shared: Path, receiver: tuple[str, list[Any]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    url, spans = receiver
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")
    path = shared / "data/realtraj/swe-agent/demo_str_replace_anthropic.yaml"  # model: replay
    code = main(["replay", str(path), "--export", "otlp", "--otlp-endpoint", url, "-o", str(tmp_path / "o")])
    assert code == 0
    (agent,) = [s for s in spans if s.name == "invoke_agent"]
    assert attrs_of(agent)[A.GEN_AI_PROVIDER_NAME] == A.PROVIDER_UNKNOWN
