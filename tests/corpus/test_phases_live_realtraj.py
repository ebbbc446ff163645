"""The default (live) rules on real runs of several scaffolds, against the hand labels of live-labels/.

``live-labels/dev.jsonl`` labels every tool call of every file under ``realtraj/`` by PHASES_LIVE.md. The
replay is the user's command (``planguard replay FILES --format jsonl``, default rules); the comparison is
per step, on the ordered letter list of each step.
"""

from __future__ import annotations

import difflib
import json
import re
from pathlib import Path

import pytest

from planguard.cli import main
from planguard.events import ToolEvent
from planguard.offline.loaders import Trajectory, iter_trajectories
from planguard.phases import LETTER_OF, get_rules

#: The acceptance bar of issue #18: per-step agreement under the default rules.
MIN_AGREEMENT = 0.97


def _replayed(realtraj: Path, out: Path) -> dict[str, list[str]]:
    files = sorted(str(p.relative_to(realtraj)) for p in realtraj.rglob("*") if p.is_file())
    assert main(["replay", *(str(realtraj / f) for f in files), "--format", "jsonl", "-o", str(out)]) == 0
    steps: dict[str, list[str]] = {}
    for line in out.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        source = Path(record["source"]).relative_to(realtraj).as_posix()
        steps[source] = ["".join(LETTER_OF[r] for r in roles) for roles in record["step_roles"]]
    return steps


def _agreement(gold: list[str], predicted: list[str]) -> tuple[int, int]:
    """(agreeing steps, steps compared). Equal counts pair steps by position; otherwise the two lists are
    aligned (difflib) and every unpaired step on either side counts as a disagreement."""
    if len(gold) == len(predicted):
        return sum(g == p for g, p in zip(gold, predicted, strict=True)), len(gold)
    matcher = difflib.SequenceMatcher(a=gold, b=predicted, autojunk=False)
    agree = sum(block.size for block in matcher.get_matching_blocks())
    return agree, max(len(gold), len(predicted))


def test_default_rules_agree_with_the_hand_labels(shared: Path, tmp_path: Path) -> None:
    realtraj = shared / "data" / "realtraj"
    predicted = _replayed(realtraj, tmp_path / "live.jsonl")
    agree = total = 0
    misses: list[str] = []
    for line in (shared / "data" / "live-labels" / "dev.jsonl").read_text(encoding="utf-8").splitlines():
        labels = json.loads(line)
        gold = ["".join(step["roles"]) for step in labels["steps"]]
        assert labels["file"] in predicted, f"{labels['file']}: not replayed"
        pred = predicted[labels["file"]]
        a, t = _agreement(gold, pred)
        agree, total = agree + a, total + t
        if a != t:
            misses.append(f"{labels['file']}: {a}/{t} (gold {gold}, predicted {pred})")
    assert total > 0
    assert agree / total >= MIN_AGREEMENT, "\n".join([f"agreement {agree}/{total}", *misses])


_REDIRECTION = re.compile(r"(\d*|&)(>>?)(&?)\s*(\S*)")


def _only_stderr_or_discarded(command: str) -> bool:
    """Every redirection in the command is of stderr (``2>&1``, ``2>/dev/null``, ``2> f``) or into
    ``/dev/null`` (and there is at least one)."""
    found = _REDIRECTION.findall(command)
    return bool(found) and all(
        fd == "2" or target == "/dev/null" or (dup == "&" and target.startswith(("1", "2")))
        for fd, _, dup, target in found
    )


_EDITORS = re.compile(
    r"\b(?:sed\s+-\S*i|perl\s+-\S*i|tee|patch|git\s+(?:apply|checkout|restore)|cp|mv|rm|touch)\b"
)


def test_stderr_redirection_is_never_a_patch_on_claude_code_runs(shared: Path) -> None:
    files = sorted((shared / "data" / "realtraj" / "claude-code").glob("*.jsonl"))
    rules = get_rules()
    checked = 0
    for run in iter_trajectories(files):
        if not isinstance(run, Trajectory):
            continue
        state = rules.new_state()
        for event in run.events:
            c = rules.classify(event, state)
            state.apply(c)
            command = event.arguments.get("command") if isinstance(event.arguments, dict) else None
            if event.tool != "Bash" or not isinstance(command, str) or not _only_stderr_or_discarded(command):
                continue
            if _EDITORS.search(command):
                continue  # an in-place edit stays a patch, whatever its stderr does
            checked += 1
            assert "P" not in c.letters, f"{run.id}: {command!r} is {c.letters}"
    assert checked > 0


@pytest.mark.parametrize(
    "command",
    [
        "mix test 2>&1",
        "bd ready 2>&1",
        "grep -rn x lib 2>/dev/null",
        "ls > /dev/null 2>&1",
        "cargo test 2> err.txt",
    ],
)
def test_stderr_only_redirection_cases(command: str) -> None:
    assert _only_stderr_or_discarded(command)
    rules = get_rules()
    assert "P" not in rules.classify(ToolEvent.shell(command), rules.new_state()).letters
