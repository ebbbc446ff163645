"""Turn a :class:`~planguard.events.ToolEvent` of any supported scaffold into parsed sub-commands.

The paper classified SWE-agent's byte-exact action strings, so when an event carries ``action`` that
text goes through the paper's parser. Otherwise the structured call is mapped onto the same
vocabulary (PHASE_RULES section 6):

* SWE-agent / OpenHands function calls: ``bash``/``execute_bash`` -> the command through the bash
  rules, ``str_replace_editor`` -> its subcommand and ``path``, ``submit``/``finish`` -> general,
  ``think`` or an empty tool name -> a think step.
* Claude Code: ``Read`` -> view, ``Edit``/``MultiEdit``/``NotebookEdit`` -> str_replace, ``Write`` ->
  create, ``Bash`` -> the bash rules, ``Grep``/``Glob``/``LS`` -> the read-only command rule on their
  path arguments (navigation, or a test interaction when they target tests), everything else
  (``Task``, ``TodoWrite``, ``WebFetch``, ...) -> general.
* Gemini CLI, likewise: ``read_file`` -> view, ``replace`` -> str_replace, ``write_file`` -> create,
  ``run_shell_command`` -> the bash rules, ``glob``/``search_file_content``/``grep_search``/
  ``list_directory`` -> the read-only command rule on their path arguments.
* Any unknown tool -> one general command labelled with the tool name.

Arguments may be a mapping or a raw (possibly invalid) JSON string; neither ever raises.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from planguard.documents import loads_json
from planguard.events import ToolEvent
from planguard.phases.shell import SRE_TOOL, ParsedCommand, parse_action

__all__ = ["THINK", "event_commands", "shell_command", "structured_commands"]

#: Marker for a step that called no tool.
THINK: tuple[ParsedCommand, ...] = (ParsedCommand(kind="think"),)

_SHELL_TOOLS = frozenset(
    {"bash", "execute_bash", "shell", "run", "cmd_run", "terminal", "run_shell_command", "exec_command"}
)
_EDITOR_TOOLS = frozenset({SRE_TOOL, "file_editor", "edit", "read", "str_replace_based_edit_tool"})
_THINK_TOOLS = frozenset({"", "think"})
_CLAUDE_EDIT = {
    "Read": "view",
    "Edit": "str_replace",
    "MultiEdit": "str_replace",
    "Write": "create",
    "NotebookEdit": "str_replace",
    "NotebookRead": "view",
    # Gemini CLI
    "read_file": "view",
    "replace": "str_replace",
    "write_file": "create",
}
_CLAUDE_SEARCH = {
    "Grep": "grep",
    "Glob": "find",
    "LS": "ls",
    # Gemini CLI
    "glob": "find",
    "search_file_content": "grep",
    "grep_search": "grep",
    "list_directory": "ls",
}


def _arguments(raw: Mapping[str, Any] | str | Any) -> Mapping[str, Any] | str:
    if isinstance(raw, Mapping):
        return raw
    if isinstance(raw, str):
        text = raw.strip()
        if text.startswith("{"):
            try:
                value = loads_json(text)  # the model's text: the document reader's depth limit applies
            except ValueError:
                return raw
            if isinstance(value, Mapping):
                return value
        return raw
    return {}


def _str(args: Mapping[str, Any] | str, *keys: str) -> str | None:
    if not isinstance(args, Mapping):
        return None
    for key in keys:
        value = args.get(key)
        if isinstance(value, str):
            return value
    return None


def _editor(sub: str, path: str | None, label: str = "") -> ParsedCommand:
    tool_args: tuple[tuple[str, str], ...] = (("path", path),) if path is not None else ()
    return ParsedCommand(kind="tool", tool=SRE_TOOL, subcommand=sub, tool_args=tool_args, label=label)


def _general(label: str) -> tuple[ParsedCommand, ...]:
    return (ParsedCommand(kind="other", label=label or "unknown"),)


def structured_commands(tool: str, raw_arguments: Mapping[str, Any] | str | Any) -> tuple[ParsedCommand, ...]:
    """Sub-commands of a structured tool call (no action string)."""
    name = tool if isinstance(tool, str) else str(tool)
    args = _arguments(raw_arguments)
    if name in _THINK_TOOLS:
        return THINK
    if name in _CLAUDE_EDIT:
        path = _str(args, "file_path", "notebook_path", "path")
        return (_editor(_CLAUDE_EDIT[name], path, label=name),)
    if name in _CLAUDE_SEARCH:
        path = _str(args, "path", "dir_path")
        words = [w for w in (path, _str(args, "pattern"), _str(args, "glob")) if w]
        return (ParsedCommand(kind="bash", command=_CLAUDE_SEARCH[name], args=tuple(words), label=name),)
    lowered = name.lower()
    if name == "Bash" or lowered in _SHELL_TOOLS:
        command = _shell_text(args)
        if command is None:
            return _general(name)
        return parse_action(command)
    if lowered in _EDITOR_TOOLS:
        sub = _str(args, "command")
        if sub is None:
            sub = "view" if lowered == "read" else "str_replace"
        return (_editor(sub, _str(args, "path", "file_path", "filePath")),)  # filePath: OpenCode
    if lowered == "submit":
        return (ParsedCommand(kind="tool", tool="submit"),)
    return _general(name)


def _shell_text(args: Mapping[str, Any] | str) -> str | None:
    return _str(args, "command", "cmd") if isinstance(args, Mapping) else args


def shell_command(tool: str, raw_arguments: Mapping[str, Any] | str | Any) -> str | None:
    """The command text of a shell-tool call (``bash``, ``Bash``, ``execute_bash``, ...): its sub-commands
    are ``parse_action`` of it (see :func:`structured_commands`). ``None`` for any other call."""
    if not isinstance(tool, str) or (tool != "Bash" and tool.lower() not in _SHELL_TOOLS):
        return None
    return _shell_text(_arguments(raw_arguments))


def event_commands(event: ToolEvent) -> tuple[ParsedCommand, ...]:
    """The sub-commands of one event: its ``action`` text when present, else its structured call."""
    action = event.action
    if isinstance(action, str):
        # An empty action is a think step; a non-empty one that yields nothing (an editor call with
        # an unknown subcommand) has no sub-command at all, as in the paper's pipeline.
        return parse_action(action) if action.strip() else THINK
    return structured_commands(event.tool, event.arguments)
