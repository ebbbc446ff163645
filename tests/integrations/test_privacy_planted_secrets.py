"""Planted secrets (issue #21, items 2-3): secrets of every shape planted in tool arguments, results, call
ids, session ids, tool names, finding evidence and decision messages (planguard's own, and a custom policy's
that quotes the call's arguments), run through a real ``Guard`` with every sink on — OTel spans
and metrics (the real SDK, in memory), the local store (files in a temp dir), the console timeline, a
webhook to a real HTTP server on 127.0.0.1 — and, in the proxy test, through the proxy (its logs).

Capture off (unset, ``false``, ``NO_CONTENT``): no secret and no argument or result text at all reaches
any sink. Capture on (``true``, ``SPAN_ONLY``, ``EVENT_ONLY``, ``SPAN_AND_EVENT``): content arrives, but
no secret does.
"""

from __future__ import annotations

import io
import json
import logging
import os
import re
import string
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from planguard.config import Config
from planguard.decisions import Decision, DecisionKind
from planguard.events import ToolEvent
from planguard.guard import Guard
from planguard.session import Session
from planguard.sinks.capture import ENV_CAPTURE
from planguard.sinks.console import ConsoleSink
from planguard.stages import Policy
from planguard.step import Step

OFF = [None, "false", "NO_CONTENT"]
ON = ["true", "SPAN_ONLY", "EVENT_ONLY", "SPAN_AND_EVENT"]

# --------------------------------------------------------------------------- secrets of every shape

_alnum = string.ascii_letters + string.digits
#: A secret's random core: long enough that none of its 6-character pieces turns up by chance, with a digit
#: after every character so that no piece is a word planguard writes itself (hypothesis also draws string
#: constants from the code under test: "NoTailValidation" once made "alidation" a "leak").
cores = st.text(_alnum, min_size=7, max_size=12).map(
    lambda s: "Zq" + "".join(f"{c}{i % 10}" for i, c in enumerate(s))
)


@dataclass(frozen=True)
class Planted:
    """A text holding a secret, and the secret's pieces (each must be absent from every output)."""

    shape: str
    text: str
    secret: str

    @property
    def pieces(self) -> list[str]:
        parts = [p for p in re.split(r"[^A-Za-z0-9]+", self.secret) if len(p) >= 6]
        return parts or [self.secret]


def _shape(name: str, core: str) -> Planted:
    half = len(core) // 2
    a, b = core[:half], core[half:]
    if name == "url-slash":
        secret = f"{a}/{b}"
        return Planted(name, f"git clone https://admin:{secret}@git.example.com/org/r.git", secret)
    if name == "url-at":
        secret = f"{a}@{b}"
        return Planted(name, f"curl https://admin:{secret}@db.example.com/x", secret)
    if name == "pgp":
        block = (
            f"-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOY{core}\n=Ab1c\n-----END PGP PRIVATE KEY BLOCK-----"
        )
        return Planted(name, f"key:\n{block}\n", core)
    if name == "pem":
        return Planted(
            name, f"-----BEGIN RSA PRIVATE KEY-----\nMII{core}\n-----END RSA PRIVATE KEY-----", core
        )
    if name == "json-in-string":
        return Planted(name, json.dumps(json.dumps({"config": {"password": core}})), core)
    if name == "json-list":
        return Planted(name, json.dumps({"password": [core, "second"]}), core)
    if name == "mysql":
        return Planted(name, f"mysql -u root -p{core} appdb", core)
    if name == "curl-u":
        return Planted(name, f"curl -u admin:{core} https://api.example.com/v1", core)
    if name == "db-pass":
        return Planted(name, f"DB_PASS={core} ./migrate", core)
    if name == "env-password":
        return Planted(name, f"export APP_PASSWORD={core}", core)
    if name == "env-token":
        return Planted(name, f"CI_DEPLOY_TOKEN={core} make deploy", core)
    if name == "sshpass":
        return Planted(name, f"sshpass -p {core} ssh deploy@host", core)
    if name == "bearer":
        return Planted(name, f"curl -H 'Authorization: Bearer {core}' https://api.example.com", core)
    if name == "github":
        token = "ghp_" + (core * 3)[:36]
        return Planted(name, f"GH={token}", token[4:])
    if name == "openai":
        return Planted(name, f"key sk-proj-{core}", core)
    raise AssertionError(name)


