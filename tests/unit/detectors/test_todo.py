"""The agent's own todo list: read from each client's real payload shape, tracked per session, the
stale-list reminder, the finish check and the done-without-work finding.

Where each payload shape comes from:

* Claude Code ``TodoWrite`` — ``{"todos": [{"content", "status", "activeForm"}]}``: the tool's input schema
  as the Agent SDK types it (``TodoWriteInput``), and the ``tool_use`` blocks of real session lines parsed
  by public session readers (e.g. hrntknr/claude-code-protocol ``docs/05_tool_todo.md``);
* LangChain ``TodoListMiddleware`` / deepagents ``write_todos`` — ``{"todos": [{"content", "status"}]}``:
  ``langchain/agents/middleware/todo.py`` (``class Todo(TypedDict)``), also driven for real below;
* Codex ``update_plan`` — ``{"explanation"?, "plan": [{"step", "status"}]}``: codex-rs
  ``protocol/src/plan_tool.rs`` (``UpdatePlanArgs``, ``PlanItemArg``, ``StepStatus``);
* OpenCode ``todowrite`` — ``{"todos": [{"content", "status", "priority", "id"}]}``: sst/opencode
  ``packages/opencode/src/tool/todo.ts`` (``TodoInfo``);
* Gemini CLI ``write_todos`` — ``{"todos": [{"description", "status"}]}`` with ``cancelled``:
  google-gemini/gemini-cli ``docs/tools/todos.md``.
"""

from __future__ import annotations

import json
from hashlib import sha256
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planguard.decisions import DecisionKind
from planguard.detectors.todo import DONE_WITHOUT_WORK, TodoState
from planguard.events import RECORDED_KEY, ToolEvent
from planguard.policies.todo import TodoPolicy
from planguard.session import Pipeline
from planguard.stages import Detector
from planguard.step import Step
from planguard.testing import drive, guard_for_tests
from planguard.tools.todo import (
    CANCELLED,
    COMPLETED,
    IN_PROGRESS,
    MAX_ITEMS,
    MAX_TEXT,
    PENDING,
    TodoItem,
    apply_task_call,
    parse_todos,
    recorded_todo_event,
    todo_reading,
)

# ------------------------------------------------------------------ real payloads, one per client


def claude_todowrite(*items: tuple[str, str]) -> ToolEvent:
    todos = [{"content": c, "status": s, "activeForm": f"Doing: {c}"} for c, s in items]
    return ToolEvent(tool="TodoWrite", arguments={"todos": todos})


def langchain_write_todos(*items: tuple[str, str]) -> ToolEvent:
    return ToolEvent(tool="write_todos", arguments={"todos": [{"content": c, "status": s} for c, s in items]})


def codex_update_plan(*items: tuple[str, str], explanation: str | None = None) -> ToolEvent:
    args: dict[str, Any] = {"plan": [{"step": c, "status": s} for c, s in items]}
    if explanation is not None:
        args["explanation"] = explanation
    return ToolEvent(tool="update_plan", arguments=args)


def opencode_todowrite(*items: tuple[str, str]) -> ToolEvent:
    todos = [
        {"content": c, "status": s, "priority": "high" if i == 0 else "medium", "id": str(i + 1)}
        for i, (c, s) in enumerate(items)
    ]
    return ToolEvent(tool="todowrite", arguments={"todos": todos})


def gemini_write_todos(*items: tuple[str, str]) -> ToolEvent:
    return ToolEvent(
        tool="write_todos", arguments={"todos": [{"description": c, "status": s} for c, s in items]}
    )


CLIENTS = {
    "claude-code": claude_todowrite,
    "langchain": langchain_write_todos,
    "codex": codex_update_plan,
    "opencode": opencode_todowrite,
    "gemini-cli": gemini_write_todos,
}


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_each_clients_payload_is_read(client: str) -> None:
    event = CLIENTS[client](
        ("Reproduce the bug", "completed"), ("Fix the root cause", "in_progress"), ("Add a test", "pending")
    )
    items = parse_todos(event)
    assert items is not None
    assert [(i.text, i.status) for i in items] == [
        ("Reproduce the bug", COMPLETED),
        ("Fix the root cause", IN_PROGRESS),
        ("Add a test", PENDING),
    ]


