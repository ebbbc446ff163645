"""Plan phases of coding-agent tool calls.

Every tool call is mapped to the roles of its sub-commands (navigate, reproduce, patch, validate,
or general). The default ``live`` rules follow PHASES_LIVE.md: any scaffold, any language, tools read
through the canonical-action vocabulary. The rules of "From Plan to Action" (Liu et al., 2026) are
reproduced exactly for both published versions of its classifier (``corrected`` is an alias of ``live``)::

    rules = get_rules()              # "live" (default), "v351278e", "v8ec988e"
    state = rules.new_state()        # one per session
    c = rules.classify(event, state) # pure: a policy may still deny the call
    state.apply(c)                   # once the call has run
    c.roles, c.letters
"""

from planguard.phases.base import (
    GENERAL,
    LETTER_OF,
    NAVIGATE,
    PATCH,
    PHASE_ROLES,
    REPRODUCE_NEW,
    REPRODUCE_REGRESSION,
    ROLE_OF_LETTER,
    VALIDATE_NEW,
    VALIDATE_REGRESSION,
    Classification,
    Command,
    PhaseClassifier,
)
from planguard.phases.live import LiveRules, is_test_target
from planguard.phases.paper import PAPER_VERSION, PaperRules, PhaseRules, is_test_path_paper
from planguard.phases.registry import DEFAULT_VERSION, LIVE, RULE_ALIASES, RULE_VERSIONS, get_rules
from planguard.phases.state import MAX_CREATED_TESTS, MAX_NODES, PhaseState

__all__ = [
    "DEFAULT_VERSION",
    "GENERAL",
    "LIVE",
    "PAPER_VERSION",
    "RULE_ALIASES",
    "LiveRules",
    "PhaseClassifier",
    "is_test_target",
    "LETTER_OF",
    "MAX_CREATED_TESTS",
    "MAX_NODES",
    "NAVIGATE",
    "PATCH",
    "PHASE_ROLES",
    "REPRODUCE_NEW",
    "REPRODUCE_REGRESSION",
    "ROLE_OF_LETTER",
    "RULE_VERSIONS",
    "VALIDATE_NEW",
    "VALIDATE_REGRESSION",
    "Classification",
    "Command",
    "PaperRules",
    "PhaseRules",
    "PhaseState",
    "get_rules",
    "is_test_path_paper",
]
