"""The 40 hand-written rule cases: per-step (label, role) pairs and letters, for both paper versions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from planguard.events import ToolEvent
from planguard.phases import get_rules

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
CASES_FILE = SHARED / "spec" / "rule_cases.jsonl"
VERSIONS = ("v351278e", "v8ec988e")


def _cases() -> list[dict[str, Any]]:
    if not CASES_FILE.exists():
        return []
    return [json.loads(line) for line in CASES_FILE.read_text(encoding="utf-8").splitlines() if line.strip()]


CASES = _cases()


@pytest.mark.skipif(not CASES, reason=f"shared rule cases not found at {CASES_FILE}")
def test_all_forty_cases_are_present() -> None:
    assert len(CASES) == 40


# Without the shared data the parameter set is empty and pytest reports the test as skipped.
@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_rule_case(case: dict[str, Any], version: str) -> None:
    rules = get_rules(version)
    state = rules.new_state()
    per_step: list[list[list[str]]] = []
    letters = ""
    for action in case["actions"]:
        c = rules.classify(ToolEvent.shell(action), state)
        state.apply(c)
        per_step.append([[cmd.label, cmd.role] for cmd in c.commands])
        letters += c.letters
    assert per_step == case[version]["per_step"]
    assert letters == case[version]["letters"]
