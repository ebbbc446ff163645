"""The action classifier: a tool call, as the vocabulary reads it (:mod:`planguard.tools.vocabulary`), to its
canonical :class:`~planguard.actions.types.Action`.

One reader per rule kind (``shell``, ``editor``, ``read``, ``write``, ``edit``, ``search``, …) turns the
call's arguments into an action; a shell line goes through the shell classifier
(:class:`ShellClassifier`). :meth:`ActionClassifier.tool_call` is the call in canonical form
(:class:`~planguard.tools.vocabulary.ToolCall`) that the phase rules read.

Shell lines classified by what they do: ``cat``/``head``/``sed -n`` read, ``grep``/``rg``/``find``
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

import dataclasses
import json
import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, dataclass
from typing import NamedTuple

from ..events import THINK_TOOL, ToolEvent
from ..run import RunModel
from ..shell.lexer import tokenize, unquote, word_at, words_of
from ..shell.reading import Simple, read
from ..tools.paths import (
    W_SOURCE,
    PathNormaliser,
    is_scratch_path,
    is_test_path,
    looks_like_file,
    pathish,
    write_kind,
)
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
from ..tools.vocabulary import (
    _CALL_KIND_OF,
    _CODE_KEYS,
    _OTHER_CALL,
    _PATCH_HEADER,
    _PATH_KEYS,
    _QUERY_KEYS,
    _SCOPE_KEYS,
    _TEXT_KEYS,
    _UNMAPPED_CALL,
    _WRITE_TEXT_KEYS,
    DEFAULT_VOCABULARY,
    ActionVocabulary,
    MappingRule,
    ToolCall,
    _arg,
    _is_map,
    _parsed_arguments,
    _raw_text,
    _search_operands,
    _shell_line,
    _str_arg,
    patch_files,
)
from .types import Action, ActionType, WriteKind

__all__ = [
    "ActionClassifier",
    "COMPLETION_MARKERS",
    "DEFAULT_CLASSIFIER",
    "EDITOR_SUBCOMMANDS",
    "EDITOR_WRITES",
    "MEMO_TEXT_MAX",
    "SWE_TOOL_PREFIXES",
    "ShellClassifier",
    "ShellLine",
    "ShellVerdict",
    "classify_action",
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
            is_source_write=_verdict_source(target, redirected),
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
        v.is_source_write = v.is_source_write or any(_verdict_source(path) for path in v.also_written)
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
        v.is_source_write = not touched or any(_verdict_source(t) for t in (v.target, *v.also_written))
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


def _verdict_source(target: str | None, redirected: bool = False) -> bool:
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


# ------------------------------------------------------------------------------------ classifier

_CALL_KIND_OF_TYPE = {
    ActionType.FILE_READ: "read",
    ActionType.NAVIGATE: "read",
    ActionType.FILE_WRITE: "write",
    ActionType.SEARCH: "search",
}
_Reader = Callable[["ActionClassifier", MappingRule, ToolEvent, RunModel | None], Action]
_NO_RULE = MappingRule(tool="*", kind="command", structured=False)
_THINK_RULE = MappingRule(tool="", kind="reason", text=_TEXT_KEYS, structured=False)


class ActionClassifier:
    """``classifier(event) -> Action`` for one vocabulary; never raises on odd names or arguments.

    Its one memo is its shell classifier's (a verdict per command line, bounded). Actions are
    immutable, so one record may stand for many calls.
    """

    __slots__ = ("norm", "shell", "vocabulary")

    def __init__(self, vocabulary: ActionVocabulary = DEFAULT_VOCABULARY) -> None:
        self.vocabulary = vocabulary
        self.norm = PathNormaliser(vocabulary.roots)
        self.shell = ShellClassifier(self.norm, swe_agent_commands=vocabulary.swe_agent_commands)

    def __call__(self, event: ToolEvent) -> Action:
        try:
            parsed = _parsed_arguments(event)
            return self._classify(parsed, self.rule_for(parsed.tool))
        except Exception:
            return _unread(event)

    @property
    def call_reader(self) -> ActionClassifier:
        """What reads calls for this classifier: itself (rules reading through it take its
        :class:`ToolCall`; :class:`planguard.phases.base.CallReader`)."""
        return self

    def read(self, event: ToolEvent, run: RunModel | None = None) -> tuple[Action, ToolCall]:
        """The call read once, for the pipeline: its action and its canonical form (what the phase rules
        read), from one parse of its arguments and one rule. ``run`` is the session's run model: whether
        a write changes a source file is then judged by what the run made (a file it created as its own
        script is not the repository's source, whatever its name; PHASES_LIVE §4); without it, from the
        call alone. Never raises."""
        try:
            parsed = _parsed_arguments(event)
            rule = self.rule_for(parsed.tool)
        except Exception:
            return _unread(event), _UNMAPPED_CALL
        try:
            action = self._classify(parsed, rule, run)
        except Exception:
            action = _unread(event)
        try:
            # A created file's text, as the action's reader unquoted it (a SWE-agent ``create``'s
            # ``--file_text``): the call carries the same text rather than a second unquoting of it.
            created = action.new_text if action.write is WriteKind.CREATE and action.structured else None
            call = self._tool_call(parsed, rule, created)
        except Exception:
            call = _UNMAPPED_CALL
        return action, call

    def _classify(self, event: ToolEvent, rule: MappingRule, run: RunModel | None = None) -> Action:
        action = _READERS[rule.kind or "command"](self, rule, event, run)
        scaffold = self.vocabulary.scaffold
        if scaffold is not None and action.scaffold != scaffold:
            action = dataclasses.replace(action, scaffold=scaffold)
        return action

    def rule_for(self, tool: str) -> MappingRule:
        """The rule that reads calls of ``tool``: the empty tool is a reasoning step; an unknown one a
        command (:data:`_NO_RULE`)."""
        if not isinstance(tool, str):
            tool = str(tool)
        if tool == THINK_TOOL:
            return _THINK_RULE
        return self.vocabulary.rule_for(tool) or _NO_RULE

    def tool_call(self, event: ToolEvent) -> ToolCall:
        """The call as the phase rules read it (see :class:`ToolCall`), by this vocabulary's rules. Never
        raises."""
        try:
            parsed = _parsed_arguments(event)
            return self._tool_call(parsed, self.rule_for(parsed.tool))
        except Exception:
            return _UNMAPPED_CALL

    def _tool_call(self, event: ToolEvent, rule: MappingRule, text: str | None = None) -> ToolCall:
        if rule is _NO_RULE:
            return _UNMAPPED_CALL
        kind = rule.kind or "command"
        if rule.validation:
            return ToolCall("test", reader=kind)
        if kind == "shell":
            line = _shell_line(rule, event)
            if line is None:
                return ToolCall("other", reader=kind)
            if self.shell.swe_agent_commands and line[:64].lstrip().startswith(SWE_TOOL_PREFIXES):
                call = self._swe_line_call(line, event, text)  # ``str_replace_editor view f``, …
                if call is not None:
                    return call._replace(command=line, reader=kind)
            return ToolCall("shell", line, reader=kind)
        if kind == "editor":
            args = event.arguments
            if _is_map(args):
                sub, raw = args.get("command"), args.get("path")
                if isinstance(sub, str) and isinstance(raw, str):
                    file_text = args.get("file_text") if sub == "create" else None
                    content = file_text if isinstance(file_text, str) else None
                    return self._editor_call(sub, raw)._replace(reader=kind, content=content)
            action_string = _raw_text(event)  # the SWE-agent action string
            call = self._swe_line_call(action_string, event, text) if action_string else None
            if call is None:
                return ToolCall("other", reader=kind)
            return call._replace(command=action_string, reader=kind)
        if kind == "swe_command":
            if rule.tool in _FILE_SHAPED and _names_a_file(event):
                raw_path = _str_arg(event, ("filePath", "file_path", "path")) or ""
                path = self.norm(raw_path)
                created = (path,) if rule.tool == "create" else ()
                return ToolCall("write", paths=(path,), created=created, operands=(raw_path,), reader=kind)
            verdict = self.shell.swe_command(_swe_command_line(event))
            call = self._verdict_call(verdict, event) if verdict is not None else _OTHER_CALL
            return call._replace(reader=kind)
        if kind == "apply_patch":
            text = _str_arg(event, rule.text or ("input", "patch")) or _raw_text(event) or ""
            touched, added = patch_files(text)
            return ToolCall(
                "write",
                paths=tuple(map(self.norm, touched)),
                created=tuple(map(self.norm, added)),
                operands=tuple(touched),
                reader=kind,
            )
        if kind == "code":
            return ToolCall("code", _str_arg(event, rule.target or _CODE_KEYS), reader=kind)
        if kind == "reason":
            return ToolCall("other", reader=kind, thought=True)
        call_kind = _CALL_KIND_OF.get(kind, "other")
        if call_kind in ("read", "write"):
            raw = _str_arg(event, rule.target or _PATH_KEYS)
            paths = (self.norm(raw),) if raw else ()
            creates = kind == "write" or (
                kind == "edit" and rule.tool == "Edit" and not _arg(event, ("old_string",))
            )
            content = None
            if creates:
                keys = _WRITE_TEXT_KEYS if kind == "write" else ("new_string",)
                content = _str_arg(event, rule.text or keys)
            return ToolCall(
                call_kind,
                paths=paths,
                created=paths if creates else (),
                operands=(raw,) if raw else (),
                reader=kind,
                content=content,
            )
        if call_kind == "search":
            return ToolCall("search", operands=_search_operands(rule, event), reader=kind)
        return ToolCall(call_kind, reader=kind)

    def _swe_line_call(self, line: str, event: ToolEvent, created: str | None = None) -> ToolCall | None:
        """A SWE-agent tool command given as a line, or None. The editor's subcommand and path decide its
        call; a ``create`` carries the file's text (``created`` when the action's reader unquoted it
        already); the 0.x commands go through their verdict."""
        if line[:64].lstrip().startswith("str_replace_editor "):
            parts = line[:4096].split(None, 3)  # a prefix: the file texts after the path can be long
            if len(parts) < 3 or parts[1] not in EDITOR_SUBCOMMANDS:
                return None
            call = self._editor_call(parts[1], unquote(parts[2]))
            if parts[1] == "create" and len(parts) > 3:
                if created is None:
                    created = swe_flag_text(line.split(None, 3)[3], "--file_text")
                call = call._replace(content=created)
            return call
        verdict = self.shell.swe_command(line)
        return self._verdict_call(verdict, event) if verdict is not None else None

    def _editor_call(self, sub: str, raw_path: str) -> ToolCall:
        """``str_replace_editor SUB PATH`` as a call: ``view`` reads, the other subcommands write."""
        if sub not in EDITOR_SUBCOMMANDS:
            return _OTHER_CALL
        path = self.norm(raw_path)
        if sub == "view":
            return ToolCall("read", paths=(path,), operands=(raw_path,))
        return ToolCall(
            "write", paths=(path,), created=(path,) if sub == "create" else (), operands=(raw_path,)
        )

    def _verdict_call(self, v: ShellVerdict, event: ToolEvent) -> ToolCall:
        """A SWE-agent tool command's verdict as a call (``edit``/``insert`` act on the open file)."""
        if v.is_completion:
            return ToolCall("submit")
        kind = _CALL_KIND_OF_TYPE.get(v.type)
        if kind is None:
            return _OTHER_CALL
        if kind == "search":
            return ToolCall("search")
        target = v.path or v.target or self._opened(event)
        paths = (target,) if target else ()
        return ToolCall(kind, paths=paths, created=paths if v.write is WriteKind.CREATE else ())

    # ------------------------------------------------------------------------------- helpers

    def _opened(self, event: ToolEvent) -> str | None:
        """The file SWE-agent 0.x's windowed editor has open, as the loader recorded it: its ``edit``,
        ``goto`` and ``scroll_*`` act on that file."""
        meta = event.metadata
        value = meta.get("open_file") if isinstance(meta, Mapping) else None
        return self.norm(value) if isinstance(value, str) and value and value != "n/a" else None

    def from_verdict(
        self, v: ShellVerdict, rule: MappingRule, event: ToolEvent, via_shell: bool, run: RunModel | None
    ) -> Action:
        target = v.target
        path = v.path
        if target is None and v.structured and v.type in (ActionType.FILE_READ, ActionType.FILE_WRITE):
            target = path = self._opened(event)
        source = v.is_source_write
        if v.type is ActionType.FILE_WRITE:
            if run is not None:
                # An ``edit`` of the open file changes it, though the recording may not name it.
                written = target if target is not None else run.open_file
                if written is not None or v.also_written:  # else ``git apply``: as the line says
                    source = _changes_source(v, written, run) or any(
                        _changes_source(w, w.target, run) for w in v.other_writes
                    )
            elif target is not None and v.intent == "edit" and v.structured:
                source = _is_source(target)
        return Action(
            v.type,
            target,
            event.tool,
            path,
            v.intent,
            v.is_validation,
            source,
            v.is_completion,
            v.write,
            v.program if via_shell and not v.structured else None,
            v.structured,
            v.scaffold or rule.scaffold,
            v.old_text,
            v.new_text,
            None,
            v.also_written,
            source=v.source,
        )


