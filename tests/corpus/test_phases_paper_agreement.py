"""Agreement with the paper's reference labels on the 81 real SWE-agent runs (shared data).

Figures are printed (run with ``-s`` to see them) and the acceptance thresholds asserted: per-step
non-general role agreement >= 99.5 % and identical letter strings on >= 97 % of runs, for both
published versions of the classifier, from the byte-exact action strings. The structured
function-calling payload (``tool_calls``) is checked as well, since integrations without an action
string fall back to it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from planguard.events import ToolEvent
from planguard.phases import get_rules

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
DATA = SHARED / "data" / "swe-agent"
VERSIONS = ("v351278e", "v8ec988e")

pytestmark = pytest.mark.skipif(
    not (DATA / "trajectories.jsonl").exists(), reason=f"shared SWE-agent data not found at {DATA}"
)


def _load(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (DATA / name).read_text(encoding="utf-8").splitlines() if line]


@pytest.fixture(scope="module")
def runs() -> list[tuple[dict[str, Any], dict[str, Any]]]:
    trajectories = _load("trajectories.jsonl")
    labels = {row["id"]: row for row in _load("labels.jsonl")}
    return [(t, labels[t["id"]]) for t in trajectories]


def action_event(step: dict[str, Any]) -> ToolEvent:
    """The step as the paper saw it: SWE-agent's byte-exact action string."""
    if step["tool_calls"] is None:
        return ToolEvent.shell(step["action"]) if step["action"] else ToolEvent(tool="", action="")
    call = step["tool_calls"][0]["function"] if step["tool_calls"] else {"name": "", "arguments": {}}
    return ToolEvent(tool=call["name"], arguments=call["arguments"], action=step["action"])


def structured_event(step: dict[str, Any]) -> ToolEvent:
    """A function-calling step without its action string: only the raw tool call."""
    if step["tool_calls"] is None:
        return action_event(step)
    if not step["tool_calls"]:
        return ToolEvent(tool="", arguments={})
    call = step["tool_calls"][0]["function"]
    return ToolEvent(tool=call["name"], arguments=call["arguments"])


def agreement(
    runs: list[tuple[dict[str, Any], dict[str, Any]]], version: str, make_event: Any, only_fc: bool = False
) -> tuple[int, int, int, int, list[str]]:
    rules = get_rules(version)
    steps_ok = steps = runs_ok = n_runs = 0
    mismatches: list[str] = []
    for traj, label in runs:
        if only_fc and traj["steps"][0]["tool_calls"] is None:
            continue
        n_runs += 1
        state = rules.new_state()
        letters = ""
        for i, step in enumerate(traj["steps"]):
            c = rules.classify(make_event(step), state)
            state.apply(c)
            expected = [r for r in label[version]["per_step_roles"][i] if r != "general"]
            steps += 1
            if list(c.roles) == expected:
                steps_ok += 1
            else:
                mismatches.append(f"{traj['id']} step {i}: {step['action'][:80]!r} {c.roles} != {expected}")
            letters += c.letters
        runs_ok += letters == label[version]["letters"]
    return steps_ok, steps, runs_ok, n_runs, mismatches


@pytest.mark.parametrize("version", VERSIONS)
def test_agreement_from_action_strings(
    runs: list[tuple[dict[str, Any], dict[str, Any]]], version: str
) -> None:
    steps_ok, steps, runs_ok, n_runs, mismatches = agreement(runs, version, action_event)
    role_pct = 100.0 * steps_ok / steps
    letters_pct = 100.0 * runs_ok / n_runs
    print(
        f"\n{version} (action strings): per-step role agreement {steps_ok}/{steps} = {role_pct:.2f} %, "
        f"identical letters {runs_ok}/{n_runs} = {letters_pct:.2f} %"
    )
    for line in mismatches[:20]:
        print("  mismatch:", line)
    assert n_runs == 81 and steps == 2497
    assert role_pct >= 99.5
    assert letters_pct >= 97.0


@pytest.mark.parametrize("version", VERSIONS)
def test_agreement_from_tool_calls(runs: list[tuple[dict[str, Any], dict[str, Any]]], version: str) -> None:
    steps_ok, steps, runs_ok, n_runs, mismatches = agreement(runs, version, structured_event, only_fc=True)
    print(
        f"\n{version} (tool_calls of the {n_runs} function-calling runs): per-step role agreement "
        f"{steps_ok}/{steps} = {100.0 * steps_ok / steps:.2f} %, identical letters {runs_ok}/{n_runs}"
    )
    for line in mismatches[:20]:
        print("  mismatch:", line)
    assert 100.0 * steps_ok / steps >= 99.5
    assert 100.0 * runs_ok / n_runs >= 97.0


@pytest.mark.parametrize("version", VERSIONS)
def test_labels_match_exactly(runs: list[tuple[dict[str, Any], dict[str, Any]]], version: str) -> None:
    """Beyond the thresholds: every step's (label, role) list, general included, in the paper's order."""
    rules = get_rules(version)
    wrong = []
    for traj, label in runs:
        state = rules.new_state()
        for i, step in enumerate(traj["steps"]):
            c = rules.classify(action_event(step), state)
            state.apply(c)
            got = ([cmd.label for cmd in c.commands], [cmd.role for cmd in c.commands])
            want = (label[version]["per_step_labels"][i], label[version]["per_step_roles"][i])
            if got != want:
                wrong.append((traj["id"], i, got, want))
    assert wrong == []
