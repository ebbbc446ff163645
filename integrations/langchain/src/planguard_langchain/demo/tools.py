"""The demo agent's tools: real file reading, searching, editing and command running inside one repository.

Every path is resolved inside the repository root (a path that escapes it is an error), and commands run with
the repository as working directory and a time limit.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from langchain_core.tools import BaseTool, ToolException, tool

__all__ = ["TOOL_ACTIONS", "make_tools"]

_MAX_OUTPUT = 4000
_SKIP_DIRS = {".git", "__pycache__", ".venv", "node_modules"}


def make_tools(root: Path, *, timeout_s: float = 60.0) -> list[BaseTool]:
    """``read_file``, ``search``, ``edit_file``, ``create_file``, ``bash`` and ``submit`` on to ``root``."""
    root = root.resolve()

    def inside(path: str) -> Path:
        p = (root / path).resolve()
        if p != root and root not in p.parents:
            raise ToolException(f"{path}: outside the repository")
        return p

    @tool
    def read_file(path: str) -> str:
        """Show a file with line numbers, or list a directory."""
        p = inside(path)
        if p.is_dir():
            entries = sorted(
                str(q.relative_to(root)) + ("/" if q.is_dir() else "")
                for q in p.rglob("*")
                if not _SKIP_DIRS.intersection(q.relative_to(root).parts)
            )
            return "\n".join(entries) or "(empty directory)"
        if not p.is_file():
            raise ToolException(f"{path}: no such file or directory")
        lines = p.read_text(encoding="utf-8").splitlines()
        return "\n".join(f"{i:4d}  {line}" for i, line in enumerate(lines, 1)) or "(empty file)"

    @tool
    def search(pattern: str, path: str = ".") -> str:
        """Search files under ``path`` for a regular expression; one ``file:line: text`` per match."""
        try:
            rx = re.compile(pattern)
        except re.error as exc:
            raise ToolException(f"invalid regular expression {pattern!r}: {exc}") from None
        base = inside(path)
        files = [base] if base.is_file() else sorted(base.rglob("*"))
        hits: list[str] = []
        for f in files:
            if not f.is_file() or _SKIP_DIRS.intersection(f.relative_to(root).parts):
                continue
            try:
                text = f.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue
            for n, line in enumerate(text.splitlines(), 1):
                if rx.search(line):
                    hits.append(f"{f.relative_to(root)}:{n}: {line.strip()}")
        return "\n".join(hits[:200]) or "no matches"

    @tool
    def edit_file(path: str, old_str: str, new_str: str) -> str:
        """Replace the one occurrence of ``old_str`` in a file by ``new_str``."""
        p = inside(path)
        if not p.is_file():
            raise ToolException(f"{path}: no such file")
        text = p.read_text(encoding="utf-8")
        n = text.count(old_str)
        if n != 1:
            raise ToolException(f"{path}: old_str occurs {n} times; it must occur exactly once")
        p.write_text(text.replace(old_str, new_str), encoding="utf-8")
        return f"edited {path}"

    @tool
    def create_file(path: str, content: str) -> str:
        """Create (or overwrite) a file with ``content``."""
        p = inside(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(content, encoding="utf-8")
        return f"created {path} ({len(content.splitlines())} lines)"

    @tool(response_format="content_and_artifact")
    def bash(command: str) -> tuple[str, dict[str, Any]]:
        """Run a shell command in the repository root (e.g. the tests); returns output and exit code."""
        env = dict(os.environ)
        # `python` must be this interpreter even on machines that only have `python3` on PATH.
        env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        try:
            proc = subprocess.run(
                command,
                shell=True,
                cwd=root,
                env=env,
                capture_output=True,
                text=True,
                timeout=timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return f"timed out after {timeout_s:.0f}s", {"exit_code": 124}
        out = (proc.stdout + proc.stderr).strip()
        if len(out) > _MAX_OUTPUT:
            out = out[:_MAX_OUTPUT] + "\n... (output cut)"
        return f"{out}\n(exit code {proc.returncode})".strip(), {"exit_code": proc.returncode}

    @tool
    def submit() -> str:
        """Submit the work: the run is finished."""
        return "submitted"

    tools: list[BaseTool] = [read_file, search, edit_file, create_file, bash, submit]
    for t in tools:  # a bad call is reported to the model as a tool error, as a real harness does
        t.handle_tool_error = True
    return tools


#: How the file tools read as SWE-agent action text. The paper's phase rules know SWE-agent's, Claude Code's
#: and OpenHands' tools by name; tools named otherwise are rendered as the equivalent command so that they are
#: classified (``bash`` and ``submit`` mean the same under every scaffold, so they need none).
TOOL_ACTIONS: dict[str, Any] = {
    "read_file": lambda a: f"str_replace_editor view {a.get('path', '.')}",
    "search": lambda a: (
        f"grep -rn {shlex.quote(str(a.get('pattern', '')))} {shlex.quote(str(a.get('path', '.')))}"
    ),
    "edit_file": lambda a: f"str_replace_editor str_replace {a.get('path', '')}",
    "create_file": lambda a: f"str_replace_editor create {a.get('path', '')}",
}