SHAPES = (
    "url-slash",
    "url-at",
    "pgp",
    "pem",
    "json-in-string",
    "json-list",
    "mysql",
    "curl-u",
    "db-pass",
    "env-password",
    "env-token",
    "sshpass",
    "bearer",
    "github",
    "openai",
)
planted = st.builds(_shape, st.sampled_from(SHAPES), cores)
#: Ids and names holding a secret (call ids are the model's text, session ids and tool names come from the
#: integration or the harness: any of them may hold anything).
id_secrets = st.one_of(
    cores.map(lambda c: Planted("id-github", "ghp_" + (c * 3)[:36], (c * 3)[:36])),
    cores.map(lambda c: Planted("id-openai", f"sk-proj-{c}", c)),
    cores.map(lambda c: Planted("id-token", f"call_token={c}", c)),
    cores.map(lambda c: Planted("id-url", f"https://u:{c}@h.example.com", c)),
)
markers = st.text(string.ascii_lowercase, min_size=10, max_size=12).map(lambda s: "mk" + s)


@dataclass(frozen=True)
class Run:
    command: Planted  # in a repeated shell command: arguments, then finding evidence and decision messages
    result: Planted  # in the calls' results
    structured: Planted  # under secret-named keys holding a list, a dict and bytes, and as a bytes value
    url: Planted  # a fetch's URL: the canonical action's target
    call_id: Planted
    session_id: Planted
    tool_name: Planted
    arg_marker: str  # plain argument text (no secret): must not leave with capture off
    result_marker: str
    key_marker: str  # an argument's name


runs = st.builds(
    Run,
    planted,
    planted,
    planted,
    st.sampled_from(["url-slash", "url-at"]).flatmap(lambda n: cores.map(lambda c: _shape(n, c))),
    id_secrets,
    id_secrets,
    id_secrets,
    markers,
    markers,
    markers,
)


def events(run: Run) -> list[ToolEvent]:
    command = f"echo {run.arg_marker} && {run.command.text}"
    out = [
        ToolEvent(
            "bash",
            {"command": command},
            call_id=f"{run.call_id.text}-{i}",
            result=f"{run.result_marker}\n{run.result.text}\n",
            exit_code=0,
        )
        for i in range(4)  # the same call four times: a repeated_call finding quoting the command
    ]
    secret = run.structured.secret
    out.append(
        ToolEvent(
            "deploy",
            {
                run.key_marker: "value",
                "password": [secret, "second"],
                "credentials": {"user": "u", "pw": secret},
                "secret": secret.encode(),
                "blob": run.structured.text.encode(),
                "nested": {"args": [run.structured.text]},
            },
            call_id=f"{run.call_id.text}-deploy",
            result=run.structured.text,
        )
    )
    out.append(
        ToolEvent("WebFetch", {"url": run.url.text.split()[-1], "prompt": run.arg_marker}, result="ok")
    )
    out.append(ToolEvent(run.tool_name.text, {"q": run.arg_marker}, call_id="c-tool", result="ok"))
    return out


class QuotingPolicy(Policy):
    """A custom policy as a user might write it: its messages quote the call's arguments."""

    name = "quoting"

    def before_tool(self, step: Step, session: Session, state: Any) -> Decision | None:
        return Decision(
            DecisionKind.LOG, f"about to run {json.dumps(step.event.arguments, default=str)}", self.name
        )

    def after_tool(self, step: Step, session: Session, state: Any) -> list[Decision]:
        quoted = json.dumps(step.event.arguments, default=str)
        return [
            Decision(DecisionKind.NOTIFY, f"ran {step.event.tool} with {quoted}", self.name),
            Decision(DecisionKind.NUDGE, f"you ran {quoted}", self.name),
        ]


