"""What a program is: the one table of programs (PHASES_LIVE.md §3, §5) that the action classifier and the
live phase rules both read.

:func:`program` judges one simple command (its wrappers already unwrapped by :mod:`planguard.shell.reading`)
into a :class:`Program`: what it does (:class:`Does`: navigate, write, remove, run a snippet or a script,
run the repository's tests, check/build, or nothing of note) and the paths involved. The tables cover test
runners per language (``pytest``, ``python -m django test``/``manage.py test``, ``go test``, ``cargo test``,
``npm test``, ``jest``, ``rspec``, ``mix test``, ``mvn``/``gradle``, ``dotnet``, ``phpunit``, …), checks and
builds (``mypy``, ``tsc``, ``cargo build``, ``npm run build``, ``node --check``, ``py_compile``, …),
interpreters, servers, and the words before a program that only set up how it runs: wrappers with their
value flags (``sudo``, ``time``, ``timeout 5``, ``nice -n 5``, ``env A=1``, ``xargs -n 1``) and run
prefixes (``uv run``, ``poetry run``, ``pdm run``, ``bundle exec``, ``npx``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from enum import StrEnum
from typing import NamedTuple

from ..shell.inline_python import written_files
from .paths import basename, is_backup, pathish
from .vocabulary import patch_files

__all__ = [
    "ASSIGNMENT",
    "BUILTINS",
    "CHECKSUMS",
    "COMPLETION_MARKERS",
    "CONTROL",
    "FETCHERS",
    "FILE_READERS",
    "FINDS",
    "GREPS",
    "LISTERS",
    "LOOP_WORDS",
    "NPX",
    "RUN_PREFIXES",
    "SHELLS",
    "WRAPPERS",
    "Does",
    "Program",
    "operands",
    "program",
    "snippet",
]

#: ``echo`` lines with which mini-swe-agent (2.x and 1.x) ends a run.
COMPLETION_MARKERS = ("COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "MINI_SWE_AGENT_FINAL_OUTPUT")


# ------------------------------------------------------------------ what the action layer names (TraceProbe)

#: Programs that print a file (a read), search contents, find files by name, list or describe the tree,
#: fetch a URL, or are shell builtins and utilities with no effect of note.
#: Checksums read files: navigation (§5).
CHECKSUMS = frozenset({"md5sum", "sha1sum", "sha256sum", "sha512sum", "shasum", "cksum", "b2sum"})
FILE_READERS = frozenset(
    {
        "cat", "head", "tail", "less", "more", "nl", "bat", "batcat", "tac", "view", "strings", "xxd", "od",
        "hexdump",
    }
) | CHECKSUMS  # fmt: skip
GREPS = frozenset({"grep", "egrep", "fgrep", "rg", "ag", "ack", "ack-grep", "zgrep", "pcregrep", "git-grep"})
FINDS = frozenset({"find", "fd", "fdfind", "locate", "mlocate"})
LISTERS = frozenset(
    {
        "ls", "tree", "pwd", "dir", "exa", "eza", "du", "realpath", "readlink", "file", "stat", "wc", "lsd",
        "pushd", "popd",
    }
)  # fmt: skip
FETCHERS = frozenset({"curl", "wget", "http", "https", "lynx", "w3m", "xh"})
BUILTINS = frozenset(
    {
        "echo", "printf", "true", "false", ":", "export", "set", "unset", "source", ".", "sleep", "clear",
        "history", "alias", "exit", "wait", "then", "else", "fi", "done", "do", "esac", "return", "shopt",
        "ulimit", "umask", "trap", "type", "which", "whoami", "date", "env",
    }
)  # fmt: skip


class Does(StrEnum):
    """What a simple command does, before the session state is known."""

    GENERAL = "general"
    NAV = "nav"
    WRITE = "write"  # writes ``paths`` (``created``: as new files); role by target
    REDIRECT = "redirect"  # a reader's or printer's output sent to ``paths``: a write, where logs are output
    COPY = "copy"  # a copy onto ``paths``: a write inside the repository, general outside it (§5)
    REMOVE = "remove"  # ``rm``/``mv`` away: cleanup of the run's own files, else a change
    SNIPPET = "snippet"  # inline code, a server or the repository's program: always a new test (R/V)
    RUN = "run"  # runs the script ``paths[0]``: new when the run created it, else the repository's
    TESTS = "tests"  # the repository's test runner: regression, new when it runs a file the run created
    CHECK = "check"  # build, compile, lint, type or syntax check: v after the first patch, general before
    RESTORE = "restore"  # brings ``paths`` back to an earlier state (``git checkout --``, a backup copy)
    MKDIR = "mkdir"  # makes the folders ``paths``: general; the run model records them as the run's


class Program(NamedTuple):
    """One simple command judged: its label (the program or tool), what it does, the paths involved, and
    the text a write creates its files with when the command carries it (a heredoc's body, a tool's
    content): what the run model judges a created file by."""

    label: str
    does: Does
    paths: tuple[str, ...] = ()
    created: tuple[str, ...] = ()
    content: str | None = None


_READERS = frozenset(
    {
        "cat", "head", "tail", "less", "more", "bat", "ls", "ll", "tree", "find", "fd", "grep", "egrep",
        "fgrep", "rg", "ag", "ack", "wc", "file", "stat", "nl", "diff", "cmp", "du", "realpath",
        "readlink", "strings", "xxd", "hexdump", "od", "jq", "column", "locate", "sort", "uniq", "cut",
        "view", "glob", "git-grep",
    }
) | CHECKSUMS  # fmt: skip
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
#: An interpreter's syntax check (``node --check``, ``ruby -c``, ``php -l``): a check like lint (§5).
_SYNTAX_CHECK_FLAGS = {
    "node": frozenset({"-c", "--check"}),
    "ruby": frozenset({"-c"}),
    "php": frozenset({"-l", "--syntax-check"}),
}
_EVAL_FLAGS = frozenset({"-e", "--eval", "-p", "--print", "-r", "-c"})
SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh"})
#: Words before the program that only set up how it runs (§1); ``timeout``/``env``/``nice`` take values.
WRAPPERS = frozenset(
    {
        "sudo", "time", "nohup", "command", "exec", "builtin", "stdbuf", "unbuffer", "xvfb-run", "noglob",
        "xargs", "caffeinate",
    }
)  # fmt: skip
CONTROL = frozenset(
    {"if", "then", "else", "elif", "do", "while", "until", "{", "}", "!", "[[", "[", "(", ")"}
)
LOOP_WORDS = frozenset({"for", "case", "select", "function", "done", "fi", "esac", "in"})
#: Runners that run a program named next: ``uv run pytest``, ``poetry run mypy``, ``bundle exec rspec``.
RUN_PREFIXES = {
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
NPX = frozenset({"npx", "pnpx", "bunx"})
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\+?=")
_SED_INPLACE = re.compile(r"^-[a-zA-Z]*i|^--in-place")
_PERL_INPLACE = re.compile(r"^-[a-zA-Z]*i")


def operands(args: Sequence[str]) -> list[str]:
    return [a for a in args if a and not a.startswith("-")]


def _script_target(args: Sequence[str]) -> tuple[str, ...]:
    """Test paths a test runner is given (``tests/test_x.py::test_y`` → ``tests/test_x.py``)."""
    return tuple(a.split("::", 1)[0] for a in operands(args) if pathish(a.split("::", 1)[0]))


def _package_script(label: str, args: Sequence[str]) -> Program:
    """``npm``/``yarn``/``pnpm``/``bun`` with a script name or subcommand."""
    ops = operands(args)
    if not ops:
        return Program(label, Does.GENERAL)
    verb = ops[0]
    if verb in ("run", "run-script") and len(ops) > 1:
        verb = ops[1]
    elif verb in ("install", "i", "ci", "add", "remove", "rm", "uninstall", "init", "update", "upgrade",
                  "audit", "ls", "list", "view", "info", "outdated", "link", "publish", "pack", "config",
                  "cache", "why", "dedupe", "prune", "set", "version", "login", "whoami"):  # fmt: skip
        return Program(label, Does.GENERAL)
    name = verb.lower()
    if name in ("test", "t", "tst") or name.startswith(("test", "e2e", "spec")) or name in ("jest", "vitest"):
        return Program(label, Does.TESTS)
    if name.startswith(("build", "lint", "typecheck", "type-check", "tsc", "check", "compile", "format")):
        return Program(label, Does.CHECK)
    if label == "bun" and pathish(verb):
        return Program(label, Does.RUN, (verb,))
    return Program(label, Does.SNIPPET)  # start, dev, serve, or the repository's own script


def _python(label: str, args: Sequence[str], body: str | None) -> Program:
    i = 0
    n = len(args)
    while i < n:
        a = args[i]
        if a == "-c" or (a.startswith("-c") and len(a) > 2 and not a.startswith("--")):
            code = args[i + 1] if a == "-c" and i + 1 < n else a[2:]
            return snippet(label, code)
        if a == "-m" or (a.startswith("-m") and len(a) > 2 and not a.startswith("--")):
            module = args[i + 1] if a == "-m" and i + 1 < n else a[2:]
            return _python_module(label, module, args[i + 2 :] if a == "-m" else args[i + 1 :])
        if a in ("--version", "-V", "-h", "--help", "-VV"):
            return Program(label, Does.GENERAL)
        if a == "-":
            return snippet(label, body or "")
        if a in _PY_VALUE_FLAGS:
            i += 2
            continue
        if a.startswith("-"):
            i += 1
            continue
        return _python_script(label, a, args[i + 1 :])
    if body is not None:
        return snippet(label, body)  # ``python << EOF``: a heredoc fed to an interpreter
    return Program(label, Does.GENERAL)  # an interactive interpreter


def _python_module(label: str, module: str, rest: Sequence[str]) -> Program:
    if module in _PY_TEST_MODULES:
        return Program(label, Does.TESTS, _script_target(rest))
    if operands(rest)[:1] == ["test"]:  # ``python -m django test``: the framework's test runner (§5)
        return Program(label, Does.TESTS, _script_target(rest[1:]))
    if module in _PY_CHECK_MODULES:
        return Program(label, Does.CHECK)
    if module in _PY_TOOL_MODULES or module.startswith("pip"):
        return Program(label, Does.GENERAL)
    return Program(label, Does.SNIPPET)  # ``python -m pkg …``, ``python -m http.server``: the program itself


def _python_script(label: str, script: str, rest: Sequence[str]) -> Program:
    name = basename(script.lower())
    ops = operands(rest)
    if name == "setup.py":
        if "test" in ops:
            return Program(label, Does.TESTS)
        if ops[:1] and ops[0].startswith("build"):
            return Program(label, Does.CHECK)  # ``build_ext --inplace``: a build (§5)
        return Program(label, Does.GENERAL)  # install, develop, egg_info, --version: environment
    if name == "manage.py":  # Django's runner (§5); ``runserver`` and the rest: the repository's program
        return Program(label, Does.TESTS if ops[:1] == ["test"] else Does.SNIPPET)
    if name in _PY_TEST_SCRIPTS:
        return Program(label, Does.TESTS, _script_target(rest))
    return Program(label, Does.RUN, (script,))


def snippet(label: str, code: str) -> Program:
    """Inline code: a new test, or a write of the files it opens for writing."""
    written = written_files(code, lenient=True) if code else ()
    if written:
        return Program(label, Does.WRITE, written, written)
    return Program(label, Does.SNIPPET)


def _sed(label: str, args: Sequence[str]) -> Program:
    if not any(_SED_INPLACE.match(a) for a in args):
        return Program(label, Does.NAV)
    ops = operands(args)
    has_script_flag = any(a in ("-e", "--expression", "-f") or a.startswith("--expression=") for a in args)
    files = ops if has_script_flag else ops[1:]
    return Program(label, Does.WRITE, tuple(files) or ("?",))


def _git(label: str, args: Sequence[str]) -> Program:
    ops = [a for a in args if not a.startswith("-")]
    if not ops:
        return Program(label, Does.GENERAL)
    verb = ops[0]
    if verb in _GIT_READS:
        return Program(label, Does.NAV)
    if verb in ("apply", "am"):
        if any(a in ("--check", "--stat", "--numstat", "--summary") for a in args):
            return Program(label, Does.NAV)
        return Program(label, Does.WRITE, ("?",))
    if verb in ("checkout", "restore"):
        if verb == "restore" and "--staged" in args and "--worktree" not in args and "-W" not in args:
            return Program(label, Does.GENERAL)
        if "--" in args:
            files = tuple(a for a in args[args.index("--") + 1 :] if a)
        elif verb == "restore":
            files = tuple(ops[1:])
        else:
            files = tuple(a for a in ops[1:] if pathish(a))
        if "-b" in args or "-B" in args or not files:
            return Program(label, Does.GENERAL)  # switching or creating a branch
        return Program(label, Does.RESTORE, files)
    return Program(label, Does.GENERAL)  # add, commit, stash, branch, push, …: bookkeeping


def _make(label: str, args: Sequence[str]) -> Program:
    targets = [a for a in operands(args) if "=" not in a]
    if any(
        t in ("test", "tests", "check", "test-all", "unittest", "pytest") or t.startswith("test")
        for t in targets
    ):
        return Program(label, Does.TESTS)
    return Program(label, Does.CHECK)


def _by_verb(
    label: str, args: Sequence[str], tests: Sequence[str], checks: Sequence[str], runs: Sequence[str]
) -> Program:
    ops = operands(args)
    if any(o in tests for o in ops) or any(a.startswith("-Dtest=") for a in args):
        return Program(label, Does.TESTS)
    if any(o in runs for o in ops):
        return Program(label, Does.SNIPPET)
    if any(o in checks for o in ops):
        return Program(label, Does.CHECK)
    return Program(label, Does.GENERAL)


def _mix(label: str, args: Sequence[str]) -> Program:
    ops = operands(args)
    verb = ops[0] if ops else ""
    if verb == "test":
        return Program(label, Does.TESTS, _script_target(args[1:]))
    if verb in ("compile", "credo", "format", "dialyzer", "xref", "check"):
        return Program(label, Does.CHECK)
    if verb in ("phx.server", "run"):
        return Program(label, Does.SNIPPET)
    return Program(label, Does.GENERAL)


def _interpreter(label: str, prog: str, args: Sequence[str], body: str | None) -> Program:
    ops = operands(args)
    if prog in ("deno", "bun") and ops[:1] == ["test"]:
        return Program(label, Does.TESTS)
    if prog == "php" and ops[:2] == ["artisan", "test"]:
        return Program(label, Does.TESTS)
    if any(a in _SYNTAX_CHECK_FLAGS.get(prog, ()) for a in args):
        return Program(
            label, Does.CHECK
        )  # ``node --check f.js``, ``ruby -c``, ``php -l``: a syntax check (§5)
    if any(a in _EVAL_FLAGS for a in args):
        return Program(label, Does.SNIPPET)  # ``node -e``, ``ruby -e``: a snippet
    if prog in ("deno", "bun") and ops[:1] == ["run"]:
        ops = ops[1:]
    if ops:
        script = ops[0]
        if basename(script) in ("phpunit", "pest"):
            return Program(label, Does.TESTS)
        return Program(label, Does.RUN, (script,))
    return Program(label, Does.SNIPPET if body else Does.GENERAL)


def _perl(label: str, args: Sequence[str]) -> Program:
    if any(_PERL_INPLACE.match(a) for a in args):
        code_given = any(a.startswith("-") and "e" in a for a in args)
        ops = operands(args)
        return Program(label, Does.WRITE, tuple(ops[1:] if code_given else ops) or ("?",))
    if any(a.startswith("-") and ("n" in a or "p" in a) for a in args):
        return Program(label, Does.NAV)
    if any(a.startswith("-") and "e" in a for a in args):
        return Program(label, Does.SNIPPET)
    ops = operands(args)
    return Program(label, Does.RUN, (ops[0],)) if ops else Program(label, Does.GENERAL)


def _copy(label: str, args: Sequence[str]) -> Program:
    ops = operands(args)
    if len(ops) < 2:
        return Program(label, Does.GENERAL)
    dest = ops[-1]
    if label == "mv":
        return Program(label, Does.REMOVE, tuple(ops[:-1]))  # moving files away: cleanup, or a change
    if len(ops) == 2 and is_backup(ops[0]) and not is_backup(dest):
        return Program(label, Does.RESTORE, (dest,))  # a backup copy put back: the file is not new
    # A copy onto a file, a new script, or a file deployed outside the repository.
    return Program(label, Does.COPY, (dest,), (dest,))


def _find(label: str, args: list[str], body: str | None) -> Program:
    """``find`` lists, unless it runs a command on what it finds (``-exec sed -i …``) or deletes it."""
    for k, a in enumerate(args):
        if a in ("-exec", "-execdir", "-ok") and k + 1 < len(args):
            inner = args[k + 1 :]
            end = next((j for j, w in enumerate(inner) if w in (";", "+", "\\;")), len(inner))
            sub = program(inner[0], inner[1:end], body)
            if sub.does != Does.NAV:
                return sub._replace(label=label)
        if a == "-delete":
            return Program(label, Does.GENERAL)  # cleaning up (``-name '*.pyc' -delete``)
    return Program(label, Does.NAV, tuple(operands(args)))


def program(prog: str, args: list[str], body: str | None) -> Program:
    """The plan of one simple command whose program is ``prog`` (wrappers already stripped)."""
    label = prog
    name = basename(prog).lower()
    if name in SHELLS:
        # ``bash script.sh`` runs a script; ``bash -c '…'`` and ``bash <<EOF`` are read in place by
        # :mod:`planguard.shell.reading` (past its depth: nothing more is read).
        if any(a.startswith("-") and "c" in a and not a.startswith("--") for a in args):
            return Program(label, Does.GENERAL)
        if "-n" in args:  # ``bash -n script.sh``: a syntax check (§5)
            return Program(label, Does.CHECK)
        ops = operands(args)
        return Program(name, Does.RUN, (ops[0],)) if ops else Program(name, Does.GENERAL)
    if _PYTHONS.match(name):
        return _python(label, args, body)
    if name in _TEST_RUNNERS:
        return Program(label, Does.TESTS, _script_target(args))
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
        return Program(label, Does.CHECK)
    if name in _SERVERS:
        return Program(label, Does.SNIPPET)
    if name in _INTERPRETERS:
        return _interpreter(label, name, args, body)
    if name == "perl":
        return _perl(label, args)
    if name == "sed":
        return _sed(label, args)
    if name in ("awk", "gawk"):
        if "-i" in args and "inplace" in args:
            return Program(label, Does.WRITE, tuple(operands(args)[2:]) or ("?",))
        return Program(label, Does.NAV)
    if name == "git":
        return _git(label, args)
    if name == "find":
        return _find(label, args, body)
    if name in _READERS:
        return Program(label, Does.NAV, tuple(operands(args)))
    if name in ("touch", "tee"):
        ops = operands(args)
        files = tuple(a for a in ops if pathish(a)) if name == "touch" else tuple(ops)
        return Program(label, Does.WRITE, files, files, body if name == "tee" else None)
    if name in ("cp", "mv"):
        return _copy(label, args)
    if name == "mkdir":
        folders = [a for i, a in enumerate(args) if i == 0 or args[i - 1] not in ("-m", "--mode")]
        return Program(label, Does.MKDIR, tuple(operands(folders)))
    if name in ("rm", "unlink", "rmdir"):
        return Program(label, Does.REMOVE, tuple(operands(args)))
    if name == "patch":
        return Program(label, Does.WRITE, ("?",))
    if name in ("apply_patch", "applypatch"):  # Codex's patch tool, also as a heredoc in a shell (§4)
        touched, added = patch_files(body or " ".join(args))
        return Program(label, Does.WRITE, tuple(touched) or ("?",), tuple(added))
    if name in ("manage.py", "django-admin"):
        return _python_script(label, "manage.py", args)
    if prog.startswith(("./", "/", "../")) or "/" in prog:
        if name.startswith(("submit", "finish")):
            return Program(
                label, Does.GENERAL
            )  # ``./submit.sh``: a submission, not a run of the program (§3)
        return Program(
            label, Does.RUN, (prog,)
        )  # ``./bin/tool``, ``./reproduce.sh``: a program of the repository
    return Program(label, Does.GENERAL)
