"""The records of a stored session, one JSON object per line, and their conversion to and from JSON.

A session file is::

    {"type": "planguard.session", "v": 2, "session_id": ..., "plan": ..., "content": false, ...}
    {"type": "step", "index": 0, "event": {...}, "roles": [...], "decisions": [...], "scores": {...}, ...}
    {"type": "blocked", "event": {...}, "decisions": [...]}        # a call a policy refused to run
    {"type": "message", "role": "user", "roles": ["confirm"], ...}  # a conversation turn the plan matched
    {"type": "finding", ...}  /  {"type": "decision", ...}          # session-level (no step)
    {"type": "end", "summary": {...}}

The writer builds these records from live objects and the reader parses them back into the same
records (``from_json(to_json(r)) == r``), so replay and reports see exactly what was written. Lines are
strict JSON: a NaN or infinity in a tool's arguments or metadata, which JSON cannot express, is written as
null, and an Enum as its value (see planguard/sinks/store/writer.py).

Version 2 (``"content"`` in the header): without content (the default, see ``StoreConfig.content``) an
event has no ``arguments``, ``result``, ``action`` text or ``metadata`` but a keyed ``digest`` of the call;
findings no evidence and only numeric data; decisions no message; commands no labels; canonical actions
``target_id``/``path_id`` digests instead of ``target``/``path``; an event then carries the ``facts``
that decisions read of its arguments (each argument predicate's verdict, the todo list with its texts
digested). What replay needs — each step's command roles and action (letters and metrics exactly; digests
tell detectors which calls, targets and paths were the same within the run) — is always kept.
Version 1 files (content always kept) still read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ...decisions import Decision, DecisionKind
from ...events import RECORDED_KEY, ToolEvent
from ...findings import Finding

__all__ = [
    "HEADER_TYPE",
    "RECORDED_KEY",
    "MessageRecord",
    "SCHEMA_VERSION",
    "BlockedRecord",
    "DecisionRecord",
    "EventRecord",
    "FindingRecord",
    "RecordError",
    "SessionEnd",
    "SessionHeader",
    "StepRecord",
    "event_json",
    "step_json",
]

SCHEMA_VERSION = 2
#: ``type`` of a session file's first line (also how the loaders recognise the format).
HEADER_TYPE = "planguard.session"


class RecordError(ValueError):
    """A record that does not have the expected shape; the message names the key and what was expected."""


def _req(d: Mapping[str, Any], key: str, kinds: type | tuple[type, ...], what: str) -> Any:
    if key not in d:
        raise RecordError(f"'{key}' is missing; expected {what}")
    value = d[key]
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in _as_tuple(kinds)):
        raise RecordError(f"'{key}' is {type(value).__name__}; expected {what}")
    return value


def _opt(
    d: Mapping[str, Any], key: str, kinds: type | tuple[type, ...], what: str, default: Any = None
) -> Any:
    value = d.get(key)
    if value is None:
        return default
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in _as_tuple(kinds)):
        raise RecordError(f"'{key}' is {type(value).__name__}; expected {what}")
    return value


def _as_tuple(kinds: type | tuple[type, ...]) -> tuple[type, ...]:
    return kinds if isinstance(kinds, tuple) else (kinds,)


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


# A step record and its event as JSON: what ``StepRecord.to_json`` and ``EventRecord.to_json`` write, and
# what the writer writes for each tool call straight from the live call (building the record objects first
# would cost a step line a fifth more).


def step_json(
    index: int,
    event: dict[str, Any],
    *,
    roles: list[str],
    letters: str,
    commands: list[list[str]],
    action: dict[str, Any] | None,
    findings: list[dict[str, Any]],
    decisions: list[dict[str, Any]],
    scores: dict[str, float] | None,
    n_model_calls: int,
) -> dict[str, Any]:
    """A step line's object (see :class:`StepRecord`); ``event``: its :func:`event_json`."""
    d: dict[str, Any] = {
        "type": "step",
        "index": index,
        "event": event,
        "roles": roles,
        "letters": letters,
        "commands": commands,
    }
    if action is not None:
        d["action"] = action
    if findings:
        d["findings"] = findings
    if decisions:
        d["decisions"] = decisions
    if scores is not None:
        d["scores"] = scores
    d["n_model_calls"] = n_model_calls
    return d


