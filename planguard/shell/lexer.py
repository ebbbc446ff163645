"""The shell lexer of the action layer and the live phase rules: words with quote removal, operators,
redirections and heredoc bodies.

A line is cut into segments (on ``&&``, ``||``, ``;``, ``;;``, ``&`` and newlines), each a pipeline of
:class:`Stage` (on ``|`` and ``|&``), without running a shell parser: agents write broken shell too, so
this never raises, and a pathological line is cut at ``_MAX_TOKENS`` tokens. The interpreters on top
are the action intent interpreter (:class:`planguard.actions.classify.ShellClassifier`), the live phase rules
(:mod:`planguard.phases.live`) and the paper's parser (:mod:`planguard.phases.paper_parser`), which reads the
same constructs through the *strict mode* at the end of this module.
"""

from __future__ import annotations

import re
from typing import Protocol

__all__ = [
    "MAX_NESTING",
    "ShellSyntaxError",
    "Stage",
    "Substitutions",
    "arithmetic_end",
    "bare_word_at",
    "blanks_end",
    "comment_end",
    "heredoc_bodies_end",
    "posix_words",
    "redirection_at",
    "tokenize",
    "unquote",
    "word_at",
    "word_end",
    "words_of",
]

_MAX_TOKENS = 4000  # a pathological line is judged on its head

# Words are matched possessively (nothing follows them in the pattern, so the tokens are the same) and
# a single-quoted run continued by shlex.quote's ``'"'"'`` joins is one step: a quoted file body has
# hundreds of them.
_TOKEN = re.compile(
    r"""
     (?P<sp>[^\S\n]+|\\\n)
    |(?P<nl>\n)
    |(?P<op>&&|\|\||;;?|\|&?|&(?![>\d]))
    |(?P<hd><<-?[ \t]*(?:'(?P<hq>[^'\n]*)'|"(?P<hdq>[^"\n]*)"|\\?(?P<hw>[\w.\-]+)))
    |(?P<re>(?:\d|&)?>>?(?:&\d*-?)?|<<<|<)
    |(?P<w>(?:[^\s'"\\;|&<>()`]++|\\.|'[^']*+'(?:"'"'[^']*+')*+|"[^"\\]*+(?:\\.[^"\\]*+)*+"|`[^`]*+`)++)
    |(?P<par>[()])
    |(?P<x>.)
    """,
    re.VERBOSE | re.DOTALL,
)
_UNQUOTE = re.compile(r"""'([^']*)'|"([^"\\]*(?:\\.[^"\\]*)*)"|\\(.)""", re.DOTALL)
_DQ_ESCAPE = re.compile(r"\\([\\\"$`])")


def _group1(m: re.Match[str]) -> str:
    return m.group(1)


def _unquote_match(m: re.Match[str]) -> str:
    if m.group(1) is not None:
        return m.group(1)
    if m.group(2) is not None:
        inner = m.group(2)
        return _DQ_ESCAPE.sub(_group1, inner) if "\\" in inner else inner
    return m.group(3)


def unquote(word: str) -> str:
    """A shell word without its quoting (``'a b'`` → ``a b``, ``"x\\"y"`` → ``x"y``)."""
    if "'" in word or '"' in word or "\\" in word:
        return _UNQUOTE.sub(_unquote_match, word)
    return word


class Stage:
    """One simple command: its words (quoting removed), the files it redirects output to, whether it reads
    a heredoc and that heredoc's body."""

    __slots__ = ("appends", "body", "heredoc", "outputs", "words")

    def __init__(self) -> None:
        self.words: list[str] = []
        self.outputs: list[str] = []
        self.appends = False
        self.heredoc = False
        self.body: str | None = None


