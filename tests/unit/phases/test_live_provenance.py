"""A script's role by provenance, place and content, never by its name; the repository wherever the session
works (PHASES_LIVE.md §4, and the decided cases of §5 that concern them). Each case is a short run in one
session, with the run's root when the session's metadata records one; ``""`` is a general step."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from planguard.events import ToolEvent
from planguard.offline.replay import replay_pipeline
from planguard.phases import LETTER_OF
from planguard.run import RunModel, script_content
from planguard.session import Session

Call = str | ToolEvent


def letters(calls: list[Call], root: str | None = None) -> list[str]:
    """Each call's letters in one session whose metadata records ``root`` as its working directory."""
    session = Session("run", replay_pipeline(diagnostics=False), metadata={"cwd": root} if root else None)
    events = (ToolEvent.shell(c) if isinstance(c, str) else c for c in calls)
    return ["".join(LETTER_OF[r] for r in session.observe(e).classification.roles) for e in events]


def tool(name: str, arguments: Mapping[str, Any]) -> ToolEvent:
    return ToolEvent(tool=name, arguments=dict(arguments))


PATCH = "sed -i 's/a/b/' src/app.py"
PROBE = "from app import f\nprint(f())\n"


# --------------------------------------------------------------------------- names decide nothing


@pytest.mark.parametrize("name", ["reproduce_issue.py", "issue_probe.py", "final_demo.py", "zz.py"])
def test_a_created_script_has_its_role_whatever_its_name(name: str) -> None:
    create = f"str_replace_editor create /testbed/{name} --file_text '{PROBE}'"
    edit = f"str_replace_editor str_replace /testbed/{name} --old_str 'f()' --new_str 'f(1)'"
    run = [create, f"python {name}", edit, PATCH, f"cd /testbed && python {name}", edit, f"rm {name}"]
    assert letters(run) == ["R", "R", "R", "P", "V", "V", ""]


def test_a_heredoc_helper_run_in_the_same_call_is_not_a_patch() -> None:
    line = f"cat > final_check.py <<'EOF'\n{PROBE}EOF\npython3 final_check.py"
    assert letters([line, PATCH, line]) == ["RR", "P", "VV"]


def test_a_script_run_from_another_directory_is_the_same_script() -> None:
    create = tool("Write", {"file_path": "/home/u/proj/scripts/probe.py", "content": PROBE})
    assert letters([create, "cd scripts && python probe.py"], root="/home/u/proj") == ["R", "R"]


# --------------------------------------------------------------------------- place and content


@pytest.mark.parametrize(
    ("path", "content", "expected"),
    [
        ("probe.py", PROBE, "R"),  # the repository's top level, content that runs something
        ("scripts/probe.py", PROBE, "R"),  # a scripts-like folder
        ("src/pkg/helpers.py", PROBE, "P"),  # a new module of the package is a patch, whatever it holds
        ("probe.py", "def f():\n    return 1\n", "P"),  # a module that only defines things
        # a program the task asks for: classes, and an entry point that only starts it
        (
            "game.py",
            "class Game:\n    pass\n\ndef main():\n    Game()\n\nif __name__ == '__main__':\n    main()\n",
            "P",
        ),
        # a probe that defines a class and does its work under the __main__ guard
        (
            "poc.py",
            "import app\n\nclass P:\n    pass\n\nif __name__ == '__main__':\n    print(app.f(P()))\n",
            "R",
        ),
        ("check_it.py", "import pytest\n\ndef test_f():\n    assert True\n", "R"),  # test functions
        ("setup.py", "from setuptools import setup\nsetup()\n", "P"),  # the project's manifest
        ("README.md", "# app\n", "P"),  # documentation of the repository (§5)
    ],
)
def test_a_new_file_is_a_script_or_a_patch_by_place_and_content(
    path: str, content: str, expected: str
) -> None:
    write = tool("Write", {"file_path": f"/work/repo/{path}", "content": content})
    assert letters([write], root="/work/repo") == [expected]


def test_a_whole_file_write_of_a_file_the_run_has_read_is_a_change() -> None:
    read = tool("Read", {"file_path": "/work/repo/tool.py"})
    write = tool("Write", {"file_path": "/work/repo/tool.py", "content": PROBE})
    assert letters([read, write], root="/work/repo") == ["N", "P"]


