"""A readable live timeline of sessions, one line per tool call (a development sink).

::

    ▶ s-1  plan=plan
      s-1 #0   bash                N   SEARCH       PC 0.50  N1
      s-1 #1   str_replace_editor  P   FILE_WRITE   PC 0.55  N1 P1  ⚑ patch_before_reproduce  → nudge
      s-1 #2   bash                ✗ blocked  → deny: run the tests first
    ■ s-1  3 steps  NP  PC 0.55  findings: patch_before_reproduce

Colour (phase letters, findings, decisions) when the stream is a terminal, using ``rich`` (imported only
then); ``NO_COLOR`` turns it off, ``FORCE_COLOR`` on. Lines are formatted and written by a background
worker, so a slow terminal or pipe never holds up the agent.

Private by default (README, "Privacy and failure"): a finding is shown by its detector, a decision answering
one by its kind and policy, unless ``content`` or the capture variable opts in; all redacted, on the worker.
"""

from __future__ import annotations

import os
import sys
from typing import IO, TYPE_CHECKING, Any

from ..actions.types import label_of
from ..decisions import DecisionKind
from . import Sink, forget_oldest_call
from .capture import ContentPolicy
from .drops import DropCounter
from .worker import BackgroundWorker

if TYPE_CHECKING:
    from ..decisions import Decision
    from ..findings import Finding
    from ..metrics import Scores
    from ..session import Session, SessionSummary
    from ..step import Step

__all__ = ["ConsoleSink", "format_step_line"]

_PHASE_STYLE = {"N": "blue", "R": "yellow", "r": "yellow", "P": "magenta", "V": "green", "v": "green"}
_BLOCK_KINDS = frozenset({"deny", "stop"})


def _pc(scores: Scores | None) -> str:
    return "PC  -- " if scores is None else f"PC {scores.PC:4.2f}"


def _call_head(session_id: str, index: int | None, tool: str) -> list[tuple[str, str]]:
    """``index``: the step's number; ``None`` for a refused call, which is no step (the next call that runs
    gets the number, so each number stands for one step)."""
    return [
        (f"  {session_id} ", "dim"),
        (f"#{index:<4}" if index is not None else f"{'-':<5}", "bold"),
        (f"{tool[:19]:<20}", ""),  # a space before the letters even after a long tool name
    ]


def format_step_line(
    session_id: str,
    index: int,
    tool: str,
    letters: str,
    action: str,
    scores: Scores | None,
    tail: str,
    findings: list[str],
    decisions: list[tuple[str, str]],
    failed: bool = False,
) -> list[tuple[str, str]]:
    """The line for one tool call as ``(text, style)`` segments (style ``""`` = plain)."""
    segs = _call_head(session_id, index, tool)
    segs.append((f"{letters or '·':<4}", _PHASE_STYLE.get(letters[:1], "dim")))
    segs.append((f"{action[:12]:<13}", "cyan" if action else "dim"))
    segs.append((_pc(scores), ""))
    if tail:
        segs.append((f"  {tail}", "dim"))
    if failed:
        segs.append(("  ✗ failed", "red"))
    if findings:
        segs.append((f"  ⚑ {', '.join(findings)}", "bold red"))
    if decisions:
        segs.append((f"  → {', '.join(k for k, _ in decisions)}", "bold yellow"))
    return segs


class _ConsoleState:
    """One session's decisions waiting for their call's line, the gate decisions of the call being gated
    (they join its line once it is accepted), and the lines of calls that ended before an earlier call
    (parallel calls: the timeline shows them in call order)."""

    __slots__ = ("decisions", "gated", "gate_decisions", "held", "running")

    def __init__(self) -> None:
        self.decisions: dict[int, list[Decision]] = {}
        self.gated: Step | None = None
        self.gate_decisions: list[Decision] = []
        # Calls started and not ended (index -> None, in start order; bounded like ``decisions``: a call
        # whose end never comes stops holding the lines after it), and finished lines held behind them.
        self.running: dict[int, Any] = {}
        self.held: dict[int, tuple[Any, ...]] = {}