def tokenize(line: str) -> list[list[Stage]]:
    """Segments (split on ``&& || ; newline``), each a pipeline of stages. Never raises.

    Words have their quoting removed; redirections to descriptors (``2>&1``) are dropped, to files kept
    as the stage's outputs (input redirections read nothing into the stage); a heredoc's body is the
    lines up to its delimiter.
    """
    segments: list[list[Stage]] = []
    pipeline: list[Stage] = []
    stage = Stage()
    pending_heredocs: list[tuple[str, bool, Stage]] = []
    expect_target: str | None = None  # the redirection operator waiting for its file word
    pos, n, count = 0, len(line), 0
    match = _TOKEN.match

    def close_stage() -> None:
        nonlocal stage
        if stage.words or stage.outputs:
            pipeline.append(stage)
        stage = Stage()

    def close_segment() -> None:
        nonlocal pipeline
        close_stage()
        if pipeline:
            segments.append(pipeline)
        pipeline = []

    while pos < n and count < _MAX_TOKENS:
        m = match(line, pos)
        if m is None:  # unreachable (``x`` matches any char); be safe
            break
        pos = m.end()
        kind = m.lastgroup
        count += 1
        if kind == "sp":
            continue
        if kind == "w":
            word = unquote(m.group("w"))
            if expect_target is not None:
                if expect_target != "<":
                    stage.outputs.append(word)
                    if expect_target.endswith(">>"):
                        stage.appends = True
                expect_target = None
            else:
                stage.words.append(word)
            continue
        expect_target = None
        if kind == "re":
            op = m.group("re")
            if op.endswith(("&", "-")) or op[-1].isdigit():  # 2>&1, >&2, 3>&- : descriptor plumbing
                continue
            expect_target = op
        elif kind == "hd":
            delim = m.group("hq") or m.group("hdq") or m.group("hw") or "EOF"
            stage.heredoc = True
            pending_heredocs.append((delim, m.group("hd").startswith("<<-"), stage))
        elif kind == "op":
            if m.group("op") in ("|", "|&"):
                close_stage()
            else:
                close_segment()
        elif kind == "nl":
            close_segment()
            if pending_heredocs:
                pos = _skip_heredocs(line, pos, pending_heredocs)
                pending_heredocs = []
        # "par" and stray characters carry no meaning for classification
    if pending_heredocs:  # heredoc body never terminated on its own line: the rest is the body
        for _, _, st in pending_heredocs:
            st.body = line[pos:]
    close_segment()
    return segments


def _skip_heredocs(line: str, pos: int, pending: list[tuple[str, bool, Stage]]) -> int:
    for delim, strip_tabs, st in pending:
        start = pos
        while True:
            end = line.find("\n", pos)
            text = line[pos:] if end < 0 else line[pos:end]
            if (text.lstrip("\t") if strip_tabs else text).strip() == delim:
                st.body = line[start:pos]
                pos = len(line) if end < 0 else end + 1
                break
            if end < 0:
                st.body = line[start:]
                return len(line)
            pos = end + 1
    return pos


def words_of(text: str) -> list[str]:
    """Every word of ``text``, quoting removed (operators, redirections and heredoc markers skipped)."""
    return [unquote(m.group(0)) for m in _TOKEN.finditer(text) if m.lastgroup == "w"]


def word_at(text: str, pos: int) -> str | None:
    """The word starting at ``pos`` after any blanks, quoting removed; ``None`` when something else does."""
    m = _TOKEN.match(text, pos)
    while m is not None and m.lastgroup == "sp":
        m = _TOKEN.match(text, m.end())
    if m is None or m.lastgroup != "w":
        return None
    return unquote(m.group(0))


# --------------------------------------------------------------------------- strict mode
#
# The paper's parser (:mod:`planguard.phases.paper_parser`) must reject exactly what the reference's bash
# grammar (bashlex) rejects, so it reads the text through this strict mode instead of ``tokenize``:
# the same constructs (blanks, words with their quoting, redirection operators, comments, heredoc
# bodies), scanned by position, and an unbalanced quote, a trailing backslash, ``$((``, ``$[`` or an
# unterminated heredoc raises :class:`ShellSyntaxError`. The grammar (lists, pipelines, compound
# commands) stays with the parser; a word hands the commands inside ``$(…)``, ``<(…)`` and backquotes
# back to it through :class:`Substitutions`.


#: How deeply constructs may nest (``$(…)``, backquotes, compound commands, quotes inside ``${…}``) before
#: the text is rejected. bashlex itself fails (RecursionError) at about 110 levels of ``$(``; at 32 the
#: parser's own recursion (about ten frames a level) stays far inside the interpreter's limit.
MAX_NESTING = 32


class ShellSyntaxError(ValueError):
    """Text that bash's grammar, as the paper's reference parser reads it, does not accept."""


class Substitutions(Protocol):
    """The grammar's side of a word: the command lists nested inside it."""

    def parenthesized(self, start: int) -> int:
        """Parse the list starting at ``start`` up to its ``)``; the index just after the ``)``."""
        ...

    def backquoted(self, inner: str) -> None:
        """Check the program between two backquotes (raises :class:`ShellSyntaxError`)."""
        ...


