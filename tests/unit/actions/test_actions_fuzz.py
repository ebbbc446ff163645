"""Hypothesis: classification never raises, whatever the tool names, arguments and shell text."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planguard.actions import (
    DEFAULT_CLASSIFIER,
    SURFACES,
    Action,
    ActionClassifier,
    ActionType,
    PathNormaliser,
    classify_action,
)
from planguard.actions.classify import ShellClassifier
from planguard.actions.config import ActionsConfig, build_classifier
from planguard.actions.effects import outcome_failed
from planguard.events import ToolEvent
from planguard.shell.lexer import tokenize
from planguard.tools.vocabulary import BUILTIN_RULES, ActionVocabulary, MappingRule, _parsed_arguments

TOOLS = sorted({r.tool for r in BUILTIN_RULES if not r.tool.startswith("re:")} | {"", "bash", "weird tool"})
KEYS = [
    "command",
    "path",
    "file_path",
    "old_str",
    "new_str",
    "file_text",
    "old_string",
    "new_string",
    "edits",
    "pattern",
    "query",
    "url",
    "todos",
    "thought",
    "message",
    "content",
    "is_input",
    "view_range",
    "code",
    "subagent_type",
    "text",
    "search",
    "replace",
    "filename",
    "input",
]
SHELL_BITS = [
    "cat",
    "grep",
    "-rn",
    "sed",
    "-i",
    "-n",
    "'s/a/b/'",
    "find",
    ".",
    "-name",
    "*.py",
    "-exec",
    "{}",
    "\\;",
    "|",
    "||",
    "&&",
    ";",
    ">",
    ">>",
    "2>&1",
    "<<",
    "EOF",
    "\n",
    "'",
    '"',
    "cd",
    "/testbed",
    "python",
    "-c",
    "-m",
    "pytest",
    "echo",
    "tee",
    "bash",
    "xargs",
    "$(",
    ")",
    "(",
    "`",
    "git",
    "checkout",
    "--",
    "str_replace_editor",
    "view",
    "create",
    "--file_text",
    "--old_str",
    "open",
    "edit",
    "submit",
    "end_of_edit",
    "for",
    "do",
    "done",
    "if",
    "then",
    "fi",
    "timeout",
    "sudo",
    "env",
    "A=1",
    "\\",
]

json_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=30)
)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
shellish = st.lists(st.sampled_from(SHELL_BITS) | st.text(max_size=12), max_size=25).map(" ".join)
arguments = st.one_of(
    st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=10), json_value | shellish, max_size=6),
    st.text(max_size=60),
    shellish,
)


@st.composite
def events(draw: st.DrawFn) -> ToolEvent:
    tool = draw(st.sampled_from(TOOLS) | st.text(max_size=20))
    return ToolEvent(
        tool=tool,
        arguments=draw(arguments),
        action=draw(st.none() | shellish | st.text(max_size=40)),
        result=draw(
            st.none()
            | st.text(max_size=200)
            | st.sampled_from(
                [
                    "Traceback (most recent call last):",
                    "No replacement was performed",
                    "1 failed, 2 passed in 1s",
                ]
            )
        ),
        is_error=draw(st.booleans()),
        exit_code=draw(st.none() | st.integers(-5, 300)),
        metadata=draw(st.sampled_from([{}, {"open_file": "/testbed/a.py"}, {"open_file": 3}])),
    )


FUZZ = settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(events())
def test_classification_never_raises(event: ToolEvent) -> None:
    # the unguarded path (what __call__ and read() wrap): a bug must surface here
    parsed = _parsed_arguments(event)
    rule = DEFAULT_CLASSIFIER.rule_for(parsed.tool)
    action = DEFAULT_CLASSIFIER._classify(parsed, rule)
    call = DEFAULT_CLASSIFIER._tool_call(parsed, rule)  # and the call the phase rules read
    assert call.content is None or isinstance(call.content, str)
    assert isinstance(action, Action) and isinstance(action.type, ActionType)
    assert action.target is None or isinstance(action.target, str)
    assert isinstance(outcome_failed(action, event), bool)
    hash(action)


@FUZZ
@given(shellish | st.text(max_size=120))
def test_shell_text_never_raises(line: str) -> None:
    tokenize(line)
    c = ShellClassifier(PathNormaliser())
    v = c.classify(line)
    assert isinstance(v.type, ActionType)
    assert classify_action(ToolEvent.shell(line)) is not None
    assert c.swe_command(line) is None or isinstance(c.swe_command(line).type, ActionType)  # type: ignore[union-attr]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60), st.one_of(st.none(), st.text(max_size=20)))
def test_paths_never_raise(raw: str, cwd: Any) -> None:
    out = PathNormaliser()(raw, cwd)
    assert isinstance(out, str)


# --------------------------------------------------------------------------- regexes and memos


MEMO_EVENTS = [
    ToolEvent(tool="str_replace_editor", arguments={"command": "view", "path": "/testbed/pkg/a.py"}),
    ToolEvent(tool="str_replace_editor", arguments={"command": "view", "path": "/testbed/pkg"}),
    ToolEvent(tool="file_editor", arguments={"command": "view", "path": "/testbed/pkg/a.py"}),
    ToolEvent(tool="str_replace_editor", arguments={"command": "create", "path": "/testbed/pkg/a.py"}),
    ToolEvent.shell("str_replace_editor view /testbed/pkg/a.py  --view_range 1 5"),
    ToolEvent.shell("str_replace_editor view '/testbed/pkg/a.py'"),
    ToolEvent.shell("str_replace_editor str_replace /testbed/pkg/a.py --old_str 'a' --new_str 'b'"),
    ToolEvent.shell("cd /testbed && python reproduce.py"),
    ToolEvent.shell("cat pkg/a.py"),
    ToolEvent(tool="execute_bash", arguments={"command": "cat pkg/a.py"}),
    ToolEvent(tool="Bash", arguments={"command": "cat pkg/a.py", "description": "x"}),
    ToolEvent(
        tool="bash", arguments={"command": "edit 1:2\nx\nend_of_edit"}, metadata={"open_file": "/t/a.py"}
    ),
    ToolEvent(
        tool="bash", arguments={"command": "edit 1:2\nx\nend_of_edit"}, metadata={"open_file": "/t/b.py"}
    ),
    ToolEvent(tool="bash", arguments={"command": "cat pkg/a.py", "is_input": True}),
]


@FUZZ
@given(
    st.lists(events() | st.sampled_from(MEMO_EVENTS), min_size=1, max_size=16),
    st.sampled_from([None, *SURFACES]),
)
def test_memoised_actions_are_the_computed_ones(seq: list[ToolEvent], scaffold: str | None) -> None:
    """The action classifier's one memo (shell verdicts per line) never changes an action: one classifier
    used for a whole sequence, twice over, makes what a fresh one makes of each call, texts included,
    whatever the tool, scaffold or open file."""
    memo = build_classifier(ActionsConfig(scaffold=scaffold))
    for event in seq + seq:
        a, b = memo(event), ActionClassifier(memo.vocabulary)(event)
        assert a == b
        assert (a.old_text, a.new_text, a.text) == (b.old_text, b.new_text, b.text)


USER_RULES = [
    MappingRule(tool="Read", kind="search"),
    MappingRule(tool="my_*", kind="read"),
    MappingRule(tool="re:(?i)bash", kind="command"),
    MappingRule(tool="ba?h", kind="navigate"),
    MappingRule(tool="[Rr]ead", kind="write"),
    MappingRule(tool="edit", kind="plan"),
]


@FUZZ
@given(
    st.lists(st.sampled_from(USER_RULES), max_size=4),
    st.sampled_from(TOOLS)
    | st.sampled_from(["my_tool", "BASH", "bah", "read", "x_search_y"])
    | st.text(max_size=12),
)
def test_rule_lookup_is_the_first_match(user: list[MappingRule], tool: str) -> None:
    vocabulary = ActionVocabulary().extend(user)
    first = next((rule for rule in vocabulary.rules if rule.matches(tool)), None)
    assert vocabulary.rule_for(tool) is first
