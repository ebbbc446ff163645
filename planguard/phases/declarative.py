"""Plan phases declared in the plan itself: a phase classifier for agents that are not coding agents.

A plan whose phases carry a ``match`` (see :class:`planguard.plan.PhaseMatch`) is classified by its own
matchers instead of the coding rules::

    plan:
      name: refund-flow
      phases:
        - {id: identify, symbol: I, name: Identify the customer, match: {tool: "find_customer*"}}
        - {id: act, symbol: A, name: Act, match: {tool: refund_order, arguments: {order_id: ".+"}}}

Each call gets the role of the first phase, in plan order, whose match holds and whose ordering conditions
(``after``, ``before``, ``first_only``) hold against the phases the session has already seen; a call that
matches no phase is ``general``. The role is the phase id, so the rest of the pipeline (Langutory,
compliance, reminders, violations, gates) treats a declared plan exactly as it treats the coding plan; the
letter of a role is the phase's ``symbol``.

Conditions on the canonical action (``action``, ``target``) read the one tool vocabulary
(:mod:`planguard.actions`, with the user's ``actions.rules``); there is no tool table here.

A match with ``message`` is about conversation turns (:class:`~planguard.events.MessageEvent`), which the
session hands to :meth:`DeclarativeRules.observe_message`: a turn that matches gives its phase, with the
same ordering conditions, but is no step. ``after_assistant`` reads the assistant's last message before the
turn; what the state keeps of it is which matchers it satisfied, never its text.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from planguard.actions.types import Action
from planguard.documents import loads_json
from planguard.events import ASSISTANT, MESSAGE_ROLES, RECORDED_KEY, MessageEvent, ToolEvent
from planguard.phases.base import GENERAL, Classification, Command
from planguard.plan import ArgumentTest, MessageMatch, PhaseMatch, Plan

__all__ = ["MESSAGE_LABEL", "DeclarativeRules", "DeclarativeState", "recorded_turn", "tool_verb"]

#: Longest result or argument text a regex is searched in (a tool may take or return megabytes).
MAX_RESULT_TEXT = 65_536


def _globs(v: str | list[str] | None) -> re.Pattern[str] | None:
    if v is None:
        return None
    items = [v] if isinstance(v, str) else v
    return re.compile("|".join(f"(?:{fnmatch.translate(g)})" for g in items) or r"(?!)")


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


class _Matcher:
    """One compiled :class:`PhaseMatch`."""

    __slots__ = ("actions", "arguments", "exit_codes", "failed", "result", "target", "tool", "tool_regex")

    def __init__(self, m: PhaseMatch) -> None:
        self.tool = _globs(m.tool)
        self.tool_regex = re.compile(m.tool_regex) if m.tool_regex is not None else None
        self.actions = frozenset([m.action] if isinstance(m.action, str) else m.action or ())
        self.arguments: tuple[tuple[str, re.Pattern[str] | ArgumentTest], ...] = tuple(
            (k, re.compile(t) if isinstance(t, str) else t) for k, t in m.arguments.items()
        )
        self.target = _globs(m.target)
        self.failed = m.failed
        self.exit_codes = (
            None
            if m.exit_code is None
            else frozenset([m.exit_code] if isinstance(m.exit_code, int) else m.exit_code)
        )
        self.result = re.compile(m.result, _flags(m.case_sensitive)) if m.result is not None else None

    def matches(self, event: ToolEvent, action: Callable[[], Action | None]) -> bool:
        tool = event.tool or ""
        if self.tool is not None and not self.tool.fullmatch(tool):
            return False
        if self.tool_regex is not None and not self.tool_regex.fullmatch(tool):
            return False
        if self.arguments and not self._arguments_match(event.arguments):
            return False
        if self.actions or self.target is not None:
            a = action()
            if a is None:
                return False
            if self.actions and a.type.value not in self.actions:
                return False
            if self.target is not None:
                where = a.path or a.target
                if where is None or not self.target.fullmatch(where):
                    return False
        if self.failed is not None and event.failed != self.failed:
            return False
        if self.exit_codes is not None and event.exit_code not in self.exit_codes:
            return False
        return self.result is None or (
            event.result is not None and self.result.search(event.result[:MAX_RESULT_TEXT]) is not None
        )

    def _arguments_match(self, arguments: Mapping[str, Any] | str) -> bool:
        args = _parsed(arguments)
        for key, test in self.arguments:
            present = key in args
            if isinstance(test, ArgumentTest):
                if test.exists is not None:
                    if present != test.exists:
                        return False
                elif not present or args[key] != test.equals:
                    return False
            elif not present or args[key] is None or test.search(_text(args[key])[:MAX_RESULT_TEXT]) is None:
                return False
        return True


_WORDS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]+(?![a-z])|[A-Za-z][a-z]*")


def tool_verb(tool: str) -> str:
    """The verb a tool's name begins with, lower-cased: ``refuel_data`` -> ``refuel``, ``getDataUsage`` ->
    ``get``; a namespace (``mcp__shop__get_order``, ``shop.get_order``) is skipped."""
    name = re.split(r"__|\.|/", tool)[-1] if tool else ""
    first = _WORDS.search(name)
    return first.group(0).lower() if first is not None else ""


_SENTENCE_END = re.compile(r"(?<=[.?!])\s+|\n+")


def last_sentences(text: str, n: int) -> str:
    """The last ``n`` sentences of ``text`` (split after ``.``, ``?``, ``!`` and at line breaks)."""
    parts = [p for p in _SENTENCE_END.split(text) if p.strip()]
    return " ".join(parts[-n:])


def last_question(text: str) -> str | None:
    """The last sentence of ``text`` that ends with a question mark (sentences as :func:`last_sentences`)."""
    for part in reversed(_SENTENCE_END.split(text)):
        if part.rstrip().endswith("?"):
            return part
    return None


def _flags(case_sensitive: bool) -> int:
    return 0 if case_sensitive else re.IGNORECASE


class _MessageMatcher:
    """One compiled :class:`MessageMatch`; ``key`` numbers it among the plan's message matchers (what the
    state remembers the assistant's last message satisfied)."""

    __slots__ = ("after_assistant", "choice", "key", "role", "tail", "text")

    def __init__(self, m: MessageMatch, key: int) -> None:
        flags = _flags(m.case_sensitive)
        self.key = key
        self.tail = m.after_assistant_sentences
        self.role = m.role
        self.text = re.compile(m.text, flags) if m.text is not None else None
        self.after_assistant = re.compile(m.after_assistant, flags) if m.after_assistant is not None else None
        self.choice = re.compile(m.not_after_question, flags) if m.not_after_question is not None else None

    def asked_by(self, text: str) -> bool:
        """Whether an assistant message satisfies ``after_assistant`` (in its last ``tail`` sentences), and
        its last question offers no alternatives ``not_after_question`` names."""
        if self.after_assistant is None:
            return False
        if self.after_assistant.search(last_sentences(text, self.tail) if self.tail else text) is None:
            return False
        if self.choice is None:
            return True
        question = last_question(text)
        return question is None or self.choice.search(question) is None

    def matches(self, role: str, text: str, assistant_hits: frozenset[int]) -> bool:
        if self.after_assistant is not None and (role == ASSISTANT or self.key not in assistant_hits):
            return False
        if self.role is not None and role != self.role:
            return False
        return self.text is None or self.text.search(text) is not None


