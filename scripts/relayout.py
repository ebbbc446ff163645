"""Move planguard's modules into the layout that shows the pipeline, and rewrite every reference to them.

    python scripts/relayout.py            # apply (git mv + rewrite + ruff), from the repository root
    python scripts/relayout.py --dry-run  # print what would move and which files would change

What moves where, and why, is in ``scripts/relayout.md``; the mapping is :data:`MOVES` below. The script
works from the module tree it finds, not from a list of known lines, so code added since it was written
moves and is rewritten too:

* every file under ``planguard/`` whose module (or package) :data:`MOVES` maps is ``git mv``-ed to the
  new place (a package moves with everything in it, except the modules :data:`MOVES` sends elsewhere);
* in every text file the repository holds (code, tests, benchmarks, integrations, scripts, ``.ci``, docs,
  README, CHANGELOG, examples, ``pyproject.toml`` entry points and tool config):

  - ``from X import Y`` statements (absolute, and relative ones inside ``planguard/``, resolved from the
    file's old place and re-spelled from its new one; ``from pkg import submodule`` follows the submodule;
    a core module's ``from .. import __version__`` is read from ``_version`` instead of the package face);
  - dotted names ``planguard.a.b[.attr]`` anywhere (``import`` lines, ``"pkg.module:Class"`` strings,
    ``mock.patch`` targets, logger names, ``python -m`` paths, ``:mod:`` references, mypy overrides). A name
    is rewritten only when its longest module prefix is a real module and what follows it (if anything) is
    a submodule or a name that module defines, so a metric or span name that merely starts like a module
    (``planguard.telemetry.dropped``) stays as it is;
  - file paths ``planguard/a/b.py`` and ``planguard/a/`` (docs, ruff per-file config, tests).

* relative module names in a package's lazy-export table (``{"OTelSink": "otel"}``) follow their module
  when it stays under the package, and are reported when it does not;
* the README's ``## Layout`` block is replaced by :data:`LAYOUT`;
* ruff sorts the imports and formats the Python files it changed.

Running it again changes nothing (every new name is its own image under :data:`MOVES`); running it after
more code has been merged moves and rewrites what that code added.
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

#: Old module or package → new one. A package maps everything under it; a longer key wins.
MOVES: dict[str, str] = {
    # Sinks together: the OTel sink, the local store, the console and the webhook, and what every sink
    # shares (the background worker, drop counts, the content-capture choice, redaction).
    "planguard.telemetry": "planguard.sinks.telemetry",
    "planguard.telemetry.worker": "planguard.sinks.worker",
    "planguard.telemetry.drops": "planguard.sinks.drops",
    "planguard.telemetry.capture": "planguard.sinks.capture",
    "planguard.telemetry.redact": "planguard.sinks.redact",
    "planguard.store": "planguard.sinks.store",
    "planguard.console": "planguard.sinks.console",
    "planguard.notify": "planguard.sinks.webhook",
    # Offline together, one module per command: replay, diff, report, export.
    "planguard.loaders": "planguard.offline.loaders",
    "planguard.replay": "planguard.offline.replay",
    "planguard.align": "planguard.offline.diff",
    "planguard.report": "planguard.offline.report",
    "planguard.store.export": "planguard.offline.export",
    # The CLI together: the parser (planguard/cli.py → planguard/cli/__init__.py) and its subcommands.
    "planguard.commands": "planguard.cli.commands",
}
#: Modules whose file becomes the ``__init__.py`` of a package of the same name (the module path stays).
AS_PACKAGE: frozenset[str] = frozenset({"planguard.sinks", "planguard.cli"})
#: Packages the new layout needs, with the docstring of an ``__init__.py`` written when none exists.
NEW_PACKAGES: dict[str, str] = {
    "planguard.offline": (
        "Offline: recorded runs through the same pipeline the live integrations drive.\n\n"
        "``loaders`` read trajectories of every supported agent, ``replay`` runs them through a "
        "``Session``,\n``diff`` aligns two runs, ``report`` summarises many, ``export`` turns stored "
        "sessions into trajectories.\n"
    ),
    "planguard.sinks": (
        "Sinks: where what the pipeline saw goes, off the agent's thread (the ``Sink`` interface is in\n"
        ":mod:`planguard.stages`).\n"
    ),
    "planguard.cli": "The ``planguard`` command; a subcommand is a module of ``planguard.cli.commands``.\n",
}
#: The README's ``## Layout`` block in the new layout.
LAYOUT = """\
planguard/            the framework-free core; the face: Guard, Session, config, events, the stage interfaces
  guard.py session.py config.py events.py step.py decisions.py findings.py stages.py plugins.py plan.py
  actions/            canonical actions, effect labels     phases/      live + paper phase rules, parser
  metrics.py          Langutory, Compliance                detectors/   streaming anti-pattern detectors
  todo.py             the agent's own todo list            policies/    reminders, violations, gates
  experiment/         plan A / plan B / no plan: live arms and their analysis
  sinks/              telemetry/ (OTel) store/ console.py webhook.py, and what they share: worker, redact
  offline/            loaders/ replay.py diff.py report/ export.py: recorded runs through the same pipeline
  cli/                the planguard command (python -m planguard): commands/ one module per subcommand
