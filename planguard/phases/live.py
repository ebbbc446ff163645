"""The live phase rules: what a call *does*, on any scaffold and in any language (PHASES_LIVE.md).

The paper's rules (:mod:`planguard.phases.rules`) reproduce its classifier byte for byte, quirks and all;
these follow the definition a live monitor needs instead, with the same roles, letters and metrics:

* the call is read through the canonical-action vocabulary (:meth:`ActionClassifier.tool_call`): the
  tool's kind (shell, read, write, search, test, code, submit, plan, other), its shell line and its target
  paths come from the same mapping rules as its action, the user's ``actions.rules`` included;
* a shell line is read in the words the action layer's lexer cut it into for the call's action
  (:meth:`ShellClassifier.read`: a line of up to ``MEMO_TEXT_MAX`` characters is lexed once), as
  sub-commands; wrappers (``cd``, ``export``, ``VAR=1``, ``timeout``, ``time``, ``env``, ``bash -c``, …)
  are transparent, and each sub-command gets one role or none (§1);
* ``patched`` (the first P) is the only switch between the reproduce and validate families (§2).

A call's *plan* (its sub-commands, each judged as far as its text allows) is memoised per call in one
bounded table; the roles are then resolved against the session state: whether the run has patched, and
which of the files that decide a role the run created.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import NamedTuple

from planguard.actions.lexer import Stage, tokenize
from planguard.actions.shell import COMPLETION_MARKERS, MEMO_TEXT_MAX
from planguard.actions.vocabulary import DEFAULT_CLASSIFIER, ActionClassifier, ToolCall, patch_files
from planguard.events import ToolEvent
from planguard.phases.inline_python import written_files
from planguard.phases.roles import (
    GENERAL,
    NAVIGATE,
    PATCH,
    REPRODUCE_NEW,
    REPRODUCE_REGRESSION,
    VALIDATE_NEW,
    VALIDATE_REGRESSION,
    Classification,
    Command,
)
from planguard.phases.state import PhaseState, basename
from planguard.run import OUTSIDE, SCRIPT_PLACE, SOURCE_PLACE, RunChanges, RunModel, place, script_content

__all__ = ["LiveRules", "is_test_target"]

#: Nested ``bash -c '…'`` levels looked into.
_MAX_DEPTH = 3

# What a sub-command does, before the session state is known.
_GENERAL = "general"
_NAV = "nav"
_WRITE = "write"  # writes ``paths`` (``created``: as new files); role by target
_REDIRECT = "redirect"  # a reader's or printer's output sent to ``paths``: a write, where logs are output
_REMOVE = "remove"  # ``rm``/``mv`` away: cleanup of the run's own files, else a patch
_SNIPPET = "snippet"  # inline code, a server or the repository's program: always a new test (R/V)
_RUN = "run"  # runs the script ``paths[0]``: new when the run created it, regression for an existing test
_TESTS = "tests"  # the repository's test runner: regression, new when it runs a file the run created
_CHECK = "check"  # build, compile, lint, type check: v after the first patch, general before


class _Sub(NamedTuple):
    """One sub-command's plan: its label (the program or tool), what it does, and the paths involved."""

    label: str
    does: str
    paths: tuple[str, ...] = ()
    created: tuple[str, ...] = ()
    content: str | None = None  # the text a write puts in the files it creates (heredoc body, tool content)


_MARKERS = tuple(m.lower() for m in COMPLETION_MARKERS)

# --------------------------------------------------------------------------- paths (§3, §4)

_TEST_DIRS = frozenset({"test", "tests", "spec", "__tests__"})
_TEST_NAME = re.compile(r"^(?:test_.*|.*_test\..*|.*_spec\..*|.*\.test\..*|.*\.spec\..*|conftest\.py)$")
_SCRATCH_DIRS = ("/tmp/", "/var/tmp/")
_CODE_EXTENSIONS = frozenset(
    {
        "py", "js", "mjs", "cjs", "ts", "tsx", "jsx", "sh", "bash", "rb", "go", "rs", "java", "kt", "ex",
        "exs", "php", "c", "cc", "cpp", "h", "hpp", "cs", "swift", "scala", "lua", "pl", "r", "jl",
    }
)  # fmt: skip
#: Output files a redirection fills (logs, captures): generated output, not a change to the repository.
_OUTPUT_EXTENSIONS = frozenset({"txt", "log", "out", "output", "err"})
_ARTIFACT_NAMES = frozenset({"patch.txt", "diff.txt", "model.patch", "fix.patch", "changes.diff"})
_NOTES_NAMES = frozenset({"plan.md", "notes.md", "todo.md", "progress.md", "scratchpad.md", "memory.md"})
#: Files of a project that run code when executed but belong to it (manifests, entry points): writing one
#: is a change to the repository, whatever its content.
_PROJECT_FILES = frozenset(
    {"setup.py", "manage.py", "noxfile.py", "fabfile.py", "tasks.py", "__init__.py", "__main__.py", "wsgi.py",
     "asgi.py", "dodo.py", "gulpfile.js", "gruntfile.js", "rakefile", "gemfile", "makefile"}
)  # fmt: skip
_OUTSIDE_PREFIXES = ("~", "/root/.", "/etc/", "/usr/", "/opt/", "/proc/", "/sys/")


def _extension(name: str) -> str:
    return name.rsplit(".", 1)[1] if "." in name.lstrip(".") else ""


def is_test_target(path: str) -> bool:
    """A test file (PHASES_LIVE.md §4), by path and name alone: a file under a ``test``/``tests``/``spec``/
    ``__tests__`` directory, or named like a test (``test_*``, ``*_test.*``, ``*_spec.*``, ``*.test.*``,
    ``*.spec.*``, ``conftest.py``). A script the run created is a test target too, by provenance: the run
    model knows those (:class:`planguard.run.RunModel`), whatever they are called."""
    parts = path.lower().split("/")
    if any(d in _TEST_DIRS for d in parts[:-1]):
        return True
    return _TEST_NAME.match(parts[-1]) is not None


