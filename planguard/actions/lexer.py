"""The shell lexer of the action layer and the live phase rules: words with quote removal, operators,
redirections and heredoc bodies.

A line is cut into segments (on ``&&``, ``||``, ``;``, ``;;``, ``&`` and newlines), each a pipeline of
:class:`Stage` (on ``|`` and ``|&``), without running a shell parser: agents write broken shell too, so
this never raises, and a pathological line is cut at ``_MAX_TOKENS`` tokens. The two interpreters on top
are the action intent interpreter (:mod:`planguard.actions.shell`) and the live phase rules
(:mod:`planguard.phases.live`). The paper's rules keep the paper's own parser
(:mod:`planguard.phases.shell`: the reference's bashlex grammar and its rejections, and ``shlex``
splitting), since reproducing its labels means reproducing its quirks.
"""

from __future__ import annotations

import re

__all__ = ["Stage", "tokenize", "unquote", "word_at", "words_of"]

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
