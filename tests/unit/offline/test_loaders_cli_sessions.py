"""Session files of the other coding CLIs (issue #20.2): Codex CLI rollouts, Gemini CLI chat recordings
and OpenCode's session storage, each detected from content, built here from the shapes their sources
define (cited in each loader's docstring), and replayed through the one tool vocabulary."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from planguard.actions import ActionType, classify_action
from planguard.offline.loaders import LoadError, Trajectory, detect_format, iter_trajectories
from planguard.session import Pipeline

PATCH = "*** Begin Patch\n*** Update File: src/calc.py\n@@\n-    return a / b\n+    return a\n*** End Patch"
REFUSED = (
    "Error: The user rejected permission to use this specific tool call. You may try again with "
    "different parameters."
)
GATE = "PLANGUARD GATE (validate-before-submit): submit is not allowed yet. First run the tests."


def only_run(path: Path) -> Trajectory:
    items = list(iter_trajectories([path]))
    runs = [i for i in items if isinstance(i, Trajectory)]
    assert [i for i in items if isinstance(i, LoadError)] == [] and len(runs) == 1, items
    return runs[0]


def write_jsonl(path: Path, records: list[Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def n_steps(run: Trajectory) -> int:
    session = Pipeline().session(run.id)
    for event in run.events:
        session.observe(event)
    return session.end().n_steps


# ------------------------------------------------------------------------------------------------
# Codex CLI
# ------------------------------------------------------------------------------------------------


def rollout_line(kind: str, payload: dict[str, Any], second: int = 0) -> dict[str, Any]:
    return {"timestamp": f"2025-10-29T00:59:{second:02d}.317Z", "type": kind, "payload": payload}


def codex_rollout() -> list[dict[str, Any]]:
    cwd = "/private/tmp/proj"
    return [
        rollout_line(
            "session_meta",
            {
                "id": "019a2d7a-41c4-78b1-b7cc-a45d62a89cd5",
                "timestamp": "2025-10-29T00:59:38.308Z",
                "cwd": cwd,
                "originator": "codex_cli_rs",
                "cli_version": "0.65.0",
                "instructions": None,
                "source": "cli",
                "git": {},
            },
        ),
        rollout_line(
            "response_item",
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "<environment_context>x"}],
            },
        ),
        rollout_line(
            "response_item",
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "fix divide in calc.py"}],
            },
        ),
        rollout_line(
            "event_msg", {"type": "user_message", "message": "fix divide in calc.py", "kind": "plain"}
        ),
        rollout_line("turn_context", {"cwd": cwd, "approval_policy": "on-request", "model": "gpt-5-codex"}),
        rollout_line("response_item", {"type": "reasoning", "summary": [], "encrypted_content": "gAAA"}),
        rollout_line(
            "response_item",
            {
                "type": "function_call",
                "name": "shell",
                "arguments": json.dumps({"command": ["bash", "-lc", "grep -rn divide src"], "workdir": cwd}),
                "call_id": "call_1",
            },
            1,
        ),
        rollout_line(
            "response_item",
            {
                "type": "function_call_output",
                "call_id": "call_1",
                "output": json.dumps({"output": "src/calc.py:3:def divide", "metadata": {"exit_code": 0}}),
            },
            2,
        ),
        rollout_line(
            "response_item",
            {
                "type": "custom_tool_call",
                "status": "completed",
                "call_id": "call_2",
                "name": "apply_patch",
                "input": "*** Begin Patch\n*** Update File: src/calc.py\n@@\n-    return a / b\n"
                "+    return a / b if b else 0\n*** End Patch",
            },
            3,
        ),
        rollout_line(
            "response_item",
            {"type": "custom_tool_call_output", "call_id": "call_2", "output": "patch rejected by user"},
            4,
        ),
        rollout_line(
            "response_item",
            {
                "type": "function_call",
                "name": "shell_command",
                "arguments": json.dumps({"command": "python -m pytest tests", "workdir": cwd}),
                "call_id": "call_3",
            },
            5,
        ),
        rollout_line(
            "response_item",
            {
                "type": "function_call_output",
                "call_id": "call_3",
                "output": "Exit code: 1\nWall time: 0.4 seconds\nOutput:\n1 failed",
            },
            6,
        ),
        rollout_line(
            "response_item",
            {
                "type": "local_shell_call",
                "call_id": "call_4",
                "status": "completed",
                "action": {"type": "exec", "command": ["git", "diff"], "working_directory": cwd},
            },
            7,
        ),
        rollout_line(
            "response_item", {"type": "function_call_output", "call_id": "call_4", "output": GATE}, 8
        ),
        rollout_line(
            "response_item",
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Tests still fail."}],
            },
            9,
        ),
    ]


def test_codex_rollout_loads_calls_results_and_denials(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "sessions/2025/10/29/rollout-2025-10-29T00-59-38-019a2d7a.jsonl", codex_rollout()
    )
    assert detect_format(path) == "codex"
    run = only_run(path)
    assert run.format == "codex" and run.id == "019a2d7a-41c4-78b1-b7cc-a45d62a89cd5"
    assert [e.tool for e in run.events] == ["shell", "apply_patch", "shell_command", "local_shell"]
    shell, patch, test, diff = run.events
    assert shell.arguments == {
        "command": ["bash", "-lc", "grep -rn divide src"],
        "workdir": "/private/tmp/proj",
    }
    assert (shell.result, shell.exit_code) == ("src/calc.py:3:def divide", 0)
    assert patch.arguments["input"].startswith("*** Begin Patch")
    assert patch.blocked == "patch rejected by user (declined at the approval prompt)"
    assert test.exit_code == 1 and test.blocked is None
    assert diff.arguments["command"] == ["git", "diff"] and diff.blocked == GATE
    meta = run.meta
    assert (meta["model"], meta["task"], meta["final_text"]) == (
        "gpt-5-codex",
        "fix divide in calc.py",
        "Tests still fail.",
    )
    assert meta["codex_cli_version"] == "0.65.0" and meta["cwd"] == "/private/tmp/proj"
    # The conversation's turns, where they came among the calls (issue 30): the task first, the answer last.
    turns = [(at, m.role, m.text) for at, m in run.messages]
    assert turns[0][:2] == (0, "user") and turns[-1] == (4, "assistant", "Tests still fail.")
    # The one tool vocabulary classifies them: a search, a patch attempt, a test run.
    assert classify_action(shell).type is ActionType.SEARCH
    assert classify_action(patch).is_source_write
    assert classify_action(test).is_validation
    assert n_steps(run) == 2


def test_codex_rollout_before_the_envelope(tmp_path: Path) -> None:
    lines = [
        {"id": "0c5d3e7a-legacy", "timestamp": "2025-05-01T10:00:00.000Z", "instructions": None},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "list files"}]},
        {"record_type": "state"},
        {"type": "function_call", "name": "shell", "arguments": '{"command": ["ls"]}', "call_id": "c1"},
        {
            "type": "function_call_output",
            "call_id": "c1",
            "output": '{"output": "a.py", "metadata": {"exit_code": 0}}',
        },
    ]
    path = write_jsonl(tmp_path / "rollout-2025-05-01-0c5d3e7a.jsonl", lines)
    assert detect_format(path) == "codex"
    run = only_run(path)
    assert run.id == "0c5d3e7a-legacy" and run.meta["task"] == "list files"
    assert [(e.tool, e.result, e.exit_code) for e in run.events] == [("shell", "a.py", 0)]


def test_codex_rollout_cut_short_is_partial(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "rollout-x.jsonl", codex_rollout()[:8])
    path.write_text(path.read_text() + '{"timestamp": "2025-10-29T00:59:03.000Z", "type": "response_it')
    items = list(iter_trajectories([path]))
    assert isinstance(items[0], LoadError) and items[0].line == 9
    run = items[1]
    assert isinstance(run, Trajectory) and run.meta["partial"] is True and len(run.events) == 1


# ------------------------------------------------------------------------------------------------
# Gemini CLI
# ------------------------------------------------------------------------------------------------


def gemini_messages() -> list[dict[str, Any]]:
    def call(i: int, name: str, args: dict[str, Any], output: str, status: str = "success") -> dict[str, Any]:
        return {
            "id": f"{name}-{i}",
            "name": name,
            "args": args,
            "result": [
                {"functionResponse": {"id": f"{name}-{i}", "name": name, "response": {"output": output}}}
            ],
            "status": status,
            "timestamp": f"2025-09-10T18:13:2{i}.000Z",
            "displayName": name,
            "renderOutputAsMarkdown": False,
        }

    return [
        {
            "id": "m1",
            "timestamp": "2025-09-10T18:13:21.000Z",
            "type": "user",
            "content": "fix divide in calc.py",
        },
        {
            "id": "m2",
            "timestamp": "2025-09-10T18:13:22.000Z",
            "type": "gemini",
            "content": "Looking.",
            "model": "gemini-2.5-pro",
            "toolCalls": [
                call(1, "search_file_content", {"pattern": "def divide"}, "Found 1 match in src/calc.py"),
                call(2, "read_file", {"absolute_path": "/home/u/proj/src/calc.py"}, "def divide(a, b):"),
            ],
        },
        {
            "id": "m3",
            "timestamp": "2025-09-10T18:13:30.000Z",
            "type": "gemini",
            "content": "",
            "model": "gemini-2.5-pro",
            "toolCalls": [
                call(
                    3,
                    "replace",
                    {"file_path": "/home/u/proj/src/calc.py", "old_string": "a", "new_string": "b"},
                    "",
                    "cancelled",
                ),
                call(
                    4,
                    "run_shell_command",
                    {"command": "python -m pytest tests"},
                    "Command: python -m pytest tests\nDirectory: (root)\nOutput: 1 failed\nError: (none)\n"
                    "Exit Code: 1\nSignal: (none)",
                ),
                call(5, "write_file", {"file_path": "/home/u/proj/DONE", "content": "x"}, GATE, "error"),
            ],
        },
    ]


def test_gemini_cli_json_recording(tmp_path: Path) -> None:
    record = {
        "sessionId": "8b2f1c3e-1111-2222-3333-444455556666",
        "projectHash": "ab" * 32,
        "startTime": "2025-09-10T18:13:00.000Z",
        "lastUpdated": "2025-09-10T18:20:00.000Z",
        "messages": gemini_messages(),
    }
    path = tmp_path / ".gemini/tmp/abab/chats/session-2025-09-10T18-13-8b2f1c3e.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(record, indent=2))
    assert detect_format(path) == "gemini-cli"
    run = only_run(path)
    assert run.id == "8b2f1c3e-1111-2222-3333-444455556666"
    assert [e.tool for e in run.events] == [
        "search_file_content",
        "read_file",
        "replace",
        "run_shell_command",
        "write_file",
    ]
    assert run.events[0].result == "Found 1 match in src/calc.py"
    assert run.events[2].blocked is not None  # cancelled: never ran
    assert run.events[3].exit_code == 1
    assert run.events[4].blocked == GATE and run.events[4].is_error
    assert (run.meta["model"], run.meta["task"], run.meta["n_model_calls"]) == (
        "gemini-2.5-pro",
        "fix divide in calc.py",
        2,
    )
    assert run.messages[0][0] == 0 and run.messages[0][1].text == "fix divide in calc.py"
    assert n_steps(run) == 3


def test_gemini_cli_jsonl_upsert_log(tmp_path: Path) -> None:
    messages = gemini_messages()
    first_write = {
        **messages[1],
        "toolCalls": [{**messages[1]["toolCalls"][0], "status": "executing", "result": None}],
    }
    lines = [
        {
            "sessionId": "s-jsonl",
            "projectHash": "cd" * 32,
            "startTime": "2025-09-10T18:13:00Z",
            "directories": ["/home/u/proj"],
        },
        messages[0],
        first_write,  # the same message written again below, in full, once its calls finished
        messages[1],
        {"$set": {"summary": "fixing divide"}},
        messages[2],
        {"$rewindTo": "m3"},
    ]
    path = write_jsonl(tmp_path / "chats/session-2025-09-10T18-13-s-jsonl.jsonl", lines)
    assert detect_format(path) == "gemini-cli"
    run = only_run(path)
    assert run.id == "s-jsonl" and len(run.events) == 5  # the rewound calls still ran
    assert run.events[0].result == "Found 1 match in src/calc.py"  # the last write of m2 wins
    assert run.meta["cwd"] == "/home/u/proj" and run.meta["summary"] == "fixing divide"
    assert run.meta["n_rewinds"] == 1
    assert classify_action(run.events[3]).is_validation


# ------------------------------------------------------------------------------------------------
# OpenCode
# ------------------------------------------------------------------------------------------------


def opencode_storage(root: Path) -> Path:
    storage = root / ".local/share/opencode/storage"

    def put(relative: str, value: dict[str, Any]) -> None:
        path = storage / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value))

    sid = "ses_469cf929cffeBICghRNeI7BWy6"
    put(
        f"session/4b0ea68d7af9a6031a7ffda7ad66e0cb83315750/{sid}.json",
        {
            "id": sid,
            "projectID": "4b0e",
            "directory": "/home/u/proj",
            "title": "Fix divide",
            "version": "0.15.8",
            "time": {"created": 1760000000000, "updated": 1760000100000},
        },
    )
    put(
        f"message/{sid}/msg_a001.json",
        {"id": "msg_a001", "sessionID": sid, "role": "user", "time": {"created": 1760000000000}},
    )
    put(
        "part/msg_a001/prt_a001.json",
        {"id": "prt_a001", "sessionID": sid, "messageID": "msg_a001", "type": "text", "text": "fix divide"},
    )
    put(
        f"message/{sid}/msg_a002.json",
        {
            "id": "msg_a002",
            "sessionID": sid,
            "role": "assistant",
            "modelID": "claude-sonnet-4",
            "providerID": "anthropic",
            "time": {"created": 1760000001000, "completed": 1760000009000},
        },
    )

    def tool(part_id: str, name: str, state: dict[str, Any]) -> None:
        put(
            f"part/msg_a002/{part_id}.json",
            {
                "id": part_id,
                "sessionID": sid,
                "messageID": "msg_a002",
                "type": "tool",
                "callID": f"call_{part_id}",
                "tool": name,
                "state": state,
            },
        )

    times = {"start": 1760000002000, "end": 1760000003000}
    tool(
        "prt_b001",
        "grep",
        {
            "status": "completed",
            "input": {"pattern": "def divide"},
            "output": "src/calc.py:3",
            "title": "def divide",
            "metadata": {},
            "time": times,
        },
    )
    tool(
        "prt_b002",
        "edit",
        {
            "status": "error",
            "input": {"filePath": "/home/u/proj/src/calc.py"},
            "error": REFUSED,
            "time": times,
        },
    )
    tool(
        "prt_b003",
        "bash",
        {
            "status": "completed",
            "input": {"command": "python -m pytest tests", "description": "run tests"},
            "output": "1 failed",
            "title": "python -m pytest tests",
            "metadata": {"exit": 1},
            "time": times,
        },
    )
    tool("prt_b004", "bash", {"status": "pending", "input": {"command": "git diff"}, "raw": ""})
    put(
        "part/msg_a002/prt_b005.json",
        {"id": "prt_b005", "sessionID": sid, "messageID": "msg_a002", "type": "text", "text": "Tests fail."},
    )
    return storage


def test_opencode_storage_directory(tmp_path: Path) -> None:
    storage = opencode_storage(tmp_path)
    for given in (storage, storage.parent):  # the storage folder, or the data folder holding it
        run = only_run(given)
        assert run.format == "opencode" and run.id == "ses_469cf929cffeBICghRNeI7BWy6"
        assert [e.tool for e in run.events] == ["grep", "edit", "bash", "bash"]
        grep, edit, test, diff = run.events
        assert grep.result == "src/calc.py:3" and grep.duration == 1.0
        assert edit.blocked is not None and "rejected permission" in edit.blocked
        assert test.exit_code == 1 and classify_action(test).is_validation
        assert diff.blocked is not None  # still pending: it never ran
        meta = run.meta
        assert (meta["model"], meta["task"], meta["final_text"]) == (
            "claude-sonnet-4",
            "fix divide",
            "Tests fail.",
        )
        assert meta["opencode_version"] == "0.15.8" and meta["cwd"] == "/home/u/proj"
        assert n_steps(run) == 2


def test_opencode_one_session_file_given_by_name(tmp_path: Path) -> None:
    storage = opencode_storage(tmp_path)
    (session_file,) = (storage / "session").glob("*/*.json")
    assert detect_format(session_file) == "opencode"
    run = only_run(session_file)
    assert run.id == "ses_469cf929cffeBICghRNeI7BWy6" and len(run.events) == 4
    loose = tmp_path / "ses_copy.json"
    loose.write_text(session_file.read_text())
    (error,) = list(iter_trajectories([loose]))
    assert isinstance(error, LoadError) and "outside its storage tree" in error.message


def test_opencode_broken_part_file_is_named_and_the_rest_loads(tmp_path: Path) -> None:
    storage = opencode_storage(tmp_path)
    (storage / "part/msg_a002/prt_b003.json").write_text("{not json")
    items = list(iter_trajectories([storage]))
    errors = [i for i in items if isinstance(i, LoadError)]
    runs = [i for i in items if isinstance(i, Trajectory)]
    assert len(errors) == 1 and errors[0].path.endswith("prt_b003.json")
    assert len(runs) == 1 and len(runs[0].events) == 3


def test_calls_no_loader_could_read_are_a_diagnostic_in_every_cli_format(tmp_path: Path) -> None:
    gemini = {
        "sessionId": "g",
        "projectHash": "h",
        "messages": [{"id": "m", "type": "gemini", "toolCalls": [{"args": {}}]}],
    }
    (tmp_path / "g.json").write_text(json.dumps(gemini))
    codex = [
        rollout_line(
            "response_item", {"type": "function_call", "name": "", "arguments": "{}", "call_id": "c"}
        )
    ]
    write_jsonl(tmp_path / "rollout-c.jsonl", codex)
    storage = opencode_storage(tmp_path / "oc")
    for part in (storage / "part/msg_a002").glob("prt_b*.json"):
        part.write_text(part.read_text().replace('"tool": ', '"toolName": '))
    for given in (tmp_path / "g.json", tmp_path / "rollout-c.jsonl", storage):
        items = [i for i in iter_trajectories([given]) if not isinstance(i, Trajectory)]
        assert [i.fatal for i in items] == [True], (given, items)
        assert "none loaded as a step" in items[0].message


CUSTOM = "Run the tests first."  # a gate's own ``message:``: nothing in it says planguard


def test_a_hook_denial_with_a_custom_message_is_a_denial_by_each_clis_own_record(tmp_path: Path) -> None:
    """Codex records a PreToolUse hook's denial as ``Command blocked by PreToolUse hook: <reason>`` and
    Gemini CLI a BeforeTool one as ``Tool execution blocked: <reason>`` (the strings in codex 0.171's binary
    and gemini-cli 0.61's bundle): the call never ran whatever the reason says."""
    codex = json.loads(
        json.dumps(codex_rollout()).replace(GATE, f"Command blocked by PreToolUse hook: {CUSTOM}")
    )
    path = write_jsonl(tmp_path / "sessions/2025/10/29/rollout-2025-10-29T00-59-38-019a2d7a.jsonl", codex)
    assert only_run(path).events[3].blocked == f"Command blocked by PreToolUse hook: {CUSTOM}"
    messages = json.loads(json.dumps(gemini_messages()).replace(GATE, f"Tool execution blocked: {CUSTOM}"))
    record = {
        "sessionId": "8b2f1c3e-1111-2222-3333-444455556666",
        "projectHash": "ab" * 32,
        "startTime": "2025-09-10T18:13:00.000Z",
        "lastUpdated": "2025-09-10T18:20:00.000Z",
        "messages": messages,
    }
    chat = tmp_path / ".gemini/tmp/abab/chats/session-2025-09-10T18-13-8b2f1c3e.json"
    chat.parent.mkdir(parents=True)
    chat.write_text(json.dumps(record))
    assert only_run(chat).events[4].blocked == f"Tool execution blocked: {CUSTOM}"