def _is_harness_output(path: str) -> bool:
    """A background run's output or a harness log (§5: reading one is general)."""
    p = path.lower()
    name = basename(p)
    if name.endswith(".output") or "/tool-results/" in p or "/.claude/" in p:
        return True
    return p.startswith(_SCRATCH_DIRS) and _extension(name) in _OUTPUT_EXTENSIONS


def _is_artifact(path: str) -> bool:
    name = basename(path.lower())
    return _extension(name) in ("patch", "diff") or name in _ARTIFACT_NAMES


# What writing a path is: nothing (``/dev/null``), general (artifacts, backups, notes, files outside the
# repository, output captures), a test (test targets) or a patch (any other file of the repository).
_W_NONE, _W_GENERAL, _W_TEST, _W_SOURCE = 0, 1, 2, 3


def _write_kind(path: str, redirected: bool = False, root: str | None = None) -> int:
    """``path`` is relative to ``root`` when it lies under it (:func:`_in_repo`)."""
    p = path.lower()
    if not p or p.startswith("/dev/"):
        return _W_NONE
    name = basename(p)
    ext = _extension(name)
    if _is_artifact(name):
        return _W_GENERAL  # a patch artifact (mini-swe-agent's submission, ``git format-patch``)
    if ext in ("bak", "orig", "backup", "old") or name.endswith("~"):
        return _W_GENERAL  # a backup copy
    if name in _NOTES_NAMES or "/.claude/" in p:
        return _W_GENERAL  # the agent's own plan or notes
    if p.startswith(_OUTSIDE_PREFIXES) or (p.startswith("/home/") and "/." in p):
        return _W_GENERAL
    if place(p, root) == OUTSIDE:
        # Outside the repository (§4: scratch): a script is the run's own (R/V); anything else is scratch
        # output, a backup or an installed copy (§5).
        return _W_TEST if ext in _CODE_EXTENSIONS else _W_GENERAL
    if is_test_target(p):
        return _W_TEST
    if redirected and ext in _OUTPUT_EXTENSIONS:
        return _W_GENERAL
    return _W_SOURCE


# --------------------------------------------------------------------------- programs (§3, §5)

_READERS = frozenset(
    {
        "cat", "head", "tail", "less", "more", "bat", "ls", "ll", "tree", "find", "fd", "grep", "egrep",
        "fgrep", "rg", "ag", "ack", "wc", "file", "stat", "nl", "diff", "cmp", "du", "realpath",
        "readlink", "strings", "xxd", "hexdump", "od", "jq", "column", "locate", "sort", "uniq", "cut",
        "view", "glob", "git-grep",
    }
)  # fmt: skip
_GIT_READS = frozenset(
    {
        "log", "show", "diff", "status", "blame", "grep", "ls-files", "ls-tree", "shortlog", "reflog",
        "cat-file",
    }
)  # fmt: skip
_PYTHONS = re.compile(r"^(?:python(?:\d+(?:\.\d+)*)?|py|pypy\d*|ipython\d*)$")
_PY_VALUE_FLAGS = frozenset({"-W", "-X", "-Q"})
_PY_TEST_MODULES = frozenset(
    {"pytest", "py.test", "unittest", "doctest", "nose", "nose2", "trial", "tox", "nox"}
)
_PY_CHECK_MODULES = frozenset(
    {
        "mypy", "ruff", "flake8", "pylint", "pyright", "pyflakes", "black", "isort", "compileall",
        "py_compile", "build",
    }
)  # fmt: skip
_PY_TOOL_MODULES = frozenset({"pip", "venv", "ensurepip", "pipx", "virtualenv", "site", "json.tool"})
_PY_TEST_SCRIPTS = frozenset({"runtests.py", "run_tests.py", "runtest.py", "run_test.py"})
_TEST_RUNNERS = frozenset(
    {
        "pytest", "py.test", "tox", "nox", "nosetests", "nose2", "trial", "jest", "vitest", "mocha", "ava",
        "karma", "rspec", "phpunit", "pest", "ctest", "runtests.py", "run_tests.py",
    }
)  # fmt: skip
_CHECKERS = frozenset(
    {
        "mypy", "ruff", "flake8", "pylint", "pyright", "pyflakes", "black", "isort", "tsc", "eslint",
        "prettier", "biome", "stylelint", "gcc", "g++", "clang", "clang++", "javac", "rustc", "cmake",
        "ninja", "gofmt", "golangci-lint", "shellcheck", "rubocop", "credo", "dialyzer",
    }
)  # fmt: skip
_SERVERS = frozenset({"uvicorn", "gunicorn", "flask", "iex", "hypercorn", "daphne", "http-server", "serve"})
_INTERPRETERS = frozenset(
    {"node", "deno", "bun", "ruby", "php", "rscript", "julia", "lua", "elixir", "ts-node", "tsx"}
)
_EVAL_FLAGS = frozenset({"-e", "--eval", "-p", "--print", "-r", "-c"})
_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh"})
#: Words before the program that only set up how it runs (§1); ``timeout``/``env``/``nice`` take values.
_WRAPPERS = frozenset(
    {
        "sudo", "time", "nohup", "command", "exec", "builtin", "stdbuf", "unbuffer", "xvfb-run", "noglob",
        "xargs",
    }
)  # fmt: skip
_CONTROL = frozenset(
    {"if", "then", "else", "elif", "do", "while", "until", "{", "}", "!", "[[", "[", "(", ")"}
)
_LOOP_END = frozenset({"for", "case", "select", "function", "done", "fi", "esac", "in"})
#: Runners that run a program named next: ``uv run pytest``, ``poetry run mypy``, ``bundle exec rspec``.
_RUN_PREFIXES = {
    "uv": ("run",),
    "poetry": ("run",),
    "pipenv": ("run",),
    "pdm": ("run",),
    "hatch": ("run",),
    "rye": ("run",),
    "bundle": ("exec",),
    "pnpm": ("exec", "dlx"),
    "yarn": ("exec", "dlx"),
}
_NPX = frozenset({"npx", "pnpx", "bunx"})
_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\+?=")
_SED_INPLACE = re.compile(r"^-[a-zA-Z]*i|^--in-place")
_PERL_INPLACE = re.compile(r"^-[a-zA-Z]*i")