class ConsoleSink(Sink):
    def __init__(
        self,
        stream: IO[str] | None = None,
        *,
        color: bool | None = None,
        drops: DropCounter | None = None,
        max_message_chars: int = 100,
        content: bool | None = None,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.color = _want_color(self.stream) if color is None else color
        self.drops = drops if drops is not None else DropCounter()
        self._max_msg = max_message_chars
        # (redacted before it is shortened: the cut never keeps part of a secret)
        self.content = ContentPolicy.resolve(content, max_chars=max(4 * max_message_chars, 400))
        self._console: Any = None  # rich Console, created on the worker thread when colour is on
        self._worker: BackgroundWorker[tuple[Any, ...]] = BackgroundWorker(
            "console",
            self._print,
            drops=self.drops,
            drop_reason="console_queue_full",
            max_queue=10_000,
            max_batch=256,
            interval_s=0.05,
            # A human reads the timeline: lines within 50 ms are live enough, and not waking the printer
            # per tool call spares the agent a thread wake-up and GIL hand-over each time.
            wake_at=64,
        )

    # ------------------------------------------------------------------ hooks (agent's thread)

    def new_state(self, session: Session) -> _ConsoleState:
        self._worker.submit(("start", session.id, session.pipeline.plan.name))
        return _ConsoleState()

    def on_tool_start(self, session: Session, step: Step, state: _ConsoleState) -> None:
        if state.gate_decisions and state.gated is step:
            state.decisions[step.index] = state.gate_decisions
            forget_oldest_call(state.decisions)
        state.gated, state.gate_decisions = None, []
        state.running[step.index] = None
        forget_oldest_call(state.running)

    def on_tool_end(self, session: Session, step: Step, state: _ConsoleState) -> None:
        ev = step.event
        kind = getattr(step.action, "type", None)  # (None without an action)
        state.running.pop(step.index, None)
        state.held[step.index] = (
            "step",
            session.id,
            step.index,
            ev.tool,
            step.classification.roles,
            kind,
            session.scores(),
            [(r, n) for r, n in session.langutory.runs[-3:]],
            [f.detector for f in step.findings],
            state.decisions.pop(step.index, ()),
            ev.failed,
            session.pipeline.letter_of,
        )
        self._release(state)

    def _release(self, state: _ConsoleState, everything: bool = False) -> None:
        """Print the held lines no running call precedes, in call order (all of them at the end)."""
        first_running = min(state.running) if state.running and not everything else None
        for index in sorted(state.held):
            if first_running is not None and index > first_running:
                break
            self._worker.submit(state.held.pop(index))

    def on_finding(self, session: Session, step: Step | None, finding: Finding, state: _ConsoleState) -> None:
        if step is None:
            self._worker.submit(("finding", session.id, finding.detector, finding.evidence))

    def on_decision(
        self, session: Session, step: Step | None, decision: Decision, state: _ConsoleState
    ) -> None:
        if decision.kind is DecisionKind.ALLOW:
            return
        if step is None:
            self._worker.submit(("decision", session.id, decision))
        elif step.index >= session.n_steps:  # gating the call
            if state.gated is not step:
                state.gated, state.gate_decisions = step, []
            state.gate_decisions.append(decision)
            if decision.blocks:
                self._worker.submit(
                    ("blocked", session.id, step.index, step.event.tool, state.gate_decisions)
                )
                state.gated, state.gate_decisions = None, []
        else:
            waiting = state.decisions.get(step.index)
            if waiting is None:
                waiting = state.decisions[step.index] = []
                forget_oldest_call(state.decisions)
            waiting.append(decision)

    def on_session_end(self, session: Session, summary: SessionSummary, state: _ConsoleState) -> None:
        self._release(state, everything=True)
        self._worker.submit(("end", session.id, summary, session.pipeline.plan.name))

    def flush(self, timeout_s: float = 5.0) -> bool:
        return self._worker.flush(timeout_s)

    def shutdown(self) -> None:
        self._worker.shutdown(2.0)

    # ------------------------------------------------------------------ worker thread

    def _print(self, batch: list[tuple[Any, ...]]) -> None:
        lines = [self._line(item) for item in batch]
        if self.color:
            console = self._rich_console()
            from rich.text import Text

            for segs in lines:
                text = Text()
                for s, style in segs:
                    text.append(s, style=style or None)
                console.print(text)
        else:
            self.stream.write("".join("".join(s for s, _ in segs) + "\n" for segs in lines))
        self.stream.flush()

    def _rich_console(self) -> Any:
        if self._console is None:
            from rich.console import Console

            self._console = Console(file=self.stream, force_terminal=True, highlight=False, soft_wrap=True)
        return self._console

    def _short(self, text: str) -> str:
        text = " ".join(text.split())
        return text if len(text) <= self._max_msg else text[: self._max_msg - 1] + "…"

    def _why(self, decision: Decision) -> str:
        """A decision as its line shows it: ``kind: message`` with content, else ``kind (policy)``."""
        kind = decision.kind.value
        message = self.content.message(decision)
        if message:  # a reminder is shown whole: its text is what the agent was told
            shown = " ".join(message.split()) if decision.kind.value == "remind" else self._short(message)
            return f"{kind}: {shown}"
        return f"{kind} ({decision.policy})" if decision.policy else kind

    def _line(self, item: tuple[Any, ...]) -> list[tuple[str, str]]:
        clean = self.content.clean  # session ids and tool names may hold anything: redacted like ids
        kind, sid = item[0], clean(item[1])
        if kind == "step":
            _, _, index, tool, roles, action, scores, runs, findings, decisions, failed, letter_of = item
            tool = clean(tool)
            letters = "".join(letter_of.get(r, "?") for r in roles)
            tail = " ".join(f"{letter_of.get(str(r), '?')}{n}" for r, n in runs)
            action_name = label_of(action) if action is not None else ""
            return format_step_line(
                sid,
                index,
                tool,
                letters,
                action_name,
                scores,
                tail,
                findings,
                [(d.kind.value, d.message) for d in decisions],
                failed,
            )
        if kind == "blocked":
            _, _, index, tool, decisions = item
            tool = clean(tool)
            why = "; ".join(self._why(d) for d in decisions)
            return [*_call_head(sid, None, tool), ("✗ blocked", "bold red"), (f"  → {why}", "red")]
        if kind == "decision":
            _, _, decision = item
            kind = decision.kind.value
            style = "bold red" if kind in _BLOCK_KINDS else "yellow"
            why = self._why(decision)  # starts with the kind
            return [(f"  {sid} ", "dim"), ("      ↳ ", "dim"), (kind, style), (why[len(kind) :], "dim")]
        if kind == "finding":
            _, _, detector, evidence = item
            shown = self.content.text(evidence) if evidence else None
            return [
                (f"  {sid} ", "dim"),
                ("      ⚑ ", "bold red"),
                (detector, "bold red"),
                (f": {self._short(shown)}" if shown else "", "dim"),
            ]
        if kind == "start":
            return [("▶ ", "bold green"), (sid, "bold"), (f"  plan={item[2]}", "dim")]
        if kind == "end":
            _, _, summary, plan = item
            primary = summary.scores.get(plan)
            segs: list[tuple[str, str]] = [
                ("■ ", "bold"),
                (sid, "bold"),
                (f"  {summary.n_steps} steps", ""),
                (f"  {summary.letters[-60:] or '-'}", "dim"),
                (f"  {_pc(primary)}", ""),
            ]
            if summary.finding_counts:
                segs.append((f"  findings: {', '.join(sorted(summary.finding_counts))}", "red"))
            return segs
        return [(repr(item), "")]


def _want_color(stream: IO[str]) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except (OSError, ValueError):
        return False