# --------------------------------------------------------------------------- every sink, real


class Webhook:
    """A real HTTP receiver on 127.0.0.1: every body it is sent, as text."""

    def __init__(self) -> None:
        self.bodies: list[str] = []
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # http.server's naming
                hook.bodies.append(self.rfile.read(int(self.headers.get("content-length", 0))).decode())
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def webhook() -> Iterator[Webhook]:
    hook = Webhook()
    yield hook
    hook.close()


def outputs(run: Run, mode: str | None, hook: Webhook) -> dict[str, str]:
    """Runs ``run`` through a guard with every sink on; what each sink emitted, as text."""
    env = {k: v for k, v in os.environ.items() if k != ENV_CAPTURE}
    if mode is not None:
        env[ENV_CAPTURE] = mode
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    console = io.StringIO()
    sent_before = len(hook.bodies)
    with tempfile.TemporaryDirectory() as tmp, mock.patch.dict(os.environ, env, clear=True):
        cfg = Config.model_validate(
            {
                "telemetry": {"enabled": True},
                "store": {"path": str(Path(tmp) / "sessions")},
                "sessions": {"idle_timeout_s": None},
                "policies": {
                    "responses": {"findings": {"repeated_call": {"ladder": {"log": 1, "warn": 1}}}},
                },
                "webhook": {
                    "url": hook.url,
                    "events": ["finding", "decision:*", "session_start", "session_end"],
                },
            }
        )
        guard = Guard(
            cfg,
            tracer_provider=tracer_provider,
            meter_provider=meter_provider,
            policies=[QuotingPolicy()],
            sinks=[ConsoleSink(console, color=False)],
        )
        sid = run.session_id.text
        for ev in events(run):
            guard.before_model(sid)
            if guard.before_tool(sid, ev).blocks:
                continue
            guard.after_tool(sid, ev)
        summary = guard.end(sid)
        assert summary is not None and summary.finding_counts.get("repeated_call")
        guard.shutdown()
        assert guard.errors.total == 0, dict(guard.errors.counts)
        files = sorted((Path(tmp) / "sessions").glob("*"))
        store = "".join(f.read_text() for f in files)
    spans = [
        json.dumps(
            {
                "name": s.name,
                "attributes": dict(s.attributes or {}),
                "events": [{"name": e.name, "attributes": dict(e.attributes or {})} for e in s.events],
            },
            default=str,
        )
        for s in exporter.get_finished_spans()
    ]
    metrics = reader.get_metrics_data()
    return {
        "spans": "\n".join(spans),
        "metrics": metrics.to_json() if metrics is not None else "",
        "store": store,
        "console": console.getvalue(),
        "webhook": "\n".join(hook.bodies[sent_before:]),
    }


def _secrets(run: Run) -> list[str]:
    planted = (run.command, run.result, run.structured, run.url, run.call_id, run.session_id, run.tool_name)
    return [p for x in planted for p in x.pieces]


def _leaks(out: dict[str, str], needles: list[str]) -> list[tuple[str, str]]:
    return [(where, n) for where, text in out.items() for n in needles if n in text]


