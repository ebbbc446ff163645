"""``planguard hook claude-code``: the command Claude Code runs for every hook call.

Claude Code starts a new process per hook call and passes the payload on standard input; the answer (if
any) is one JSON object on standard output, and the exit code is always 0 — planguard never breaks the
agent: on any internal failure the call is let through (fail-open), the error is appended to
``<state dir>/hook-errors.log`` (bounded), and a gate configured fail-closed still denies its tool.

Per call: build the :class:`~planguard.guard.Guard` from the config (outside the session lock), lock the
session's state files, restore the session (snapshot, else journal replay, else new), run the adapter,
save, unlock, print the answer, then flush the sinks. Nothing here imports more than planguard itself.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from .adapter import ClaudeCodeAdapter, HookState
from .state import Op, SessionStore, StoredSession, restore_session, session_state, silent
from .translate import HOOK_EVENTS, session_key

if TYPE_CHECKING:
    from planguard.decisions import Decision
    from planguard.events import ToolEvent
    from planguard.guard import Guard
    from planguard.session import Session, SessionSummary

__all__ = ["HookRunner", "main", "read_summary", "run_hook"]

#: The error log in the state directory is cut back to its newest half past this size.
MAX_ERROR_LOG_BYTES = 256 * 1024


def main(
    config: str | None = None,
    state_dir: str | None = None,
    *,
    stdin: IO[str] | None = None,
    stdout: IO[str] | None = None,
) -> int:
    """Read one hook payload, answer it. Always returns 0 (see the module docstring)."""
    stdin = sys.stdin if stdin is None else stdin
    stdout = sys.stdout if stdout is None else stdout
    store = SessionStore(state_dir)
    try:
        payload = json.loads(stdin.read() or "null")
    except ValueError as exc:
        _log_error(store, f"standard input is not JSON ({exc}); expected one Claude Code hook payload object")
        return 0
    if not isinstance(payload, dict) or payload.get("hook_event_name") not in HOOK_EVENTS:
        return 0
    answer: dict[str, Any] = {}
    runner: HookRunner | None = None
    try:
        runner = HookRunner(config, store)
        answer = runner.handle(payload)
    except Exception:
        _log_error(store, traceback.format_exc())
    if answer:
        stdout.write(json.dumps(answer, ensure_ascii=False))
        stdout.write("\n")
    stdout.flush()
    if runner is not None:
        runner.close()
    return 0


def run_hook(
    payload: Mapping[str, Any], config: str | None = None, state_dir: str | None = None
) -> dict[str, Any]:
    """One hook call in-process (what :func:`main` does between reading and printing)."""
    runner = HookRunner(config, SessionStore(state_dir))
    try:
        return runner.handle(payload)
    finally:
        runner.close()


class _Recorder:
    """The guard as the adapter sees it, journalling what the session is fed."""

    def __init__(self, guard: Guard, stored: StoredSession) -> None:
        self.guard = guard
        self.stored = stored

    def before_tool(self, session_id: str, event: ToolEvent) -> Decision:
        self.stored.record(Op("pre", event))
        return self.guard.before_tool(session_id, event)

    def after_tool(self, session_id: str, event: ToolEvent) -> Any:
        self.stored.record(Op("post", event))
        return self.guard.after_tool(session_id, event)

    def before_model(self, session_id: str) -> list[Decision]:
        self.stored.record(Op("model"))
        return self.guard.before_model(session_id)

    def end(self, session_id: str) -> SessionSummary | None:
        self.stored.record(Op("end"))
        return self.guard.end(session_id)


class HookRunner:
    """A Guard plus the on-disk session store, for hook calls that each run in a fresh process."""

    def __init__(self, config: str | None, store: SessionStore) -> None:
        from planguard.guard import Guard

        self.store = store
        self.guard = Guard.from_file(config) if config else Guard()
        self.fingerprint = pipeline_fingerprint(self.guard)

    def handle(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        key = session_key(payload)
        with self.store.open(key) as stored:
            new = not stored.exists
            session, hook_state, complete = self._load(stored, key, payload)
            answer = ClaudeCodeAdapter(_Recorder(self.guard, stored)).handle(payload, hook_state)
            try:
                stored.save(self.fingerprint, session_state(session), hook_state.to_dict(), complete)
            except Exception:
                _log_error(self.store, f"session {key}: snapshot not written\n{traceback.format_exc()}")
            if stored.problems:
                _log_error(self.store, f"session {key}: " + "; ".join(stored.problems))
        if new:
            self.store.prune(keep=[key])
        return answer

    def _load(
        self, stored: StoredSession, key: str, payload: Mapping[str, Any]
    ) -> tuple[Session, HookState, bool]:
        """The session as it stood after the previous hook call, adopted by the guard."""
        from planguard.session import Session

        snap = stored.snapshot(self.fingerprint)
        if snap is not None:
            try:
                session = restore_session(Session, self.guard.pipeline, snap.state)
                session.ended = False  # a resumed conversation (claude --resume) goes on being monitored
                adopt(self.guard, session)
                return session, HookState.from_dict(snap.hook), snap.log_complete
            except Exception as exc:
                stored.problems.append(f"snapshot not restorable ({type(exc).__name__}: {exc})")
        ops, complete = stored.journal()
        if not ops:
            if stored.exists:
                stored.problems.append("no usable journal either: starting the session afresh")
            session = self.guard.session(key, **_metadata(payload))
            return session, HookState(), not stored.exists or complete
        # Rebuild: replay the journal with the sinks silenced (they saw all of it already).
        session = silent(self.guard.pipeline).session(key, **_metadata(payload))
        state = HookState()
        adapter_now = time.time()
        for op in ops:
            _apply(session, op, state, adapter_now)
        session.pipeline = self.guard.pipeline
        session.ended = False
        session.metadata["planguard.rebuilt"] = "journal" if complete else "partial-journal"
        adopt(self.guard, session)
        return session, state, complete

    def close(self) -> None:
        # Sessions stay open across processes: flush the sinks, end nothing.
        self.guard.shutdown(end_sessions=False)


def _apply(session: Session, op: Op, state: HookState, now: float) -> None:
    """Replay one journal entry (the same calls the adapter made, minus the answer)."""
    if op.kind == "pre" and op.event is not None:
        if not session.before_tool(op.event).blocks:
            state.start(op.event.call_id, now)
    elif op.kind == "post" and op.event is not None:
        session.after_tool(op.event)
        state.finish(op.event.call_id, now)
    elif op.kind == "model":
        session.before_model()
    elif op.kind == "end":
        session.end()
        state.running.clear()


def _metadata(payload: Mapping[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = {"source": "claude-code"}
    for k in ("session_id", "cwd", "transcript_path", "agent_id", "agent_type"):
        v = payload.get(k)
        if isinstance(v, str) and v:
            meta[f"claude_code.{k}"] = v
    return meta


def adopt(guard: Guard, session: Session) -> None:
    """Register a restored session with the guard, so its hooks use it instead of creating a new one."""
    hook = getattr(guard, "adopt", None)
    if callable(hook):
        hook(session)
        return
    from planguard.guard import _Entry

    with guard._lock:
        guard._sessions[session.id] = _Entry(session, time.monotonic())


def pipeline_fingerprint(guard: Guard) -> str:
    """What a snapshot must have been made under to be reused: the planguard version, the config and the
    pipeline's shape (stage states are positional)."""
    import planguard

    p = guard.pipeline
    shape = [
        planguard.__version__,
        guard.config.model_dump_json(),
        [type(x).__qualname__ + ":" + str(getattr(x, "name", "")) for x in p.policies],
        [type(x).__qualname__ + ":" + str(getattr(x, "name", "")) for x in p.detectors],
        [pl.name for pl in p.plans],
        type(p.rules).__qualname__,
    ]
    return hashlib.sha256(json.dumps(shape, default=str).encode()).hexdigest()[:32]


