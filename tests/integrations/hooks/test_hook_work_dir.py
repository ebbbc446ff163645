"""The run's working directory reaches the live phase rules on every path a call takes: each hook
dialect's payload through the hook service (``answer_text`` -> ``HookRunner`` -> session -> ``LiveRules``),
and a CLI's own session file replayed offline with the metadata its loader read.

A repository under /tmp is the case that matters: without its working directory, ``/tmp/<repo>/calc.py``
is a scratch file (PHASE_RULES §4), so patching it reads as a reproduction (R) instead of a patch (P).
That is how the Gemini CLI and OpenCode e2e runs once replayed to ``NRRRR`` against a live ``NRRPV``.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("planguard_hooks")
from planguard_hooks.dialects import dialect
from planguard_hooks.service import HookRunner, answer_text, read_summary
from planguard_hooks.state import SessionStore

from planguard.guard import Guard
from planguard.offline.loaders import Trajectory, iter_trajectories
from planguard.session import replay_events

CONFIG = "plan: plan\nrules: live\ntelemetry: {enabled: false}\nstore: {enabled: false}\n"


@pytest.fixture
def repo() -> Iterator[Path]:
    # Not under pytest's tmp_path: its "test_<name>" folders make every path "test-ish" for the rules.
    tmp = Path(tempfile.mkdtemp(prefix="pgwd-"))
    work = tmp / "work"
    work.mkdir()
    (work / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (tmp / "planguard.yaml").write_text(CONFIG)
    try:
        yield work
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# Each CLI's hook payloads for: read calc.py, then patch it, both by its absolute path.
Payloads = Callable[[Path], list[dict[str, Any]]]


def _claude_code(work: Path) -> list[dict[str, Any]]:
    calc = str(work / "calc.py")
    base = {"session_id": "s-claude", "cwd": str(work), "transcript_path": "/x.jsonl"}
    edit = {"file_path": calc, "old_string": "a - b", "new_string": "a + b"}
    return [
        {**base, "hook_event_name": "PreToolUse", "tool_name": "Read", "tool_input": {"file_path": calc}},
        {**base, "hook_event_name": "PostToolUse", "tool_name": "Read", "tool_input": {"file_path": calc}},
        {**base, "hook_event_name": "PreToolUse", "tool_name": "Edit", "tool_input": edit},
        {**base, "hook_event_name": "PostToolUse", "tool_name": "Edit", "tool_input": edit},
    ]


def _with_ids(payloads: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**p, "tool_use_id": f"call_{i // 2}"} for i, p in enumerate(payloads)]


def _codex(work: Path) -> list[dict[str, Any]]:
    base = {"session_id": "s-codex", "cwd": str(work), "turn_id": "t1"}
    read = {"command": f"cat {work / 'calc.py'}"}
    patch = {"command": f"sed -i 's/a - b/a + b/' {work / 'calc.py'}"}
    return _with_ids(
        [
            {**base, "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": read},
            {**base, "hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_input": read},
            {**base, "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": patch},
            {**base, "hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_input": patch},
        ]
    )


def _gemini(work: Path) -> list[dict[str, Any]]:
    calc = str(work / "calc.py")
    base = {"session_id": "s-gemini", "cwd": str(work), "transcript_path": "/x.json"}
    replace = {"file_path": calc, "old_string": "a - b", "new_string": "a + b", "instruction": "fix"}
    done = {"tool_response": {"llmContent": "ok", "returnDisplay": "ok", "error": None}}
    return [  # Gemini CLI's hooks carry no call id
        {
            **base,
            "hook_event_name": "BeforeTool",
            "tool_name": "read_file",
            "tool_input": {"file_path": calc},
        },
        {
            **base,
            **done,
            "hook_event_name": "AfterTool",
            "tool_name": "read_file",
            "tool_input": {"file_path": calc},
        },
        {**base, "hook_event_name": "BeforeTool", "tool_name": "replace", "tool_input": replace},
        {**base, **done, "hook_event_name": "AfterTool", "tool_name": "replace", "tool_input": replace},
    ]


def _opencode(work: Path) -> list[dict[str, Any]]:
    calc = str(work / "calc.py")
    base = {"session_id": "s-opencode", "cwd": str(work)}  # what planguard's plugin sends
    edit = {"filePath": calc, "oldString": "a - b", "newString": "a + b"}
    return _with_ids(
        [
            {**base, "hook_event_name": "PreToolUse", "tool_name": "read", "tool_input": {"filePath": calc}},
            {
                **base,
                "hook_event_name": "PostToolUse",
                "tool_name": "read",
                "tool_input": {"filePath": calc},
                "tool_response": "1: def add(a, b):",
            },
            {**base, "hook_event_name": "PreToolUse", "tool_name": "edit", "tool_input": edit},
            {
                **base,
                "hook_event_name": "PostToolUse",
                "tool_name": "edit",
                "tool_input": edit,
                "tool_response": "ok",
            },
        ]
    )


@pytest.mark.parametrize(
    ("name", "payloads"),
    [("claude-code", _claude_code), ("codex", _codex), ("gemini", _gemini), ("opencode", _opencode)],
)
def test_every_dialect_gives_the_live_rules_the_work_dir(
    repo: Path, name: str, payloads: Payloads, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = str(repo.parent / "planguard.yaml")
    store = SessionStore(str(repo.parent / "state"))
    runner = HookRunner(config, store)  # as in a hook process: the session is restored from disk per call
    rules_class = type(runner.guard.pipeline.rules)
    seen: list[tuple[Any, Any]] = []
    classify = rules_class.classify

    def spy(self: Any, event: Any, state: Any, *call: Any) -> Any:  # call: the session's one reading
        seen.append((event.metadata.get("cwd"), state.root))
        return classify(self, event, state, *call)

    # On the class: the rules instance is shared by every guard (get_rules), and undoing a patch of an
    # instance leaves the bound method behind as an instance attribute, which a later test's patch of
    # the class cannot reach.
    monkeypatch.setattr(rules_class, "classify", spy)
    try:
        sent = payloads(repo)
        for payload in sent:
            answer_text(json.dumps(payload), store, lambda: runner, None, dialect(name))
    finally:
        runner.close()
    # Each call's own directory, and the session's (for a call that names none), are the repository.
    assert seen and all(pair == (str(repo), str(repo)) for pair in seen), seen
    summary = read_summary(sent[0]["session_id"], config, store.directory)
    assert summary is not None and summary["letters"] == "NP", summary
    assert not (Path(store.directory) / "hook-errors.log").exists()


# --------------------------------------------------------------------------- offline: Gemini CLI


def _gemini_recording(home: Path, work: Path, marker: str) -> Path:
    """A gemini-cli 0.61 chat log (``.jsonl``) in its project folder, whose ``.project_root`` holds
    ``marker``; no ``directories`` in the record (only ``/directory add`` writes them)."""
    project = home / ".gemini" / "tmp" / "work"
    chats = project / "chats"
    chats.mkdir(parents=True)
    (project / ".project_root").write_text(marker)
    calc = str(work / "calc.py")

    def call(n: int, name: str, args: dict[str, Any]) -> dict[str, Any]:
        response = {"functionResponse": {"id": f"c{n}", "name": name, "response": {"output": "ok"}}}
        return {"id": f"c{n}", "name": name, "args": args, "result": [response], "status": "success"}

    records = [
        {
            "sessionId": "4a1b2c3d-0000-4000-8000-000000000001",
            "projectHash": hashlib.sha256(str(work).encode()).hexdigest(),
            "startTime": "2026-12-01T00:00:00.000Z",
            "lastUpdated": "2026-12-01T00:00:00.000Z",
            "kind": "main",
        },
        {
            "id": "u1",
            "timestamp": "2026-12-01T00:00:01.000Z",
            "type": "user",
            "content": [{"text": "Fix it"}],
        },
        {
            "id": "g1",
            "timestamp": "2026-12-01T00:00:02.000Z",
            "type": "gemini",
            "content": "",
            "model": "gemini-2.5-pro",
            "toolCalls": [
                call(1, "read_file", {"file_path": calc}),
                call(2, "replace", {"file_path": calc, "old_string": "a - b", "new_string": "a + b"}),
            ],
        },
    ]
    path = chats / "session-2026-12-01T00-00-4a1b2c3d.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@pytest.mark.parametrize(("owner", "letters"), [("work", "NP"), ("other", "NR")])
def test_gemini_recording_replays_with_its_project_directory(repo: Path, owner: str, letters: str) -> None:
    # The marker counts only when it is this record's project (its SHA-256 is the projectHash).
    marker = str(repo) if owner == "work" else str(repo.parent / "other")
    path = _gemini_recording(repo.parent / "home", repo, marker + "\n")
    (trajectory,) = [t for t in iter_trajectories([path]) if isinstance(t, Trajectory)]
    assert trajectory.meta["cwd"] == (str(repo) if owner == "work" else None)
    guard = Guard.from_file(repo.parent / "planguard.yaml")
    try:
        replayed = replay_events(trajectory.events, guard.pipeline, trajectory.id, trajectory.meta)
        assert replayed.summary().letters == letters
    finally:
        guard.shutdown()