def _is_source(
    target: str | None, run: RunModel | None = None, *, whole: bool = False, content: str | None = None
) -> bool:
    """A write to ``target`` changes a source file of the repository: as the run model judges it (by what
    the run made, the place and the content), else from the call alone (not a test, reproduction or
    scratch path)."""
    if not target:
        return False
    if run is not None:
        return run.changes_source(target, whole=whole, content=content)
    return not is_test_path(target) and not is_scratch_path(target)


def _changes_source(v: ShellVerdict, target: str | None, run: RunModel) -> bool:
    """Whether a line's write (``v``, to ``target`` and its further files) changes a source file, as the
    run model judges it."""
    return any(
        run.changes_source(
            p,
            whole=v.write is WriteKind.CREATE,
            content=v.new_text,
            removes=v.write is WriteKind.DELETE,
            redirected=v.redirected,
        )
        for p in (target, *v.also_written)
        if p is not None
    )


def _unread(event: ToolEvent) -> Action:
    """The action of a call no reader could read (fail-open)."""
    return Action(ActionType.COMMAND, collapse(str(event.tool) or "?"), str(event.tool))


# ---------------------------------------------------------------------------------------- readers


def _read_shell(c: ActionClassifier, rule: MappingRule, event: ToolEvent, run: RunModel | None) -> Action:
    args = event.arguments
    if _is_map(args) and args.get("is_input") in (True, "true"):
        return Action(ActionType.COMMAND, "input", event.tool, intent="input", scaffold=rule.scaffold)
    cmd = _shell_line(rule, event)  # the line the phase rules read too
    if cmd is None:
        return Action(ActionType.COMMAND, None, event.tool, scaffold=rule.scaffold)
    if cmd.startswith("str_replace_editor ") and c.shell.swe_agent_commands:
        parts = cmd.split(None, 3)
        if len(parts) >= 3 and parts[1] in EDITOR_SUBCOMMANDS:
            sub, rest = parts[1], parts[3] if len(parts) > 3 else ""
            old = swe_flag_text(rest, "--old_str")
            new = swe_flag_text(rest, "--file_text" if sub == "create" else "--new_str")
            return _editor(c, "swe-agent", event.tool, sub, unquote(parts[2]), old, new, run)
    return c.from_verdict(c.shell.classify(cmd), rule, event, True, run)


