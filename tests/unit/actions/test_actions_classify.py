"""Canonical action classification: shell lines by what they do, every scaffold's tools, user rules."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from pathlib import Path

import pytest

from planguard.actions import (
    Action,
    ActionClassifier,
    ActionType,
    ActionVocabulary,
    AnchorSet,
    MappingRule,
    PathNormaliser,
    WriteKind,
    action_dict,
    classify_action,
    files_of_diff,
)
from planguard.actions.config import ActionRuleSpec, ActionsConfig, build_classifier
from planguard.events import ToolEvent

R, W, S, C, N, F, P, A, T = (
    ActionType.FILE_READ,
    ActionType.FILE_WRITE,
    ActionType.SEARCH,
    ActionType.COMMAND,
    ActionType.NAVIGATE,
    ActionType.FETCH,
    ActionType.PLAN,
    ActionType.AGENT_SPAWN,
    ActionType.REASON,
)


def sh(cmd: str) -> Action:
    return classify_action(ToolEvent.shell(cmd))


def call(tool: str, **args: object) -> Action:
    return classify_action(ToolEvent(tool=tool, arguments=args))


# ------------------------------------------------------------------------------------------ shell

SHELL_CASES = [
    # reads
    ("cat /testbed/pkg/mod.py", R, "pkg/mod.py"),
    ("head -n 40 /testbed/pkg/mod.py", R, "pkg/mod.py"),
    ("tail -5 pkg/mod.py", R, "pkg/mod.py"),
    ("sed -n '10,20p' /testbed/pkg/mod.py", R, "pkg/mod.py"),
    ("nl -ba pkg/mod.py | sed -n '1,80p'", R, "pkg/mod.py"),
    ("awk 'NR>=5 && NR<=9' pkg/mod.py", R, "pkg/mod.py"),
    ("cd /testbed/pkg && cat sub/mod.py | head -50", R, "pkg/sub/mod.py"),
    # searches (target: normalised query @ scope)
    ('grep -rn "def f" /testbed/pkg', S, "def f @ pkg"),
    ('grep -rn "def f" /testbed/pkg 2>/dev/null', S, "def f @ pkg"),
    ("rg -n 'class Foo' src", S, "class Foo @ src"),
    ('find /testbed -name "*.py" -path "*tests*"', S, "-name *.py -path *tests* @ ."),
    ('find /testbed -name "*.py" | grep -i template', S, "-name *.py | template @ ."),
    ('find . -name "*.py" -exec grep -l "class X" {} \\;', S, "class X @ ."),
    ("git grep -n needle -- src", S, "needle @ src"),
    ("bash -c 'grep -r foo lib'", S, "foo @ lib"),
    ("for f in *.py; do grep -n x $f; done", S, "x @ $f"),
    # writes
    ("sed -i 's/foo/bar/' /testbed/pkg/mod.py", W, "pkg/mod.py"),
    ("perl -pi -e 's/a/b/' pkg/mod.py", W, "pkg/mod.py"),
    ("echo 'x = 1' > /testbed/pkg/new.py", W, "pkg/new.py"),
    ("echo 'x = 1' >> pkg/mod.py", W, "pkg/mod.py"),
    ("cat > /testbed/reproduce.py << 'EOF'\nimport pkg\nprint(pkg)\nEOF", W, "reproduce.py"),
    ("cat <<EOF > /testbed/t.py\nx\nEOF\npython /testbed/t.py", W, "t.py"),
    ("grep foo pkg/mod.py | tee out.txt", W, "out.txt"),
    ("rm /testbed/reproduce.py && echo removed", W, "reproduce.py"),
    ("touch pkg/__init__.py", W, "pkg/__init__.py"),
    ("git checkout -- /testbed/pkg/mod.py", W, "pkg/mod.py"),
    ("cp pkg/a.py pkg/b.py", W, "pkg/b.py"),
    # commands
    ("cd /testbed && python reproduce_issue.py", C, "python reproduce_issue.py"),
    ("pytest -q tests/test_mod.py", C, "pytest"),
    ("python -m pytest tests/ -x 2>&1 | tail -20", C, "pytest"),
    ("cd /testbed && python tests/runtests.py queries", C, "python tests/runtests.py"),
    ("python -m django test auth_tests --settings=x", C, "python -m django test"),
    ("FOO=1 timeout 60 pytest -k thing", C, "pytest"),
    ("python setup.py build_ext -i", C, "python setup.py"),
    ("pip install -e .", C, "pip install"),
    ("git diff", C, "git diff"),
    ("python -c 'print(1)'", C, "python -c"),
    ("python - <<'PY'\nimport x\nPY", C, "python -"),
    ("npm run test:unit", C, "npm test:unit"),
    ("go test ./...", C, "go test"),
    ("python gen.py > out.txt", C, "python gen.py"),
    # navigation / fetch
    ("ls -la /testbed/pkg", N, "pkg"),
    ("cd /testbed", N, "."),
    ("tree -L 2", N, "."),
    ("curl -s https://example.com/x | head", F, "https://example.com/x"),
]


@pytest.mark.parametrize(("cmd", "typ", "target"), SHELL_CASES)
def test_shell_lines_are_classified_by_what_they_do(cmd: str, typ: ActionType, target: str) -> None:
    a = sh(cmd)
    assert (a.type, a.target) == (typ, target), a


VALIDATION = {
    "cd /testbed && python reproduce_issue.py": True,
    "pytest -q": True,
    "python -m unittest discover": True,
    "python tests/test_x.py": True,
    "python -m pkg.tests.test_fu": True,
    "python -c \"import sympy; sympy.test('sympy/printing')\"": True,
    "make test": True,
    "cargo test": True,
    "python setup.py build": False,
    "python -c 'print(1)'": False,
    "python gen.py": False,
    "grep -rn test_ .": False,
}


@pytest.mark.parametrize(("cmd", "expected"), sorted(VALIDATION.items()))
def test_validation_commands_are_recognised(cmd: str, expected: bool) -> None:
    assert sh(cmd).is_validation is expected


def test_dominant_segment_and_shell_word() -> None:
    # a write beats a validation run beats a search beats a read beats navigation
    assert sh("ls && cat a.py && grep x a.py").type is S
    assert sh("grep x a.py && python reproduce.py").type is C
    assert sh("python reproduce.py && sed -i 's/a/b/' a.py").type is W
    # shell word is the deciding command's first word (what shell-over-tool looks at)
    assert sh("cd /testbed && grep -rn foo .").shell == "grep"
    assert sh("cd /testbed && cat a.py").shell == "cat"
    # logging a test run to a file keeps it a test run
    a = sh("python -m pytest -x 2>&1 | tee /tmp/log.txt")
    assert a.type is C and a.is_validation


def test_an_argv_command_is_read_as_the_line_the_phase_rules_read() -> None:
    # Codex passes argv arrays: a word with a blank stays one word, ``bash -lc`` runs its script
    c = ActionClassifier()
    grep = ToolEvent(tool="shell", arguments={"command": ["grep", "-rn", "foo bar", "src"]})
    assert c(grep).target == "foo bar @ src"
    assert c.tool_call(grep).command == "grep -rn 'foo bar' src"
    script = ToolEvent(
        tool="shell", arguments={"command": ["/bin/bash", "-lc", "sed -i 's/a/b/' src/app.py"]}
    )
    assert c(script).type is W and c(script).target == "src/app.py"
    assert c.tool_call(script).command == "sed -i 's/a/b/' src/app.py"


def test_source_write_excludes_tests_scratch_and_backups() -> None:
    assert sh("sed -i 's/a/b/' pkg/mod.py").is_source_write
    assert not sh("echo x > /testbed/reproduce_bug.py").is_source_write
    assert not sh("echo x > tests/test_mod.py").is_source_write
    assert not sh("echo x > /tmp/scratch.py").is_source_write
    assert not sh("cp pkg/mod.py pkg/mod.py.bak").is_source_write


def test_completion_markers() -> None:
    for cmd in ("submit", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached"):
        a = sh(cmd)
        assert a.is_completion and a.target == "submit"
    assert not sh("echo done").is_completion


def test_write_texts_for_revert_detection() -> None:
    a = sh("sed -i 's/old_value/new_value/' pkg/mod.py")
    assert (a.write, a.old_text, a.new_text) == (WriteKind.EDIT, "old_value", "new_value")
    assert sh("cat > a.py <<'EOF'\nbody\nEOF").new_text == "body\n"
    assert sh("git restore pkg/mod.py").write is WriteKind.RESTORE


# ------------------------------------------------------------------------------ SWE-agent 1.x / 0.x


def test_swe_agent_editor_strings_and_function_calls_agree() -> None:
    text = sh("str_replace_editor str_replace /testbed/pkg/mod.py   --old_str 'x = 1' --new_str 'x = 2'")
    fc = call(
        "str_replace_editor",
        command="str_replace",
        path="/testbed/pkg/mod.py",
        old_str="x = 1",
        new_str="x = 2",
    )
    assert dataclasses.replace(text, tool=fc.tool) == fc  # same action, whichever form it came in
    assert (text.type, text.target, text.write, text.old_text, text.new_text) == (
        W,
        "pkg/mod.py",
        WriteKind.EDIT,
        "x = 1",
        "x = 2",
    )
    assert text.structured and text.shell is None and text.scaffold == "swe-agent"
    assert sh("str_replace_editor view /testbed/pkg/mod.py  --view_range 1 50").type is R
    assert sh("str_replace_editor view /testbed/pkg").type is N
    created = sh("str_replace_editor create /testbed/reproduce.py --file_text 'print('\"'\"'hi'\"'\"')\n'")
    assert (created.type, created.write, created.new_text) == (W, WriteKind.CREATE, "print('hi')\n")
    assert sh("str_replace_editor undo_edit /testbed/pkg/mod.py").write is WriteKind.RESTORE


def test_swe_agent_legacy_commands() -> None:
    assert (sh("open pkg/mod.py 293").type, sh("open pkg/mod.py 293").target) == (R, "pkg/mod.py")
    assert sh('find_file "mod.py"').type is S
    assert sh("search_dir Foo /testbed/src").target == "Foo @ src"
    assert sh("scroll_down").type is R
    edit = classify_action(
        ToolEvent.shell("edit 3:4\n    x = 2\nend_of_edit", metadata={"open_file": "/testbed/pkg/mod.py"})
    )
    assert (edit.type, edit.target, edit.new_text) == (W, "pkg/mod.py", "    x = 2")
    fc = classify_action(ToolEvent(tool="find_file", arguments={"file_name": "fields.py", "dir": "src"}))
    assert (fc.type, fc.target) == (S, "fields.py @ src")


# -------------------------------------------------------------------------------------- Claude Code


def test_claude_code_tools() -> None:
    assert call("Read", file_path="/testbed/pkg/mod.py").target == "pkg/mod.py"
    w = call("Write", file_path="/testbed/pkg/new.py", content="x = 1\n")
    assert (w.type, w.write, w.new_text, w.is_source_write) == (W, WriteKind.CREATE, "x = 1\n", True)
    e = call("Edit", file_path="pkg/mod.py", old_string="a", new_string="b")
    assert (e.type, e.write, e.old_text, e.new_text) == (W, WriteKind.EDIT, "a", "b")
    assert call("Edit", file_path="pkg/new.py", old_string="", new_string="b").write is WriteKind.CREATE
    m = call("MultiEdit", file_path="pkg/mod.py", edits=[{"old_string": "a", "new_string": "b"}])
    assert (m.type, m.old_text, m.new_text) == (W, "a", "b")
    b = call("Bash", command="cat pkg/mod.py", description="look")
    assert (b.type, b.shell, b.scaffold, b.structured) == (R, "cat", "claude-code", False)
    g = call("Grep", pattern="def f", path="/testbed/pkg")
    assert (g.type, g.target, g.structured) == (S, "def f @ pkg", True)
    assert call("Glob", pattern="**/*.py").target == "**/*.py @ ."
    assert call("LS", path="/testbed/pkg").type is N
    assert call("Task", description="explore", prompt="...", subagent_type="general-purpose").type is A
    assert call("TodoWrite", todos=[{"content": "x"}]).type is P
    assert call("WebFetch", url="https://x.org", prompt="p").target == "https://x.org"
    assert call("WebSearch", query="xterm scroll").type is F


def test_openhands_tools() -> None:
    assert call("execute_bash", command="cd /workspace && python test_x.py").is_validation
    assert call("execute_bash", command="C-c", is_input="true").target == "input"
    v = call("str_replace_editor", command="view", path="/workspace/django__django__3.0/django/db/x.py")
    assert (v.type, v.target) == (R, "django/db/x.py")
    assert call("think", thought="hmm").text == "hmm"
    f = call("finish", message="All done!")
    assert (f.type, f.is_completion, f.text) == (T, True, "All done!")
    assert call("browser", code="goto('http://x')").type is F
    assert call("task_tracker", command="plan").type is P


def test_mini_swe_agent_and_generic_tools() -> None:
    assert sh("echo MINI_SWE_AGENT_FINAL_OUTPUT").is_completion
    assert call("search_codebase", query="foo").type is S
    assert call("read_file", path="/repo/a.py").target == "a.py"
    assert call("write_file", path="a.py", content="x").type is W
    assert call("run_terminal_cmd", command="pytest -q").is_validation
    assert call("fetch_url", url="https://a.b").type is F
    assert call("mystery_tool", x=1).type is C
    assert classify_action(ToolEvent(tool="", arguments={})).type is T


def test_raw_string_arguments_and_odd_values_do_not_break() -> None:
    assert classify_action(ToolEvent(tool="Bash", arguments='{"command": "ls"')).type is C
    assert call("Read", file_path=None).type is R
    assert call("str_replace_editor", command=5, path=["x"]).type is C


# --------------------------------------------------------------------------------------- user rules


def test_user_mapping_rules_win_and_validate() -> None:
    cfg = ActionsConfig(
        rules=[
            ActionRuleSpec(tool="repo_find*", type=ActionType.SEARCH, target=["q"], scope=["folder"]),
            ActionRuleSpec(tool="run_tests", type=ActionType.COMMAND, validation=True),
            ActionRuleSpec(tool="sandbox", kind="shell", target=["script"]),
            ActionRuleSpec(tool="re:fs\\.(read|cat)", type=ActionType.FILE_READ, target=["p"]),
            ActionRuleSpec(tool="Read", type=ActionType.NAVIGATE),  # overrides a built-in
        ],
        roots=["/srv/app"],
    )
    c = build_classifier(cfg)
    s = c(ToolEvent(tool="repo_finder", arguments={"q": "needle", "folder": "/srv/app/lib"}))
    assert (s.type, s.target) == (S, "needle @ lib")
    assert c(ToolEvent(tool="run_tests", arguments={})).is_validation
    assert (
        c(ToolEvent(tool="sandbox", arguments={"script": "sed -i 's/a/b/' /srv/app/x.py"})).target == "x.py"
    )
    assert c(ToolEvent(tool="fs.read", arguments={"p": "/srv/app/a.py"})).target == "a.py"
    assert c(ToolEvent(tool="Read", arguments={"file_path": "x"})).type is N
    with pytest.raises(ValueError, match="kind"):
        ActionRuleSpec(tool="x", kind="nope")
    with pytest.raises(ValueError, match="regular expression"):
        ActionRuleSpec(tool="re:(", type=ActionType.COMMAND)
    with pytest.raises(ValueError, match="scaffold"):
        ActionsConfig(scaffold="emacs")


def test_configured_scaffold_overrides_tool_hints() -> None:
    c = ActionClassifier(ActionVocabulary(scaffold="claude-code"))
    assert c(ToolEvent.shell("cat a.py")).scaffold == "claude-code"
    assert classify_action(ToolEvent.shell("cat a.py")).scaffold is None
    assert MappingRule(tool="x*", type=ActionType.PLAN).matches("xyz")


# -------------------------------------------------------------------------------------- paths, anchors


def test_paths_are_repo_relative_and_clean() -> None:
    n = PathNormaliser()
    assert n("/testbed/./pkg//mod.py") == "pkg/mod.py"
    assert n("/workspace/django__django__3.0/django/x.py") == "django/x.py"
    assert n("/pydicom__pydicom/pydicom/x.py") == "pydicom/x.py"
    assert n("'./a/../b.py'") == "b.py"
    assert n("x.py", cwd="/testbed/pkg") == "pkg/x.py"
    assert n("/home/me/proj/a.py") == "/home/me/proj/a.py"


def test_anchor_sets_from_diffs_and_lists() -> None:
    diff = "diff --git a/pkg/mod.py b/pkg/mod.py\n--- a/pkg/mod.py\n+++ b/pkg/mod.py\n@@ -1 +1 @@\n-a\n+b\n"
    assert files_of_diff(diff) == ["pkg/mod.py"]
    assert files_of_diff("--- a/x.py\n+++ b/x.py\n") == ["x.py"]
    anchors = AnchorSet.parse(diff)
    assert "pkg/mod.py" in anchors and "/home/me/proj/pkg/mod.py" in anchors and "mod.py" not in anchors
    assert AnchorSet.parse("a.py, /testbed/b/c.py").files == frozenset({"a.py", "b/c.py"})


def test_action_dict() -> None:
    a = sh("cat a.py")
    assert action_dict(a, "NEUTRAL") == {"type": "FILE_READ", "target": "a.py", "effect": "NEUTRAL"}

    class StepLike:
        action = a
        effect = None

    assert action_dict(StepLike()) == {"type": "FILE_READ", "target": "a.py", "effect": None}


# ----------------------------------------------------------------------------------------- real data


def _corpus(shared: Path) -> list[dict[str, object]]:
    path = shared / "data" / "swe-agent" / "trajectories.jsonl"
    return [json.loads(line) for line in path.open()]


def test_swe_agent_corpus_agrees_with_the_paper_roles(shared: Path) -> None:
    """Every step of the 81 runs classifies; the paper's navigation steps are reads/searches/navigation,
    its patch steps writes, and the scaffold's own tool strings never fall through to a generic command."""
    labels = {}
    for line in (shared / "data" / "swe-agent" / "labels.jsonl").open():
        d = json.loads(line)
        labels[d["id"]] = d["v351278e"]["per_step_roles"]
    by_role: Counter[tuple[str, ActionType]] = Counter()
    for run in _corpus(shared):
        for step, roles in zip(run["steps"], labels[run["id"]], strict=True):  # type: ignore[call-overload]
            calls = step["tool_calls"]
            if calls:
                fn = calls[0]["function"]
                event = ToolEvent(
                    tool=fn["name"], arguments=json.loads(fn["arguments"]), action=step["action"]
                )
            else:
                event = ToolEvent.shell(step["action"]) if step["action"] else ToolEvent(tool="")
            a = classify_action(event)
            assert a.target != "bash" and a.intent != "complex", step["action"]
            last = [r for r in roles if r != "general"]
            by_role[(last[-1] if last else "general", a.type)] += 1
    nav = sum(n for (r, t), n in by_role.items() if r == "L_navigate")
    assert sum(by_role[("L_navigate", t)] for t in (R, S, N)) == nav
    patch = sum(n for (r, t), n in by_role.items() if r == "P")
    assert by_role[("P", W)] >= 0.99 * patch
