"""Trajectory loaders: every shared real trajectory loads with the counts read off the files by hand,
and malformed input becomes LoadErrors while the rest keeps loading."""

from __future__ import annotations

import json
import pickle
import tracemalloc
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from recorded_runs import mini_swe_agent_denied_submit

from planguard.events import ToolEvent
from planguard.offline.loaders import (
    FORMATS,
    STANDARD_META_KEYS,
    LoadError,
    Trajectory,
    detect_format,
    iter_trajectories,
    load_trajectories,
)

SHARED = Path(__file__).resolve().parents[3].parent / "shared"
DATA = SHARED / "data"
REAL = DATA / "realtraj"
CORPUS = DATA / "swe-agent" / "trajectories.jsonl"


@pytest.fixture(scope="module")
def data() -> Path:
    if not DATA.is_dir():
        pytest.skip("shared data folder ../shared/data is not available")
    return DATA


def load_one(path: Path, **kwargs: Any) -> Trajectory:
    items = list(iter_trajectories([path], **kwargs))
    errors = [i for i in items if isinstance(i, LoadError)]
    assert not errors, errors
    assert len(items) == 1, items
    item = items[0]
    assert isinstance(item, Trajectory)
    return item


def tools(run: Trajectory) -> list[str]:
    return [event.tool for event in run.events]


