"""TraceProbe's eight structural detectors (Table II), streaming, with the paper's frozen thresholds.

Each detector keeps window-bounded per-session state, costs amortised O(1) per step, and reports a
finding the moment its predicate first holds — then again only after the predicate has stopped holding
(its reset) and holds anew. The two end-of-run predicates report from ``finish``.

Where the paper leaves a detail open, the choice made here is stated in the class docstring.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..actions.effects import WriteLedger, outcome_failed
from ..actions.types import ActionType, Effect
from ..findings import Finding
from ..stages import Detector
from ._common import SurfaceTracker, action_of, clip
from .effects import EffectState, EffectTracker, RunFacts

if TYPE_CHECKING:
    from ..session import Session
    from ..step import Step

__all__ = [
    "SHELL_READERS",
    "SHELL_SEARCHERS",
    "NoTailValidation",
    "PlanAbsence",
    "RedundantSearch",
    "RereadChurn",
    "SearchLoop",
    "ShellOverTool",
    "ToolOscillation",
    "UnsupportedCompletion",
]


# --------------------------------------------------------------------------------------- search loop


class _LoopState:
    __slots__ = ("count", "fired", "searches", "start")

    def __init__(self) -> None:
        self.count = 0
        self.start = 0
        self.fired = False
        self.searches = 0


class SearchLoop(Detector):
    """At least ``threshold`` (10) consecutive SEARCH or FILE_READ actions with no FILE_WRITE and no
    validation COMMAND between them.

    TraceProbe Table II, "Search Loop": "At least 10 consecutive SEARCH or FILE READ actions with no FILE
    WRITE and no validation COMMAND between them." Consecutive means adjacent among the run's actions:
    any other action (a write, a command, a navigation, a plan update) ends the streak; a reasoning-only
    step is not an action (the paper leaves reasoning out of its action counts) and neither counts nor
    ends it. ``strict=False`` restores the looser reading in which only a write or a validation run ends
    the streak.
    """

    name = "search_loop"

    def __init__(self, threshold: int = 10, *, strict: bool = True) -> None:
        if threshold < 1:
            raise ValueError("threshold must be >= 1")
        self.threshold = threshold
        self.strict = strict
        # Strict: every action but a reasoning-only step can end the streak. Loose: other actions neither
        # count nor break it.
        self.types = (
            frozenset(ActionType) - {ActionType.REASON}
            if strict
            else frozenset(
                {ActionType.SEARCH, ActionType.FILE_READ, ActionType.FILE_WRITE, ActionType.COMMAND}
            )
        )

    def new_state(self) -> _LoopState:
        return _LoopState()

    def observe(self, step: Step, state: _LoopState) -> Finding | None:
        a = action_of(step)
        t = a.type
        if t is ActionType.SEARCH or t is ActionType.FILE_READ:
            if state.count == 0:
                state.start = step.index
                state.searches = 0
            state.count += 1
            if t is ActionType.SEARCH:
                state.searches += 1
            if state.count >= self.threshold and not state.fired:
                state.fired = True
                n = state.count
                return Finding(
                    self.name,
                    state.start,
                    step.index,
                    f"{n} searches/reads in a row (steps {state.start}–{step.index}; "
                    f"{state.searches} searches, "
                    f"{n - state.searches} reads) with no file write and no validation run",
                    {"count": n, "searches": state.searches, "reads": n - state.searches},
                )
            return None
        if (
            t is ActionType.FILE_WRITE
            or (t is ActionType.COMMAND and a.is_validation)
            or (self.strict and t is not ActionType.REASON)
        ):
            state.count = 0
            state.fired = False
        return None


# ------------------------------------------------------------------------ windowed repeat counting


class _WindowCounts:
    """Occurrences of keys among the last ``window`` steps, with per-key invalidation ("a write between")."""

    __slots__ = ("active", "clock", "counts", "entries", "epoch", "window")

    def __init__(self, window: int) -> None:
        self.window = window
        self.entries: deque[tuple[int, str, int]] = deque()  # (step, key, epoch at the time)
        self.counts: dict[str, int] = {}
        self.active: set[str] = set()  # keys whose predicate currently holds (reported already)
        self.epoch: dict[str, int] = {}  # key -> clock of its last invalidation
        self.clock = 0

    def _valid(self, key: str, epoch: int) -> bool:
        return epoch >= self.epoch.get(key, -1)

    def expire(self, index: int, threshold: int) -> None:
        entries = self.entries
        floor = index - self.window
        while entries and entries[0][0] <= floor:
            _, key, epoch = entries.popleft()
            if self._valid(key, epoch):
                c = self.counts.get(key, 0) - 1
                if c <= 0:
                    self.counts.pop(key, None)
                else:
                    self.counts[key] = c
                if c < threshold:
                    self.active.discard(key)
        if not entries and self.epoch:
            self.epoch.clear()  # nothing left to invalidate

    def invalidate(self, key: str) -> None:
        if key in self.counts:
            self.clock += 1
            epoch = self.epoch
            epoch[key] = self.clock
            del self.counts[key]
            if len(epoch) > 4 * self.window:  # keep only keys still in the window (bounded state)
                live = {k for _, k, _ in self.entries}
                self.epoch = {k: v for k, v in epoch.items() if k in live}
        self.active.discard(key)

    def catch_up(self, index: int, threshold: int) -> None:
        """Expire what has left the window by step ``index``. Called lazily, before the next decision,
        which then sees exactly the state a per-step expiry would have left."""
        entries = self.entries
        if entries and entries[0][0] <= index - self.window:
            self.expire(index, threshold)

    def count(self, index: int, key: str, threshold: int) -> tuple[int, list[int]] | None:
        """Count ``key`` at step ``index``; ``(count, its steps)`` when the predicate newly holds for it."""
        self.entries.append((index, key, self.clock))
        c = self.counts.get(key, 0) + 1
        self.counts[key] = c
        if c >= threshold and key not in self.active:
            self.active.add(key)
            return c, self.steps_of(key)
        return None

    def steps_of(self, key: str) -> list[int]:
        return [i for i, k, e in self.entries if k == key and self._valid(k, e)]


class RereadChurn(Detector):
    """The same canonical file path read at least ``reads`` (3) times within a ``window`` (10)-action
    window, with no intervening write to that file. Resets per file when the count in the window drops
    below the threshold or the file is written."""

    name = "reread_churn"
    types = frozenset({ActionType.FILE_READ, ActionType.FILE_WRITE})

    def __init__(self, reads: int = 3, window: int = 10) -> None:
        if reads < 2 or window < 1:
            raise ValueError("reads must be >= 2 and window >= 1")
        self.reads = reads
        self.window = window

    def new_state(self) -> _WindowCounts:
        return _WindowCounts(self.window)

    def observe(self, step: Step, state: _WindowCounts) -> Finding | None:
        a = action_of(step)
        t = a.type
        target = a.target
        if target is None or (t is not ActionType.FILE_READ and t is not ActionType.FILE_WRITE):
            return None  # only reads and writes of a file decide anything
        index = step.index
        state.catch_up(index, self.reads)
        if t is ActionType.FILE_WRITE:
            for path in (target, *a.also_written):  # ``rm a b c`` writes each file
                if path in state.counts or path in state.active:
                    state.invalidate(path)
            return None
        hit = state.count(index, target, self.reads)
        if hit is not None:
            c, steps = hit
            return Finding(
                self.name,
                steps[0],
                index,
                f"{target} read {c} times within {self.window} actions (steps {', '.join(map(str, steps))}) "
                f"with no write to it in between",
                {"path": target, "count": c, "steps": steps},
            )
        return None


class RedundantSearch(Detector):
    """The same exact-normalised SEARCH query (pattern and scope) at least ``repeats`` (2) times within
    a ``window`` (10)-action window. Resets per query when it leaves the window."""

    name = "redundant_search"
    types = frozenset({ActionType.SEARCH})

    def __init__(self, repeats: int = 2, window: int = 10) -> None:
        if repeats < 2 or window < 1:
            raise ValueError("repeats must be >= 2 and window >= 1")
        self.repeats = repeats
        self.window = window

    def new_state(self) -> _WindowCounts:
        return _WindowCounts(self.window)

    def observe(self, step: Step, state: _WindowCounts) -> Finding | None:
        a = action_of(step)
        if a.type is not ActionType.SEARCH or not a.target:
            return None
        index = step.index
        state.catch_up(index, self.repeats)
        query = a.target
        hit = state.count(index, query, self.repeats)
        if hit is not None:
            c, steps = hit
            return Finding(
                self.name,
                steps[0],
                step.index,
                f"search {clip(query)!r} repeated {c} times within {self.window} actions "
                f"(steps {', '.join(map(str, steps))})",
                {"query": query, "count": c, "steps": steps},
            )
        return None


# ---------------------------------------------------------------------------------- tool oscillation


#: Writes between two reads, and cycles, a file keeps (the latest).
_KEPT = 8


@dataclass(slots=True)
class _Write:
    """A write between two reads of a file; ``reverted`` becomes known when the reverting write arrives."""

    step: int
    failed: bool
    reverted: bool = False

    @property
    def bad(self) -> bool:
        return self.failed or self.reverted


@dataclass(slots=True)
class _Cycle:
    """A read–write–read cycle: the opening read's step, the closing read's step, the writes between."""

    opened: int
    closed: int
    writes: list[_Write]


@dataclass(slots=True)
class _FileCycles:
    """One file: the step of its latest read (-1: none yet), the writes since then, its latest cycles, and
    whether it has been reported."""

    last_read: int = -1
    writes: deque[_Write] = field(default_factory=lambda: deque(maxlen=_KEPT))
    cycles: deque[_Cycle] = field(default_factory=lambda: deque(maxlen=_KEPT))
    fired: bool = False


class _OscillationState:
    __slots__ = ("files", "ledger")

    MAX_FILES = 256

    def __init__(self) -> None:
        self.files: dict[str, _FileCycles] = {}
        self.ledger = WriteLedger(max_files=self.MAX_FILES)


class ToolOscillation(Detector):
    """For one file, at least ``cycles`` (2) READ–WRITE–READ cycles whose middle write failed or was
    reverted (a cycle shares its closing read with the next one's opening read). Reverts become known
    when the reverting write arrives, so the finding may come at that write. Once per file."""

    name = "tool_oscillation"
    types = frozenset({ActionType.FILE_READ, ActionType.FILE_WRITE})

    def __init__(self, cycles: int = 2) -> None:
        if cycles < 1:
            raise ValueError("cycles must be >= 1")
        self.cycles = cycles

    def new_state(self) -> _OscillationState:
        return _OscillationState()

    def observe(self, step: Step, state: _OscillationState) -> Finding | None:
        a = action_of(step)
        t = a.type
        path = a.target
        if path is None or (t is not ActionType.FILE_READ and t is not ActionType.FILE_WRITE):
            return None
        files = state.files
        fc = files.get(path)
        if fc is None:
            if len(files) >= state.MAX_FILES:
                del files[next(iter(files))]
            fc = files[path] = _FileCycles()
        # Which cycles are bad changes only when a read closes a cycle or a write reverts earlier ones:
        # the predicate is re-evaluated then (it cannot first hold at any other step).
        changed = False
        if t is ActionType.FILE_WRITE:
            # The effect tracker, when it ran first, has judged the outcome: FAILED is exactly that.
            effect = step.effect
            failed = effect is Effect.FAILED if effect is not None else outcome_failed(a, step.event)
            if not failed:
                reverted = state.ledger.record(step.index, a)
                if reverted:  # earlier writes to this file, reverted by this one
                    changed = True
                    for w in (*fc.writes, *(w for c in fc.cycles for w in c.writes)):
                        w.reverted = w.reverted or w.step in reverted
            if fc.last_read >= 0:
                fc.writes.append(_Write(step.index, failed))
        else:
            if fc.last_read >= 0 and fc.writes:
                fc.cycles.append(_Cycle(fc.last_read, step.index, list(fc.writes)))
                changed = True
            fc.last_read = step.index
            fc.writes.clear()
        if fc.fired or not changed or not fc.cycles:
            return None
        bad = [c for c in fc.cycles if any(w.bad for w in c.writes)]
        if len(bad) < self.cycles:
            return None
        fc.fired = True
        first = bad[0].opened
        spans = "; ".join(
            f"write at {', '.join(str(w.step) for w in c.writes if w.bad)} "
            f"({'failed' if any(w.failed for w in c.writes) else 'reverted'})"
            for c in bad
        )
        return Finding(
            self.name,
            first,
            step.index,
            f"{path}: {len(bad)} read–write–read cycles whose write failed or was reverted ({spans})",
            {"path": path, "cycles": len(bad)},
        )


# ------------------------------------------------------------------------------ tool-gated detectors


class _PlanState(SurfaceTracker):  # the state is its own surface tracker: one object per session
    __slots__ = ("fired", "first_write", "plan_seen", "writes")

    def __init__(self, scaffold: str | None) -> None:
        super().__init__(scaffold)
        self.plan_seen = False
        self.writes = 0
        self.first_write = 0
        self.fired = False


class PlanAbsence(Detector):
    """At least ``writes`` (5) FILE_WRITE actions with no earlier structured-plan / TODO tool call — only
    where the scaffold has such a tool (``scaffold`` given, or learned from its tool names). Once per run."""

    name = "plan_absence"

    def __init__(self, writes: int = 5, *, scaffold: str | None = None) -> None:
        if writes < 1:
            raise ValueError("writes must be >= 1")
        self.writes = writes
        self.scaffold = scaffold
        if scaffold is not None and not SurfaceTracker(scaffold).surface.plan_tool:
            self.types = frozenset()  # a fixed surface without a plan tool: the predicate never holds

    def new_state(self) -> _PlanState:
        return _PlanState(self.scaffold)

    def observe(self, step: Step, state: _PlanState) -> Finding | None:
        if state.fired or state.plan_seen:
            return None
        a = action_of(step)
        scaffold = a.scaffold
        if scaffold is not None and scaffold not in state.seen:
            state.learn(a)
        t = a.type
        if t is not ActionType.FILE_WRITE:
            if t is ActionType.PLAN:
                state.plan_seen = True
            return None
        if state.writes == 0:
            state.first_write = step.index
        state.writes += 1
        if state.writes >= self.writes and state.surface.plan_tool:
            state.fired = True
            return Finding(
                self.name,
                state.first_write,
                step.index,
                f"{state.writes} file writes (from step {state.first_write}) with no plan/TODO tool call "
                f"before them, although the scaffold has one",
                {"writes": state.writes},
            )
        return None


#: First words of shell commands that duplicate structured read / search tools (TraceProbe Table II).
SHELL_READERS = frozenset({"cat", "head", "tail", "less", "more"})
SHELL_SEARCHERS = frozenset({"grep", "egrep", "fgrep", "zgrep", "rg", "ag", "ack", "find"})


class _ShellState(SurfaceTracker):  # the state is its own surface tracker: one object per session
    __slots__ = ("active", "count")

    def __init__(self, scaffold: str | None) -> None:
        super().__init__(scaffold)
        self.active = False
        self.count = 0


class ShellOverTool(Detector):
    """A shell command whose first word is cat/head/tail/less/more (while a structured read tool is
    exposed) or grep-family/rg/ag/find (while a structured search tool is exposed). Resets when the agent
    uses a structured read or search tool; reported again at the next shell read/search after that."""

    name = "shell_over_tool"

    def __init__(self, *, scaffold: str | None = None) -> None:
        self.scaffold = scaffold
        if scaffold is not None:
            surface = SurfaceTracker(scaffold).surface
            if not surface.structured_read and not surface.structured_search:
                self.types = frozenset()  # a fixed surface without structured tools: it never holds

    def new_state(self) -> _ShellState:
        return _ShellState(self.scaffold)

    def observe(self, step: Step, state: _ShellState) -> Finding | None:
        a = action_of(step)
        scaffold = a.scaffold
        if scaffold is not None and scaffold not in state.seen:
            state.learn(a)
        word = a.shell
        if word is None:
            if a.structured and (a.type is ActionType.FILE_READ or a.type is ActionType.SEARCH):
                state.active = False
            return None
        if state.active:
            return None
        surface = state.surface
        if (word in SHELL_READERS and surface.structured_read) or (
            word in SHELL_SEARCHERS and surface.structured_search
        ):
            state.active = True
            state.count += 1
            kind = "read" if word in SHELL_READERS else "search"
            return Finding(
                self.name,
                step.index,
                step.index,
                f"shell `{word}` used to {kind} files although a structured {kind} tool is available",
                {"command": word, "tool": step.event.tool},
            )
        return None


# --------------------------------------------------------------------------------- end-of-run predicates


class _EndOfRun(Detector):
    """A predicate judged at the end of the run over :class:`RunFacts`: its own, noted at every step, or,
    with ``effects`` (an :class:`EffectTracker` in the same pipeline, as :func:`default_detectors` sets it
    up), the tracker's, which sees every step anyway; the detector then observes none."""

    effects: EffectTracker | None = None

    def _read_facts_of(self, effects: EffectTracker | None) -> None:
        self.effects = effects
        if effects is not None:
            self.types = frozenset()

    def new_state(self) -> RunFacts | None:
        return RunFacts() if self.effects is None else None

    def observe(self, step: Step, state: RunFacts | None) -> Finding | None:
        if state is None:  # the tracker keeps the facts
            return None
        a = action_of(step)
        if state.note(step.index, a) and not outcome_failed(a, step.event):
            state.last_ok_validation = step.index
        return None

    def facts(self, session: Session, state: RunFacts | None) -> RunFacts | None:
        if state is not None:
            return state
        if self.effects is None:
            return None
        effects: EffectState | None = session.facts("effects")
        if effects is None:
            raise LookupError(f"{self.name}: no EffectTracker in this session's pipeline to read facts from")
        return effects.facts


class NoTailValidation(_EndOfRun):
    """At the end of the run: no recognised validation command in the overlap of the region after the
    last source write and the final ``tail`` (5) actions. Runs without any source write are not judged
    (there is nothing to validate). ``effects``: see :class:`_EndOfRun`.

    TraceProbe Table II, "No Formal Tail Validation": "No recognized validation command in the overlap of
    the post-last-source-write region and final 5 actions." Submission artifacts (``git diff >
    patch.txt``, ``cat patch.txt``, the completion action) hand the result in; they are not source writes
    and not among the final actions counted (:class:`RunFacts`), so a run that tested and then submitted
    is not flagged.
    """

    name = "no_tail_validation"

    def __init__(self, tail: int = 5, *, effects: EffectTracker | None = None) -> None:
        if tail < 1:
            raise ValueError("tail must be >= 1")
        self.tail = tail
        self._read_facts_of(effects)

    def finish(self, session: Session, state: RunFacts | None) -> Finding | None:
        facts = self.facts(session, state)
        if facts is None:
            return None
        last_sw = facts.last_source_write
        if last_sw < 0:
            return None
        n = facts.n
        start = max(last_sw + 1, facts.tail_start(self.tail))
        if facts.last_validation >= start:
            return None
        end = n - 1
        if start > end:
            evidence = (
                f"the last source write (step {last_sw}) is the run's final action; nothing validated it"
            )
        else:
            evidence = (
                f"no validation command in the final {end - start + 1} action(s) after the last source "
                f"write (step {last_sw})"
            )
        return Finding(self.name, last_sw, end, evidence, {"last_source_write": last_sw}, at_end=True)


_CLAIM = r"\b(?:fixed|done|resolved)\b"


class UnsupportedCompletion(_EndOfRun):
    """At the end of the run: the final text matches a word-boundary fixed/done/resolved pattern and no
    successful validation command follows the last source write.

    The final text is ``session.metadata["final_text"]`` when the source records it (the loaders do),
    else the text of the run's last reasoning / completion action (``think``, ``finish``). The check does
    not judge whether the statement is true, only whether a passing validation supports it. ``effects``:
    see :class:`_EndOfRun`.

    TraceProbe Table II, "Unsupported Completion Claim": "Final reasoning text matches a word-boundary
    fixed/done/resolved regex and no successful validation command appears after the last source write."
    It is a claim about the run's work, so a transcript with no tool calls is not judged.
    """

    name = "unsupported_completion"

    def __init__(self, pattern: str = _CLAIM, *, effects: EffectTracker | None = None) -> None:
        self.pattern = re.compile(pattern, re.IGNORECASE)
        self._read_facts_of(effects)

    def finish(self, session: Session, state: RunFacts | None) -> Finding | None:
        facts = self.facts(session, state)
        if facts is None or facts.n == 0:
            # A transcript with no tool calls (a chat) made no change and ran nothing: there is no
            # completion to support, whatever its text says.
            return None
        final: Any = session.metadata.get("final_text") if isinstance(session.metadata, dict) else None
        text = final if isinstance(final, str) and final.strip() else facts.text
        if not text:
            return None
        m = self.pattern.search(text[-4000:])
        last_sw = facts.last_source_write
        if m is None or facts.last_ok_validation > last_sw:
            return None
        if last_sw >= 0:
            why = f"no passing validation after the last source write (step {last_sw})"
        else:
            why = "no passing validation in the run"
        first = max(last_sw, 0)
        return Finding(
            self.name,
            first,
            max(facts.n - 1, first),
            f"final message claims {m.group(0)!r} but {why}",
            {
                "claim": m.group(0),
                "last_source_write": last_sw,
                "last_passing_validation": facts.last_ok_validation,
            },
            at_end=True,
        )
