"""What every phase classifier shares: the roles and their letters, the result types of classification
(:class:`Command`, :class:`Classification`) and the :class:`PhaseClassifier` protocol the pipeline needs,
whichever classifier a config picks (the live rules, the paper's, a declared plan's matchers)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from planguard.events import ToolEvent
from planguard.run import RunChanges, RunModel
from planguard.tools.vocabulary import ToolCall

__all__ = [
    "GENERAL",
    "LETTER_OF",
    "NAVIGATE",
    "PATCH",
    "PHASE_ROLES",
    "REPRODUCE_NEW",
    "REPRODUCE_REGRESSION",
    "ROLE_OF_LETTER",
    "VALIDATE_NEW",
    "VALIDATE_REGRESSION",
    "Classification",
    "Command",
    "CallReader",
    "CallRules",
    "PhaseClassifier",
    "letter_map",
]

NAVIGATE = "L_navigate"
REPRODUCE_NEW = "L_reproduce_newly_generated_test"
REPRODUCE_REGRESSION = "L_reproduce_regression_test"
PATCH = "P"
VALIDATE_NEW = "V_newly_generated_test"
VALIDATE_REGRESSION = "V_regression_test"
GENERAL = "general"

#: The six roles that make up a Langutory (``general`` is dropped from it).
PHASE_ROLES: tuple[str, ...] = (
    NAVIGATE,
    REPRODUCE_NEW,
    REPRODUCE_REGRESSION,
    PATCH,
    VALIDATE_NEW,
    VALIDATE_REGRESSION,
)

#: Role -> the one-letter symbol used by the data files (``labels.jsonl``'s ``letters``).
LETTER_OF: dict[str, str] = {
    NAVIGATE: "N",
    REPRODUCE_NEW: "R",
    REPRODUCE_REGRESSION: "r",
    PATCH: "P",
    VALIDATE_NEW: "V",
    VALIDATE_REGRESSION: "v",
}
ROLE_OF_LETTER: dict[str, str] = {letter: role for role, letter in LETTER_OF.items()}


@dataclass(frozen=True, slots=True)
class Command:
    """One classified sub-command of a step.

    ``label`` is spelled exactly as the reference data spells it: the shell command word (``cd``,
    ``python3``), ``str_replace_editor: <sub>`` for the editor tool, ``think`` for a step without a
    call, ``complex_command``, ``set_env``, or the tool name of any other tool.
    """

    label: str
    role: str


@dataclass(frozen=True, slots=True)
class Classification:
    """What one tool call means for the plan phases, computed without touching the session state.

    ``created`` and ``patched`` are the effects that :meth:`PhaseState.apply` commits once the call
    has actually run. ``nodes`` are opaque identities of the sub-commands; the paper's pipeline
    orders the sub-commands of a step by when each distinct sub-command was first seen in the run,
    so the state remembers them. ``roles`` (the non-general roles, in order) is derived from
    ``commands`` once, at construction: every stage after classification reads it.
    """

    commands: tuple[Command, ...]
    created: tuple[str, ...] = ()
    patched: bool = False
    nodes: tuple[int, ...] = ()
    #: The file the call opens in a windowed editor (SWE-agent 0.x ``open``), which a later ``edit`` of the
    #: open file targets (the live rules only).
    opened: str | None = None
    #: No mapping rule knows the call's tool, so its phase could not be observed (the live rules only).
    unknown: bool = False
    #: What the call adds to the run model (files it creates as scripts or sources, files it shows to
    #: exist), committed with the rest (the live rules only).
    run: RunChanges | None = None
    #: Whether the call changes a source file of the repository, judged from the run model (a file the run
    #: created as its own script is not source, whatever its name): what the call's action is told, since
    #: the action layer reads a call alone (the live rules only; None: not judged).
    source_write: bool | None = None
    roles: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "roles", tuple([c.role for c in self.commands if c.role != GENERAL]))

    @property
    def letters(self) -> str:
        return "".join(LETTER_OF[r] for r in self.roles)


class PhaseClassifier(Protocol):
    """Classifies tool calls into plan-phase roles; all per-session facts live in the state it makes."""

    name: str

    def new_state(self) -> Any: ...

    def classify(self, event: ToolEvent, state: Any, /) -> Classification: ...


class CallReader(Protocol):
    """An action classifier that reads a call once, for both its action and the phase rules: the
    :class:`~planguard.tools.vocabulary.ToolCall` it returns is what rules reading through it
    (:class:`CallRules` with this ``call_reader``) classify. ``run`` is the session's run model, when its
    rules keep one: a write's "changes a source file" is judged from it."""

    @property
    def call_reader(self) -> object: ...

    def read(self, event: ToolEvent, run: RunModel | None, /) -> tuple[Any, ToolCall | None]: ...


class CallRules(PhaseClassifier, Protocol):
    """Phase rules that take a call as their ``call_reader`` read it (None: they read it themselves). A
    pipeline whose action classifier has the same ``call_reader`` reads every call once
    (:attr:`planguard.session.Pipeline.one_reading`)."""

    @property
    def call_reader(self) -> object: ...

    def classify(self, event: ToolEvent, state: Any, call: ToolCall | None = None, /) -> Classification: ...


def letter_map(rules: PhaseClassifier) -> Mapping[str, str]:
    """Role -> Langutory letter under ``rules``: a declared plan's symbols, else the coding letters."""
    letters: Mapping[str, str] = getattr(rules, "letter_of", LETTER_OF)
    return letters
