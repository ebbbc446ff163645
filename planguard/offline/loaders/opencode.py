"""OpenCode's session storage (``~/.local/share/opencode/storage/``), read as a directory.

The layout is sst/opencode's JSON storage (``packages/opencode/src/storage``, shapes from
``packages/opencode/src/session/message-v2.ts``)::

    storage/session/<projectID>/<sessionID>.json   {id, projectID, directory, title, version, time, parentID?}
    storage/message/<sessionID>/<messageID>.json   {id, sessionID, role, time: {created}, modelID, ...}
    storage/part/<messageID>/<partID>.json         {id, sessionID, messageID, type, ...}

A ``tool`` part is ``{type: "tool", callID, tool, state}``, ``state`` being ``pending`` (``input``),
``running``, ``completed`` (``input``, ``output``, ``title``, ``metadata``, ``time: {start, end}``) or
``error`` (``input``, ``error``, ``time``). Ids are time-ordered, so messages and parts are read in id
order. Each session (sub-agent sessions, which carry ``parentID``, included) is one run.

A call the user refused at the permission prompt (``error``: "The user rejected permission to use this
specific tool call", opencode's ``PermissionNext.RejectedError``), one a rule forbids ("The user has
specified a rule which prevents you from using this specific tool call"), one still ``pending`` when the
session ended (it never ran) and one answered with planguard's own reason text (a plugin denial) are
denials, not steps.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from planguard.events import ASSISTANT, USER, ToolEvent

from ._base import LoadError, Trajectory, as_dict, as_str, checked_run, new_meta, parse_time, type_name
from ._json import loads
from .claude_code import PLANGUARD_REASON_PREFIXES

__all__ = [
    "is_opencode_db",
    "is_opencode_export",
    "load_opencode_export",
    "is_opencode_storage",
    "load_opencode_db",
    "load_opencode_session_file",
    "load_opencode_storage",
]

_REFUSED = (
    "The user rejected permission to use this specific tool call",
    "The user has specified a rule which prevents you from using this specific tool call",
)
#: Files read per session at most (messages and parts): a hostile tree cannot make a run unbounded.
_MAX_FILES = 200_000


def is_opencode_storage(directory: Path) -> Path | None:
    """The storage root at or directly under ``directory`` (``storage/``), or None."""
    for root in (directory, directory / "storage"):
        try:
            if (root / "session").is_dir() and (root / "message").is_dir() and (root / "part").is_dir():
                return root
        except OSError:
            return None
    return None


def load_opencode_storage(root: Path) -> Iterator[Trajectory | LoadError]:
    """Every session under ``root`` (a storage directory), one run each, in session-id order."""
    sessions = sorted(_json_files(root / "session", depth=2), key=lambda p: p.name)
    if not sessions:
        yield LoadError(
            str(root), "OpenCode storage without session files; expected session/<project>/<id>.json"
        )
        return
    for session_file in sessions:
        try:
            info = _read(session_file)
        except LoadError as exc:
            yield exc
            continue
        session_id = as_str(info.get("id")) or session_file.stem
        try:
            yield from _run(session_id, info, str(session_file), _stored_messages(root, session_id))
        except LoadError as exc:
            yield exc


def load_opencode_session_file(path: Path, info: dict[str, Any]) -> Iterator[Trajectory | LoadError]:
    """One session, given by its info file inside a storage tree (``storage/session/<project>/<id>.json``)."""
    root = path.parent.parent.parent
    if is_opencode_storage(root) != root:
        yield LoadError(
            str(path),
            "an OpenCode session file outside its storage tree; expected storage/session/<project>/<id>.json "
            "beside storage/message and storage/part",
        )
        return
    try:
        session_id = as_str(info.get("id")) or path.stem
        yield from _run(session_id, info, str(path), _stored_messages(root, session_id))
    except LoadError as exc:
        yield exc


def is_opencode_export(document: Any) -> bool:
    """``opencode export <sessionID>``'s output: ``{info: <session>, messages: [{info, parts}]}``."""
    if not isinstance(document, dict):
        return False
    info, messages = document.get("info"), document.get("messages")
    return (
        isinstance(info, dict)
        and str(info.get("id", "")).startswith("ses_")
        and isinstance(messages, list)
        and all(isinstance(m, dict) and "info" in m and "parts" in m for m in messages[:8])
    )


