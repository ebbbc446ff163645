"""Recorded runs the loader and replay tests share."""

from __future__ import annotations

from typing import Any


def mini_swe_agent_denied_submit(reason: str) -> dict[str, Any]:
    """A mini-swe-agent trajectory (format 1.1): ``ls`` ran, then the submit command was denied by the
    planguard gate, whose marker and ``reason`` the observation carries."""
    return {
        "info": {"exit_status": "Submitted"},
        "messages": [
            {"role": "user", "content": "fix it"},
            {"role": "assistant", "content": "```mswea_bash_command\nls\n```"},
            {"role": "user", "content": "<returncode>0</returncode>\n<output>\na.py\n</output>"},
            {"role": "assistant", "content": "```mswea_bash_command\necho COMPLETE_TASK\n```"},
            {
                "role": "user",
                "content": f"<returncode>1</returncode>\n<output>\n{reason}\n</output>",
                "extra": {"planguard": {"decision": "deny", "policy": "validate-before-submit"}},
            },
        ],
        "trajectory_format": "mini-swe-agent-1.1",
    }
