"""Shell-aware splitting of an agent's bash action into sub-commands.

The paper's classifier does not see raw text: its command parser first cuts an action into
sub-commands and each sub-command into ``command``/``args``/``flags``. Reproducing its labels means
reproducing that parser, so this module has two layers:

* :func:`scan` is the reference parser's bash grammar (bashlex) on the strict mode of the one shell
  lexer (:mod:`planguard.shell.lexer`: words with their quoting, redirections, comments, heredoc
  bodies). It finds the top-level sub-commands (separated by ``&&``, ``||``, ``;``, ``&`` and
  newlines; pipes are not split), marks subshells, groups, loops and conditionals as complex, and
  rejects the input where bashlex rejects it: unbalanced quotes, ``$((``, ``[[``, ``case``, ``time``,
  empty commands between separators, quoted heredoc delimiters that are never closed, ...
  A rejected action becomes one ``complex_command``.
* :func:`parse_action` is the paper's per-action pipeline on top of it: the *simple heredoc* rule,
  ``complex_command``, the ``VAR=value`` prefix as ``set_env``, POSIX ``shlex`` word splitting, the
  SWE-agent tools (``str_replace_editor``, ``submit``) and the bash flag parser whose quirks the
  rules depend on (a short flag swallows the next word as its value, ``-c CODE`` ends the flags).

Nothing here raises on any input: whatever cannot be parsed is a ``complex_command``.
Both layers are pure functions of the text, so callers may cache them.
"""

from __future__ import annotations

import contextlib
import re
from typing import NamedTuple

from planguard.shell.lexer import (
    MAX_NESTING,
    ShellSyntaxError,
    arithmetic_end,
    bare_word_at,
    blanks_end,
    comment_end,
    heredoc_bodies_end,
    posix_words,
    redirection_at,
    word_end,
)

__all__ = [
    "SRE_SUBCOMMANDS",
    "SRE_TOOL",
    "FlagValue",
    "ParsedCommand",
    "Piece",
    "complex_command",
    "is_simple_heredoc",
    "parse_action",
    "parse_bash",
    "scan",
    "split_words",
]

FlagValue = str | bool
ToolArgValue = str | int | bool | tuple[int, ...]

SRE_TOOL = "str_replace_editor"
SRE_SUBCOMMANDS: tuple[str, ...] = ("view", "create", "str_replace", "insert", "undo_edit")


class Piece(NamedTuple):
    """One top-level sub-command: its source text and whether it is a compound construct."""

    text: str
    complex: bool


# --------------------------------------------------------------------------- the reference's bash grammar

_FUNC_PARENS = re.compile(r"\(\s*\)")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# bashlex raises on these at a command position (unsupported constructs or misplaced keywords).
_REJECTED_WORDS = frozenset({"case", "select", "time", "coproc", "[[", "]]", "esac"})
_CLOSERS = frozenset({"then", "elif", "else", "fi", "do", "done", "}"})
_NO_STOPS: frozenset[str] = frozenset()