def load_opencode_export(document: Any, path: str) -> Iterator[Trajectory | LoadError]:
    """One session as ``opencode export`` writes it (packages/opencode/src/cli/cmd/export.ts: the session's
    info and each message's info with its parts, the shapes of the JSON storage)."""
    info = as_dict(as_dict(document).get("info"))
    session_id = as_str(info.get("id")) or "opencode-export"
    messages = [
        (as_dict(m.get("info")), [p for p in m.get("parts") or () if isinstance(p, dict)])
        for m in as_dict(document).get("messages") or ()
        if isinstance(m, dict)
    ]
    yield from _run(session_id, info, path, messages)


def _stored_messages(
    root: Path, session_id: str
) -> Iterator[tuple[dict[str, Any], list[dict[str, Any]]] | LoadError]:
    """A session's messages with their parts, from the JSON storage tree, in id order."""
    messages = sorted(_json_files(root / "message" / session_id, depth=1), key=lambda p: p.name)
    for message_file in messages[:_MAX_FILES]:
        try:
            message = _read(message_file)
        except LoadError as exc:
            yield exc
            continue
        message_id = as_str(message.get("id")) or message_file.stem
        parts: list[dict[str, Any]] = []
        for part_file in sorted(_json_files(root / "part" / message_id, depth=1), key=lambda p: p.name):
            try:
                parts.append(_read(part_file))
            except LoadError as exc:
                yield exc
        yield message, parts


def _run(
    session_id: str,
    info: dict[str, Any],
    source: str,
    messages: Iterable[tuple[dict[str, Any], list[dict[str, Any]]] | LoadError],
) -> Iterator[Trajectory | LoadError]:
    run = Trajectory(id=session_id, source=source, format="opencode")
    events = run.events
    task: str | None = None
    final_text: str | None = None
    model: str | None = None
    n_assistant = 0
    raw_parts: list[dict[str, Any]] = []
    for item in messages:
        if isinstance(item, LoadError):
            yield item
            continue
        message, parts = item
        role = message.get("role")
        if role == "assistant":
            n_assistant += 1
            model = as_str(message.get("modelID")) or model
        for part in parts:
            kind = part.get("type")
            if kind == "text" and isinstance(part.get("text"), str) and not part.get("synthetic"):
                if role in (USER, ASSISTANT):
                    run.add_message(role, part["text"], parse_time(as_dict(part.get("time")).get("start")))
                if role == "user" and task is None and part["text"].strip():
                    task = part["text"]
                elif role == "assistant" and part["text"].strip():
                    final_text = part["text"]
            elif kind == "tool":
                raw_parts.append(part)
                event = _tool_event(part)
                if event is not None:
                    events.append(event)
    meta = new_meta(
        model=model,
        task=task,
        final_text=final_text,
        n_model_calls=n_assistant or None,
        session_id=session_id,
        title=as_str(info.get("title")),
        cwd=as_str(info.get("directory")),
        opencode_version=as_str(info.get("version")),
        parent_session_id=as_str(info.get("parentID")),
        unanswered_tool_calls=sum(1 for e in events if e.result is None and e.blocked is None),
    )
    run.meta = meta
    yield from checked_run(run, raw_parts, source, None)


# --------------------------------------------------------------------------- opencode.db (SQLite)

_SQLITE_MAGIC = b"SQLite format 3\x00"


def is_opencode_db(path: Path) -> bool:
    """An OpenCode database (``~/.local/share/opencode/opencode.db``, where releases since 1.1x keep
    sessions): an SQLite file with ``session``, ``message`` and ``part`` tables."""
    try:
        with open(path, "rb") as f:
            if f.read(16) != _SQLITE_MAGIC:
                return False
    except OSError:
        return False
    try:
        with contextlib.closing(_connect(path)) as db:
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.Error:
        return False
    return {"session", "message", "part"} <= tables


def load_opencode_db(path: Path) -> Iterator[Trajectory | LoadError]:
    """Every session in an OpenCode database, one run each, in session-id order. The ``data`` column of a
    ``message``/``part`` row is the object the JSON storage keeps in its file, without the ids (columns)."""
    try:
        with contextlib.closing(_connect(path)) as db:
            sessions = db.execute(
                "SELECT id, directory, title, version, parent_id FROM session ORDER BY id"
            ).fetchall()
            for row in sessions:
                # The session as its storage file spells it (parent_id is parentID there).
                info = dict(zip(("id", "directory", "title", "version", "parentID"), row, strict=True))
                sid = info["id"]
                messages = list(_db_messages(db, str(path), sid))
                yield from _run(sid, info, f"{path}#{sid}", messages)
    except sqlite3.Error as exc:
        yield LoadError(
            str(path), f"OpenCode database not readable ({exc}); expected opencode.db of opencode 1.x"
        )


