from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


@pytest.fixture(scope="session")
def shared() -> Path:
    """The shared data folder next to the repository (CI has it); tests that need it skip without it."""
    if not (SHARED / "spec").is_dir():
        pytest.skip(f"shared data not found at {SHARED}")
    return SHARED


@pytest.fixture
def calc_repo_in_temp(request: pytest.FixtureRequest) -> Iterator[Path]:
    """A repository ``calcs/`` with a buggy ``calc.py``, under a system temp directory (``/tmp``, or the
    directory a test passes as the fixture's parameter): a repository there is a repository (PHASES_LIVE
    §4). Not pytest's tmp_path, whose ``test_<name>`` folders would make every path in it test-named."""
    base = Path(tempfile.mkdtemp(prefix="pgrm-", dir=getattr(request, "param", "/tmp")))
    work = base / "calcs"
    work.mkdir()
    (work / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    try:
        yield work
    finally:
        shutil.rmtree(base, ignore_errors=True)
