"""Trajectories come from outside: the replay loaders read JSON with the one document reader's limits
(``planguard.documents.MAX_DEPTH``). A line nested 100,000 deep (or 500 deep: under the interpreter's
recursion limit, so ``json.loads`` alone takes it) is one clear error naming the file and line, within a
second, and the rest of the file and of the batch still replays. Through the real ``planguard replay``."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from test_loaders_robust import cc_lines, replay_exit

from planguard.documents import MAX_DEPTH
from planguard.offline.loaders import LoadError, Trajectory, iter_trajectories

CWD = "/home/u/proj"


def _transcript(path: Path, deep_at: int | None, depth: int) -> Path:
    calls = [("Read", {"file_path": f"{CWD}/{n}.py"}, "x", False) for n in "abc"]
    lines = [json.dumps(r) for r in cc_lines(calls)]
    if deep_at is not None:
        lines.insert(deep_at, '{"type": "user", "x": ' + "[" * depth + "]" * depth + "}")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("depth", [100_000, 500])
def test_a_deeply_nested_line_is_one_error_and_the_rest_replays(tmp_path: Path, depth: int) -> None:
    bad = _transcript(tmp_path / "bad.jsonl", 3, depth)  # after the first call's result: line 4
    good = _transcript(tmp_path / "good.jsonl", None, 0)
    t0 = time.perf_counter()
    items = list(iter_trajectories([bad]))
    assert time.perf_counter() - t0 < 1.0
    errors = [i for i in items if isinstance(i, LoadError)]
    runs = [i for i in items if isinstance(i, Trajectory)]
    assert len(errors) == 1 and errors[0].line == 4, errors
    assert f"nested deeper than {MAX_DEPTH} levels" in errors[0].message
    assert len(runs) == 1 and len(runs[0].events) == 3  # every call of the file, the bad line skipped

    _code, out, err = replay_exit(bad, good)
    records = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert len(records) == 2, (out, err)  # both files of the batch replayed
    problem = [line for line in err.splitlines() if "nested deeper than" in line]
    assert len(problem) == 1 and f"{bad}:4" in problem[0], err
    assert "Traceback" not in err
