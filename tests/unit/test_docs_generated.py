"""The generated references are current: docs/telemetry.md (attributes, events, instruments, variables) and
docs/config.md (the config's JSON Schema). Regenerate with ``python scripts/gen_docs.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from planguard.reference import render_config_reference, render_telemetry_reference
from planguard.sinks.telemetry import attributes as A
from planguard.sinks.telemetry.settings import ENV_VARIABLES

DOCS = Path(__file__).resolve().parents[2] / "docs"


@pytest.mark.parametrize(
    ("name", "render"), [("telemetry.md", render_telemetry_reference), ("config.md", render_config_reference)]
)
def test_generated_doc_is_current(name: str, render: object) -> None:
    assert callable(render)
    assert (DOCS / name).read_text(encoding="utf-8") == render(), (
        f"docs/{name} is stale: python scripts/gen_docs.py"
    )


def test_the_telemetry_reference_names_everything_emitted() -> None:
    text = render_telemetry_reference()
    for value in (
        A.GEN_AI_TOOL_TYPE,
        A.EVENT_EVALUATION_RESULT,
        A.GEN_AI_EVALUATION_SCORE_VALUE,
        A.METRIC_TOOL_DURATION,
        A.METRIC_TOOL_CALLS,
        A.METRIC_SESSION_PC,
        A.EVENT_TOOL_OUTCOME,
    ):
        assert f"`{value}`" in text, value
    assert all(f"`{name}`" in text for name in ENV_VARIABLES)


def test_the_config_reference_covers_every_section() -> None:
    text = render_config_reference()
    for key in ("telemetry", "store", "policies", "detectors", "sessions"):
        assert f"| `{key}` |" in text
    assert "| `tool_spans` |" in text and '`"enrich"`' in text
    assert "PLANGUARD_TELEMETRY" in text
