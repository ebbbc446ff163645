"""The proxy records each session's repository — from its config (``work_dir``) or the session's
``X-Planguard-Work-Dir`` header — so a repository under /tmp is a repository (PHASES_LIVE.md §4): an agent
working there by absolute paths gets ``NRRPV`` and the validate-before-submit gate denies an early submit.
The header is planguard's and is not sent upstream."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

openai = pytest.importorskip("openai")
pytest.importorskip("planguard_proxy")
from proxy_fakes import Reply, proxy_stack, quiet_config  # noqa: E402

GATE = {
    "gates": [
        {
            "name": "validate-before-submit",
            "tool": "submit",
            "until": {"phase_after": {"phase": "V", "after": "P", "strict": True}},
        }
    ]
}
TOOLS: Any = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": name,
            "parameters": {"type": "object", "properties": props, "required": list(props)},
        },
    }
    for name, props in (("bash", {"command": {"type": "string"}}), ("submit", {}))
]


@pytest.fixture
def repo(calc_repo_in_temp: Path) -> Path:
    return calc_repo_in_temp


def _calls(repo: Path) -> list[tuple[str, dict[str, str]]]:
    probe = repo / "sum_probe.py"
    return [
        ("bash", {"command": f"cat {repo / 'calc.py'}"}),
        ("bash", {"command": f"printf 'from calc import add\\nprint(add(2, 3))\\n' > {probe}"}),
        ("bash", {"command": f"python {probe}"}),
        ("bash", {"command": f"sed -i 's/return a - b/return a + b/' {repo / 'calc.py'}"}),
        ("submit", {}),  # too early: nothing validated the patch yet
        ("bash", {"command": f"python {probe}"}),
        ("submit", {}),
    ]


def _script(calls: list[tuple[str, dict[str, str]]]) -> Any:
    """The k-th upstream request gets calls[k] (the proxy's own retry after a denial is a request too)."""
    served = iter(calls)

    def script(wire: str, body: dict[str, Any]) -> Reply:
        call = next(served, None)
        return Reply(text="Working.", tool_calls=[call]) if call is not None else Reply(text="Done.")

    return script


def _agent(url: str, repo: Path, headers: dict[str, str]) -> list[str]:
    """A chat-completions agent loop; returns the text of each answer that came without a tool call."""
    client = openai.OpenAI(base_url=url + "/v1", api_key="sk-test", max_retries=0, default_headers=headers)
    messages: Any = [{"role": "user", "content": "Fix add() in calc.py."}]
    texts = []
    for _ in range(12):
        msg = (
            client.chat.completions.create(model="gpt-fake", messages=messages, tools=TOOLS)
            .choices[0]
            .message
        )
        if not msg.tool_calls:
            texts.append(msg.content or "")
            if msg.content == "Done.":
                break
            messages += [{"role": "assistant", "content": msg.content}, {"role": "user", "content": "Go on."}]
            continue
        messages.append(msg.model_dump(exclude_none=True))  # the call as the agent keeps it
        for c in msg.tool_calls:
            if c.function.name == "bash":
                command = json.loads(c.function.arguments)["command"].replace(
                    "python ", f"{sys.executable} ", 1
                )
                done = subprocess.run(
                    command, shell=True, cwd=repo, capture_output=True, text=True, timeout=30
                )
                output = done.stdout + done.stderr
                out = f"<returncode>{done.returncode}</returncode>\n<output>\n{output}</output>"
            else:
                out = "submitted"
            messages.append({"role": "tool", "tool_call_id": c.id, "content": out})
    return texts


@pytest.mark.parametrize("source", ["header", "config"])
def test_a_repository_under_tmp_through_the_proxy(repo: Path, source: str) -> None:
    headers = {"X-Planguard-Session": "tmp-repo"}
    settings: dict[str, Any] = {}
    if source == "header":
        headers["X-Planguard-Work-Dir"] = str(repo)
    else:
        settings["work_dir"] = str(repo)
    with proxy_stack(_script(_calls(repo)), config=quiet_config(policies=GATE), **settings) as stack:
        texts = _agent(stack.url, repo, headers)
        summary = stack.guard.session("tmp-repo").summary()
        sent = [r.headers for r in stack.fake.requests]

    assert "return a + b" in (repo / "calc.py").read_text()
    assert summary.letters == "NRRPV"
    # The early submit was denied (the proxy answered it and asked the model again); the last one ran.
    assert summary.decision_counts.get("deny") == 1
    assert texts == ["Done."]
    assert all("x-planguard-work-dir" not in h for h in sent)