def write_jsonl(path: Path, records: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


# ------------------------------------------------------------------------------------------------
# The shared data, file by file
# ------------------------------------------------------------------------------------------------


EXPECTED_FORMATS = {
    "swe-agent/trajectories.jsonl": "swe-agent-jsonl",
    "realtraj/swe-agent/legacy_test_repo_6e44b9.traj": "swe-agent-traj",
    "realtraj/swe-agent/legacy_pydicom-1458.traj": "swe-agent-traj",
    "realtraj/swe-agent/demo_marshmallow-1867_function_calling_replace.traj": "swe-agent-traj",
    "realtraj/swe-agent/demo_function_calling_simple.traj": "swe-agent-demo",
    "realtraj/swe-agent/demo_str_replace_anthropic.yaml": "swe-agent-demo",
    "realtraj/swe-agent-raw/claude-4-sonnet_astropy__astropy-14365.traj": "swe-agent-traj",
    "realtraj/swe-agent-raw/lm_32b_astropy__astropy-12907.traj": "swe-agent-traj",
    "realtraj/mini-swe-agent/github_issue.traj.json": "mini-swe-agent",
    "realtraj/mini-swe-agent/local.traj.json": "mini-swe-agent",
    "realtraj/openhands/runtime_basic.json": "openhands",
    "realtraj/openhands/runtime_basic_interactions.json": "openhands",
    "realtraj/claude-code/spotter_short.jsonl": "claude-code",
    "realtraj/claude-code/spotter_tool_heavy.jsonl": "claude-code",
    "realtraj/claude-code/claude-code-log_representative_messages.jsonl": "claude-code",
}


def test_every_shared_file_loads_without_error(data: Path) -> None:
    skipped: list[tuple[Path, str]] = []
    items = list(iter_trajectories([data], on_skip=lambda p, why: skipped.append((p, why))))
    errors = [i for i in items if isinstance(i, LoadError)]
    assert errors == []
    runs = [i for i in items if isinstance(i, Trajectory)]
    # 81 corpus runs + 14 single-run files (the three Claude Code sessions have no sub-agents).
    assert len(runs) == 95
    assert Counter(r.format for r in runs) == {
        "swe-agent-jsonl": 81,
        "swe-agent-traj": 5,
        "swe-agent-demo": 2,
        "mini-swe-agent": 2,
        "openhands": 2,
        "claude-code": 3,
    }
    # The label files are JSON Lines of non-trajectories: skipped in a directory walk, not errors.
    assert [p.name for p, _ in skipped] == ["dev.jsonl", "labels.jsonl"]
    # None silently empty: every real run has events (spotter_short's two calls were rejected by the
    # user, so they are recorded denials, not steps).
    assert [r.id for r in runs if not any(e.blocked is None for e in r.events)] == ["spotter_short"]
    assert all(r.events for r in runs)
    for run in runs:
        assert set(STANDARD_META_KEYS) <= set(run.meta)
        assert all(isinstance(e, ToolEvent) for e in run.events)
        assert run.format in FORMATS
    # Directory order is sorted and recursive: realtraj/ before swe-agent/.
    assert runs[0].source.endswith("claude-code-log_representative_messages.jsonl")
    assert runs[-1].source.endswith("trajectories.jsonl:81")


@pytest.mark.parametrize(("relative", "expected"), sorted(EXPECTED_FORMATS.items()))
def test_detect_format_of_each_shared_file(data: Path, relative: str, expected: str) -> None:
    assert detect_format(data / relative) == expected


def test_labels_file_named_explicitly_is_an_error(data: Path) -> None:
    items = list(iter_trajectories([data / "swe-agent" / "labels.jsonl"]))
    assert len(items) == 1 and isinstance(items[0], LoadError)
    assert "not a recognised trajectory" in str(items[0])
    with pytest.raises(LoadError):
        detect_format(data / "swe-agent" / "labels.jsonl")


def test_swe_agent_corpus_matches_its_records_step_for_step(data: Path) -> None:
    records = [json.loads(line) for line in CORPUS.read_text().splitlines()]
    runs = list(iter_trajectories([CORPUS]))
    assert len(runs) == len(records) == 81
    for line, (run, record) in enumerate(zip(runs, records, strict=True), start=1):
        assert isinstance(run, Trajectory)
        assert run.id == record["id"]
        assert run.source == f"{CORPUS}:{line}"
        assert len(run.events) == record["n_steps"] == len(record["steps"])
        assert run.meta["instance_id"] == record["instance_id"]
        assert run.meta["run"] == record["run"]
        assert run.meta["exit_status"] == record["exit_status"]
        assert run.meta["resolved"] is (record["resolution_status"] == "resolved")
        for event, step in zip(run.events, record["steps"], strict=True):
            assert event.action == step["action"]
            assert event.result == step["observation_head"]
            assert event.metadata["step"] == step["i"]
            if step["tool_calls"]:
                call = step["tool_calls"][0]
                assert event.tool == call["function"]["name"]
                assert event.call_id == call["id"]
                assert event.arguments == json.loads(call["function"]["arguments"])
            elif step["action"]:
                assert event.tool == "bash" and event.arguments == {"command": step["action"]}
            else:
                assert (event.tool, event.arguments, event.action) == ("", {}, "")


def test_swe_agent_corpus_totals(data: Path) -> None:
    runs = [r for r in iter_trajectories([CORPUS]) if isinstance(r, Trajectory)]
    events = [e for r in runs for e in r.events]
    assert len(events) == 2497
    assert Counter(e.tool for e in events) == {"bash": 1830, "str_replace_editor": 558, "submit": 78, "": 31}
    assert sum(1 for e in events if e.call_id) == 1235  # function-calling steps (claude-4, christsakm runs)
    assert Counter(r.meta["resolved"] for r in runs) == {True: 51, False: 30}
    assert Counter(r.meta["exit_status"] for r in runs) == {
        "submitted": 76,
        "exit_cost": 2,
        "submitted (exit_cost)": 2,
        "exit_context": 1,
    }
    assert len({r.id for r in runs}) == 81


def test_raw_swe_agent_traj_equals_its_corpus_record(data: Path) -> None:
    raw = load_one(REAL / "swe-agent-raw" / "claude-4-sonnet_astropy__astropy-14365.traj")
    (record,) = [
        r
        for r in iter_trajectories([CORPUS])
        if isinstance(r, Trajectory)
        and r.id == "20250522_sweagent_claude-4-sonnet-20250514/astropy__astropy-14365"
    ]
    assert raw.id == "claude-4-sonnet_astropy__astropy-14365"
    assert len(raw.events) == len(record.events) == 35
    for a, b in zip(raw.events, record.events, strict=True):
        assert (a.tool, a.action, a.call_id, a.arguments) == (b.tool, b.action, b.call_id, b.arguments)
        # The corpus keeps only the first 1,500 characters of each observation.
        assert (a.result or "").startswith(b.result or "")
    assert Counter(tools(raw)) == {"bash": 20, "str_replace_editor": 12, "submit": 2, "": 1}
    assert raw.events[29].tool == "" and raw.events[29].action == ""
    assert raw.meta["model"] == "claude-sonnet-4-20250514"
    assert raw.meta["instance_id"] == "astropy__astropy-14365"
    assert raw.meta["n_model_calls"] == 35
    assert raw.meta["exit_status"] == "submitted"
    assert raw.meta["task"].startswith("ascii.qdp Table format assumes QDP commands are upper case")
    assert raw.meta["submission"].startswith("diff --git a/astropy/io/ascii/qdp.py")
    # execution_time is a *string* in this file; it still becomes a number.
    assert raw.events[0].metadata["execution_time"] == pytest.approx(0.11612539599991578)
    assert raw.events[0].metadata["working_dir"] == "/testbed"


def test_raw_text_parsed_swe_agent_traj(data: Path) -> None:
    run = load_one(REAL / "swe-agent-raw" / "lm_32b_astropy__astropy-12907.traj")
    assert len(run.events) == 34
    assert set(tools(run)) == {"bash"}  # text-parsed run: no tool_calls anywhere
    assert run.events[1].action == "str_replace_editor view /testbed/astropy/modeling/separable.py"
    assert run.events[-1].action == "submit"
    assert run.meta["model"] == "gpt-4o"  # what replay_config records for this SWE-agent-LM-32B run
    assert run.meta["n_model_calls"] == 34
    assert run.meta["swe_agent_version"] == "1.0.1"
    assert run.meta["final_text"].startswith("Great! All the test cases are now working correctly.")


def test_legacy_swe_agent_0x_traj(data: Path) -> None:
    run = load_one(REAL / "swe-agent" / "legacy_pydicom-1458.traj")
    assert len(run.events) == 12
    assert set(tools(run)) == {"bash"}
    assert [e.action.split()[0] for e in run.events if e.action] == [
        "create",
        "edit",
        "python",
        "find_file",
        "open",
        "edit",
        "edit",
        "edit",
        "edit",
        "python",
        "rm",
        "submit",
    ]
    assert run.events[-1].action == "submit\n"  # byte-exact, trailing newline included
    assert run.meta["exit_status"] == "submitted"
    assert run.meta["n_model_calls"] == 12
    # The is_demo demonstration in history is not the task.
    assert run.meta["task"].startswith("We're currently solving the following issue")
    assert "pydicom" in run.meta["task"]


def test_legacy_tools_with_function_calling(data: Path) -> None:
    run = load_one(REAL / "swe-agent" / "legacy_test_repo_6e44b9.traj")
    assert tools(run) == ["find_file", "open", "edit", "bash", "bash"]
    assert run.events[0].arguments == {"file_name": "missing_colon.py"}
    assert run.events[0].call_id == "call_fJuazlMUN5fQDQ73G6XSpYpx"
    # history stops before the final submit, so that step has no tool call to recover.
    assert run.events[-1].action == "submit" and run.events[-1].call_id is None
    assert run.meta["model"] == "gpt-4o"
    assert run.meta["instance_id"] == "SWE-agent__test-repo-i1"
    assert run.meta["n_model_calls"] == 5


def test_function_calling_demo_traj_with_reused_call_ids(data: Path) -> None:
    run = load_one(REAL / "swe-agent" / "demo_marshmallow-1867_function_calling_replace.traj")
    assert tools(run) == [
        "create",
        "insert",
        "bash",
        "bash",
        "find_file",
        "open",
        "edit",
        "edit",
        "bash",
        "bash",
        "submit",
    ]
    assert run.events[2].call_id == run.events[3].call_id == "call_5iDdbOYybq7L19vqXmR0DPaU"
    assert run.events[6].result is not None
    assert run.events[6].result.startswith("Your proposed edit has introduced new syntax error")
    assert run.meta["instance_id"] == "marshmallow-code__marshmallow-1867"
    assert run.meta["task"].startswith("TimeDelta serialization precision")


def test_history_only_demos(data: Path) -> None:
    simple = load_one(REAL / "swe-agent" / "demo_function_calling_simple.traj")
    assert simple.format == "swe-agent-demo"
    assert tools(simple) == ["find_file", "open", "edit", "bash", "submit"]
    assert simple.events[3].result is not None and simple.events[3].result.startswith("8.2")
    assert simple.events[4].arguments == {}

    yaml_demo = load_one(REAL / "swe-agent" / "demo_str_replace_anthropic.yaml")
    assert yaml_demo.id == "demo_str_replace_anthropic"
    assert yaml_demo.format == "swe-agent-demo"
    assert tools(yaml_demo) == ["str_replace_editor", "str_replace_editor", "str_replace_editor", "submit"]
    assert [e.argument("command") for e in yaml_demo.events[:3]] == ["view", "view", "str_replace"]
    assert all(e.action is None for e in yaml_demo.events)  # demos store no action strings
    assert yaml_demo.events[0].result is not None and yaml_demo.events[0].result.startswith(
        "Here's the files"
    )
    assert yaml_demo.meta["demonstration"] is True


def test_mini_swe_agent_message_lists(data: Path) -> None:
    run = load_one(REAL / "mini-swe-agent" / "github_issue.traj.json")
    assert run.id == "github_issue"
    assert len(run.events) == 10 and set(tools(run)) == {"bash"}
    assert [e.exit_code for e in run.events] == [1, 0, 0, 0, 0, 0, 0, 1, 0, None]
    assert run.events[0].action is not None and run.events[0].action.startswith("cat /Users/fuchur")
    assert run.events[6].result == "8.2\n"
    assert run.events[-1].metadata["submit"] is True
    assert run.events[-1].result is not None and run.events[-1].result.startswith("diff --git")
    assert run.meta["exit_status"] == "Submitted" and run.meta["exit_status_inferred"] is True
    assert run.meta["n_model_calls"] == 10
    assert run.meta["task"].startswith("Please solve this issue: GitHub Issue: SyntaxError")

    local = load_one(REAL / "mini-swe-agent" / "local.traj.json")
    assert [e.action for e in local.events] == [
        "echo 'hello world'",
        "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT",
    ]
    assert local.events[0].result == "hello world\n" and local.events[0].exit_code == 0
    assert local.meta["submission"] == ""


def test_openhands_event_lists(data: Path) -> None:
    run = load_one(REAL / "openhands" / "runtime_basic.json")
    assert tools(run) == ["str_replace_editor", "finish"]
    edit = run.events[0]
    # The edit action's args are a stub; the model's real call is recovered from tool_call_metadata.
    assert edit.argument("command") == "create" and edit.argument("path") == "/workspace/game_2048.py"
    assert edit.call_id == "toolu_017nBp7UfiGqyrA7j77HgtFP"
    assert edit.result is not None and edit.result.startswith("--- /workspace/game_2048.py")
    assert edit.duration == pytest.approx(0.036897, abs=1e-5)
    assert run.meta["model"] == "claude-3-5-sonnet-20241022"
    assert run.meta["n_model_calls"] == 2
    assert run.meta["task"].startswith("Please create a simple 2048 game")
    assert run.meta["final_text"].startswith("I've created a simple implementation of the 2048 game")

    chat = load_one(REAL / "openhands" / "runtime_basic_interactions.json")
    assert tools(chat) == ["finish"]
    assert chat.meta["n_model_calls"] == 3  # two plain replies + the finish call
    assert chat.meta["task"] == "what's 1+1?"
    assert chat.meta["final_text"] == "All done! What's next on the agenda?"


def test_claude_code_sessions(data: Path) -> None:
    short = load_one(REAL / "claude-code" / "spotter_short.jsonl")
    assert short.id == "spotter_short"
    assert tools(short) == ["Bash", "Glob"]
    assert all(e.is_error and e.metadata["tool_use_result"] == "User rejected tool use" for e in short.events)
    assert short.meta["n_model_calls"] == 1  # five assistant lines, one API response
    assert short.meta["task"] == "mix phx.server doesnt seem to start"
    assert short.meta["n_interruptions"] == 1
    assert short.meta["model"] == "claude-opus-4-6"

    heavy = load_one(REAL / "claude-code" / "spotter_tool_heavy.jsonl")
    assert tools(heavy) == ["Bash", "Bash", "WebSearch", "Glob", "Read", "WebFetch"]
    assert all(e.result is not None and not e.is_error for e in heavy.events)
    assert heavy.events[0].arguments["run_in_background"] is True  # type: ignore[index]
    assert heavy.meta["n_model_calls"] == 4
    # The /mcp slash command and its caveat are not prompts.
    assert [p[:20] for p in heavy.meta["user_prompts"]] == ["start phoenix in bac", "scrolling back in xt"]
    assert heavy.meta["n_interruptions"] == 2

    log = load_one(REAL / "claude-code" / "claude-code-log_representative_messages.jsonl")
    assert tools(log) == ["Edit", "Bash"]
    assert log.events[1].result == "Hello, Alice!\nHello, Alice!\nHello, Alice!"
    assert log.events[1].duration == pytest.approx(1.0)
    assert log.meta["n_model_calls"] == 5
    assert log.meta["summaries"][0].startswith("User learned about Python decorators")
    assert log.meta["final_text"].startswith("Perfect! As you can see")


# ------------------------------------------------------------------------------------------------
# Format details exercised with synthetic files
# ------------------------------------------------------------------------------------------------


def _cc(kind: str, uuid: str, content: Any, **extra: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": kind, "content": content}
    if "msg_id" in extra:
        message["id"] = extra.pop("msg_id")
    return {"type": kind, "uuid": uuid, "sessionId": "sess-1", "message": message, **extra}


def test_claude_code_dedups_blocks_and_keeps_sidechains_apart(tmp_path: Path) -> None:
    use = {"type": "tool_use", "id": "t1", "name": "Task", "input": {"prompt": "look"}}
    sub_use = {"type": "tool_use", "id": "s1", "name": "Grep", "input": {"pattern": "x"}}
    lines = [
        _cc("user", "u1", "find the bug"),
        _cc("assistant", "a1", [{"type": "text", "text": "Delegating."}], msg_id="m1"),
        _cc("assistant", "a2", [use], msg_id="m1"),
        _cc("assistant", "a3", [use], msg_id="m1"),  # the same block written twice
        _cc("user", "x1", "look", isSidechain=True, agentId="ab12cd3", parentUuid=None),
        _cc("assistant", "x2", [sub_use], msg_id="m9", isSidechain=True, agentId="ab12cd3"),
        _cc(
            "user",
            "x3",
            [{"type": "tool_result", "tool_use_id": "s1", "content": "hit"}],
            isSidechain=True,
            agentId="ab12cd3",
        ),
        _cc(
            "user",
            "u2",
            [{"type": "tool_result", "tool_use_id": "t1", "content": "found it"}],
            toolUseResult={"agentId": "ab12cd3", "status": "completed", "totalDurationMs": 900},
        ),
        _cc("assistant", "a4", [{"type": "text", "text": "Fixed."}], msg_id="m2"),
        {"type": "summary", "summary": "bug hunt", "leafUuid": "a4"},
    ]
    path = write_jsonl(tmp_path / "sess-1.jsonl", lines)
    main, sub = list(iter_trajectories([path]))
    assert isinstance(main, Trajectory) and isinstance(sub, Trajectory)
    assert main.id == "sess-1" and tools(main) == ["Task"]
    assert main.events[0].result == "found it"
    assert main.events[0].metadata["subagent_id"] == "ab12cd3"
    assert main.meta["n_model_calls"] == 2 and main.meta["final_text"] == "Fixed."
    assert main.meta["summaries"] == ["bug hunt"]
    assert sub.id == "sess-1/ab12cd3" and tools(sub) == ["Grep"] and sub.events[0].result == "hit"
    assert sub.meta["is_sidechain"] is True and sub.meta["parent_session_id"] == "sess-1"
    assert sub.meta["task"] == "look"


def test_calls_a_hook_or_guard_denied_are_recorded_as_blocked(tmp_path: Path) -> None:
    """A denied call never ran: the loaders keep it, marked ``blocked``, and replay counts a denial, not a
    step — as the live session did (Claude Code's hook-error result; mini-swe-agent's planguard marker)."""
    from planguard.session import Pipeline

    reason = "PLANGUARD GATE (validate-before-submit): Bash is not allowed yet."
    cc = [
        _cc("user", "u1", "fix it"),
        _cc(
            "assistant",
            "a1",
            [
                {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}},
                {"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "./submit.sh"}},
                {"type": "tool_use", "id": "t3", "name": "Bash", "input": {"command": "false"}},
            ],
            msg_id="m1",
        ),
        _cc(
            "user",
            "u2",
            [
                {"type": "tool_result", "tool_use_id": "t1", "content": "a.py"},
                {
                    "type": "tool_result",
                    "tool_use_id": "t2",
                    "content": f"PreToolUse:Bash hook error: {reason}",
                    "is_error": True,
                },
                {"type": "tool_result", "tool_use_id": "t3", "content": "Exit code 1", "is_error": True},
            ],
        ),
    ]
    mini = mini_swe_agent_denied_submit(reason)
    (tmp_path / "mini.traj.json").write_text(json.dumps(mini))
    runs = {
        "claude-code": load_one(write_jsonl(tmp_path / "sess-1.jsonl", cc)),
        "mini-swe-agent": load_one(tmp_path / "mini.traj.json"),
    }
    assert [e.blocked for e in runs["claude-code"].events] == [None, reason, None]
    assert runs["claude-code"].events[2].exit_code == 1  # an ordinary failure is not a denial
    assert [e.blocked for e in runs["mini-swe-agent"].events] == [None, reason]
    for run in runs.values():
        session = Pipeline().session(run.id)
        steps = [session.observe(e) for e in run.events]
        summary = session.end()
        assert summary.n_steps == len(run.events) - 1
        assert summary.decision_counts == {"deny": 1}
        (denied,) = [s for s in steps if s.decision.blocks]
        assert denied.decision.message == reason and denied.decision.policy == "recorded"


def test_claude_code_old_sidechains_and_standalone_agent_files(tmp_path: Path) -> None:
    def side(uuid: str, parent: str | None, content: Any, kind: str = "user") -> dict[str, Any]:
        return _cc(kind, uuid, content, isSidechain=True, parentUuid=parent)

    grep = {"type": "tool_use", "id": "g", "name": "Grep", "input": {}}
    glob = {"type": "tool_use", "id": "h", "name": "Glob", "input": {}}
    lines = [
        _cc("user", "u1", "go", parentUuid=None),
        side("s1", None, "first task"),
        side("s2", "s1", [grep], kind="assistant"),
        side("t1", None, "second task"),
        side("t2", "t1", [glob], kind="assistant"),
    ]
    items = list(iter_trajectories([write_jsonl(tmp_path / "old.jsonl", lines)]))
    assert [i.id for i in items if isinstance(i, Trajectory)] == ["old", "old/sidechain-1", "old/sidechain-2"]
    assert [tools(i) for i in items if isinstance(i, Trajectory)] == [[], ["Grep"], ["Glob"]]

    agent_lines = [
        _cc("user", "x1", "sub prompt", isSidechain=True, agentId="a89e48b", parentUuid=None),
        _cc("assistant", "x2", [grep], msg_id="m", isSidechain=True, agentId="a89e48b"),
        _cc(
            "user",
            "x3",
            [{"type": "tool_result", "tool_use_id": "g", "content": "Exit code 2\nboom", "is_error": True}],
            isSidechain=True,
            agentId="a89e48b",
        ),
    ]
    run = load_one(write_jsonl(tmp_path / "agent-a89e48b.jsonl", agent_lines))
    assert run.id == "sess-1/a89e48b"  # the parent session's id, as in the parent file
    assert run.events[0].is_error and run.events[0].exit_code == 2


def test_openhands_actions_without_tool_call_metadata(tmp_path: Path) -> None:
    events = [
        {"id": 0, "source": "user", "action": "message", "args": {"content": "fix it"}},
        {
            "id": 1,
            "source": "agent",
            "action": "run",
            "args": {"command": "ls", "thought": "look"},
            "timestamp": "2025-01-01T00:00:00",
        },
        {
            "id": 2,
            "source": "agent",
            "observation": "run",
            "cause": 1,
            "content": "a.py",
            "extras": {"command": "ls", "metadata": {"exit_code": 0}},
            "timestamp": "2025-01-01T00:00:02",
        },
        {"id": 3, "source": "agent", "action": "read", "args": {"path": "/a.py", "view_range": [1, 5]}},
        {"id": 4, "source": "agent", "observation": "error", "cause": 3, "content": "no such file"},
        {
            "id": 5,
            "source": "agent",
            "action": "edit",
            "args": {
                "command": "str_replace",
                "path": "/a.py",
                "old_str": "x",
                "new_str": "y",
                "file_text": None,
            },
        },
        {"id": 6, "source": "agent", "action": "write", "args": {"path": "/b.py", "content": "pass"}},
        {"id": 7, "source": "agent", "action": "run", "args": {"command": "pytest"}},
        {
            "id": 8,
            "source": "agent",
            "observation": "run",
            "cause": 7,
            "content": "1 failed",
            "extras": {"exit_code": 1},
        },
        {"id": 9, "source": "user", "action": "run", "args": {"command": "whoami"}},
        {"id": 10, "source": "agent", "action": "recall", "args": {"query": "fix it"}},
        {"id": 11, "source": "agent", "action": "think", "args": {"thought": "plan"}},
        {"id": 12, "source": "agent", "action": "browse", "args": {"url": "https://example.org"}},
        {"id": 13, "source": "agent", "action": "finish", "args": {"final_thought": "done", "outputs": {}}},
        {
            "id": 14,
            "source": "environment",
            "observation": "agent_state_changed",
            "extras": {"agent_state": "finished"},
        },
    ]
    path = tmp_path / "events.json"
    path.write_text(json.dumps(events))
    run = load_one(path)
    assert tools(run) == [
        "execute_bash",
        "str_replace_editor",
        "str_replace_editor",
        "str_replace_editor",
        "execute_bash",
        "think",
        "web_read",
        "finish",
    ]
    bash, read, edit, write, pytest_run = run.events[:5]
    assert bash.arguments == {"command": "ls"} and bash.exit_code == 0 and bash.duration == pytest.approx(2.0)
    assert bash.metadata["thought"] == "look"
    assert read.arguments == {"command": "view", "path": "/a.py", "view_range": [1, 5]} and read.is_error
    assert edit.arguments == {"command": "str_replace", "path": "/a.py", "old_str": "x", "new_str": "y"}
    assert write.arguments == {"command": "create", "path": "/b.py", "file_text": "pass"}
    assert pytest_run.exit_code == 1 and pytest_run.failed
    assert run.events[-1].arguments == {"message": "done"}
    assert run.meta["exit_status"] == "finished" and run.meta["final_text"] == "done"
    assert run.meta["task"] == "fix it"
    assert run.meta["skipped_actions"] == {"run": 1, "recall": 1}  # the user's own command, the recall


def test_openhands_output_jsonl(tmp_path: Path) -> None:
    run_action = {"id": 1, "source": "agent", "action": "run", "args": {"command": "ls"}}
    run_obs = {"id": 2, "source": "agent", "observation": "run", "content": "x", "extras": {"exit_code": 0}}
    good = {
        "instance_id": "django__django-1",
        "instruction": "Fix the bug",
        "history": [
            {"id": 0, "source": "user", "action": "message", "args": {"content": "Fix"}},
            run_action,
            {**run_obs, "cause": 1},
        ],
        "test_result": {"git_patch": "diff", "report": {"resolved": True}},
        "metadata": {"agent_class": "CodeActAgent", "llm_config": {"model": "openai/gpt-4o"}},
        "metrics": {"accumulated_cost": 0.5},
    }
    legacy_pairs = {"instance_id": "x__y-2", "history": [[run_action, run_obs]], "test_result": {}}
    path = write_jsonl(tmp_path / "output.jsonl", [good, {"instance_id": "broken"}, legacy_pairs])
    first, error, legacy = list(iter_trajectories([path]))
    assert isinstance(first, Trajectory) and first.format == "openhands-output"
    assert first.id == "django__django-1" and first.source == f"{path}:1"
    assert first.meta["resolved"] is True and first.meta["resolution_status"] == "resolved"
    assert first.meta["model"] == "openai/gpt-4o" and first.meta["task"] == "Fix the bug"
    assert tools(first) == ["execute_bash"] and first.events[0].exit_code == 0
    assert isinstance(error, LoadError) and error.line == 2 and "'history' is missing" in error.message
    assert isinstance(legacy, Trajectory) and legacy.events[0].result == "x"  # [action, observation] pairs
    assert legacy.meta["resolved"] is None
    # A forced "openhands" still reads an output.jsonl as such.
    forced = [i for i in iter_trajectories([path], source_format="openhands") if isinstance(i, Trajectory)]
    assert [t.format for t in forced] == ["openhands-output", "openhands-output"]


def test_mini_swe_agent_v2_layout_with_tool_calls(tmp_path: Path) -> None:
    doc = {
        "info": {
            "exit_status": "Submitted",
            "submission": "diff --git a b",
            "model_stats": {"instance_cost": 0.1, "api_calls": 3},
            "config": {"model": {"model_name": "anthropic/claude-sonnet-4-5"}},
            "mini_version": "2.0.0",
        },
        "messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": [{"type": "text", "text": "Fix the tests"}]},
            {
                "role": "assistant",
                "content": "Two at once.",
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "bash", "arguments": '{"command": "ls"}'},
                    },
                    {
                        "id": "c2",
                        "type": "function",
                        "function": {"name": "bash", "arguments": '{"command": "false"}'},
                    },
                ],
                "extra": {
                    "actions": [
                        {"command": "ls", "tool_call_id": "c1"},
                        {"command": "false", "tool_call_id": "c2"},
                    ],
                    "timestamp": 100.0,
                },
            },
            {
                "role": "tool",
                "tool_call_id": "c2",
                "content": "<returncode>1</returncode>",
                "extra": {"raw_output": "", "returncode": 1, "timestamp": 101.5},
            },
            {
                "role": "tool",
                "tool_call_id": "c1",
                "content": "<returncode>0</returncode>\n<output>\na\n</output>",
                "extra": {"raw_output": "a\n", "returncode": 0, "timestamp": 101.0},
            },
            {
                "role": "assistant",
                "content": "Two blocks:\n```mswea_bash_command\nls\n```\n```mswea_bash_command\npwd\n```",
            },
            {
                "role": "user",
                "content": "Format error: EXACTLY ONE action",
                "extra": {"interrupt_type": "FormatError"},
            },
            {
                "role": "exit",
                "content": "",
                "extra": {"exit_status": "Submitted", "submission": "diff --git a b"},
            },
        ],
        "trajectory_format": "mini-swe-agent-1.1",
    }
    path = tmp_path / "django__django-1.traj.json"
    path.write_text(json.dumps(doc))
    run = load_one(path)
    assert run.id == "django__django-1"
    assert [(e.action, e.call_id, e.exit_code, e.result) for e in run.events] == [
        ("ls", "c1", 0, "a\n"),
        ("false", "c2", 1, ""),
    ]
    assert run.events[0].duration == pytest.approx(1.0)
    assert run.meta["model"] == "anthropic/claude-sonnet-4-5"
    assert run.meta["n_model_calls"] == 3 and run.meta["n_format_errors"] == 1
    assert run.meta["exit_status"] == "Submitted" and "exit_status_inferred" not in run.meta
    assert run.meta["task"] == "Fix the tests"


