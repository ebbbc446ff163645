"""Effects of restoring and rewriting a file (TraceProbe's REVERTED): copying a backup back onto a file takes
back the edits made since the backup; a whole-file write takes back only what it no longer holds."""

from __future__ import annotations

from planguard.actions import Effect, classify_action, label_effects
from planguard.events import ToolEvent

S, R = Effect.SURVIVED, Effect.REVERTED


def labels(commands: list[str | ToolEvent]) -> list[Effect]:
    events = [ToolEvent.shell(c, exit_code=0) if isinstance(c, str) else c for c in commands]
    return label_effects([classify_action(e) for e in events], events)


def edit(path: str, old: str, new: str) -> str:
    return f"str_replace_editor str_replace /testbed/{path} --old_str '{old}' --new_str '{new}'"


def test_copying_a_backup_back_reverts_the_edits_made_since_the_backup() -> None:
    run = [
        edit("src/app.py", "a - b", "a + b"),  # kept: made before the backup
        "cp src/app.py src/app.py.bak",
        edit("src/app.py", "return", "print('debug 1')\n    return"),
        edit("src/app.py", "x = 1", "print('debug 2')\n    x = 1"),
        "cp src/app.py.bak src/app.py",
    ]
    assert labels(run) == [S, S, R, R, S]


def test_a_move_of_a_backup_made_elsewhere_reverts_every_edit() -> None:
    run = [
        edit("src/app.py", "a - b", "a + b"),
        edit("src/app.py", "x = 1", "x = 2"),
        "mv /tmp/app.py.orig src/app.py",  # a backup the recording never saw being made
    ]
    assert labels(run) == [R, R, S]


def test_a_copy_from_another_file_reverts_nothing() -> None:
    run = [
        edit("src/app.py", "a - b", "a + b"),
        "cp src/template.py src/app.py.new",
        "cp src/other.py src/app2.py",
    ]
    assert labels(run) == [S, S, S]


def test_git_checkout_and_restore_revert_every_edit() -> None:
    for restore in ("git checkout -- src/app.py", "git restore src/app.py"):
        assert labels([edit("src/app.py", "a", "b"), edit("src/app.py", "c", "d"), restore]) == [R, R, S]


def test_a_whole_file_write_reverts_only_what_it_removes() -> None:
    kept = "def add(a, b):\n    return a + b"
    dropped = "print('debug')"
    whole = ToolEvent(
        tool="Write",
        arguments={
            "file_path": "/repo/src/app.py",
            "content": f"{kept}\n\n\ndef sub(a, b):\n    return a - b\n",
        },
        exit_code=0,
    )
    run = [
        ToolEvent(
            tool="Edit",
            arguments={"file_path": "/repo/src/app.py", "old_string": "a - b", "new_string": kept},
        ),
        ToolEvent(
            tool="Edit", arguments={"file_path": "/repo/src/app.py", "old_string": "x", "new_string": dropped}
        ),
        whole,
    ]
    assert labels(run) == [S, R, S]


def test_a_whole_file_write_without_known_content_reverts_every_edit() -> None:
    run = [edit("src/app.py", "a", "b"), "cp /somewhere/app.py src/app.py", "echo x > src/app.py"]
    assert labels(run)[0] is R