def event_json(
    tool: str,
    *,
    arguments: Any = None,
    digest: str | None = None,
    call_id: str | None = None,
    action: str | None = None,
    result: str | None = None,
    exit_code: int | None = None,
    start_time: float | None = None,
    end_time: float | None = None,
    is_error: bool = False,
    metadata: dict[str, Any] | None = None,
    facts: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """An event's object (see :class:`EventRecord`): what is None, false or empty is left out."""
    d: dict[str, Any] = {"tool": tool}
    if arguments is not None:
        d["arguments"] = arguments
    if digest is not None:
        d["digest"] = digest
    if call_id is not None:
        d["call_id"] = call_id
    if action is not None:
        d["action"] = action
    if result is not None:
        d["result"] = result
    if exit_code is not None:
        d["exit_code"] = exit_code
    if start_time is not None:
        d["start_time"] = start_time
    if end_time is not None:
        d["end_time"] = end_time
    if is_error:
        d["is_error"] = True
    if metadata:
        d["metadata"] = metadata
    if facts:
        d["facts"] = facts
    return d


@dataclass(slots=True)
class EventRecord:
    """A :class:`~planguard.events.ToolEvent` as stored (content possibly redacted and truncated)."""

    tool: str
    arguments: Any = None  # None: not recorded (a store without content)
    call_id: str | None = None
    action: str | None = None
    result: str | None = None
    is_error: bool = False
    exit_code: int | None = None
    start_time: float | None = None
    end_time: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    digest: str | None = None  # without content: the call's keyed digest (equal calls, equal digests)
    # without content: what decisions read of the arguments ({"args": {predicate id: verdict}, "todo": ...};
    # see StoreSink.event_json)
    facts: dict[str, Any] | None = None

    def to_event(self) -> ToolEvent:
        args = self.arguments if isinstance(self.arguments, (str, Mapping)) else {}
        return ToolEvent(
            tool=self.tool,
            arguments=args,
            call_id=self.call_id,
            action=self.action,
            result=self.result,
            is_error=self.is_error,
            exit_code=self.exit_code,
            start_time=self.start_time,
            end_time=self.end_time,
            metadata=dict(self.metadata),
        )

    def to_json(self) -> dict[str, Any]:
        return event_json(
            self.tool,
            arguments=self.arguments,
            digest=self.digest,
            call_id=self.call_id,
            action=self.action,
            result=self.result,
            exit_code=self.exit_code,
            start_time=self.start_time,
            end_time=self.end_time,
            is_error=self.is_error,
            metadata=self.metadata,
            facts=self.facts,
        )

    @classmethod
    def from_json(cls, d: Any) -> EventRecord:
        if not isinstance(d, Mapping):
            raise RecordError(f"'event' is {type(d).__name__}; expected an object")
        args = d.get("arguments")
        if args is not None and not isinstance(args, (str, Mapping)):
            raise RecordError(f"'event.arguments' is {type(args).__name__}; expected an object or a string")
        exit_code = _opt(d, "exit_code", int, "an integer")
        return cls(
            tool=_req(d, "tool", str, "the tool name (string)"),
            arguments=dict(args) if isinstance(args, Mapping) else args,  # (None: not recorded)
            call_id=_opt(d, "call_id", str, "a string"),
            action=_opt(d, "action", str, "a string"),
            result=_opt(d, "result", str, "a string"),
            is_error=bool(_opt(d, "is_error", bool, "true/false", False)),
            exit_code=exit_code,
            start_time=_num(d.get("start_time")),
            end_time=_num(d.get("end_time")),
            metadata=dict(_opt(d, "metadata", Mapping, "an object", {})),
            digest=_opt(d, "digest", str, "a string"),
            facts=dict(facts) if (facts := _opt(d, "facts", Mapping, "an object")) is not None else None,
        )


@dataclass(slots=True)
class FindingRecord:
    detector: str
    first_step: int
    last_step: int
    evidence: str = ""
    data: dict[str, Any] = field(default_factory=dict)
    at_end: bool = False

    def to_finding(self) -> Any:
        return Finding(
            self.detector, self.first_step, self.last_step, self.evidence, dict(self.data), self.at_end
        )

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "detector": self.detector,
            "first_step": self.first_step,
            "last_step": self.last_step,
            "evidence": self.evidence,
        }
        if self.data:
            d["data"] = self.data
        if self.at_end:
            d["at_end"] = True
        return d

    @classmethod
    def from_json(cls, d: Any) -> FindingRecord:
        if not isinstance(d, Mapping):
            raise RecordError(f"finding is {type(d).__name__}; expected an object")
        return cls(
            detector=_req(d, "detector", str, "the detector name (string)"),
            first_step=_req(d, "first_step", int, "a step index (integer)"),
            last_step=_req(d, "last_step", int, "a step index (integer)"),
            evidence=_opt(d, "evidence", str, "a string", ""),
            data=dict(_opt(d, "data", Mapping, "an object", {})),
            at_end=bool(_opt(d, "at_end", bool, "true/false", False)),
        )