_BLANKS = re.compile(r"(?:[ \t]|\\\n)*")
_PLAIN = re.compile(r"[^ \t\n|&;()<>'\"\\$`]+")
_DQ_PLAIN = re.compile(r'[^"\\$`]*')
_BARE_WORD = re.compile(r"[^ \t\n|&;()<>'\"\\$`]+(?=[ \t\n|&;()<>]|$)")
_REDIRECTION = re.compile(r"&>>|&>|\d*(?:>>|>&|>\||<<<|<<-|<<|<&|<>|>|<)")
_WORD_END = frozenset(" \t\n|&;()<>")
# The bodies of ``$'…'`` and of backquotes: up to the closing quote that no backslash escapes.
_ANSI_C_BODY = re.compile(r"(?:[^\\']|\\[\s\S])*+")
_BACKQUOTED_BODY = re.compile(r"(?:[^\\`]|\\[\s\S])*+")


def blanks_end(s: str, i: int) -> int:
    """The index after the blanks (and backslash-newlines) at ``i``."""
    return _BLANKS.match(s, i).end()  # type: ignore[union-attr]  # the pattern matches empty


def bare_word_at(s: str, i: int) -> str | None:
    """The unquoted word at ``i`` when it is plain text up to a word end (a keyword candidate)."""
    m = _BARE_WORD.match(s, i)
    return m.group() if m else None


def redirection_at(s: str, i: int) -> re.Match[str] | None:
    """The redirection operator at ``i`` (``>``, ``2>>``, ``&>``, ``<<-``, ``<<<``, ...), if any."""
    return _REDIRECTION.match(s, i)


def comment_end(s: str, i: int) -> int:
    """The index of the newline ending the comment at ``i`` (or the end of the text)."""
    eol = s.find("\n", i)
    return len(s) if eol < 0 else eol


def heredoc_bodies_end(s: str, i: int, heredocs: list[tuple[str, bool]]) -> int:
    """Skip the bodies of ``heredocs`` (delimiter, ``<<-``) starting at ``i``, the line after their
    operators; each ends on a line that is exactly its delimiter (leading tabs removed for ``<<-``)."""
    n = len(s)
    for delim, strip_tabs in heredocs:
        while True:
            if i >= n:
                raise ShellSyntaxError("here-document delimited by end-of-file")
            eol = s.find("\n", i)
            if eol < 0:
                eol = n
            line = s[i:eol]
            i = eol + 1
            if (line.lstrip("\t") if strip_tabs else line) == delim:
                break
        i = min(i, n)
    return i


def arithmetic_end(s: str, j: int) -> int:
    """The index after the ``))`` closing an arithmetic command whose text starts at ``j``."""
    n = len(s)
    depth = 0
    while j < n:
        c = s[j]
        if c == "(":
            depth += 1
        elif c == ")":
            if depth == 0:
                if j + 1 < n and s[j + 1] == ")":
                    return j + 2
                raise ShellSyntaxError("unterminated ((")
            depth -= 1
        j += 1
    raise ShellSyntaxError("unterminated ((")


def word_end(s: str, i: int, subs: Substitutions) -> int:
    """The index after the word at ``i``: quotes, escapes, ``$…`` expansions, backquotes and a leading
    process substitution ``<(…)``/``>(…)`` are part of it."""
    n = len(s)
    start = i
    if i < n and s[i] in "<>" and i + 1 < n and s[i + 1] == "(":
        i = subs.parenthesized(i + 2)
    while i < n:
        c = s[i]
        if c in _WORD_END:
            break
        if c == "'":
            j = s.find("'", i + 1)
            if j < 0:
                raise ShellSyntaxError("unmatched '")
            i = j + 1
        elif c == '"':
            i = _double_quoted_end(s, i + 1, subs)
        elif c == "\\":
            if i + 1 >= n:
                raise ShellSyntaxError("trailing backslash")
            i += 2
        elif c == "$":
            i = _dollar_end(s, i, subs)
        elif c == "`":
            i = _backquoted_end(s, i, subs)
        else:
            i = _PLAIN.match(s, i).end()  # type: ignore[union-attr]  # s[i] is plain here
    if i == start:
        raise ShellSyntaxError("expected a word")
    return i


