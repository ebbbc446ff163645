"""Plans: the ordered phases an agent is told to follow, the paper's eight plan settings, and presets for
agents that are not coding agents.

A plan phase names the classifier roles it accepts by *prefix* (PHASE_RULES §5): the phase ``L_reproduce``
accepts ``L_reproduce_newly_generated_test`` and ``L_reproduce_regression_test``. Its ``description`` is
what reminders tell the agent.

A plan may instead *declare* its phases: each phase has a ``match`` over the call (tool name, canonical
action type, arguments, target path, result) and optional ordering conditions (``after``, ``before``,
``first_only``). Such a plan is classified by :class:`planguard.phases.declarative.DeclarativeRules` instead
of the coding rules; a call that matches no phase is general. See :class:`PhaseMatch`.

Presets (:data:`PRESETS`): the paper's settings (``plan`` = ``standard`` = ``coding``, ``no_plan``, …) and,
with declared phases, ``support``, ``research`` and ``data-analysis`` for other agents (README, "Plans for
any agent"; their globs are below).
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .actions.types import ActionType
from .documents import DocumentError, check_depth, decode_utf8, did_you_mean, loads_json, loads_yaml

__all__ = [
    "ArgumentTest",
    "MessageMatch",
    "PhaseMatch",
    "PlanPhase",
    "Plan",
    "PRESETS",
    "SCORED_SETTINGS",
    "phase_matches",
    "load_plan",
    "resolve_plan",
]


def phase_matches(actual: str, expected: str) -> bool:
    """``actual`` (a classifier role) satisfies ``expected`` (a plan phase id) — equal, or a ``_``-prefix."""
    return actual == expected or actual.startswith(expected + "_")


def _regex(pattern: str) -> str:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"expected a valid regular expression, got {pattern!r} ({exc})") from None
    return pattern


def _scalar_text(v: Any) -> Any:
    """A regex given as a YAML/JSON scalar that is not a string (``result: true``, ``text: 42``) is the text
    it was written as: a regex is always a string."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(v)
    return v


def _as_list(v: str | list[str] | None) -> list[str]:
    return [] if v is None else [v] if isinstance(v, str) else list(v)


class ArgumentTest(BaseModel):
    """A test on one argument other than a regular expression: ``{equals: value}`` or ``{exists: bool}``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    equals: Any = Field(None, description="The argument equals this value (compared as parsed JSON/YAML).")
    exists: bool | None = Field(None, description="true: the argument is present; false: it is absent.")

    @model_validator(mode="after")
    def _one(self) -> ArgumentTest:
        given = [k for k in ("equals", "exists") if k in self.model_fields_set]
        if len(given) != 1:
            raise ValueError("expected exactly one of: equals, exists")
        return self


class MessageMatch(BaseModel):
    """A conversation turn that belongs to a phase: the assistant's text to the user, or the user's reply.
    ``text`` and ``after_assistant`` are regular expressions, searched case-insensitively unless
    ``case_sensitive``; a turn is not a tool call and counts as no step."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    role: Literal["user", "assistant"] | None = Field(
        None,
        description="Whose turn: user (the user's or a simulated user's reply) or assistant; null: either.",
    )
    text: str | None = Field(
        None,
        description="Regular expression searched in the turn's text, e.g. '^\\s*(yes|yeah|sure)\\b'. Quote "
        "words YAML 1.1 reads as booleans elsewhere (yes, no, on, off); planguard's config reader keeps "
        "them as text.",
    )
    after_assistant: str | None = Field(
        None,
        description="Regular expression the assistant's last message before this (user) turn must match, "
        "e.g. the agent listing the action: 'cancel.*(confirm|proceed)'.",
    )
    after_assistant_sentences: int | None = Field(
        None,
        ge=1,
        description="Search after_assistant only in the last this many sentences of the assistant's message "
        "(where it asks); null: the whole message.",
    )
    not_after_question: str | None = Field(
        None,
        description="Regular expression that, found in the last question of the assistant's message (its "
        "last sentence ending in '?'), keeps after_assistant from holding: a question offering alternatives "
        "('ORD or MDW?', 'which flight?') is answered with a choice, and a yes to it confirms no action.",
    )
    case_sensitive: bool = Field(
        False, description="Match text, after_assistant and not_after_question case-sensitively."
    )

    @field_validator("text", "after_assistant", "not_after_question", mode="before")
    @classmethod
    def _text(cls, v: Any) -> Any:
        return _scalar_text(v)

    @field_validator("text", "after_assistant", "not_after_question")
    @classmethod
    def _valid_regex(cls, v: str | None) -> str | None:
        return None if v is None else _regex(v)

    @model_validator(mode="after")
    def _user_after_assistant(self) -> MessageMatch:
        if self.after_assistant is not None and self.role == "assistant":
            raise ValueError("after_assistant: only a user turn follows the assistant's message (role: user)")
        if self.not_after_question is not None and self.after_assistant is None:
            raise ValueError("not_after_question: qualifies after_assistant, which is not set")
        return self