@dataclass(slots=True)
class DecisionRecord:
    kind: str
    message: str = ""
    policy: str = ""
    finding: str | None = None  # detector of the finding that triggered it
    ephemeral: bool = True

    def to_decision(self) -> Any:
        return Decision(DecisionKind(self.kind), self.message, self.policy, None, self.ephemeral)

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"kind": self.kind, "policy": self.policy, "message": self.message}
        if self.finding is not None:
            d["finding"] = self.finding
        if not self.ephemeral:
            d["ephemeral"] = False
        return d

    @classmethod
    def from_json(cls, d: Any) -> DecisionRecord:
        if not isinstance(d, Mapping):
            raise RecordError(f"decision is {type(d).__name__}; expected an object")
        return cls(
            kind=_req(d, "kind", str, "a decision kind (allow/deny/remind/nudge/stop/notify/log)"),
            message=_opt(d, "message", str, "a string", ""),
            policy=_opt(d, "policy", str, "a string", ""),
            finding=_opt(d, "finding", str, "a detector name"),
            ephemeral=bool(_opt(d, "ephemeral", bool, "true/false", True)),
        )


@dataclass(slots=True)
class StepRecord:
    """One accepted tool call: the event, the phase classification, and what the pipeline made of it."""

    index: int
    event: EventRecord
    roles: list[str] = field(default_factory=list)
    letters: str = ""
    commands: list[tuple[str, str]] = field(default_factory=list)  # (label, role) per sub-command
    action: dict[str, Any] | None = None  # canonical action: {"type": ..., "intent": ..., ...}
    findings: list[FindingRecord] = field(default_factory=list)
    decisions: list[DecisionRecord] = field(default_factory=list)
    scores: dict[str, float] | None = None  # compliance so far against the followed plan
    n_model_calls: int = 0

    def to_json(self) -> dict[str, Any]:
        return step_json(
            self.index,
            self.event.to_json(),
            roles=self.roles,
            letters=self.letters,
            commands=[list(c) for c in self.commands],
            action=self.action,
            findings=[f.to_json() for f in self.findings],
            decisions=[x.to_json() for x in self.decisions],
            scores=self.scores,
            n_model_calls=self.n_model_calls,
        )

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> StepRecord:
        roles = _opt(d, "roles", list, "a list of role names", [])
        pairs = _pairs(_opt(d, "commands", list, "a list of [label, role] pairs", []))
        scores = _opt(d, "scores", Mapping, "an object of PPC/POC/PPF/PC")
        return cls(
            index=_req(d, "index", int, "the step index (integer)"),
            event=EventRecord.from_json(d.get("event")),
            roles=[str(r) for r in roles],
            letters=_opt(d, "letters", str, "a string", ""),
            commands=pairs,
            action=dict(a) if (a := _opt(d, "action", Mapping, "an object")) is not None else None,
            findings=[FindingRecord.from_json(f) for f in _opt(d, "findings", list, "a list", [])],
            decisions=[DecisionRecord.from_json(x) for x in _opt(d, "decisions", list, "a list", [])],
            scores={str(k): float(v) for k, v in scores.items()} if scores is not None else None,
            n_model_calls=_opt(d, "n_model_calls", int, "an integer", 0),
        )


@dataclass(slots=True)
class BlockedRecord:
    """A call a policy denied or stopped before it ran (not a step: replay must not run it either)."""

    event: EventRecord
    decisions: list[DecisionRecord] = field(default_factory=list)
    at_step: int = 0  # the index the call would have had
    n_model_calls: int | None = None  # model calls made when it was denied (None in files before 0.2)

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "type": "blocked",
            "at_step": self.at_step,
            "event": self.event.to_json(),
            "decisions": [x.to_json() for x in self.decisions],
        }
        if self.n_model_calls is not None:
            d["n_model_calls"] = self.n_model_calls
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> BlockedRecord:
        return cls(
            event=EventRecord.from_json(d.get("event")),
            decisions=[DecisionRecord.from_json(x) for x in _opt(d, "decisions", list, "a list", [])],
            at_step=_opt(d, "at_step", int, "an integer", 0),
            n_model_calls=_opt(d, "n_model_calls", int, "an integer", None),
        )