def _parsed(arguments: Mapping[str, Any] | str) -> Mapping[str, Any]:
    """The argument object; a raw argument string is read as JSON when it is a JSON object."""
    if not isinstance(arguments, str):
        return arguments
    try:
        value = loads_json(arguments)  # the model's text: the document reader's depth limit applies
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


@dataclass(slots=True)
class DeclarativeState:
    """The phases a session has seen (at most the plan's phases): what ordering conditions read."""

    seen: set[str] = field(default_factory=set)
    #: The message matchers whose ``after_assistant`` the assistant's last message satisfied (their keys):
    #: the match, not the text.
    assistant_hits: frozenset[int] = frozenset()
    #: The run's working directory, which the session sets on every phase state (declared matchers
    #: compare tool names and arguments as given, so they do not read it).
    root: str | None = None

    def apply(self, c: Classification) -> None:
        """Commit the phase of a classified call that has run."""
        self.seen.update(c.roles)


class _Phase:
    __slots__ = ("after", "before", "first_only", "id", "matchers", "messages", "verbs")

    def __init__(
        self,
        id: str,
        matchers: tuple[_Matcher, ...],
        messages: tuple[_MessageMatcher, ...],
        after: list[str],
        before: list[str],
        first: bool,
        verbs: list[str],
    ):
        self.id = id
        self.verbs = frozenset(verbs)
        self.matchers = matchers
        self.messages = messages
        self.after = tuple(after)
        self.before = tuple(before)
        self.first_only = first

    def admits(self, seen: set[str]) -> bool:
        if self.first_only and self.id in seen:
            return False
        if any(p not in seen for p in self.after):
            return False
        return not any(p in seen for p in self.before)


