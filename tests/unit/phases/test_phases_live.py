"""The live phase rules, case by case, as PHASES_LIVE.md defines them (§ numbers refer to that page).

Each case is a short run: the calls, then the letters of each step (``""``: general). ``PATCH`` is a
patch of a repository source file, so a case written as ``[PATCH, call]`` checks the call after the run
has patched.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest

from planguard.events import ToolEvent
from planguard.phases import LiveRules, get_rules, is_test_target

Call = str | ToolEvent


def letters(calls: list[Call], rules: LiveRules | None = None) -> list[str]:
    """The letters of each call, run in order through one session's state."""
    live = rules if rules is not None else get_rules("live")
    state = live.new_state()
    out = []
    for call in calls:
        event = ToolEvent.shell(call) if isinstance(call, str) else call
        c = live.classify(event, state)
        state.apply(c)
        out.append(c.letters)
    return out


def tool(name: str, arguments: Mapping[str, Any] | None = None, **kw: Any) -> ToolEvent:
    return ToolEvent(tool=name, arguments=dict(arguments or {}), **kw)


PATCH = "sed -i 's/a/b/' src/app.py"


# --------------------------------------------------------------------------- §3 languages


LANGUAGES = [
    ("pytest", "cd /repo && python -m pytest tests/test_app.py -q 2>&1 | tail -20"),
    ("pytest (bare)", "pytest -x"),
    ("go test", "go test ./..."),
    ("cargo test", "cargo test --all 2>&1"),
    ("npm test", "npm test"),
    ("jest", "npx jest src/__tests__/app.test.js"),
    ("mix test", "mix test test/app_test.exs 2>&1"),
    ("mvn test", "mvn -q test"),
    ("gradle test", "./gradlew test"),
    ("rspec", "bundle exec rspec spec/app_spec.rb"),
    ("phpunit", "vendor/bin/phpunit tests"),
    ("dotnet test", "dotnet test"),
    ("ctest", "cd build && ctest --output-on-failure"),
    ("make test", "make test > /tmp/test.log 2>&1"),
]


@pytest.mark.parametrize(("name", "command"), LANGUAGES, ids=[n for n, _ in LANGUAGES])
def test_existing_tests_are_regression_tests_before_and_after_a_patch(name: str, command: str) -> None:
    assert letters([command]) == ["r"]
    assert letters([PATCH, command]) == ["P", "v"]


# --------------------------------------------------------------------------- §1 unit


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("cd /repo && source venv/bin/activate && timeout 60 pytest -x", "r"),
        ("bash -lc 'cd /repo && pytest -q'", "r"),
        ("FOO=1 env X=2 time python -m pytest", "r"),
        ("export PYTHONPATH=src; python reproduce.py", "R"),
        ("grep -n 'def f' src/app.py | head -5", "N"),
        ("ls src; cat src/app.py; pytest", "NNr"),
        ("cat src/a.py || true", "N"),
        ("for f in tests/*.py; do python $f 2>&1 | tail -1; done", "r"),
        ("if [ -f setup.py ]; then pytest; fi", "r"),
        ("cat > /tmp/t.py <<'EOF'\nimport app && x; pytest\nEOF\npython /tmp/t.py", "RR"),
        ("sed -i 's/a/b/' src/app.py && pytest", "Pv"),
        ("python gen.py | tee src/generated.py", "P"),
        ("git diff src/app.py | cat", "N"),
    ],
)
def test_sub_commands_and_transparent_wrappers(command: str, expected: str) -> None:
    assert letters([command]) == [expected]


# --------------------------------------------------------------------------- §2 the switch


def test_patched_is_the_only_switch() -> None:
    run = [
        "str_replace_editor create /testbed/reproduce.py --file_text 'import app'",
        "python reproduce.py",
        "pytest tests/",
        "str_replace_editor str_replace /testbed/src/app.py --old_str 'a' --new_str 'b'",
        "python reproduce.py",
        "pytest tests/",
    ]
    assert letters(run) == ["R", "R", "r", "P", "V", "v"]


# --------------------------------------------------------------------------- §3 roles


@pytest.mark.parametrize(
    "command",
    [
        "grep -rn 'def f' src 2>/dev/null",
        "ls /testbed 2>&1",
        "ls /testbed > /dev/null",
        "find . -name '*.py' 2>/dev/null | head",
        "git log --oneline -5 2>&1",
        "sed -n '1,40p' src/app.py",
        "cat tests/test_app.py",  # reading a test file is navigation
        'grep -n "return >= 0" src/app.py',
    ],
)
def test_stderr_or_discarded_output_changes_nothing(command: str) -> None:
    assert letters([command]) == ["N"]


