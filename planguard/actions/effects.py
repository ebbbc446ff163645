"""Deterministic effect labels (TraceProbe Table I) from observable outcomes.

* ``FAILED``: the call errored or exited non-zero; when the source records no exit status (SWE-agent
  observations), the output's first/last characters are checked for the tool's own error messages
  (editor refusals, ``command not found``, a Python traceback, a pytest failure summary).
* ``SURVIVED`` / ``REVERTED``: a write survives until a later write to the same file takes it away: a
  delete, ``undo_edit``/``git checkout -- f``/``git restore f``, a copy of a backup onto the file (``cp
  f.bak f``: the writes made since the backup was taken, or all when the backup was not seen being made),
  a whole-file write that no longer holds what the earlier write put there (one that keeps that text
  keeps the write), or an edit whose old text contains — or is most of — what the earlier write put
  there. Provisional while the run goes on; final at its end. Failed writes changed nothing and are
  never reverted.
* ``JUSTIFIED``: a read or search of a task-relevant file, or a validation run that did not fail.
  TraceProbe §III-B: "An action is justified when it reads or searches a task-relevant file, or runs a
  validation command"; for traces without a gold patch it "can instead derive task relevance from
  surviving writes". Task-relevant means: in the anchor set when one is known; otherwise a file the run
  writes and keeps. A search hits a file when it is the search's scope or its output names it. A read
  or search before the write is re-labelled at the end of the run.
* ``OFF_ANCHOR``: a successful read or search outside a known anchor set.
* ``RECORDED``: a successful plan update, navigation, fetch or sub-agent spawn.
* ``REASONING``: a reasoning-only step. ``NEUTRAL``: succeeded, none of the above (see :class:`Effect`).
"""

from __future__ import annotations

import contextlib
import re
import weakref
from collections.abc import Iterable
from typing import Any, NamedTuple

from ..events import ToolEvent
from .anchors import AnchorSet
from .types import Action, ActionType, Effect, WriteKind

__all__ = ["EffectLabeler", "WriteLedger", "label_effects", "outcome_failed"]

# Failure is judged from small windows of the output: its head and its tail.
_HEAD = 240
_TAIL = 400
_TAIL_WORDS = (
    "ailed", "timed out", "Error", "ERROR", "Exception", "FAILED", "Killed", "Segmentation", "Traceback",
)  # fmt: skip

# A structured tool's refusal starts its output (a file's *content* may contain anything, so only the
# start is looked at): SWE-agent/OpenHands editor messages, Claude Code tool errors.
_EDITOR_ERROR_STARTS = (
    "No replacement was performed", "Invalid `", "Your proposed edit has introduced", "File already exists",
    "Cannot overwrite", "No such file", "Unrecognized command", "Parameter `", "Multiple occurrences",
    "Found multiple", "String to replace not found", "File has not been read yet", "Usage:", "ERROR", "Error",
    "error:", "<tool_use_error>", "Traceback",
)  # fmt: skip
_SUCCESS_STARTS = (
    "Here's the result of running", "File created successfully", "Here's the files and directories",
    "[File: ",
)  # fmt: skip
# Run-level failures at the end of the output: an uncaught exception's last line, a test-run summary, a
# killed process, found in a tail that holds one of ``_TAIL_WORDS``.
_TAIL_FAILURE = re.compile(
    r"^\w*(?:Error|Exception)\b|Traceback \(most recent call last\)|\d+ failed|\d+ errors? in |"
    r"ERROR collecting|= FAILURES =|Effect.FAILED \(|Segmentation fault|^Killed|timed out",
    re.MULTILINE,
)


def outcome_failed(action: Action, event: ToolEvent) -> bool:
    """The call failed, judged from its error flag, exit code, or (lacking both) its own output."""
    if event.is_error:
        return True
    code = event.exit_code
    if code is not None:
        return code != 0
    result = event.result
    if not result or not isinstance(result, str):  # str subclasses too (LangChain content)
        return False
    return _judge(action.type, action.structured, result)