def _operands(args: Sequence[str]) -> list[str]:
    return [a for a in args if a and not a.startswith("-")]


def _pathish(word: str) -> bool:
    return "/" in word or "." in basename(word).lstrip(".")


def _script_target(args: Sequence[str]) -> tuple[str, ...]:
    """Test paths a test runner is given (``tests/test_x.py::test_y`` → ``tests/test_x.py``)."""
    return tuple(a.split("::", 1)[0] for a in _operands(args) if _pathish(a.split("::", 1)[0]))


def _package_script(label: str, args: Sequence[str]) -> _Sub:
    """``npm``/``yarn``/``pnpm``/``bun`` with a script name or subcommand."""
    ops = _operands(args)
    if not ops:
        return _Sub(label, _GENERAL)
    verb = ops[0]
    if verb in ("run", "run-script") and len(ops) > 1:
        verb = ops[1]
    elif verb in ("install", "i", "ci", "add", "remove", "rm", "uninstall", "init", "update", "upgrade",
                  "audit", "ls", "list", "view", "info", "outdated", "link", "publish", "pack", "config",
                  "cache", "why", "dedupe", "prune", "set", "version", "login", "whoami"):  # fmt: skip
        return _Sub(label, _GENERAL)
    name = verb.lower()
    if name in ("test", "t", "tst") or name.startswith(("test", "e2e", "spec")) or name in ("jest", "vitest"):
        return _Sub(label, _TESTS)
    if name.startswith(("build", "lint", "typecheck", "type-check", "tsc", "check", "compile", "format")):
        return _Sub(label, _CHECK)
    if label == "bun" and _pathish(verb):
        return _Sub(label, _RUN, (verb,))
    return _Sub(label, _SNIPPET)  # start, dev, serve, or the repository's own script


def _python(label: str, args: Sequence[str], body: str | None) -> _Sub:
    i = 0
    n = len(args)
    while i < n:
        a = args[i]
        if a == "-c" or (a.startswith("-c") and len(a) > 2 and not a.startswith("--")):
            code = args[i + 1] if a == "-c" and i + 1 < n else a[2:]
            return _snippet(label, code)
        if a == "-m" or (a.startswith("-m") and len(a) > 2 and not a.startswith("--")):
            module = args[i + 1] if a == "-m" and i + 1 < n else a[2:]
            return _python_module(label, module, args[i + 2 :] if a == "-m" else args[i + 1 :])
        if a in ("--version", "-V", "-h", "--help", "-VV"):
            return _Sub(label, _GENERAL)
        if a == "-":
            return _snippet(label, body or "")
        if a in _PY_VALUE_FLAGS:
            i += 2
            continue
        if a.startswith("-"):
            i += 1
            continue
        return _python_script(label, a, args[i + 1 :])
    if body is not None:
        return _snippet(label, body)  # ``python << EOF``: a heredoc fed to an interpreter
    return _Sub(label, _GENERAL)  # an interactive interpreter


def _python_module(label: str, module: str, rest: Sequence[str]) -> _Sub:
    if module in _PY_TEST_MODULES:
        return _Sub(label, _TESTS, _script_target(rest))
    if module in _PY_CHECK_MODULES:
        return _Sub(label, _CHECK)
    if module in _PY_TOOL_MODULES or module.startswith("pip"):
        return _Sub(label, _GENERAL)
    return _Sub(label, _SNIPPET)  # ``python -m pkg …``, ``python -m http.server``: the program itself


def _python_script(label: str, script: str, rest: Sequence[str]) -> _Sub:
    name = basename(script.lower())
    ops = _operands(rest)
    if name == "setup.py":
        if "test" in ops:
            return _Sub(label, _TESTS)
        if ops[:1] and ops[0].startswith("build"):
            return _Sub(label, _CHECK)  # ``build_ext --inplace``: a build (§5)
        return _Sub(label, _GENERAL)  # install, develop, egg_info, --version: environment
    if name == "manage.py":
        return _Sub(label, _TESTS if ops[:1] == ["test"] else _SNIPPET)
    if name in _PY_TEST_SCRIPTS:
        return _Sub(label, _TESTS, _script_target(rest))
    return _Sub(label, _RUN, (script,))


def _snippet(label: str, code: str) -> _Sub:
    """Inline code: a new test, or a write of the files it opens for writing."""
    written = written_files(code, lenient=True) if code else ()
    if written:
        return _Sub(label, _WRITE, written, written)
    return _Sub(label, _SNIPPET)


def _sed(label: str, args: Sequence[str]) -> _Sub:
    if not any(_SED_INPLACE.match(a) for a in args):
        return _Sub(label, _NAV)
    ops = _operands(args)
    has_script_flag = any(a in ("-e", "--expression", "-f") or a.startswith("--expression=") for a in args)
    files = ops if has_script_flag else ops[1:]
    return _Sub(label, _WRITE, tuple(files) or ("?",))