def test_planguard_store_files_go_through_the_store_reader(tmp_path: Path) -> None:
    from planguard.sinks.store.records import HEADER_TYPE

    header = {
        "type": HEADER_TYPE,
        "v": 1,
        "session_id": "sess-9",
        "started_at": 1.0,
        "plan": "default",
        "metadata": {"model": "m-1", "instance_id": "i-1"},
    }
    path = tmp_path / "sess-9.jsonl"
    path.write_text(json.dumps(header) + "\n" + "{not json\n")
    assert detect_format(path) == "planguard-store"
    error, note, run = list(iter_trajectories([path]))
    assert isinstance(error, LoadError) and error.line == 2
    assert not note.fatal and "has no end record" in str(note)  # (a note: the session may be running)
    assert isinstance(run, Trajectory) and run.format == "planguard-store" and run.id == "sess-9"
    assert run.meta["model"] == "m-1" and run.meta["instance_id"] == "i-1"


def test_detection_uses_content_not_names(tmp_path: Path) -> None:
    corpus_line = {"id": "r/1", "steps": [{"i": 0, "action": "ls", "tool_calls": None}]}
    renamed = write_jsonl(tmp_path / "notes.txt", [corpus_line])
    assert detect_format(renamed) == "swe-agent-jsonl"
    claude = write_jsonl(tmp_path / "session.json", [_cc("user", "u", "hi"), _cc("user", "v", "again")])
    assert detect_format(claude) == "claude-code"
    pretty = tmp_path / "run.jsonl"
    pretty.write_text(json.dumps([{"role": "user", "content": "x"}], indent=2))
    assert detect_format(pretty) == "mini-swe-agent"
    assert load_one(renamed).id == "r/1"


