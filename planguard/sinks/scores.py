"""planguard's scores written into the backends people read them in, through each backend's own API.

OTLP carries the scores as ``gen_ai.evaluation.result`` events, which most backends do not turn into scores:
Phoenix shows annotations, Langfuse shows scores, and both take them only through their APIs. These sinks
send, at each session's end, the compliance scores (PC, PPC, POC, PPF) and one result per detector that
fired, attached to the session's ``invoke_agent`` span (its trace and span ids, from the OpenTelemetry sink
of the same pipeline) — the same names, values, labels and explanations as the evaluation events
(:mod:`planguard.sinks.otel.evaluations`: every score in [0, 1], higher is better; a finding scores 0).

Configured by name in ``sinks.custom``::

    sinks:
      custom:
        - {class: phoenix_annotations}   # PHOENIX_COLLECTOR_ENDPOINT, PHOENIX_API_KEY
        - {class: langfuse_scores}       # LANGFUSE_HOST, LANGFUSE_PUBLIC_KEY, LANGFUSE_SECRET_KEY

Credentials come from the backends' standard variables (or the options) and are never logged. Requests go
out on a background worker; a session without a recorded span (telemetry off or not configured) is skipped
and counted (``score_no_span``), a refused or failed request counted (``score_export_failed``).
"""

from __future__ import annotations

import logging
import os
import time
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx

from ..errors import ErrorCounter
from ..stages import Sink
from .drops import DropCounter
from .otel.attributes import (
    GEN_AI_EVALUATION_EXPLANATION,
    GEN_AI_EVALUATION_NAME,
    GEN_AI_EVALUATION_SCORE_LABEL,
    GEN_AI_EVALUATION_SCORE_VALUE,
    LABEL_DETECTED,
)
from .worker import BackgroundWorker

if TYPE_CHECKING:
    from ..session import Session, SessionSummary

__all__ = ["LangfuseScores", "PhoenixAnnotations", "Score", "ScoreSink", "session_scores"]

_log = logging.getLogger("planguard.sinks.scores")


@dataclass(frozen=True)
class Score:
    """One evaluation result of a session, addressed to its ``invoke_agent`` span."""

    trace_id: str  # 32 hex digits
    span_id: str  # 16 hex digits
    name: str
    value: float
    label: str
    explanation: str


def session_scores(session: Session, summary: SessionSummary, trace_id: str, span_id: str) -> list[Score]:
    """The session's compliance scores and one score per detector that fired, as evaluation results."""
    from .otel.evaluations import score_evaluation

    plan = session.pipeline.plan.name
    results: list[dict[str, Any]] = []
    primary = summary.scores.get(plan)
    if primary is not None:
        comp = session.primary_compliance
        missing = list(comp.missing()) if comp is not None else []
        results += [
            score_evaluation(n, getattr(primary, n), plan, missing) for n in ("PC", "PPC", "POC", "PPF")
        ]
    for detector, count in sorted(summary.finding_counts.items()):
        results.append(
            {
                GEN_AI_EVALUATION_NAME: f"planguard.finding.{detector}",
                GEN_AI_EVALUATION_SCORE_VALUE: 0.0,
                GEN_AI_EVALUATION_SCORE_LABEL: LABEL_DETECTED,
                GEN_AI_EVALUATION_EXPLANATION: f"anti-pattern {detector!r} detected {count} time(s) "
                "(score 0: the check failed; higher is better)",
            }
        )
    return [
        Score(
            trace_id,
            span_id,
            r[GEN_AI_EVALUATION_NAME],
            float(r[GEN_AI_EVALUATION_SCORE_VALUE]),
            r[GEN_AI_EVALUATION_SCORE_LABEL],
            r[GEN_AI_EVALUATION_EXPLANATION],
        )
        for r in results
    ]