class PhaseMatch(BaseModel):
    """Which calls belong to a declared phase. Every condition given must hold (an empty match matches every
    call). Regular expressions are searched (``re.search``) except ``tool_regex``, which must match the whole
    tool name, as in gate patterns; ``result`` is case-insensitive unless ``case_sensitive``. Result
    conditions (``failed``, ``exit_code``, ``result``) are checked once the call has run: live, a phase that
    uses them is decided when the result arrives. A match with ``message`` matches conversation turns
    instead of tool calls (and takes no tool condition)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tool: str | list[str] | None = Field(
        None,
        description="fnmatch glob(s) on the tool name, e.g. 'find_customer*' or [get_order, list_orders].",
    )
    tool_regex: str | None = Field(None, description="Regular expression the whole tool name must match.")
    action: str | list[str] | None = Field(
        None,
        description="Canonical action type(s) of the call: " + ", ".join(t.value for t in ActionType) + ".",
    )
    arguments: dict[str, str | ArgumentTest] = Field(
        default_factory=dict,
        description="Argument key -> regular expression searched in the argument's text, or "
        "{equals: value}, or {exists: true|false}.",
    )
    target: str | list[str] | None = Field(
        None, description="fnmatch glob(s) on the canonical action's path (else its target), e.g. 'src/*.py'."
    )
    failed: bool | None = Field(
        None, description="true: the call errored or exited non-zero; false: it did not."
    )
    exit_code: int | list[int] | None = Field(None, description="The call's exit code is (one of) this.")
    result: str | None = Field(
        None, description="Regular expression searched in the call's result text (case-insensitive)."
    )
    case_sensitive: bool = Field(False, description="Match 'result' case-sensitively.")
    message: MessageMatch | None = Field(
        None,
        description="Matches a conversation turn instead of a tool call: {role: user|assistant, text: REGEX, "
        "after_assistant: REGEX}. The phase is observed when the turn matches (e.g. the user's 'yes' after "
        "the agent listed the action); a turn counts as no step.",
    )

    @field_validator("result", mode="before")
    @classmethod
    def _result_text(cls, v: Any) -> Any:
        return _scalar_text(v)

    @model_validator(mode="after")
    def _message_alone(self) -> PhaseMatch:
        if self.message is not None:
            given = sorted(k for k in self.model_fields_set if k not in ("message", "case_sensitive"))
            if given:
                raise ValueError(
                    f"{', '.join(given)}: a 'message' match is about a conversation turn, not a tool call; "
                    "put tool conditions in another match of the list"
                )
        return self

    @field_validator("action")
    @classmethod
    def _known_action(cls, v: str | list[str] | None) -> str | list[str] | None:
        known = {t.value for t in ActionType}
        for name in _as_list(v):
            if name not in known:
                raise ValueError(
                    f"unknown action type {name!r}{did_you_mean(name, known)}; expected one of: "
                    f"{', '.join(sorted(known))}"
                )
        return v

    @field_validator("tool_regex", "result")
    @classmethod
    def _valid_regex(cls, v: str | None) -> str | None:
        return None if v is None else _regex(v)

    @field_validator("arguments", mode="before")
    @classmethod
    def _argument_texts(cls, v: Any) -> Any:
        if isinstance(v, dict):
            return {k: _scalar_text(t) for k, t in v.items()}
        return v

    @field_validator("arguments")
    @classmethod
    def _valid_argument_regexes(cls, v: dict[str, str | ArgumentTest]) -> dict[str, str | ArgumentTest]:
        for test in v.values():
            if isinstance(test, str):
                _regex(test)
        return v

    @property
    def uses_action(self) -> bool:
        """The match reads the canonical action (``action`` or ``target``)."""
        return self.action is not None or self.target is not None

    @property
    def uses_result(self) -> bool:
        """The match reads the call's result, known only after it ran."""
        return self.failed is not None or self.exit_code is not None or self.result is not None