def _judge(t: ActionType, structured: bool, result: str) -> bool:
    """Whether a non-empty output says the call failed (the action's type and kind of tool decide how)."""
    if t is ActionType.REASON or t is ActionType.PLAN:
        return False
    if structured and t is not ActionType.SEARCH:
        head = result if not result[0].isspace() else result[:200].lstrip()
        if head.startswith(_SUCCESS_STARTS) or head.startswith("The file "):
            return False
        if head.startswith(_EDITOR_ERROR_STARTS):
            return True
        head = head[:200]
        return (head.startswith("The path ") and "does not exist" in head) or (
            "did not appear verbatim" in head
        )
    head = result[:160]
    if t is ActionType.COMMAND:
        if "No such file or directory" in head or "command not found" in head or "Traceback (most" in head:
            return True
        tail = result[-400:]
        # The run-level failure is only looked for where one of its words occurs in the tail (so a test
        # summary like "1 error in 0.1s" alone, with none of them, is not a failure).
        if any(word in tail for word in _TAIL_WORDS):
            return _TAIL_FAILURE.search(tail) is not None
        return False
    return (
        "No such file" in head
        or "does not exist" in head
        or "Is a directory" in head
        or "Permission denied" in head
        or "cannot open" in head
    )


class _StepBook(weakref.WeakValueDictionary[int, Any]):
    """The steps a labeler may still re-label in place, by step index, held weakly: a step carries its
    call's result, and a live session's steps must not outlive their calls (a pending read or a recorded
    write would keep them); whoever wants steps re-labelled in place (a replay) holds them anyway. Pickles
    (a saved session's state) as an empty book: the steps it could reach are gone with the process that
    saved it."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), ())


def _rewrites(b: str, a: str) -> bool:
    """An edit whose old text, stripped, is ``b`` rewrites what an earlier write put there (its new text,
    stripped, is ``a``): the old text contains it, or is most of it."""
    if not a or not b:
        return False
    return a in b or (b in a and 2 * len(b) >= len(a))


def _anchored(anchors: AnchorSet, action: Action, event: ToolEvent) -> Effect:
    """A read or search judged against the anchor set."""
    path = action.target if action.type is ActionType.FILE_READ else action.path
    if path is not None and path in anchors:
        return Effect.JUSTIFIED
    if action.type is ActionType.SEARCH:
        result = event.result
        if isinstance(result, str) and result and anchors.mentioned_in(result[:4096]):
            return Effect.JUSTIFIED
    return Effect.OFF_ANCHOR


#: How much of a search's output is kept and looked through for the files it names (a search that
#: hits a file lists it early; a bound keeps a pending search small).
_SEARCH_HEAD = 4096


def _search_hits(scope: str | None, head: str, kept: Iterable[str]) -> bool:
    """A search whose scope is one of the ``kept`` files, or whose output names one."""
    return any(scope == path or (bool(head) and path in head) for path in kept)


#: What a backup copy of ``f`` is called: ``f.bak``, ``f.orig``, ``f~``, ...
_BACKUP_SUFFIXES = frozenset({".bak", ".orig", ".backup", ".old", ".save", "~"})


class _Write(NamedTuple):
    """One recorded write."""

    step: int
    text: str  # what it put in the file (the action's ``new_text``, stripped; empty when there is none)
    reverted: bool  # a later write took it back


class WriteLedger:
    """Recent successful writes per file (bounded: files and writes per file), with revert detection.

    A file's writes are a tuple of :class:`_Write`, replaced when one is added or reverted."""

    __slots__ = ("backups", "files", "kept", "max_files", "per_file")

    def __init__(self, max_files: int = 256, per_file: int = 4) -> None:
        self.files: dict[str, tuple[_Write, ...]] = {}
        # Copies the run made (``cp f f.bak``): the copy's path -> (the file copied, the step it was taken
        # at). Copying one back onto its file takes back the writes made since.
        self.backups: dict[str, tuple[str, int]] = {}
        # The files some recorded write to survives, kept up to date by record() (a write changes only its
        # own file's status): what reads and searches are judged against, without a scan of every file.
        self.kept: set[str] = set()
        self.max_files = max_files
        self.per_file = per_file

    def record(self, index: int, action: Action, path: str | None = None) -> list[int]:
        """Add a successful write (to ``path``, by default the action's target); return the steps of the
        earlier writes it reverts (now marked reverted)."""
        if path is None:
            path = action.target
        if path is None:
            return []
        files = self.files
        entries = files.pop(path, None)  # re-insert below: most recently written last (LRU order)
        reverts: list[int] = []  # positions in ``entries`` of the writes this one reverts
        reverted: list[int] = []  # and their steps
        kind = action.write
        source = action.source if path == action.target else None
        since = self._restored_since(source, path, index) if source is not None else None
        if since is not None:
            kind = WriteKind.RESTORE  # a backup copied back: no content of its own to record
        if entries:
            live = [k for k, w in enumerate(entries) if not w.reverted]
            if since is not None:
                reverts = [k for k in live if entries[k].step > since]
            elif kind is WriteKind.CREATE and action.new_text is not None:
                # A whole-file write takes back only the earlier writes whose text it no longer holds.
                whole = action.new_text
                reverts = [k for k in live if not entries[k].text or entries[k].text not in whole]
            elif kind is WriteKind.CREATE or kind is WriteKind.DELETE:
                reverts = live
            elif kind is WriteKind.RESTORE:
                # undo_edit takes back the last edit only; git checkout/restore all of them
                reverts = live[-1:] if action.intent == "undo_edit" else live
            elif kind is WriteKind.EDIT:
                old = action.old_text
                b = old.strip() if old else ""
                if b:
                    reverts = [k for k in live if _rewrites(b, entries[k].text)]
            if reverts:
                reverted = [entries[k].step for k in reverts]
                entries = tuple(
                    w._replace(reverted=True) if k in reverts else w for k, w in enumerate(entries)
                )
        else:
            entries = ()
            if len(files) >= self.max_files:
                oldest = next(iter(files))
                del files[oldest]
                self.kept.discard(oldest)
        if kind is not WriteKind.RESTORE and kind is not WriteKind.DELETE:
            new = action.new_text
            entries = (*entries, _Write(index, new.strip() if new else "", False))[-self.per_file :]
        files[path] = entries
        if any(not w.reverted for w in entries):
            self.kept.add(path)
        else:
            self.kept.discard(path)
        return reverted

    def _restored_since(self, source: str, path: str, index: int) -> int | None:
        """For a copy of ``source`` onto ``path`` at step ``index``: the step after which ``path``'s writes
        are taken back (-1: all of them) when ``source`` is a backup of ``path``, else None — and the
        copy is remembered as a possible backup of ``source``."""
        taken = self.backups.get(source)
        if len(self.backups) >= self.max_files:
            del self.backups[next(iter(self.backups))]
        self.backups[path] = (source, index)
        if taken is not None and taken[0] == path:
            return taken[1]
        name, original = source.rsplit("/", 1)[-1], path.rsplit("/", 1)[-1]
        if name != original and name.startswith(original) and name[len(original) :] in _BACKUP_SUFFIXES:
            return -1  # a backup made before the recording, or by other means
        return None

    def survives(self, path: str) -> bool:
        """Some recorded write to ``path`` has not been reverted."""
        return path in self.kept