class _Ids:
    """Where a session's scores go: its ``invoke_agent`` span, found once the session is running."""

    __slots__ = ("__weakref__", "session", "span_id", "trace_id")

    def __init__(self, session: Session) -> None:
        self.session = session
        self.trace_id = ""
        self.span_id = ""


class ScoreSink(Sink):
    """Sends each session's scores at its end through ``send`` (a backend's API) on a background worker."""

    name = "scores"

    def __init__(
        self,
        *,
        timeout_s: float = 10.0,
        shutdown_timeout_s: float = 30.0,
        max_queue: int = 1024,
        transport: httpx.BaseTransport | None = None,
        drops: DropCounter | None = None,
        errors: ErrorCounter | None = None,
    ) -> None:
        self.shutdown_timeout_s = shutdown_timeout_s
        self.drops = drops if drops is not None else DropCounter()
        self.errors = errors if errors is not None else ErrorCounter()
        self._client = httpx.Client(timeout=timeout_s, transport=transport)
        self._worker: BackgroundWorker[list[Score]] = BackgroundWorker(
            f"{self.name}-scores",
            self._send_batches,
            drops=self.drops,
            drop_reason="score_queue_full",
            max_queue=max_queue,
            errors=self.errors,
        )
        # Sessions not ended yet: at shutdown their scores so far are sent (as the OTel sink closes their
        # spans). Weak: a state lives as long as its session.
        self._open: weakref.WeakSet[_Ids] = weakref.WeakSet()

    def new_state(self, session: Session) -> _Ids:
        state = _Ids(session)
        self._open.add(state)
        return state

    def on_session_start(self, session: Session, state: _Ids) -> None:
        self._find_span(session, state)

    def on_tool_start(self, session: Session, step: Any, state: _Ids) -> None:
        if not state.span_id:  # a restored session has no start: its first call finds the span
            self._find_span(session, state)

    def on_session_end(self, session: Session, summary: SessionSummary, state: _Ids) -> None:
        self._open.discard(state)
        if not state.span_id:
            self.drops.add("score_no_span")
            return
        self._worker.submit(session_scores(session, summary, state.trace_id, state.span_id))

    def _find_span(self, session: Session, state: _Ids) -> None:
        from .otel.otel import session_span_context

        ctx = session_span_context(session)
        if ctx is not None:
            state.trace_id, state.span_id = f"{ctx.trace_id:032x}", f"{ctx.span_id:016x}"

    def _send_batches(self, batches: list[list[Score]]) -> None:
        for scores in batches:
            try:
                self.send(self._client, scores)
            except Exception as exc:  # the reason only: a request may carry credentials
                self.drops.add("score_export_failed", len(scores))
                self.errors.record(f"{type(self).__name__}.send", exc)
                _log.warning("%s: %d score(s) not sent: %s", type(self).__name__, len(scores), _reason(exc))

    def send(self, client: httpx.Client, scores: list[Score]) -> None:
        raise NotImplementedError

    def flush(self, timeout_s: float = 10.0) -> bool:
        return self._worker.flush(timeout_s)

    def shutdown(self) -> None:
        for state in list(self._open):  # sessions nobody ended (an agent's thread stays open)
            self.on_session_end(state.session, state.session.summary(), state)
        self._worker.shutdown(self.shutdown_timeout_s)
        self._client.close()


def _reason(exc: Exception) -> str:
    if isinstance(exc, httpx.HTTPStatusError):  # the backend's answer (never the request and its headers)
        return f"HTTP {exc.response.status_code} {exc.response.text[:200]!r}"
    return type(exc).__name__