class _Grammar:
    """bashlex's grammar (lists, pipelines, compound commands, functions) over the strict mode of the
    shell lexer; it records the top-level sub-commands as ``(start, end, is compound)`` spans and raises
    :class:`ShellSyntaxError` where bashlex rejects the text. It is the lexer's :class:`Substitutions`:
    the lists inside ``$(…)``, ``<(…)`` and backquotes are parsed by the same grammar."""

    __slots__ = ("count", "heredocs", "i", "last_end", "n", "nesting", "pieces", "s", "top_function")

    def __init__(self, s: str, nesting: int = 0) -> None:
        self.s = s
        self.n = len(s)
        self.i = 0
        self.last_end = 0
        self.heredocs: list[tuple[str, bool]] = []
        self.pieces: list[tuple[int, int, bool]] = []
        self.top_function = False
        self.count = 0
        self.nesting = nesting  # the lists this text's list lies in (a backquoted one's included)

    # -- the lexer's side
    def _blanks(self) -> None:
        self.i = blanks_end(self.s, self.i)

    def _newline(self) -> None:
        """Consume one newline and, as bash does, the bodies of the heredocs opened on that line."""
        self.i += 1
        if self.heredocs:
            self.i = heredoc_bodies_end(self.s, self.i, self.heredocs)
            self.heredocs.clear()

    def _comment(self) -> None:
        self.i = comment_end(self.s, self.i)

    def _line_breaks(self, *, semicolons: bool) -> None:
        """Skip blanks, newlines (and the heredoc bodies they end), comments and, if asked, ``;``."""
        s, n = self.s, self.n
        while True:
            self._blanks()
            c = s[self.i] if self.i < n else ""
            if c == "\n":
                self._newline()
            elif c == "#":
                self._comment()
            elif c == ";" and semicolons:
                self.i += 1
            else:
                return

    def _word(self) -> None:
        self.i = word_end(self.s, self.i, self)

    def parenthesized(self, start: int) -> int:
        saved = self.i, self.last_end
        self.i = start
        self._body(")", True, 1_000)
        end = self.i
        self.i, self.last_end = saved
        return end

    def backquoted(self, inner: str) -> None:
        _Grammar(inner, self.nesting + 1).program()

    # -- lists and pipelines
    def program(self) -> list[tuple[int, int, bool]]:
        self._list(_NO_STOPS, False, 0)
        if self.heredocs:
            raise ShellSyntaxError("here-document delimited by end-of-file")
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
                    raise ShellSyntaxError("unexpected EOF")
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
                raise ShellSyntaxError("unexpected )")
            if c == ";":
                if s.startswith(";;", i) or not have:
                    raise ShellSyntaxError("unexpected ;")
                self.i += 1
                have = False
                part_seps += 1
                continue
            if c == "&" and not s.startswith("&>", i):
                if not have:
                    raise ShellSyntaxError("unexpected &")
                self.i += 2 if s.startswith("&&", i) else 1
                need = s.startswith("&&", i)
                have = False
                part_seps += 1
                continue
            if c == "|":
                if not have or not s.startswith("||", i):
                    raise ShellSyntaxError("unexpected |")
                self.i += 2
                need = True
                have = False
                part_seps += 1
                continue
            if have:
                raise ShellSyntaxError("missing separator")
            word = bare_word_at(s, i)
            if word is not None and word in stops:
                if need:
                    raise ShellSyntaxError("unexpected keyword")
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
        if bare_word_at(s, self.i) == "!":
            self.i += 1
            self._blanks()
        cplx = False
        elements = 0
        func = False
        while True:
            if elements and bare_word_at(s, self.i) == "!":
                raise ShellSyntaxError("! inside a pipeline")
            c_cplx, c_func = self._command(depth)
            cplx = cplx or c_cplx
            func = c_func
            elements += 1
            self._blanks()
            i = self.i
            if i < n and s[i] == "|" and not s.startswith("||", i):
                self.i += 2 if s.startswith("|&", i) else 1
                self._line_breaks(semicolons=False)  # newlines and comments may follow a pipe
                if self.i >= n or s[self.i] in "|&;)":
                    raise ShellSyntaxError("unexpected token after |")
                continue
            break
        return cplx, func and elements == 1

    # -- commands
    def _command(self, depth: int) -> tuple[bool, bool]:
        """Parse one command; returns (is compound, is function definition)."""
        s, n = self.s, self.n
        i = self.i
        if i >= n:
            raise ShellSyntaxError("unexpected EOF")
        c = s[i]
        if c == "(":
            if s.startswith("((", i):
                self.i = self.last_end = arithmetic_end(s, i + 2)
            else:
                self.i += 1
                self._body(")", True, depth)
            self._redirects()
            return True, False
        word = bare_word_at(s, i)
        if word is not None:
            if word in _REJECTED_WORDS or word in _CLOSERS:
                raise ShellSyntaxError(f"unexpected {word}")
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
                    raise ShellSyntaxError("bad function name")
                self.i = name.end()
                self._blanks()
                m = _FUNC_PARENS.match(s, self.i)
                if m:
                    self.i = m.end()
                self._function_body(depth)
                return True, True
        return self._simple(depth)

    def _function_body(self, depth: int) -> None:
        s, n = self.s, self.n
        while True:
            self._blanks()
            if self.i < n and s[self.i] == "\n":
                self._newline()
            else:
                break
        word = bare_word_at(s, self.i)
        if not (word in ("{", "if", "while", "until", "for") or (self.i < n and s[self.i] == "(")):
            raise ShellSyntaxError("function body must be a compound command")
        self._command(depth)

    def _nested(self, stops: frozenset[str], paren: bool, depth: int) -> str:
        """A list inside another (a subshell's, a substitution's, a compound command's), nested at most
        :data:`MAX_NESTING` deep."""
        if self.nesting >= MAX_NESTING:
            raise ShellSyntaxError("nested too deeply")
        self.nesting += 1
        got = self._list(stops, paren, depth + 1)
        self.nesting -= 1
        return got

    def _body(self, closer: str, paren: bool, depth: int) -> None:
        count = self.count
        got = self._nested(_NO_STOPS, paren, depth)
        if got != closer or self.count == count:
            raise ShellSyntaxError(f"expected {closer}")
        self.i += 1
        self.last_end = self.i

    def _body_kw(self, stops: frozenset[str], depth: int) -> str:
        """A compound-list ended by one of ``stops``; consumes the keyword and returns it."""
        count = self.count
        got = self._nested(stops, False, depth)
        if not got or got not in stops:
            raise ShellSyntaxError("unterminated compound command")
        if self.count == count:
            raise ShellSyntaxError("empty compound list")
        self.i += len(got)
        self.last_end = self.i
        return got

    def _for(self, depth: int) -> None:
        s, n = self.s, self.n
        self.i += 3
        self._blanks()
        if s.startswith("((", self.i):
            raise ShellSyntaxError("arithmetic for")
        name = _NAME.match(s, self.i)
        if name is None:
            raise ShellSyntaxError("bad for variable")
        self.i = name.end()
        self._blanks()
        if bare_word_at(s, self.i) == "in":
            self.i += 2
            while True:
                self._blanks()
                if self.i >= n:
                    raise ShellSyntaxError("unexpected EOF in for")
                c = s[self.i]
                if c in ";\n":
                    break
                if c in "|&()<>":
                    raise ShellSyntaxError("unexpected token in for")
                self._word()
        self._line_breaks(semicolons=True)  # separators between the word list and ``do``
        if bare_word_at(s, self.i) != "do":
            raise ShellSyntaxError("expected do")
        self.i += 2
        self._body_kw(frozenset({"done"}), depth)

    def _redirects(self) -> None:
        s, n = self.s, self.n
        while True:
            self._blanks()
            if self.i >= n:
                return
            m = redirection_at(s, self.i)
            if m is None:
                return
            self._redirect(m)

    def _redirect(self, m: re.Match[str]) -> None:
        op = m.group()
        self.i = m.end()
        self._blanks()
        if self.i >= self.n or self.s[self.i] in "\n|&;)<>":
            raise ShellSyntaxError("missing redirection target")
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
                raise ShellSyntaxError("unexpected (")
            m = redirection_at(s, i)
            if m is not None and not (c in "<>" and s.startswith("(", m.end()) and m.end() == i + 1):
                self._redirect(m)
                words += 2
                continue
            self._word()
            self.last_end = self.i
            words += 1
        if words == 0:
            raise ShellSyntaxError("empty command")
        return False, False


