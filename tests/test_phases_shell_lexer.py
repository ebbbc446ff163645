"""The paper's parser on the one shell lexer gives exactly what its own scanner gave.

``planguard.phases.paper_parser`` used to carry its own bashlex-compatible structure scanner (``_Scanner``);
it now reads words, blanks, redirections, comments, arithmetic and heredoc bodies through the strict
mode of :mod:`planguard.shell.lexer`. The old scanner is kept below, frozen, ONLY as the reference
these tests compare against (it is not used anywhere else; do not import it from planguard).
Its word splitting (``split_words``) is POSIX ``shlex.split`` read by the lexer: stdlib ``shlex`` is
that reference.
"""

from __future__ import annotations

import re
import shlex
from typing import NamedTuple

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planguard.phases.paper_parser import parse_action, scan, split_words

# =========================================================================== frozen reference (old scanner)
# Copied verbatim from planguard/phases/paper_parser.py before the scanner moved onto the lexer.
# fmt: off

class _Reject(Exception):
    """The structure scanner met something the reference bash grammar does not accept."""


class Piece(NamedTuple):
    """One top-level sub-command: its source text and whether it is a compound construct."""

    text: str
    complex: bool


# --------------------------------------------------------------------------- structure scanner

_BLANKS = re.compile(r"(?:[ \t]|\\\n)*")
_PLAIN = re.compile(r"[^ \t\n|&;()<>'\"\\$`]+")
_DQ_PLAIN = re.compile(r'[^"\\$`]*')
_BARE_WORD = re.compile(r"[^ \t\n|&;()<>'\"\\$`]+(?=[ \t\n|&;()<>]|$)")
_REDIRECT = re.compile(r"&>>|&>|\d*(?:>>|>&|>\||<<<|<<-|<<|<&|<>|>|<)")
_FUNC_PARENS = re.compile(r"\(\s*\)")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_WORD_END = frozenset(" \t\n|&;()<>")

# bashlex raises on these at a command position (unsupported constructs or misplaced keywords).
_REJECTED_WORDS = frozenset({"case", "select", "time", "coproc", "[[", "]]", "esac"})
_CLOSERS = frozenset({"then", "elif", "else", "fi", "do", "done", "}"})
_NO_STOPS: frozenset[str] = frozenset()


