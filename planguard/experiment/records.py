"""Result files: one JSON line per session (``type: result``) plus outcome lines reported later
(``type: outcome``: task success, tokens, tool calls), merged by session id when read."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..documents import loads_json
from ..errors import ErrorCounter
from ..sinks import Sink
from ..sinks.drops import DropCounter
from ..sinks.worker import BackgroundWorker
from .config import CONDITIONS
from .endpoints import Endpoint
from .policy import RESULT_KEY

if TYPE_CHECKING:
    from ..session import Session, SessionSummary

__all__ = ["Episode", "ReadProblem", "ResultRecorder", "read_results", "record_outcome"]

_OUTCOME_FIELDS = ("success", "tokens", "tool_calls")
#: Result fields put on the result span as ``planguard.experiment.<field>``.
SPAN_FIELDS = (
    "experiment",
    "arm",
    "condition",
    "text",
    "task",
    "cluster",
    "repeat",
    "endpoint",
    "endpoint_step",
    "endpoint_tool",
    "model_calls",
    "tool_calls",
    "tokens",
    "success",
)


@dataclass(slots=True)
class Episode:
    """One session of the experiment as the analysis sees it."""

    session_id: str
    task: str
    condition: str  # "A" | "B" | "none"
    endpoint: Endpoint
    cluster: str | None = None
    text: str | None = None
    repeat: str | None = None
    arm: str | None = None
    success: float | None = None
    tokens: float | None = None
    tool_calls: float | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def key(self, name: str | None) -> str:
        """The cluster under ``--cluster name`` (default: the ``cluster`` field, else the task)."""
        if name is None or name == "cluster":
            return self.cluster if self.cluster is not None else self.task
        if name == "task":
            return self.task
        v = self.meta.get(name)
        if v is None:
            raise KeyError(name)
        return str(v)


@dataclass(frozen=True, slots=True)
class ReadProblem:
    source: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.source}:{self.line}: {self.message}"


class ResultRecorder(Sink):
    """Appends each finished session's result record to a JSONL file, from a background worker."""

    def __init__(
        self,
        path: str | Path,
        *,
        errors: ErrorCounter | None = None,
        max_queue: int = 10_000,
        tracer_provider: Any = None,
        spans: bool = False,
    ):
        self._tracer: Any = None
        if spans:
            from opentelemetry import trace

            self._tracer = trace.get_tracer("planguard.experiment", tracer_provider=tracer_provider)
        self.path = Path(path)
        self.drops = DropCounter()
        self._errors = errors or ErrorCounter()
        self._worker: BackgroundWorker[dict[str, Any]] = BackgroundWorker(
            "experiment_results",
            self._write,
            drops=self.drops,
            drop_reason="experiment_queue_full",
            max_queue=max_queue,
            errors=self._errors,
        )

    def on_session_end(self, session: Session, summary: SessionSummary, state: None) -> None:
        record = session.metadata.get(RESULT_KEY)
        if isinstance(record, dict):
            self._worker.submit(record)
            if self._tracer is not None:
                self._span(session, record)

    def _span(self, session: Session, record: dict[str, Any]) -> None:
        # One short span per session carrying the result as attributes (labels and counts only: no tool
        # arguments or results), joined to the session's spans by gen_ai.conversation.id.
        attrs: dict[str, Any] = {"gen_ai.conversation.id": session.id}
        for key in SPAN_FIELDS:
            v = record.get(key)
            if isinstance(v, (str, bool, int, float)):
                attrs[f"planguard.experiment.{key}"] = v
        span = self._tracer.start_span(
            "planguard.experiment.result", attributes=attrs, start_time=int(session.started_at * 1e9)
        )
        span.end()

    def _write(self, batch: list[dict[str, Any]]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as f:
            for record in batch:
                f.write(json.dumps(record, default=str, separators=(",", ":")) + "\n")

    def flush(self, timeout_s: float = 5.0) -> bool:
        return self._worker.flush(timeout_s)

    def shutdown(self) -> None:
        self._worker.shutdown()

    @property
    def stats(self) -> dict[str, int]:
        return dict(self.drops.counts)


_outcome_lock = threading.Lock()


def record_outcome(
    path: str | Path,
    session_id: str,
    *,
    success: bool | float | None = None,
    tokens: float | None = None,
    tool_calls: float | None = None,
) -> None:
    """Append the caller's outcome of a session (task success, cost) to a results file. Later outcome lines
    override earlier values and values in the session's result record."""
    rec: dict[str, Any] = {"type": "outcome", "session_id": session_id, "at": time.time()}
    for k, v in (("success", success), ("tokens", tokens), ("tool_calls", tool_calls)):
        if v is not None:
            rec[k] = float(v) if not isinstance(v, bool) else v
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with _outcome_lock, p.open("a", encoding="utf-8") as f:
        f.write(json.dumps(rec, separators=(",", ":")) + "\n")


def _num(v: Any, what: str) -> float | None:
    if v is None:
        return None
    if isinstance(v, bool):
        return 1.0 if v else 0.0
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        low = v.strip().lower()
        if low in ("true", "yes", "success", "pass"):
            return 1.0
        if low in ("false", "no", "failure", "fail"):
            return 0.0
        try:
            return float(low)
        except ValueError:
            pass
    raise ValueError(f"'{what}' is {v!r}; expected a number or a boolean")


def _opt_str(v: Any) -> str | None:
    return None if v is None else str(v)


def _episode(d: Mapping[str, Any]) -> Episode:
    for key in ("session_id", "condition", "endpoint"):
        if d.get(key) is None:
            raise ValueError(f"'{key}' is missing; expected it in every result record")
    cond = d["condition"]
    if cond not in CONDITIONS:
        raise ValueError(f"'condition' is {cond!r}; expected A, B or none")
    try:
        endpoint = Endpoint(d["endpoint"])
    except ValueError:
        raise ValueError(
            f"'endpoint' is {d['endpoint']!r}; expected one of {', '.join(e.value for e in Endpoint)}"
        ) from None
    meta = d.get("meta") or {}
    if not isinstance(meta, Mapping):
        raise ValueError("'meta' is not an object")
    task = d.get("task")
    return Episode(
        session_id=str(d["session_id"]),
        task=str(task if task is not None else d["session_id"]),
        condition=cond,
        endpoint=endpoint,
        cluster=_opt_str(d.get("cluster")),
        text=_opt_str(d.get("text")),
        repeat=_opt_str(d.get("repeat")),
        arm=_opt_str(d.get("arm")),
        success=_num(d.get("success"), "success"),
        tokens=_num(d.get("tokens"), "tokens"),
        tool_calls=_num(d.get("tool_calls"), "tool_calls"),
        meta=dict(meta),
    )


def read_results(paths: Iterable[str | Path]) -> tuple[list[Episode], list[ReadProblem]]:
    """Episodes from result files (JSONL), outcome lines merged in. Bad lines are reported and skipped."""
    results: dict[str, Episode] = {}
    outcomes: dict[str, dict[str, Any]] = {}
    problems: list[ReadProblem] = []
    for path in paths:
        for line_no, d, err in _lines(Path(path)):
            if err is not None:
                problems.append(ReadProblem(str(path), line_no, err))
                continue
            assert d is not None
            kind = d.get("type", "result")
            try:
                if kind == "outcome":
                    sid = d.get("session_id")
                    if sid is None:
                        raise ValueError("'session_id' is missing; expected it in every outcome record")
                    o = outcomes.setdefault(str(sid), {})
                    for k in _OUTCOME_FIELDS:
                        if k in d:
                            o[k] = _num(d[k], k)
                elif kind == "result":
                    ep = _episode(d)
                    results[ep.session_id] = ep
                else:
                    raise ValueError(f"'type' is {kind!r}; expected result or outcome")
            except ValueError as exc:
                problems.append(ReadProblem(str(path), line_no, str(exc)))
    for sid, o in outcomes.items():
        target = results.get(sid)
        if target is None:
            problems.append(ReadProblem("outcomes", 0, f"outcome for unknown session {sid!r} ignored"))
            continue
        for k, v in o.items():
            setattr(target, k, v)
    return list(results.values()), problems


def _lines(path: Path) -> Iterator[tuple[int, dict[str, Any] | None, str | None]]:
    try:
        f = path.open(encoding="utf-8")
    except OSError as exc:
        yield 0, None, f"cannot read ({exc.strerror or exc})"
        return
    with f:
        for i, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                d = loads_json(line)
            except ValueError as exc:
                yield i, None, f"not JSON ({exc})"
                continue
            if not isinstance(d, dict):
                yield i, None, "expected a JSON object"
                continue
            yield i, d, None