class DeclarativeRules:
    """The phase classifier a declared plan defines. Stateless itself: a session's facts are in its
    :class:`DeclarativeState`. Same interface as :class:`planguard.phases.PhaseRules`."""

    name = "declarative"

    def __init__(self, plan: Plan, actions: Callable[[ToolEvent], Any] | None = None) -> None:
        if not plan.declarative:
            raise ValueError(f"plan {plan.name!r} declares no phase matches")
        self.plan = plan
        keys = iter(range(1 << 30))
        self._phases = tuple(
            _Phase(
                p.id,
                tuple(_Matcher(m) for m in p.matches if m.message is None),
                tuple(_MessageMatcher(m.message, next(keys)) for m in p.matches if m.message is not None),
                p.after,
                p.before,
                p.first_only,
                p.verbs,
            )
            for p in plan.phases
        )
        self._by_verb = any(p.verbs for p in plan.phases)
        self._after_assistant = tuple(
            m for ph in self._phases for m in ph.messages if m.after_assistant is not None
        )
        #: Some phase matches conversation turns: integrations hand the session the conversation.
        self.matches_messages = any(ph.messages for ph in self._phases)
        uses_action = any(m.uses_action for p in plan.phases for m in p.matches)
        if uses_action and actions is None:
            from planguard.actions import classify_action

            actions = classify_action
        self._actions = actions
        #: Role -> letter: a declared phase's letter is its symbol.
        self.letter_of: dict[str, str] = {p.id: p.symbol for p in plan.phases}
        #: Some phase reads the call's result, so a live call's phase is decided once the result is known.
        self.needs_result = any(m.uses_result for p in plan.phases for m in p.matches)

    def new_state(self) -> DeclarativeState:
        return DeclarativeState()

    def classify(self, event: ToolEvent, state: DeclarativeState) -> Classification:
        """The call's phase (one role, or general). Never mutates ``state`` and never raises."""
        label = event.tool if isinstance(event.tool, str) and event.tool else "unknown"
        try:
            action = _Lazy(self._actions, event)
            for phase in self._phases:
                if phase.admits(state.seen) and any(m.matches(event, action) for m in phase.matchers):
                    return Classification(commands=(Command(label, phase.id),))
            if self._by_verb:  # no match placed the call: the verb its tool's name begins with may
                verb = tool_verb(label)
                for phase in self._phases:
                    if verb in phase.verbs and phase.admits(state.seen):
                        return Classification(commands=(Command(label, phase.id),))
        except Exception:  # a bad argument shape or a failing vocabulary: the call is general (fail open)
            pass
        return Classification(commands=(Command(label, GENERAL),))

    def observe_message(self, message: MessageEvent, state: DeclarativeState) -> Classification | None:
        """The phase a conversation turn shows (None: none). Remembers in ``state`` which ``after_assistant``
        conditions an assistant message satisfied (for the user's reply); the phase itself is committed by
        the session, as a call's is. Never raises."""
        try:
            role = MESSAGE_ROLES.get(message.role.lower(), message.role)
            recorded = message.metadata.get(RECORDED_KEY) if message.metadata else None
            if isinstance(recorded, Mapping):
                return _recorded_turn(role, recorded, state)
            text = message.text[:MAX_RESULT_TEXT] if isinstance(message.text, str) else ""
            hits = state.assistant_hits
            found = None
            for phase in self._phases:
                if (
                    phase.messages
                    and phase.admits(state.seen)
                    and any(m.matches(role, text, hits) for m in phase.messages)
                ):
                    found = Classification(commands=(Command(MESSAGE_LABEL, phase.id),))
                    break
            if role == ASSISTANT and self._after_assistant:
                state.assistant_hits = frozenset(m.key for m in self._after_assistant if m.asked_by(text))
            return found
        except Exception:  # an odd message: no phase (fail open)
            return None


#: The label of a conversation turn's command in a classification (a turn is no tool call).
MESSAGE_LABEL = "message"


def _recorded_turn(role: str, recorded: Mapping[str, Any], state: DeclarativeState) -> Classification | None:
    """A turn read elsewhere (another proxy replica), whose match travels instead of its text: its
    phase, and for the assistant's message which ``after_assistant`` conditions it satisfied."""
    if role == ASSISTANT:
        state.assistant_hits = frozenset(int(k) for k in recorded.get("hits") or ())
    commands = tuple(Command(str(label), str(r)) for label, r in recorded.get("commands") or ())
    return Classification(commands=commands) if commands else None


def recorded_turn(classification: Classification | None, state: object) -> dict[str, Any]:
    """What :meth:`DeclarativeRules.observe_message` takes back (``RECORDED_KEY``) for a turn it has
    just read: the phase it showed and the ``after_assistant`` conditions it satisfied, never its text."""
    commands = [[c.label, c.role] for c in classification.commands] if classification else []
    return {"commands": commands, "hits": sorted(getattr(state, "assistant_hits", ()))}


class _Lazy:
    """The call's canonical action, computed on first use (only phases that read it need it)."""

    __slots__ = ("_actions", "_event", "_value", "_done")

    def __init__(self, actions: Callable[[ToolEvent], Any] | None, event: ToolEvent) -> None:
        self._actions = actions
        self._event = event
        self._value: Action | None = None
        self._done = False

    def __call__(self) -> Action | None:
        if not self._done:
            self._done = True
            if self._actions is not None:
                value = self._actions(self._event)
                self._value = value if isinstance(value, Action) else None
        return self._value
