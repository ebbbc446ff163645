"""The corrected rules: each quirk of the paper's classifier (PHASE_RULES section 4), paper vs corrected.

Each test runs the same actions through ``v351278e`` and ``corrected`` and pins both outputs, so the
paper's behaviour stays documented next to the fix.
"""

from __future__ import annotations

import pytest

from planguard.events import ToolEvent
from planguard.phases import get_rules, is_test_path_corrected, is_test_path_paper


def letters(version: str, actions: list[str]) -> list[str]:
    rules = get_rules(version)
    state = rules.new_state()
    out = []
    for action in actions:
        c = rules.classify(ToolEvent.shell(action), state)
        state.apply(c)
        out.append(c.letters)
    return out


CREATE_REPRO = "str_replace_editor create /testbed/reproduce.py --file_text 'print(1)\n'"
PATCH = "str_replace_editor str_replace /testbed/pkg/core.py   --old_str 'a' --new_str 'b'"


@pytest.mark.parametrize(
    ("actions", "paper", "corrected"),
    [
        # stderr-only redirection is not a write
        (['grep -rn "def f" /testbed/pkg 2>/dev/null'], ["P"], ["N"]),
        (["ls /testbed 2>&1"], ["P"], ["N"]),
        # a quoted ">" is text, not a redirection
        (['grep -n "return >= 0" /testbed/pkg/core.py'], ["P"], ["N"]),
        # the python run keeps its meaning when stderr is merged: it runs the created script
        ([CREATE_REPRO, "cd /testbed && python reproduce.py 2>&1"], ["R", "r"], ["R", "R"]),
        # ... and a stdout redirect to a scratch file does not hide it either
        ([CREATE_REPRO, "python /testbed/reproduce.py > /tmp/out.txt"], ["R", "r"], ["R", "R"]),
        # writing /dev/null is not a patch
        (["ls /testbed > /dev/null"], ["P"], ["N"]),
    ],
)
def test_redirection_quirks(actions: list[str], paper: list[str], corrected: list[str]) -> None:
    assert letters("v351278e", actions) == paper
    assert letters("corrected", actions) == corrected


def test_real_writes_still_count() -> None:
    assert letters("corrected", ["echo 'x = 1' > /testbed/pkg/extra.py"]) == ["P"]
    assert letters("corrected", ["echo 'def test_x(): pass' > /testbed/tests/test_new.py"]) == ["R"]
    assert letters("corrected", ["cd /testbed && python x.py | tee /testbed/tests/test_out.py"]) == ["R"]


@pytest.mark.parametrize(
    ("path", "paper", "corrected"),
    [
        ("/testbed/django/views/debug.py", True, False),
        ("/testbed/repro_issue.py", False, True),
        ("tests/runtests.py", False, True),
        ("/testbed/sympy/printing/tests/test_latex.py", True, True),
        ("/testbed/pkg/core.py", False, False),
        ("/testbed/latest_release.py", True, False),  # "test_" inside "latest_release"
        ("/testbed/testing/test_collection.py", True, True),
        ("/testbed/src/foo_test.go", True, True),
    ],
)
def test_test_path_detection(path: str, paper: bool, corrected: bool) -> None:
    assert is_test_path_paper(path) is paper
    assert is_test_path_corrected(path) is corrected


def test_debug_source_file_is_navigation() -> None:
    action = ["str_replace_editor view /testbed/django/views/debug.py"]
    assert letters("v351278e", action) == ["r"]
    assert letters("corrected", action) == ["N"]


@pytest.mark.parametrize(
    "script", ["/testbed/verify_fix.py", "/testbed/check_behavior.py", "/testbed/repro_issue.py", "/tmp/t.py"]
)
def test_created_helper_scripts_are_tests(script: str) -> None:
    actions = [f"str_replace_editor create {script} --file_text 'print(1)\n'", f"python {script}"]
    assert letters("v351278e", actions) == ["P", "v"]
    assert letters("corrected", actions) == ["R", "R"]
    after_patch = [PATCH, *actions]
    assert letters("corrected", after_patch) == ["P", "V", "V"]


def test_helper_names_count_only_when_created() -> None:
    # An existing source file named like a helper is neither a test nor a patch when viewed.
    assert letters("corrected", ["str_replace_editor view /testbed/django/core/check_x.py"]) == ["N"]
    # Removing a created helper is still general.
    created = "str_replace_editor create /testbed/verify_fix.py --file_text 'x'"
    assert letters("corrected", [created, "rm /testbed/verify_fix.py"]) == ["R", ""]


def test_runtests_before_patch_is_regression_reproduction() -> None:
    actions = ["cd /testbed && python tests/runtests.py queries"]
    assert letters("v351278e", actions) == [""]
    assert letters("corrected", actions) == ["r"]


def test_inline_python_write_records_created_test() -> None:
    write = "python -c \"open('/testbed/tests/t.py','w').write('x')\""
    assert letters("v351278e", [write, "python /testbed/tests/t.py"]) == ["r", "r"]
    assert letters("corrected", [write, "python /testbed/tests/t.py"]) == ["R", "R"]


def test_inline_python_write_regex_fallback() -> None:
    # The snippet does not parse (a stray ")"); the paper then finds no write, corrected still does.
    write = "python -c \"open('/testbed/pkg/core.py', 'w').write('x'))\""
    assert letters("v351278e", [write]) == [""]
    assert letters("corrected", [write]) == ["P"]


def test_complex_command_is_general() -> None:
    loop = "for f in tests/*.py; do python $f 2>&1 | tail -1; done"
    # The paper's token scan sees "2>&1" inside the loop's text and calls the whole loop a patch.
    assert letters("v351278e", [loop]) == ["P"]
    assert letters("corrected", [loop]) == [""]


def test_unquoted_heredoc_is_input_not_write() -> None:
    assert letters("v351278e", ["cd /testbed && git commit -F - <<EOF\nmsg\nEOF"]) == ["P"]
    assert letters("corrected", ["cd /testbed && git commit -F - <<EOF\nmsg\nEOF"]) == [""]


def test_versioned_python_is_python() -> None:
    assert letters("v351278e", [CREATE_REPRO, "python3.11 /testbed/reproduce.py"]) == ["R", ""]
    assert letters("corrected", [CREATE_REPRO, "python3.11 /testbed/reproduce.py"]) == ["R", "R"]