def _read_editor(c: ActionClassifier, rule: MappingRule, event: ToolEvent, run: RunModel | None) -> Action:
    args = event.arguments
    if not _is_map(args):
        text = _raw_text(event)
        if text and text.startswith("str_replace_editor"):
            return c.from_verdict(c.shell.classify(text), rule, event, False, run)
        return Action(ActionType.COMMAND, event.tool, event.tool, intent=event.tool, scaffold=rule.scaffold)
    sub = args.get("command")
    raw_path = args.get("path")
    if not isinstance(sub, str) or not isinstance(raw_path, str):
        return Action(ActionType.COMMAND, event.tool, event.tool, intent=event.tool, scaffold=rule.scaffold)
    old = args.get("old_str")
    new = args.get("file_text" if sub == "create" else "new_str")
    return _editor(
        c,
        rule.scaffold,
        event.tool,
        sub,
        raw_path,
        old if isinstance(old, str) else None,
        new if isinstance(new, str) else None,
        run,
    )


def _editor(
    c: ActionClassifier,
    scaffold: str | None,
    tool: str,
    sub: str,
    raw_path: str,
    old: str | None,
    new: str | None,
    run: RunModel | None,
) -> Action:
    """A call of the str_replace_editor family (SWE-agent 1.x, OpenHands), from function-call arguments or
    the action string alike."""
    if sub == "view":
        path = c.norm(raw_path)
        kind = ActionType.FILE_READ if looks_like_file(path) else ActionType.NAVIGATE
        return Action(kind, path, tool, path, "view", structured=True, scaffold=scaffold)
    write = EDITOR_WRITES.get(sub)
    if write is None:
        return Action(ActionType.COMMAND, f"{tool} {sub}"[:80], tool, intent=sub, scaffold=scaffold)
    path = c.norm(raw_path)
    return Action(
        ActionType.FILE_WRITE,
        path,
        tool,
        path,
        sub,
        is_source_write=_is_source(path, run, whole=write is WriteKind.CREATE, content=new),
        write=write,
        structured=True,
        scaffold=scaffold,
        old_text=old,
        new_text=new,
    )


