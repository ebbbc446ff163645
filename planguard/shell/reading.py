"""One reading of a shell line into simple commands, for the action verdict and the live phases alike
(PHASES_LIVE.md §1).

The lexer (:mod:`planguard.shell.lexer`) cuts a line into segments (``&&``, ``||``, ``;``, newlines) of
pipelines of stages. :func:`read` turns those into :class:`Simple` commands:

* the words that only set up how a program runs are unwrapped (assignments, control keywords, ``sudo``,
  ``time``, ``timeout 5``, ``nice -n 5``, ``env A=1``, ``xargs -n 1``, ``uv run``, ``pdm run``,
  ``poetry run``, ``bundle exec``, ``npx``; the table is :mod:`planguard.tools.programs`'), so a command's
  words start at its program;
* a nested shell (``bash -c '…'``, ``sh -lc '…'``, ``bash <<EOF … EOF``) is read in place, as further
  pipelines, up to :data:`MAX_DEPTH` levels;
* ``cd DIR`` moves the directory the later commands' relative paths resolve against;
* a heredoc's body stays with the command that reads it (``cat > f <<EOF``, ``python - <<EOF``);
* a loop's variable stands for the first item of its list in the loop's body (``for f in tests/*.py;
  do pytest $f; done`` runs ``pytest tests/*.py``); a loop header or end has no program of its own.

What each program then does is :func:`planguard.tools.programs.program`'s to say.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from ..tools.programs import ASSIGNMENT, CONTROL, LOOP_WORDS, NPX, RUN_PREFIXES, SHELLS, WRAPPERS
from .lexer import Stage, tokenize

__all__ = ["MAX_DEPTH", "Simple", "read", "unwrap"]

#: Nested ``bash -c '…'`` levels read.
MAX_DEPTH = 3

#: Wrapper options that take a value (``sudo -u root``, ``xargs -I {}``, ``timeout -s KILL``, ``nice -n 5``).
_WRAPPER_VALUE_FLAGS = frozenset({"-I", "-n", "-P", "-d", "-L", "-u"})
_VALUE_FLAGS = {
    "xargs": _WRAPPER_VALUE_FLAGS | {"-s", "-a", "-E"},
    "timeout": frozenset({"-s", "-k", "-n"}),
    "nice": frozenset({"-s", "-k", "-n"}),
}


class Simple(NamedTuple):
    """One simple command of a line, read.

    ``words`` start at the program (wrappers unwrapped, loop variables replaced); ``outputs`` are the files
    its output is redirected to (devices such as ``/dev/null`` are none); ``body`` is the heredoc it reads.
    ``cwd`` is the directory a ``cd`` earlier in the line moved to (as written, ``None`` before any);
    ``loop`` marks a loop header or end (``for f in …``, ``done``), ``later`` a stage after the first of a
    pipeline.
    """

    words: list[str]
    outputs: list[str]
    appends: bool
    heredoc: bool
    body: str | None
    cwd: str | None
    loop: bool = False
    later: bool = False


def unwrap(words: Sequence[str]) -> tuple[int, bool]:
    """(index of the program in ``words``, whether the words are a loop header or end), skipping the words
    that only set up how the program runs."""
    i = 0
    n = len(words)
    while i < n:
        w = words[i]
        if w in CONTROL or ASSIGNMENT.match(w):
            i += 1
        elif w in WRAPPERS or w in ("timeout", "nice"):
            i += 1
            takes_value = _VALUE_FLAGS.get(w, _WRAPPER_VALUE_FLAGS)
            while i < n and words[i].startswith("-"):
                i += 2 if words[i] in takes_value else 1
            if w == "timeout":
                i += 1  # the duration
        elif w == "env":
            i += 1
            while i < n and (words[i].startswith("-") or ASSIGNMENT.match(words[i])):
                i += 1
        elif w in LOOP_WORDS:
            return i, True
        else:
            prefixes = RUN_PREFIXES.get(w)
            if prefixes and i + 1 < n and words[i + 1] in prefixes:
                i += 2
            elif w in NPX:
                i += 1
                while i < n and words[i].startswith("-"):
                    i += 1
            else:
                return i, False
    return i, False


def read(segments: list[list[Stage]], cwd: str | None = None, depth: int = 0) -> list[list[Simple]]:
    """The pipelines of a lexed line as simple commands (a nested shell's pipelines in its place)."""
    pipelines: list[list[Simple]] = []
    loop_vars: dict[str, str] = {}
    for pipeline in segments:
        head = pipeline[0]
        loop = _loop_variable(head.words)
        if loop is not None:
            loop_vars[loop[0]] = loop[1]
        read_pipeline: list[Simple] = []
        for k, stage in enumerate(pipeline):
            simple = _simple(stage, _substitute(stage.words, loop_vars), cwd, later=k > 0)
            nested = _nested(simple, depth) if k == 0 else None
            if nested is not None:
                pipelines.extend(nested)
                cwd = _last_cwd(nested, cwd)
                break
            read_pipeline.append(simple)
        else:
            pipelines.append(read_pipeline)
            cwd = _moved(read_pipeline[0], cwd)
    return pipelines


def _simple(stage: Stage, words: list[str], cwd: str | None, *, later: bool) -> Simple:
    at, loop = unwrap(words)
    outputs = [o for o in stage.outputs if not o.startswith("/dev/") and o != "-"]
    return Simple(words[at:], outputs, stage.appends, stage.heredoc, stage.body, cwd, loop, later)


def _nested(simple: Simple, depth: int) -> list[list[Simple]] | None:
    """A nested shell's own pipelines (``bash -c 'a && b'``, ``bash <<EOF``), or None."""
    words = simple.words
    if simple.loop or not words or words[0].rsplit("/", 1)[-1] not in SHELLS or depth >= MAX_DEPTH:
        return None
    args = words[1:]
    for k, a in enumerate(args):
        if a.startswith("-") and "c" in a and not a.startswith("--") and k + 1 < len(args):
            return read(tokenize(args[k + 1]), simple.cwd, depth + 1)
    if not any(not a.startswith("-") for a in args) and simple.body:
        return read(tokenize(simple.body), simple.cwd, depth + 1)
    return None


def _moved(simple: Simple, cwd: str | None) -> str | None:
    """The directory after ``simple``: a ``cd DIR`` moves there (as written, joined to the current one)."""
    words = simple.words
    if simple.loop or not words or words[0] != "cd":
        return cwd
    target = next((w for w in words[1:] if not w.startswith("-")), "~")
    if target.startswith(("/", "~")) or not cwd:
        return target
    return f"{cwd.rstrip('/')}/{target}"


def _last_cwd(pipelines: list[list[Simple]], cwd: str | None) -> str | None:
    for pipeline in pipelines:
        cwd = _moved(pipeline[0], cwd)
    return cwd


def _loop_variable(words: list[str]) -> tuple[str, str] | None:
    """``for f in tests/*.py`` → ``("f", "tests/*.py")``: the loop body is read with the first item."""
    if len(words) >= 4 and words[0] == "for" and words[2] == "in":
        return words[1], words[3]
    return None


def _substitute(words: list[str], loop_vars: dict[str, str]) -> list[str]:
    if not loop_vars:
        return words
    out = []
    for w in words:
        if w.startswith("$"):
            name = w[2:-1] if w.startswith("${") and w.endswith("}") else w[1:]
            w = loop_vars.get(name, w)
        out.append(w)
    return out
