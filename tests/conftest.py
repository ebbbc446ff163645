from __future__ import annotations

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
