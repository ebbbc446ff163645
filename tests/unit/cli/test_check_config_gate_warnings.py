"""``check-config`` warns when a gate waits on a declared phase nothing can show before the gated call: only
the gated tool matches it, it may only follow such a phase, or phases wait on each other."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

GATED_BY_ITSELF = """\
plan:
  name: p
  phases:
    - {id: look, symbol: L, name: Look, match: {tool: get_order}}
    - {id: confirm, symbol: C, name: Confirm, match: {tool: cancel_order}}
policies:
  gates:
    - {name: confirm-first, tool: cancel_order, until: {phases_seen: [confirm]}}
"""


def _check(tmp_path: Path, text: str) -> subprocess.CompletedProcess[str]:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(text)
    return subprocess.run(
        [sys.executable, "-m", "planguard", "check-config", "--no-env", str(cfg)],
        capture_output=True,
        text=True,
        check=True,  # a warning leaves the config valid
    )


def test_a_phase_only_the_gated_call_shows_is_warned_about(tmp_path: Path) -> None:
    out = _check(tmp_path, GATED_BY_ITSELF)
    assert "policies.gates.0.until.phases_seen.0: gate 'confirm-first' waits on phase 'confirm'" in out.stderr
    assert "only the tool the gate holds matches phase 'confirm'" in out.stderr
    assert "message rule" in out.stderr


def test_a_phase_behind_an_unreachable_one_is_warned_about(tmp_path: Path) -> None:
    # confirm is said in chat, but only after a phase only the gated call shows.
    behind = (
        "plan:\n  name: p\n  phases:\n"
        "    - {id: act, symbol: A, name: Act, match: {tool: cancel_order}}\n"
        "    - {id: confirm, symbol: C, name: Confirm, after: [act],\n"
        "       match: {message: {role: user, text: yes}}}\n"
        "policies:\n  gates:\n"
        "    - {name: g, tool: cancel_order,\n"
        "       until: {phase_after: {phase: confirm, after: act, strict: true}}}\n"
    )
    out = _check(tmp_path, behind)
    assert "policies.gates.0.until.phase_after.phase: gate 'g' waits on phase 'confirm'" in out.stderr
    assert "phase 'confirm' only comes after 'act', and only the tool the gate holds matches phase 'act'" in (
        out.stderr
    )
    assert "policies.gates.0.until.phase_after.after: gate 'g' waits on phase 'act'" in out.stderr
    # Phases waiting on each other can never start.
    cycle = (
        "plan:\n  name: p\n  phases:\n"
        "    - {id: a, symbol: A, name: A, after: [b], match: {tool: x}}\n"
        "    - {id: b, symbol: B, name: B, after: [a], match: {tool: y}}\n"
        "policies:\n  gates:\n    - {name: g, tool: z, until: {phases_seen: [a]}}\n"
    )
    assert "wait on each other (a -> b -> a)" in _check(tmp_path, cycle).stderr


def test_a_phase_a_message_or_another_tool_shows_is_fine(tmp_path: Path) -> None:
    in_chat = GATED_BY_ITSELF.replace(
        "match: {tool: cancel_order}}", "match: [{tool: cancel_order}, {message: {role: user, text: yes}}]}"
    )
    assert "warning" not in _check(tmp_path, in_chat).stderr
    support = (
        "plan: support\npolicies:\n  gates:\n"
        '    - {name: c, tool: "cancel_*", until: {phases_seen: [confirm]}}\n'
    )
    assert "warning" not in _check(tmp_path, support).stderr
    # Reached through a chain of other phases: no warning either.
    chain = GATED_BY_ITSELF.replace(
        "match: {tool: cancel_order}}", "after: [look], match: {message: {role: user, text: yes}}}"
    )
    assert "warning" not in _check(tmp_path, chain).stderr