class PhoenixAnnotations(ScoreSink):
    """Phoenix span annotations on the session's span (``POST /v1/span_annotations``) and trace annotations
    for the compliance scores (``POST /v1/trace_annotations``), annotator kind ``CODE``.

    ``endpoint``: Phoenix's base URL (default ``PHOENIX_COLLECTOR_ENDPOINT`` without a ``/v1/traces``
    suffix, else ``http://localhost:6006``); ``api_key``: default ``PHOENIX_API_KEY`` (sent as a bearer
    token); ``span_wait_s``: how long a refusal for a span Phoenix does not have yet is retried."""

    name = "phoenix"

    def __init__(
        self,
        endpoint: str | None = None,
        api_key: str | None = None,
        span_wait_s: float = 30.0,
        **kwargs: Any,
    ) -> None:
        self.span_wait_s = span_wait_s
        base = endpoint or os.environ.get("PHOENIX_COLLECTOR_ENDPOINT") or "http://localhost:6006"
        base = base.rstrip("/")
        self.endpoint = base[: -len("/v1/traces")] if base.endswith("/v1/traces") else base
        key = api_key if api_key is not None else os.environ.get("PHOENIX_API_KEY")
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}
        super().__init__(**kwargs)

    def send(self, client: httpx.Client, scores: list[Score]) -> None:
        def annotation(s: Score) -> dict[str, Any]:
            return {
                "name": s.name,
                "annotator_kind": "CODE",
                "result": {"score": s.value, "label": s.label, "explanation": s.explanation},
                "metadata": {"source": "planguard"},
                "identifier": "planguard",
            }

        spans = [{**annotation(s), "span_id": s.span_id} for s in scores]
        traces = [{**annotation(s), "trace_id": s.trace_id} for s in scores if "." not in s.name]
        for path, data in (("/v1/span_annotations", spans), ("/v1/trace_annotations", traces)):
            if data:
                self._post(client, f"{self.endpoint}{path}", {"data": data})

    def _post(self, client: httpx.Client, url: str, body: dict[str, Any]) -> None:
        # At a session's end its span may still be on its way to Phoenix (the exporter's batch, Phoenix's
        # ingestion), and Phoenix refuses annotations of spans it does not have yet (404): try again, with
        # a growing pause, for at most ``span_wait_s``.
        deadline = time.monotonic() + self.span_wait_s
        pause = 0.25
        while True:
            r = client.post(url, json=body, headers=self._headers)
            if r.status_code != 404 or time.monotonic() + pause > deadline:
                r.raise_for_status()
                return
            time.sleep(pause)
            pause = min(pause * 2, 4.0)


class LangfuseScores(ScoreSink):
    """Langfuse scores (``POST /api/public/scores``, one per score, ``dataType: NUMERIC``) on the session's
    trace and observation (Langfuse keeps the OpenTelemetry trace and span ids of spans it ingested).

    ``host``: default ``LANGFUSE_HOST`` (or ``LANGFUSE_BASE_URL``), else ``https://cloud.langfuse.com``;
    ``public_key``/``secret_key``: default ``LANGFUSE_PUBLIC_KEY``/``LANGFUSE_SECRET_KEY`` (HTTP Basic)."""

    name = "langfuse"

    def __init__(
        self,
        host: str | None = None,
        public_key: str | None = None,
        secret_key: str | None = None,
        **kwargs: Any,
    ) -> None:
        env = os.environ
        self.host = (host or env.get("LANGFUSE_HOST") or env.get("LANGFUSE_BASE_URL") or "").rstrip("/")
        self.host = self.host or "https://cloud.langfuse.com"
        public = public_key if public_key is not None else env.get("LANGFUSE_PUBLIC_KEY", "")
        secret = secret_key if secret_key is not None else env.get("LANGFUSE_SECRET_KEY", "")
        self._auth = httpx.BasicAuth(public, secret)
        super().__init__(**kwargs)

    def send(self, client: httpx.Client, scores: list[Score]) -> None:
        for s in scores:
            body = {
                "traceId": s.trace_id,
                "observationId": s.span_id,
                "name": s.name,
                "value": s.value,
                "dataType": "NUMERIC",
                "comment": f"{s.label}: {s.explanation}",
            }
            r = client.post(f"{self.host}/api/public/scores", json=body, auth=self._auth)
            r.raise_for_status()