integrations/         thin adapters, each its own distribution (planguard-agents-<name>); the demo agent and
                      its config ship in integrations/langchain (planguard_langchain.demo)
examples/             example config (a link to the demo's), example trajectories, experiment example
benchmarks/           hot-path and integration benchmarks (scripts, not tests)
"""
#: Files the script never rewrites: itself, its notes and its test mention the old names on purpose.
SKIP_FILES = frozenset({"scripts/relayout.py", "scripts/relayout.md", "tests/test_layout.py"})
#: Recorded data: never rewritten (a trajectory's commands are what the agent ran), only reported.
DATA_SUFFIXES = (".jsonl", ".json", ".traj", ".csv", ".png", ".jpg", ".gif", ".svg", ".ico", ".pdf", ".gz")
ROOT_PACKAGE = "planguard"

_DOTTED = re.compile(r"(?<![\w.])planguard(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
_PATH = re.compile(r"(?<![\w.\-])planguard((?:/[A-Za-z_][A-Za-z0-9_]*)+)(\.py\b)?")
_TELEMETRY_NAME_CALL = re.compile(r"get_(?:tracer|meter|logger_provider)\(\s*[\"']$")


def new_module(name: str) -> str:
    """Where module ``name`` lives in the new layout (itself when nothing moves it)."""
    parts = name.split(".")
    for n in range(len(parts), 1, -1):
        key = ".".join(parts[:n])
        if key in MOVES:
            return ".".join([MOVES[key], *parts[n:]])
    return name


def check_mapping() -> None:
    """Every new name must be a fixed point of :func:`new_module`, so that running the script twice (or on
    code written for the new layout) changes nothing."""
    for old, new in MOVES.items():
        if new_module(new) != new:
            raise SystemExit(f"relayout: MOVES is not idempotent: {old} -> {new} -> {new_module(new)}")
    for name in AS_PACKAGE:
        if new_module(name) != name:
            raise SystemExit(f"relayout: {name} is both moved and turned into a package")


# ------------------------------------------------------------------------------------------- the tree


@dataclass
class Tree:
    """The modules under ``planguard/`` as the working tree has them now."""

    root: Path
    #: dotted module name → path relative to root (packages: their ``__init__.py``)
    files: dict[str, Path] = field(default_factory=dict)
    packages: set[str] = field(default_factory=set)
    #: module → names it defines at top level (assignments, defs, classes, imports, ``__all__``)
    _names: dict[str, set[str]] = field(default_factory=dict)

    @classmethod
    def scan(cls, root: Path) -> Tree:
        tree = cls(root)
        for path in sorted((root / ROOT_PACKAGE).rglob("*.py")):
            rel = path.relative_to(root)
            if "__pycache__" in rel.parts:
                continue
            parts = list(rel.with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
                tree.packages.add(".".join(parts))
            tree.files[".".join(parts)] = rel
        return tree

    def is_module(self, name: str) -> bool:
        return name in self.files

    def module_prefix(self, parts: list[str]) -> int:
        """Length of the longest prefix of ``parts`` that is a module (0 when none, the root excluded)."""
        for n in range(len(parts), 1, -1):
            if ".".join(parts[:n]) in self.files:
                return n
        return 0

    def defines(self, module: str, name: str) -> bool:
        if module not in self._names:
            self._names[module] = _top_level_names(self.root / self.files[module])
        return name in self._names[module]

    def package_of(self, module: str) -> str:
        """The package relative imports in ``module`` start from."""
        return module if module in self.packages else module.rpartition(".")[0]


def _top_level_names(path: Path) -> set[str]:
    try:
        tree = ast.parse(path.read_text("utf-8"))
    except (SyntaxError, UnicodeDecodeError):
        return set()
    names: set[str] = set()

    def bind(target: ast.AST) -> None:
        for node in ast.walk(target):
            if isinstance(node, ast.Name):
                names.add(node.id)

    def visit(body: Iterable[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Assign):
                for t in node.targets:
                    bind(t)
                if any(
                    isinstance(t, ast.Name) and t.id in ("__all__", "_EXPORTS", "_LAZY") for t in node.targets
                ):
                    names.update(_string_constants(node.value))
            elif isinstance(node, ast.AnnAssign):
                bind(node.target)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names.update((a.asname or a.name).split(".")[0] for a in node.names)
            elif isinstance(node, ast.If):
                visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                for h in node.handlers:
                    visit(h.body)

    visit(tree.body)
    return names


def _string_constants(node: ast.AST) -> set[str]:
    """String keys and elements of a literal (an ``__all__`` list, an export table's keys)."""
    out: set[str] = set()
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        out.update(e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str))
    elif isinstance(node, ast.Dict):
        out.update(k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str))
    return out