class PlanPhase(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(
        description="Classifier role (or role prefix) this phase accepts, e.g. 'L_navigate'; in a plan that "
        "declares its phases, the phase's own id, e.g. 'identify'."
    )
    symbol: str = Field(description="Short symbol used in Langutory strings and letters, e.g. 'N'.")
    name: str = Field(description="Human name, e.g. 'Navigation'.")
    description: str = Field("", description="What the agent is told to do in this phase (reminder text).")
    scored: bool = Field(
        True, description="Whether compliance metrics expect this phase (the paper's scorer skips some)."
    )
    match: PhaseMatch | list[PhaseMatch] | None = Field(
        None,
        description="Declares the phase: the calls that belong to it (a list: any of them). A plan whose "
        "phases declare matches is classified by them instead of the coding rules.",
    )
    after: list[str] = Field(
        default_factory=list,
        description="The call belongs to this phase only once these phases have happened.",
    )
    before: list[str] = Field(
        default_factory=list,
        description="The call belongs to this phase only while none of these has happened.",
    )
    first_only: bool = Field(False, description="Only the phase's first call belongs to it.")
    verbs: list[str] = Field(
        default_factory=list,
        description="Places a tool no match of any phase places, by the verb its name begins with "
        "(refuel_data: 'refuel'; getDataUsage: 'get'), e.g. [get, find, search]. Matches win over verbs.",
    )

    @field_validator("verbs", mode="before")
    @classmethod
    def _verb_list(cls, v: Any) -> Any:
        return v.split() if isinstance(v, str) else v

    @field_validator("verbs")
    @classmethod
    def _lower_verbs(cls, v: list[str]) -> list[str]:
        return [w.lower() for w in v]

    @property
    def matches(self) -> tuple[PhaseMatch, ...]:
        """The phase's match alternatives (empty for a phase the classifier rules decide)."""
        m = self.match
        return () if m is None else (m,) if isinstance(m, PhaseMatch) else tuple(m)


class Plan(BaseModel):
    """An ordered plan. ``expected`` is the phase order compliance is scored against."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    phases: tuple[PlanPhase, ...] = ()
    description: str = ""

    @field_validator("phases")
    @classmethod
    def _unique_ids(cls, phases: tuple[PlanPhase, ...]) -> tuple[PlanPhase, ...]:
        seen: set[str] = set()
        for p in phases:
            if p.id in seen:
                raise ValueError(f"phase id {p.id!r} appears twice; each phase id must be unique")
            seen.add(p.id)
        declared = [p.match is not None for p in phases]
        if any(declared) and not all(declared):
            lacking = [f"phases.{i}" for i, d in enumerate(declared) if not d]
            raise ValueError(
                f"{', '.join(lacking)}: expected a 'match' (in a plan that declares its phases every phase "
                "declares which calls belong to it)"
            )
        for i, p in enumerate(phases):
            if p.match is not None and p.id == "general":
                raise ValueError(f"phases.{i}.id: 'general' names the calls of no phase; choose another id")
        if not any(declared):
            for i, p in enumerate(phases):
                for key in ("after", "before", "first_only", "verbs"):
                    if getattr(p, key):
                        raise ValueError(
                            f"phases.{i}.{key}: only a phase with a 'match' takes ordering conditions "
                            "and verbs"
                        )
        ids = ", ".join(p.id for p in phases)
        for i, p in enumerate(phases):
            for key in ("after", "before"):
                for j, ref in enumerate(getattr(p, key)):
                    if ref not in seen:
                        raise ValueError(
                            f"phases.{i}.{key}.{j}: unknown phase {ref!r}{did_you_mean(ref, seen)}; expected "
                            f"a phase id of this plan ({ids})"
                        )
        return phases

    @property
    def declarative(self) -> bool:
        """The plan declares its phases (each has a ``match``): it is classified by its own matchers."""
        return bool(self.phases) and all(p.match is not None for p in self.phases)

    @property
    def expected(self) -> tuple[str, ...]:
        return tuple(p.id for p in self.phases if p.scored)

    @property
    def scored(self) -> bool:
        """A plan with no expected phases (no plan at all) has no compliance score."""
        return bool(self.expected)

    def phase_for(self, role: str) -> PlanPhase | None:
        """The first plan phase that accepts ``role``, scored or not."""
        for p in self.phases:
            if phase_matches(role, p.id):
                return p
        return None

    def render(self) -> str:
        """The plan as the numbered list an agent is shown."""
        lines = [self.description] if self.description else []
        lines += [f"{i}. {p.name}: {p.description}".rstrip(": ") for i, p in enumerate(self.phases, 1)]
        return "\n".join(lines)


def _phase(
    id: str, symbol: str, name: str, description: str, match: list[PhaseMatch] | None = None, **kw: Any
) -> PlanPhase:
    if match is not None:  # (a declared phase)
        kw["match"] = match
    return PlanPhase(id=id, symbol=symbol, name=name, description=description, **kw)


# The coding plan's phases (the paper's prompts), accepted by the classifier's role prefixes.
_N = _phase(
    "L_navigate",
    "N",
    "Navigation",
    "Search for, open and read the files relevant to the issue to localise the bug.",
)
_R = _phase(
    "L_reproduce",
    "R",
    "Reproduction",
    "Write a new test script that reproduces the bug and run it to confirm it fails.",
)
_P = _phase("P", "P", "Patch", "Edit the source code to fix the bug.")
_V = _phase(
    "V_newly_generated_test",
    "V",
    "Validation",
    "Rerun your reproduction script and new edge-case tests to confirm the fix.",
)
_RG = _phase(
    "L_reproduce_regression_test",
    "R_G",
    "Regression tests (before)",
    "Run the project's existing tests relevant to the issue before changing anything.",
)
_RN = _R.model_copy(update={"id": "L_reproduce_newly_generated_test"})
_VG = _phase(
    "V_regression_test",
    "V_G",
    "Regression tests (after)",
    "Run the project's existing tests again to check the fix breaks nothing.",
)
_S = _phase(
    "S", "S", "Summary", "Summarise your changes in a PR-style description before submitting.", scored=False
)


def _coding_plan(name: str, *phases: PlanPhase) -> Plan:
    return Plan(name=name, phases=phases, description="Follow these phases in order:")


PRESETS: dict[str, Plan] = {
    "plan": _coding_plan("plan", _N, _R, _P, _V),
    "no_plan": Plan(name="no_plan"),
    "no_reproduce": _coding_plan("no_reproduce", _N, _P, _V),
    "no_validation": _coding_plan("no_validation", _N, _R, _P),
    "plan_and_regression": _coding_plan("plan_and_regression", _RG, _N, _RN, _P, _V, _VG),
    "plan_and_summary": _coding_plan("plan_and_summary", _N, _R, _P, _V, _S),
    # The paper tells the agent N-P-R-V but its scorer expects only N-P-V here (PHASE_RULES §5).
    "plan_reordered": _coding_plan("plan_reordered", _N, _P, _R.model_copy(update={"scored": False}), _V),
    "plan_reminded": _coding_plan("plan_reminded", _N, _R, _P, _V),
}
PRESETS["standard"] = PRESETS["plan"]
#: ``coding``: the standard plan of a coding agent (navigate → reproduce → patch → validate), classified by
#: the coding rules.
PRESETS["coding"] = PRESETS["plan"]


def _m(tool: str | None = None, **kw: Any) -> PhaseMatch:
    """A preset's match; ``tool`` lists its globs separated by spaces."""
    if tool is not None:
        kw["tool"] = tool.split()
    return PhaseMatch.model_validate(kw)


# Support agents (the tau-bench Retail and Airline worlds: find_user_id_by_email, get_order_details,
# cancel_pending_order, …; tau2-bench's telecom: get_customer_by_phone, refuel_data, …; and the usual
# find_customer / get_order / refund_order). The first phase whose match holds wins, so the more specific
# globs come first; a tool no glob places goes by the verb its name begins with (SUPPORT_VERBS). Confirmation
# usually happens in chat: the agent lists the action and asks, the user says yes.
#: ``support``'s placement of a tool its globs do not name, by the verb the name begins with (README table).
SUPPORT_VERBS: dict[str, tuple[str, ...]] = {
    "lookup": (
        "get",
        "find",
        "search",
        "list",
        "lookup",
        "check",
        "track",
        "show",
        "describe",
        "read",
        "fetch",
        "query",
        "view",
        "retrieve",
    ),
    "act": (
        "cancel",
        "modify",
        "update",
        "book",
        "create",
        "process",
        "refund",
        "refuel",
        "exchange",
        "return",
        "send",
        "apply",
        "change",
        "suspend",
        "resume",
        "enable",
        "disable",
        "add",
        "remove",
        "set",
        "reset",
        "issue",
        "pay",
        "upgrade",
        "downgrade",
        "reschedule",
        "activate",
        "deactivate",
    ),
}
#: The user's yes (``support``'s confirm phase).
CONFIRM_REPLY = (
    r"^\W*(yes|yeah|yep|yup|sure|ok|okay|correct|confirm(ed)?|go ahead|please do|please proceed|proceed|"
    r"that'?s (right|correct|fine)|absolutely|of course|definitely|do it)\b"
)
#: The agent's message asking for it names a consequential action and asks, in its last three sentences
#: (``after_assistant_sentences``): a yes to "To proceed with the cancellation I need its id. Can you find it?
#: If not, shall I look it up?" confirms nothing.
CONFIRM_REQUEST = (
    r"^(?=[\s\S]*\b(cancel|refund|modify|change|update|book|exchange|return|upgrade|downgrade|suspend|"
    r"resume|enable|disable|refuel|pay|send|apply|process|reschedule|activate|deactivate|remove|add)\w*)"
    r"(?=[\s\S]*(\b(confirm\w*|proceed|go ahead|shall i|should i|do you want me to|would you like me to)\b|"
    r"\(yes\)|\"yes\"|\byes\s*(/|or)\s*no\b))"
)
#: A question offering alternatives (read in the agent's last question): "which airport, ORD or MDW?",
#: "to the original payment or a travel certificate?", "either ...", "one of these?". An "or" that opens a
#: second question ("..., or would you like to keep it?") or closes a yes/no ("yes or no?", "or not?") offers
#: none; nor does a relative "which" ("EHGLP3, which was booked today?").
CHOICE_QUESTION = (
    r"\bwhich\b(?!\s+(is|was|are|were|has|have|had|will|would|includes?|costs?|means)\b)|\beither\b|"
    r"\bone of (these|those|them|the)\b|"
    r"\bor\s+(?!(would|do|does|did|should|shall|can|could|will|is|are|if|not|no|nothing|anything|something|"
    r"else|let|please|you|i|we|may|might|have|has|want|wish|need|just)\b)\w"
)
PRESETS["support"] = Plan(
    name="support",
    description="Follow these steps in order:",
    phases=(
        _phase(
            "identify",
            "I",
            "Identify the customer",
            "Find and authenticate the customer (by email, name and zip code, or account id).",
            [
                _m(
                    tool=(
                        "find_customer* find_user* lookup_customer* get_customer* get_user* search_customer* "
                        "search_user* identify* authenticate* verify_identity* verify_customer*"
                    )
                )
            ],
        ),
        _phase(
            "lookup",
            "L",
            "Look up the records",
            "Read the customer's orders, reservations or account records the request is about.",
            [
                _m(
                    tool=(
                        "get_*order* get_*reservation* get_*booking* get_*flight* get_*account* "
                        "get_*product* get_*ticket* get_*invoice* get_*record* get_*details* list_* search_* "
                        "lookup_* find_* read_* fetch_*"
                    )
                ),
                _m(action=["FILE_READ", "SEARCH", "FETCH"]),
            ],
            verbs=list(SUPPORT_VERBS["lookup"]),
        ),
        _phase(
            "confirm",
            "C",
            "Check policy and confirm",
            "Check the request against the policy, list the action and get the customer's explicit yes.",
            [
                _m(tool="confirm* check_policy* get_policy* ask_user* ask_customer* request_confirm*"),
                _m(
                    message={
                        "role": "user",
                        "text": CONFIRM_REPLY,
                        "after_assistant": CONFIRM_REQUEST,
                        "after_assistant_sentences": 3,
                        "not_after_question": CHOICE_QUESTION,
                    }
                ),
            ],
        ),
        _phase(
            "act",
            "A",
            "Act",
            "Carry out the confirmed change with the write tool.",
            [
                _m(
                    tool=(
                        "refund* cancel* modify_* update_* exchange_* return_* book_* create_* issue_* "
                        "change_* send_certificate*"
                    )
                ),
                _m(action="FILE_WRITE"),
            ],
            verbs=list(SUPPORT_VERBS["act"]),
        ),
        _phase(
            "wrap_up",
            "W",
            "Wrap up",
            "Tell the customer what was done, or hand over to a human agent.",
            [
                _m(
                    tool=(
                        "send_message* reply* respond* notify* close_ticket* end_conversation* "
                        "transfer_to_human* escalate* final_answer finish"
                    )
                )
            ],
        ),
    ),
)

# Research agents: web or document search, reading sources, writing, then citing / verifying. Reads and
# searches made once writing has begun count as verification.
PRESETS["research"] = Plan(
    name="research",
    description="Follow these steps in order:",
    phases=(
        _phase(
            "search",
            "S",
            "Search",
            "Search for sources on the question.",
            [
                _m(tool="*search* google* bing* tavily* arxiv* find_papers*"),
                _m(action="SEARCH"),
            ],
            before=["write"],
        ),
        _phase(
            "read",
            "R",
            "Read sources",
            "Open and read the most relevant sources.",
            [
                _m(tool="fetch* read* open* browse* get_page* scrape* download* visit*"),
                _m(action=["FETCH", "FILE_READ"]),
            ],
            before=["write"],
        ),
        _phase(
            "write",
            "W",
            "Write",
            "Write the answer or report from what the sources say.",
            [
                _m(tool="write* draft* edit* append* save* create_document* update_document*"),
                _m(action="FILE_WRITE"),
            ],
        ),
        _phase(
            "verify",
            "V",
            "Cite and verify",
            "Cite the sources and check each claim against them.",
            [
                _m(tool="cite* add_citation* verify* fact_check* check_* validate*"),
                _m(action=["SEARCH", "FETCH", "FILE_READ"]),
            ],
            after=["write"],
        ),
    ),
)

# Data-analysis agents: SQL or dataframe tools. A query that reads the catalogue (information_schema,
# DESCRIBE, PRAGMA, SHOW TABLES) explores the schema.
_SCHEMA_SQL = (
    r"(?i)information_schema|\bdescribe\b|\bpragma\b|\bshow\s+(tables|columns|schemas)\b|sqlite_master"
)
PRESETS["data-analysis"] = Plan(
    name="data-analysis",
    description="Follow these steps in order:",
    phases=(
        _phase(
            "explore",
            "E",
            "Explore the schema",
            "List the tables and columns and look at a few rows before querying.",
            [
                _m(
                    tool=(
                        "*schema* list_tables* list_columns* describe* show_tables* get_columns* "
                        "get_table_info* inspect* head* sql_db_list_tables sql_db_schema"
                    )
                ),
                _m(tool="*query* *sql*", arguments={"query": _SCHEMA_SQL}),
                _m(tool="*query* *sql*", arguments={"sql": _SCHEMA_SQL}),
            ],
        ),
        _phase(
            "query",
            "Q",
            "Query",
            "Query the data for the question asked.",
            [
                _m(tool="*query* *sql* run_code* execute* python* pandas* dataframe* aggregate*"),
            ],
        ),
        _phase(
            "check",
            "C",
            "Check the results",
            "Sanity-check the results (row counts, nulls, a second query or a plot) before reporting.",
            [_m(tool="check* validate* verify* assert* compare* plot* chart* visuali* sanity*")],
            after=["query"],
        ),
        _phase(
            "report",
            "P",
            "Report",
            "Report the answer with the numbers and how they were obtained.",
            [
                _m(tool="report* write_report* summar* final_answer submit* send* publish* save_report*"),
                _m(action="FILE_WRITE"),
            ],
        ),
    ),
)

#: The paper's seven scored settings, in the order its tables use.
SCORED_SETTINGS: tuple[str, ...] = (
    "plan",
    "no_reproduce",
    "no_validation",
    "plan_and_regression",
    "plan_and_summary",
    "plan_reordered",
    "plan_reminded",
)


def load_plan(path: str | Path) -> Plan:
    """Read a plan from a YAML, TOML or JSON file; errors name the file and the offending key."""
    p = Path(path)
    data: Any
    try:
        text = decode_utf8(p.read_bytes())
        if p.suffix == ".toml":
            data = check_depth(tomllib.loads(text))
        elif p.suffix == ".json":
            data = loads_json(text)
        else:
            data = loads_yaml(text, yaml12_booleans=True)  # aliases and deep nesting refused
    except DocumentError as exc:
        where = f"{p}:{exc.line}" if exc.line else str(p)
        raise ValueError(f"{where}: {exc.problem}") from None
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"{p}: not valid {p.suffix.lstrip('.') or 'YAML'}: {exc}") from None
    if isinstance(data, dict) and "plan" in data and isinstance(data["plan"], dict):
        data = data["plan"]
    if not isinstance(data, dict):
        raise ValueError(f"{p}: expected a mapping with 'name' and 'phases', got {type(data).__name__}")
    data.setdefault("name", p.stem)
    try:
        return Plan.model_validate(data)
    except ValidationError as exc:
        raise ValueError(f"{p}: {_describe(exc)}") from exc


def resolve_plan(spec: str) -> Plan:
    """A preset name or a plan file path."""
    if spec in PRESETS:
        return PRESETS[spec]
    if Path(spec).is_file():
        return load_plan(spec)
    raise ValueError(
        f"unknown plan {spec!r}{did_you_mean(spec, PRESETS)}: expected a preset "
        f"({', '.join(sorted(PRESETS))}) or a plan file"
    )


def _describe(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(x) for x in e['loc']) or '<root>'}: {e['msg']}" for e in exc.errors())
