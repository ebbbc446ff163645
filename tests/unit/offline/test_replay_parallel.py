"""Replay on every core: a corpus cut into parts (files, line ranges of one large JSONL) gives what one
process gives, in the same order, line numbers of errors included."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from planguard.cli import main as cli
from planguard.offline import parallel
from planguard.offline.loaders import iter_trajectories, line_ranges
from planguard.offline.parallel import corpus_parts, iter_part, map_parts


@pytest.fixture(scope="module")
def corpus(shared: Path) -> Path:
    return shared / "data" / "swe-agent" / "trajectories.jsonl"


def _ids(items: object) -> list[str]:
    return [getattr(t, "id", str(t)) for t in items]  # type: ignore[attr-defined]


def test_line_ranges_cover_the_file_at_line_ends(corpus: Path) -> None:
    data = corpus.read_bytes()
    cut = line_ranges(corpus, 300_000)
    assert cut is not None
    ranges = list(cut)
    assert len(ranges) > 5
    assert ranges[0][0] == 0 and ranges[-1][1] == len(data)
    for (_, end, _), (start, _, first_line) in itertools.pairwise(ranges):
        assert end == start and data[start - 1 : start] == b"\n"
        assert first_line == data[:start].count(b"\n") + 1


def test_line_ranges_read_small_and_other_files_whole(corpus: Path, tmp_path: Path) -> None:
    assert line_ranges(corpus, corpus.stat().st_size) is None
    other = tmp_path / "notes.jsonl"
    other.write_text('{"a": 1}\n' * 50_000)
    assert line_ranges(other, 1000) is None


def test_parts_replay_as_the_whole_corpus_in_order(corpus: Path, tmp_path: Path) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    (folder / "a.jsonl").write_bytes(corpus.read_bytes())
    (folder / "b.jsonl").write_bytes(b"".join(corpus.read_bytes().splitlines(keepends=True)[:5]))
    parts = list(corpus_parts([folder, corpus], part_bytes=400_000))
    assert len(parts) > 10
    whole = _ids(iter_trajectories([folder, corpus]))
    assert [i for part in parts for i in _ids(iter_part(part))] == whole
    assert [i for ids in map_parts(_part_ids, parts, jobs=2) for i in ids] == whole


def _part_ids(part: parallel.Part) -> list[str]:
    return _ids(iter_part(part))


def test_an_error_in_a_range_names_its_line(corpus: Path, tmp_path: Path) -> None:
    lines = corpus.read_bytes().splitlines(keepends=True)
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"".join(lines[:60]) + b"{not json\n" + b"".join(lines[60:]))
    errors = [str(item) for part in corpus_parts([bad], part_bytes=200_000) for item in iter_part(part)]
    whole = [e for e in _ids(iter_trajectories([bad])) if "invalid JSON" in e]
    assert [e for e in errors if "invalid JSON" in e] == whole
    assert any(f"{bad}:61" in e for e in errors)


def test_replay_cli_jobs_writes_what_one_process_writes(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(parallel, "PART_BYTES", 500_000)
    out = {}
    for jobs in ("1", "2"):
        path = tmp_path / f"j{jobs}.jsonl"
        assert cli(["replay", str(corpus), "--format", "jsonl", "-o", str(path), "-j", jobs]) == 0
        out[jobs] = path.read_text().splitlines()
    assert len(out["1"]) == 81 and out["1"] == out["2"]
    assert [json.loads(line)["id"] for line in out["2"]] == _ids(iter_trajectories([corpus]))