class _Scanner:
    __slots__ = ("count", "heredocs", "i", "last_end", "n", "pieces", "s", "top_function")

    def __init__(self, s: str) -> None:
        self.s = s
        self.n = len(s)
        self.i = 0
        self.last_end = 0
        self.heredocs: list[tuple[str, bool]] = []
        self.pieces: list[tuple[int, int, bool]] = []
        self.top_function = False
        self.count = 0

    # -- small helpers
    def _blanks(self) -> None:
        self.i = _BLANKS.match(self.s, self.i).end()  # type: ignore[union-attr]

    def _bare_at(self, i: int) -> str | None:
        m = _BARE_WORD.match(self.s, i)
        return m.group() if m else None

    def _newline(self) -> None:
        """Consume one newline and, as bash does, the bodies of the heredocs opened on that line."""
        self.i += 1
        if not self.heredocs:
            return
        s, n = self.s, self.n
        for delim, strip_tabs in self.heredocs:
            i = self.i
            while True:
                if i >= n:
                    raise _Reject("here-document delimited by end-of-file")
                eol = s.find("\n", i)
                if eol < 0:
                    eol = n
                line = s[i:eol]
                if (line.lstrip("\t") if strip_tabs else line) == delim:
                    i = eol + 1
                    break
                i = eol + 1
            self.i = min(i, n)
        self.heredocs.clear()

    def _comment(self) -> None:
        eol = self.s.find("\n", self.i)
        self.i = self.n if eol < 0 else eol

    # -- lists and pipelines
    def program(self) -> list[tuple[int, int, bool]]:
        self._list(_NO_STOPS, False, 0)
        if self.heredocs:
            raise _Reject("here-document delimited by end-of-file")
        return self.pieces

    def _list(self, stops: frozenset[str], paren: bool, depth: int) -> str:
        """Parse pipelines and separators until EOF, ``)`` (when ``paren``) or a stop keyword.

        Returns what ended the list ('' for EOF) without consuming it.
        """
        s, n = self.s, self.n
        need = False  # an operator that must be followed by a command was seen
        have = False  # a command since the last separator
        part_cmds = 0  # depth 0: pipelines and separators in the current newline-delimited part
        part_seps = 0
        part_func = False
        while True:
            self._blanks()
            i = self.i
            if i >= n:
                if need:
                    raise _Reject("unexpected EOF")
                break
            c = s[i]
            if c == "\n":
                if depth == 0 and not need:
                    self._end_part(part_cmds, part_seps, part_func)
                    part_cmds = part_seps = 0
                    part_func = False
                self._newline()
                have = False
                continue
            if c == "#":
                self._comment()
                continue
            if c == ")":
                if paren and not need:
                    return ")"
                raise _Reject("unexpected )")
            if c == ";":
                if s.startswith(";;", i) or not have:
                    raise _Reject("unexpected ;")
                self.i += 1
                have = False
                part_seps += 1
                continue
            if c == "&" and not s.startswith("&>", i):
                if not have:
                    raise _Reject("unexpected &")
                self.i += 2 if s.startswith("&&", i) else 1
                need = s.startswith("&&", i)
                have = False
                part_seps += 1
                continue
            if c == "|":
                if not have or not s.startswith("||", i):
                    raise _Reject("unexpected |")
                self.i += 2
                need = True
                have = False
                part_seps += 1
                continue
            if have:
                raise _Reject("missing separator")
            word = self._bare_at(i)
            if word is not None and word in stops:
                if need:
                    raise _Reject("unexpected keyword")
                return word
            start = i
            cplx, func = self._pipeline(depth)
            self.count += 1
            if depth == 0:
                self.pieces.append((start, self.last_end, cplx))
                part_cmds += 1
                part_func = func
            need = False
            have = True
        if depth == 0:
            self._end_part(part_cmds, part_seps, part_func)
        return ""

    def _end_part(self, cmds: int, seps: int, func: bool) -> None:
        # bashlex returns a bare function definition on its own line as a top-level node, and the
        # reference parser then treats the whole action as one complex command.
        if cmds == 1 and seps == 0 and func:
            self.top_function = True

    def _pipeline(self, depth: int) -> tuple[bool, bool]:
        s, n = self.s, self.n
        if self._bare_at(self.i) == "!":
            self.i += 1
            self._blanks()
        cplx = False
        elements = 0
        func = False
        while True:
            if elements and self._bare_at(self.i) == "!":
                raise _Reject("! inside a pipeline")
            c_cplx, c_func = self._command(depth)
            cplx = cplx or c_cplx
            func = c_func
            elements += 1
            self._blanks()
            i = self.i
            if i < n and s[i] == "|" and not s.startswith("||", i):
                self.i += 2 if s.startswith("|&", i) else 1
                while True:  # newlines and comments may follow a pipe
                    self._blanks()
                    if self.i < n and s[self.i] == "\n":
                        self._newline()
                    elif self.i < n and s[self.i] == "#":
                        self._comment()
                    else:
                        break
                if self.i >= n or s[self.i] in "|&;)":
                    raise _Reject("unexpected token after |")
                continue
            break
        return cplx, func and elements == 1

    # -- commands
    def _command(self, depth: int) -> tuple[bool, bool]:
        """Parse one command; returns (is compound, is function definition)."""
        s, n = self.s, self.n
        i = self.i
        if i >= n:
            raise _Reject("unexpected EOF")
        c = s[i]
        if c == "(":
            if s.startswith("((", i):
                self.i = self.last_end = self._arith_end(i + 2)
            else:
                self.i += 1
                self._body(")", True, depth)
            self._redirects()
            return True, False
        word = self._bare_at(i)
        if word is not None:
            if word in _REJECTED_WORDS or word in _CLOSERS:
                raise _Reject(f"unexpected {word}")
            if word == "if":
                self.i += 2
                self._body_kw(frozenset({"then"}), depth)
                while True:
                    end = self._body_kw(frozenset({"elif", "else", "fi"}), depth)
                    if end == "elif":
                        self._body_kw(frozenset({"then"}), depth)
                        continue
                    if end == "else":
                        self._body_kw(frozenset({"fi"}), depth)
                    break
                self._redirects()
                return True, False
            if word in ("while", "until"):
                self.i += len(word)
                self._body_kw(frozenset({"do"}), depth)
                self._body_kw(frozenset({"done"}), depth)
                self._redirects()
                return True, False
            if word == "for":
                self._for(depth)
                self._redirects()
                return True, False
            if word == "{":
                self.i += 1
                self._body_kw(frozenset({"}"}), depth)
                self._redirects()
                return True, False
            if word == "function":
                self.i += len(word)
                self._blanks()
                name = _NAME.match(s, self.i)
                if name is None:
                    raise _Reject("bad function name")
                self.i = name.end()
                self._blanks()
                m = _FUNC_PARENS.match(s, self.i)
                if m:
                    self.i = m.end()
                self._function_body(depth)
                return True, True
        return self._simple(depth)

    def _arith_end(self, j: int) -> int:
        """End of an arithmetic command ``(( ... ))`` whose text starts at ``j``."""
        s, n = self.s, self.n
        depth = 0
        while j < n:
            c = s[j]
            if c == "(":
                depth += 1
            elif c == ")":
                if depth == 0:
                    if j + 1 < n and s[j + 1] == ")":
                        return j + 2
                    raise _Reject("unterminated ((")
                depth -= 1
            j += 1
        raise _Reject("unterminated ((")

    def _function_body(self, depth: int) -> None:
        s, n = self.s, self.n
        while True:
            self._blanks()
            if self.i < n and s[self.i] == "\n":
                self._newline()
            else:
                break
        word = self._bare_at(self.i)
        if not (word in ("{", "if", "while", "until", "for") or (self.i < n and s[self.i] == "(")):
            raise _Reject("function body must be a compound command")
        self._command(depth)

    def _body(self, closer: str, paren: bool, depth: int) -> None:
        count = self.count
        got = self._list(_NO_STOPS, paren, depth + 1)
        if got != closer or self.count == count:
            raise _Reject(f"expected {closer}")
        self.i += 1
        self.last_end = self.i

    def _body_kw(self, stops: frozenset[str], depth: int) -> str:
        """A compound-list ended by one of ``stops``; consumes the keyword and returns it."""
        count = self.count
        got = self._list(stops, False, depth + 1)
        if not got or got not in stops:
            raise _Reject("unterminated compound command")
        if self.count == count:
            raise _Reject("empty compound list")
        self.i += len(got)
        self.last_end = self.i
        return got

    def _for(self, depth: int) -> None:
        s, n = self.s, self.n
        self.i += 3
        self._blanks()
        if s.startswith("((", self.i):
            raise _Reject("arithmetic for")
        name = _NAME.match(s, self.i)
        if name is None:
            raise _Reject("bad for variable")
        self.i = name.end()
        self._blanks()
        if self._bare_at(self.i) == "in":
            self.i += 2
            while True:
                self._blanks()
                if self.i >= n:
                    raise _Reject("unexpected EOF in for")
                c = s[self.i]
                if c in ";\n":
                    break
                if c in "|&()<>":
                    raise _Reject("unexpected token in for")
                self._word()
        while True:  # separators between the word list and ``do``
            self._blanks()
            if self.i < n and s[self.i] == ";":
                self.i += 1
            elif self.i < n and s[self.i] == "\n":
                self._newline()
            elif self.i < n and s[self.i] == "#":
                self._comment()
            else:
                break
        if self._bare_at(self.i) != "do":
            raise _Reject("expected do")
        self.i += 2
        self._body_kw(frozenset({"done"}), depth)

    def _redirects(self) -> None:
        s, n = self.s, self.n
        while True:
            self._blanks()
            if self.i >= n:
                return
            m = _REDIRECT.match(s, self.i)
            if m is None:
                return
            self._redirect(m)

    def _redirect(self, m: re.Match[str]) -> None:
        op = m.group()
        self.i = m.end()
        self._blanks()
        if self.i >= self.n or self.s[self.i] in "\n|&;)<>":
            raise _Reject("missing redirection target")
        start = self.i
        self._word()
        if op.endswith(("<<", "<<-")) and not op.endswith("<<<"):
            self.heredocs.append((self.s[start : self.i], op.endswith("-")))
        self.last_end = self.i

    def _simple(self, depth: int) -> tuple[bool, bool]:
        s, n = self.s, self.n
        words = 0
        while True:
            self._blanks()
            i = self.i
            if i >= n:
                break
            c = s[i]
            if c in "\n;|)":
                break
            if c == "&" and not s.startswith("&>", i):
                break
            if c == "#":
                break
            if c == "(":
                if words == 1 and _FUNC_PARENS.match(s, i):
                    self.i = _FUNC_PARENS.match(s, i).end()  # type: ignore[union-attr]
                    self._function_body(depth)
                    return True, True
                raise _Reject("unexpected (")
            m = _REDIRECT.match(s, i)
            if m is not None and not (c in "<>" and s.startswith("(", m.end()) and m.end() == i + 1):
                self._redirect(m)
                words += 2
                continue
            self._word()
            self.last_end = self.i
            words += 1
        if words == 0:
            raise _Reject("empty command")
        return False, False

    # -- words
    def _word(self) -> None:
        s, n = self.s, self.n
        i = self.i
        start = i
        if i < n and s[i] in "<>" and i + 1 < n and s[i + 1] == "(":
            self.i = i + 2
            self._body(")", True, 1_000)
            i = self.i
        while i < n:
            c = s[i]
            if c in _WORD_END:
                break
            if c == "'":
                j = s.find("'", i + 1)
                if j < 0:
                    raise _Reject("unmatched '")
                i = j + 1
            elif c == '"':
                i = self._dquote(i + 1)
            elif c == "\\":
                if i + 1 >= n:
                    raise _Reject("trailing backslash")
                i += 2
            elif c == "$":
                i = self._dollar(i)
            elif c == "`":
                i = self._backtick(i)
            else:
                i = _PLAIN.match(s, i).end()  # type: ignore[union-attr]
        if i == start:
            raise _Reject("expected a word")
        self.i = i

    def _dquote(self, i: int) -> int:
        s, n = self.s, self.n
        while True:
            i = _DQ_PLAIN.match(s, i).end()  # type: ignore[union-attr]
            if i >= n:
                raise _Reject('unmatched "')
            c = s[i]
            if c == '"':
                return i + 1
            if c == "\\":
                i += 2
            elif c == "$":
                i = self._dollar(i)
            else:
                i = self._backtick(i)

    def _dollar(self, i: int) -> int:
        s, n = self.s, self.n
        nxt = s[i + 1] if i + 1 < n else ""
        if nxt == "(":
            if s.startswith("((", i + 1):
                raise _Reject("arithmetic expansion")
            saved = self.i, self.last_end
            self.i = i + 2
            self._body(")", True, 1_000)
            end = self.i
            self.i, self.last_end = saved
            return end
        if nxt == "[":
            raise _Reject("arithmetic substitution")
        if nxt == "{":
            j = i + 2
            depth = 1
            while j < n:
                c = s[j]
                if c == "}":
                    depth -= 1
                    if depth == 0:
                        return j + 1
                elif c == "{":
                    depth += 1
                elif c == "\\":
                    j += 1
                elif c == "'":
                    k = s.find("'", j + 1)
                    if k < 0:
                        raise _Reject("unmatched '")
                    j = k
                elif c == '"':
                    j = self._dquote(j + 1) - 1
                j += 1
            raise _Reject("unmatched ${")
        if nxt == "'":
            j = i + 2
            while j < n:
                c = s[j]
                if c == "\\":
                    j += 2
                    continue
                if c == "'":
                    return j + 1
                j += 1
            raise _Reject("unmatched $'")
        if nxt == '"':
            return self._dquote(i + 2)
        return i + 1

    def _backtick(self, i: int) -> int:
        s, n = self.s, self.n
        j = i + 1
        while j < n:
            c = s[j]
            if c == "\\":
                j += 2
                continue
            if c == "`":
                inner = s[i + 1 : j]
                if inner.strip():
                    sub = _Scanner(inner)
                    sub.program()
                return j + 1
            j += 1
        raise _Reject("unmatched `")