@dataclass(slots=True)
class MessageRecord:
    """A conversation turn the plan matched: the phase it showed (always kept; the match is no content) and
    its text only when the store keeps content. Not a step; replay observes it where it was recorded."""

    role: str
    commands: list[tuple[str, str]] = field(default_factory=list)  # (label, role): the phase it showed
    at_step: int = 0  # the steps run before it
    n_model_calls: int = 0
    text: str | None = None  # None: not recorded (a store without content)
    time: float | None = None

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "type": "message",
            "role": self.role,
            "commands": [list(c) for c in self.commands],
            "at_step": self.at_step,
            "n_model_calls": self.n_model_calls,
        }
        if self.text is not None:
            d["text"] = self.text
        if self.time is not None:
            d["time"] = self.time
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> MessageRecord:
        pairs = _pairs(_opt(d, "commands", list, "a list of [label, role] pairs", []))
        return cls(
            role=_req(d, "role", str, "the turn's role (user or assistant)"),
            commands=pairs,
            at_step=_opt(d, "at_step", int, "an integer", 0),
            n_model_calls=_opt(d, "n_model_calls", int, "an integer", 0),
            text=_opt(d, "text", str, "a string"),
            time=_num(d.get("time")),
        )


def _pairs(commands: list[Any]) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    for c in commands:
        if not (isinstance(c, list) and len(c) == 2 and all(isinstance(x, str) for x in c)):
            raise RecordError(f"'commands' holds {c!r}; expected [label, role] string pairs")
        pairs.append((c[0], c[1]))
    return pairs


@dataclass(slots=True)
class SessionHeader:
    session_id: str
    started_at: float
    plan: str
    plans: list[str] = field(default_factory=list)
    rules: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    planguard_version: str = ""
    partial: bool = False  # the real header was dropped; this one was made up from a later record
    content: bool = True  # tool-call content was kept (version 1 files always kept it)
    # The primary plan's definition when it is not a preset (declared phases from a config): replay uses it.
    plan_spec: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "type": HEADER_TYPE,
            "v": SCHEMA_VERSION,
            "session_id": self.session_id,
            "started_at": self.started_at,
            "plan": self.plan,
            "plans": self.plans,
            "rules": self.rules,
            "metadata": self.metadata,
            "planguard_version": self.planguard_version,
            "content": self.content,
        }
        if self.partial:
            d["partial"] = True
        if self.plan_spec is not None:
            d["plan_spec"] = self.plan_spec
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> SessionHeader:
        v = d.get("v")
        if not isinstance(v, int) or v > SCHEMA_VERSION:
            raise RecordError(f"'v' is {v!r}; expected a schema version ≤ {SCHEMA_VERSION}")
        return cls(
            session_id=_req(d, "session_id", str, "the session id (string)"),
            started_at=_num(d.get("started_at")) or 0.0,
            plan=_opt(d, "plan", str, "a plan name", ""),
            plans=[str(p) for p in _opt(d, "plans", list, "a list of plan names", [])],
            rules=_opt(d, "rules", str, "a rules version"),
            metadata=dict(_opt(d, "metadata", Mapping, "an object", {})),
            planguard_version=_opt(d, "planguard_version", str, "a string", ""),
            partial=bool(_opt(d, "partial", bool, "true/false", False)),
            content=bool(_opt(d, "content", bool, "true/false", True)),
            plan_spec=_opt(d, "plan_spec", Mapping, "a plan definition (object)"),
        )


@dataclass(slots=True)
class SessionEnd:
    """The session's summary as :class:`~planguard.session.SessionSummary` reported it."""

    n_steps: int
    n_model_calls: int
    letters: str
    langutory: list[str]
    scores: dict[str, dict[str, float]]
    finding_counts: dict[str, int]
    decision_counts: dict[str, int]
    duration: float
    dropped: int = 0  # the session's records the writer's full queue dropped (the end record never is)

    def to_json(self) -> dict[str, Any]:
        d = {
            "type": "end",
            "n_steps": self.n_steps,
            "n_model_calls": self.n_model_calls,
            "letters": self.letters,
            "langutory": self.langutory,
            "scores": self.scores,
            "finding_counts": self.finding_counts,
            "decision_counts": self.decision_counts,
            "duration": self.duration,
        }
        if self.dropped:
            d["dropped"] = self.dropped
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> SessionEnd:
        scores = _opt(d, "scores", Mapping, "an object of plan -> scores", {})
        return cls(
            n_steps=_req(d, "n_steps", int, "an integer"),
            n_model_calls=_opt(d, "n_model_calls", int, "an integer", 0),
            letters=_opt(d, "letters", str, "a string", ""),
            langutory=[str(x) for x in _opt(d, "langutory", list, "a list", [])],
            scores={
                str(p): {str(k): float(v) for k, v in s.items()}
                for p, s in scores.items()
                if isinstance(s, Mapping)
            },
            finding_counts={
                str(k): int(v) for k, v in _opt(d, "finding_counts", Mapping, "an object", {}).items()
            },
            decision_counts={
                str(k): int(v) for k, v in _opt(d, "decision_counts", Mapping, "an object", {}).items()
            },
            duration=_num(d.get("duration")) or 0.0,
            dropped=_opt(d, "dropped", int, "an integer", 0),
        )
