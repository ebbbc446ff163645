"""The one factory of phase classifiers: the live rules, the paper's two versions, or a declared plan's
matchers.

:func:`get_rules` names the coding rules (shared instances: rules hold no session state, only bounded
caches); :func:`rules_for` is the one place that chooses between a declared plan's matchers
(:class:`planguard.phases.declarative.DeclarativeRules`) and the coding rules, and binds them to the
pipeline's canonical-action classifier.
"""

from __future__ import annotations

from planguard.actions.classify import ActionClassifier
from planguard.phases.base import PhaseClassifier
from planguard.phases.declarative import DeclarativeRules
from planguard.phases.live import LiveRules
from planguard.phases.paper import PAPER_VERSION, PaperRules
from planguard.plan import Plan

__all__ = [
    "DEFAULT_VERSION",
    "LIVE",
    "RULE_ALIASES",
    "RULE_VERSIONS",
    "get_rules",
    "rules_for",
]

LIVE = "live"
#: The rules a session uses unless told otherwise: the live rules.
DEFAULT_VERSION = LIVE
RULE_VERSIONS: tuple[str, ...] = (LIVE, PAPER_VERSION, "v8ec988e", "corrected")
#: Former names: ``corrected`` (the paper's rules with its quirks fixed) is now the live rules.
RULE_ALIASES = {"corrected": LIVE}

_INSTANCES: dict[str, PhaseClassifier] = {}


def get_rules(name: str = DEFAULT_VERSION) -> PhaseClassifier:
    """The rules named ``live`` (default: PHASES_LIVE.md), ``v351278e`` (the paper's newest) or ``v8ec988e``
    (the paper's artifacts); ``corrected`` is an alias of ``live``.

    Instances are shared: rules hold no session state, only bounded caches of parsed actions.
    """
    if name not in RULE_VERSIONS:
        raise ValueError(f"unknown phase rules {name!r}; valid choices: {', '.join(RULE_VERSIONS)}")
    name = RULE_ALIASES.get(name, name)
    rules = _INSTANCES.get(name)
    if rules is None:
        rules = LiveRules() if name == LIVE else PaperRules(name)
        _INSTANCES[name] = rules
    return rules


def rules_for(
    plan: Plan, rules: str | None = None, actions: ActionClassifier | None = None
) -> PhaseClassifier:
    """The classifier for following ``plan``: its own matchers when it declares its phases, else the coding
    rules named ``rules`` (default: the live rules). ``actions`` is the pipeline's canonical-action
    classifier: its vocabulary (built-in tool rules plus the user's ``actions.rules``) is what declared
    ``action``/``target`` conditions, the live rules and the paper's rules read, so one mapping serves
    actions and phases."""
    if plan.declarative:
        return DeclarativeRules(plan, actions)
    chosen = get_rules(rules) if rules is not None else get_rules()
    if actions is None or actions is getattr(chosen, "actions", None):
        return chosen
    if isinstance(chosen, LiveRules):
        return LiveRules(actions)
    if isinstance(chosen, PaperRules):
        return PaperRules(chosen.name, actions)
    return chosen
