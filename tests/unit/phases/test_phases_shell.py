"""The shell-aware splitter and the paper's command parser built on it."""

from __future__ import annotations

import shlex

import pytest

from planguard.actions.lexer import MAX_NESTING
from planguard.phases.shell import Piece, complex_command, is_simple_heredoc, parse_action, scan, split_words


def labels(action: str) -> list[str]:
    out = []
    for c in parse_action(action):
        out.append(f"{c.tool}: {c.subcommand}" if c.kind == "tool" and c.subcommand else c.tool or c.command)
    return out


@pytest.mark.parametrize(
    ("action", "expected"),
    [
        ("cd /testbed && python reproduce.py", ["cd", "python"]),
        ("a || b ; c & d", ["a", "b", "c", "d"]),
        ("edit 1:2\nx = 2\nend_of_edit", ["edit", "x", "end_of_edit"]),  # legacy 0.x edit block
        ("grep x f | head -5 | sort", ["grep"]),  # pipes are not split
        ('echo "a && b; c" && ls', ["echo", "ls"]),  # operators inside quotes
        ("echo 'x ; y' ; ls", ["echo", "ls"]),
        ("echo $(cd x && ls) && pwd", ["echo", "pwd"]),  # command substitution is one word
        ("ls -la && # a comment && ignored\npwd", ["ls", "pwd"]),
        ("PYTHONPATH=/testbed python x.py", ["set_env", "python"]),
        ("A=1 B=2", ["set_env"]),
        ("cd /testbed && for f in *.py; do echo $f; done", ["cd", "complex_command"]),
        ("for f in *.py; do grep -l foo $f; done", ["complex_command"]),
        ("if true; then ls; fi", ["complex_command"]),
        ("while true; do ls; done\necho hi", ["complex_command", "echo"]),
        ("true && (cd x; ls) && false", ["true", "complex_command", "false"]),
        ("true && { ls; } && false", ["true", "complex_command", "false"]),
        ("f() { ls; }\nf", ["complex_command"]),  # a function definition on its own line
        ("echo 'unterminated", ["complex_command"]),
        ("echo $((1 + 2))", ["complex_command"]),
        ("[[ -f x ]] && ls", ["complex_command"]),
        ("ls && && pwd", ["complex_command"]),
        ("str_replace_editor view /testbed/x.py  --view_range 1 50", ["str_replace_editor: view"]),
        ("str_replace_editor frobnicate /x", []),  # unknown subcommand: no command, as in the paper
        ("submit", ["submit"]),
        ("", []),
    ],
)
def test_split(action: str, expected: list[str]) -> None:
    assert labels(action) == expected


def test_simple_heredoc_is_one_command_with_body_and_target() -> None:
    action = "cat <<'EOF' > /testbed/reproduce_bug.py\nimport foo\nprint(foo.bar())\nEOF"
    assert is_simple_heredoc(action)
    (cmd,) = parse_action(action)
    assert cmd.command == "cat" and cmd.heredoc
    assert cmd.args == ("import foo\nprint(foo.bar())", ">", "/testbed/reproduce_bug.py")


def test_heredoc_after_an_operator_is_not_simple() -> None:
    quoted = "cd /x && cat > t.py <<'EOF'\nprint(1)\nEOF"
    assert not is_simple_heredoc(quoted)
    # The paper's bash grammar never finds the quoted delimiter line, so the whole action is complex.
    assert labels(quoted) == ["complex_command"]
    unquoted = "cd /x && cat > t.py <<EOF\nprint(1)\nEOF\npython t.py"
    assert labels(unquoted) == ["cd", "cat", "python"]  # the body is skipped


def test_redirection_targets_stay_in_the_arguments() -> None:
    (cmd,) = parse_action("echo 'x = 1' > /testbed/pkg/extra.py")
    assert cmd.args == ("x = 1", ">", "/testbed/pkg/extra.py")


def test_bash_flag_parsing_matches_the_paper() -> None:
    (grep,) = parse_action('grep -n "return >= 0" /testbed/pkg/core.py')
    assert grep.flags == (("n", "return >= 0"),) and grep.args == ("/testbed/pkg/core.py",)
    (py,) = parse_action('python -c "import x; x.f()" extra')
    assert py.flags == (("c", "import x; x.f()"),) and py.args == ("extra",)
    (bundled,) = parse_action("bash -lc 'ls -la'")
    assert bundled.flags == (("l", True), ("c", "ls -la"))


@pytest.mark.parametrize(
    "text",
    [
        "a 'b c' \"d e\" f\\ g",
        "echo \"a\\\"b\" 'c'\"'\"'d'",
        "x '' \"\" y",
        "a\\\nb",
        "tab\tsep\r\nline",
        'echo "$HOME" \\$x',
        "str_replace_editor create /x --file_text 'it'\"'\"'s\n  fine'",
    ],
)
def test_split_words_is_posix_shlex(text: str) -> None:
    assert split_words(text) == shlex.split(text)


@pytest.mark.parametrize("text", ["echo 'open", 'echo "open', "trailing\\"])
def test_split_words_rejects_what_shlex_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        shlex.split(text)
    assert split_words(text) is None


def test_scan_marks_compound_pieces() -> None:
    pieces = scan("ls | while read l; do echo $l; done && pwd")
    assert pieces is not None
    assert [(p.text, p.complex) for p in pieces] == [
        ("ls | while read l; do echo $l; done", True),
        ("pwd", False),
    ]


def test_long_quoted_argument_is_fast_and_exact() -> None:
    body = ("x = 'it''s' # a > b && c || d ; e | f\n" * 2000).replace("'", "'\"'\"'")
    action = f"str_replace_editor create /testbed/test_big.py --file_text '{body}'"
    (cmd,) = parse_action(action)
    assert cmd.subcommand == "create" and cmd.tool_arg("path") == "/testbed/test_big.py"


@pytest.mark.parametrize(
    ("opening", "closing"),
    [
        ("echo $(echo ", ")"),
        ('echo "$(echo ', ')"'),
        ("cat <(echo ", ")"),
        ("( ", ")"),
        ("{ ", "; }"),
        ("if true; then ", "; fi"),
        ('echo ${a:-"', '"}'),
        ('echo $"', '"'),
    ],
)
def test_deep_nesting_is_a_clean_rejection(opening: str, closing: str) -> None:
    """Nesting past MAX_NESTING is rejected (one complex_command, as the paper's parser does on a parse
    failure) by the bound, not by running into the interpreter's recursion limit: 10,000 levels are
    rejected at once, and a caller deep in its own stack gets the same answer."""

    def nested(n: int) -> str:
        return opening * n + "x" + closing * n

    assert scan(nested(MAX_NESTING)) is not None
    assert scan(nested(MAX_NESTING + 1)) is None
    assert parse_action(nested(10_000)) == (complex_command(nested(10_000)),)

    def deep_caller(frames: int) -> tuple[Piece, ...] | None:
        return scan(nested(MAX_NESTING)) if frames == 0 else deep_caller(frames - 1)

    assert deep_caller(300) is not None