def test_real_claude_code_session_line() -> None:
    # A TodoWrite tool_use block as Claude Code writes it in ~/.claude/projects/*/<session>.jsonl.
    line = (
        '{"type":"assistant","message":{"content":[{"type":"tool_use","id":"toolu_01","name":"TodoWrite",'
        '"input":{"todos":[{"content":"Investigate","status":"in_progress","activeForm":"Investigating"},'
        '{"content":"Fix","status":"pending","activeForm":"Fixing"}]}}]}}'
    )
    block = json.loads(line)["message"]["content"][0]
    items = parse_todos(ToolEvent(tool=block["name"], arguments=block["input"]))
    assert items is not None and [i.status for i in items] == [IN_PROGRESS, PENDING]


def test_statuses_ids_generic_shapes_and_bounds() -> None:
    gemini = parse_todos(gemini_write_todos(("Old idea", "cancelled"), ("Ship", "pending")))
    assert gemini is not None and gemini[0].status == CANCELLED and not gemini[0].open
    # OpenCode's ids identify items across rewordings
    oc = parse_todos(opencode_todowrite(("Write it", "pending")))
    assert oc is not None and oc[0].key == "1"
    generic = parse_todos(ToolEvent(tool="my_tasks", arguments={"tasks": [{"title": "A", "status": "done"}]}))
    assert generic is not None and generic[0].status == COMPLETED
    raw = parse_todos(
        ToolEvent(tool="write_todos", arguments='{"todos": [{"content": "x", "status": "todo"}]}')
    )
    assert raw is not None and raw[0].status == PENDING
    assert parse_todos(ToolEvent(tool="TodoRead", arguments={})) is None
    assert parse_todos(ToolEvent(tool="write_todos", arguments={"todos": [{"content": "no status"}]})) is None
    assert parse_todos(ToolEvent(tool="write_todos", arguments={"todos": ["just text"]})) is None
    assert parse_todos(ToolEvent(tool="write_todos", arguments={"todos": []})) == []
    huge = parse_todos(langchain_write_todos(*((f"item {i} " + "x" * 1000, "pending") for i in range(5000))))
    assert huge is not None and len(huge) == MAX_ITEMS and max(len(i.text) for i in huge) == MAX_TEXT


# ------------------------------------------------------------------ sessions

READ = ToolEvent(tool="Read", arguments={"file_path": "/repo/src/app.py"})
GREP = ToolEvent(tool="Grep", arguments={"pattern": "def main"})
EDIT = ToolEvent(
    tool="Edit", arguments={"file_path": "/repo/src/app.py", "old_string": "a", "new_string": "b"}
)
TEST = ToolEvent(tool="Bash", arguments={"command": "python -m pytest tests/test_app.py"})
SUBMIT = ToolEvent(tool="submit", arguments={})


def _guard(**todo: Any) -> Any:
    # Only the todo policy speaks, so what the tests see is its doing.
    return guard_for_tests(
        policies={
            "reminder": {"enabled": False},
            "violations": {"enabled": False},
            "todo": {"stale_after_calls": 4, "quiet_after_update": 2, "max_per_session": 2, **todo},
        }
    )


def _copy(e: ToolEvent) -> ToolEvent:
    return ToolEvent(tool=e.tool, arguments=e.arguments)


def test_done_without_work_is_a_finding_and_work_clears_it() -> None:
    guard, rec = _guard()
    drive(
        guard,
        "s",
        [
            claude_todowrite(("Find the bug", "in_progress"), ("Fix it", "pending"), ("Test it", "pending")),
            _copy(GREP),
            _copy(READ),
            claude_todowrite(
                ("Find the bug", "completed"), ("Fix it", "in_progress"), ("Test it", "pending")
            ),
            _copy(EDIT),
            claude_todowrite(
                ("Find the bug", "completed"), ("Fix it", "completed"), ("Test it", "in_progress")
            ),
            claude_todowrite(
                ("Find the bug", "completed"), ("Fix it", "completed"), ("Test it", "completed")
            ),
        ],
        end=True,
    )
    found = [r.item for r in rec.findings if r.item.detector == DONE_WITHOUT_WORK]  # type: ignore[union-attr]
    # "Find the bug" had only reads behind it; "Fix it" had an edit; "Test it" had nothing at all.
    assert [f.first_step for f in found] == [3, 6]  # type: ignore[union-attr]
    assert '"Find the bug"' in found[0].evidence and '"Fix it"' not in found[0].evidence  # type: ignore[union-attr]
    assert '"Test it"' in found[1].evidence  # type: ignore[union-attr]
    summary = rec.summaries["s"]
    assert summary.todo == {
        "done": 3,
        "total": 3,
        "active": None,
        "open": [],
        "updates": 4,
        "calls_since_update": 0,
    }


