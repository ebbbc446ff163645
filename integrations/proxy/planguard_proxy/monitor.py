"""The bridge between model-API traffic and a planguard ``Guard``: conversations, their log, catching up.

A conversation (one agent run, one planguard session) is driven by three operations, each written to the
conversation's log in the store as it is applied to the local session; the log is a
:mod:`planguard.journal` (the hook service keeps the same one), with the proxy's own keys beside the event:

* ``model``   — a request goes upstream: ``guard.before_model`` (its reminders/nudges are injected);
* ``pre``     — the response asks for a tool call: ``guard.before_tool`` (the gate decides);
* ``post``    — a later request carries the call's result: ``guard.after_tool``;
* ``message`` — a conversation turn, when the plan matches turns (``guard.observes_messages``): the user's
  messages a request carries since the model last spoke, and the assistant's text of an answer
  (``guard.observe_message``). The log keeps the turn's match, never its text.

Replicas: a proxy process that receives a request for a conversation first replays the log entries it has
not applied yet (written by other replicas) into its own session (``journal.apply``), with the sinks muted
so telemetry and the local store record each operation exactly once, by the replica that saw it live.
Replaying the same operations in the same order gives the same phases, metrics, detector and policy state
as one proxy (the gate decision of a replayed call is taken from the log, not decided again). Only new
operations are then fed live. The log lives in the store, so the cost of catching up is the number of
missed entries.

Why a log rather than re-reading the request's message history: agents truncate and summarise their
history (context management), and the history does not show model calls that produced no message; the
log is exact either way.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import logging
import time
from collections import OrderedDict
from collections.abc import Coroutine, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from planguard import journal
from planguard.decisions import Decision
from planguard.events import ASSISTANT, USER
from planguard.phases.declarative import recorded_turn
from planguard.sinks import Sink
from planguard.sinks.capture import ContentPolicy
from planguard.sinks.redact import redact_text, redact_value

from . import _json
from ._json import JSONPolicy
from .config import ProxyConfig
from .store import SKIP_OP, ConversationStore
from .text_actions import TextActions
from .wire.base import ToolCall, Wire, text_of

if TYPE_CHECKING:
    from planguard.findings import Finding
    from planguard.guard import Guard
    from planguard.session import Session, SessionSummary
    from planguard.step import Step

__all__ = ["DENIAL_PREFIX", "Conversation", "Monitor", "MutableSink", "OpenCall", "muted", "session_key"]

logger = logging.getLogger("planguard.proxy")

#: Text a denied call is replaced with (rewrite) or its result prefixed with (annotate).
DENIAL_PREFIX = "[planguard] tool call not run:"
#: Result text kept per log entry (replicas replay from it); longer results are cut.
MAX_LOGGED_RESULT = 64 * 1024
#: Conversations a replica tracks at most; never more than the guard keeps sessions, since a conversation past
#: that holds only a session the guard has ended (and rebuilds it from the log on its next request anyway).
MAX_CONVERSATIONS = 100_000

T = TypeVar("T")

#: Denied exchanges the proxy answered itself that a conversation shows the model again, at most.
MAX_REFUSALS = 16

#: Seconds the store is left alone after a failed call.
STORE_RETRY_S = 5.0


class StoreUnavailable(RuntimeError):
    """The store failed within the last ``STORE_RETRY_S``: not asked again yet."""


_MUTED: ContextVar[bool] = ContextVar("planguard_proxy_muted", default=False)


@contextlib.contextmanager
def muted(on: bool = True) -> Iterator[None]:
    """Within this block, sinks wrapped in ``MutableSink`` record nothing (replaying other replicas' work)."""
    token = _MUTED.set(on)
    try:
        yield
    finally:
        _MUTED.reset(token)


class MutableSink(Sink):
    """Forwards to a sink unless the current context is ``muted``."""

    def __init__(self, inner: Sink) -> None:
        self.inner = inner

    @property
    def stats(self) -> Any:
        return getattr(self.inner, "stats", None)

    def new_state(self, session: Session) -> Any:
        # Always the inner sink's state, muted or not: the session's later, unmuted hooks need it.
        return self.inner.new_state(session)

    def on_session_start(self, session: Session, state: Any) -> None:
        if not _MUTED.get():
            self.inner.on_session_start(session, state)

    def on_tool_start(self, session: Session, step: Step, state: Any) -> None:
        if not _MUTED.get():
            self.inner.on_tool_start(session, step, state)

    def on_tool_end(self, session: Session, step: Step, state: Any) -> None:
        if not _MUTED.get():
            self.inner.on_tool_end(session, step, state)

    def on_finding(self, session: Session, step: Step | None, finding: Finding, state: Any) -> None:
        if not _MUTED.get():
            self.inner.on_finding(session, step, finding, state)

    def on_decision(self, session: Session, step: Step | None, decision: Decision, state: Any) -> None:
        if not _MUTED.get():
            self.inner.on_decision(session, step, decision, state)

    def on_session_end(self, session: Session, summary: SessionSummary, state: Any) -> None:
        if not _MUTED.get():
            self.inner.on_session_end(session, summary, state)

    def shutdown(self) -> None:
        self.inner.shutdown()


def session_key(wire: Wire, body: Mapping[str, Any]) -> str | None:
    """The stable key of a conversation without a session header: a hash of its system prompt and first
    user message (``conv-`` + 32 hex digits). Two runs with the same prompt and task share it: send
    ``X-Planguard-Session`` to tell them apart."""
    system, user = wire.session_material(body)
    if not system and not user:
        return None
    digest = hashlib.sha256(_json.dumps([system or "", user or ""])).hexdigest()
    return "conv-" + digest[:32]


@dataclass(slots=True)
class OpenCall:
    """A tool call the model asked for whose result has not arrived yet."""

    event: dict[str, Any]  # the ToolEvent fields (as logged)
    text_index: int | None = None  # text action: position of the assistant message in the next request
    denial: str | None = None  # annotate/observe: the gate said no (the agent got the call anyway)


@dataclass(slots=True)
class Refusal:
    """Calls the proxy answered itself with their denials before asking the model again: the exchange the
    model saw, shown again (before the agent's history message ``at``) on every later turn, since the agent's
    own history never had it."""

    at: int
    text: str
    calls: list[ToolCall]
    results: dict[str, str]


@dataclass(slots=True)
class Conversation:
    id: str
    session: Session | None = None
    applied: int = 0  # log entries applied to the local session
    open: OrderedDict[str, OpenCall] = field(default_factory=OrderedDict)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    last_seen: float = field(default_factory=time.monotonic)
    writing: asyncio.Task[None] | None = None  # the request's log write, overlapping the upstream call
    refusals: list[Refusal] = field(default_factory=list)
    # The user turns last observed (a digest): a request sent again with the same history adds none.
    turns_key: str | None = None
    # A stand-in for a conversation whose request planguard failed to observe: the answer's calls get the
    # guard's failure decision (a fail-closed gate denies its tool) and nothing is logged or recorded.
    failed: bool = False


@dataclass(slots=True)
class RequestPlan:
    """What the request phase decided: the body to send and the response handling."""

    conversation: Conversation
    body_changed: bool
    injected: list[str]
    n_messages: int
    body: dict[str, Any] | None = None  # the request as sent upstream (parsed), to ask the model again
    standard: bool = True  # the request was standard JSON (else it is written back as the stdlib reads it)


class Monitor:
    """Per-replica conversation state and the guard calls; every public method is fail-open."""

    def __init__(
        self, guard: Guard, store: ConversationStore, config: ProxyConfig, idle_end_s: float | None = None
    ) -> None:
        self.guard = guard
        self.store = store
        self.config = config
        self.idle_end_s = idle_end_s
        self.text = (
            TextActions(
                config.text_actions.action_regex,
                config.text_actions.returncode_regex,
                config.text_actions.exactly_one,
            )
            if config.text_actions.enabled
            else None
        )
        self._rc = TextActions(returncode_regex=config.text_actions.returncode_regex)
        self._shell = frozenset(config.shell_tools)
        self._remote_store = bool(getattr(store, "remote", True))
        # What the log in a shared store (Redis: it leaves the process) keeps of a call: its arguments and
        # command redacted (replicas classify the call from them), its result only with content capture on.
        self._log_content = ContentPolicy.resolve(None, max_chars=MAX_LOGGED_RESULT)
        self._store_timeout = config.store.timeout_s
        self._store_down_until = 0.0
        self.conversations: OrderedDict[str, Conversation] = OrderedDict()
        # Responses API: response id → conversation, so a request chained by ``previous_response_id`` (its
        # history left upstream) joins the conversation of the response it continues. Kept in the store (where
        # the conversation is: any replica, and after a restart, finds it); this is a bounded (LRU) cache.
        self._responses: OrderedDict[str, str] = OrderedDict()
        self._max_conversations = min(MAX_CONVERSATIONS, guard.config.sessions.max_sessions)
        self.counters: dict[str, int] = {
            "requests": 0,
            "calls": 0,
            "results": 0,
            "denied": 0,
            "injected": 0,
            "replayed": 0,
            "fail_open": 0,
            "store_races": 0,
            "ended": 0,
            "asked_again": 0,
            "unobserved_answers": 0,
            "denied_again": 0,
        }
        # Non-standard JSON met in this replica's traffic (the policy every body, event and argument follows).
        self.json = JSONPolicy(config.nonstandard_json)
        # Sinks record only what this replica sees live; replays run muted.
        pipeline = guard.pipeline
        if not all(isinstance(s, MutableSink) for s in pipeline.sinks):
            guard.pipeline = dataclasses.replace(
                pipeline,
                sinks=tuple(s if isinstance(s, MutableSink) else MutableSink(s) for s in pipeline.sinks),
            )

    # ------------------------------------------------------------------ request phase

    async def on_request(
        self, wire: Wire, body: dict[str, Any], session_id: str, work_dir: str | None = None
    ) -> RequestPlan:
        """Catch up, record results found in the request, count the model call, inject messages.
        ``work_dir``: the session's repository, when its request names one (else the configured one)."""
        self.counters["requests"] += 1
        n_messages = len(wire.messages(body))  # before injection: the agent's own history
        conv = self._conversation(session_id)
        await conv.lock.acquire()
        try:
            await self._catch_up(conv, wire, body, work_dir)
            entries: list[dict[str, Any]] = []
            notes = self._results(conv, wire, body, entries)
            if self.guard.observes_messages and self.text is None:
                # (With text actions the user's messages are the actions' observations, not turns.)
                self._user_turns(conv, wire, body, entries)
            entry: dict[str, Any] = {"op": "model"}
            decisions = self._apply(conv, entry, live=True) or []
            entries.append(entry)
        except BaseException:
            conv.lock.release()
            raise
        if self._remote_store:
            # A round trip to a shared store need not delay the request: the write overlaps the upstream
            # call. The lock is held until it is done, so the conversation's next request catches up only
            # after it, and this response's own entries (``on_response_end``) are logged after it.
            conv.writing = asyncio.ensure_future(self._append_and_unlock(conv, entries, conv.applied))
        else:
            try:
                await self._append(conv, entries, conv.applied)
            finally:
                conv.lock.release()
        changed = self._show_refusals(conv, wire, body, n_messages)
        if notes and self.config.gate != "observe":
            # annotate mode, or a denied call rewrite could not reach (a streamed text action).
            changed = self._annotate(wire, body, notes)
        texts = [d.message for d in decisions if d.injects and d.message]
        if texts:
            wire.inject(body, "\n\n".join(texts))
            self.counters["injected"] += len(texts)
            changed = True
        return RequestPlan(conv, changed, texts, n_messages, body)

    @staticmethod
    def _show_refusals(conv: Conversation, wire: Wire, body: dict[str, Any], n_messages: int) -> bool:
        """Put the conversation's earlier refusals back where the model saw them (the history reaches past
        them: the agent kept the answer that followed)."""
        if not conv.refusals or body.get("previous_response_id"):
            return False
        shift = 0
        for r in conv.refusals:
            if r.at >= n_messages:
                break
            before = len(wire.messages(body))
            wire.answer_calls(body, r.text, r.calls, r.results, at=r.at + shift)
            shift += len(wire.messages(body)) - before
        return shift > 0

    def failed_plan(self, wire: Wire, body: Mapping[str, Any]) -> RequestPlan:
        """The plan of a request whose observation failed, when gates fail closed: its answer is still
        read, and each call in it gets :meth:`Guard.failure_decision` (no retries, nothing logged)."""
        try:
            n_messages = len(wire.messages(body))
        except Exception:
            n_messages = 0
        return RequestPlan(Conversation("", failed=True), False, [], n_messages)

    def failure_decision(self, calls: list[ToolCall] | None) -> Decision | None:
        """The denial of a fail-closed gate for an answer whose observation failed part-way: the first of
        ``calls`` such a gate covers (``None``: the calls are unknown, so any fail-closed gate denies).
        None when nothing is denied: the answer is forwarded as it is (fail-open)."""
        if not self.guard.fails_closed:
            return None
        for call in [None] if calls is None else calls:
            try:
                ev = None if call is None else self._event_fields(call)
            except Exception:  # cannot tell what the call is: any fail-closed gate covers it
                ev = None
            decision = self._failure_decision(ev)
            if decision.blocks:
                self.counters["denied"] += 1
                return decision
        return None

    async def remember_response(self, response_id: str, session_id: str) -> None:
        """Record the response's conversation, in the store (before the client has the response: its
        follow-up may go to another replica at once)."""
        if not session_id:  # a failed request's stand-in conversation
            return
        self._responses[response_id] = session_id
        self._responses.move_to_end(response_id)
        while len(self._responses) > self._max_conversations:
            self._responses.popitem(last=False)
        try:
            await self._store(self.store.remember_response(response_id, session_id))
        except Exception as exc:
            self._failed("proxy.store.response", exc)

    async def conversation_of_response(self, response_id: str) -> str | None:
        sid = self._responses.get(response_id)
        if sid is not None:
            return sid
        try:
            return await self._store(self.store.conversation_of_response(response_id))
        except Exception as exc:
            self._failed("proxy.store.response", exc)
            return None

    def _conversation(self, session_id: str) -> Conversation:
        conv = self.conversations.get(session_id)
        if conv is None:
            conv = self.conversations[session_id] = Conversation(session_id)
            while len(self.conversations) > self._max_conversations:
                self.conversations.popitem(last=False)
        else:
            self.conversations.move_to_end(session_id)
        conv.last_seen = time.monotonic()
        return conv

    async def summary(self, session_id: str) -> dict[str, Any] | None:
        """The session's phases and metrics as this replica sees them after catching up (no content)."""
        conv = self.conversations.get(session_id)
        if conv is None:
            if not await self.store.read(session_id, 0):
                return None
            conv = self._conversation(session_id)
        async with conv.lock:
            await self._catch_up(conv, None, {})
            assert conv.session is not None
            s = conv.session.summary()
        return {
            "session_id": s.session_id,
            "n_steps": s.n_steps,
            "n_model_calls": s.n_model_calls,
            "letters": s.letters,
            "langutory": s.langutory,
            "scores": {name: sc.as_dict() for name, sc in s.scores.items()},
            "finding_counts": s.finding_counts,
            "decision_counts": s.decision_counts,
            "open_calls": len(conv.open),
            "log_position": conv.applied,
        }

    async def _catch_up(
        self, conv: Conversation, wire: Wire | None, body: Mapping[str, Any], work_dir: str | None = None
    ) -> None:
        sid = conv.id
        if conv.session is not None and (conv.session.ended or sid not in self.guard):
            # The guard ended this session on its own (capacity): rebuild it from the whole log.
            conv.session, conv.applied, conv.open = None, 0, OrderedDict()
        try:
            missed = await self._store(self.store.read(sid, conv.applied))
        except Exception as exc:
            # The store is down or slow: go on with what this replica has. The gates are consulted all the
            # same (a gate decision must not depend on the store); only other replicas' entries are missed.
            self._failed("proxy.store.read", exc)
            missed = []
        if conv.session is None:
            meta = {"planguard.source": "proxy"}
            if wire is not None:
                meta["gen_ai.system"] = wire.name
            model = body.get("model")
            if isinstance(model, str):
                meta["gen_ai.request.model"] = model
            cwd = work_dir or self.config.work_dir
            if cwd:
                meta["cwd"] = cwd  # the repository the live phase rules judge paths against
            with muted(bool(missed)):  # joining a conversation another replica started
                conv.session = self.guard.session(sid, **meta)
        if missed:
            with muted():
                for e in missed:
                    self._apply(conv, e, live=False)
            self.counters["replayed"] += len(missed)

    def _results(
        self, conv: Conversation, wire: Wire, body: Mapping[str, Any], entries: list[dict[str, Any]]
    ) -> dict[str, tuple[int | None, str]]:
        """Log and apply the results the request carries for open calls; the notes for denied ones
        (call id → (text-action message index or None, note))."""
        if not conv.open:
            return {}
        found: dict[str, tuple[str, bool]] = {}
        tool_ids = [cid for cid, oc in conv.open.items() if oc.text_index is None]
        for r in wire.tool_results(body, tool_ids):
            found.setdefault(r.call_id, (r.text, r.is_error))
        msgs = wire.messages(body)
        for cid, oc in conv.open.items():
            i = oc.text_index
            if i is None or len(msgs) <= i + 1:
                continue
            a, u = msgs[i], msgs[i + 1]
            if (
                isinstance(a, Mapping)
                and a.get("role") == "assistant"
                and isinstance(u, Mapping)
                and (u.get("role") == "user")
            ):
                found[cid] = (text_of(u.get("content")), False)
        notes: dict[str, tuple[int | None, str]] = {}
        now = time.time()
        for cid in [c for c in conv.open if c in found]:
            text, is_error = found[cid]
            oc = conv.open[cid]
            if oc.denial is not None:
                notes[cid] = (oc.text_index, f"{DENIAL_PREFIX} {oc.denial}")
            ev = {
                **oc.event,
                "result": text[:MAX_LOGGED_RESULT],
                "is_error": is_error,
                "exit_code": self._rc.exit_code(text),
                "end_time": now,
            }
            entry = {"op": "post", "event": ev}
            self._apply(conv, entry, live=True)
            entries.append(entry)
            self.counters["results"] += 1
        return notes

    def _user_turns(
        self, conv: Conversation, wire: Wire, body: Mapping[str, Any], entries: list[dict[str, Any]]
    ) -> None:
        """Observe and log the user's messages the request carries since the model last spoke, once: the
        same history sent again (a client's retry) adds none."""
        turns = wire.user_turns(body)
        if not turns:
            return
        prev = body.get("previous_response_id")
        key = hashlib.sha256(_json.dumps([prev, len(wire.messages(body)), turns])).hexdigest()[:32]
        if key == conv.turns_key:
            return
        for text in turns:
            entry: dict[str, Any] = {"op": "message", "message": {"role": USER}, "key": key}
            self._apply(conv, entry, live=True, text=text)
            entries.append(entry)

    def said(self, conv: Conversation, text: str, pending: list[dict[str, Any]], start: int = 0) -> int:
        """The assistant's text of an answer, from ``start`` on, as a turn (when the plan matches turns);
        logged with the answer's calls. Returns where the text observed ends."""
        if conv.failed or not self.guard.observes_messages or not text[start:].strip():
            return max(start, len(text))
        try:
            entry: dict[str, Any] = {"op": "message", "message": {"role": ASSISTANT}}
            self._apply(conv, entry, live=True, text=text[start:])
            pending.append(entry)
        except Exception as exc:
            self._failed("proxy.message", exc)
        return len(text)

    @staticmethod
    def _annotate(wire: Wire, body: dict[str, Any], notes: Mapping[str, tuple[int | None, str]]) -> bool:
        changed = wire.annotate_results(body, {cid: note for cid, (i, note) in notes.items() if i is None})
        msgs = wire.messages(body)
        for i, note in notes.values():
            if i is None or len(msgs) <= i + 1 or not isinstance(msgs[i + 1], dict):
                continue
            m = msgs[i + 1]  # the text action's observation (a user message)
            c = m.get("content")
            m["content"] = (
                [{"type": "text", "text": note}, *c] if isinstance(c, list) else f"{note}\n{c or ''}"
            )
            changed = True
        return changed

    # ------------------------------------------------------------------ response phase

    def decide(
        self,
        conv: Conversation,
        call: ToolCall,
        pending: list[dict[str, Any]],
        *,
        text_index: int | None = None,
        can_rewrite: bool = True,
        refused: dict[str, str] | None = None,
    ) -> str | None:
        """A tool call of the response: gate it, log it. Returns the denial text if it is to be rewritten.

        ``refused`` (the client request's denials so far, by call): a call the model repeats after the proxy
        asked it again gets its earlier denial — a re-ask never spends more than one of a gate's denials per
        client request, and is no new step.

        When planguard fails here (or failed on the request, ``conv.failed``), the call gets the guard's
        failure decision: a fail-closed gate covering it denies it, anything else goes through."""
        rewrite = can_rewrite and self.config.gate == "rewrite"
        key = f"{call.name}\0{call.raw_arguments if call.raw_arguments is not None else call.arguments!r}"
        if refused is not None and key in refused:
            self.counters["denied_again"] += 1
            return refused[key] if rewrite else None
        ev: dict[str, Any] | None = None
        try:
            ev = self._event_fields(call)
            if conv.failed:
                decision = self._failure_decision(ev)
            else:
                entry: dict[str, Any] = {"op": "pre", "event": ev, "denied": None, "text": text_index}
                decision = self._apply(conv, entry, live=True, rewrite=rewrite)
                pending.append(entry)
            self.counters["calls"] += 1
        except Exception as exc:
            self._failed("proxy.decide", exc)
            decision = self._failure_decision(ev)
        if decision is not None and decision.blocks:
            self.counters["denied"] += 1
            text = f"{DENIAL_PREFIX} {decision.message}" if decision.message else DENIAL_PREFIX
            if refused is not None:
                refused[key] = text
            if rewrite:
                return text
        return None

    def _failure_decision(self, ev: Mapping[str, Any] | None) -> Decision:
        """:meth:`Guard.failure_decision` for a call as logged (``None``: it could not be read)."""
        try:
            event = None if ev is None else journal.event_from(ev, source="proxy")
        except Exception:
            event = None
        return self.guard.failure_decision(event)

    def text_calls(self, text: str, n_messages: int) -> list[tuple[str, ToolCall]]:
        """Text actions of a response without tool calls: ``(block as written, call)``."""
        if self.text is None:
            return []
        return [
            (block, ToolCall(f"text:{n_messages}:{i}", "bash", {"command": cmd}))
            for i, (block, cmd) in enumerate(self.text.extract(text))
        ]

    async def on_response_end(self, conv: Conversation, pending: list[dict[str, Any]]) -> None:
        """Log the response's tool calls, and forget them from ``pending`` (called before the client has the
        end of the response, so that a replica its next request reaches knows them; again, for what is
        left, once the response is done with)."""
        writing = conv.writing
        if writing is not None and not writing.done():
            await asyncio.wait([writing])  # not ``await writing``: a cancelled caller must not cancel it
        entries = pending[:]
        pending.clear()
        await self._append(conv, entries, conv.applied)

    async def on_model_again(self, conv: Conversation, refusal: Refusal | None = None) -> None:
        """The proxy asks the model again itself (the calls it answered were denied): one more model call.
        ``refusal``: the exchange it answered, logged so that every replica shows it on later turns."""
        try:
            async with conv.lock:
                entries: list[dict[str, Any]] = []
                if refusal is not None:
                    entries.append(
                        {
                            "op": "refused",
                            "at": refusal.at,
                            "text": refusal.text,
                            "calls": [[c.id, c.name, c.arguments, c.raw_arguments] for c in refusal.calls],
                            "results": refusal.results,
                        }
                    )
                entries.append({"op": "model"})
                for entry in entries:
                    self._apply(conv, entry, live=True)
                await self._append(conv, entries, conv.applied)
            self.counters["asked_again"] += 1
        except Exception as exc:
            self._failed("proxy.model_again", exc)

    async def _append_and_unlock(self, conv: Conversation, entries: list[dict[str, Any]], end: int) -> None:
        try:
            await self._append(conv, entries, end)
        finally:
            conv.lock.release()

    # ------------------------------------------------------------------ the log

    def _apply(
        self,
        conv: Conversation,
        entry: Mapping[str, Any],
        *,
        live: bool,
        rewrite: bool = False,
        text: str = "",
    ) -> Any:
        """Apply one log entry to the local session: live (this replica saw it) through the guard, else a
        replay of another replica's entry, fed to the session as :func:`planguard.journal.apply` does.
        ``text``: a live turn's text (the entry keeps its match only)."""
        conv.applied += 1
        kind = entry.get("op")
        if kind == "refused":
            calls = [ToolCall(*c) for c in entry["calls"]]
            conv.refusals.append(Refusal(entry["at"], entry["text"], calls, dict(entry["results"])))
            del conv.refusals[:-MAX_REFUSALS]
            return None
        if kind == SKIP_OP:  # entries the store no longer keeps: the session is rebuilt from after them
            conv.applied += int(entry["n"]) - 1
            if conv.session is not None:
                conv.session.metadata["planguard.rebuilt"] = "partial-log"
            return None
        if kind in _OLD_OPS:
            entry = {**entry, "op": _OLD_OPS[kind], "event": entry.get("ev")}
        op = journal.Op.from_dict(entry, source="proxy")
        if op.kind == "message" and "key" in entry:
            conv.turns_key = entry["key"]
        result: Any = None
        if not live:
            try:
                result = None if conv.session is None else journal.apply(conv.session, op)
            except Exception as exc:
                self._failed("proxy.replay", exc)
        elif op.kind == "message" and op.message is not None:
            result = self.guard.observe_message(conv.id, op.message["role"], text)
            state = conv.session.phase_state if conv.session is not None else None
            entry["message"]["match"] = recorded_turn(result, state)
            return result
        elif op.kind == "model":
            result = self.guard.before_model(conv.id)
        elif op.kind == "pre" and op.event is not None:
            result = self.guard.before_tool(conv.id, op.event)
        elif op.kind == "post" and op.event is not None:
            result = self.guard.after_tool(conv.id, op.event)
        ev: dict[str, Any] = entry.get("event") or {}
        if op.kind == "pre":
            denied = entry.get("denied")
            if live:
                denied = result.message if result.blocks else None
                entry["denied"] = denied  # type: ignore[index]
                entry["rewritten"] = bool(denied is not None and rewrite)  # type: ignore[index]
            if not entry.get("rewritten"):  # a rewritten call never reaches the agent: no result will come
                cid = ev.get("call_id") or f"#{conv.applied}"
                conv.open[cid] = OpenCall(ev, entry.get("text"), denied)
                while len(conv.open) > 1024:
                    conv.open.popitem(last=False)
        elif op.kind == "post":
            conv.open.pop(ev.get("call_id") or "", None)
        return result

    async def _append(self, conv: Conversation, entries: list[dict[str, Any]], end: int) -> None:
        """Log entries already applied locally; ``end`` is the log position after them as applied here."""
        if not entries:
            return
        if self._remote_store:
            entries = [self._loggable(e) for e in entries]
        try:
            length = await self._store(self.store.append(conv.id, entries))
        except Exception as exc:
            self._failed("proxy.store.append", exc)
            return
        if length != end:
            # Another writer appended to this conversation concurrently (or the store lost it): follow the
            # store's count, so entries are never applied twice here (shifted by the difference: entries
            # applied here since are counted on top).
            self.counters["store_races"] += 1
            conv.applied += length - end

    def _loggable(self, entry: dict[str, Any]) -> dict[str, Any]:
        """A log entry as it may leave the process (see ``_log_content``): the one redaction pass."""
        if entry.get("op") == "refused":
            calls = [[i, name, redact_value(args), None] for i, name, args, _raw in entry["calls"]]
            return {**entry, "calls": calls}
        ev = entry.get("event")
        if not isinstance(ev, dict):
            return entry
        out = dict(ev)
        args = ev.get("arguments")
        out["arguments"] = redact_text(args) if isinstance(args, str) else redact_value(args)
        if isinstance(ev.get("action"), str):
            out["action"] = redact_text(ev["action"])
        if ev.get("result") is not None:
            out["result"] = self._log_content.text(str(ev["result"]))
        return {**entry, "event": out}

    def _event_fields(self, call: ToolCall) -> dict[str, Any]:
        args = call.arguments
        ev: dict[str, Any] = {
            "tool": call.name,
            "arguments": args,
            "call_id": call.id or None,
            "start_time": time.time(),
        }
        if (
            call.name in self._shell
            and isinstance(args, (dict, Mapping))
            and isinstance(args.get("command"), str)
        ):
            ev["action"] = args["command"]
        return ev

    # ------------------------------------------------------------------ lifecycle

    async def sweep(self, now: float | None = None) -> int:
        """End conversations idle for ``idle_end_s``: the replica that is up to date records the end (once,
        claimed in the store); a replica that is behind drops its copy silently."""
        if self.idle_end_s is None:
            return 0
        now = time.monotonic() if now is None else now
        idle = [c for c in self.conversations.values() if now - c.last_seen >= self.idle_end_s]
        for conv in idle:
            await self._end(conv)
        return len(idle)

    async def end_all(self) -> None:
        writes = [c.writing for c in self.conversations.values() if c.writing and not c.writing.done()]
        if writes:
            await asyncio.wait(writes)
        for conv in list(self.conversations.values()):
            await self._end(conv)

    async def _end(self, conv: Conversation) -> None:
        self.conversations.pop(conv.id, None)
        if conv.session is None:
            return
        try:
            behind = await self._store(self.store.read(conv.id, conv.applied))
            record = not behind and await self._store(self.store.claim_end(conv.id, conv.applied))
        except Exception as exc:  # cannot tell: record the end rather than lose it
            self._failed("proxy.end", exc)
            record = True
        if conv.id in self.conversations:
            return  # a request resumed the conversation meanwhile: its session goes on
        with muted(not record):
            self.guard.end(conv.id)
        self.counters["ended"] += int(record)
        if record:
            # Each turn's log entries hold its tool results (up to MAX_LOGGED_RESULT): a log kept until its
            # time to live would grow the process by that much per turn of every finished conversation.
            try:
                await self._store(self.store.forget(conv.id))
            except Exception as exc:
                self._failed("proxy.store.forget", exc)

    async def _store(self, call: Coroutine[Any, Any, T]) -> T:
        """One store call, bounded by ``store.timeout_s``. After a failure the store is left alone for
        ``STORE_RETRY_S`` (calls fail at once), so a hanging store costs one timeout per that interval, not
        one per call of every request."""
        if time.monotonic() < self._store_down_until:
            call.close()
            raise StoreUnavailable("store failed recently; retried after a pause")
        try:
            return await asyncio.wait_for(call, self._store_timeout)
        except Exception:
            self._store_down_until = time.monotonic() + STORE_RETRY_S
            raise

    def _failed(self, where: str, exc: BaseException) -> None:
        self.counters["fail_open"] += 1
        self.guard.errors.record(where, exc)

    def stats(self) -> dict[str, Any]:
        return {
            "conversations": len(self.conversations),
            **self.counters,
            "json_observed": self.json.counts["observed"],
            "json_refused": self.json.counts["refused"],
            "guard": self.guard.stats(),
        }


#: Op names the proxy logged before its log was a journal (read from a store that outlived that version).
_OLD_OPS = {"call": "pre", "result": "post"}