def _file_target(c: ActionClassifier, rule: MappingRule, event: ToolEvent) -> str | None:
    raw = _str_arg(event, rule.target or _PATH_KEYS)
    return c.norm(raw) if raw else None


def _tool_write(
    rule: MappingRule,
    event: ToolEvent,
    target: str | None,
    intent: str,
    kind: WriteKind,
    old: str | None,
    new: str | None,
    run: RunModel | None,
) -> Action:
    """The write of a file tool (``Write``, ``Edit``, ``MultiEdit`` and their kin) to ``target``."""
    return Action(
        ActionType.FILE_WRITE,
        target,
        event.tool,
        target,
        intent,
        is_source_write=_is_source(target, run, whole=kind is WriteKind.CREATE, content=new),
        write=kind,
        structured=rule.structured,
        scaffold=rule.scaffold,
        old_text=old,
        new_text=new,
    )


def _rule_action(
    rule: MappingRule,
    event: ToolEvent,
    type: ActionType,
    target: str | None,
    path: str | None,
    intent: str | None,
    text: str | None = None,
    *,
    completion: bool = False,
) -> Action:
    """An action of the call's tool, of the scaffold its rule names. A declaration that the agent is done
    (``finish``, ``submit``) is a structured call whatever the rule says."""
    return Action(
        type,
        target,
        event.tool,
        path,
        intent,
        is_completion=completion,
        structured=completion or rule.structured,
        scaffold=rule.scaffold,
        text=text,
    )