# ------------------------------------------------------------------------------------------- moves


def new_path(tree: Tree, rel: Path) -> Path:
    """Where the file ``rel`` (relative to the root) goes."""
    parts = rel.parts
    if parts[0] != ROOT_PACKAGE or "__pycache__" in parts:
        return rel
    if rel.suffix == ".py":
        dotted = list(rel.with_suffix("").parts)
        is_init = dotted[-1] == "__init__"
        if is_init:
            dotted.pop()
        module = ".".join(dotted)
        target = new_module(module).split(".")
        if is_init or module in AS_PACKAGE:
            return Path(*target, "__init__.py")
        return Path(*target[:-1], target[-1] + ".py")
    package = ".".join(parts[:-1])  # a data file moves with its package
    return Path(*new_module(package).split("."), parts[-1])


def repository_files(root: Path) -> list[Path]:
    """Every file git tracks or would track (untracked files not ignored), relative to root."""
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root,
        check=True,
        capture_output=True,
    ).stdout.decode("utf-8", "surrogateescape")
    seen = sorted({p for p in out.split("\0") if p})
    return [Path(p) for p in seen if (root / p).is_file()]


# ------------------------------------------------------------------------------------------- rewriting


@dataclass
class Rewriter:
    tree: Tree
    warnings: list[str] = field(default_factory=list)
    face_names: dict[str, str] = field(default_factory=dict)
    known_files: set[Path] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.known_files = set(self.tree.files.values())
        face = self.tree.root / ROOT_PACKAGE / "__init__.py"
        if face.exists():
            self.face_names = _face_definitions(face)

    # --- dotted names and paths (every text file)

    def dotted(self, text: str) -> str:
        def repl(m: re.Match[str]) -> str:
            if _TELEMETRY_NAME_CALL.search(text, max(0, m.start() - 40), m.start()):
                return m.group(0)  # an instrumentation scope name is a telemetry name, not a module path
            parts = m.group(0).split(".")
            n = self.tree.module_prefix(parts)
            if n == 0:
                return m.group(0)
            module = ".".join(parts[:n])
            moved = new_module(module)
            if moved == module:
                return m.group(0)
            rest = parts[n:]
            if rest and not self.tree.defines(module, rest[0]):
                return m.group(0)  # not an attribute of the module: some other name with the same start
            return ".".join([moved, *rest])

        return _DOTTED.sub(repl, text)

    def paths(self, text: str) -> str:
        def repl(m: re.Match[str]) -> str:
            comps = m.group(1).strip("/").split("/")
            if m.group(2):  # a module file: it goes where the move sends it
                rel = Path(ROOT_PACKAGE, *comps).with_suffix(".py")
                if rel not in self.known_files:
                    return m.group(0)
                return new_path(self.tree, rel).as_posix()
            dotted = [ROOT_PACKAGE, *comps]
            n = self.tree.module_prefix(dotted)
            module = ".".join(dotted[:n])
            if n == 0 or module not in self.tree.packages:
                return m.group(0)  # "planguard/replay" without ".py" is a word, not a path we know
            moved = new_module(module)
            return "/".join([*moved.split("."), *dotted[n:]]) if moved != module else m.group(0)

        return _PATH.sub(repl, text)

    # --- Python: from-imports, relative ones included

    def python(self, source: str, old_rel: Path, new_rel: Path, where: str) -> str:
        try:
            module_ast = ast.parse(source)
        except SyntaxError as exc:
            self.warnings.append(
                f"{where}:{exc.lineno}: not Python the parser reads; only names/paths rewritten"
            )
            return source
        in_core = old_rel.parts[0] == ROOT_PACKAGE
        old_module = _module_of(old_rel) if in_core else None
        new_mod = _module_of(new_rel) if in_core else None
        old_pkg = self.tree.package_of(old_module) if old_module else None
        new_pkg = _package_of_path(new_rel) if new_mod else None
        lines = re.findall(r"[^\n]*\n|[^\n]+$", source)  # AST line numbers count "\n" only
        edits: list[tuple[int, int, int, int, str]] = []
        for node in ast.walk(module_ast):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                if old_pkg is None or new_pkg is None:
                    continue
                base = _resolve_relative(old_pkg, node.level, node.module)
            else:
                if node.module is None or not (
                    node.module == ROOT_PACKAGE or node.module.startswith("planguard.")
                ):
                    continue
                base = node.module
            groups = self._import_groups(base, node, in_core and old_module != ROOT_PACKAGE)
            spelled = [self._spell(target, names, node.level > 0, new_pkg) for target, names in groups]
            original = ast.get_source_segment(source, node) or ""
            if len(spelled) == 1 and _same_import(original, spelled[0]):
                continue
            segment = original
            if "#" in segment:
                self.warnings.append(
                    f"{where}:{node.lineno}: comments inside an import statement were dropped"
                )
            indent = " " * node.col_offset
            text = ("\n" + indent).join(spelled)
            assert node.end_lineno is not None and node.end_col_offset is not None
            edits.append((node.lineno, node.col_offset, node.end_lineno, node.end_col_offset, text))
        if in_core and old_rel.name == "__init__.py" and old_pkg is not None and new_pkg is not None:
            edits += self._export_tables(module_ast, old_pkg, new_pkg, where)
        return _apply_edits(lines, edits)

    def _import_groups(
        self, base: str, node: ast.ImportFrom, core: bool
    ) -> list[tuple[str, list[tuple[str, str | None]]]]:
        """(from-module in the new layout, [(name, asname)]) for each run of names sharing a from-module."""
        groups: list[tuple[str, list[tuple[str, str | None]]]] = []
        for alias in node.names:
            full = f"{base}.{alias.name}"
            if alias.name != "*" and self.tree.is_module(full):
                target = new_module(full)
                parent, _, leaf = target.rpartition(".")
                asname = alias.asname or (alias.name if leaf != alias.name else None)
                item = (parent, (leaf, asname))
            elif core and base == ROOT_PACKAGE and alias.name in self.face_names:
                # The package face re-exports it; a core module imports it from where it is defined.
                item = (self.face_names[alias.name], (alias.name, alias.asname))
            else:
                item = (new_module(base), (alias.name, alias.asname))
            if groups and groups[-1][0] == item[0]:
                groups[-1][1].append(item[1])
            else:
                groups.append((item[0], [item[1]]))
        return groups

    def _spell(
        self, target: str, names: list[tuple[str, str | None]], relative: bool, new_pkg: str | None
    ) -> str:
        listed = ", ".join(n if a is None or a == n else f"{n} as {a}" for n, a in names)
        if not relative or new_pkg is None:
            return f"from {target} import {listed}"
        here, there = new_pkg.split("."), target.split(".")
        common = 0
        while common < min(len(here), len(there)) and here[common] == there[common]:
            common += 1
        dots = "." * (len(here) - common + 1)
        return f"from {dots}{'.'.join(there[common:])} import {listed}"

    def _export_tables(
        self, module_ast: ast.Module, old_pkg: str, new_pkg: str, where: str
    ) -> list[tuple[int, int, int, int, str]]:
        """Relative module names in a package's lazy-export dict (``{"OTelSink": "otel"}``)."""
        edits: list[tuple[int, int, int, int, str]] = []
        for node in module_ast.body:
            if not isinstance(node, (ast.Assign, ast.AnnAssign)) or not isinstance(node.value, ast.Dict):
                continue
            for value in node.value.values:
                if not (isinstance(value, ast.Constant) and isinstance(value.value, str)):
                    continue
                old = f"{old_pkg}.{value.value}"
                if not re.fullmatch(r"[A-Za-z_][\w.]*", value.value) or not self.tree.is_module(old):
                    continue
                target = new_module(old)
                if target.startswith(new_pkg + "."):
                    relative = target[len(new_pkg) + 1 :]
                    if relative != value.value:
                        assert value.end_lineno is not None and value.end_col_offset is not None
                        edits.append(
                            (
                                value.lineno,
                                value.col_offset,
                                value.end_lineno,
                                value.end_col_offset,
                                f'"{relative}"',
                            )
                        )
                else:
                    self.warnings.append(
                        f"{where}:{value.lineno}: {value.value!r} names {old}, which moves out of the "
                        f"package to {target}: change this entry by hand"
                    )
        return edits


