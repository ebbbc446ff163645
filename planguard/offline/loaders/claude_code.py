"""Claude Code session transcripts (``~/.claude/projects/<project>/<sessionId>.jsonl``).

Lines are ``{type, uuid, parentUuid, sessionId, isSidechain, message, toolUseResult, ...}``. Only
``user`` and ``assistant`` lines carry the conversation; ``summary``, ``system``, ``progress``,
``file-history-snapshot`` and ``queue-operation`` lines are bookkeeping and are skipped (``progress``
lines may embed a running sub-agent's messages, which its own transcript records again).

* One API response is written as several assistant lines sharing ``message.id`` (one content block
  each, sometimes repeated), so blocks are de-duplicated per response: a ``tool_use`` by its id, text by
  its content. Each distinct ``message.id`` counts as one model call.
* ``tool_use`` blocks become events in order; ``tool_result`` blocks (in later user lines) are paired
  by ``tool_use_id`` and fill ``result``/``is_error``/``end_time``. The line's ``toolUseResult`` adds
  structured facts (``interrupted``, ``agentId`` of a spawned sub-agent, ...) to ``metadata``.
* A call that never ran keeps its reason as ``blocked``, so replay counts a denial, not a step, as the
  live session did (PHASES_LIVE.md §5). Claude Code writes every such call as an ``is_error`` result:

  - a ``PreToolUse`` hook denial: ``"PreToolUse:<tool> hook error: <reason>"`` (the CLI bundled with the
    Agent SDK), ``"Hook PreToolUse:<tool> denied this tool"`` (2.1.143, anthropics/claude-code#59643), or
    the bare reason (the npm CLI 2.1.x, planguard issue #20), which is recognisable only when it is the
    text planguard's own hook answers (:data:`PLANGUARD_REASON_PREFIXES`);
  - a user's "no" at a permission prompt: ``"The user doesn't want to proceed with this tool use. The
    tool use was rejected ..."`` (the text of real transcripts, e.g. ``shared/data/realtraj``);
  - a call the harness cancelled because a parallel sibling failed:
    ``"<tool_use_error>Sibling tool call errored</tool_use_error>"`` (anthropics/claude-code#22264);
  - by the line's own structure, whatever the text: a call Claude Code's permissions refused (e.g. a tool
    ``--allowedTools`` does not list, in ``-p`` mode; 2.1.328) is written with ``permissionDecision:
    {decision: "reject", source: "config"}`` and ``toolDenialKind`` beside its result
    (:func:`refusal_reason`; the hook service reads the same to close such a call live).
* File paths of the file tools (``Read``, ``Edit``, ``Write``, ``Glob``, ...) are made relative to the
  session's ``cwd`` when they lie inside it (unless the cwd is itself a scratch directory such as
  ``/tmp``), so targets are repo-relative as for every other scaffold;
  the arguments as recorded stay in ``metadata["absolute_arguments"]``.
* A compaction transcript (the conversation Claude Code runs to summarise a session that outgrew its
  context: its only prompt is the summary request, and it calls no tools; a sub-agent whose id starts
  with ``acompact``; or a file of nothing but ``summary`` lines) is not a run of the agent: it is
  skipped, with a note.
* Sub-agent (Task) transcripts are never mixed into the parent run. Lines with ``isSidechain: true``
  form their own :class:`Trajectory` with id ``"<session>/<agentId>"`` (``"<session>/sidechain-N"`` for
  old versions that did not write ``agentId``, chains being told apart by ``parentUuid``). A standalone
  sub-agent file (``agent-<agentId>.jsonl``, every line a sidechain) yields the same id, ``<session>``
  being the parent's ``sessionId``, so parent and child ids line up whichever file is read.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

from planguard.events import ASSISTANT, USER, MessageEvent, ToolEvent
from planguard.tools.paths import is_scratch_path

from ._base import (
    LoadError,
    LoadNote,
    Trajectory,
    add_turn,
    as_str,
    new_meta,
    parse_time,
    text_of,
    type_name,
)

__all__ = ["load_claude_code", "refusal_reason"]

_EXIT_CODE = re.compile(r"^Exit code (-?\d+)")
# The error result Claude Code records when a PreToolUse hook denied the call (it never ran): the reason
# follows the prefix; the 2.1.143 form carries no reason at all.
_HOOK_DENIED = re.compile(r"^PreToolUse:\S+ hook error: ")
_HOOK_DENIED_NO_REASON = re.compile(r"^Hook PreToolUse:\S+ denied this tool")
#: How the reasons planguard's own hook answers begin (policies/gates.py, policies/escalation.py via
#: _plan_view.NOTE_PREFIX, and the Claude Code adapter's fallback): the npm CLI records a denial as the bare
#: reason, which only its text tells apart from a tool's own error.
PLANGUARD_REASON_PREFIXES = (
    "PLANGUARD GATE (",
    "PLANGUARD NOTE:",
    "blocked by planguard",
    "Run stopped by planguard",
)
# A user's "no" at a permission prompt, and a call cancelled because a parallel sibling failed.
_USER_REJECTED = "The user doesn't want to proceed with this tool use."
_USER_REJECTED_OLD = "The user doesn't want to take this action right now."
_SIBLING_CANCELLED = "Sibling tool call errored"
# Claude Code's compaction request, the prompt of the summarising conversation (the constant in its cli.js,
# as public analyses of 2.0-2.1 quote it; newer versions put a "CRITICAL: Respond with TEXT ONLY." line and
# tool warnings before it).
_COMPACTION_PROMPT = "Your task is to create a detailed summary of the conversation so far"
_COMPACTION_AGENT = "acompact"
# File tools whose path arguments are made relative to the session's working directory.
_PATH_ARGUMENTS = ("file_path", "path", "notebook_path")
# User lines that are Claude Code's own plumbing rather than instructions from the person.
_NOT_A_PROMPT = ("<command-name>", "<command-message>", "<local-command-", "<command-args>", "Caveat:")
_INTERRUPTED = "[Request interrupted by user"
_MAIN = ""


class _Chain:
    """The events of one conversation chain (the main session or one sub-agent)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.events: list[ToolEvent] = []
        self.pending: dict[str, ToolEvent] = {}
        self.seen_blocks: set[tuple[str, str, str]] = set()
        self.responses: set[str] = set()
        self.model: str | None = None
        self.final_text: str | None = None
        self.prompts: list[str] = []
        self.turns: list[tuple[int, MessageEvent]] = []
        self.interruptions = 0
        self.orphan_results = 0
        self.malformed_blocks = 0
        self.n_lines = 0
        self.session_id: str | None = None
        self.agent_id: str | None = None
        self.facts: dict[str, Any] = {}

    def assistant(self, entry: dict[str, Any], message: dict[str, Any]) -> None:
        response_id = (
            as_str(message.get("id")) or as_str(entry.get("requestId")) or as_str(entry.get("uuid")) or ""
        )
        self.responses.add(response_id)
        self.model = as_str(message.get("model")) or self.model
        content = message.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": text_of(content)}]
        timestamp = parse_time(entry.get("timestamp"))
        for block in blocks:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "tool_use":
                call_id = as_str(block.get("id")) or ""
                name = block.get("name")
                if not isinstance(name, str) or not name:
                    # A nameless call cannot be classified, and "" would pass it off as a think step.
                    self.malformed_blocks += 1
                    continue
                key = ("tool_use", call_id or str(len(self.events)), "")
                if key in self.seen_blocks:
                    continue
                self.seen_blocks.add(key)
                raw_input = block.get("input")
                arguments: dict[str, Any] | str = raw_input if isinstance(raw_input, (dict, str)) else {}
                metadata: dict[str, Any] = {"message_id": response_id, "uuid": entry.get("uuid")}
                cwd = as_str(entry.get("cwd"))
                # A session run in a scratch directory (/tmp) has no repository to be relative to: its
                # files stay scratch files.
                if cwd and isinstance(arguments, dict) and not is_scratch_path(cwd.rstrip("/") + "/"):
                    relative = _relative_arguments(arguments, cwd)
                    if relative != arguments:
                        metadata["absolute_arguments"] = arguments
                        arguments = relative
                event = ToolEvent(
                    tool=name,
                    arguments=arguments,
                    call_id=call_id or None,
                    start_time=timestamp,
                    metadata=metadata,
                )
                self.events.append(event)
                if call_id:
                    self.pending[call_id] = event
            elif kind == "text":
                text = block.get("text")
                if not isinstance(text, str):
                    continue
                key = ("text", response_id, text)
                if key in self.seen_blocks:
                    continue
                self.seen_blocks.add(key)
                if text.strip():
                    self.final_text = text
                    add_turn(self.turns, len(self.events), ASSISTANT, text, timestamp)

    def user(self, entry: dict[str, Any], message: dict[str, Any]) -> None:
        content = message.get("content")
        if isinstance(content, str):
            self._prompt(entry, content)
            return
        if not isinstance(content, list):
            return
        timestamp = parse_time(entry.get("timestamp"))
        first_result = True
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_result":
                event = self.pending.pop(as_str(block.get("tool_use_id")) or "", None)
                if event is None:
                    self.orphan_results += 1
                    continue
                self._result(event, block, timestamp, entry.get("toolUseResult") if first_result else None)
                if event.is_error and event.blocked is None:
                    event.blocked = refusal_reason(entry)
                first_result = False
            elif block.get("type") == "text" and isinstance(block.get("text"), str):
                self._prompt(entry, block["text"])

    def _prompt(self, entry: dict[str, Any], text: str) -> None:
        if text.startswith(_INTERRUPTED):
            self.interruptions += 1
            return
        if entry.get("isMeta") or entry.get("isCompactSummary") or not text.strip():
            return
        if text.lstrip().startswith(_NOT_A_PROMPT):
            return
        self.prompts.append(text)
        add_turn(self.turns, len(self.events), USER, text, parse_time(entry.get("timestamp")))

    @staticmethod
    def _result(event: ToolEvent, block: dict[str, Any], timestamp: float | None, extra: Any) -> None:
        result = text_of(block.get("content"))
        event.result = result
        event.is_error = block.get("is_error") is True
        event.end_time = timestamp
        if event.is_error:
            match = _EXIT_CODE.match(result)
            if match:
                event.exit_code = int(match.group(1))
            event.blocked = _not_run_reason(result)
        metadata = event.metadata if isinstance(event.metadata, dict) else {}
        if isinstance(extra, dict):
            # Keep the small structured facts; stdout/file bodies already are the result text.
            facts = {
                k: v
                for k, v in extra.items()
                if isinstance(v, (bool, int, float)) or (isinstance(v, str) and len(v) <= 200)
            }
            if facts:
                metadata["tool_use_result"] = facts
            if isinstance(extra.get("agentId"), str):
                metadata["subagent_id"] = extra["agentId"]
        elif isinstance(extra, str):
            metadata["tool_use_result"] = extra[:200]

    def emit(self, run_id: str, source: str, extra_meta: dict[str, Any]) -> Iterator[Trajectory | LoadError]:
        """The chain's run; a note instead for a compaction transcript, and a diagnostic instead of a run
        that would come back empty although the transcript holds tool calls."""
        if self.is_compaction():
            yield LoadNote(
                source,
                f"{run_id}: a Claude Code compaction transcript (the session's summary), not a run; skipped",
            )
            return
        if not self.events and self.malformed_blocks:
            yield LoadError(
                source,
                f"{run_id}: {self.malformed_blocks} tool_use block(s) but none could be read (no tool name); "
                "expected tool_use blocks with a 'name'",
            )
            return
        yield self.trajectory(run_id, source, extra_meta)
        if not self.events:
            yield LoadNote(source, f"{run_id}: no tool calls; it replays with 0 steps")

    def is_compaction(self) -> bool:
        if self.name.startswith(_COMPACTION_AGENT) or (self.agent_id or "").startswith(_COMPACTION_AGENT):
            return True
        return not self.events and any(_COMPACTION_PROMPT in p[:2000] for p in self.prompts[:1])

    def trajectory(self, run_id: str, source: str, extra_meta: dict[str, Any]) -> Trajectory:
        meta = new_meta(
            model=self.model,
            final_text=self.final_text,
            task=self.prompts[0] if self.prompts else None,
            n_model_calls=len(self.responses) or None,
            user_prompts=list(self.prompts),
            n_interruptions=self.interruptions,
            orphan_tool_results=self.orphan_results,
            malformed_blocks=self.malformed_blocks,
            unanswered_tool_calls=sum(1 for e in self.events if e.result is None),
            **self.facts,
        )
        meta.update(extra_meta)
        return Trajectory(
            id=run_id, source=source, format="claude-code", events=self.events, meta=meta, messages=self.turns
        )


