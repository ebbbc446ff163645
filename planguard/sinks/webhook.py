"""Webhook notifications: chosen events POSTed as JSON from a background worker
(:class:`~planguard.sinks.worker.BackgroundWorker`).

The agent's thread only filters the event and submits a small dict to the worker's bounded queue; the
worker thread does the HTTP, one event at a time, with bounded retries and exponential backoff. A webhook
that is down or hangs costs the agent nothing but a counter (see :class:`WebhookSink`); like every
worker's, what is queued is flushed at exit and on SIGTERM within the shared deadline.

``timeout_s`` is a deadline for a whole attempt, connect to the last byte of the answer. httpx's own
timeouts are per operation, so an endpoint trickling a byte a second would never trip them; a timer shuts
the attempt's socket down at the deadline instead. ``shutdown`` cuts a request still in flight at its own
deadline the same way, and counts it as dropped: when it returns, nothing is pending.

Private by default (README, "Privacy and failure"): evidence, and messages answering findings, are sent as
null unless ``webhook.content`` or the capture variable opts in; all that is sent is redacted, on the worker.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import re
import socket
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..decisions import DecisionKind
from . import Sink
from .capture import ContentPolicy
from .drops import DropCounter
from .worker import BackgroundWorker, restart_in_forked_child

if TYPE_CHECKING:
    import httpx

    from ..decisions import Decision
    from ..findings import Finding
    from ..session import Session, SessionSummary
    from ..step import Step

__all__ = ["WebhookConfig", "WebhookSink"]

logger = logging.getLogger("planguard.sinks.webhook")

_DECISION_KINDS = {k.value for k in DecisionKind}
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
#: Longest evidence or message text an event carries (when content is sent at all).
MAX_CONTENT_CHARS = 2000


class WebhookConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(True, description="Send webhooks when 'url' is set.")
    url: str | None = Field(
        None, description="http(s) URL the events are POSTed to as JSON. null: no webhook."
    )
    events: list[str] = Field(
        default_factory=lambda: ["decision:notify", "decision:stop", "session_end"],
        description="Which events to send: finding, finding:<kind>, decision:<kind> (deny, stop, nudge, "
        "remind, notify, log, *), session_start, session_end.",
    )
    headers: dict[str, str] = Field(
        default_factory=dict,
        description="Extra HTTP headers; '${VAR}' in a value is read from the environment (keep tokens out "
        "of files). Header values are never logged.",
    )
    timeout_s: float = Field(
        2.0, gt=0, description="Deadline for one attempt, connect to the last byte of the answer."
    )
    max_retries: int = Field(
        3, ge=0, description="Retries after a failed delivery (connection error, 429, 5xx)."
    )
    backoff_s: float = Field(0.5, ge=0, description="First retry delay; doubles each retry (with jitter).")
    max_backoff_s: float = Field(10.0, ge=0, description="Longest retry delay.")
    queue_size: int = Field(
        1000, ge=1, description="Events waiting for delivery; beyond this they are dropped."
    )
    content: bool | None = Field(
        None,
        description="Send finding evidence and decision messages (redacted). null: only when "
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT opts in; false: never (they are sent as null).",
    )

    @field_validator("url")
    @classmethod
    def _http_url(cls, v: str | None) -> str | None:
        if v is not None:
            parts = urlsplit(v)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise ValueError(f"expected an http:// or https:// URL, got {v!r}")
        return v

    @field_validator("events")
    @classmethod
    def _known_events(cls, v: list[str]) -> list[str]:
        for e in v:
            head, _, tail = e.partition(":")
            ok = (
                e in ("finding", "session_start", "session_end")
                or (head == "finding" and bool(tail))
                or (head == "decision" and (tail == "*" or tail in _DECISION_KINDS))
            )
            if not ok:
                raise ValueError(
                    f"unknown event {e!r}; expected finding, finding:<kind>, decision:<"
                    + "|".join(sorted(_DECISION_KINDS))
                    + "|*>, session_start or session_end"
                )
        return v


def _redacted(url: str) -> str:
    """The URL without credentials, query or fragment (what we may log)."""
    p = urlsplit(url)
    return f"{p.scheme}://{p.hostname or ''}{':' + str(p.port) if p.port else ''}{p.path}"


class WebhookSink(Sink):
    """Sends chosen session events to a webhook without ever blocking the caller.

    Counters (read any time): ``sent``, ``failed`` (gave up after retries), ``dropped`` (queue full, shut
    down, or cut at shutdown; by reason in ``drops``), ``retries``; ``pending`` events are queued or in
    flight. Every event accepted by a hook ends up in exactly one of sent, failed or dropped.
    ``flush(timeout)`` waits for the queue to drain; ``shutdown(timeout)`` flushes, then stops the worker —
    both bounded.
    """

    def __init__(self, config: WebhookConfig, *, transport: httpx.BaseTransport | None = None):
        if config.url is None:
            raise ValueError("WebhookSink needs webhook.url")
        self.config = config
        self.url = config.url
        self._transport = transport
        self.content = ContentPolicy.resolve(config.content, max_chars=MAX_CONTENT_CHARS)
        ev = set(config.events)
        self._all_findings = "finding" in ev
        self._finding_kinds = frozenset(e.split(":", 1)[1] for e in ev if e.startswith("finding:"))
        dec = {e.split(":", 1)[1] for e in ev if e.startswith("decision:")}
        self._decision_kinds = frozenset(_DECISION_KINDS if "*" in dec else dec)
        self._session_start = "session_start" in ev
        self._session_end = "session_end" in ev
        self.drops = DropCounter()
        # One event at a time: an event the worker has taken is in flight, the rest wait in the queue.
        self._worker: BackgroundWorker[dict[str, Any]] = BackgroundWorker(
            "webhook", self._deliver_batch, drops=self.drops, drop_reason="webhook_queue_full",
            max_queue=config.queue_size, max_batch=1,
        )  # fmt: skip
        self._closed = False
        self._abort = threading.Event()  # shutting down: no more attempts, backoff waits end
        self._client: httpx.Client | None = None
        self._new_delivery_state()
        self.sent = 0
        self.failed = 0
        self.cut = 0  # in flight when shutdown gave up on it
        self.retries = 0
        self._warned = False
        restart_in_forked_child(self)
        # Import the HTTP client now, at configuration time: importing it later in the worker would hold the
        # GIL for tens of milliseconds while the agent's first hook call waits for it.
        try:
            import httpx  # noqa: F401
        except ImportError as exc:
            self._warn_once(f"httpx is not installed ({exc}); events will be dropped")

    # ------------------------------------------------------------------ Sink hooks (agent's thread: cheap)

    def on_session_start(self, session: Session, state: None) -> None:
        if self._session_start:
            self._put(
                {"event": "session_start", "session_id": session.id, "metadata": dict(session.metadata)}
            )

    def on_finding(self, session: Session, step: Step | None, finding: Finding, state: None) -> None:
        if self._all_findings or finding.detector in self._finding_kinds:
            self._put(
                {
                    "event": "finding",
                    "session_id": session.id,
                    "kind": finding.detector,
                    "evidence": finding.evidence,
                    "first_step": finding.first_step,
                    "last_step": finding.last_step,
                    "at_end": finding.at_end,
                }
            )

    def on_decision(self, session: Session, step: Step | None, decision: Decision, state: None) -> None:
        if decision.kind.value in self._decision_kinds:
            self._put(
                {
                    "event": "decision",
                    "session_id": session.id,
                    "kind": decision.kind.value,
                    "policy": decision.policy,
                    "decision": decision,  # (its message, as the content policy allows, on the worker)
                    "finding": decision.finding.detector if decision.finding is not None else None,
                    "step": step.index if step is not None else None,
                    "tool": step.event.tool if step is not None else None,
                }
            )

    def on_session_end(self, session: Session, summary: SessionSummary, state: None) -> None:
        if self._session_end:
            primary = summary.primary
            self._put(
                {
                    "event": "session_end",
                    "session_id": summary.session_id,
                    "steps": summary.n_steps,
                    "model_calls": summary.n_model_calls,
                    "letters": summary.letters,
                    "scores": primary.as_dict() if primary is not None else None,
                    "findings": summary.finding_counts,
                    "decisions": summary.decision_counts,
                    "duration_s": summary.duration,
                }
            )

    def _put(self, payload: dict[str, Any]) -> None:
        payload["time"] = time.time()
        self._worker.submit(payload)

    # ------------------------------------------------------------------ lifecycle

    def _new_delivery_state(self) -> None:
        """What the worker thread and a shutdown share: made at start, and again in a forked child (whose
        copied lock another thread may have held; the worker starts anew there by itself)."""
        self._lock = threading.Lock()
        # The event the worker is delivering and how to cut its request short (both under _lock).
        self._in_flight: dict[str, Any] | None = None
        self._cut_in_flight: Callable[[], None] | None = None

    after_fork_in_child = _new_delivery_state

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until every queued event is delivered or given up; False on timeout."""
        return self._worker.flush(timeout)

    def shutdown(self, timeout: float = 2.0) -> None:
        """Deliver what is queued within ``timeout``, then stop; what is left is counted as dropped."""
        if self._closed:
            return
        self._closed = True
        deadline = time.monotonic() + timeout
        delivered = self.flush(timeout)
        self._abort.set()  # stop backoff waits and further attempts: the worker drops what it takes now
        if not delivered:
            # The worker is stuck in a request: cut it and count it here, so the counters are final when
            # shutdown returns (the worker will not count it again).
            with self._lock:
                cut, self._cut_in_flight = self._cut_in_flight, None
                if self._in_flight is not None:
                    self._in_flight = None
                    self.cut += 1
            if cut is not None:
                cut()
        # What the worker has not taken by the deadline is dropped and counted by the worker itself.
        if self._worker.shutdown(max(0.0, deadline - time.monotonic())) and self._client is not None:
            self._client.close()

    @property
    def dropped(self) -> int:
        return self.drops.total + self.cut

    @property
    def stats(self) -> dict[str, int]:
        return {
            "sent": self.sent,
            "failed": self.failed,
            "dropped": self.dropped,
            "retries": self.retries,
            # queued or in flight: not yet sent, failed or dropped
            "pending": self._worker.pending + (self._in_flight is not None),
        }

    # ------------------------------------------------------------------ worker thread

    def _deliver_batch(self, batch: list[dict[str, Any]]) -> None:
        for item in batch:
            client = self._client if self._client is not None else self._new_client()
            if client is None or self._abort.is_set():
                self.drops.add("webhook_not_sent")
                continue
            with self._lock:
                self._in_flight = item
            try:
                ok = self._deliver(client, item)
            except Exception as exc:  # the worker must survive anything
                self._warn_once(type(exc).__name__)
                ok = False
            with self._lock:
                if self._in_flight is not item:  # shutdown gave up on it and counted it
                    continue
                self._in_flight = None
                if ok:
                    self.sent += 1
                elif self._abort.is_set():
                    self.drops.add("webhook_not_sent")
                else:
                    self.failed += 1

    def _new_client(self) -> httpx.Client | None:
        """The HTTP client, made on the worker thread on first use (None, warned once, when it cannot be)."""
        try:
            import httpx

            headers = {"content-type": "application/json", "user-agent": "planguard-webhook"}
            for k, v in self.config.headers.items():
                headers[k] = _ENV_REF.sub(lambda m: os.environ.get(m.group(1), ""), v)
            self._client = httpx.Client(
                timeout=httpx.Timeout(self.config.timeout_s),
                limits=httpx.Limits(max_keepalive_connections=0),  # each attempt connects: see _post
                headers=headers,
                follow_redirects=False,
                transport=self._transport,
            )
        except Exception as exc:  # without a client every event is dropped, never raised
            self._warn_once(f"cannot start: {exc!r}")
        return self._client

    def _deliver(self, client: httpx.Client, item: dict[str, Any]) -> bool:
        import httpx

        body = json.dumps({"source": "planguard", **self._private(item)}, default=str).encode()
        cfg = self.config
        for attempt in range(cfg.max_retries + 1):
            if attempt:
                self.retries += 1
                delay = min(cfg.max_backoff_s, cfg.backoff_s * 2 ** (attempt - 1)) * (
                    0.5 + random.random() / 2
                )
                if self._abort.wait(delay):
                    return False
            try:
                r = self._post(client, body)
            except httpx.HTTPError as exc:
                self._warn_once(type(exc).__name__)
                continue
            if r.status_code < 300:
                return True
            if r.status_code != 429 and r.status_code < 500:
                self._warn_once(f"HTTP {r.status_code}")
                return False  # a client error will not go away by retrying
            self._warn_once(f"HTTP {r.status_code}")
        return False

    def _post(self, client: httpx.Client, body: bytes) -> httpx.Response:
        """One attempt within ``timeout_s``, end to end: a timer shuts the attempt's socket down at the
        deadline (the socket comes from httpcore's ``connect_tcp`` trace; keep-alive is off, so every
        attempt connects). Shutting a socket down wakes a thread blocked reading it."""
        import httpx

        sockets: list[socket.socket] = []
        expired = threading.Event()
        lock = threading.Lock()

        def cut() -> None:
            with lock:
                expired.set()
                for sock in sockets:
                    with contextlib.suppress(OSError):
                        sock.shutdown(socket.SHUT_RDWR)

        def trace(name: str, info: dict[str, Any]) -> None:
            if name == "connection.connect_tcp.complete":
                stream = info.get("return_value")
                sock = stream.get_extra_info("socket") if stream is not None else None
                if isinstance(sock, socket.socket):
                    with lock:
                        sockets.append(sock)
                    if expired.is_set():
                        cut()

        timer = threading.Timer(self.config.timeout_s, cut)
        timer.daemon = True
        with self._lock:
            self._cut_in_flight = cut
        timer.start()
        try:
            response = client.post(self.url, content=body, extensions={"trace": trace})
        except httpx.HTTPError:
            if expired.is_set():
                raise httpx.TimeoutException(
                    f"no complete answer within {self.config.timeout_s:g}s"
                ) from None
            raise
        finally:
            timer.cancel()
            with self._lock:
                self._cut_in_flight = None
        return response

    def _private(self, item: dict[str, Any]) -> dict[str, Any]:
        """The event as it may leave the process: content only as the policy allows, redacted."""
        c = self.content
        out = dict(item)
        out["session_id"] = c.clean(out.get("session_id"))
        if out.get("tool") is not None:  # a tool's name may hold anything: an id, redacted like one
            out["tool"] = c.clean(out["tool"])
        if "evidence" in out:
            out["evidence"] = c.text(out["evidence"])
        decision = out.pop("decision", None)
        if decision is not None:
            out["message"] = c.message(decision)
        if "metadata" in out:
            out["metadata"] = c.clean(out["metadata"])
        return out

    def _warn_once(self, what: str) -> None:
        if not self._warned:
            self._warned = True
            logger.warning(
                "planguard webhook delivery to %s failed (%s); further failures are only counted",
                _redacted(self.url),
                what,
            )