# ------------------------------------------------------------------------------------------------
# Malformed input: a LoadError naming file, line and expectation; everything else still loads
# ------------------------------------------------------------------------------------------------


def _corpus_record(run_id: str, n: int = 2) -> dict[str, Any]:
    return {"id": run_id, "steps": [{"i": i, "action": f"ls {i}", "tool_calls": None} for i in range(n)]}


def test_bad_jsonl_lines_are_reported_and_skipped(tmp_path: Path) -> None:
    path = tmp_path / "corpus.jsonl"
    lines = [
        json.dumps(_corpus_record("ok/1")),
        '{"id": "trunc", "steps": [{"i": 0, "act',
        json.dumps([1, 2, 3]),
        json.dumps({"id": "no-steps"}),
        json.dumps({"steps": []}),
        json.dumps({"id": "bad-type", "steps": [{"action": "ls"}, {"action": "ls"}, {"action": 7}]}),
        json.dumps({"id": "bad-calls", "steps": [{"action": "x", "tool_calls": [{"function": "bash"}]}]}),
        json.dumps({"id": "steps-str", "steps": "ls"}),
        "",
        json.dumps(_corpus_record("ok/2", 3)),
    ]
    path.write_text("\n".join(lines) + "\n")
    items = list(iter_trajectories([path]))
    runs = [i for i in items if isinstance(i, Trajectory)]
    errors = [i for i in items if isinstance(i, LoadError)]
    assert [r.id for r in runs] == ["ok/1", "ok/2"]
    assert [len(r.events) for r in runs] == [2, 3]
    assert runs[1].source == f"{path}:10"
    assert [(e.path, e.line) for e in errors] == [(str(path), n) for n in (2, 3, 4, 5, 6, 7, 8)]
    messages = [str(e) for e in errors]
    assert messages[0].startswith(f"{path}:2: invalid JSON (")
    assert messages[1] == f"{path}:3: expected a JSON object (one trajectory), got array"
    assert messages[2] == f"{path}:4: 'steps' is missing; expected an array of step objects"
    assert messages[3] == f"{path}:5: 'id' is missing; expected a non-empty string"
    assert messages[4] == f"{path}:6: steps[2]: 'action' is a number; expected a string"
    assert "tool_calls[0] has no 'function' object" in messages[5]
    assert messages[6] == f"{path}:8: 'steps' is a string; expected an array of step objects"


