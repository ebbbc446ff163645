"""The paper's parser reads a shell line through the one shell lexer: what it splits, and how.

``scan`` cuts a line into the pieces the paper's grammar parses (``complex`` marks a subshell, group or
compound command), or gives None where bashlex would refuse the line; the examples below spell out what
it gives. ``split_words`` is POSIX ``shlex.split`` read by the lexer: stdlib ``shlex`` is its reference.
"""

from __future__ import annotations

import shlex

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planguard.phases.shell import parse_action, scan, split_words

# Fragments of the constructs the grammar and the lexer's strict mode decide on: quotes and escapes,
# separators and pipes, redirections and heredocs, subshells, groups, compound commands, backquotes,
# ``$(…)``, ``${…}``, ``$'…'``, arithmetic, comments and function definitions.
FRAGMENTS = [
    *("ls", "cat", "echo", "grep", "python", "-c", "-n", "x", "a=b", "src/app.py", "'EOF'", '"EOF"'),
    *("EOF", "PY", "\\EOF", "!", "{", "}", "if", "then", "elif", "else", "fi", "for", "in", "do"),
    *("done", "while", "until", "case", "esac", "time", "[[", "]]", "function", "f", "f()", "()"),
    *("&&", "||", ";", ";;", "&", "|", "|&", "\n", "\n\n", " ", "\t", "\\\n", "#", "# note"),
    *(">", ">>", "2>", "2>&1", ">&2", "&>", "&>>", "<", "<<", "<<-", "<<<", "<>", ">|", "<&", "3>&-"),
    *("<(", ">(", "(", ")", "((", "))", "$((", "$[", "$(", "${", "}", "$'", '$"', "$x", "$"),
    *("`", "`ls`", "'", '"', "\\", "\\'", '\\"', "'a b'", '"a $x b"', '"$(ls)"', "'it'\"'\"'s'"),
    *("\tEOF", "EOF\n", "\nEOF\n", "\nPY", "\n\tEOF"),
]

shell_lines = st.one_of(
    st.lists(st.sampled_from(FRAGMENTS), max_size=30).map(" ".join),
    st.lists(st.sampled_from(FRAGMENTS), max_size=30).map("".join),
    st.text(alphabet=st.sampled_from(list("ab $(){}`'\"\\;&|<>#!\n\t-=")), max_size=80),
)


def _pieces(pieces: tuple[object, ...] | None) -> list[tuple[str, bool]] | None:
    if pieces is None:
        return None
    return [(p.text, p.complex) for p in pieces]  # type: ignore[attr-defined]


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shell_lines)
def test_scan_pieces_are_the_line_in_order(line: str) -> None:
    pieces = scan(line)
    if pieces is None:
        return
    at = 0
    for piece in pieces:
        found = line.find(piece.text, at)
        assert found >= 0, (line, piece)
        at = found + len(piece.text)


#: Lines and what ``scan`` gives for each (None: bashlex refuses the line).
EXAMPLES: list[tuple[str, list[tuple[str, bool]] | None]] = [
    (
        "cd /testbed && python -m pytest tests/test_x.py -q 2>&1 | tail -5",
        [("cd /testbed", False), ("python -m pytest tests/test_x.py -q 2>&1 | tail -5", False)],
    ),
    # bashlex compares a quoted delimiter with its quotes: ``<<'EOF'`` is never closed by ``EOF``.
    ("cat > a.py <<'EOF'\nprint('x')\nEOF\npython a.py", None),
    ("cat <<-EOF\n\tbody\n\tEOF\necho done", [("cat <<-EOF", False), ("echo done", False)]),
    (
        "(cd src && ls) ; { echo a; echo b; } > out.txt",
        [("(cd src && ls)", True), ("{ echo a; echo b; } > out.txt", True)],
    ),
    ('for f in $(ls *.py); do echo "$f"; done', [('for f in $(ls *.py); do echo "$f"; done', True)]),
    (
        "if [ -f x ]; then echo `cat x`; else echo none; fi",
        [("if [ -f x ]; then echo `cat x`; else echo none; fi", True)],
    ),
    (
        "echo ${HOME:-'/root'} $'a\\'b' \"$(echo \\\"q\\\")\"",
        [("echo ${HOME:-'/root'} $'a\\'b' \"$(echo \\\"q\\\")\"", False)],
    ),
    ("diff <(sort a) <(sort b)", [("diff <(sort a) <(sort b)", False)]),
    ("f() { echo hi; }", None),
    ("function g { ls; }\ng", None),
    ("echo $((1+2))", None),
    ("[[ -n x ]] && echo y", None),
    ("case x in x) echo;; esac", None),
    ("echo 'unterminated", None),
    ("cat <<EOF\nnever closed", None),
    ("ls &&", None),
    ("; ls", None),
    ("(( i++ )) && echo $i", [("(( i++ ))", True), ("echo $i", False)]),
    ("echo a \\\n  b # comment\nls", [("echo a \\\n  b", False), ("ls", False)]),
    ("! grep -q x file | cat", [("! grep -q x file | cat", False)]),
    ("cat > a <<EOF\nx && y\nEOF\nls", [("cat > a <<EOF", False), ("ls", False)]),
    ("cat > a <<'EOF'\nx && y\nEOF\nls", None),
]


@pytest.mark.parametrize(("line", "expected"), EXAMPLES)
def test_scan_examples(line: str, expected: list[tuple[str, bool]] | None) -> None:
    assert _pieces(scan(line)) == expected


def test_parse_action_reads_the_examples() -> None:
    assert [c.command for c in parse_action("cd /testbed && ls -la | head")] == ["cd", "ls"]
    assert [c.kind for c in parse_action("echo $((1+2))")] == ["complex"]
    assert [c.kind for c in parse_action("(cd src && ls) ; echo a")] == ["complex", "bash"]


# ``split_words`` is POSIX ``shlex.split`` read by the lexer; shlex itself (stdlib) is the reference.
POSIX_TEXT = st.text(
    alphabet=st.sampled_from([*"ab -$`;|&()<>#=", " ", "\t", "\r", "\n", "\x0b", "é", "'", '"', "\\"])
)


def _shlex(text: str) -> list[str] | None:
    try:
        return shlex.split(text)
    except ValueError:
        return None


@settings(max_examples=3000, deadline=None)
@given(POSIX_TEXT | st.lists(st.sampled_from(FRAGMENTS), max_size=20).map(" ".join) | st.text(max_size=100))
def test_split_words_on_the_lexer_equals_shlex(text: str) -> None:
    assert split_words(text) == _shlex(text)


def test_split_words_examples() -> None:
    assert split_words("""a 'b c' "d \\" \\$e" f\\ g \\\nh '' "" """) == [
        "a",
        "b c",
        'd " \\$e',
        "f g",
        "\nh",
        "",
        "",
    ]
    assert split_words("echo 'open") is None
    assert split_words('echo "open') is None
    assert split_words("echo \\") is None
    assert split_words('echo "a\\') is None
    assert split_words(" \t\r\n") == []