def _git(label: str, args: Sequence[str]) -> _Sub:
    ops = [a for a in args if not a.startswith("-")]
    if not ops:
        return _Sub(label, _GENERAL)
    verb = ops[0]
    if verb in _GIT_READS:
        return _Sub(label, _NAV)
    if verb in ("apply", "am"):
        if any(a in ("--check", "--stat", "--numstat", "--summary") for a in args):
            return _Sub(label, _NAV)
        return _Sub(label, _WRITE, ("?",))
    if verb in ("checkout", "restore"):
        if verb == "restore" and "--staged" in args and "--worktree" not in args and "-W" not in args:
            return _Sub(label, _GENERAL)
        if "--" in args:
            files = tuple(a for a in args[args.index("--") + 1 :] if a)
        elif verb == "restore":
            files = tuple(ops[1:])
        else:
            files = tuple(a for a in ops[1:] if _pathish(a))
        if "-b" in args or "-B" in args or not files:
            return _Sub(label, _GENERAL)  # switching or creating a branch
        return _Sub(label, _WRITE, files)
    return _Sub(label, _GENERAL)  # add, commit, stash, branch, push, …: bookkeeping


def _make(label: str, args: Sequence[str]) -> _Sub:
    targets = [a for a in _operands(args) if "=" not in a]
    if any(
        t in ("test", "tests", "check", "test-all", "unittest", "pytest") or t.startswith("test")
        for t in targets
    ):
        return _Sub(label, _TESTS)
    return _Sub(label, _CHECK)


def _by_verb(
    label: str, args: Sequence[str], tests: Sequence[str], checks: Sequence[str], runs: Sequence[str]
) -> _Sub:
    ops = _operands(args)
    if any(o in tests for o in ops) or any(a.startswith("-Dtest=") for a in args):
        return _Sub(label, _TESTS)
    if any(o in runs for o in ops):
        return _Sub(label, _SNIPPET)
    if any(o in checks for o in ops):
        return _Sub(label, _CHECK)
    return _Sub(label, _GENERAL)


def _mix(label: str, args: Sequence[str]) -> _Sub:
    ops = _operands(args)
    verb = ops[0] if ops else ""
    if verb == "test":
        return _Sub(label, _TESTS, _script_target(args[1:]))
    if verb in ("compile", "credo", "format", "dialyzer", "xref", "check"):
        return _Sub(label, _CHECK)
    if verb in ("phx.server", "run"):
        return _Sub(label, _SNIPPET)
    return _Sub(label, _GENERAL)


def _interpreter(label: str, prog: str, args: Sequence[str], body: str | None) -> _Sub:
    ops = _operands(args)
    if prog in ("deno", "bun") and ops[:1] == ["test"]:
        return _Sub(label, _TESTS)
    if prog == "php" and ops[:2] == ["artisan", "test"]:
        return _Sub(label, _TESTS)
    if any(a in _EVAL_FLAGS for a in args):
        return _Sub(label, _SNIPPET)  # ``node -e``, ``ruby -e``: a snippet
    if prog in ("deno", "bun") and ops[:1] == ["run"]:
        ops = ops[1:]
    if ops:
        script = ops[0]
        if basename(script) in ("phpunit", "pest"):
            return _Sub(label, _TESTS)
        return _Sub(label, _RUN, (script,))
    return _Sub(label, _SNIPPET if body else _GENERAL)


def _perl(label: str, args: Sequence[str]) -> _Sub:
    if any(_PERL_INPLACE.match(a) for a in args):
        code_given = any(a.startswith("-") and "e" in a for a in args)
        ops = _operands(args)
        return _Sub(label, _WRITE, tuple(ops[1:] if code_given else ops) or ("?",))
    if any(a.startswith("-") and ("n" in a or "p" in a) for a in args):
        return _Sub(label, _NAV)
    if any(a.startswith("-") and "e" in a for a in args):
        return _Sub(label, _SNIPPET)
    ops = _operands(args)
    return _Sub(label, _RUN, (ops[0],)) if ops else _Sub(label, _GENERAL)


def _copy(label: str, args: Sequence[str]) -> _Sub:
    ops = _operands(args)
    if len(ops) < 2:
        return _Sub(label, _GENERAL)
    dest = ops[-1]
    if label == "mv":
        return _Sub(label, _REMOVE, tuple(ops[:-1]))  # moving files away: cleanup, or a change
    return _Sub(label, _WRITE, (dest,), (dest,))  # a copy onto a file (restoring a backup), or a new script


def _find(label: str, args: list[str], body: str | None) -> _Sub:
    """``find`` lists, unless it runs a command on what it finds (``-exec sed -i …``) or deletes it."""
    for k, a in enumerate(args):
        if a in ("-exec", "-execdir", "-ok") and k + 1 < len(args):
            inner = args[k + 1 :]
            end = next((j for j, w in enumerate(inner) if w in (";", "+", "\\;")), len(inner))
            sub = _program(inner[0], inner[1:end], body)
            if sub.does != _NAV:
                return sub._replace(label=label)
        if a == "-delete":
            return _Sub(label, _GENERAL)  # cleaning up (``-name '*.pyc' -delete``)
    return _Sub(label, _NAV, tuple(_operands(args)))