# Each example runs a guard with every sink (~0.3 s); a failure is reported as drawn (shrinking a run
# through five sinks takes minutes on a shared machine, and the leak's location is in the message).
_settings = settings(
    max_examples=12,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.mark.parametrize("mode", OFF, ids=lambda m: f"capture={m}")
@_settings
@given(run=runs)
def test_capture_off_nothing_of_the_calls_leaves(webhook: Webhook, mode: str | None, run: Run) -> None:
    out = outputs(run, mode, webhook)
    assert out["webhook"] and out["store"] and out["spans"] and out["console"]  # every sink did emit
    assert not _leaks(out, _secrets(run)), _leaks(out, _secrets(run))
    # No argument or result text at all (nor an argument's name), in any sink.
    markers = [run.arg_marker, run.result_marker, run.key_marker]
    assert not _leaks(out, markers), _leaks(out, markers)


@pytest.mark.parametrize("mode", ON, ids=lambda m: f"capture={m}")
@_settings
@given(run=runs)
def test_capture_on_content_arrives_but_no_secret(webhook: Webhook, mode: str, run: Run) -> None:
    out = outputs(run, mode, webhook)
    assert not _leaks(out, _secrets(run)), _leaks(out, _secrets(run))
    # Content does arrive: arguments and results in spans and the store, evidence in the webhook.
    for where in ("spans", "store"):
        assert run.arg_marker in out[where] and run.result_marker in out[where], where
    assert run.arg_marker in out["webhook"]  # (the console shows a step's findings by detector only)
    assert "PLAN REMINDER" in out["console"]  # decision messages, which it shows with content


# --------------------------------------------------------------------------- through the proxy


@pytest.mark.parametrize("mode", [None, "SPAN_AND_EVENT"], ids=["capture-off", "capture-on"])
def test_proxy_logs_store_and_spans_carry_no_planted_secret(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch, mode: str | None
) -> None:
    """A real OpenAI-SDK agent loop through the proxy, its commands and outputs full of secrets: the proxy's
    logs (every planguard/uvicorn/httpx logger at DEBUG), its guard's store and spans carry none."""
    pytest.importorskip("planguard_proxy")
    from proxy_fakes import bash_agent_script, proxy_stack, quiet_config

    from planguard.sinks.capture import capture_mode_from_env
    from planguard.sinks.telemetry.testing import TelemetryCapture
    from tests.integrations.proxy.test_proxy_e2e import run_openai_agent, workdir

    if mode is None:
        monkeypatch.delenv(ENV_CAPTURE, raising=False)
    else:
        monkeypatch.setenv(ENV_CAPTURE, mode)
    caplog.set_level(logging.DEBUG)
    shapes = [_shape(name, f"Zq{name.replace('-', '')}9Xk2Lp7Wd4") for name in SHAPES]
    commands = [f"echo mkproxyarg {json.dumps(p.text)}" for p in shapes] + ["cat calc.py"]
    cap = TelemetryCapture(capture=capture_mode_from_env())  # the mode the variable names
    config = quiet_config(store={"path": str(tmp_path / "store")})
    work = tmp_path / "work"
    work.mkdir()
    cwd = workdir(work)
    with proxy_stack(bash_agent_script(commands), config=config, sinks=(cap.sink,)) as stack:
        run_openai_agent(stack.url, cwd, stream=False)
        assert stack.guard.errors.total == 0
    stack.guard.shutdown()
    cap.flush()
    logs = "\n".join(
        r.getMessage()
        for r in caplog.records
        if r.name.startswith(("planguard", "uvicorn", "httpx", "httpcore"))
    )
    store = "".join(f.read_text() for f in (tmp_path / "store").glob("*.jsonl"))
    spans = "\n".join(json.dumps(dict(s.attributes or {}), default=str) for s in cap.spans())
    assert store and spans and logs  # (uvicorn and httpx log every request at DEBUG/INFO)
    secrets = [piece for p in shapes for piece in p.pieces]
    out = {"logs": logs, "store": store, "spans": spans}
    assert not _leaks(out, secrets)
    if mode is None:
        assert not _leaks(out, ["mkproxyarg"])
    else:
        assert "mkproxyarg" in store


@pytest.mark.parametrize("name", ["reminder", "gate:mine", "recorded"])
def test_a_custom_policy_cannot_pass_as_planguards_own(name: str) -> None:
    """Sinks tell planguard's own messages (shown without content) from a custom policy's (content) by the
    policy's name: a custom policy cannot take one of planguard's."""

    class Impostor(QuotingPolicy):
        pass

    Impostor.name = name
    with pytest.raises(ValueError, match="one of planguard's own"):
        Guard(Config.model_validate({"telemetry": {"enabled": False}}), policies=[Impostor()])