def scan(text: str) -> tuple[Piece, ...] | None:
    """Top-level sub-commands of a (stripped) bash action, or ``None`` when it is unparseable.

    A bare function definition on its own line also makes the whole action unparseable, as in the
    reference parser. The result never includes heredoc bodies or comments.
    """
    sc = _Grammar(text)
    try:
        spans = sc.program()
    except ShellSyntaxError:
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
                _Grammar(piece).program()
            except ShellSyntaxError:
                cplx = False
        out.append(Piece(piece, cplx))
    return tuple(out)


# --------------------------------------------------------------------------- POSIX word splitting


def split_words(text: str) -> list[str] | None:
    """``shlex.split(text)`` (POSIX mode, no comments) on the lexer, or ``None`` where shlex raises."""
    try:
        return posix_words(text)
    except ShellSyntaxError:
        return None


# --------------------------------------------------------------------------- the paper's parser

_HEREDOC = re.compile(r"<<-?\s*(['\"]?)(\w+)\1")
_CONTROL_WORD = re.compile(r"\b(?:if|then|fi|for|while|do|done|case|esac|until|function)\b")
_HEREDOC_REDIRECT = re.compile(r">\s*([^\n]+)")
_ENV_PREFIX = re.compile(r"^((?:\w+=[^ \t\n\r\f\v]+[ \t]*)+)(.+)?")
_ASSIGNMENT = re.compile(r"\w+=.+")

