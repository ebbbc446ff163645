"""Session state, purity of classify, within-step effects, ordering, scaffolds and the registry."""

from __future__ import annotations

import pytest

from planguard.events import ToolEvent
from planguard.phases import (
    GENERAL,
    LETTER_OF,
    MAX_CREATED_TESTS,
    NAVIGATE,
    PATCH,
    REPRODUCE_NEW,
    ROLE_OF_LETTER,
    RULE_VERSIONS,
    VALIDATE_NEW,
    VALIDATE_REGRESSION,
    Classification,
    Command,
    PhaseState,
    get_rules,
)


def run(actions: list[ToolEvent], version: str = "v351278e") -> list[Classification]:
    rules = get_rules(version)
    state = rules.new_state()
    out = []
    for event in actions:
        c = rules.classify(event, state)
        state.apply(c)
        out.append(c)
    return out


def test_letters_round_trip() -> None:
    assert {LETTER_OF[r] for r in ROLE_OF_LETTER.values()} == set("NRrPVv")
    assert all(ROLE_OF_LETTER[LETTER_OF[r]] == r for r in LETTER_OF)


def test_get_rules_names() -> None:
    assert RULE_VERSIONS == ("live", "v351278e", "v8ec988e", "corrected")
    assert get_rules().name == "live"  # the default: PHASES_LIVE.md
    for name in ("live", "v351278e", "v8ec988e"):
        assert get_rules(name).name == name
    assert get_rules("corrected") is get_rules("live")  # a documented alias
    with pytest.raises(ValueError, match="live, v351278e, v8ec988e, corrected"):
        get_rules("v2")


def test_classify_does_not_mutate_state() -> None:
    rules = get_rules("v351278e")
    state = rules.new_state()
    event = ToolEvent.shell("str_replace_editor create /testbed/test_x.py --file_text 'x'")
    c = rules.classify(event, state)
    assert c.created == ("/testbed/test_x.py",) and state.created == {} and state.node_count == 0
    patch = rules.classify(ToolEvent.shell("sed -i 's/a/b/' /testbed/pkg/core.py"), state)
    assert patch.patched and not state.has_patch
    state.apply(patch)
    assert state.has_patch


def test_effects_within_one_step() -> None:
    # A patch, then a run of a created test, in the same step: the run already validates.
    create = ToolEvent.shell("str_replace_editor create /testbed/reproduce.py --file_text 'x'")
    step = ToolEvent.shell("sed -i 's/a/b/' /testbed/pkg/core.py && python /testbed/reproduce.py")
    out = run([create, step])
    assert [c.role for c in out[1].commands] == [PATCH, VALIDATE_NEW]
    # A test written and run in one step is a newly generated test from the start.
    write_and_run = ToolEvent.shell("echo 'x' > /testbed/test_a.py && python /testbed/test_a.py")
    (c,) = run([write_and_run])
    assert c.roles == (REPRODUCE_NEW, REPRODUCE_NEW) and c.created == ("/testbed/test_a.py",)


def test_paper_orders_a_step_by_first_sighting() -> None:
    # The paper lists a step's sub-commands in the order its graph first saw each distinct one,
    # so an echo repeated from an earlier step comes before the new rm (real case from the data).
    echo = 'echo "x = 1" > /testbed/myapp/models.py'
    out = run(
        [ToolEvent.shell(f"cd /testbed && {echo}"), ToolEvent.shell(f"cd /testbed && rm -rf a && {echo}")]
    )
    assert [c.label for c in out[1].commands] == ["cd", "echo", "rm"]
    assert [c.role for c in out[1].commands] == [GENERAL, PATCH, GENERAL]


def test_think_and_submit() -> None:
    out = run([ToolEvent(tool="", arguments={}, action=""), ToolEvent(tool="", arguments={})])
    assert all(c.commands == (Command("think", GENERAL),) for c in out)
    assert run([ToolEvent.shell("submit")])[0].commands == (Command("submit", GENERAL),)