def _face_definitions(face: Path) -> dict[str, str]:
    """Names the package face imports eagerly (``from ._version import __version__``) → their module."""
    out: dict[str, str] = {}
    for node in ast.parse(face.read_text("utf-8")).body:
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            for alias in node.names:
                out[alias.asname or alias.name] = f"{ROOT_PACKAGE}.{node.module}"
    return out


def _module_of(rel: Path) -> str:
    parts = list(rel.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _package_of_path(rel: Path) -> str:
    parts = list(rel.with_suffix("").parts)
    return ".".join(parts[:-1])


def _resolve_relative(package: str, level: int, module: str | None) -> str:
    base = package.split(".")
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def _same_import(original: str, spelled: str) -> bool:
    squash = re.sub(r"[\s()]+|,(?=\s*\))", "", original).rstrip(",")
    return squash == re.sub(r"\s+", "", spelled)


def _apply_edits(lines: list[str], edits: list[tuple[int, int, int, int, str]]) -> str:
    """Replace (line, col)-(end line, end col) spans; AST columns are UTF-8 byte offsets."""
    encoded = [line.encode("utf-8") for line in lines]
    for lineno, col, end_lineno, end_col, text in sorted(edits, reverse=True):
        head = encoded[lineno - 1][:col]
        tail = encoded[end_lineno - 1][end_col:]
        encoded[lineno - 1 : end_lineno] = [head + text.encode("utf-8") + tail]
    return b"".join(encoded).decode("utf-8")


def wrap_long_lines(source: str, limit: int) -> str:
    """Re-wrap the docstring and comment lines a longer module path pushed past ``limit`` (ruff formats
    code, not prose): the words past the limit move to the start of the next line of the same paragraph
    (which may push words on in turn), or onto a new line when the paragraph ends there. Other long lines
    are left for ruff to report."""
    try:
        module_ast = ast.parse(source)
    except SyntaxError:
        return source
    prose: set[int] = set()  # 0-based indexes of docstring lines
    for node in ast.walk(module_ast):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            doc = body[0].value
            if isinstance(doc, ast.Constant) and isinstance(doc.value, str) and doc.end_lineno is not None:
                prose.update(range(doc.lineno - 1, doc.end_lineno))
    lines = source.split("\n")

    def kind(i: int) -> tuple[str, str] | None:
        """(indent, comment marker) of a prose line, None for code."""
        stripped = lines[i].lstrip()
        indent = lines[i][: len(lines[i]) - len(stripped)]
        if stripped.startswith("#"):
            return indent, "# "
        return (indent, "") if i in prose else None

    i = 0
    while i < len(lines):
        here = kind(i)
        if here is not None and len(lines[i]) > limit:
            indent, marker = here
            cut = lines[i].rfind(" ", len(indent) + len(marker) + 1, limit + 1)
            if cut > 0:
                overflow = lines[i][cut + 1 :]
                lines[i] = lines[i][:cut].rstrip()
                nxt = kind(i + 1) if i + 1 < len(lines) else None
                text = lines[i + 1].strip()[len(marker) :] if nxt is not None else ""
                closes = overflow.rstrip().endswith(QUOTES)  # the docstring ends on this line
                starts_block = text.startswith(("*", "-", ":", ">", "|", "``", *QUOTES))
                if nxt == here and text and not closes and not starts_block:
                    lines[i + 1] = indent + marker + overflow + " " + text
                else:
                    lines.insert(i + 1, indent + marker + overflow)
                    prose = {j + 1 if j > i else j for j in prose} | ({i + 1} if i in prose else set())
        i += 1
    return "\n".join(lines)


QUOTES = ('"' * 3, "'" * 3)


def _line_length(root: Path) -> int:
    try:
        import tomllib

        config = tomllib.loads((root / "pyproject.toml").read_text("utf-8"))
        return int(config["tool"]["ruff"]["line-length"])
    except (OSError, KeyError, ValueError):
        return 88


def replace_layout_block(readme: str) -> str:
    m = re.search(r"^## Layout\n(?:(?!^## ).)*?^```\n(.*?)^```", readme, re.M | re.S)
    if m is None:
        return readme
    return readme[: m.start(1)] + LAYOUT + readme[m.end(1) :]


# ------------------------------------------------------------------------------------------- main


@dataclass
class Plan:
    moves: list[tuple[Path, Path]]
    contents: dict[Path, str]  # new path → new text (only files whose text changes)
    new_inits: dict[Path, str]
    warnings: list[str]


def plan(root: Path) -> Plan:
    check_mapping()
    tree = Tree.scan(root)
    rewriter = Rewriter(tree)
    files = [f for f in repository_files(root) if f.as_posix() not in SKIP_FILES]
    moves: list[tuple[Path, Path]] = []
    for rel in files:
        target = new_path(tree, rel)
        if target != rel:
            moves.append((rel, target))
    sources = {src for src, _ in moves}
    destinations: dict[Path, Path] = {}
    for src, dst in moves:
        if dst in destinations:
            raise SystemExit(f"relayout: {src} and {destinations[dst]} would both move to {dst}")
        if (root / dst).exists() and dst not in sources:
            raise SystemExit(f"relayout: {src} would move to {dst}, which exists; move one of them by hand")
        destinations[dst] = src
    contents: dict[Path, str] = {}
    limit = _line_length(root)
    for rel in files:
        dst = new_path(tree, rel)
        if rel.suffix.lower() in DATA_SUFFIXES:
            try:
                text = (root / rel).read_text("utf-8")
            except (UnicodeDecodeError, OSError):
                continue
            if rewriter.paths(rewriter.dotted(text)) != text:
                rewriter.warnings.append(f"{rel}: data file mentions a moved module; left as recorded")
            continue
        try:
            text = (root / rel).read_text("utf-8")
        except (UnicodeDecodeError, OSError):
            continue  # not text
        new = text
        if rel.suffix == ".py":
            new = rewriter.python(new, rel, dst, str(rel))
        new = rewriter.paths(rewriter.dotted(new))
        if rel.suffix == ".py" and new != text:
            new = wrap_long_lines(new, limit)
        if rel.as_posix() == "README.md":
            new = replace_layout_block(new)
        if new != text:
            contents[dst] = new
    after = (set(files) - sources) | set(destinations)
    new_inits = {
        init: f'"""{doc.rstrip()}"""\n'
        for init, doc in ((Path(*pkg.split("."), "__init__.py"), doc) for pkg, doc in NEW_PACKAGES.items())
        if init not in after
    }
    return Plan(moves, contents, new_inits, rewriter.warnings)


def apply(root: Path, p: Plan, *, run_ruff: bool) -> None:
    tracked = set(
        subprocess.run(["git", "ls-files", "-z"], cwd=root, check=True, capture_output=True)
        .stdout.decode("utf-8", "surrogateescape")
        .split("\0")
    )
    for src, dst in p.moves:
        (root / dst).parent.mkdir(parents=True, exist_ok=True)
        if src.as_posix() in tracked:
            subprocess.run(["git", "mv", src.as_posix(), dst.as_posix()], cwd=root, check=True)
        else:
            os.replace(root / src, root / dst)
    for rel, text in p.contents.items():
        (root / rel).write_text(text, "utf-8")
    for rel, text in p.new_inits.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, "utf-8")
        subprocess.run(["git", "add", rel.as_posix()], cwd=root, check=True)
    for src, _ in p.moves:  # vacated folders: a left-over __pycache__ would make a namespace package
        for folder in [root / src.parent, *(root / src.parent).parents]:
            if folder == root or not folder.is_dir():
                break
            shutil.rmtree(folder / "__pycache__", ignore_errors=True)
            if not any(folder.iterdir()):
                folder.rmdir()
    changed = sorted(
        {dst for _, dst in p.moves if dst.suffix == ".py"} | {r for r in p.contents if r.suffix == ".py"}
    )
    changed += sorted(p.new_inits)
    if run_ruff and changed:
        paths = [c.as_posix() for c in changed if (root / c).exists()]
        ruff = [sys.executable, "-m", "ruff"]
        subprocess.run(
            [*ruff, "check", "--select", "I001", "--fix", "--quiet", *paths], cwd=root, check=False
        )
        subprocess.run([*ruff, "format", "--quiet", *paths], cwd=root, check=False)
        # Longer module paths can push a docstring or comment line past the limit: ruff does not wrap those.
        subprocess.run([*ruff, "check", "--select", "E501", "--quiet", *paths], cwd=root, check=False)
    for folder in sorted({src.parent for src, _ in p.moves}):
        package = ".".join(folder.parts)
        if (root / folder).is_dir() and new_module(package) != package:
            print(
                f"warning {folder}/ is still there after its files moved (untracked files?)", file=sys.stderr
            )
    subprocess.run(
        [
            "git",
            "add",
            "-A",
            "--",
            *sorted({d.as_posix() for _, d in p.moves} | {r.as_posix() for r in p.contents}),
        ],
        cwd=root,
        check=False,
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
    ap.add_argument(
        "--dry-run", action="store_true", help="print the moves and changed files, change nothing"
    )
    ap.add_argument(
        "--no-ruff", action="store_true", help="do not sort imports / format with ruff afterwards"
    )
    args = ap.parse_args(argv)
    root = args.root.resolve()
    p = plan(root)
    for src, dst in p.moves:
        print(f"move    {src} -> {dst}")
    for rel in sorted(p.new_inits):
        print(f"create  {rel}")
    for rel in sorted(p.contents):
        print(f"rewrite {rel}")
    for w in p.warnings:
        print(f"warning {w}", file=sys.stderr)
    if not args.dry_run:
        apply(root, p, run_ruff=not args.no_ruff)
    print(
        f"relayout: {len(p.moves)} files moved, {len(p.contents)} rewritten, {len(p.new_inits)} created"
        + (" (dry run)" if args.dry_run else ""),
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