def test_a_custom_tool_that_may_act_counts_as_work() -> None:
    guard, rec = _guard()
    refund = ToolEvent(tool="refund_order", arguments={"order_id": "A-17"})
    drive(
        guard,
        "s",
        [
            langchain_write_todos(("Refund order A-17", "in_progress")),
            refund,
            langchain_write_todos(("Refund order A-17", "completed")),
        ],
    )
    assert not [r for r in rec.findings if r.item.detector == DONE_WITHOUT_WORK]  # type: ignore[union-attr]


def test_stale_reminder_names_only_the_active_item_and_what_is_left() -> None:
    guard, _ = _guard()
    write = codex_update_plan(
        ("Read the parser", "completed"),
        ("Patch the tokenizer", "in_progress"),
        ("Run the tests", "pending"),
        ("Update the changelog", "pending"),
        explanation="parser first",
    )
    turns = drive(guard, "s", [write, *(_copy(GREP) for _ in range(8))])
    reminders = [(i, d) for i, t in enumerate(turns) for d in t.messages if d.policy == "todo"]
    assert [i for i, _ in reminders] == [5]  # 4 calls after the update (the 5th model call); not again yet
    text = reminders[0][1].message
    assert text.startswith("PLAN REMINDER:") and "automatic" in text
    assert '"Patch the tokenizer"' in text and '"Run the tests"' in text and "2 items" in text
    assert "Read the parser" not in text  # done items are not re-injected
    assert reminders[0][1].kind is DecisionKind.REMIND


def test_no_reminder_when_everything_is_done_or_right_after_an_update() -> None:
    guard, _ = _guard(stale_after_calls=1, quiet_after_update=3)
    turns = drive(
        guard,
        "s",
        [
            langchain_write_todos(("Only item", "in_progress")),
            _copy(READ),
            _copy(READ),
            _copy(READ),
            _copy(READ),
        ],
    )
    fired = [i for i, t in enumerate(turns) for d in t.messages if d.policy == "todo"]
    assert fired == [4]  # stale after 1 call, but quiet for 3 calls after the update
    guard2, _ = _guard(stale_after_calls=1, quiet_after_update=0)
    turns = drive(
        guard2, "s", [langchain_write_todos(("Only item", "completed")), *(_copy(READ) for _ in range(5))]
    )
    assert not [d for t in turns for d in t.messages if d.policy == "todo"]


def test_finish_check_names_the_open_items_and_denies_once() -> None:
    guard, _ = _guard()
    turns = drive(
        guard,
        "s",
        [
            opencode_todowrite(
                ("Add the endpoint", "completed"), ("Write its test", "in_progress"), ("Docs", "pending")
            ),
            _copy(EDIT),
            _copy(SUBMIT),
            _copy(SUBMIT),
        ],
    )
    denial = turns[2].decision
    assert denial.kind is DecisionKind.DENY and denial.policy == "todo"
    assert '"Write its test"' in denial.message and '"Docs"' in denial.message
    assert '"Add the endpoint"' not in denial.message and "1 of 3 done" in denial.message
    assert not turns[3].decision.blocks  # max_finish_denials: 1 — an agent that cannot comply still ends