def test_created_set_is_bounded() -> None:
    state = PhaseState()
    for i in range(MAX_CREATED_TESTS + 10):
        state.add_created(f"/t/test_{i}.py")
    assert len(state.created) == MAX_CREATED_TESTS
    assert not state.is_created("/t/test_0.py") and state.is_created("/x/test_10.py")
    assert sum(state.created_basenames.values()) == MAX_CREATED_TESTS


def test_openhands_calls() -> None:
    out = run(
        [
            ToolEvent(tool="execute_bash", arguments={"command": "cd /workspace && grep -rn foo src"}),
            ToolEvent(tool="str_replace_editor", arguments={"command": "create", "path": "/w/test_fix.py"}),
            ToolEvent(
                tool="str_replace_editor", arguments='{"command": "str_replace", "path": "/w/src/a.py"}'
            ),
            ToolEvent(tool="execute_bash", arguments={"command": "python /w/test_fix.py"}),
            ToolEvent(tool="think", arguments={"thought": "hmm"}),
            ToolEvent(tool="finish", arguments={"message": "done > ok"}),
        ]
    )
    assert "".join(c.letters for c in out) == "NRPV"
    assert out[-1].commands == (Command("finish", GENERAL),)


def test_claude_code_calls() -> None:
    out = run(
        [
            ToolEvent(tool="Read", arguments={"file_path": "/repo/src/a.py"}),
            ToolEvent(tool="Grep", arguments={"pattern": "def f", "path": "/repo/src"}),
            ToolEvent(tool="Glob", arguments={"pattern": "**/test_*.py"}),
            ToolEvent(tool="Write", arguments={"file_path": "/repo/reproduce_bug.py", "content": "x"}),
            ToolEvent(tool="Bash", arguments={"command": "python /repo/reproduce_bug.py"}),
            ToolEvent(
                tool="Edit", arguments={"file_path": "/repo/src/a.py", "old_string": "a", "new_string": "b"}
            ),
            ToolEvent(tool="Bash", arguments={"command": "python -m pytest tests/ -q"}),
            ToolEvent(tool="TodoWrite", arguments={"todos": []}),
            ToolEvent(tool="WebFetch", arguments="not json at all"),
        ]
    )
    assert [c.letters for c in out] == ["N", "N", "r", "R", "R", "P", "v", "", ""]
    assert out[0].commands[0].label == "Read" and out[7].commands == (Command("TodoWrite", GENERAL),)


def test_mini_swe_agent_block_is_a_shell_line() -> None:
    out = run(
        [
            ToolEvent.shell("cd /repo && sed -n '1,20p' src/a.py"),
            ToolEvent.shell("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"),
        ]
    )
    assert [c.roles for c in out] == [(NAVIGATE,), ()]


def test_unknown_tools_and_odd_arguments() -> None:
    rules = get_rules("v351278e")
    state = rules.new_state()
    for event in [
        ToolEvent(tool="frobnicate", arguments={"x": 1}),
        ToolEvent(tool="bash", arguments={"command": 42}),
        ToolEvent(tool="bash", arguments="ls -la /tests/"),
        ToolEvent(tool="str_replace_editor", arguments={"command": "view"}),
        ToolEvent(tool="Read", arguments=["not", "a", "mapping"]),  # type: ignore[arg-type]
    ]:
        c = rules.classify(event, state)
        assert isinstance(c, Classification)
    assert rules.classify(ToolEvent(tool="frobnicate"), state).commands == (Command("frobnicate", GENERAL),)
    assert rules.classify(ToolEvent(tool="bash", arguments="ls -la /tests/"), state).roles == (
        "L_reproduce_regression_test",
    )


def test_post_patch_python_is_always_validation() -> None:
    patch = ToolEvent.shell("str_replace_editor str_replace /testbed/a.py --old_str 'a' --new_str 'b'")
    out = run([patch, ToolEvent.shell("python setup.py --version")])
    assert out[1].roles == (VALIDATE_REGRESSION,)