def _program(prog: str, args: list[str], body: str | None) -> _Sub:
    """The plan of one simple command whose program is ``prog`` (wrappers already stripped)."""
    label = prog
    name = basename(prog).lower()
    if _PYTHONS.match(name):
        return _python(label, args, body)
    if name in _TEST_RUNNERS:
        return _Sub(label, _TESTS, _script_target(args))
    if name == "go":
        return _by_verb(label, args[:1], ("test",), ("build", "vet", "fmt"), ("run",))
    if name == "cargo":
        return _by_verb(
            label, args[:1], ("test", "nextest", "bench"), ("build", "check", "clippy", "fmt"), ("run",)
        )
    if name in ("npm", "yarn", "pnpm", "bun") and not (name == "bun" and args[:1] == ["test"]):
        return _package_script(label, args)
    if name == "mix":
        return _mix(label, args)
    if name in ("mvn", "mvnw"):
        return _by_verb(
            label,
            args,
            ("test", "verify", "integration-test"),
            ("compile", "package", "install"),
            ("exec:java", "spring-boot:run"),
        )
    if name in ("gradle", "gradlew"):
        return _by_verb(
            label,
            args,
            ("test", "check", "connectedCheck"),
            ("build", "assemble", "compileJava", "compileKotlin"),
            ("run", "bootRun"),
        )
    if name in ("dotnet", "swift", "bazel", "bazelisk"):
        return _by_verb(label, args[:1], ("test",), ("build",), ("run",))
    if name in ("rake", "rails"):
        return _by_verb(label, args[:1], ("test", "spec"), ("assets:precompile",), ("server", "s", "runner"))
    if name == "composer":
        return _by_verb(label, args[:1], ("test",), (), ())
    if name == "make":
        return _make(label, args)
    if name in _CHECKERS:
        return _Sub(label, _CHECK)
    if name in _SERVERS:
        return _Sub(label, _SNIPPET)
    if name in _INTERPRETERS:
        return _interpreter(label, name, args, body)
    if name == "perl":
        return _perl(label, args)
    if name == "sed":
        return _sed(label, args)
    if name in ("awk", "gawk"):
        if "-i" in args and "inplace" in args:
            return _Sub(label, _WRITE, tuple(_operands(args)[2:]) or ("?",))
        return _Sub(label, _NAV)
    if name == "git":
        return _git(label, args)
    if name == "find":
        return _find(label, args, body)
    if name in _READERS:
        return _Sub(label, _NAV, tuple(_operands(args)))
    if name in ("touch", "tee"):
        ops = _operands(args)
        files = tuple(a for a in ops if _pathish(a)) if name == "touch" else tuple(ops)
        return _Sub(label, _WRITE, files, files, body if name == "tee" else None)
    if name in ("cp", "mv"):
        return _copy(label, args)
    if name in ("rm", "unlink", "rmdir"):
        return _Sub(label, _REMOVE, tuple(_operands(args)))
    if name == "patch":
        return _Sub(label, _WRITE, ("?",))
    if name == "apply_patch":
        touched, added = patch_files(body or " ".join(args))
        return _Sub(label, _WRITE, tuple(touched) or ("?",), tuple(added))
    if prog.startswith(("./", "/", "../")) or "/" in prog:
        if name.startswith(("submit", "finish")):
            return _Sub(label, _GENERAL)  # ``./submit.sh``: a submission, not a run of the program (§3)
        return _Sub(label, _RUN, (prog,))  # ``./bin/tool``, ``./reproduce.sh``: a program of the repository
    return _Sub(label, _GENERAL)


# --------------------------------------------------------------------------- shell lines (§1)


def _unwrap(words: list[str]) -> tuple[int, bool]:
    """(index of the program, whether the words are a loop header or end), skipping transparent words."""
    i = 0
    n = len(words)
    while i < n:
        w = words[i]
        if w in _CONTROL or _ASSIGN.match(w):
            i += 1
        elif w in _WRAPPERS:
            i += 1
            while i < n and words[i].startswith("-"):
                i += 2 if words[i] in ("-I", "-n", "-P", "-d", "-L", "-u") else 1
        elif w in ("timeout", "nice"):
            i += 1
            while i < n and words[i].startswith("-"):
                i += 2 if words[i] in ("-s", "-k", "-n") else 1
            if w == "timeout":
                i += 1  # the duration
        elif w == "env":
            i += 1
            while i < n and (words[i].startswith("-") or _ASSIGN.match(words[i])):
                i += 1
        elif w in _LOOP_END:
            return i, True
        else:
            prefixes = _RUN_PREFIXES.get(w)
            if prefixes and i + 1 < n and words[i + 1] in prefixes:
                i += 2
            elif w in _NPX:
                i += 1
                while i < n and words[i].startswith("-"):
                    i += 1
            else:
                return i, False
    return i, False


def _stage_plans(words: list[str], outputs: list[str], body: str | None, depth: int) -> list[_Sub]:
    """The plans of one simple command (several for ``bash -c 'a && b'``)."""
    # Discarded output (``> /dev/null``, ``&> /dev/null``) is no write; ``2>&1`` never reaches here.
    outputs = [o for o in outputs if not o.startswith("/dev/")]
    at, loop = _unwrap(words)
    if loop:
        return [_Sub(words[at], _GENERAL)]
    if at >= len(words):
        if outputs:  # ``> file`` alone truncates it
            return [_Sub(">", _REDIRECT, tuple(outputs), tuple(outputs))]
        return []
    prog, args = words[at], words[at + 1 :]
    name = basename(prog)
    if name in ("cd", "pushd", "popd", "export", "source", ".", "set", "unset", "alias", "shopt", "ulimit"):
        return [_Sub(name, _GENERAL)]
    if name in _SHELLS and depth < _MAX_DEPTH:
        for k, a in enumerate(args):
            if a.startswith("-") and "c" in a and not a.startswith("--") and k + 1 < len(args):
                return _line_plans(tokenize(args[k + 1]), depth + 1)
        ops = _operands(args)
        if ops:
            return [_Sub(name, _RUN, (ops[0],))]
        if body:
            return _line_plans(tokenize(body), depth + 1)
        return [_Sub(name, _GENERAL)]
    sub = _program(prog, args, body)
    if outputs and sub.does in (_NAV, _GENERAL):
        # What a reader or printer sends to a file is what it writes (``cat > f << EOF``, ``echo x > f``,
        # ``git diff > patch.txt``). A program's or test run's output capture stays its run's role.
        return [_Sub(sub.label, _REDIRECT, tuple(outputs), tuple(outputs), body)]
    return [sub]


def _loop_variable(words: list[str]) -> tuple[str, str] | None:
    """``for f in tests/*.py`` → ``("f", "tests/*.py")``: the loop body is judged on the first item."""
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


