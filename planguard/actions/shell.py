"""Shell lines classified by what they do: ``cat``/``head``/``sed -n`` read, ``grep``/``rg``/``find``
search, ``sed -i`` and redirection write, ``pytest`` and test scripts validate.

A line is tokenised once by the shell lexer (:mod:`planguard.shell.lexer`) into segments, and each
pipeline is judged by its first stage (``grep x f | head`` is a search), except that
any stage writing a file (``| tee f``, ``> f``) makes it a write. The segment that says most about the
line decides it: a write over a validation run over any other command over a search over a read over
navigation. ``cd DIR`` changes the directory later segments' relative paths resolve against.

The SWE-agent tool commands that arrive as shell lines (``str_replace_editor view …``, and the 0.x
``open``/``edit``/``find_file``/``search_dir``/``submit`` …) are recognised here too, as structured tools.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass
from typing import NamedTuple

from ..shell.lexer import tokenize, unquote, word_at, words_of
from ..shell.reading import Simple, read
from ..tools.paths import W_SOURCE, PathNormaliser, is_test_path, looks_like_file, pathish, write_kind
from ..tools.programs import (
    BUILTINS,
    CHECKSUMS,
    COMPLETION_MARKERS,
    FETCHERS,
    FILE_READERS,
    FINDS,
    GREPS,
    LISTERS,
    SHELLS,
    Does,
    Program,
    program,
)
from ..tools.vocabulary import patch_files
from .types import ActionType, WriteKind

__all__ = [
    "COMPLETION_MARKERS",
    "EDITOR_SUBCOMMANDS",
    "EDITOR_WRITES",
    "MEMO_TEXT_MAX",
    "SWE_TOOL_PREFIXES",
    "ShellClassifier",
    "ShellLine",
    "ShellVerdict",
    "collapse",
    "swe_flag_text",
]


#: Longer texts (file bodies, inline scripts, edits) are kept in no memo (the shell classifier's, the phase
#: rules'): they rarely repeat, and a memo full of them would pin tens of megabytes. Bounding the entries
#: does not bound what their texts hold.
MEMO_TEXT_MAX = 2048

# ------------------------------------------------------------------------------------------ verdicts


@dataclass(slots=True, eq=False)
class ShellVerdict:
    """What a shell line does, in the fields :class:`~planguard.actions.types.Action` needs."""

    type: ActionType
    target: str | None = None
    _: KW_ONLY
    path: str | None = None
    intent: str | None = None
    is_validation: bool = False
    is_completion: bool = False
    write: WriteKind | None = None
    program: str | None = None
    structured: bool = False
    old_text: str | None = None
    new_text: str | None = None
    rank: int = 0
    is_source_write: bool = False
    runs_code: bool = False  # runs a program or tests: its output redirection is a log, not a write
    scaffold: str | None = None  # a scaffold's own tool command (SWE-agent's) names the scaffold
    also_written: tuple[str, ...] = ()  # further files the line writes (``rm a b c``: b, c)
    source: str | None = None  # the file a copy or move takes the written content from
    redirected: bool = False  # the write is a program's output sent to ``target`` (``> f``)
    other_writes: tuple[ShellVerdict, ...] = ()  # the line's other pipelines that write a file


# How much a segment says about the line (higher wins; ties keep the first).
R_TRIVIAL, R_NAVIGATE, R_FETCH, R_READ, R_SEARCH, R_COMMAND, R_VALIDATE, R_WRITE, R_COMPLETE = range(9)

_PYTHONS = re.compile(r"^(?:python[\d.]*|py|pypy[\d.]*|ipython[\d.]*|uv|poetry|pipenv|hatch)$")
#: What a program's reading says it does that makes it validate (PHASES_LIVE §3, §5): the phases' r/v
#: (tests, checks) and R/V runs (a script, a snippet, the repository's program). One mapping, documented:
#: a check before the first patch is general to the phases and a validation to the action layer.
_VALIDATES = frozenset({Does.TESTS, Does.CHECK, Does.RUN, Does.SNIPPET})
_VALUE_FLAGS_GREP = frozenset(
    {
        "-e", "-f", "-m", "-A", "-B", "-C", "-d", "-D", "--include", "--exclude", "--exclude-dir",
        "--max-count", "--context", "--regexp", "--file", "-g", "-t", "-T", "--glob", "--iglob", "--type",
        "--type-not", "-M", "-j", "--threads", "--replace", "-G", "--ignore", "--max-columns",
    }
)  # fmt: skip
_VALUE_FLAGS_HEAD = frozenset({"-n", "-c", "--lines", "--bytes"})
_VALUE_FLAGS_SUM = frozenset({"-a", "--algorithm"})
_VALUE_FLAGS_NAV = frozenset({"-L", "-I", "-P", "-d", "-T", "--max-depth", "--ignore", "--hide", "-c"})
_VALUE_FLAGS_SED = frozenset({"-e", "-f", "-l", "--expression", "--file"})
_VALUE_FLAGS_AWK = frozenset({"-F", "-v", "-f"})
_VALUE_FLAGS_PATCH = frozenset({"-p", "-i", "-d", "-o", "-r", "-F", "-B", "-z", "-D", "-V", "-Y"})
_DEVICES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "-"})
# Inline code that runs a test suite (``python -c "import sympy; sympy.test('…')"``).
_URL = re.compile(r"^[a-z][a-z0-9+.-]*://", re.IGNORECASE)
_WS = re.compile(r"\s+")
_SED_INPLACE = re.compile(r"^-[a-zA-Z]*i|^--in-place")
_LEGACY_EDIT_RANGE = re.compile(r"^\s*\d+(?::\d+)?\s*$")
#: How each subcommand of SWE-agent's and OpenHands' ``str_replace_editor`` that writes changes its file.
EDITOR_WRITES = {
    "create": WriteKind.CREATE,
    "str_replace": WriteKind.EDIT,
    "insert": WriteKind.INSERT,
    "undo_edit": WriteKind.RESTORE,
}
EDITOR_SUBCOMMANDS = frozenset({"view", *EDITOR_WRITES})


def _basename(word: str) -> str:
    return word.rsplit("/", 1)[-1] if "/" in word else word


def _operands(words: list[str], start: int, value_flags: frozenset[str]) -> list[str]:
    """Non-option words after ``start`` (skipping the value of options that take one)."""
    out: list[str] = []
    skip = False
    end_opts = False
    for w in words[start:]:
        if skip:
            skip = False
            continue
        if not end_opts and w.startswith("-") and len(w) > 1:
            if w == "--":
                end_opts = True
            elif w in value_flags:
                skip = True
            continue
        out.append(w)
    return out


def collapse(text: str, limit: int = 160) -> str:
    """``text`` with each run of blanks made one space, cut to ``limit`` characters."""
    text = _WS.sub(" ", text).strip()
    return text if len(text) <= limit else text[:limit]


class ShellLine(NamedTuple):
    """A shell line read once: its reading (:func:`planguard.shell.reading.read`) and its verdict.

    ``reading`` is ``None`` for a SWE-agent tool command, which is read without the lexer. The verdict
    and the live phase rules (:mod:`planguard.phases.live`) are made from this same reading.
    """

    reading: list[list[Simple]] | None
    verdict: ShellVerdict


class ShellClassifier:
    """Classifies shell lines. One per vocabulary (it owns that vocabulary's path normaliser).

    ``swe_agent_commands`` recognises SWE-agent's tool commands given as shell lines.

    The action classifier's one memo: a line's :class:`ShellLine`, for lines up to ``MEMO_TEXT_MAX``
    characters (agents re-run the same commands). Bounded: emptied when full. Verdicts are never changed
    once made, so one may stand for many calls.
    """

    __slots__ = ("_memo", "norm", "swe_agent_commands")

    _MEMO_MAX = 1024

    def __init__(self, norm: PathNormaliser, *, swe_agent_commands: bool = True) -> None:
        self.norm = norm
        self.swe_agent_commands = swe_agent_commands
        self._memo: dict[str, ShellLine] = {}

    def classify(self, line: str) -> ShellVerdict:
        """What ``line`` does."""
        return self.read(line).verdict

    def read(self, line: str) -> ShellLine:
        """``line`` lexed and judged (memoised)."""
        if len(line) > MEMO_TEXT_MAX:
            return self._read(line)
        read = self._memo.get(line)
        if read is None:
            read = self._read(line)
            if len(self._memo) >= self._MEMO_MAX:
                self._memo.clear()
            self._memo[line] = read
        return read

    # -------------------------------------------------------------------------------- line level

    def _read(self, line: str) -> ShellLine:
        """``line`` read and judged."""
        verdict = self._swe_line(line)
        if verdict is not None:
            return ShellLine(None, verdict)
        pipelines = read(tokenize(line))
        return ShellLine(pipelines, self._verdict(line, pipelines))

    def _swe_line(self, line: str) -> ShellVerdict | None:
        """The verdict of a SWE-agent tool command given as a shell line, or None (or an empty line's)."""
        stripped = line.lstrip()
        if not stripped:
            return ShellVerdict(ActionType.REASON, rank=R_TRIVIAL)
        # The first word is only split off (a copy of the whole line) when it can be a tool command.
        if self.swe_agent_commands and stripped.startswith(SWE_TOOL_PREFIXES):
            return self._swe_tool(stripped)
        return None

    def _verdict(self, line: str, pipelines: list[list[Simple]]) -> ShellVerdict:
        """The verdict of the pipeline that says most about the line. The line validates when any of its
        commands runs tests, a check or a script (PHASES_LIVE §3: what the phases count as R/V/r/v), even
        when a write says more about it (``cat > t.py <<EOF … EOF; python t.py``)."""
        best: ShellVerdict | None = None
        validates = False
        writes: list[ShellVerdict] = []
        for pipeline in pipelines:
            v = self._pipeline(pipeline)
            if v is None:
                continue
            validates = validates or v.is_validation
            if v.type is ActionType.FILE_WRITE:
                writes.append(v)
            if best is None or v.rank > best.rank:
                best = v
        if best is None:
            return ShellVerdict(
                ActionType.COMMAND, collapse(line.lstrip(), 40), intent="complex", rank=R_TRIVIAL
            )
        best.is_validation = validates
        if len(writes) > 1:
            best.other_writes = tuple(w for w in writes if w is not best)
        return best

    def _pipeline(self, commands: list[Simple]) -> ShellVerdict | None:
        head = self._stage(commands[0])
        for cmd in commands[1:]:
            if head is not None and head.type is ActionType.SEARCH and head.target and cmd.words:
                prog = _basename(cmd.words[0])
                if prog in GREPS:
                    # ``find … | grep -i x`` and ``grep a | grep b`` narrow the query: part of it.
                    narrowed = (self._grep(prog, cmd.words, 1, cmd.cwd).target or "").rsplit(" @ ", 1)[0]
                    query, _, scope = head.target.rpartition(" @ ")
                    head.target = f"{query} | {narrowed} @ {scope}" if query else head.target
            later = self._stage(cmd)
            if (
                later is not None
                and later.type is ActionType.FILE_WRITE
                and (head is None or (head.rank < R_WRITE and not head.runs_code))
            ):
                head = later
        return head

    # ------------------------------------------------------------------------------- stage level

    def _stage(self, st: Simple) -> ShellVerdict | None:
        """The verdict of one simple command of the line's reading (its wrappers already unwrapped)."""
        words = st.words
        cwd = st.cwd
        if st.loop:
            return None
        if not words:
            return self._redirect_write(st, cwd, None, "") if st.outputs else None  # ``> file`` truncates
        prog_word = words[0]
        prog = _basename(prog_word)
        args_at = 1
        if st.later:
            # A later pipeline stage only matters when it writes a file.
            if prog == "tee" and _operands(words, args_at, frozenset()):
                return self._h_tee(prog, words, args_at, st, cwd)
            if st.outputs:
                return self._redirect_write(st, cwd, prog, None)
            return None
        judged = program(prog_word, words[1:], st.body)
        verdict = self._program(judged, prog_word, prog, st)
        if verdict is None:
            return None
        if verdict.type is ActionType.COMMAND and not verdict.is_completion:
            validates = judged.does in _VALIDATES
            verdict.is_validation = validates
            if validates:
                verdict.rank = R_VALIDATE
                verdict.runs_code = True
            elif verdict.rank == R_VALIDATE:
                verdict.rank = R_COMMAND
        return verdict

    def _program(self, judged: Program, prog_word: str, prog: str, st: Simple) -> ShellVerdict | None:
        """The action of a simple command whose program is ``prog``; ``judged`` is what the table of
        programs says it does."""
        words = st.words
        cwd = st.cwd
        args_at = 1
        nw = len(words)
        if prog in SHELLS:
            script = _operands(words, args_at, frozenset())
            if script:
                return self._run_script(prog, script[0], cwd)
        verdict: ShellVerdict | None
        handler = _HANDLERS.get(prog)
        if handler is not None:
            verdict = handler(self, prog, words, args_at, st, cwd)
        elif prog in FILE_READERS:
            verdict = self._reader(prog, words, args_at, st, cwd)
        elif prog in GREPS:
            verdict = self._grep(prog, words, args_at, cwd)
        elif prog in FINDS:
            verdict = self._find(prog, words, args_at, cwd)
        elif prog in LISTERS:
            ops = _operands(words, args_at, _VALUE_FLAGS_NAV)
            target = self.norm(ops[0], cwd) if ops else (self.norm(".", cwd) if cwd else ".")
            verdict = ShellVerdict(ActionType.NAVIGATE, target, path=target, intent=prog, rank=R_NAVIGATE)
        elif prog in FETCHERS:
            url = next((w for w in words[args_at:] if _URL.match(w)), None)
            if url is None:
                url = next(
                    (w for w in _operands(words, args_at, frozenset({"-o", "-O", "-H", "-d", "-X"}))), None
                )
            verdict = ShellVerdict(ActionType.FETCH, url, intent=prog, rank=R_FETCH)
        elif _PYTHONS.match(prog):
            verdict = self._python(judged, words, cwd)
            verdict.runs_code = True
        elif judged.does in (Does.TESTS, Does.CHECK):
            # A test runner, check or build: named by its program and verb (``npm test``, ``go vet``), the
            # file it is given as its path (``pytest tests/test_x.py``).
            sub = words[args_at] if nw > args_at and not words[args_at].startswith("-") else ""
            if sub == "run":  # npm run test
                sub = next((w for w in words[args_at + 1 :] if not w.startswith("-")), "")
            path = self.norm(judged.paths[0], cwd) if judged.paths else None
            intent = prog if not sub or pathish(sub.split("::", 1)[0]) else f"{prog} {sub}"
            verdict = ShellVerdict(
                ActionType.COMMAND, intent, path=path, intent=intent, rank=R_VALIDATE, runs_code=True
            )
        elif prog.endswith((".py", ".sh")) or prog_word.startswith("./"):
            verdict = self._run_script(None, prog_word, cwd)
        elif prog in BUILTINS:
            if prog == "echo" and any(m in words[args_at:] for m in COMPLETION_MARKERS):
                return ShellVerdict(
                    ActionType.COMMAND,
                    "submit",
                    intent="submit",
                    is_completion=True,
                    program=prog,
                    rank=R_COMPLETE,
                )
            if st.outputs:
                text = " ".join(words[args_at:]) if prog in ("echo", "printf") else None
                written = self._redirect_write(st, cwd, prog, text)
                if written is not None:
                    return written
            return ShellVerdict(ActionType.COMMAND, prog, intent=prog, program=prog, rank=R_TRIVIAL)
        else:
            sub = next((w for w in words[args_at : args_at + 1] if not w.startswith("-")), "")
            intent = f"{prog} {sub}" if sub and sub.isidentifier() and len(sub) <= 20 else prog
            verdict = ShellVerdict(ActionType.COMMAND, intent, path=None, intent=intent, rank=R_COMMAND)
        if verdict is None:
            return None
        verdict.program = prog
        if st.outputs and verdict.type is not ActionType.FILE_WRITE and not verdict.runs_code:
            return self._redirect_write(st, cwd, prog, st.body) or verdict
        return verdict

    # ------------------------------------------------------------------------------- program kinds

    def _write(
        self,
        raw: str | None,
        cwd: str | None,
        kind: WriteKind,
        prog: str | None,
        old: str | None,
        new: str | None,
        *,
        structured: bool = False,
        redirected: bool = False,
    ) -> ShellVerdict:
        target = self.norm(raw, cwd) if raw else None
        return ShellVerdict(
            ActionType.FILE_WRITE,
            target,
            path=target,
            intent=prog,
            write=kind,
            program=prog,
            structured=structured,
            old_text=old,
            new_text=new,
            rank=R_WRITE,
            is_source_write=_is_source(target, redirected),
            redirected=redirected,
        )

    def _redirect_write(
        self, st: Simple, cwd: str | None, prog: str | None, text: str | None
    ) -> ShellVerdict | None:
        """A write to the first real output file, or ``None`` when output only goes to devices."""
        for out in st.outputs:
            if out in _DEVICES:
                continue
            body = st.body if st.heredoc else text
            kind = WriteKind.INSERT if st.appends else WriteKind.CREATE
            return self._write(out, cwd, kind, prog, None, body, redirected=True)
        return None

    def _reader(
        self, prog: str, words: list[str], at: int, st: Simple, cwd: str | None
    ) -> ShellVerdict | None:
        if st.outputs and prog == "cat":
            return self._redirect_write(st, cwd, prog, st.body)
        flags = (
            _VALUE_FLAGS_HEAD if prog in ("head", "tail") else _VALUE_FLAGS_SUM if prog in CHECKSUMS else None
        )
        ops = _operands(words, at, flags or frozenset())
        ops = [o for o in ops if not o.startswith("+")]
        if not ops:
            return ShellVerdict(ActionType.FILE_READ, None, path=None, intent=prog, rank=R_READ)
        target = self.norm(ops[0], cwd)
        return ShellVerdict(ActionType.FILE_READ, target, path=target, intent=prog, rank=R_READ)

    def _grep(self, prog: str, words: list[str], at: int, cwd: str | None) -> ShellVerdict:
        pattern: str | None = None
        for k in range(at, len(words) - 1):
            if words[k] in ("-e", "--regexp"):
                pattern = words[k + 1]
                break
            if words[k].startswith("--regexp="):
                pattern = words[k][9:]
                break
        ops = _operands(words, at, _VALUE_FLAGS_GREP)
        if pattern is None and ops:
            pattern, ops = ops[0], ops[1:]
        scope = self.norm(ops[0], cwd) if ops else (self.norm(".", cwd) if cwd else ".")
        query = f"{collapse(pattern or '', 120)} @ {scope}"
        return ShellVerdict(ActionType.SEARCH, query, path=scope, intent="grep", rank=R_SEARCH)

    def _find(self, prog: str, words: list[str], at: int, cwd: str | None) -> ShellVerdict:
        k = at
        roots: list[str] = []
        if prog == "find":
            while k < len(words) and not words[k].startswith(("-", "(", "!", "\\(")):
                roots.append(words[k])
                k += 1
            preds: list[str] = []
            for w in words[k:]:
                if w in ("-exec", "-execdir", "-ok", "-delete", "-print0", "-print", "-ls"):
                    break
                preds.append(w)
            query_text = " ".join(preds)
        else:
            ops = _operands(
                words,
                at,
                frozenset({"-e", "-t", "-E", "-d", "--extension", "--type", "--exclude", "--max-depth"}),
            )
            query_text = ops[0] if ops else ""
            roots = ops[1:2]
        scope = self.norm(roots[0], cwd) if roots else (self.norm(".", cwd) if cwd else ".")
        if "-exec" in words or "-execdir" in words:
            j = words.index("-exec") if "-exec" in words else words.index("-execdir")
            inner = words[j + 1 :]
            if inner and _basename(inner[0]) in GREPS:
                g = self._grep(
                    _basename(inner[0]), [w for w in inner if w not in ("{}", ";", "+", "\\;")], 1, cwd
                )
                return ShellVerdict(
                    ActionType.SEARCH,
                    f"{g.target.rsplit(' @ ', 1)[0]} @ {scope}" if g.target else None,
                    path=scope,
                    intent="grep",
                    rank=R_SEARCH,
                )
        target = f"{collapse(query_text, 120)} @ {scope}"
        return ShellVerdict(ActionType.SEARCH, target, path=scope, intent="find", rank=R_SEARCH)

    def _python(self, judged: Program, words: list[str], cwd: str | None) -> ShellVerdict:
        """``python …`` named by what it runs: a module (``python -m pytest tests/x.py``), a snippet
        (``python -c``, ``python - <<EOF``) or a script. Whether it validates is ``judged``'s to say."""
        prog = _basename(words[0])
        if prog in ("uv", "poetry", "pipenv", "hatch"):  # ``uv pip install``: ``uv run`` is unwrapped
            intent = f"{prog} {words[1]}" if len(words) > 1 else prog
            return ShellVerdict(ActionType.COMMAND, intent, intent=intent, rank=R_COMMAND)
        k = 1
        while k < len(words):
            w = words[k]
            if w == "-m" and k + 1 < len(words):
                mod = words[k + 1]
                if mod == "pip":
                    sub = words[k + 2] if k + 2 < len(words) else ""
                    return ShellVerdict(
                        ActionType.COMMAND, f"pip {sub}".strip(), intent=f"pip {sub}".strip(), rank=R_COMMAND
                    )
                if judged.does is Does.TESTS:
                    path = self.norm(judged.paths[0], cwd) if judged.paths else None
                    rest = words[k + 2 : k + 3]
                    if rest == ["test"]:  # ``python -m django test``
                        mod = f"python -m {mod}"
                        return ShellVerdict(
                            ActionType.COMMAND, f"{mod} test", path=path, intent=mod, rank=R_COMMAND
                        )
                    return ShellVerdict(ActionType.COMMAND, mod, path=path, intent=mod, rank=R_COMMAND)
                return ShellVerdict(
                    ActionType.COMMAND, f"python -m {mod}", intent=f"python -m {mod}", rank=R_COMMAND
                )
            if w in ("-c",) or (
                w.startswith("-") and not w.startswith("--") and w.endswith("c") and len(w) <= 4
            ):
                return ShellVerdict(ActionType.COMMAND, "python -c", intent="python -c", rank=R_COMMAND)
            if w == "-":
                break
            if w in ("-W", "-X", "-Q"):
                k += 2
                continue
            if w.startswith("-"):
                k += 1
                continue
            return self._run_script("python", w, cwd)
        # ``python - <<EOF`` / ``python <<EOF``: inline code.
        return ShellVerdict(ActionType.COMMAND, "python -", intent="python -", rank=R_COMMAND)

    def _run_script(self, runner: str | None, raw: str, cwd: str | None) -> ShellVerdict:
        path = self.norm(raw, cwd)
        intent = f"{runner} {path}" if runner else path
        return ShellVerdict(
            ActionType.COMMAND, intent, path=path, intent=intent, rank=R_COMMAND, runs_code=True
        )

    # ------------------------------------------------------------------ SWE-agent tool commands

    def swe_command(self, line: str) -> ShellVerdict | None:
        """A SWE-agent tool command line (``open f 10``, ``edit 'a' 'b'``, ``find_file x``, …), or None."""
        stripped = line.strip()
        return self._swe_tool(stripped) if stripped else None

    def _swe_tool(self, line: str) -> ShellVerdict | None:
        """The verdict of a (stripped) SWE-agent tool command, which names its scaffold, or None."""
        first = line.split(None, 1)[0]
        if first not in _SWE_TOOL_WORDS:
            return None
        verdict = self._swe_command(first, line)
        if verdict is not None and first != "submit":
            verdict.scaffold = "swe-agent" if first == "str_replace_editor" else "swe-agent-0.x"
        return verdict

    def _swe_command(self, first: str, line: str) -> ShellVerdict | None:
        if first == "str_replace_editor":
            return self._swe_editor(line)
        parts = line.split(None, 2)
        arg = parts[1] if len(parts) > 1 else ""
        if first == "submit":
            return ShellVerdict(
                ActionType.COMMAND,
                "submit",
                intent="submit",
                is_completion=True,
                structured=True,
                rank=R_COMPLETE,
            )
        if first == "open":
            if not arg:
                return None
            target = self.norm(unquote(arg))
            return ShellVerdict(
                ActionType.FILE_READ, target, path=target, intent="open", structured=True, rank=R_READ
            )
        if first in ("goto", "scroll_up", "scroll_down"):
            return ShellVerdict(ActionType.FILE_READ, None, intent=first, structured=True, rank=R_READ)
        if first == "create":
            if not arg:
                return None
            return self._write(unquote(arg), None, WriteKind.CREATE, "create", None, None, structured=True)
        if first == "edit":
            body = line[4:].lstrip(" ")
            head, _, text = body.partition("\n")
            old: str | None = None
            new: str | None
            if _LEGACY_EDIT_RANGE.match(head):
                new = (
                    text[: -len("end_of_edit")].rstrip("\n")
                    if text.rstrip().endswith("end_of_edit")
                    else text
                )
            else:  # ``edit 'search' 'replace' [replace_all]`` (the 0.7 test-repo variant)
                words = words_of(body)
                old = words[0] if words else None
                new = words[1] if len(words) > 1 else None
            return ShellVerdict(
                ActionType.FILE_WRITE,
                None,
                intent="edit",
                write=WriteKind.EDIT,
                structured=True,
                old_text=old,
                new_text=new,
                rank=R_WRITE,
                is_source_write=True,
            )
        if first in ("find_file", "search_dir", "search_file"):
            words = words_of(line)[1:]
            if not words:
                return None
            scope = self.norm(words[1]) if len(words) > 1 else None
            family = "find" if first == "find_file" else "grep"
            query = f"{collapse(words[0], 120)} @ {scope or '.'}"
            return ShellVerdict(
                ActionType.SEARCH, query, path=scope, intent=family, structured=True, rank=R_SEARCH
            )
        if first == "insert":  # SWE-agent 1.x windowed tools: insert TEXT [LINE] into the open file
            words = words_of(line)[1:]
            return ShellVerdict(
                ActionType.FILE_WRITE,
                None,
                intent="insert",
                write=WriteKind.INSERT,
                structured=True,
                new_text=words[0] if words else None,
                rank=R_WRITE,
                is_source_write=True,
            )
        if first == "filemap":
            filemap = self.norm(unquote(arg)) if arg else None
            return ShellVerdict(
                ActionType.FILE_READ, filemap, path=filemap, intent="filemap", structured=True, rank=R_READ
            )
        return None

    def _swe_editor(self, line: str) -> ShellVerdict | None:
        """``str_replace_editor SUB PATH [--flag 'text' …]`` (SWE-agent 1.x), its texts shell-quoted."""
        parts = line.split(None, 3)
        if len(parts) < 3 or parts[1] not in EDITOR_SUBCOMMANDS:
            return None
        sub, raw_path = parts[1], unquote(parts[2])
        if sub == "view":
            path = self.norm(raw_path)
            if looks_like_file(path):
                return ShellVerdict(
                    ActionType.FILE_READ, path, path=path, intent="view", structured=True, rank=R_READ
                )
            return ShellVerdict(
                ActionType.NAVIGATE, path, path=path, intent="view", structured=True, rank=R_NAVIGATE
            )
        rest = parts[3] if len(parts) > 3 else ""
        old = swe_flag_text(rest, "--old_str")
        new = swe_flag_text(rest, "--file_text" if sub == "create" else "--new_str")
        return self._write(raw_path, None, EDITOR_WRITES[sub], sub, old, new, structured=True)

    # -------------------------------------------------------------------- per-program handlers

    def _h_cd(self, prog: str, words: list[str], at: int, st: Simple, cwd: str | None) -> ShellVerdict:
        ops = _operands(words, at, frozenset())
        raw = ops[0] if ops else "~"
        path = self.norm(raw, cwd) if not raw.startswith("/") else self.norm(raw)
        return ShellVerdict(ActionType.NAVIGATE, path, path=path, intent="cd", rank=R_NAVIGATE)

    def _h_sed(self, prog: str, words: list[str], at: int, st: Simple, cwd: str | None) -> ShellVerdict:
        inplace = any(_SED_INPLACE.match(w) for w in words[at:] if w.startswith("-"))
        has_e = any(w in ("-e", "--expression") or w.startswith("--expression=") for w in words[at:])
        ops = _operands(words, at, _VALUE_FLAGS_SED)
        script: str | None = None
        if has_e:
            k = next((k for k in range(at, len(words) - 1) if words[k] in ("-e", "--expression")), None)
            script = words[k + 1] if k is not None else None
            files = ops
        else:
            script, files = (ops[0], ops[1:]) if ops else (None, [])
        if inplace:
            old = new = None
            if script and len(script) > 2 and script[0] == "s":
                parts = script[2:].split(script[1])
                if len(parts) >= 2:
                    old, new = parts[0], parts[1]
            return self._write(files[-1] if files else None, cwd, WriteKind.EDIT, "sed -i", old, new)
        if not files:
            return ShellVerdict(ActionType.COMMAND, "sed", intent="sed", rank=R_TRIVIAL)
        target = self.norm(files[0], cwd)
        return ShellVerdict(ActionType.FILE_READ, target, path=target, intent="sed", rank=R_READ)

    def _h_awk(self, prog: str, words: list[str], at: int, st: Simple, cwd: str | None) -> ShellVerdict:
        ops = _operands(words, at, _VALUE_FLAGS_AWK)
        files = ops[1:] if "-f" not in words[at:] else ops
        if not files:
            return ShellVerdict(ActionType.COMMAND, prog, intent=prog, rank=R_TRIVIAL)
        target = self.norm(files[0], cwd)
        return ShellVerdict(ActionType.FILE_READ, target, path=target, intent=prog, rank=R_READ)

    def _h_perl(self, prog: str, words: list[str], at: int, st: Simple, cwd: str | None) -> ShellVerdict:
        flags = "".join(w[1:] for w in words[at:] if w.startswith("-") and not w.startswith("--"))
        ops = _operands(words, at, frozenset({"-e", "-E", "-M", "-I"}))
        if "i" in flags:
            return self._write(ops[-1] if ops else None, cwd, WriteKind.EDIT, "perl -i", None, None)
        if ("n" in flags or "p" in flags) and ops:
            target = self.norm(ops[-1], cwd)
            return ShellVerdict(ActionType.FILE_READ, target, path=target, intent="perl", rank=R_READ)
        if ops and "e" not in flags:
            return self._run_script("perl", ops[0], cwd)
        return ShellVerdict(ActionType.COMMAND, "perl -e", intent="perl -e", rank=R_COMMAND)

    def _h_git(self, prog: str, words: list[str], at: int, st: Simple, cwd: str | None) -> ShellVerdict:
        k = at
        while k < len(words) and words[k].startswith("-"):
            k += 2 if words[k] in ("-C", "-c", "--git-dir", "--work-tree") else 1
        sub = words[k] if k < len(words) else ""
        if sub == "grep":
            return self._grep("git-grep", words, k + 1, cwd)
        if sub in ("checkout", "restore"):
            if "--" in words[k:]:
                files = words[words.index("--", k) + 1 :]
            elif sub == "restore":
                files = _operands(words, k + 1, frozenset({"-s", "--source"}))
            else:
                files = [w for w in _operands(words, k + 1, frozenset({"-b", "-B"})) if looks_like_file(w)]
            if files:
                return self._write(files[0], cwd, WriteKind.RESTORE, f"git {sub}", None, None)
        if sub in ("apply", "am"):
            v = self._write(None, cwd, WriteKind.OTHER, f"git {sub}", None, None)
            v.is_source_write = True
            return v
        if sub == "ls-files":
            return ShellVerdict(ActionType.NAVIGATE, ".", intent="git ls-files", rank=R_NAVIGATE)
        intent = f"git {sub}".strip()
        return ShellVerdict(ActionType.COMMAND, intent, intent=intent, rank=R_COMMAND)

    def _h_touch(self, prog: str, words: list[str], at: int, st: Simple, cwd: str | None) -> ShellVerdict:
        ops = _operands(words, at, frozenset({"-d", "-t", "-r"}))
        return self._write(ops[0] if ops else None, cwd, WriteKind.OTHER, prog, None, None)

    def _h_rm(self, prog: str, words: list[str], at: int, st: Simple, cwd: str | None) -> ShellVerdict:
        ops = _operands(words, at, frozenset())
        v = self._write(ops[0] if ops else None, cwd, WriteKind.DELETE, prog, None, None)
        # Each operand is deleted: a write to every file named (the first is the target).
        v.also_written = tuple(self.norm(op, cwd) for op in ops[1:] if op)
        v.is_source_write = v.is_source_write or any(_is_source(path) for path in v.also_written)
        return v

    def _h_copy(self, prog: str, words: list[str], at: int, st: Simple, cwd: str | None) -> ShellVerdict:
        ops = _operands(words, at, frozenset({"-t", "-S", "--suffix"}))
        v = self._write(ops[-1] if len(ops) >= 2 else None, cwd, WriteKind.OTHER, prog, None, None)
        if len(ops) == 2:  # one file onto another: what a restore from a backup copy is made of
            v.source = self.norm(ops[0], cwd)
        return v

    def _h_tee(self, prog: str, words: list[str], at: int, st: Simple, cwd: str | None) -> ShellVerdict:
        ops = _operands(words, at, frozenset())
        return self._write(
            ops[0] if ops else None,
            cwd,
            WriteKind.INSERT if "-a" in words else WriteKind.CREATE,
            prog,
            None,
            st.body if st.heredoc else None,
        )

    def _h_patch(self, prog: str, words: list[str], at: int, st: Simple, cwd: str | None) -> ShellVerdict:
        ops = _operands(words, at, _VALUE_FLAGS_PATCH)
        v = self._write(ops[0] if ops else None, cwd, WriteKind.OTHER, prog, None, None)
        v.is_source_write = True if not ops else v.is_source_write
        return v

    def _h_apply_patch(
        self, prog: str, words: list[str], at: int, st: Simple, cwd: str | None
    ) -> ShellVerdict:
        """``apply_patch``/``applypatch <<'PATCH' … PATCH`` (older Codex rollouts): the files it touches."""
        touched, _ = patch_files(st.body or " ".join(words[at:]))
        v = self._write(touched[0] if touched else None, cwd, WriteKind.OTHER, prog, None, None)
        v.also_written = tuple(self.norm(t, cwd) for t in touched[1:])
        v.is_source_write = not touched or any(_is_source(t) for t in (v.target, *v.also_written))
        return v

    def _h_mkdir(self, prog: str, words: list[str], at: int, st: Simple, cwd: str | None) -> ShellVerdict:
        ops = _operands(words, at, frozenset({"-m"}))
        target = self.norm(ops[0], cwd) if ops else None
        return ShellVerdict(ActionType.COMMAND, prog, path=target, intent=prog, rank=R_COMMAND)


def swe_flag_text(rest: str, flag: str) -> str | None:
    """The value of ``--flag 'text'`` in a SWE-agent editor action string (shell-quoted)."""
    at = rest.find(flag + " ")
    if at < 0:
        return None
    return word_at(rest, at + len(flag) + 1)


def _is_source(target: str | None, redirected: bool = False) -> bool:
    """A write to ``target`` changes a source file of the repository (the one path model: ``write_kind``).
    A line read alone cannot know which files the run created as its own scripts: the names such scripts
    typically have (``reproduce*``, ``verify_*``, ``check_*``, ``debug_*``) stand in for that here, as for
    the file tools' writes; a session whose live rules judge the call from the run model replaces this
    with their verdict (:attr:`planguard.phases.base.Classification.source_write`)."""
    if not target:
        return False
    return write_kind(target, redirected) == W_SOURCE and not is_test_path(target)


_SWE_TOOL_WORDS = frozenset(
    {
        "str_replace_editor", "submit", "open", "goto", "scroll_up", "scroll_down", "create", "edit",
        "find_file", "search_dir", "search_file", "filemap", "insert",
    }
)  # fmt: skip
#: What a line starts with when it can be one (``ShellClassifier.swe_command`` decides).
SWE_TOOL_PREFIXES = tuple(_SWE_TOOL_WORDS)


_Handler = Callable[[ShellClassifier, str, list[str], int, Simple, str | None], ShellVerdict | None]
_HANDLERS: dict[str, _Handler] = {
    "cd": ShellClassifier._h_cd,
    "sed": ShellClassifier._h_sed,
    "gsed": ShellClassifier._h_sed,
    "awk": ShellClassifier._h_awk,
    "gawk": ShellClassifier._h_awk,
    "mawk": ShellClassifier._h_awk,
    "perl": ShellClassifier._h_perl,
    "git": ShellClassifier._h_git,
    "touch": ShellClassifier._h_touch,
    "rm": ShellClassifier._h_rm,
    "unlink": ShellClassifier._h_rm,
    "cp": ShellClassifier._h_copy,
    "mv": ShellClassifier._h_copy,
    "install": ShellClassifier._h_copy,
    "tee": ShellClassifier._h_tee,
    "patch": ShellClassifier._h_patch,
    "apply_patch": ShellClassifier._h_apply_patch,
    "applypatch": ShellClassifier._h_apply_patch,
    "mkdir": ShellClassifier._h_mkdir,
}