def _read_read(c: ActionClassifier, rule: MappingRule, event: ToolEvent, run: RunModel | None) -> Action:
    target = _file_target(c, rule, event)
    return _rule_action(rule, event, ActionType.FILE_READ, target, target, "read")


def _read_write(c: ActionClassifier, rule: MappingRule, event: ToolEvent, run: RunModel | None) -> Action:
    target = _file_target(c, rule, event)
    text = _str_arg(event, rule.text or _WRITE_TEXT_KEYS)
    return _tool_write(rule, event, target, "write", WriteKind.CREATE, None, text, run)


def _read_edit(c: ActionClassifier, rule: MappingRule, event: ToolEvent, run: RunModel | None) -> Action:
    target = _file_target(c, rule, event)
    old = _str_arg(event, ("old_string", "oldString", "old_str", "old_text", "search"))
    new = _str_arg(
        event, rule.text or ("new_string", "newString", "new_str", "new_text", "replace", "content")
    )
    # Claude Code's Edit with an empty old_string creates the file; edit_file rewrites a line range.
    kind = WriteKind.EDIT if old else (WriteKind.CREATE if rule.tool == "Edit" else WriteKind.EDIT)
    return _tool_write(rule, event, target, "edit", kind, old, new, run)


def _read_multi_edit(
    c: ActionClassifier, rule: MappingRule, event: ToolEvent, run: RunModel | None
) -> Action:
    target = _file_target(c, rule, event)
    edits = _arg(event, ("edits",))
    olds: list[str] = []
    news: list[str] = []
    if isinstance(edits, list):
        for e in edits:
            if isinstance(e, Mapping):
                o, n = e.get("old_string", e.get("oldString")), e.get("new_string", e.get("newString"))
                if isinstance(o, str):
                    olds.append(o)
                if isinstance(n, str):
                    news.append(n)
    return _tool_write(
        rule, event, target, "edit", WriteKind.EDIT, "\n".join(olds) or None, "\n".join(news) or None, run
    )


