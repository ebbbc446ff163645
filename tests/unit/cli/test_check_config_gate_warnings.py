"""``check-config`` warns when a gate waits on a declared phase only the gated call itself could show."""

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
    assert "policies.gates.0.until: gate 'confirm-first' waits on phase 'confirm'" in out.stderr
    assert "message rule" in out.stderr


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