def load_claude_code(
    records: Iterable[tuple[int, Any] | LoadError], path: str, stem: str
) -> Iterator[Trajectory | LoadError]:
    """Turn one transcript's ``(line, record)`` stream into the session run plus one run per sub-agent."""
    main = _Chain(_MAIN)
    sidechains: dict[str, _Chain] = {}
    chain_of_uuid: dict[str, str] = {}
    summaries: list[str] = []
    n_anonymous = 0
    standalone_agent = stem[len("agent-") :] if stem.startswith("agent-") else None

    for item in records:
        if isinstance(item, LoadError):
            yield item
            continue
        line, entry = item
        if not isinstance(entry, dict):
            yield LoadError(
                path, f"expected a JSON object (one transcript entry), got {type_name(entry)}", line
            )
            continue
        kind = entry.get("type")
        if kind == "summary":
            if isinstance(entry.get("summary"), str):
                summaries.append(entry["summary"])
            continue
        if kind not in ("user", "assistant"):
            continue
        message = entry.get("message")
        if not isinstance(message, dict):
            yield LoadError(
                path,
                f"'{kind}' entry has no 'message' object (got {type_name(message)}); "
                "expected {'role', 'content'}",
                line,
            )
            continue

        chain = main
        if entry.get("isSidechain") is True:
            name = as_str(entry.get("agentId"))
            if name is None:
                parent = as_str(entry.get("parentUuid"))
                name = chain_of_uuid.get(parent) if parent else None
            if name is None:
                n_anonymous += 1
                name = (
                    standalone_agent if standalone_agent and n_anonymous == 1 else f"sidechain-{n_anonymous}"
                )
            chain = sidechains.get(name) or sidechains.setdefault(name, _Chain(name))
            uuid = as_str(entry.get("uuid"))
            if uuid:
                chain_of_uuid[uuid] = name
        chain.n_lines += 1
        if chain.session_id is None:
            chain.session_id = as_str(entry.get("sessionId"))
            chain.agent_id = as_str(entry.get("agentId"))
            chain.facts = {
                "session_id": chain.session_id,
                "cwd": as_str(entry.get("cwd")),
                "git_branch": as_str(entry.get("gitBranch")),
                "claude_code_version": as_str(entry.get("version")),
            }
        if kind == "assistant":
            chain.assistant(entry, message)
        else:
            chain.user(entry, message)

    if main.n_lines == 0 and not sidechains and summaries:
        # Only ``summary`` lines (the titles/summaries Claude Code writes when it compacts or resumes a
        # session): no conversation of its own.
        yield LoadNote(
            path, f"{stem}: only Claude Code summary lines (a compacted session's summary), no run; skipped"
        )
        return
    has_main = main.n_lines > 0 or not sidechains
    if has_main:
        yield from main.emit(stem, path, {"summaries": summaries, "is_sidechain": False})
    first_session = next((c.session_id for c in sidechains.values() if c.session_id), None)
    parent = stem if has_main else (main.session_id or first_session or stem)
    for name, chain in sidechains.items():
        yield from chain.emit(
            f"{parent}/{name}",
            path,
            {"is_sidechain": True, "agent_id": chain.agent_id or name, "parent_session_id": chain.session_id},
        )