@pytest.mark.parametrize(
    "command",
    [
        "sed -i 's/a/b/' src/app.py",
        "perl -pi -e 's/a/b/' lib/App.pm",
        "patch -p1 < fix.diff",
        "git apply fix.diff",
        "echo 'x = 1' >> src/config.py",
        "cat > src/new_module.py << 'EOF'\nx = 1\nEOF",
        "python - <<'EOF'\nopen('src/app.py', 'w').write('x')\nEOF",
    ],
)
def test_changing_a_source_file_is_a_patch(command: str) -> None:
    assert letters([command]) == ["P"]


@pytest.mark.parametrize(
    "command",
    [
        "echo 'def test_x(): pass' > tests/test_new.py",
        "cat > reproduce_bug.py << 'EOF'\nimport app\nEOF",
        "cat > /tmp/check.py <<EOF\nprint(1)\nEOF",
    ],
)
def test_writing_a_test_or_check_script_is_not_a_patch(command: str) -> None:
    assert letters([command]) == ["R"]
    assert letters([PATCH, command]) == ["P", "V"]


@pytest.mark.parametrize(
    "command",
    [
        "pip install -e .",
        "python setup.py develop",
        "npm ci",
        "mkdir -p build",
        "which python",
        "python --version",
        "git add -A && git commit -m fix",
        "git stash",
        "git checkout -b fix-branch",
        "echo done",
        "cd /repo",
    ],
)
def test_environment_and_bookkeeping_are_general(command: str) -> None:
    assert letters([command]) == [""]


@pytest.mark.parametrize(
    "command",
    ["python -c 'import app; print(app.f(1))'", "node -e 'console.log(1)'", "ruby -e 'puts 1'"],
)
def test_snippets_are_new_tests(command: str) -> None:
    assert letters([command]) == ["R"]
    assert letters([PATCH, command]) == ["P", "V"]


def test_type_checks_run_as_verification() -> None:
    assert letters([PATCH, "mypy src", "tsc --noEmit", "cargo check"]) == ["P", "v", "v", "v"]


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("tests/test_app.py", True),
        ("src/foo_test.go", True),
        ("spec/app_spec.rb", True),
        ("web/__tests__/app.js", True),
        ("src/app.test.ts", True),
        ("src/app.spec.js", True),
        ("conftest.py", True),
        ("reproduce_issue.py", True),
        ("repro.py", True),
        ("verify_fix.py", True),
        ("check_bug.py", True),
        ("debug_parser.py", True),
        ("/tmp/x.py", True),
        ("src/app.py", False),
        ("django/views/debug.py", False),
        ("src/latest_release.py", False),
        ("src/checker.py", False),
    ],
)
def test_test_targets_by_path_and_name(path: str, expected: bool) -> None:
    assert is_test_target(path) is expected


# --------------------------------------------------------------------------- §4 scaffolds


def test_claude_code_tools() -> None:
    calls = [
        tool("Read", {"file_path": "/home/u/proj/src/app.py"}),
        tool("Grep", {"pattern": "def f", "path": "src"}),
        tool("Glob", {"pattern": "**/*.py"}),
        tool("LS", {"path": "/home/u/proj"}),
        tool("TodoWrite", {"todos": []}),
        tool("Task", {"description": "explore", "prompt": "x"}),
        tool("WebFetch", {"url": "https://example.com"}),
        tool("WebSearch", {"query": "x"}),
        tool("ExitPlanMode", {"plan": "1. fix"}),
        tool("Edit", {"file_path": "/home/u/proj/src/app.py", "old_string": "a", "new_string": "b"}),
        tool("MultiEdit", {"file_path": "/home/u/proj/tests/test_app.py", "edits": []}),
        tool("Write", {"file_path": "/home/u/proj/verify.py", "content": "print(1)"}),
        tool("Bash", {"command": "python verify.py 2>&1"}),
    ]
    assert letters(calls) == ["N", "N", "N", "N", "", "", "", "", "", "P", "V", "V", "V"]


def test_codex_tools() -> None:
    patch = (
        "*** Begin Patch\n*** Update File: src/app.py\n@@\n-a\n+b\n"
        "*** Add File: tests/test_fix.py\n+x\n*** End Patch"
    )
    calls = [
        tool("shell", {"command": ["bash", "-lc", "rg -n 'def f' src"]}),
        tool("shell", {"command": ["pytest", "-q"]}),
        tool("exec_command", {"cmd": "cargo test"}),
        tool("update_plan", {"plan": [{"step": "fix", "status": "pending"}]}),
        tool("apply_patch", {"input": patch}),
        tool("local_shell", {"command": ["pytest", "tests/test_fix.py"]}),
    ]
    assert letters(calls) == ["N", "r", "r", "", "PV", "V"]