def _line_plans(segments: list[list[Stage]], depth: int = 0) -> list[_Sub]:
    """The plans of a lexed line's sub-commands."""
    plans: list[_Sub] = []
    loop_vars: dict[str, str] = {}
    for pipeline in segments:
        head = pipeline[0]
        loop = _loop_variable(head.words)
        if loop is not None:
            loop_vars[loop[0]] = loop[1]
        first = _stage_plans(_substitute(head.words, loop_vars), head.outputs, head.body, depth)
        # A pipeline means what its first stage does, unless a later stage writes a file (``| tee f``).
        for stage in pipeline[1:]:
            later = _stage_plans(_substitute(stage.words, loop_vars), stage.outputs, stage.body, depth)
            writes = [p for p in later if p.does in (_WRITE, _REDIRECT) and _writes_a_file(p)]
            if writes:
                first = writes
        plans.extend(first)
    return plans


def _writes_a_file(sub: _Sub) -> bool:
    """A write into the repository or a test script, not a log or an output capture (``| tee out.log``)."""
    return any(_write_kind(p, redirected=True) in (_W_TEST, _W_SOURCE) for p in sub.paths)


# --------------------------------------------------------------------------- the rules


class LiveRules:
    """The live phase rules. Stateless itself: all per-session facts live in :class:`PhaseState`.

    ``actions`` is the canonical-action classifier whose vocabulary (built-in rules plus the user's
    ``actions.rules``) says what each tool is.

    One bounded memo (LRU): a call (its tool, its canonical call, the working directory) → its
    :class:`_CallPlan`, which is resolved against the session state on every call.
    """

    name = "live"

    def __init__(self, actions: ActionClassifier | None = None, cache_size: int = 4096) -> None:
        self.actions = actions if actions is not None else DEFAULT_CLASSIFIER
        self._memo = lru_cache(maxsize=cache_size)(self._plan)

    def new_state(self) -> PhaseState:
        return PhaseState()

    def classify(self, event: ToolEvent, state: PhaseState) -> Classification:
        """Classify one tool call. Never mutates ``state`` and never raises."""
        try:
            call = self.actions.tool_call(event)
            if call.kind == "write" and not call.paths and state.open_file is not None:
                # SWE-agent 0.x ``edit``/``insert`` change the open file; a recording may not name it.
                call = ToolCall("write", paths=(state.open_file,))
            tool = event.tool if isinstance(event.tool, str) and event.tool else "think"
            root = _work_dir(event) or state.root
            text = call.command if call.content is None else call.content
            if text is not None and len(text) > MEMO_TEXT_MAX:
                plan = self._plan(tool, call, root)  # long texts rarely repeat: not kept
            else:
                plan = self._memo(tool, call, root)
            return plan.resolve(state)
        except Exception:
            label = event.tool if isinstance(event.tool, str) and event.tool else "unknown"
            return Classification(commands=(Command(label, GENERAL),))

    def _plan(self, tool: str, call: ToolCall, root: str | None) -> _CallPlan:
        """The judged plan of one call (pure: its text, the vocabulary's reading, the working directory)."""
        kind = call.kind
        if kind == "shell":
            line = call.command or ""
            low = line.lower()
            if any(m in low for m in _MARKERS):  # mini-swe-agent's submission: ``echo COMPLETE_…`` (§4, §5)
                subs: Sequence[_Sub] = (_Sub("submit", _GENERAL),)
            else:
                # The words the action classifier cut the line into for the call's action (its one memo keeps
                # them); a line it read as a SWE-agent tool command, without the lexer, is lexed here.
                segments = self.actions.shell.read(line).segments
                if segments is None:
                    segments = tokenize(line)
                subs = _line_plans(segments) or (_Sub(line.strip()[:40] or "think", _GENERAL),)
        elif kind == "read":
            harness = any(_is_harness_output(p) for p in call.paths)
            subs = (_Sub(tool, _GENERAL, ()) if harness else _Sub(tool, _NAV, call.paths),)
        elif kind == "search":
            subs = (_Sub(tool, _NAV),)
        elif kind == "write":
            subs = [
                _Sub(tool, _WRITE, (p,), (p,), call.content)
                if p in call.created
                else _Sub(tool, _WRITE, (p,))
                for p in call.paths or ("?",)
            ]
        elif kind == "test":
            subs = (_Sub(tool, _TESTS),)
        elif kind == "code":
            subs = (_snippet(tool, call.command or ""),)
        else:
            subs = (_Sub(tool, _GENERAL),)
        opened = call.paths[0] if kind == "read" and len(call.paths) == 1 else None
        norm = self.actions.norm
        judged = tuple(_judge(sub, root, norm) for sub in subs)
        seen = tuple(p for j in judged if j.kind == _J_NAV for p in j.paths)
        return _CallPlan(
            judged, kind == "write", opened, not call.mapped, RunChanges(seen=seen) if seen else None
        )


# What a judged sub-command's role depends on (besides ``patched``, which picks the family).
_J_GENERAL, _J_NAV, _J_PATCH, _J_NEW, _J_CHECK = 0, 1, 2, 3, 4
_J_NEW_IF_CREATED = 5  # a test run: new when the run created one of ``paths``, else regression
_J_PATCH_UNLESS_CREATED = 6  # a removal: a patch unless the run created every one of ``paths``
_J_WRITE = (
    7  # a write of repository files: a patch, unless they are (or it creates them as) the run's scripts
)
_J_RUN = (
    8  # runs a script: new (the run's own or the repository's program), or a patch through what it writes
)

#: What Python that writes a file shows (a write mode, ``write_text``); code without one is not parsed.
_PYTHON_WRITES = re.compile(r"""['"][wax]b?\+?['"]|mode\s*=|write_(?:text|bytes)""")
#: A script the run creates (lower-cased path) and the repository source files it writes when run.
_Script = tuple[str, "_ScriptText | None"]