def _unnamed_query(event: ToolEvent) -> str:
    """What a search tool without a query argument looks for: its name and arguments (``find_user`` by an
    e-mail and ``search_flights`` by route are different searches; the same call twice is the same)."""
    args = event.arguments
    if not isinstance(args, Mapping) or not args:
        return event.tool or ""
    return f"{event.tool} " + json.dumps(args, sort_keys=True, ensure_ascii=False, default=str)


def _search_reader(intent: str) -> _Reader:
    """The reader of a structured search tool (``grep``-like content search or ``find``-like name search)."""

    def read(c: ActionClassifier, rule: MappingRule, event: ToolEvent, run: RunModel | None) -> Action:
        query = _str_arg(event, rule.target or _QUERY_KEYS)
        if query is None:
            query = _raw_text(event) or _unnamed_query(event)
        raw_scope = _str_arg(event, rule.scope or _SCOPE_KEYS)
        scope = c.norm(raw_scope) if raw_scope else None
        return _rule_action(
            rule, event, ActionType.SEARCH, f"{collapse(query, 120)} @ {scope or '.'}", scope, intent
        )

    return read


def _read_navigate(c: ActionClassifier, rule: MappingRule, event: ToolEvent, run: RunModel | None) -> Action:
    target = _file_target(c, rule, event) or "."
    return _rule_action(rule, event, ActionType.NAVIGATE, target, target, "ls")


def _named_reader(type: ActionType, keys: tuple[str, ...], limit: int) -> _Reader:
    """The reader of a tool whose target is the one argument that names what it reaches (a fetch's URL,
    a spawned agent's kind), clipped to ``limit`` characters."""

    def read(c: ActionClassifier, rule: MappingRule, event: ToolEvent, run: RunModel | None) -> Action:
        target = _str_arg(event, rule.target or keys)
        return _rule_action(rule, event, type, collapse(target, limit) if target else None, None, event.tool)

    return read


def _read_plan(c: ActionClassifier, rule: MappingRule, event: ToolEvent, run: RunModel | None) -> Action:
    text = _str_arg(event, rule.text) if rule.text else None
    return _rule_action(rule, event, ActionType.PLAN, "plan", None, event.tool, text)


def _read_reason(c: ActionClassifier, rule: MappingRule, event: ToolEvent, run: RunModel | None) -> Action:
    text = _str_arg(event, rule.text or _TEXT_KEYS)
    if text is None and isinstance(event.arguments, str):
        text = event.arguments or None
    return Action(ActionType.REASON, None, event.tool, structured=False, scaffold=rule.scaffold, text=text)


def _read_finish(c: ActionClassifier, rule: MappingRule, event: ToolEvent, run: RunModel | None) -> Action:
    text = _str_arg(event, rule.text or _TEXT_KEYS)
    return _rule_action(rule, event, ActionType.REASON, "finish", None, "finish", text, completion=True)


def _read_submit(c: ActionClassifier, rule: MappingRule, event: ToolEvent, run: RunModel | None) -> Action:
    return _rule_action(rule, event, ActionType.COMMAND, "submit", None, "submit", completion=True)


def _read_code(c: ActionClassifier, rule: MappingRule, event: ToolEvent, run: RunModel | None) -> Action:
    """A tool that runs a code snippet (OpenHands' IPython cell, a ``python`` tool): ``python -c``."""
    code = _str_arg(event, rule.target or _CODE_KEYS)
    if code is None:
        return _read_command(c, rule, event, run)
    return Action(
        ActionType.COMMAND,
        "python -c",
        str(event.tool),
        None,
        "python -c",
        is_validation=rule.validation or "pytest" in code,
        structured=False,
        scaffold=rule.scaffold,
    )