def test_finish_check_remind_mode_and_off() -> None:
    guard, _ = _guard(finish_check="remind")
    turns = drive(guard, "s", [claude_todowrite(("Do it", "in_progress")), _copy(SUBMIT), _copy(READ)])
    assert not turns[1].decision.blocks
    assert any(d.policy == "todo" and '"Do it"' in d.message for d in turns[2].messages)
    guard, _ = _guard(finish_check="off")
    turns = drive(guard, "s", [claude_todowrite(("Do it", "in_progress")), _copy(SUBMIT)])
    assert not turns[1].decision.blocks


def test_an_agent_without_a_todo_tool_gets_none_of_it() -> None:
    guard, rec = _guard(stale_after_calls=1, quiet_after_update=0)
    events = [_copy(e) for e in [GREP, READ, EDIT, TEST, READ, GREP, READ, EDIT, TEST, SUBMIT]]
    turns = drive(guard, "s", events, end=True)
    assert not turns[-1].decision.blocks
    assert not [r for r in rec.decisions if r.item.policy == "todo"]  # type: ignore[union-attr]
    assert not [r for r in rec.findings if r.item.detector == DONE_WITHOUT_WORK]  # type: ignore[union-attr]
    assert rec.summaries["s"].todo is None


# ------------------------------------------------------------------ the reminder's guarantees, random runs

_CALL = st.sampled_from(["read", "edit", "test", "todo", "todo-done", "model"])


@settings(max_examples=150, deadline=None)
@given(
    calls=st.lists(_CALL, max_size=80),
    stale=st.integers(1, 8),
    quiet=st.integers(0, 10),
    cap=st.integers(0, 4),
)
def test_stale_reminder_never_within_quiet_calls_of_an_update_and_never_past_its_cap(
    calls: list[str], stale: int, quiet: int, cap: int
) -> None:
    guard, _ = _guard(stale_after_calls=stale, quiet_after_update=quiet, max_per_session=cap)
    since_update: int | None = None  # tool calls since the last list write (None: no list yet)
    sent = 0
    for c in calls:
        if c == "model":
            out = [d for d in guard.before_model("s") if d.policy == "todo"]
            if out:
                assert since_update is not None and since_update >= quiet and since_update >= stale
                sent += len(out)
            continue
        event = {
            "read": READ,
            "edit": EDIT,
            "test": TEST,
            "todo": claude_todowrite(("A", "completed"), ("B", "in_progress"), ("C", "pending")),
            "todo-done": claude_todowrite(("A", "completed"), ("B", "completed"), ("C", "completed")),
        }[c]
        event = ToolEvent(tool=event.tool, arguments=event.arguments)
        assert not guard.before_tool("s", event).blocks
        guard.after_tool("s", event)
        if c.startswith("todo"):
            since_update = 0
        elif since_update is not None:
            since_update += 1
    assert sent <= cap


# ------------------------------------------------------------------ a real agent with TodoListMiddleware


