"""Loaders that never come back silently empty (issue #18.3, #20): OpenHands V1 and resolver output,
Claude Code's denial, rejection and cancellation forms, repo-relative targets, compaction transcripts,
truncated files, and a diagnostic (exit status 1) for a run whose tool calls no loader could read."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from planguard.offline.loaders import LoadError, LoadNote, Trajectory, iter_trajectories
from planguard.session import Pipeline


def items_of(path: Path) -> list[Trajectory | LoadError]:
    return list(iter_trajectories([path]))


def runs_of(path: Path) -> list[Trajectory]:
    return [i for i in items_of(path) if isinstance(i, Trajectory)]


def write_jsonl(path: Path, records: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def replay_exit(*paths: Path) -> tuple[int, str, str]:
    done = subprocess.run(
        [sys.executable, "-m", "planguard", "replay", *map(str, paths), "--format", "jsonl"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return done.returncode, done.stdout, done.stderr


# ------------------------------------------------------------------------------------------------
# OpenHands V1 (software-agent-sdk) events, evaluation and resolver output
# ------------------------------------------------------------------------------------------------


def v1_history() -> list[dict[str, Any]]:
    """A V1 event list in the shapes of openhands-sdk/openhands/sdk/event/llm_convertible/*.py."""

    def action(i: int, tool: str, args: dict[str, Any], action_kind: str) -> dict[str, Any]:
        return {
            "kind": "ActionEvent",
            "id": f"a{i}",
            "timestamp": f"2026-01-01T00:00:0{i}",
            "source": "agent",
            "thought": [{"type": "text", "text": f"step {i}"}],
            "action": {"kind": action_kind, **args},
            "tool_name": tool,
            "tool_call_id": f"call_{i}",
            "tool_call": {
                "id": f"call_{i}",
                "name": tool,
                "arguments": json.dumps(args),
                "origin": "completion",
            },
            "llm_response_id": f"resp_{i}",
            "security_risk": "LOW",
        }

    def observation(i: int, tool: str, text: str, *, error: bool = False, code: int = 0) -> dict[str, Any]:
        return {
            "kind": "ObservationEvent",
            "id": f"o{i}",
            "timestamp": f"2026-01-01T00:00:0{i}",
            "source": "environment",
            "tool_name": tool,
            "tool_call_id": f"call_{i}",
            "action_id": f"a{i}",
            "observation": {
                "kind": "TerminalObservation",
                "content": [{"type": "text", "text": text}],
                "is_error": error,
                "exit_code": code,
            },
        }

    return [
        {
            "kind": "SystemPromptEvent",
            "id": "s",
            "source": "agent",
            "system_prompt": {"type": "text", "text": "sys"},
        },
        {
            "kind": "MessageEvent",
            "id": "m",
            "source": "user",
            "llm_message": {"role": "user", "content": [{"type": "text", "text": "Fix the bug in calc.py"}]},
        },
        action(1, "terminal", {"command": "grep -rn divide src"}, "TerminalAction"),
        observation(1, "terminal", "src/calc.py:3: def divide"),
        action(
            2, "file_editor", {"command": "str_replace", "path": "/workspace/src/calc.py"}, "FileEditorAction"
        ),
        {
            "kind": "UserRejectObservation",
            "id": "r2",
            "source": "environment",
            "tool_name": "file_editor",
            "tool_call_id": "call_2",
            "action_id": "a2",
            "rejection_reason": "not yet",
            "rejection_source": "hook",
        },
        action(3, "terminal", {"command": "python -m pytest tests"}, "TerminalAction"),
        observation(3, "terminal", "1 failed", error=True, code=1),
        action(4, "finish", {"message": "done"}, "FinishAction"),
    ]


def test_openhands_v1_output_jsonl_loads_its_steps(tmp_path: Path) -> None:
    record = {
        "instance_id": "org__repo-1",
        "instruction": "Fix it",
        "history": v1_history(),
        "test_result": {},
    }
    (run,) = runs_of(write_jsonl(tmp_path / "output.jsonl", [record]))
    assert run.format == "openhands-output"
    assert [e.tool for e in run.events] == ["terminal", "file_editor", "terminal", "finish"]
    assert run.events[0].arguments == {"command": "grep -rn divide src"}
    assert run.events[0].result == "src/calc.py:3: def divide"
    assert run.events[1].blocked == "not yet (rejected by hook)"
    assert (run.events[2].exit_code, run.events[2].is_error) == (1, True)
    assert run.meta["task"] == "Fix it"  # the instruction, before the first user message
    assert run.meta["n_model_calls"] == 4
    session = Pipeline().session(run.id)
    for event in run.events:
        session.observe(event)
    assert session.end().n_steps == 3  # the rejected edit never ran


def test_openhands_v1_event_list_is_detected(tmp_path: Path) -> None:
    (tmp_path / "events.json").write_text(json.dumps(v1_history()))
    (run,) = runs_of(tmp_path / "events.json")
    assert run.format == "openhands"
    assert len(run.events) == 4


def test_openhands_resolver_output_has_no_instance_id(tmp_path: Path) -> None:
    # openhands/resolver/resolver_output.py: issue, issue_type, instruction, base_commit, git_patch, ...
    record = {
        "issue": {"owner": "acme", "repo": "widgets", "number": 42, "title": "t", "body": "b"},
        "issue_type": "issue",
        "instruction": "Please fix issue 42",
        "base_commit": "abc",
        "git_patch": "diff --git a/x b/x",
        "history": v1_history(),
        "metrics": None,
        "success": True,
        "comment_success": None,
        "result_explanation": "fixed",
        "error": None,
    }
    (run,) = runs_of(write_jsonl(tmp_path / "output.jsonl", [record]))
    assert run.id == "acme/widgets#42"
    assert run.meta["resolved"] is True
    assert run.meta["git_patch"] == "diff --git a/x b/x"
    assert len(run.events) == 4


def test_a_record_with_unreadable_tool_calls_is_a_diagnostic_and_exit_1(tmp_path: Path) -> None:
    # A future layout: tool calls the loader cannot read must not replay as a silent 0-step run.
    history = [{"kind": "ToolCallEventV9", "source": "agent", "tool_call": {}, "type": "function_call"}]
    path = write_jsonl(
        tmp_path / "output.jsonl", [{"instance_id": "x-1", "history": history, "instruction": "i"}]
    )
    (item,) = items_of(path)
    assert isinstance(item, LoadError) and item.fatal
    assert item.location == f"{path}:1"
    assert "holds 1 tool call(s) but none loaded as a step" in item.message
    code, out, err = replay_exit(path)
    assert code == 1 and out == ""
    assert f"{path}:1: x-1: holds 1 tool call(s)" in err


def test_a_run_without_tool_calls_replays_with_a_note_and_exit_0(tmp_path: Path) -> None:
    history = [{"kind": "MessageEvent", "source": "user", "llm_message": {"role": "user", "content": "hi"}}]
    path = write_jsonl(
        tmp_path / "output.jsonl", [{"instance_id": "x-2", "history": history, "instruction": "i"}]
    )
    run, note = items_of(path)
    assert isinstance(run, Trajectory) and run.events == []
    assert isinstance(note, LoadNote) and not note.fatal
    code, out, err = replay_exit(path)
    assert code == 0
    assert json.loads(out)["n_steps"] == 0
    assert "no tool calls; it replays with 0 steps" in err


def test_a_truncated_event_list_keeps_its_complete_events_marked_partial(tmp_path: Path) -> None:
    text = json.dumps(v1_history(), indent=1)
    path = tmp_path / "events.json"
    path.write_text(text[: text.index('"tool_name": "finish"')])  # cut inside the last event
    error, run = items_of(path)
    assert isinstance(error, LoadError) and error.fatal and "ends early" in error.message
    assert isinstance(run, Trajectory) and run.meta["partial"] is True
    assert [e.tool for e in run.events] == ["terminal", "file_editor", "terminal"]
    code, out, _ = replay_exit(path)
    assert code == 1 and json.loads(out)["meta"]["partial"] is True


# ------------------------------------------------------------------------------------------------
# Claude Code
# ------------------------------------------------------------------------------------------------

CWD = "/home/dev/proj"


def cc_lines(results: list[tuple[str, dict[str, Any], str, bool]]) -> list[dict[str, Any]]:
    """A Claude Code transcript: one assistant tool_use and its user tool_result per (tool, input, result,
    is_error)."""
    base = {"sessionId": "s1", "cwd": CWD, "version": "2.1.197", "isSidechain": False, "userType": "external"}
    lines: list[dict[str, Any]] = [
        {**base, "type": "user", "uuid": "u0", "message": {"role": "user", "content": "fix"}}
    ]
    for i, (tool, args, result, is_error) in enumerate(results):
        lines.append(
            {
                **base,
                "type": "assistant",
                "uuid": f"a{i}",
                "message": {
                    "id": f"msg_{i}",
                    "role": "assistant",
                    "model": "claude-x",
                    "content": [{"type": "tool_use", "id": f"toolu_{i}", "name": tool, "input": args}],
                },
            }
        )
        block = {"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": result, "is_error": is_error}
        lines.append(
            {**base, "type": "user", "uuid": f"r{i}", "message": {"role": "user", "content": [block]}}
        )
    return lines


def test_claude_code_calls_that_never_ran_are_denials(tmp_path: Path) -> None:
    gate = "PLANGUARD GATE (validate-before-submit): Edit is not allowed yet. First run the tests."
    lines = cc_lines(
        [
            ("Read", {"file_path": f"{CWD}/lib/a.ex"}, "1→defmodule A", False),
            # The npm CLI (2.1.x) writes a hook denial as the bare reason (planguard's own text here).
            ("Edit", {"file_path": f"{CWD}/lib/a.ex", "old_string": "a", "new_string": "b"}, gate, True),
            # The Agent SDK's bundled CLI prefixes it.
            ("Edit", {"file_path": f"{CWD}/lib/a.ex"}, "PreToolUse:Edit hook error: no edits yet", True),
            ("Bash", {"command": "rm -rf x"}, "Hook PreToolUse:Bash denied this tool", True),
            (
                "Bash",
                {"command": "mix test"},
                "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it "
                "was a file edit, the new_string was NOT written to the file). STOP what you are doing and "
                "wait for the user to tell you how to proceed.",
                True,
            ),
            ("Glob", {"pattern": "*.ex"}, "<tool_use_error>Sibling tool call errored</tool_use_error>", True),
            ("Bash", {"command": "mix test"}, "Exit code 1\n1 test, 1 failure", True),
            # An ordinary tool error that merely mentions planguard is still a call that ran.
            ("Bash", {"command": "cat notes"}, "notes: PLANGUARD GATE is mentioned here", True),
        ]
    )
    (run,) = runs_of(write_jsonl(tmp_path / "s1.jsonl", lines))
    blocked = [e.blocked for e in run.events]
    assert blocked[0] is None
    assert blocked[1] == gate
    assert blocked[2] == "no edits yet"
    assert blocked[3] == "Hook PreToolUse:Bash denied this tool"
    assert blocked[4] == "rejected by the user at a permission prompt"
    assert blocked[5] == "cancelled by the harness: a parallel sibling call errored"
    assert blocked[6:] == [None, None]
    assert run.events[6].exit_code == 1


def test_claude_code_file_targets_are_relative_to_the_session_cwd(tmp_path: Path) -> None:
    lines = cc_lines(
        [
            ("Read", {"file_path": f"{CWD}/lib/a.ex"}, "x", False),
            ("Grep", {"pattern": "def", "path": CWD}, "x", False),
            ("Read", {"file_path": "/etc/hosts"}, "x", False),
            ("Read", {"file_path": f"{CWD}-other/lib/a.ex"}, "x", False),
        ]
    )
    (run,) = runs_of(write_jsonl(tmp_path / "s1.jsonl", lines))
    assert [e.arguments for e in run.events] == [
        {"file_path": "lib/a.ex"},
        {"pattern": "def", "path": "."},
        {"file_path": "/etc/hosts"},
        {"file_path": f"{CWD}-other/lib/a.ex"},
    ]
    assert run.events[0].metadata["absolute_arguments"] == {"file_path": f"{CWD}/lib/a.ex"}
    from planguard.actions import classify_action

    assert classify_action(run.events[0]).target == "lib/a.ex"


def test_claude_code_compaction_transcript_is_skipped_with_a_note(tmp_path: Path) -> None:
    base = {"sessionId": "s2", "cwd": CWD, "isSidechain": True, "agentId": "acompact-1f2e"}
    lines = [
        {
            **base,
            "type": "user",
            "uuid": "u",
            "message": {
                "role": "user",
                "content": "Your task is to create a "
                "detailed summary of the conversation so far, paying close attention to the user's requests.",
            },
        },
        {
            **base,
            "type": "assistant",
            "uuid": "a",
            "message": {
                "id": "m",
                "role": "assistant",
                "content": [{"type": "text", "text": "<summary>...</summary>"}],
            },
        },
    ]
    path = write_jsonl(tmp_path / "agent-acompact-1f2e.jsonl", lines)
    (note,) = items_of(path)
    assert isinstance(note, LoadNote) and "compaction transcript" in note.message
    # recognised by its prompt alone too (newer versions put a line before the request)
    plain = [{**line, "agentId": "a77"} for line in lines]
    plain[0]["message"]["content"] = "CRITICAL: Respond with TEXT ONLY.\n\n" + lines[0]["message"]["content"]
    (note,) = items_of(write_jsonl(tmp_path / "agent-a77.jsonl", plain))
    assert isinstance(note, LoadNote)
    code, out, err = replay_exit(path)
    assert (code, out) == (0, "")
    assert "compaction transcript" in err


def test_claude_code_file_of_summary_lines_only_is_skipped_with_a_note(tmp_path: Path) -> None:
    lines = [{"type": "summary", "summary": "Fix divide", "leafUuid": "u1"}]
    (note,) = items_of(write_jsonl(tmp_path / "s3.jsonl", lines))
    assert isinstance(note, LoadNote) and "summary lines" in note.message


def test_claude_code_truncated_last_line_gives_a_partial_run(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "s1.jsonl", cc_lines([("Read", {"file_path": f"{CWD}/a.py"}, "x", False)]))
    path.write_text(path.read_text() + '{"type": "assistant", "uuid": "a9", "message": {"id": "m')
    error, run = items_of(path)
    assert isinstance(error, LoadError) and error.line == 4
    assert isinstance(run, Trajectory) and run.meta["partial"] is True and len(run.events) == 1


def test_claude_code_tool_use_blocks_without_names_are_a_diagnostic(tmp_path: Path) -> None:
    lines = cc_lines([("Read", {}, "x", False)])
    lines[1]["message"]["content"][0]["name"] = ""
    (item,) = items_of(write_jsonl(tmp_path / "s1.jsonl", lines))
    assert isinstance(item, LoadError) and item.fatal and "none could be read" in item.message


# ------------------------------------------------------------------------------------------------
# Acceptance: no real file replays silently empty
# ------------------------------------------------------------------------------------------------


def test_every_shared_real_file_replays_with_steps(shared: Path) -> None:
    """Every real file under shared/data replays with steps, or would print a diagnostic and exit 1
    (none does): no run comes back silently empty. spotter_short's only two calls were rejected by the
    user at the permission prompt: recorded denials, not steps."""
    code, out, err = replay_exit(shared / "data")
    records = [json.loads(line) for line in out.splitlines()]
    assert code == 0, err
    assert len(records) == 95
    empty = [r["id"] for r in records if r["n_steps"] == 0 or not r["actions"]]
    assert set(empty) <= {"spotter_short"}
    assert "holds" not in err and "no tool calls" not in err