def _read_command(c: ActionClassifier, rule: MappingRule, event: ToolEvent, run: RunModel | None) -> Action:
    tool = str(event.tool)
    return Action(
        ActionType.COMMAND,
        collapse(tool, 80),
        tool,
        None,
        collapse(tool, 80),
        is_validation=rule.validation,
        is_completion=rule.completion,
        structured=rule.structured,
        scaffold=rule.scaffold,
    )


def _read_apply_patch(
    c: ActionClassifier, rule: MappingRule, event: ToolEvent, run: RunModel | None
) -> Action:
    text = _str_arg(event, rule.text or ("input", "patch")) or _raw_text(event) or ""
    m = _PATCH_HEADER.search(text)
    target = c.norm(m.group(2).strip()) if m else None
    return Action(
        ActionType.FILE_WRITE,
        target,
        event.tool,
        target,
        "apply_patch",
        is_source_write=_is_source(target, run) if target else True,
        write=WriteKind.OTHER,
        structured=True,
        scaffold=rule.scaffold,
    )


def _names_a_file(event: ToolEvent) -> bool:
    """Arguments that address a file by path (OpenCode's ``edit {filePath, oldString, newString}``), not
    SWE-agent 0.x's windowed ``edit``/``create``, which act on the open file or take a ``filename``."""
    args = event.arguments
    return _is_map(args) and any(isinstance(args.get(k), str) for k in ("filePath", "file_path", "path"))


def _swe_command_line(event: ToolEvent) -> str:
    """A SWE-agent tool called as a function, as the command line it stands for: the scaffold's action text,
    else the tool name and its argument values, shell-quoted."""
    if isinstance(event.action, str) and event.action.strip():
        return event.action
    args = event.arguments
    values = list(args.values()) if _is_map(args) else ([args] if args else [])
    return " ".join([str(event.tool), *(shlex.quote(str(v)) for v in values)])


def _read_swe_command(
    c: ActionClassifier, rule: MappingRule, event: ToolEvent, run: RunModel | None
) -> Action:
    if rule.tool in _FILE_SHAPED and _names_a_file(event):
        return _read_edit(c, rule, event, run) if rule.tool != "create" else _read_write(c, rule, event, run)
    verdict = c.shell.swe_command(_swe_command_line(event))
    if verdict is None:
        return Action(
            ActionType.COMMAND,
            collapse(str(event.tool), 80),
            event.tool,
            intent=event.tool,
            structured=True,
            scaffold=rule.scaffold,
        )
    return c.from_verdict(verdict, rule, event, False, run)


#: SWE-agent 0.x tool names that other scaffolds (OpenCode) use for path-addressed file tools.
_FILE_SHAPED = frozenset({"edit", "create", "insert"})

_READERS: dict[str, _Reader] = {
    "swe_command": _read_swe_command,
    "shell": _read_shell,
    "editor": _read_editor,
    "read": _read_read,
    "write": _read_write,
    "edit": _read_edit,
    "multi_edit": _read_multi_edit,
    "search": _search_reader("grep"),
    "find": _search_reader("find"),
    "navigate": _read_navigate,
    "fetch": _named_reader(ActionType.FETCH, ("url", "query", "uri"), 200),
    "plan": _read_plan,
    "spawn": _named_reader(ActionType.AGENT_SPAWN, ("subagent_type", "agent", "name", "description"), 80),
    "reason": _read_reason,
    "finish": _read_finish,
    "submit": _read_submit,
    "command": _read_command,
    "apply_patch": _read_apply_patch,
    "code": _read_code,
}

#: The classifier behind :func:`classify_action`: every built-in scaffold at once, default roots.
DEFAULT_CLASSIFIER = ActionClassifier(DEFAULT_VOCABULARY)


def classify_action(event: ToolEvent) -> Action:
    """Canonical action of a tool call under the default (all-scaffold) vocabulary. Never raises."""
    return DEFAULT_CLASSIFIER(event)
