"""Plan phases of coding-agent tool calls: the plan-compliance paper's classifier, live.

Every tool call is mapped to the roles of its sub-commands (navigate, reproduce, patch, validate,
or general) by the rules of "From Plan to Action" (Liu et al., 2026), reproduced exactly for both
published versions of its classifier, plus a ``corrected`` variant that fixes its known quirks::

    rules = get_rules()              # "v351278e" (default), "v8ec988e" or "corrected"
    state = rules.new_state()        # one per session
    c = rules.classify(event, state) # pure: a policy may still deny the call
    state.apply(c)                   # once the call has run
    c.roles, c.letters
"""

from planguard.phases.roles import (
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
)
from planguard.phases.rules import (
    DEFAULT_VERSION,
    RULE_VERSIONS,
    CorrectedRules,
    PaperRules,
    PhaseRules,
    get_rules,
    is_test_path_corrected,
    is_test_path_paper,
)
from planguard.phases.state import MAX_CREATED_TESTS, MAX_NODES, PhaseState

__all__ = [
    "DEFAULT_VERSION",
    "GENERAL",
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
    "CorrectedRules",
    "PaperRules",
    "PhaseRules",
    "PhaseState",
    "get_rules",
    "is_test_path_corrected",
    "is_test_path_paper",
]
