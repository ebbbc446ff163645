"""Roles follow provenance, not names (PHASES_LIVE.md §4): the shared real runs with every script they
created renamed to a neutral name — consistently in the calls, the outputs and the recorded metadata —
keep the same roles on every step, and keep their agreement with the hand labels of ``live-labels/``.

The scripts a run created are found here independently of the rules under test: the files its write
tools create and the files its shell lines write through a redirection, ``tee`` or ``cp``, that are code
and neither test-named (a test is decided by path and name, §4) nor a project file.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from planguard.events import ToolEvent
from planguard.offline.loaders import Trajectory, iter_trajectories
from planguard.offline.replay import replay_pipeline
from planguard.phases import LETTER_OF, get_rules
from planguard.session import Session

_CODE = ("py", "sh", "js", "ts", "rb")
_SHELL_WRITE = re.compile(r"(?:>|\btee\s+(?:-a\s+)?|\bcp\s+\S+\s+)\s*['\"]?([\w./-]+\.(?:py|sh|js|ts|rb))\b")
_PROJECT = frozenset({"setup.py", "__init__.py", "manage.py", "conftest.py", "__main__.py"})
#: A test file by path and name (PHASES_LIVE.md §4), written out here so the test does not lean on the code.
_TEST_FILE = re.compile(
    r"(?:^|/)(?:tests?|spec|__tests__)/|(?:^|/)(?:test_[^/]*|[^/]*_test\.\w+|[^/]*_spec\.\w+|[^/]*\.(?:test|spec)\.\w+)$"
)


def _runs(shared: Path) -> Iterator[Trajectory]:
    data = shared / "data"
    files = sorted(p for p in (data / "realtraj").rglob("*") if p.is_file())
    for run in iter_trajectories([*files, data / "swe-agent" / "trajectories.jsonl"]):
        if isinstance(run, Trajectory):
            yield run


def _created_scripts(run: Trajectory) -> list[str]:
    """File names of the scripts the run created (in first-creation order)."""
    actions = get_rules().actions
    names: dict[str, None] = {}
    for event in run.events:
        call = actions.tool_call(event)
        written = list(call.created)
        if call.kind == "shell" and call.command:
            written += _SHELL_WRITE.findall(call.command)
        for path in written:
            name = path.rsplit("/", 1)[-1]
            if (
                name.rsplit(".", 1)[-1] in _CODE
                and name not in _PROJECT
                and not _TEST_FILE.search(path.lower())
            ):
                names[name] = None
    return list(names)


def _renamed(value: Any, pattern: re.Pattern[str], table: dict[str, str]) -> Any:
    if isinstance(value, str):
        return pattern.sub(lambda m: table[m.group(0)], value)
    if isinstance(value, dict):
        return {k: _renamed(v, pattern, table) for k, v in value.items()}
    if isinstance(value, list):
        return [_renamed(v, pattern, table) for v in value]
    return value


def rename_scripts(run: Trajectory) -> tuple[Trajectory, dict[str, str]]:
    """``run`` with every script it created named ``issue_probe<N>.<ext>``, in every text of every call."""
    table = {
        name: f"issue_probe{i}.{name.rsplit('.', 1)[-1]}" for i, name in enumerate(_created_scripts(run))
    }
    if not table:
        return run, table
    names = "|".join(re.escape(n) for n in sorted(table, key=len, reverse=True))
    pattern = re.compile(rf"(?<![\w.-])(?:{names})(?![\w])")

    def event(e: ToolEvent) -> ToolEvent:
        return dataclasses.replace(
            e,
            arguments=_renamed(e.arguments, pattern, table),
            action=_renamed(e.action, pattern, table),
            result=_renamed(e.result, pattern, table),
            metadata=_renamed(dict(e.metadata), pattern, table),
        )

    return dataclasses.replace(run, events=[event(e) for e in run.events]), table


def step_letters(run: Trajectory) -> list[str]:
    """Each step's letters under the default (live) rules, replayed as ``planguard replay`` does."""
    session = Session(run.id, replay_pipeline(diagnostics=False), metadata=run.meta)
    out = []
    for e in run.events:
        step = session.observe(e)
        if e.blocked is None:
            out.append("".join(LETTER_OF[r] for r in step.classification.roles))
    return out


def test_renaming_created_scripts_changes_no_role(shared: Path) -> None:
    renamed_runs = steps = 0
    changed: list[str] = []
    for run in _runs(shared):
        renamed, table = rename_scripts(run)
        if not table:
            continue
        renamed_runs += 1
        before, after = step_letters(run), step_letters(renamed)
        steps += len(before)
        changed += [
            f"{run.id} step {i}: {b!r} -> {a!r} ({table})"
            for i, (b, a) in enumerate(zip(before, after, strict=True))
            if a != b
        ]
    assert renamed_runs >= 60 and steps > 1000  # the 81 SWE-agent runs nearly all create a script
    assert not changed, "\n".join(changed[:40])


def test_renamed_runs_keep_their_agreement_with_the_hand_labels(shared: Path) -> None:
    realtraj = shared / "data" / "realtraj"
    by_source = {}
    for run in _runs(shared):
        if run.source.startswith(str(realtraj)):
            by_source[Path(run.source).relative_to(realtraj).as_posix()] = run
    agree = total = 0
    renamed_any = False
    for line in (shared / "data" / "live-labels" / "dev.jsonl").read_text(encoding="utf-8").splitlines():
        labels = json.loads(line)
        renamed, table = rename_scripts(by_source[labels["file"]])
        renamed_any = renamed_any or bool(table)
        gold = ["".join(step["roles"]) for step in labels["steps"]]
        predicted = step_letters(renamed)
        assert len(predicted) == len(gold), labels["file"]
        agree += sum(g == p for g, p in zip(gold, predicted, strict=True))
        total += len(gold)
    assert renamed_any
    assert agree == total, f"{agree}/{total}"