def reference_scan(text: str) -> tuple[Piece, ...] | None:
    """Top-level sub-commands of a (stripped) bash action, or ``None`` when it is unparseable.

    A bare function definition on its own line also makes the whole action unparseable, as in the
    reference parser. The result never includes heredoc bodies or comments.
    """
    sc = _Scanner(text)
    try:
        spans = sc.program()
    except (_Reject, RecursionError):
        return None
    if sc.top_function:
        return None
    out: list[Piece] = []
    for a, b, cplx in spans:
        piece = text[a:b].strip()
        if not piece:
            continue
        if cplx:
            # The reference re-parses each piece on its own and only calls it complex when that
            # succeeds; a compound piece whose heredoc body lies outside it then fails.
            try:
                _Scanner(piece).program()
            except (_Reject, RecursionError):
                cplx = False
        out.append(Piece(piece, cplx))
    return tuple(out)


# fmt: on


# =========================================================================== the comparison

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
def test_scan_on_the_lexer_equals_the_old_scanner(line: str) -> None:
    assert _pieces(scan(line)) == _pieces(reference_scan(line))


@settings(max_examples=500, deadline=None)
@given(shell_lines)
def test_scan_of_the_stripped_action_equals_the_old_scanner(line: str) -> None:
    text = line.strip()
    assert _pieces(scan(text)) == _pieces(reference_scan(text))


