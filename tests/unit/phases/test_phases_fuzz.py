"""Property tests: classification never raises and never mutates the state it is given."""

from __future__ import annotations

import copy
import shlex
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planguard.events import ToolEvent
from planguard.phases import (
    GENERAL,
    PHASE_ROLES,
    RULE_VERSIONS,
    Classification,
    LiveRules,
    PaperRules,
    PhaseRules,
    PhaseState,
    get_rules,
)
from planguard.phases import rules as rules_module
from planguard.phases.inline_python import written_files
from planguard.phases.rules import _resolve
from planguard.phases.scaffolds import THINK, paper_commands
from planguard.phases.shell import parse_action, scan, split_words

PAPER_VERSIONS = ("v351278e", "v8ec988e")

SHELL_BITS = [
    "ls",
    "cd /testbed",
    "python",
    "python3",
    "pytest",
    "grep",
    "sed",
    "perl",
    "touch",
    "cat",
    "echo",
    "str_replace_editor",
    "view",
    "create",
    "str_replace",
    "/testbed/tests/test_x.py",
    "reproduce.py",
    "-c",
    "-m",
    "-n",
    "-i",
    "-lc",
    "--file_text",
    "--old_str",
    "-",
    "&&",
    "||",
    ";",
    "&",
    "|",
    "|&",
    "\n",
    ">",
    ">>",
    "2>",
    "2>&1",
    ">&2",
    "&>",
    "<",
    "<<",
    "<<-",
    "<<<",
    "'EOF'",
    "EOF",
    "PY",
    "(",
    ")",
    "{",
    "}",
    "((",
    "))",
    "$(",
    "`",
    "${x}",
    "$((1))",
    "'",
    '"',
    "\\",
    "#",
    "if",
    "then",
    "fi",
    "for",
    "in",
    "do",
    "done",
    "while",
    "case",
    "esac",
    "function",
    "f()",
    "!",
    "[[",
    "]]",
    "time",
    "A=1",
    "x=(1",
    "tee",
    "open('/t/tests/a.py','w')",
    "Path('x').write_text('y')",
    "print(1/2)",
    "submit",
    "edit 1:2",
    "end_of_edit",
]

shell_text = st.one_of(
    st.text(max_size=300),
    st.lists(st.sampled_from(SHELL_BITS), max_size=25).map(" ".join),
    st.lists(st.sampled_from(SHELL_BITS), max_size=25).map("".join),
)

json_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=40)
)
json_value = st.recursive(
    json_leaf,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=12,
)
tool_names = st.one_of(
    st.sampled_from(
        [
            "",
            "bash",
            "Bash",
            "execute_bash",
            "str_replace_editor",
            "Read",
            "Edit",
            "MultiEdit",
            "Write",
            "Grep",
            "Glob",
            "LS",
            "Task",
            "TodoWrite",
            "think",
            "finish",
            "submit",
            "run",
            "read",
            "edit",
        ]
    ),
    st.text(max_size=20),
)
arguments = st.one_of(
    st.dictionaries(
        st.sampled_from(["command", "path", "file_path", "pattern", "glob", "content", "notebook_path", "x"]),
        st.one_of(shell_text, json_value),
        max_size=5,
    ),
    shell_text,
    st.text(max_size=60).map(lambda s: '{"command": ' + s),
)
events = st.builds(ToolEvent, tool=tool_names, arguments=arguments, action=st.one_of(st.none(), shell_text))

FUZZ = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(shell_text)
def test_parser_never_raises(text: str) -> None:
    parse_action(text)
    scan(text.strip())
    split_words(text)
    written_files(text)
    written_files(text, lenient=True)


# Mostly texts quoted with double quotes only, with the odd character of other quoting.
DQ_TEXT = st.text(alphabet=st.sampled_from([*'ab  ""-*.|' * 4, "\t", "\n", "é", "'", "\\"]), max_size=40)


@FUZZ
@given(st.text(max_size=200) | DQ_TEXT)
def test_split_words_agrees_with_shlex(text: str) -> None:
    """The paper's word splitting is POSIX shlex, ``None`` where shlex raises."""
    try:
        expected: list[str] | None = shlex.split(text)
    except ValueError:
        expected = None
    assert split_words(text) == expected


@FUZZ
@given(st.lists(events, min_size=1, max_size=8), st.sampled_from(RULE_VERSIONS))
def test_classify_never_raises_nor_mutates(seq: list[ToolEvent], version: str) -> None:
    rules = get_rules(version)
    state = rules.new_state()
    for event in seq:
        before: dict[str, Any] = {
            "has_patch": state.has_patch,
            "created": copy.copy(state.created),
            "nodes": copy.copy(state.nodes),
            "node_count": state.node_count,
        }
        c = rules.classify(event, state)
        assert isinstance(c, Classification)
        assert before == {
            "has_patch": state.has_patch,
            "created": state.created,
            "nodes": state.nodes,
            "node_count": state.node_count,
        }
        assert all(cmd.role == GENERAL or cmd.role in PHASE_ROLES for cmd in c.commands)
        state.apply(c)