def test_opencode_tools() -> None:
    calls = [
        tool("read", {"filePath": "/p/src/app.ts"}),
        tool("grep", {"pattern": "foo", "include": "*.ts"}),
        tool("glob", {"pattern": "**/*.ts"}),
        tool("list", {"path": "/p"}),
        tool("todowrite", {"todos": []}),
        tool("webfetch", {"url": "https://x"}),
        tool("task", {"description": "x", "prompt": "y"}),
        tool("todoread", {}),
        tool("edit", {"filePath": "/p/src/app.ts", "oldString": "a", "newString": "b"}),
        tool("multiedit", {"filePath": "/p/src/app.test.ts", "edits": []}),
        tool("write", {"filePath": "/p/notes.txt", "content": "x"}),
        tool("bash", {"command": "npm test"}),
    ]
    assert letters(calls) == ["N", "N", "N", "N", "", "", "", "", "P", "V", "P", "v"]


def test_swe_agent_0x_tools() -> None:
    calls = [
        ToolEvent.shell("find_file app.py"),
        ToolEvent.shell("search_dir 'def f' src"),
        ToolEvent.shell("open src/app.py 20"),
        ToolEvent.shell("goto 50"),
        ToolEvent.shell("scroll_down"),
        ToolEvent.shell("create reproduce.py"),
        ToolEvent.shell("edit 1:1\nimport app\nend_of_edit", metadata={"open_file": "/repo/reproduce.py"}),
        ToolEvent.shell("python reproduce.py"),
        ToolEvent.shell("open src/app.py"),
        # The function-calling variant names no file: the edit changes the one the run opened.
        ToolEvent(tool="edit", arguments={"search": "a", "replace": "b"}, action="edit 'a' 'b'"),
        ToolEvent.shell("python reproduce.py"),
        ToolEvent.shell("submit"),
    ]
    assert letters(calls) == ["N", "N", "N", "N", "N", "R", "R", "R", "N", "P", "V", ""]


def test_openhands_tools() -> None:
    calls = [
        tool("execute_bash", {"command": "ls"}),
        tool("str_replace_editor", {"command": "view", "path": "/workspace/src/app.py"}),
        tool("str_replace_editor", {"command": "create", "path": "/workspace/src/app2.py", "file_text": "x"}),
        tool("think", {"thought": "x"}),
        tool("browser", {"code": "goto('http://x')"}),
        tool("finish", {"message": "done"}),
    ]
    assert letters(calls) == ["N", "N", "P", "", "", ""]


def test_mini_swe_agent_submission_is_general() -> None:
    calls = [
        PATCH,
        "git diff > patch.txt",
        "cat patch.txt",
        "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached",
    ]
    assert letters(calls) == ["P", "", "", ""]


# --------------------------------------------------------------------------- §5 decided edge cases


def test_a_call_that_never_ran_is_not_a_step() -> None:
    from planguard.session import Pipeline

    session = Pipeline(rules=get_rules("live")).session("s")
    session.observe(ToolEvent.shell("pytest", blocked="denied by a hook"))
    session.observe(ToolEvent.shell("ls"))
    summary = session.end()
    assert summary.n_steps == 1 and summary.letters == "N"


def test_an_empty_swe_agent_entry_is_a_general_step() -> None:
    assert letters([ToolEvent(tool="", action="")]) == [""]


def test_a_failed_write_keeps_its_role_and_sets_patched() -> None:
    failed = ToolEvent.shell(
        "str_replace_editor str_replace /testbed/src/app.py --old_str 'zz' --new_str 'b'",
        result="No replacement was performed, old_str `zz` did not appear verbatim",
        is_error=True,
    )
    assert letters([failed, "pytest"]) == ["P", "v"]


@pytest.mark.parametrize(
    "calls",
    [
        [
            "str_replace_editor create /testbed/check_output.py --file_text 'print(1)'",
            "python check_output.py",
        ],
        ["python3 - <<'EOF'\nimport app\nprint(app.f())\nEOF"],
        ["cp tests/test_app.py /tmp/test_copy.py && python /tmp/test_copy.py"],
    ],
)
def test_a_script_the_run_created_is_a_new_test(calls: list[str]) -> None:
    assert set("".join(letters(calls))) == {"R"}


def test_running_an_existing_test_file_stays_regression_after_adding_cases() -> None:
    add_case = tool(
        "Edit", {"file_path": "tests/test_app.py", "old_string": "# end", "new_string": "def test_x(): ..."}
    )
    assert letters([add_case, "pytest tests/test_app.py"]) == ["R", "r"]
    assert letters([PATCH, add_case, "pytest tests/test_app.py"]) == ["P", "V", "v"]


def test_a_test_file_the_run_created_is_a_new_test_when_run() -> None:
    create = tool("Write", {"file_path": "tests/test_issue_42.py", "content": "def test_x(): ..."})
    assert letters([create, "pytest tests/test_issue_42.py -q"]) == ["R", "R"]