class _Judged(NamedTuple):
    """A sub-command's plan with every judgement of its text made: what is left depends on the run model."""

    label: str
    kind: int
    paths: tuple[str, ...] = ()  # lower-cased: the files whose provenance decides a conditional kind
    scripts: tuple[_Script, ...] = ()  # scripts it creates, with their text (for _J_WRITE: if they are new)
    whole: tuple[str, ...] = ()  # _J_WRITE: the ``paths`` it writes whole (creates, when they are new)


def _judge(sub: _Sub, root: str | None, norm: Callable[[str], str]) -> _Judged:
    # One name per file (§4: absolute and relative paths name the same file), as tool paths are named.
    paths = tuple(_in_repo(norm(p), root) if root is not None else norm(p) for p in sub.paths)
    does = sub.does
    label = sub.label
    if does == _NAV:
        files = [p for p in paths if _pathish(p)]
        if files and all(_is_harness_output(p) or _is_artifact(p) for p in files):
            return _Judged(label, _J_GENERAL)  # reading a background run's output or a patch artifact (§5)
        return _Judged(label, _J_NAV, tuple(p.lower() for p in files))
    if does in (_WRITE, _REDIRECT):
        kinds = [_write_kind(p, does == _REDIRECT, root) for p in paths]
        created = {_in_repo(norm(p), root) if root is not None else norm(p) for p in sub.created}
        if _W_SOURCE in kinds:
            sources = tuple(p.lower() for p, k in zip(paths, kinds, strict=True) if k == _W_SOURCE)
            whole = tuple(
                p.lower() for p, k in zip(paths, kinds, strict=True) if k == _W_SOURCE and p in created
            )
            scripts = tuple(
                (p, _ScriptText.of(sub.content, p, root, norm))
                for p in whole
                if _script_place_and_content(p, sub.content, root)
            )
            return _Judged(label, _J_WRITE, sources, scripts, whole)
        if _W_TEST in kinds:
            scripts = tuple(
                (p.lower(), _ScriptText.of(sub.content, p, root, norm))
                for p in created
                if _write_kind(p, root=root) == _W_TEST
            )
            return _Judged(label, _J_NEW, scripts=scripts)
        return _Judged(label, _J_GENERAL)
    if does == _REMOVE:
        sources = tuple(p.lower() for p in paths if _pathish(p) and _write_kind(p, root=root) == _W_SOURCE)
        return _Judged(label, _J_PATCH_UNLESS_CREATED, sources) if sources else _Judged(label, _J_GENERAL)
    if does == _SNIPPET:
        return _Judged(label, _J_NEW)
    if does == _RUN:
        script = paths[0]
        if is_test_target(script) and place(script.lower(), root) != OUTSIDE:
            return _Judged(label, _J_NEW_IF_CREATED, (script.lower(),))  # an existing test, unless created
        return _Judged(label, _J_RUN, (script.lower(),))
    if does == _TESTS:
        return _Judged(label, _J_NEW_IF_CREATED, tuple(p.lower() for p in paths))
    if does == _CHECK:
        return _Judged(label, _J_CHECK)
    return _Judged(label, _J_GENERAL)


def _script_place_and_content(path: str, content: str | None, root: str | None) -> bool:
    """A repository file written whole is the run's script (when it is new) by place and content (§4): it
    lies outside the package's source directories and its content runs something; a file whose content is
    not known, by place and kind alone. A project file (``setup.py``) is the project's."""
    name = basename(path)
    if name in _PROJECT_FILES or place(path, root) == SOURCE_PLACE:
        return False
    judged = script_content(content, name)
    if judged is None:
        return place(path, root) == SCRIPT_PLACE and _extension(name) in _CODE_EXTENSIONS
    return judged


#: A quoted path in code (``'src/app.py'``): what a script may write, looked at before its code is parsed.
_PATH_LITERAL = re.compile(r"""['"]([^'"\s]{1,300}\.[A-Za-z0-9]{1,8})['"]""")


class _ScriptText:
    """A created script's content, read for the repository source files it writes when run (§3: running it
    is then a patch through them) only when it names a file the run knows: parsing every script a run
    writes would cost more than the rest of the call. Python: files its code opens for writing; a shell
    script: files its commands write."""

    __slots__ = ("_written", "content", "names", "norm", "path", "root")

    def __init__(self, content: str, path: str, root: str | None, norm: Callable[[str], str]) -> None:
        self.content, self.path, self.root, self.norm = content, path, root, norm
        self._written: tuple[str, ...] | None = None
        #: The repository source files it names (a superset of those it writes).
        self.names = self._sources(_PATH_LITERAL.findall(content)) if path.endswith(".py") else self.writes()

    @classmethod
    def of(
        cls, content: str | None, path: str, root: str | None, norm: Callable[[str], str]
    ) -> _ScriptText | None:
        if not content or _extension(basename(path.lower())) not in ("py", "sh", "bash"):
            return None
        if path.lower().endswith(".py") and _PYTHON_WRITES.search(content) is None:
            return None  # no write mode, no ``write_text``: it writes no file
        return cls(content, path.lower(), root, norm)

    def writes(self) -> tuple[str, ...]:
        if self._written is None:
            if self.path.endswith(".py"):
                written: Sequence[str] = written_files(self.content, lenient=True)
            else:
                plans = _line_plans(tokenize(self.content))
                written = [p for sub in plans if sub.does in (_WRITE, _REDIRECT) for p in sub.paths]
            self._written = self._sources(written)
        return self._written

    def _sources(self, raws: Sequence[str]) -> tuple[str, ...]:
        out = []
        root = self.root
        for raw in raws:
            p = self.norm(raw)
            p = _in_repo(p, root) if root is not None else p
            if _write_kind(p, root=root) == _W_SOURCE:
                out.append(p.lower())
        return tuple(dict.fromkeys(out))