# --------------------------------------------------------------------------- fast paths and memos

PLAIN_WORDS = [
    "cd",
    "/testbed",
    "python",
    "reproduce.py",
    "ls",
    "-la",
    "A=1",
    "x.py",
    "if",
    "for",
    "done",
    "&&",
]
plain_lists = st.one_of(
    st.lists(st.sampled_from(PLAIN_WORDS), min_size=1, max_size=8).map(" ".join),
    st.lists(st.sampled_from([*PLAIN_WORDS, "  ", "&&&", ";", "|", "'", "é"]), max_size=8).map(" ".join),
)


# Actions that share sub-commands, editor paths, or a piece whose label is the whole action ('' x).
SHARING = st.sampled_from(
    [
        "cd /testbed && python reproduce.py",
        "cd /testbed && python tests/test_x.py",
        "python reproduce.py",
        "'' x && ls",
        "'' x && pwd",
        "'' x",
        "str_replace_editor create /testbed/reproduce.py --file_text 'x'",
        "str_replace_editor view /testbed/reproduce.py",
        "str_replace_editor view /testbed/reproduce.py  --view_range 1 2",
        "str_replace_editor str_replace /testbed/pkg/a.py --old_str 'a' --new_str 'b'",
        "ls && str_replace_editor view /testbed/reproduce.py",
        "cat reproduce.py; python reproduce.py",
    ]
).map(ToolEvent.shell)


@FUZZ
@given(
    st.lists(events | shell_text.map(ToolEvent.shell) | SHARING, min_size=1, max_size=10),
    st.sampled_from(PAPER_VERSIONS),
    st.sampled_from([None, 0, 12]),
)
def test_memoised_plans_classify_like_fresh_rules(
    seq: list[ToolEvent], version: str, memo_max: int | None
) -> None:
    """The paper rules' one memo (plans per action text, or per tool and canonical call), shared across
    sessions, classifies exactly as the parser and the rules do without it; so do texts too long to be
    memoised (``memo_max``: a lowered limit)."""
    rules = get_rules(version)
    with pytest.MonkeyPatch.context() as monkeypatch:  # per example: hypothesis runs this many times
        if memo_max is not None:
            rules = PaperRules(version)
            monkeypatch.setattr(rules_module, "MEMO_TEXT_MAX", memo_max)
        _classify_like_fresh_rules(rules, seq, version)


@FUZZ
@given(st.lists(events | shell_text.map(ToolEvent.shell) | SHARING, min_size=1, max_size=10))
def test_live_rules_memo_classifies_like_fresh_rules(seq: list[ToolEvent]) -> None:
    """The live rules' one memo (plans per shell line) never changes a classification."""
    rules = get_rules("live")
    state = rules.new_state()
    for event in seq + seq:
        c = rules.classify(event, state)
        assert c == LiveRules().classify(event, state)  # a fresh instance: an empty memo
        assert c.roles == tuple(cmd.role for cmd in c.commands if cmd.role != GENERAL)
        state.apply(c)


def _classify_like_fresh_rules(rules: PhaseRules, seq: list[ToolEvent], version: str) -> None:
    state, ref_state = rules.new_state(), rules.new_state()
    for event in seq + seq:  # the second half hits the memos filled by the first
        c = rules.classify(event, state)
        fresh = PaperRules(version)  # empty memos
        assert c == _unmemoised(fresh, event, ref_state)
        assert c.roles == tuple(cmd.role for cmd in c.commands if cmd.role != GENERAL)
        state.apply(c)
        ref_state.apply(c)


def _unmemoised(rules: PhaseRules, event: ToolEvent, state: PhaseState) -> Classification:
    if isinstance(event.action, str):
        commands = parse_action(event.action) if event.action.strip() else THINK
        plans = rules._plan_commands(commands, event.action)
    else:
        call = rules.actions.tool_call(event)
        plans = rules._plan_commands(paper_commands(str(event.tool), call), "")
    return _resolve(plans, state)


def test_long_texts_are_classified_but_not_kept() -> None:
    """Memo entries are bounded in number; texts past ``MEMO_TEXT_MAX`` (file bodies, inline scripts) are not
    kept at all, so the memos' size is bounded too — and they classify as memoised texts do."""
    rules = PaperRules()
    code = "print(1); " * (rules_module.MEMO_TEXT_MAX // 10 + 1)
    script = ToolEvent.shell(f"cd /testbed && python -c '{code}'")  # pieces: a short one and a long one
    heredoc = ToolEvent(tool="bash", arguments={"command": f"cat <<'EOF' > /testbed/test_x.py\n{code}\nEOF"})
    state = rules.new_state()
    got = [rules.classify(e, state) for e in (script, heredoc)]
    assert rules._plans.cache_info().currsize == 0  # type: ignore[attr-defined]
    roomy = PaperRules()
    with pytest.MonkeyPatch.context() as m:
        m.setattr(rules_module, "MEMO_TEXT_MAX", 10**9)
        assert got == [roomy.classify(e, state) for e in (script, heredoc)]
    assert roomy._plans.cache_info().currsize == 2  # type: ignore[attr-defined]
