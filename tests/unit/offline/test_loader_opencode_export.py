"""``opencode export <sessionID>`` files replay with the session's steps and arguments (they were read as
mini-swe-agent before, and failed).

``data/opencode_1.18.33_export.json`` is the output of the real ``opencode export`` (opencode 1.18.33 from
npm, the version the CLI end-to-end tests pin) for a session ``opencode run`` made against the tests' fake
Chat Completions server (tests/cli_fakes.py): read, bash, edit, with text turns. Replaying the session's own
database (``opencode.db``) gave the same three steps (NRP, same actions) when the file was made.
"""

from __future__ import annotations

import json
from pathlib import Path

from planguard.offline.loaders import detect_format, load_trajectories

EXPORT = Path(__file__).parent / "data" / "opencode_1.18.33_export.json"


def test_an_export_is_the_sessions_run() -> None:
    assert detect_format(EXPORT) == "opencode-export"
    (run,), errors = load_trajectories(EXPORT)
    assert errors == []
    document = json.loads(EXPORT.read_text())
    tool_parts = [p for m in document["messages"] for p in m["parts"] if p["type"] == "tool"]
    assert run.id == document["info"]["id"]
    assert [(e.tool, dict(e.arguments)) for e in run.events] == [  # type: ignore[arg-type]
        (p["tool"], p["state"]["input"]) for p in tool_parts
    ]
    assert all(e.result is not None for e in run.events)
    assert [(m.role, m.text) for _, m in run.messages][-1] == ("assistant", "Fixed add(): it returned a - b.")
    assert run.meta["cwd"] == document["info"]["directory"]