def _connect(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True, timeout=5.0)


def _db_messages(
    db: sqlite3.Connection, source: str, session_id: str
) -> Iterator[tuple[dict[str, Any], list[dict[str, Any]]] | LoadError]:
    rows = db.execute(
        "SELECT id, data FROM message WHERE session_id = ? ORDER BY id LIMIT ?", (session_id, _MAX_FILES)
    ).fetchall()
    for message_id, data in rows:
        try:
            message = {**_row_object(data, f"{source} message {message_id}"), "id": message_id}
        except LoadError as exc:
            yield exc
            continue
        parts: list[dict[str, Any]] = []
        for part_id, part_data in db.execute(
            "SELECT id, data FROM part WHERE message_id = ? ORDER BY id LIMIT ?", (message_id, _MAX_FILES)
        ):
            try:
                parts.append({**_row_object(part_data, f"{source} part {part_id}"), "id": part_id})
            except LoadError as exc:
                yield exc
        yield message, parts


def _row_object(data: Any, where: str) -> dict[str, Any]:
    try:
        value = loads(data if isinstance(data, str) else bytes(data).decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise LoadError(where, f"data is not JSON ({exc}); expected a JSON object") from None
    if not isinstance(value, dict):
        raise LoadError(where, f"data is {type_name(value)}; expected a JSON object")
    return value


def _tool_event(part: dict[str, Any]) -> ToolEvent | None:
    name = as_str(part.get("tool"))
    if not name:
        return None
    state = as_dict(part.get("state"))
    status = as_str(state.get("status"))
    arguments = state.get("input")
    times = as_dict(state.get("time"))
    event = ToolEvent(
        tool=name,
        arguments=arguments if isinstance(arguments, dict) else {},
        call_id=as_str(part.get("callID")),
        start_time=parse_time(times.get("start")),
        end_time=parse_time(times.get("end")),
        metadata={"opencode_status": status, "title": as_str(state.get("title"))},
    )
    if status == "completed":
        event.result = as_str(state.get("output")) or ""
        exit_code = as_dict(state.get("metadata")).get("exit")
        if isinstance(exit_code, int) and not isinstance(exit_code, bool):
            event.exit_code = exit_code
    elif status == "error":
        error = as_str(state.get("error")) or ""
        event.result = error
        event.is_error = True
        text = error.strip()
        if any(prefix in text[:200] for prefix in _REFUSED):
            event.blocked = text
        elif _strip_error(text).startswith(PLANGUARD_REASON_PREFIXES):
            event.blocked = _strip_error(text)
    elif status == "pending":
        event.blocked = "never ran (still pending when the session was saved)"
    return event


def _strip_error(text: str) -> str:
    # A plugin's thrown Error is recorded as "Error: <message>".
    return text[len("Error: ") :] if text.startswith("Error: ") else text


def _json_files(directory: Path, depth: int) -> list[Path]:
    """``*.json`` files ``depth`` levels under ``directory`` (1: directly in it), hidden entries skipped."""
    found: list[Path] = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return found
    for entry in entries:
        if entry.name.startswith("."):
            continue
        try:
            if depth > 1 and entry.is_dir(follow_symlinks=False):
                found.extend(_json_files(Path(entry.path), depth - 1))
            elif depth == 1 and entry.is_file() and entry.name.endswith(".json"):
                found.append(Path(entry.path))
        except OSError:
            continue
        if len(found) >= _MAX_FILES:
            break
    return found


def _read(path: Path) -> dict[str, Any]:
    try:
        value = loads(path.read_bytes())
    except OSError as exc:
        raise LoadError(str(path), f"cannot read file ({exc.strerror or exc})") from None
    except (ValueError, RecursionError) as exc:
        raise LoadError(str(path), f"invalid JSON ({exc}); expected an OpenCode storage object") from None
    if not isinstance(value, dict):
        raise LoadError(str(path), f"expected a JSON object, got {type_name(value)}")
    return value