def test_real_create_agent_with_todo_list_middleware() -> None:
    pytest.importorskip("langchain.agents", reason="the LangChain integration needs langchain>=1")
    middleware_mod = pytest.importorskip("langchain.agents.middleware")
    if not hasattr(middleware_mod, "TodoListMiddleware"):
        pytest.skip("this langchain has no TodoListMiddleware")
    from langchain.agents import create_agent
    from langchain.agents.middleware import TodoListMiddleware
    from langchain_core.messages import HumanMessage
    from langchain_core.tools import tool
    from planguard_langchain import PlanGuardMiddleware
    from planguard_langchain.testing import ScriptedChatModel, call, turn

    @tool
    def search_docs(query: str) -> str:
        """Search the documentation."""
        return f"3 pages about {query}"

    @tool
    def submit(answer: str) -> str:
        """Submit the final answer."""
        return "submitted"

    plan = [("Search the docs", "in_progress"), ("Write the summary", "pending")]
    done_early = [("Search the docs", "completed"), ("Write the summary", "in_progress")]
    model = ScriptedChatModel(
        turns=[
            turn(call("write_todos", todos=[{"content": c, "status": s} for c, s in plan])),
            *(turn(call("search_docs", query=f"topic {i}")) for i in range(5)),
            turn(call("write_todos", todos=[{"content": c, "status": s} for c, s in done_early])),
            turn(call("submit", answer="it is about topics")),  # denied: "Write the summary" is open
            turn(call("submit", answer="it is about topics")),
        ]
    )
    guard, rec = _guard()
    agent = create_agent(
        model, [search_docs, submit], middleware=[TodoListMiddleware(), PlanGuardMiddleware(guard)]
    )
    result = agent.invoke(
        {"messages": [HumanMessage("summarise the docs")]}, {"configurable": {"thread_id": "t"}}
    )
    assert [t["content"] for t in result["todos"]] == [
        "Search the docs",
        "Write the summary",
    ]  # the real tool ran

    guard.end("t")
    todo_decisions = [r.item for r in rec.decisions if r.item.policy == "todo"]  # type: ignore[union-attr]
    kinds = [d.kind for d in todo_decisions]  # type: ignore[union-attr]
    assert DecisionKind.REMIND in kinds  # 4 searches with no list update
    assert DecisionKind.DENY in kinds
    (deny,) = [d for d in todo_decisions if d.kind is DecisionKind.DENY]  # type: ignore[union-attr]
    assert '"Write the summary"' in deny.message  # type: ignore[union-attr]
    reminder_texts = [
        m.content for req in model.requests_for("t") for m in req if "PLAN REMINDER" in str(m.content)
    ]
    assert any('"Search the docs"' in str(t) for t in reminder_texts)  # the model saw the stale reminder
    # Searching is not a write or test run: marking it done is a (logged) finding.
    assert [r.item.detector for r in rec.findings] == [DONE_WITHOUT_WORK]  # type: ignore[union-attr]
    summary = rec.summaries["t"]
    assert summary.todo is not None and summary.todo["done"] == 1 and summary.todo["total"] == 2
    assert summary.todo["active"] == "Write the summary"


def test_state_is_reachable_and_bounded() -> None:
    guard, _ = _guard()
    drive(guard, "s", [langchain_write_todos(*((f"t{i}", "pending") for i in range(MAX_ITEMS * 3)))])
    state = guard.session("s").facts("todo")
    assert state is not None and state.total == MAX_ITEMS


def test_saved_and_restored_session_keeps_one_todo_list() -> None:
    # The Claude Code hook saves a session's state between calls (pickled) and restores it on the next one.
    import pickle

    from planguard.session import Session

    guard, _ = _guard()
    drive(guard, "s", [claude_todowrite(("Fix it", "in_progress"), ("Test it", "pending")), _copy(READ)])
    state = pickle.loads(pickle.dumps(guard.session("s").state()))
    restored = Session.restore(guard.pipeline, state)
    restored.after_tool(claude_todowrite(("Fix it", "completed"), ("Test it", "in_progress")))
    assert restored.summary().todo is not None and restored.summary().todo["done"] == 1  # type: ignore[index]
    # the finish check reads the restored list, not a copy taken before the save
    denial = restored.before_tool(_copy(SUBMIT))
    assert denial.blocks and '"Test it"' in denial.message and '"Fix it"' not in denial.message


@pytest.mark.parametrize("capture", [False, True])
def test_todo_span_attributes(capture: bool) -> None:
    from planguard.actions import classify_action
    from planguard.detectors import default_detectors
    from planguard.session import Pipeline
    from planguard.sinks.capture import CaptureMode
    from planguard.sinks.otel import attributes as A
    from planguard.sinks.otel.testing import TelemetryCapture

    cap = TelemetryCapture(capture=CaptureMode.SPAN_ONLY if capture else CaptureMode.NO_CONTENT)
    session = Pipeline(actions=classify_action, detectors=default_detectors(), sinks=(cap.sink,)).session("s")
    for ev in [
        claude_todowrite(("Fix it", "completed"), ("Test it", "in_progress"), ("Ship", "pending")),
        _copy(READ),
        _copy(EDIT),
    ]:
        session.before_tool(ev)
        session.after_tool(ev)
    session.end()
    cap.flush()
    (root,) = [s for s in cap.spans() if s.parent is None]  # the session span
    assert root.attributes is not None
    assert root.attributes[A.TODO_DONE] == 1 and root.attributes[A.TODO_TOTAL] == 3
    assert root.attributes[A.TODO_UPDATES] == 1 and root.attributes[A.TODO_CALLS_SINCE_UPDATE] == 2
    tool_spans = [
        s for s in cap.spans() if s.attributes and s.attributes.get(A.GEN_AI_TOOL_NAME) == "TodoWrite"
    ]
    assert tool_spans[0].attributes is not None and tool_spans[0].attributes[A.TODO_DONE] == 1
    reads = [s for s in cap.spans() if s.attributes and s.attributes.get(A.GEN_AI_TOOL_NAME) == "Read"]
    assert A.TODO_DONE not in (reads[0].attributes or {})
    # the item's text is content: only with capture on
    assert (A.TODO_ACTIVE in root.attributes) is capture
    if capture:
        assert root.attributes[A.TODO_ACTIVE] == "Test it"
    cap.shutdown()