def test_corrupt_first_line_does_not_hide_the_corpus(tmp_path: Path) -> None:
    path = tmp_path / "corpus.jsonl"
    path.write_text('{"id": "cut", "ste\n' + json.dumps(_corpus_record("ok/1")) + "\n")
    assert detect_format(path) == "swe-agent-jsonl"
    error, run = list(iter_trajectories([path]))
    assert isinstance(error, LoadError) and error.line == 1
    assert isinstance(run, Trajectory) and run.id == "ok/1" and run.source == f"{path}:2"


def test_bad_files_do_not_stop_the_others(tmp_path: Path) -> None:
    truncated = tmp_path / "a_truncated.traj"
    truncated.write_text('{\n  "trajectory": [\n    {"action": "ls",\n')
    binary = tmp_path / "b_binary.json"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    empty = tmp_path / "c_empty.jsonl"
    empty.write_text("\n  \n")
    write_jsonl(tmp_path / "d_good.jsonl", [_corpus_record("g/1")])
    wrong_shape = tmp_path / "e_wrong.traj"
    wrong_shape.write_text(json.dumps({"trajectory": [{"action": ["ls"]}], "history": []}))
    (tmp_path / ".hidden.jsonl").write_text("garbage")
    (tmp_path / "README.md").write_text("# not a trajectory")
    (tmp_path / "config.yaml").write_text("name: planguard\nlevel: 3\n")  # valid YAML, not a trajectory
    items = list(iter_trajectories([tmp_path, tmp_path / "missing.jsonl"]))
    assert [type(i).__name__ for i in items] == [
        "LoadError",
        "LoadError",
        "LoadError",
        "Trajectory",
        "LoadError",
        "LoadError",
    ]
    trunc, binary_err, empty_err, _, shape_err, missing = items
    assert isinstance(trunc, LoadError) and trunc.line == 4 and "invalid JSON" in trunc.message
    assert str(trunc).startswith(f"{truncated}:4: ")
    assert isinstance(binary_err, LoadError) and "binary" in binary_err.message and binary_err.line is None
    assert isinstance(empty_err, LoadError) and "empty file" in empty_err.message
    assert isinstance(shape_err, LoadError) and shape_err.message == (
        "trajectory[0].action is array; expected a string"
    )
    assert isinstance(missing, LoadError) and "no such file" in missing.message