def _double_quoted_end(s: str, i: int, subs: Substitutions, nesting: int = 0) -> int:
    """The index after the double-quoted text starting at ``i``; ``nesting`` counts the quotes it lies in
    (``"${a:-"${b}"}"``), bounded by :data:`MAX_NESTING`."""
    if nesting > MAX_NESTING:
        raise ShellSyntaxError("nested too deeply")
    n = len(s)
    while True:
        i = _DQ_PLAIN.match(s, i).end()  # type: ignore[union-attr]  # the pattern matches empty
        if i >= n:
            raise ShellSyntaxError('unmatched "')
        c = s[i]
        if c == '"':
            return i + 1
        if c == "\\":
            i += 2
        elif c == "$":
            i = _dollar_end(s, i, subs, nesting)
        else:
            i = _backquoted_end(s, i, subs)


def _dollar_end(s: str, i: int, subs: Substitutions, nesting: int = 0) -> int:
    n = len(s)
    nxt = s[i + 1] if i + 1 < n else ""
    if nxt == "(":
        if s.startswith("((", i + 1):
            raise ShellSyntaxError("arithmetic expansion")
        return subs.parenthesized(i + 2)
    if nxt == "[":
        raise ShellSyntaxError("arithmetic substitution")
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
                    raise ShellSyntaxError("unmatched '")
                j = k
            elif c == '"':
                j = _double_quoted_end(s, j + 1, subs, nesting + 1) - 1
            j += 1
        raise ShellSyntaxError("unmatched ${")
    if nxt == "'":
        j = _ANSI_C_BODY.match(s, i + 2).end()  # type: ignore[union-attr]  # the pattern matches empty
        if not s.startswith("'", j):
            raise ShellSyntaxError("unmatched $'")
        return j + 1
    if nxt == '"':
        return _double_quoted_end(s, i + 2, subs, nesting + 1)
    return i + 1


def _backquoted_end(s: str, i: int, subs: Substitutions) -> int:
    j = _BACKQUOTED_BODY.match(s, i + 1).end()  # type: ignore[union-attr]  # the pattern matches empty
    if not s.startswith("`", j):
        raise ShellSyntaxError("unmatched `")
    inner = s[i + 1 : j]
    if inner.strip():
        subs.backquoted(inner)
    return j + 1


# The paper's parser splits a sub-command into words as POSIX ``shlex.split`` does (no comments), which
# is not bash: blanks are `` \t\r\n``; outside quotes a backslash takes the next character literally
# (a backslash-newline is a newline in the word); inside double quotes it escapes only ``"`` and ``\``,
# and ``$``, backquotes and operators are plain characters everywhere.
_POSIX_BLANKS = re.compile(r"[ \t\r\n]*+")
_POSIX_WORD = re.compile(r"""(?:[^ \t\r\n'"\\]++|\\[\s\S]|'[^']*+'|"(?:[^"\\]++|\\[\s\S])*+")++""")
_POSIX_PART = re.compile(r"""\\([\s\S])|'([^']*)'|"((?:[^"\\]|\\[\s\S])*)"|([^ \t\r\n'"\\]+)""")
_POSIX_DQ_ESCAPE = re.compile(r'\\(["\\])')


def _posix_part(m: re.Match[str]) -> str:
    escaped, single, double, plain = m.groups()
    if double is not None:
        return _POSIX_DQ_ESCAPE.sub(_group1, double) if "\\" in double else double
    return escaped if escaped is not None else single if single is not None else plain


def posix_words(text: str) -> list[str]:
    """The words ``shlex.split(text)`` gives (POSIX mode, no comments), quoting removed.

    Raises :class:`ShellSyntaxError` where ``shlex`` raises: an unclosed quote or a trailing backslash.
    """
    words: list[str] = []
    n = len(text)
    pos = _POSIX_BLANKS.match(text).end()  # type: ignore[union-attr]  # the pattern matches empty
    while pos < n:
        m = _POSIX_WORD.match(text, pos)
        end = pos if m is None else m.end()
        if end < n and text[end] not in " \t\r\n":  # a quote never closed, or a backslash at the end
            raise ShellSyntaxError("no closing quotation" if text[end] in "'\"" else "no escaped character")
        word = text[pos:end]
        words.append(
            _POSIX_PART.sub(_posix_part, word) if "'" in word or '"' in word or "\\" in word else word
        )
        pos = _POSIX_BLANKS.match(text, end).end()  # type: ignore[union-attr]
    return words