def test_claude_code_hooks_deliver_the_stale_reminder_after_a_result() -> None:
    # Claude Code's PreToolUse/PostToolUse payloads (as in tests/integrations/hooks/test_claude_code_hook.py,
    # Claude Code 2.1) through the adapter the hook command and the Agent SDK's in-process hooks share.
    pytest.importorskip("planguard_hooks")
    from planguard_hooks.adapter import ClaudeCodeAdapter

    guard, _ = _guard()
    adapter = ClaudeCodeAdapter(guard)
    base = {"session_id": "cc-1", "cwd": "/repo", "permission_mode": "default"}
    todos = [
        {"content": "Find the failing test", "status": "completed", "activeForm": "Finding the failing test"},
        {"content": "Fix the parser", "status": "in_progress", "activeForm": "Fixing the parser"},
        {"content": "Run the suite", "status": "pending", "activeForm": "Running the suite"},
    ]
    calls: list[tuple[str, dict[str, Any], Any]] = [
        ("TodoWrite", {"todos": todos}, {"oldTodos": [], "newTodos": todos}),
        *(
            ("Read", {"file_path": f"/repo/src/parser_{i}.py"}, {"type": "text", "file": {"content": "x"}})
            for i in range(6)
        ),
    ]
    contexts: list[str] = []
    adapter.handle({**base, "hook_event_name": "UserPromptSubmit", "prompt": "fix the parser"})
    for n, (tool, tool_input, response) in enumerate(calls):
        common = {**base, "tool_name": tool, "tool_input": tool_input, "tool_use_id": f"toolu_{n:02d}"}
        assert adapter.handle({**common, "hook_event_name": "PreToolUse"}) == {}
        answer = adapter.handle({**common, "hook_event_name": "PostToolUse", "tool_response": response})
        contexts.append(answer.get("hookSpecificOutput", {}).get("additionalContext", ""))
    stale = [i for i, c in enumerate(contexts) if "todo list has not changed" in c]
    assert stale == [4]  # after the 4th Read following the TodoWrite, once
    assert '"Fix the parser"' in contexts[4] and '"Run the suite"' in contexts[4]
    assert "Find the failing test" not in contexts[4]
    assert guard.session("cc-1").facts("todo").current.text == "Fix the parser"  # type: ignore[union-attr]


# ------------------------------------------------------------------ run facts by name


def test_stages_read_the_todo_list_by_name_not_by_the_class_that_keeps_it() -> None:
    # A detector of the user's own that provides "todo" (not a TodoTracker) is what the todo policy and the
    # session summary read: stages depend on the fact, not on which class keeps it.
    class OwnTodoKeeper(Detector):
        name = "own_todo"
        provides = "todo"

        def new_state(self) -> TodoState:
            return TodoState()

        def observe(self, step: Step, state: TodoState) -> None:
            if step.event.tool == "my_plan":
                state.update(step.index, [TodoItem("a", "write the fix", IN_PROGRESS)])

    session = Pipeline(detectors=(OwnTodoKeeper(),), policies=(TodoPolicy(),)).session("s")
    assert session.facts("todo") is session.detector_states[0]
    assert session.facts("effects") is None
    session.observe(ToolEvent(tool="my_plan", arguments={}))
    denial = session.before_tool(ToolEvent(tool="submit", arguments={}))
    assert denial.kind is DecisionKind.DENY and "write the fix" in denial.message
    summary = session.end()
    assert summary.todo is not None and summary.todo["open"] == ["write the fix"]