def test_load_error_shape_and_pickling() -> None:
    err = LoadError("runs/a.jsonl", "'steps' is missing; expected an array", 17)
    assert str(err) == "runs/a.jsonl:17: 'steps' is missing; expected an array"
    assert (err.path, err.line, err.message) == ("runs/a.jsonl", 17, "'steps' is missing; expected an array")
    assert str(LoadError("x.traj", "empty file")) == "x.traj: empty file"
    again = pickle.loads(pickle.dumps(err))
    assert str(again) == str(err) and again.line == 17


def test_input_order_and_api_guards(tmp_path: Path) -> None:
    a = write_jsonl(tmp_path / "z.jsonl", [_corpus_record("z")])
    sub = tmp_path / "dir"
    sub.mkdir()
    write_jsonl(sub / "b.jsonl", [_corpus_record("b")])
    write_jsonl(sub / "a.jsonl", [_corpus_record("a")])
    runs, errors = load_trajectories([a, sub, str(a)])
    assert [r.id for r in runs] == ["z", "a", "b", "z"] and errors == []
    assert [t.id for t in iter_trajectories(a) if isinstance(t, Trajectory)] == ["z"]  # a bare path works
    with pytest.raises(ValueError, match="unknown source_format"):
        iter_trajectories([a], source_format="nope")
    forced = list(iter_trajectories([a], source_format="mini-swe-agent"))
    assert len(forced) == 1 and isinstance(forced[0], LoadError)


