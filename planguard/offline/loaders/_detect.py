"""Content sniffing: which format a file is, decided from what is in it rather than from its name.

JSON Lines are recognised from their first records (a line format is settled by line 1 in practice; up
to :data:`_SNIFF_LINES` lines are tried so a corrupt first line does not hide the rest). A JSON document
is parsed whole, because its distinguishing keys (``trajectory``, ``messages``, ``info``...) may sit
megabytes in; the parsed document is handed on so it is never parsed twice.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...documents import DocumentError, decode_utf8, loads_yaml
from ._base import LoadError, type_name
from ._json import loads
from .agentdojo import is_agentdojo_run
from .generic import is_generic_record
from .opencode import is_opencode_export
from .tau2_bench import is_tau2_results
from .tau_bench import is_tau_bench_results

__all__ = [
    "FAMILY",
    "FORMATS",
    "LINE_FORMATS",
    "STORE_HEADER_TYPE",
    "Sniff",
    "classify_document",
    "classify_record",
    "json_problem",
    "sniff",
]

#: Every format a loader exists for, in the order they are documented.
FORMATS: tuple[str, ...] = (
    "swe-agent-jsonl",
    "swe-agent-traj",
    "swe-agent-demo",
    "mini-swe-agent",
    "claude-code",
    "openhands",
    "openhands-output",
    "codex",
    "gemini-cli",
    "opencode",
    "opencode-export",
    "tau-bench",
    "tau2-bench",
    "agentdojo",
    "planguard-store",
    "generic",
)
#: Formats read line by line (one record per line, streamed); the others are one JSON/YAML document.
LINE_FORMATS = frozenset(
    {
        "swe-agent-jsonl",
        "claude-code",
        "openhands-output",
        "codex",
        "gemini-cli",
        "planguard-store",
        "generic",
    }
)
#: Formats that are layouts of the same producer: a ``source_format`` override of one accepts the other.
FAMILY: dict[str, str] = {
    **{fmt: fmt for fmt in FORMATS},  # (each other format is a family of its own)
    "swe-agent-traj": "swe-agent",
    "swe-agent-demo": "swe-agent",
    "openhands-output": "openhands",
    "opencode-export": "opencode",
}

_SNIFF_LINES = 20
_HEAD_BYTES = 8192
_CLAUDE_BOOKKEEPING = frozenset({"summary", "file-history-snapshot", "queue-operation"})
# First record of planguard's own session store (planguard.sinks.store.records.HEADER_TYPE); spelled out here
# so that sniffing does not import the store.
STORE_HEADER_TYPE = "planguard.session"
_MISSING: Any = object()
# Line types of a Codex CLI rollout (codex-rs/protocol/src/protocol.rs RolloutItem).
_CODEX_LINE_TYPES = frozenset({"session_meta", "response_item", "turn_context", "event_msg", "compacted"})
# Event kinds of the OpenHands software-agent-sdk (V1) that mark a serialised event list.
_OPENHANDS_V1_KINDS = frozenset(
    {"ActionEvent", "ObservationEvent", "MessageEvent", "SystemPromptEvent", "UserRejectObservation"}
)


@dataclass(slots=True)
class Sniff:
    format: str | None
    #: The parsed document when the file was read as one (JSON or YAML), else ``_MISSING``.
    document: Any
    #: Why ``format`` is ``None`` (for the LoadError or the skip callback).
    reason: str = ""
    #: Set when the document was cut short (a run still being written, a copy that stopped): ``document``
    #: then holds the complete leading events and this error says where the file ends.
    truncated: LoadError | None = None

    @property
    def has_document(self) -> bool:
        return self.document is not _MISSING


def classify_record(obj: Any) -> str | None:
    """The line format one JSONL record belongs to, if any."""
    if not isinstance(obj, dict):
        return None
    if "steps" in obj and ("id" in obj or "run" in obj or ("n_steps" in obj and _has_actions(obj["steps"]))):
        return "swe-agent-jsonl"
    if "history" in obj and ("instance_id" in obj or "test_result" in obj or "instruction" in obj):
        return "openhands-output"
    kind = obj.get("type")
    if kind == STORE_HEADER_TYPE:
        return "planguard-store"
    if isinstance(kind, str) and kind in _CODEX_LINE_TYPES and "payload" in obj:
        return "codex"
    if (
        kind in ("function_call", "local_shell_call", "custom_tool_call")
        and "call_id" in obj
        and "role" not in obj
    ):
        return "codex"  # a rollout from before the {timestamp, type, payload} envelope
    if "sessionId" in obj and "projectHash" in obj and kind is None:
        return "gemini-cli"  # a Gemini CLI chat recording: its metadata line, or the whole record
    if isinstance(kind, str) and (
        "sessionId" in obj or kind in _CLAUDE_BOOKKEEPING or ("uuid" in obj and "message" in obj)
    ):
        return "claude-code"
    if is_generic_record(obj):
        return "generic"
    return None


def _has_actions(steps: Any) -> bool:
    # SWE-agent steps carry their "action"; a labels file's steps (live-labels/dev.jsonl) do not.
    return isinstance(steps, list) and any(isinstance(step, dict) and "action" in step for step in steps[:4])


def classify_document(obj: Any) -> str | None:
    """The document format of a parsed JSON/YAML file, if any."""
    if isinstance(obj, dict):
        record = classify_record(obj)
        if record is not None:
            return record
        if isinstance(obj.get("trajectory"), list):
            return "swe-agent-traj"
        if is_tau2_results(obj):
            return "tau2-bench"
        if is_agentdojo_run(obj):
            return "agentdojo"
        if isinstance(obj.get("id"), str) and obj["id"].startswith("ses_") and "projectID" in obj:
            return "opencode"  # one session's info file in OpenCode's storage
        if is_opencode_export(obj):
            return "opencode-export"
        if isinstance(obj.get("messages"), list) and ("info" in obj or "trajectory_format" in obj):
            return "mini-swe-agent"
        history = obj.get("history")
        if isinstance(history, list) and any(isinstance(m, dict) and "role" in m for m in history[:8]):
            return "swe-agent-demo"
        return None
    if isinstance(obj, list):
        sample = [item for item in obj[:16] if isinstance(item, dict)]
        if not sample:
            return None
        if is_tau_bench_results(obj):
            return "tau-bench"
        if all("role" in item for item in sample):
            return "mini-swe-agent"
        if any(
            ("action" in item or "observation" in item) and ("source" in item or "timestamp" in item)
            for item in sample
        ) or any(
            item.get("kind") in _OPENHANDS_V1_KINDS for item in sample if isinstance(item.get("kind"), str)
        ):
            return "openhands"
    return None


def json_problem(exc: BaseException) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at column {exc.colno}"
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 text (byte {exc.start})"
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    return str(exc)


def sniff(path: Path) -> Sniff:
    """Decide the format of ``path``; raises :class:`LoadError` for unreadable, empty or binary files and
    for documents that do not parse. ``Sniff.format`` is ``None`` for well-formed non-trajectories."""
    shown = str(path)
    with path.open("rb") as handle:
        head = handle.read(_HEAD_BYTES)
        if not head.strip():
            raise LoadError(shown, "empty file; expected a trajectory (JSON, JSON Lines or YAML)")
        # JSON Lines first, whatever the head holds: one bad byte or a NUL-filled tail (a write cut short)
        # costs only its own lines, which the format's loader reports by file and line.
        binary = b"\x00" in head or _undecodable(head)
        handle.seek(0)
        first: Any = _MISSING
        first_keys: list[str] = []
        n_lines = 0
        for raw in handle:
            if raw.isspace():
                continue
            n_lines += 1
            if n_lines > _SNIFF_LINES:
                break
            try:
                obj = loads(raw)
            except (ValueError, RecursionError):
                continue
            if n_lines == 1:
                first = obj
                first_keys = sorted(obj)[:8] if isinstance(obj, dict) else []
            found = classify_record(obj)
            if found is not None:
                return Sniff(found, _MISSING)
    if binary:
        raise LoadError(
            shown, "binary (non-UTF-8) content; expected a trajectory as JSON, JSON Lines or YAML"
        )

    if first is not _MISSING and n_lines == 1:
        return Sniff(classify_document(first), first, _not_trajectory(first))
    if isinstance(first, dict):
        return Sniff(
            None, _MISSING, f"JSON Lines whose records are not trajectories (first keys: {first_keys})"
        )
    try:
        document = parse_document(path)
    except LoadError as exc:
        salvaged = _salvage_array(path)
        if salvaged is None:
            raise
        truncated = LoadError(
            exc.path,
            f"{exc.message}; the file ends early: its first {len(salvaged)} complete events "
            "are kept and the run is marked partial",
            exc.line,
        )
        return Sniff(classify_document(salvaged), salvaged, _not_trajectory(salvaged), truncated)
    read = Sniff(classify_document(document), document, _not_trajectory(document))
    if _yaml_cut_mid_line(path):
        # YAML has no closing bracket to miss: a file cut short still parses, one step short or more. Every
        # YAML writer ends its document with a newline; a file that ends mid-line was cut.
        read.truncated = LoadError(
            shown,
            "the file ends mid-line (a YAML document cut short): its events are kept and the run is "
            "marked partial",
        )
    return read


def _yaml_cut_mid_line(path: Path) -> bool:
    """Whether ``path`` is a YAML (not JSON) document whose last line has no newline."""
    with path.open("rb") as handle:
        if handle.read(1024).lstrip()[:1] in (b"{", b"["):
            return False
        handle.seek(0, 2)
        if handle.tell() == 0:
            return False
        handle.seek(-1, 2)
        return handle.read(1) not in (b"\n", b"\r")


def _salvage_array(path: Path) -> list[Any] | None:
    """The complete leading elements of a JSON array that was cut off at the end of the file, or None
    when the file is not such an array (or its problem is elsewhere than at its end)."""
    try:
        text = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    decoder = json.JSONDecoder()
    index = len(text) - len(text.lstrip())
    if not text.startswith("[", index):
        return None
    if text.rstrip().endswith("]"):
        return None  # a complete array: its problem is not a cut at the end
    index += 1
    items: list[Any] = []
    while True:
        while index < len(text) and text[index] in " \t\r\n":
            index += 1
        try:
            item, index = decoder.raw_decode(text, index)
        except (json.JSONDecodeError, RecursionError):
            return items or None
        items.append(item)
        while index < len(text) and text[index] in " \t\r\n":
            index += 1
        if index >= len(text):
            return items
        if text[index] != ",":
            return None
        index += 1


def parse_document(path: Path) -> Any:
    """The whole file as one JSON document, or YAML when it is not JSON-shaped (SWE-agent demos)."""
    data = path.read_bytes()
    try:
        return loads(data)
    except (ValueError, RecursionError) as exc:
        if data.lstrip()[:1] in (b"{", b"["):
            line = exc.lineno if isinstance(exc, json.JSONDecodeError) else None
            raise LoadError(
                str(path),
                f"invalid JSON ({json_problem(exc)}); expected a complete JSON document or JSON Lines",
                line,
            ) from None
        json_error = exc
    return _parse_yaml(path, data, json_error)


def _parse_yaml(path: Path, data: bytes, json_error: BaseException) -> Any:
    try:
        return loads_yaml(decode_utf8(data))  # safe-loaded; aliases and deep nesting refused
    except DocumentError as exc:  # the input is untrusted
        raise LoadError(
            str(path),
            f"neither JSON ({json_problem(json_error)}) nor YAML ({exc.problem}); "
            "expected a trajectory as JSON, JSON Lines or YAML",
            exc.line,
        ) from None


def _undecodable(head: bytes) -> bool:
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A multi-byte character cut by the read boundary is not a sign of binary content.
        return not (exc.reason == "unexpected end of data" and exc.start >= len(head) - 3)
    return False


def _not_trajectory(document: Any) -> str:
    if isinstance(document, dict):
        return f"a JSON/YAML object with keys {sorted(map(str, document))[:8]} that no loader recognises"
    if isinstance(document, list):
        return f"an array of {len(document)} items that are neither chat messages nor OpenHands events"
    return f"a bare {type_name(document)}, not a trajectory object"
