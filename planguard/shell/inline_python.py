"""Which files a piece of inline Python code writes (``python -c CODE`` or a heredoc body).

The paper finds them by parsing the code: ``open(f, 'w'|'a'|'x')`` (also through a variable holding
the name, and as a ``with`` item), ``Path(f).write_text/write_bytes`` (also through a variable
assigned ``Path(f)``). Code that does not parse writes nothing in the paper's classifier; the
corrected rules fall back to a regular expression so a snippet with a syntax error elsewhere still
counts.
"""

from __future__ import annotations

import ast
import re

__all__ = ["written_files"]

_WRITE_MODE = ("w", "a", "x")
_HINT = re.compile(r"open\s*\(|write_(?:text|bytes)")
_OPEN_RE = re.compile(r"""\bopen\(\s*(['"])([^'"\n]+)\1\s*,\s*(['"])([^'"\n]*)\3""")
_PATH_WRITE_RE = re.compile(r"""\bPath\(\s*(['"])([^'"\n]+)\1\s*\)\s*\.\s*write_(?:text|bytes)\b""")


def _string(node: ast.expr) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _is_path_call(node: ast.expr) -> str | None:
    """``Path('x')`` -> ``'x'``."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "Path"
        and node.args
    ):
        return _string(node.args[0])
    return None


def _analyse(tree: ast.AST) -> list[str]:
    path_vars: dict[str, str] = {}
    string_vars: dict[str, str] = {}
    nodes = _preorder(tree)
    for node in nodes:
        if isinstance(node, ast.Assign):
            path = _is_path_call(node.value)
            if path is not None:
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        path_vars[target.id] = path
            else:
                value = _string(node.value)
                if value is not None:
                    for target in node.targets:
                        if isinstance(target, ast.Name):
                            string_vars[target.id] = value

    def open_target(call: ast.Call) -> str | None:
        if not (isinstance(call.func, ast.Name) and call.func.id == "open" and len(call.args) >= 2):
            return None
        first = call.args[0]
        name = _string(first)
        if name is None and isinstance(first, ast.Name):
            name = string_vars.get(first.id)
        return name or None

    edited: list[str] = []
    with_files: set[str] = set()
    # The paper's visitor handles a ``with open(...)`` before the call inside it, and skips that
    # call afterwards; a pre-order walk keeps that order.
    for node in nodes:
        if isinstance(node, ast.With):
            for item in node.items:
                call = item.context_expr
                if isinstance(call, ast.Call):
                    name = open_target(call)
                    mode = _string(call.args[1]) if name is not None else None
                    if name is not None and mode is not None and any(m in mode for m in _WRITE_MODE):
                        edited.append(name)
                        with_files.add(name)
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in ("write_text", "write_bytes"):
                base = func.value
                path = _is_path_call(base)
                if path is not None:
                    edited.append(path)
                elif isinstance(base, ast.Name) and base.id in path_vars:
                    edited.append(path_vars[base.id])
            name = open_target(node)
            if name is not None and name not in with_files:
                mode = _string(node.args[1])
                if mode is not None and any(m in mode for m in _WRITE_MODE):
                    edited.append(name)
    return edited


def _preorder(tree: ast.AST) -> list[ast.AST]:
    out: list[ast.AST] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        out.append(node)
        stack.extend(reversed(list(ast.iter_child_nodes(node))))
    return out


def written_files(code: str, *, lenient: bool = False) -> tuple[str, ...]:
    """Files the code opens for writing, as the paper finds them (nothing when it does not parse).
    ``lenient`` (the live rules) reads code that does not parse with regular expressions instead."""
    if not code or _HINT.search(code) is None:  # no ``open(``, ``.write_text``/``.write_bytes``: no write
        return ()
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError, TypeError):
        if not lenient:
            return ()
        found = [m.group(2) for m in _OPEN_RE.finditer(code) if any(c in m.group(4) for c in _WRITE_MODE)]
        found.extend(m.group(2) for m in _PATH_WRITE_RE.finditer(code))
        return tuple(found)
    try:
        return tuple(_analyse(tree))
    except (SyntaxError, ValueError, RecursionError, MemoryError, TypeError):
        return ()