def test_jsonl_is_streamed(tmp_path: Path) -> None:
    record = _corpus_record("r", 40)
    for step in record["steps"]:
        step["observation_head"] = "x" * 200
    path = tmp_path / "big.jsonl"
    with path.open("w") as handle:
        for n in range(600):
            record["id"] = f"r/{n}"
            handle.write(json.dumps(record) + "\n")
    size = path.stat().st_size
    assert size > 5_000_000
    tracemalloc.start()
    try:
        count = sum(1 for item in iter_trajectories([path]) if isinstance(item, Trajectory))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == 600
    assert peak < size / 5  # a few records in flight, never the corpus


def test_claude_code_call_refused_by_its_permissions_is_a_denial_by_the_lines_structure(
    tmp_path: Path,
) -> None:
    """Claude Code 2.1.328 in ``-p`` mode with ``--allowedTools`` that does not list Write: the refusal's
    text is no hook's, but the line says what happened (``permissionDecision``, ``toolDenialKind``)."""
    write = {"type": "tool_use", "id": "toolu_02", "name": "Write", "input": {"file_path": "/w/t.py"}}
    text = "Claude requested permissions to write to /w/t.py, but you haven't granted it yet."
    refused = _cc(
        "user",
        "u2",
        [{"type": "tool_result", "content": text, "is_error": True, "tool_use_id": "toolu_02"}],
        toolUseResult=f"Error: {text}",
        toolDenialKind="user-rejected",
        permissionDecision={"decision": "reject", "source": "config", "reasonCode": "unknown"},
    )
    failed = [{"type": "tool_result", "content": "Exit code 1", "is_error": True, "tool_use_id": "toolu_03"}]
    bash = {"type": "tool_use", "id": "toolu_03", "name": "Bash", "input": {"command": "false"}}
    lines = [
        _cc("user", "u1", "write it"),
        _cc("assistant", "a1", [write], msg_id="m1"),
        refused,
        _cc("assistant", "a2", [bash], msg_id="m2"),
        _cc("user", "u3", failed),
    ]
    run = load_one(write_jsonl(tmp_path / "sess-2.jsonl", lines))
    assert [e.blocked for e in run.events] == ["refused by Claude Code's permissions (config)", None]