EXAMPLES = [
    "cd /testbed && python -m pytest tests/test_x.py -q 2>&1 | tail -5",
    "cat > a.py <<'EOF'\nprint('x')\nEOF\npython a.py",
    "cat <<-EOF\n\tbody\n\tEOF\necho done",
    "(cd src && ls) ; { echo a; echo b; } > out.txt",
    'for f in $(ls *.py); do echo "$f"; done',
    "if [ -f x ]; then echo `cat x`; else echo none; fi",
    "echo ${HOME:-'/root'} $'a\\'b' \"$(echo \\\"q\\\")\"",
    "diff <(sort a) <(sort b)",
    "f() { echo hi; }",
    "function g { ls; }\ng",
    "echo $((1+2))",
    "[[ -n x ]] && echo y",
    "case x in x) echo;; esac",
    "echo 'unterminated",
    "cat <<EOF\nnever closed",
    "ls &&",
    "; ls",
    "(( i++ )) && echo $i",
    "echo a \\\n  b # comment\nls",
    "! grep -q x file | cat",
]


def test_scan_examples_equal_the_old_scanner() -> None:
    for line in EXAMPLES:
        assert _pieces(scan(line)) == _pieces(reference_scan(line)), line


def test_parse_action_still_reads_the_examples() -> None:
    # A few outcomes spelled out, so the comparison above cannot pass with both scanners broken alike.
    assert [c.command for c in parse_action("cd /testbed && ls -la | head")] == ["cd", "ls"]
    assert [c.kind for c in parse_action("echo $((1+2))")] == ["complex"]
    assert [c.kind for c in parse_action("(cd src && ls) ; echo a")] == ["complex", "bash"]
    assert scan("echo 'unterminated") is None
    assert scan("cat <<EOF\nnever closed") is None
    assert _pieces(scan("cat > a <<EOF\nx && y\nEOF\nls")) == [("cat > a <<EOF", False), ("ls", False)]
    # bashlex compares a quoted delimiter with its quotes: ``<<'EOF'`` is never closed by ``EOF``.
    assert scan("cat > a <<'EOF'\nx && y\nEOF\nls") is None


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