@pytest.mark.parametrize(
    "command",
    [
        "mix compile",
        "python setup.py build_ext --inplace",
        "cargo build",
        "go build ./...",
        "go vet ./...",
        "npm run build",
        "tsc",
        "make",
        "mypy .",
        "ruff check .",
        "mix credo",
    ],
)
def test_builds_and_lints_are_validation_after_a_patch_only(command: str) -> None:
    assert letters([command]) == [""]
    assert letters([PATCH, command]) == ["P", "v"]


@pytest.mark.parametrize(
    "command", ["python -m http.server 8000", "mix phx.server", "npm start", "./bin/tool --help"]
)
def test_starting_the_program_is_a_new_test(command: str) -> None:
    assert letters([command]) == ["R"]
    assert letters([PATCH, command]) == ["P", "V"]


@pytest.mark.parametrize(
    "call",
    [
        tool("BashOutput", {"bash_id": "b1"}),
        tool("TaskOutput", {"task_id": "t1"}),
        "tail -5 /tmp/claude-1000/-home-u-proj/tasks/bae407b.output",
        tool("Read", {"file_path": "/home/u/.claude/projects/x/tool-results/out.txt"}),
        "cat /tmp/test_run.log",
    ],
)
def test_reading_a_background_runs_output_is_general(call: Call) -> None:
    assert letters([call]) == [""]


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("git checkout -- src/app.py", "P"),
        ("git restore src/app.py", "P"),
        ("cp src/app.py.bak src/app.py", "P"),
        ("cp src/app.py src/app.py.bak", ""),
        ("cp -r src /tmp/src_backup", ""),
        ("git restore --staged src/app.py", ""),
    ],
)
def test_restoring_a_source_file_is_a_patch_and_a_backup_is_not(command: str, expected: str) -> None:
    assert letters([command]) == [expected]


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (tool("Write", {"file_path": "/home/u/.claude/plans/plan.md", "content": "x"}), ""),
        (tool("Write", {"file_path": "plan.md", "content": "x"}), ""),
        (tool("Write", {"file_path": "NOTES.md", "content": "x"}), ""),
        ("npm install --save-dev jest", ""),
        (tool("Edit", {"file_path": "package.json", "old_string": "a", "new_string": "b"}), "P"),
        (tool("Edit", {"file_path": "setup.cfg", "old_string": "a", "new_string": "b"}), "P"),
    ],
)
def test_notes_and_files_outside_the_repository_are_general(call: Call, expected: str) -> None:
    assert letters([call]) == [expected]


def test_test_targets_are_decided_by_path_alone() -> None:
    # Even when the file under tests/ is what the task is about, editing it is test work.
    assert letters(
        ["sed -i 's/-> float/-> float:/' tests/missing_colon.py", "python3 tests/missing_colon.py"]
    ) == [
        "R",
        "r",
    ]


def test_cleanup_of_the_runs_own_files_is_general_and_removing_source_is_a_patch() -> None:
    create = "str_replace_editor create /testbed/reproduce.py --file_text 'x'"
    assert letters([create, "rm reproduce.py", "rm -f src/legacy.py"]) == ["R", "", "P"]


# --------------------------------------------------------------------------- robustness


@pytest.mark.parametrize(
    "event",
    [
        ToolEvent(tool="bash", arguments={"command": 42}),
        ToolEvent(tool="bash", arguments="{not json"),
        ToolEvent(tool="Read", arguments=["not", "a", "mapping"]),  # type: ignore[arg-type]
        ToolEvent.shell("'" * 5000),
        ToolEvent.shell("bash -c " * 200 + "ls"),
        ToolEvent.shell("\udcff\x00 ls"),
        ToolEvent(tool="apply_patch", arguments={"input": json.dumps({"x": 1})}),
    ],
)
def test_odd_calls_never_raise(event: ToolEvent) -> None:
    rules = get_rules("live")
    rules.classify(event, rules.new_state())


@pytest.mark.parametrize(
    "name",
    [
        *("Read", "Grep", "Glob", "LS", "Edit", "MultiEdit", "Write", "NotebookEdit", "Bash", "TodoWrite"),
        *("Task", "WebFetch", "WebSearch", "ExitPlanMode", "BashOutput", "TaskOutput"),
        *("shell", "exec_command", "local_shell", "apply_patch", "update_plan"),
        *(
            "read",
            "grep",
            "glob",
            "list",
            "edit",
            "write",
            "patch",
            "multiedit",
            "bash",
            "todowrite",
            "todoread",
        ),
        *("webfetch", "task", "execute_bash", "str_replace_editor", "think", "finish", "submit", "browser"),
        *("find_file", "search_dir", "search_file", "open", "goto", "scroll_up", "scroll_down", "create"),
    ],
)
def test_every_scaffold_tool_of_the_page_is_known(name: str) -> None:
    rules = get_rules("live")
    assert not rules.classify(tool(name, {}), rules.new_state()).unknown
