"""Hypothesis: classification never raises, whatever the tool names, arguments and shell text."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planguard.actions import DEFAULT_CLASSIFIER, Action, ActionType, PathNormaliser, classify_action
from planguard.actions.effects import outcome_failed
from planguard.actions.shell import ShellClassifier, _tokenize_general, tokenize
from planguard.actions.vocabulary import BUILTIN_RULES
from planguard.events import ToolEvent

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
    action = DEFAULT_CLASSIFIER._classify(event)  # the unguarded path: a bug must surface here
    assert isinstance(action, Action) and isinstance(action.type, ActionType)
    assert action.target is None or isinstance(action.target, str)
    assert isinstance(outcome_failed(action, event), bool)
    hash(action)


@FUZZ
@given(shellish | st.text(max_size=120))
def test_shell_text_never_raises(line: str) -> None:
    tokenize(line)
    c = ShellClassifier(PathNormaliser())
    v = c._classify(line, None, 0)
    assert isinstance(v.type, ActionType)
    assert classify_action(ToolEvent.shell(line)) is not None
    assert c.swe_command(line) is None or isinstance(c.swe_command(line).type, ActionType)  # type: ignore[union-attr]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60), st.one_of(st.none(), st.text(max_size=20)))
def test_paths_never_raise(raw: str, cwd: Any) -> None:
    out = PathNormaliser()(raw, cwd)
    assert isinstance(out, str)


def _shape(segments: list[Any]) -> list[list[tuple[list[str], list[str], bool]]]:
    return [[(st.words, st.outputs, st.appends) for st in pipe] for pipe in segments]


@FUZZ
@given(shellish | st.text(alphabet="ab c'\"\\|&;<>2()$\n\x1f", max_size=40))
def test_fast_tokenizers_agree_with_the_general_one(line: str) -> None:
    """The shortcut tokenizers are an optimisation only: same segments, words and redirections."""
    assert _shape(tokenize(line)) == _shape(_tokenize_general(line))
