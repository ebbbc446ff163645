"""The paper's reading of a canonical call (PHASE_RULES section 6): the sub-commands its rules see.

The paper classified SWE-agent's byte-exact action strings; an event that carries ``action`` goes
through the paper's parser as it is (see :class:`planguard.phases.paper.PaperRules`). Any other call is
first read by the action vocabulary (built-in tool rules plus the user's ``actions.rules``) into one
:class:`~planguard.actions.vocabulary.ToolCall`, and this module maps that onto the paper's vocabulary:

* a call with a shell line (``bash``, ``Bash``, ``execute_bash``, a user's ``kind: shell`` tool, ...)
  -> the line through the paper's parser;
* a read -> the editor's ``view`` of its path; a write -> ``create`` (a new file) or ``str_replace``;
* a search or listing (``Grep``/``Glob``/``LS``, ...) -> the read-only command rule (``grep``/``find``/
  ``ls``) on its scope, pattern and glob: navigation, or a test interaction when they name tests;
* a test run (a ``validation`` rule) -> ``pytest``;
* a reasoning step (``think``, the empty tool) -> a think step;
* anything else (a submission, a plan update, an unknown tool) -> one general command labelled with
  the tool name.
"""

from __future__ import annotations

from planguard.actions.vocabulary import ToolCall
from planguard.phases.paper_parser import SRE_TOOL, ParsedCommand, parse_action

__all__ = ["THINK", "paper_commands"]

#: Marker for a step that called no tool.
THINK: tuple[ParsedCommand, ...] = (ParsedCommand(kind="think"),)

#: The read-only shell program a structured search or listing stands for.
_PROGRAM_OF_READER = {"search": "grep", "find": "find", "navigate": "ls"}


def _editor(sub: str, path: str | None, label: str) -> ParsedCommand:
    tool_args: tuple[tuple[str, str], ...] = (("path", path),) if path is not None else ()
    return ParsedCommand(kind="tool", tool=SRE_TOOL, subcommand=sub, tool_args=tool_args, label=label)


def paper_commands(tool: str, call: ToolCall) -> tuple[ParsedCommand, ...]:
    """The sub-commands the paper's rules see for ``call`` (a call of ``tool`` with no action string)."""
    if call.thought:
        return THINK
    if call.command is not None and call.kind != "code":
        return parse_action(call.command)
    # SWE-agent's own editor keeps the paper's label (``str_replace_editor: view``); others their name.
    label = "" if call.reader == "editor" else tool
    program = _PROGRAM_OF_READER.get(call.reader)
    if program is not None:
        return (ParsedCommand(kind="bash", command=program, args=call.operands, label=label),)
    if call.kind == "read":
        return (_editor("view", call.operands[0] if call.operands else None, label),)
    if call.kind == "write":
        if not call.operands:
            return (_editor("str_replace", None, label),)
        return tuple(
            _editor("create" if path in call.created else "str_replace", raw, label)
            for raw, path in zip(call.operands, call.paths, strict=False)
        )
    if call.kind == "test":
        return (ParsedCommand(kind="bash", command="pytest", label=label),)
    return (ParsedCommand(kind="other", label=tool or "unknown"),)