def read_summary(
    session_id: str, config: str | None = None, state_dir: str | None = None
) -> dict[str, Any] | None:
    """What planguard has recorded so far for a Claude Code session (phases, metrics, findings, decisions),
    from its state files; None when there is no such session."""
    runner = HookRunner(config, SessionStore(state_dir))
    try:
        with runner.store.open(session_id) as stored:
            if not stored.exists:
                return None
            session, _, complete = runner._load(stored, session_id, {})
            out = summary_dict(session.summary())
            out["journal_complete"] = complete
            if stored.problems:
                out["problems"] = list(stored.problems)
                _log_error(runner.store, f"session {session_id}: " + "; ".join(stored.problems))
            return out
    finally:
        runner.guard.shutdown(end_sessions=False)


def summary_dict(summary: SessionSummary) -> dict[str, Any]:
    return {
        "session_id": summary.session_id,
        "n_steps": summary.n_steps,
        "n_model_calls": summary.n_model_calls,
        "letters": summary.letters,
        "langutory": list(summary.langutory),
        "metrics": {name: _scores(sc) for name, sc in summary.scores.items()},
        "finding_counts": dict(summary.finding_counts),
        "decision_counts": dict(summary.decision_counts),
    }


def _scores(sc: Any) -> Any:
    as_dict = getattr(sc, "as_dict", None)
    return as_dict() if callable(as_dict) else str(sc)


def _log_error(store: SessionStore, text: str) -> None:
    """Append to the bounded error log; never raises (there is nowhere left to report to)."""
    try:
        store.ensure_directory()
        path = Path(store.directory) / "hook-errors.log"
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
        line = f"{stamp} pid={os.getpid()} {text.rstrip()}\n"
        if path.exists() and path.stat().st_size > MAX_ERROR_LOG_BYTES:
            data = path.read_bytes()
            path.write_bytes(data[len(data) // 2 :])
        with open(path, "a", encoding="utf-8") as f:
            f.write(line)
    except Exception:
        pass


def cli(argv: list[str] | None = None) -> int:
    """``planguard-claude-code-hook [--config FILE] [--state-dir DIR]``: the hook without the ``planguard``
    command's subcommand discovery (the same as ``planguard hook claude-code``)."""
    import argparse

    parser = argparse.ArgumentParser(prog="planguard-claude-code-hook", description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    return main(args.config, args.state_dir)


def add_arguments(parser: Any) -> None:
    parser.add_argument(
        "--config", metavar="FILE", help="planguard config (default: $PLANGUARD_CONFIG, else defaults)"
    )
    parser.add_argument(
        "--state-dir",
        metavar="DIR",
        help="session state directory (default: $PLANGUARD_STATE_DIR, else "
        "$XDG_STATE_HOME/planguard/claude-code)",
    )