def test_claude_code_task_tools_keep_the_list_one_task_per_call() -> None:
    # Today's Claude Code in interactive mode has TaskCreate/TaskUpdate/TaskList instead of TodoWrite: one
    # task per call. Its PreToolUse/PostToolUse payloads, through the hooks adapter.
    pytest.importorskip("planguard_hooks")
    from planguard_hooks.adapter import ClaudeCodeAdapter

    guard, _ = _guard()
    adapter = ClaudeCodeAdapter(guard)
    base = {"session_id": "cc-tasks", "cwd": "/repo", "permission_mode": "default"}
    created = ["Find the failing test", "Fix the parser", "Run the suite"]
    calls: list[tuple[str, dict[str, Any], Any]] = [
        *(
            (
                "TaskCreate",
                {"subject": s, "description": s, "activeForm": s},
                f"Task #{n} created successfully: {s}",
            )
            for n, s in enumerate(created, 1)
        ),
        ("TaskUpdate", {"taskId": "1", "status": "completed"}, "Updated task #1 status"),
        ("TaskUpdate", {"taskId": "2", "status": "in_progress"}, "Updated task #2 status"),
        ("TaskList", {}, "#1 [completed] Find the failing test\n#2 [in_progress] Fix the parser"),
        ("TaskUpdate", {"taskId": "3", "status": "deleted"}, "Updated task #3 deleted"),
    ]
    adapter.handle({**base, "hook_event_name": "UserPromptSubmit", "prompt": "fix the parser"})
    for n, (tool, tool_input, response) in enumerate(calls):
        common = {**base, "tool_name": tool, "tool_input": tool_input, "tool_use_id": f"toolu_{n:02d}"}
        assert adapter.handle({**common, "hook_event_name": "PreToolUse"}) == {}
        adapter.handle({**common, "hook_event_name": "PostToolUse", "tool_response": response})
    state = guard.session("cc-tasks").facts("todo")
    assert state is not None and state.updates == 6  # TaskList reads the list: no update
    assert [(i.key, i.text, i.status) for i in state.items] == [
        ("1", "Find the failing test", "completed"),
        ("2", "Fix the parser", "in_progress"),
    ]
    assert state.current is not None and state.current.text == "Fix the parser"


def test_a_recorded_todo_reading_keeps_the_list_as_the_calls_did() -> None:
    """What a store without content keeps of a todo call (``todo_reading``: texts digested, task ids that
    are numbers kept, statuses as words, the task number a result names) gives the same list, item for
    item and status for status, as the call itself — for a whole list and for one-task-per-call tools."""

    def digest(text: str) -> str:
        return sha256(text.encode()).hexdigest()[:12]

    calls = [
        ToolEvent("TodoWrite", {"todos": [{"content": "Fix  the parser", "status": "In Progress"}]}),
        ToolEvent(
            "TaskCreate", {"subject": "Write the card 4111 1111 1111 1111 test"}, result="Task #2 created"
        ),
        ToolEvent("TaskCreate", {"subject": "Run the tests"}),
        ToolEvent("TaskUpdate", {"taskId": "2", "status": "completed"}),
        ToolEvent("TaskUpdate", {"taskId": 3, "status": "deleted"}),
        ToolEvent("TaskUpdate", {"taskId": "x-9", "subject": "Ship it"}),
    ]
    live: list[Any] = []
    kept: list[Any] = []
    for call in calls:
        reading = todo_reading(call, digest)
        text = json.dumps(reading)
        assert reading is not None and "4111" not in text and "parser" not in text
        recorded = recorded_todo_event(ToolEvent(call.tool, {}, metadata={RECORDED_KEY: {"todo": reading}}))
        live = parse_todos(call) or apply_task_call(call, live) or live
        kept = parse_todos(recorded) or apply_task_call(recorded, kept) or kept
        assert [i.status for i in kept] == [i.status for i in live]
        assert len({i.key for i in kept}) == len(kept)
    assert [i.status for i in live] == ["in_progress", "completed", "pending"]
    assert todo_reading(ToolEvent("TodoRead", {}), digest) is None