# Interpreters whose -c/-e flag takes the inline code (and ends flag parsing).
_INLINE_INTERPRETERS = frozenset(
    {"python", "python3", "bash", "sh", "zsh", "node", "ruby", "perl", "psql", "mysql", "sqlite3"}
)


class ParsedCommand(NamedTuple):
    """One sub-command as the paper's parser reports it.

    ``kind`` is ``bash`` (``command``/``args``/``flags``), ``tool`` (a SWE-agent tool: ``tool``,
    ``subcommand``, ``tool_args``), ``complex`` or ``set_env`` (their text in ``args``); structured
    events add ``think`` (no call) and ``other`` (a tool outside the vocabulary). ``flags`` keeps the
    parser's dict semantics as ordered pairs (a repeated flag keeps its first position and its last
    value). ``label`` overrides the reported label (used for other scaffolds' tool names).
    """

    kind: str
    command: str = ""
    args: tuple[str, ...] = ()
    flags: tuple[tuple[str, FlagValue], ...] = ()
    tool: str = ""
    subcommand: str = ""
    tool_args: tuple[tuple[str, ToolArgValue], ...] = ()
    heredoc: bool = False
    text: str = ""
    label: str = ""

    def tool_arg(self, key: str) -> ToolArgValue | None:
        for k, v in self.tool_args:
            if k == key:
                return v
        return None


def is_simple_heredoc(s: str) -> bool:
    """The paper's *simple heredoc* test, applied to the whole (stripped) action.

    Exactly one ``<<WORD`` anywhere (even inside quotes), and no ``&&``, ``||``, ``;`` or control
    keyword in the text before the first ``<<``.
    """
    if "<<" not in s or _HEREDOC.search(s) is None:
        return False
    before = s.split("<<", 1)[0]
    if _CONTROL_WORD.search(before):
        return False
    if "&&" in before or "||" in before or ";" in before:
        return False
    return len(_HEREDOC.findall(s)) <= 1


def _parse_heredoc(s: str) -> ParsedCommand | None:
    m = _HEREDOC.search(s)
    if m is None:
        return None
    delimiter = m.group(2)
    before = s[: m.start()].strip()
    after = s[m.end() :].strip()
    words = split_words(before)
    if words is None:
        words = before.split()
    if not words:
        return None
    args = list(words[1:])
    redirect = _HEREDOC_REDIRECT.match(after)
    output: str | None = None
    body = after
    if redirect:
        output = redirect.group(1).strip()
        body = after[redirect.end() :].strip()
    marker = "\n" + delimiter
    if marker in body:
        body = body.split(marker, 1)[0]
    if body:
        args.append(body)
    if output:
        args.extend((">", output))
    return ParsedCommand(
        kind="bash",
        command=words[0].strip(),
        args=tuple(args),
        flags=(("__heredoc__", True),),
        heredoc=True,
        text=s,
    )


def parse_bash(words: list[str], text: str) -> ParsedCommand:
    """The paper's bash flag parser on the words of one sub-command."""
    command = words[0]
    args: list[str] = []
    flags: dict[str, FlagValue] = {}
    i = 1
    n = len(words)
    inline = command in _INLINE_INTERPRETERS
    while i < n:
        w = words[i]
        if w.startswith("--"):
            if "=" in w:
                key, value = w[2:].split("=", 1)
                flags[key] = value
            else:
                val: FlagValue = True
                if i + 1 < n and not words[i + 1].startswith("-"):
                    val = words[i + 1]
                    i += 1
                flags[w[2:]] = val
        elif w.startswith("-") and len(w) > 1:
            if len(w) > 2:
                if inline and "c" in w[1:]:
                    for ch in w[1:]:
                        if ch != "c":
                            flags[ch] = True
                    code: FlagValue = True
                    if i + 1 < n:
                        code = words[i + 1]
                        i += 1
                    flags["c"] = code
                    args.extend(words[i + 1 :])
                    break
                for ch in w[1:]:
                    flags[ch] = True
            else:
                key = w[1:]
                if inline and key in ("c", "e"):
                    code = True
                    if i + 1 < n:
                        code = words[i + 1]
                        i += 1
                    flags[key] = code
                    args.extend(words[i + 1 :])
                    break
                val = True
                if i + 1 < n and not words[i + 1].startswith("-"):
                    val = words[i + 1]
                    i += 1
                flags[key] = val
        else:
            args.append(w)
        i += 1
    return ParsedCommand(
        kind="bash", command=command.strip(), args=tuple(args), flags=tuple(flags.items()), text=text
    )


