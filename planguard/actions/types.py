"""The canonical action record (TraceProbe Table I): what a tool call did, independent of the scaffold.

An :class:`Action` is decided from the call alone, before it runs, so gates can use it. What the call
*achieved* (failed, survived, was reverted, ...) is an :class:`Effect`, known only after the result and
sometimes only at the end of the run; effects therefore live in the effect tracker's state, not here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

__all__ = ["FILE_TYPES", "Action", "ActionType", "Effect", "WriteKind", "label_of"]


def label_of(value: object) -> str:
    """The text of an action's field as sinks write it: an enum member's value (action types, write kinds,
    effects, a custom classifier's enum), anything else as ``str()``. A StrEnum member's ``str()`` is its
    value, and cheaper than the Python-level ``.value`` property."""
    if isinstance(value, StrEnum):
        return str(value)
    return str(getattr(value, "value", value))


class ActionType(StrEnum):
    FILE_READ = "FILE_READ"
    FILE_WRITE = "FILE_WRITE"
    SEARCH = "SEARCH"
    COMMAND = "COMMAND"
    PLAN = "PLAN"
    NAVIGATE = "NAVIGATE"
    FETCH = "FETCH"
    AGENT_SPAWN = "AGENT_SPAWN"
    REASON = "REASON"


class Effect(StrEnum):
    """Observable outcome of an action (TraceProbe Table I, plus ``NEUTRAL``).

    ``NEUTRAL`` is planguard's name for "succeeded, and none of the paper's labels applies": a read of a
    file not (yet) known to be task-relevant when no anchor set is given, or a successful command that is
    not a validation. The paper reports its label shares over actions that carry one of its labels.
    """

    SURVIVED = "SURVIVED"
    FAILED = "FAILED"
    REVERTED = "REVERTED"
    JUSTIFIED = "JUSTIFIED"
    RECORDED = "RECORDED"
    OFF_ANCHOR = "OFF_ANCHOR"
    REASONING = "REASONING"
    NEUTRAL = "NEUTRAL"


class WriteKind(StrEnum):
    """How a FILE_WRITE changes its file; decides whether a later write reverts an earlier one."""

    CREATE = "create"  # whole-file write (editor create, Write tool, ``> file``, heredoc)
    EDIT = "edit"  # replace a span (str_replace, Edit, ``sed -i``)
    INSERT = "insert"  # add text without removing any (editor insert, ``>>``)
    DELETE = "delete"  # ``rm``
    RESTORE = "restore"  # undo / ``git checkout -- f`` / ``git restore f``: back to an earlier state
    OTHER = "other"  # touch, cp/mv onto, patch, ... (content unknown)


FILE_TYPES = frozenset({ActionType.FILE_READ, ActionType.FILE_WRITE})


@dataclass(frozen=True, slots=True)
class Action:
    """One tool call as a canonical action.

    ``target`` is the comparable object: a repo-relative path for file actions and navigation, the
    normalised query (``pattern @ scope``) for searches, the command intent (``pytest``, ``python
    reproduce.py``, ``git diff``) for commands, the URL or query for fetches, the agent kind for spawns.
    ``path`` is the file or directory the action concerns when there is one (a search's scope, a
    command's script). Equality covers only the classification, not the texts carried for revert and
    claim checks.
    """

    type: ActionType
    target: str | None = None
    tool: str = ""
    path: str | None = None
    intent: str | None = None  # program (+ subcommand) for commands, editor sub-command, search family
    is_validation: bool = False  # a recognised test / reproduction run
    is_source_write: bool = False  # FILE_WRITE to a non-test, non-scratch file
    is_completion: bool = False  # the agent declares it is done (submit, finish)
    write: WriteKind | None = None
    shell: str | None = None  # first word of the deciding shell command, when the call went through a shell
    structured: bool = False  # a dedicated read/search/edit tool of the scaffold, not a shell command
    scaffold: str | None = None  # scaffold the tool name identifies ("claude-code", "openhands", ...)
    # Texts, kept by reference (never copied) and excluded from equality and repr.
    old_text: str | None = field(default=None, compare=False, repr=False)
    new_text: str | None = field(default=None, compare=False, repr=False)
    text: str | None = field(default=None, compare=False, repr=False)  # reasoning / completion message
    # Further files one call writes besides ``target``: ``rm a b c`` deletes each (TraceProbe counts a write
    # per file it changes); empty for the usual one-file call.
    also_written: tuple[str, ...] = ()
    #: The file a copy or move (``cp a b``) takes its content from: restoring a backup copy reverts edits.
    source: str | None = field(default=None, compare=False, repr=False)

    @property
    def is_file(self) -> bool:
        return self.type in FILE_TYPES