def refusal_reason(entry: Any) -> str | None:
    """The reason a transcript line's tool result shows Claude Code refused the call by its permissions (it
    never ran), from the line's structure (``permissionDecision``, ``toolDenialKind``); None otherwise."""
    if not isinstance(entry, dict):
        return None
    decision = entry.get("permissionDecision")
    if isinstance(decision, dict) and decision.get("decision") in ("reject", "deny"):
        return f"refused by Claude Code's permissions ({as_str(decision.get('source')) or 'unknown source'})"
    kind = entry.get("toolDenialKind")
    if isinstance(kind, str) and kind:
        return f"refused by Claude Code ({kind})"
    return None


def _not_run_reason(result: str) -> str | None:
    """The reason an ``is_error`` result shows the call never ran, or None when it ran and failed."""
    text = result.strip()
    denied = _HOOK_DENIED.match(text)
    if denied:
        return text[denied.end() :]
    if _HOOK_DENIED_NO_REASON.match(text) or text.startswith(PLANGUARD_REASON_PREFIXES):
        return text
    if text.startswith((_USER_REJECTED, _USER_REJECTED_OLD)):
        return "rejected by the user at a permission prompt"
    if _SIBLING_CANCELLED in text[:80]:
        return "cancelled by the harness: a parallel sibling call errored"
    return None


def _relative_arguments(arguments: dict[str, Any], cwd: str) -> dict[str, Any]:
    """``arguments`` with file paths inside ``cwd`` made relative to it (other paths are left alone)."""
    root = cwd.rstrip("/") + "/"
    out = dict(arguments)
    for key in _PATH_ARGUMENTS:
        value = out.get(key)
        if isinstance(value, str) and value.startswith(root) and len(value) > len(root):
            out[key] = value[len(root) :]
        elif isinstance(value, str) and value == cwd.rstrip("/"):
            out[key] = "."
    return out