def test_content_judgement() -> None:
    assert script_content(PROBE, "x.py") is True
    assert script_content("import app\n", "x.py") is True  # it imports the package under work, no more
    assert script_content("def f():\n    pass\n", "x.py") is False
    assert script_content("", "x.py") is None
    assert script_content("set -e\npytest\n", "run.sh") is True
    assert script_content("console.log(require('./lib').f())\n", "probe.js") is True
    assert script_content("export function f() {}\n", "lib.js") is False


# --------------------------------------------------------------------------- a script that patches


def test_a_created_script_that_rewrites_a_source_file_is_a_patch_when_run() -> None:
    fix = "p = 'src/app.py'\ns = open(p).read()\nopen(p, 'w').write(s.replace('a - b', 'a + b'))\n"
    run = [
        "str_replace_editor view /testbed/src/app.py",
        f'str_replace_editor create /testbed/apply_fix.py --file_text "{fix}"',
        "python apply_fix.py",
        "python -m pytest tests",
    ]
    assert letters(run) == ["N", "R", "P", "v"]


def test_a_fix_script_under_tmp_that_rewrites_a_source_file_registers_a_patch() -> None:
    fix = "cat > /tmp/fix.py <<'EOF'\nopen('/testbed/src/app.py', 'w').write('x = 1\\n')\nEOF"
    run = ["cat /testbed/src/app.py", fix, "python /tmp/fix.py", "python -m pytest tests"]
    assert letters(run) == ["N", "R", "P", "v"]


def test_a_script_that_only_writes_its_own_scratch_files_stays_a_test() -> None:
    probe = "open('fixture_data.json', 'w').write('{}')\nimport app\nprint(app.load('fixture_data.json'))\n"
    run = [tool("Write", {"file_path": "/work/repo/probe.py", "content": probe}), "python probe.py"]
    assert letters(run, root="/work/repo") == ["R", "R"]


# --------------------------------------------------------------------------- the repository wherever it lives


ROOT = "/tmp/pytest-7/work/repo"


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (f"sed -i 's/a/b/' {ROOT}/src/app.py", "P"),  # a repository under /tmp is a repository
        (f"cat > {ROOT}/src/app.py <<'EOF'\nx = 1\nEOF", "P"),
        (f"cat > {ROOT}/probe.py <<'EOF'\n{PROBE}EOF", "R"),
        (f"cat > /tmp/scratch.py <<'EOF'\n{PROBE}EOF", "R"),  # scratch: outside the root
        ("echo done > /tmp/out.txt", ""),
        (f"python -m pytest {ROOT}/tests/test_app.py", "r"),
    ],
)
def test_a_repository_under_tmp(call: str, expected: str) -> None:
    assert letters([call], root=ROOT) == [expected]


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        ("echo 'x' > /home/u/notes/todo.txt", ""),  # a write outside the repository is not a patch (§5)
        ("echo 'x' > /home/u/proj/CHANGELOG.md", "P"),  # documentation of the repository is (§5)
    ],
)
def test_writes_outside_the_recorded_repository(call: str, expected: str) -> None:
    assert letters([call], root="/home/u/proj") == [expected]


# --------------------------------------------------------------------------- the model itself


def test_the_run_model_is_bounded_and_keeps_names() -> None:
    from planguard.run import MAX_FILES, RunChanges

    model = RunModel("/r")
    model.apply(RunChanges(scripts=tuple((f"s{i}.py", ()) for i in range(MAX_FILES + 10))))
    assert len(model.scripts) == MAX_FILES
    assert not model.script("s0.py") and model.script("sub/dir/s20.py")  # by its file name
    model.apply(RunChanges(scripts=(("fix.py", ("src/a.py",)),), seen=("src/a.py",)))
    assert model.writes("other/fix.py") == ("src/a.py",) and model.known("src/a.py")


# --------------------------------------------------------------------------- the action reads the run model


def source_writes(calls: list[Call], root: str | None = None) -> list[bool | None]:
    """Each call's action's "changes a source file", as the session's one reading makes it."""
    session = Session("run", replay_pipeline(), metadata={"cwd": root} if root else None)
    events = (ToolEvent.shell(c) if isinstance(c, str) else c for c in calls)
    out: list[bool | None] = []
    for e in events:
        action = session.observe(e).action
        out.append(action.is_source_write if action is not None and action.type == "FILE_WRITE" else None)
    return out