class _CallPlan(NamedTuple):
    """A call's judged sub-commands; their roles are resolved against the session state on each call."""

    subs: tuple[_Judged, ...]
    #: The files of one structured write (``apply_patch``) give one role per distinct kind of file.
    per_file: bool
    opened: str | None  # the file a read leaves open in a windowed editor
    unknown: bool  # no mapping rule knows the tool
    seen: RunChanges | None  # the files its sub-commands read: the run has seen them exist

    def resolve(self, state: PhaseState) -> Classification:
        """Roles in order: a patch early in the step makes later tests validation, and a script written
        early in the step is a created one for the sub-commands after it."""
        patched = state.has_patch
        # The run model as this call sees it, made when a role depends on it (most calls: none does).
        run: _CallRun | None = None
        patches = False  # a sub-command of this call patches
        commands: list[Command] = []
        for j in self.subs:
            k = j.kind
            if k == _J_NAV:
                role = NAVIGATE
            elif k == _J_PATCH:
                role = PATCH
            elif k == _J_NEW:
                role = VALIDATE_NEW if patched else REPRODUCE_NEW
                if j.scripts:
                    run = run or _CallRun(state.run, self.seen)
                    run.add_scripts(j.scripts)
            elif k == _J_WRITE:
                run = run or _CallRun(state.run, self.seen)
                role = PATCH if run.write_patches(j) else (VALIDATE_NEW if patched else REPRODUCE_NEW)
            elif k == _J_CHECK:
                role = VALIDATE_REGRESSION if patched else GENERAL
            elif k in (_J_RUN, _J_NEW_IF_CREATED):
                run = run or _CallRun(state.run, self.seen)
                scripts = [p for p in j.paths if run.script(p)]
                if any(run.writes(p) for p in scripts):
                    role = PATCH  # a created script that rewrites a source file when run (§3)
                elif scripts or k == _J_RUN:
                    role = VALIDATE_NEW if patched else REPRODUCE_NEW
                else:
                    role = VALIDATE_REGRESSION if patched else REPRODUCE_REGRESSION
            elif k == _J_PATCH_UNLESS_CREATED:
                # A removal of only files the run created is cleanup.
                run = run or _CallRun(state.run, self.seen)
                role = GENERAL if all(run.created(p) for p in j.paths) else PATCH
            else:
                role = GENERAL
            if role == PATCH:
                patched = patches = True
            command = Command(j.label, role)
            if not (self.per_file and commands and commands[-1] == command):
                commands.append(command)
        if self.unknown:
            return Classification(tuple(commands), unknown=True)
        changes = run.changes() if run is not None else self.seen
        return Classification(tuple(commands), patched=patches, opened=self.opened, run=changes)


class _CallRun:
    """The run model as one call sees it: the session's, plus what earlier sub-commands of the call made."""

    __slots__ = ("model", "scripts", "seen", "sources")

    def __init__(self, model: RunModel, read: RunChanges | None) -> None:
        self.model = model
        self.scripts: dict[str, tuple[str, ...]] = {}
        self.sources: dict[str, None] = {}
        self.seen: dict[str, None] = (
            dict.fromkeys(read.seen) if read is not None else {}
        )  # what the call reads

    def script(self, path: str) -> bool:
        if self.model.script(path) or path in self.scripts:
            return True
        name = basename(path)
        return any(basename(p) == name for p in self.scripts)

    def writes(self, path: str) -> tuple[str, ...]:
        return self.scripts.get(path) or self.model.writes(path)

    def created(self, path: str) -> bool:
        return self.model.created(path) or path in self.sources or self.script(path)

    def known(self, path: str) -> bool:
        """A file of the repository the run has seen or made as source (what a script may rewrite)."""
        return (
            self.model.known(path) or path in self.seen or path in self.model.sources or path in self.sources
        )

    def add_scripts(self, scripts: tuple[_Script, ...]) -> None:
        for path, text in scripts:
            self.scripts[path] = self._writes(text)

    def _writes(self, text: _ScriptText | None) -> tuple[str, ...]:
        """The files the run knows that a created script writes when run (read from its text only when it
        names one of them)."""
        if text is None or not any(self.known(n) for n in text.names):
            return ()
        return tuple(w for w in text.writes() if self.known(w))

    def write_patches(self, j: _Judged) -> bool:
        """Whether a write of repository files (``j``) is a patch: a change to a file the run did not create
        as its script, or a new file that is not a script by place and content (§4). Records what it makes."""
        patch = False
        scripts = dict(j.scripts)
        for p in j.paths:
            if p in self.scripts or p in self.model.scripts:
                if scripts.get(p) is not None:
                    self.scripts[p] = self._writes(scripts[p])  # rewritten whole: what it writes now
            elif p in scripts and not self.model.known(p) and p not in self.seen and not self.created(p):
                self.scripts[p] = self._writes(scripts[p])
            else:
                patch = True
                if p in j.whole and not self.model.known(p) and not self.created(p):
                    self.sources[p] = None
                else:
                    self.seen[p] = None
        return patch

    def changes(self) -> RunChanges | None:
        if not (self.scripts or self.sources or self.seen):
            return None
        return RunChanges(tuple(self.scripts.items()), tuple(self.sources), tuple(self.seen))


def _work_dir(event: ToolEvent) -> str | None:
    """The working directory an integration recorded on the call (``metadata["cwd"]``), if any."""
    cwd = event.metadata.get("cwd") if event.metadata else None
    return cwd.rstrip("/") if isinstance(cwd, str) and cwd.startswith("/") and len(cwd) > 1 else None


def _in_repo(path: str, root: str | None) -> str:
    """``path`` relative to the run's working directory when it lies under it (``/tmp/w/src/a.py`` with root
    ``/tmp/w`` is ``src/a.py``): a repository that lives under /tmp is still a repository."""
    if root is None or root + "/" in _SCRATCH_DIRS:
        return path  # working in /tmp itself: its files are scratch (§4)
    if path.startswith(root) and path[len(root) : len(root) + 1] == "/":
        return path[len(root) + 1 :]
    return path