_SRE_STRING_ARGS = frozenset({"command", "path", "file_text", "old_str", "new_str"})


def _parse_sre(words: list[str], text: str) -> ParsedCommand | None:
    """SWE-agent's ``str_replace_editor`` as its tool spec parses it (``path`` is the only positional).

    An unknown subcommand yields nothing at all, as in the reference parser.
    """
    if len(words) < 2 or words[1] not in SRE_SUBCOMMANDS:
        return None
    out: dict[str, ToolArgValue] = {}
    rest = words[2:]
    i = 0
    have_path = False
    n = len(rest)
    while i < n:
        w = rest[i]
        if w.startswith("--"):
            key = w[2:]
            if key == "view_range":
                i += 1
                nums: list[int] = []
                while i < n and not rest[i].startswith("--"):
                    try:
                        nums.append(int(rest[i]))
                    except ValueError:
                        break
                    i += 1
                out[key] = tuple(nums)
                continue
            if key not in _SRE_STRING_ARGS and key != "insert_line":
                i += 1
                continue
            if i + 1 < n and not rest[i + 1].startswith("--"):
                value: ToolArgValue = rest[i + 1]
                if key == "insert_line":
                    with contextlib.suppress(ValueError):
                        value = int(rest[i + 1])
                out[key] = value
                i += 2
                continue
            out[key] = True
        elif not have_path:
            out["path"] = w
            have_path = True
        i += 1
    return ParsedCommand(
        kind="tool", tool=SRE_TOOL, subcommand=words[1].strip(), tool_args=tuple(out.items()), text=text
    )


def _piece_commands(piece: Piece) -> list[ParsedCommand]:
    """The sub-commands of one top-level piece: a ``VAR=value`` prefix as ``set_env``, then its command."""
    text = piece.text
    if piece.complex:
        return [complex_command(text)]
    out: list[ParsedCommand] = []
    has_equals = "=" in text
    m = _ENV_PREFIX.match(text.strip()) if has_equals else None
    if m:
        out.append(ParsedCommand(kind="set_env", command="set_env", args=(m.group(1).strip(),), text=text))
        text = (m.group(2) or "").strip()
    if not text:
        return out
    if has_equals and _ASSIGNMENT.fullmatch(text):
        out.append(ParsedCommand(kind="set_env", command="set_env", args=(text,), text=text))
        return out
    words = split_words(text)
    if words is None:
        out.append(complex_command(text))
    elif not words:
        pass
    elif words[0] == SRE_TOOL:
        sre = _parse_sre(words, text)  # an unknown subcommand yields nothing at all
        if sre is not None:
            out.append(sre)
    elif words[0] == "submit":
        out.append(ParsedCommand(kind="tool", tool="submit", text=text))
    else:
        out.append(parse_bash(words, text))
    return out


def complex_command(text: str) -> ParsedCommand:
    return ParsedCommand(kind="complex", command="complex_command", args=(text,), text=text)


def parse_action(action: str) -> tuple[ParsedCommand, ...]:
    """The paper's command parser: one action string -> its sub-commands, in source order.

    An empty (all-whitespace) action yields no command; callers treat it as a ``think`` step.
    """
    s = (action.replace("\x00", "") if "\x00" in action else action).strip()  # NUL bytes dropped
    if not s:
        return ()
    if is_simple_heredoc(s):
        hd = _parse_heredoc(s)
        return (hd if hd is not None else complex_command(s),)
    pieces = scan(s)
    if pieces is None:  # the reference grammar rejects the action
        return (complex_command(s),)
    out: list[ParsedCommand] = []
    for piece in pieces or (Piece(s, False),):
        out.extend(_piece_commands(piece))
    return tuple(out)