class EffectLabeler:
    """Per-run effect labelling, one action at a time, with bounded state.

    ``label`` returns the provisional effect of the action just observed. Later changes to earlier steps
    (a write reverted, a read found task-relevant at the end) go to ``revisions`` (``{step: Effect}``,
    the ``max_revisions`` most recent) and, when the caller passed the step object as ``step``, it has
    an ``effect`` attribute and is still alive, onto that object in place (:class:`_StepBook`). Offline
    (:func:`label_effects`) the bounds are the run length; live, they cap what a long session keeps
    (``max_pending_reads`` reads awaiting the end-of-run relevance check, :class:`WriteLedger`'s files ×
    writes).
    """

    __slots__ = (
        "_pending_count",
        "_pending_reads",
        "_pending_searches",
        "_steps",
        "anchors",
        "ledger",
        "max_pending_reads",
        "max_revisions",
        "revisions",
    )

    def __init__(
        self,
        anchors: AnchorSet | None = None,
        *,
        max_revisions: int = 256,
        max_pending_reads: int = 512,
        ledger: WriteLedger | None = None,
    ) -> None:
        self.anchors = anchors
        self.ledger = ledger if ledger is not None else WriteLedger()
        self.revisions: dict[int, Effect] = {}
        self.max_revisions = max_revisions
        self.max_pending_reads = max_pending_reads
        # Without anchors: the steps of reads of files not (yet) written, re-labelled JUSTIFIED if the run
        # keeps a write, and searches (step, scope, the start of the output) that named no such file yet.
        self._pending_reads: dict[str, tuple[int, ...]] = {}
        self._pending_searches: list[tuple[int, str | None, str]] = []
        self._pending_count = 0
        self._steps = _StepBook()  # the steps of pending reads and searches and of recorded writes

    def label(self, index: int, action: Action, event: ToolEvent, step: Any = None) -> Effect:
        t = action.type
        if t is ActionType.REASON:
            return Effect.REASONING
        if outcome_failed(action, event):
            return Effect.FAILED
        if t is ActionType.FILE_WRITE:
            reverted = self.ledger.record(index, action)
            for other in action.also_written:  # ``rm a b c``: a write to each file
                reverted += self.ledger.record(index, action, other)
            self._book(index, step)
            for i in reverted:
                self._revise(i, Effect.REVERTED)
            return Effect.SURVIVED
        if t is ActionType.FILE_READ:
            if self.anchors is not None:
                return _anchored(self.anchors, action, event)
            # Without anchors a read is relevant when the run keeps a write to its file, which may only
            # become known later: the read waits for the end of the run.
            path = action.target
            if path is None:
                return Effect.NEUTRAL
            if path in self.ledger.kept:
                return Effect.JUSTIFIED
            if self._pending_count < self.max_pending_reads:
                self._pending_reads[path] = (*self._pending_reads.get(path, ()), index)
                self._pending_count += 1
                self._book(index, step)
            return Effect.NEUTRAL
        if t is ActionType.COMMAND:
            return Effect.JUSTIFIED if action.is_validation else Effect.NEUTRAL
        if t is ActionType.SEARCH:
            if self.anchors is not None:
                return _anchored(self.anchors, action, event)
            return self._search_without_anchors(index, action, event, step)
        return Effect.RECORDED

    def _search_without_anchors(self, index: int, action: Action, event: ToolEvent, step: Any) -> Effect:
        """A search hits a task-relevant file when its scope or its output names a file the run keeps a
        write to; a later write can make it so, so an unmatched search waits for the end of the run."""
        result = event.result
        head = result[:_SEARCH_HEAD] if isinstance(result, str) else ""
        if _search_hits(action.path, head, self.ledger.kept):
            return Effect.JUSTIFIED
        if self._pending_count < self.max_pending_reads:
            self._pending_searches.append((index, action.path, head))
            self._pending_count += 1
            self._book(index, step)
        return Effect.NEUTRAL

    def _book(self, index: int, step: Any) -> None:
        """Keep ``step`` (weakly) to re-label in place, when the caller passed one that can be."""
        if step is not None and hasattr(step, "effect"):
            # (one that cannot be held weakly has its revisions in ``revisions`` only)
            with contextlib.suppress(TypeError):
                self._steps[index] = step

    def _revise(self, index: int, effect: Effect) -> None:
        revisions = self.revisions
        if index not in revisions and len(revisions) >= self.max_revisions:
            del revisions[next(iter(revisions))]  # keep the most recent
        revisions[index] = effect
        step = self._steps.get(index)
        if step is not None:
            step.effect = effect

    def finish(self) -> dict[int, Effect]:
        """Final labels: reads of files the run kept a write to become JUSTIFIED. Returns the revisions."""
        if self.anchors is None:
            for path, reads in self._pending_reads.items():
                if self.ledger.survives(path):
                    for index in reads:
                        self._revise(index, Effect.JUSTIFIED)
            if self._pending_searches:
                kept = self.ledger.kept
                for index, scope, head in self._pending_searches:
                    if _search_hits(scope, head, kept):
                        self._revise(index, Effect.JUSTIFIED)
            self._pending_reads.clear()
            self._pending_searches.clear()
            self._pending_count = 0
        return self.revisions


def label_effects(
    actions: list[Action], events: list[ToolEvent], anchors: AnchorSet | None = None
) -> list[Effect]:
    """Final effect labels of a finished run (offline convenience over :class:`EffectLabeler`)."""
    n = len(actions) + 1
    labeler = EffectLabeler(
        anchors, max_revisions=n, max_pending_reads=n, ledger=WriteLedger(max_files=n, per_file=n)
    )
    out = [labeler.label(i, a, e) for i, (a, e) in enumerate(zip(actions, events, strict=True))]
    for i, eff in labeler.finish().items():
        out[i] = eff
    return out
