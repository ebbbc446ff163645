"""What the pipeline needs of a phase classifier, whichever one a config picks.

The coding rules (:class:`planguard.phases.PhaseRules`) and a declared plan's matchers
(:class:`planguard.phases.declarative.DeclarativeRules`) both satisfy :class:`PhaseClassifier`;
:func:`rules_for` is the one place that chooses between them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from planguard.events import ToolEvent
from planguard.phases.roles import LETTER_OF, Classification
from planguard.plan import Plan

if TYPE_CHECKING:
    from planguard.actions.vocabulary import ActionClassifier

__all__ = ["PhaseClassifier", "letter_map", "rules_for"]


class PhaseClassifier(Protocol):
    """Classifies tool calls into plan-phase roles; all per-session facts live in the state it makes."""

    name: str

    def new_state(self) -> Any: ...

    def classify(self, event: ToolEvent, state: Any, /) -> Classification: ...


def letter_map(rules: PhaseClassifier) -> Mapping[str, str]:
    """Role -> Langutory letter under ``rules``: a declared plan's symbols, else the coding letters."""
    letters: Mapping[str, str] = getattr(rules, "letter_of", LETTER_OF)
    return letters


def rules_for(
    plan: Plan, rules: str | None = None, actions: ActionClassifier | None = None
) -> PhaseClassifier:
    """The classifier for following ``plan``: its own matchers when it declares its phases, else the coding
    rules named ``rules`` (default: the live rules). ``actions`` is the pipeline's canonical-action
    classifier: its vocabulary (built-in tool rules plus the user's ``actions.rules``) is what declared
    ``action``/``target`` conditions, the live rules and the paper's rules read, so one mapping serves
    actions and phases."""
    from planguard.phases.live import LiveRules
    from planguard.phases.paper import PaperRules, get_rules

    if plan.declarative:
        from planguard.phases.declarative import DeclarativeRules

        return DeclarativeRules(plan, actions)
    chosen = get_rules(rules) if rules is not None else get_rules()
    if actions is None or actions is getattr(chosen, "actions", None):
        return chosen
    if isinstance(chosen, LiveRules):
        return LiveRules(actions)
    if isinstance(chosen, PaperRules):
        return PaperRules(chosen.name, actions)
    return chosen