def test_the_action_of_a_write_follows_what_the_run_made_not_the_name() -> None:
    for name in ("issue_probe.py", "reproduce_issue.py"):
        create = tool(
            "str_replace_editor", {"command": "create", "path": f"/testbed/{name}", "file_text": PROBE}
        )
        edit = tool(
            "str_replace_editor",
            {"command": "str_replace", "path": f"/testbed/{name}", "old_str": "f()", "new_str": "f(1)"},
        )
        # The run's own script, written and edited, then removed: never the repository's source.
        assert source_writes([create, edit, f"rm {name}", PATCH]) == [False, False, False, True]


def test_a_new_module_in_a_folder_named_like_a_probe_is_source() -> None:
    module = "class Config:\n    debug = False\n"
    create = tool(
        "str_replace_editor", {"command": "create", "path": "/testbed/repro/conf.py", "file_text": module}
    )
    assert source_writes([create]) == [True]


def test_a_line_that_removes_its_script_and_patches_writes_source() -> None:
    line = "rm probe_x.py; echo 'x = 1' > src/app.py"
    assert source_writes([f"cat > probe_x.py <<'EOF'\n{PROBE}EOF", line]) == [False, True]


def test_an_edit_of_the_open_file_is_judged_by_that_file() -> None:
    # SWE-agent 0.x: ``edit`` changes the file ``open`` left open; a recording may not name it.
    run = ["create zz_probe.py", "open zz_probe.py", "edit 1:1\nprint(1)\nend_of_edit"]
    assert source_writes(run)[2] is False
    assert source_writes(["open src/app.py", "edit 1:1\nx = 1\nend_of_edit"])[1] is True


def test_replay_reads_each_call_once() -> None:
    assert replay_pipeline(rules="live").one_reading is not None
    assert replay_pipeline(rules="v351278e").one_reading is None  # the paper's rules read calls their way


# ------------------------------------------------------------------ restores and folders the run made


def run_model_after(calls: list[Call], root: str | None = None) -> RunModel:
    session = Session("run", replay_pipeline(diagnostics=False), metadata={"cwd": root} if root else None)
    for c in calls:
        session.observe(ToolEvent.shell(c) if isinstance(c, str) else c)
    model: RunModel = session.phase_state.run
    return model


@pytest.mark.parametrize(
    "restore",
    ["cp app.py.bak app.py", "cp app.py.orig app.py", "git checkout -- app.py", "git restore app.py"],
)
def test_a_restored_file_is_the_repositorys_not_a_new_script(restore: str) -> None:
    rewrite = f"cat > app.py <<'EOF'\n{PROBE}EOF"
    # Restoring a source file is a patch (§5), and the file is known to exist: writing it whole again is a
    # change to it, not the creation of a new script.
    assert letters([restore, rewrite]) == ["P", "P"]
    assert run_model_after([restore]).known("app.py")


def test_a_backup_copy_is_not_a_restore() -> None:
    assert letters(["cp app.py app.py.bak"]) == [""]
    assert not run_model_after(["cp app.py app.py.bak"]).known("app.py")


def test_a_folder_the_run_made_holds_its_scripts_and_its_removal_is_cleanup() -> None:
    model = run_model_after(["mkdir -p lab/case"])
    assert model.created("lab/case") and model.created("lab/case/x.py") and not model.created("lab/x.py")
    probe = tool(
        "str_replace_editor", {"command": "create", "path": "/testbed/lab/case/main.py", "file_text": PROBE}
    )
    module = tool(
        "str_replace_editor",
        {"command": "create", "path": "/testbed/lab/case/mod.py", "file_text": "class A:\n    x = 1\n"},
    )
    # A print script in the run's folder is its script (R); a module there is still a patch.
    assert letters(["mkdir -p lab/case", probe, "python lab/case/main.py", module]) == ["", "R", "R", "P"]
    assert letters(["mkdir -p /testbed/lab/case", "rm -rf lab/case"]) == ["", ""]
    assert letters(["rm -rf lab/case"]) == ["P"]  # a folder the run did not make


def test_a_folder_made_in_the_same_call_counts() -> None:
    line = f"mkdir -p lab && cat > lab/main.py <<'EOF'\n{PROBE}EOF"
    assert letters([line]) == ["R"]


def test_mkdir_mode_values_are_not_folders() -> None:
    assert run_model_after(["mkdir -m 755 lab"]).folders.keys() == {"lab"}
