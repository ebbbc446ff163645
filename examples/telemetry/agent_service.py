"""A long-running agent service for the telemetry quick starts: a LangChain ``create_agent`` agent (scripted
model, no API key) handles a request every few seconds under planguard, whose OpenTelemetry setup comes from
the standard ``OTEL_*`` variables alone, so that a metrics backend has something to scrape.

    OTEL_METRICS_EXPORTER=prometheus python examples/telemetry/agent_service.py --runs 30
    # then: curl http://127.0.0.1:9464/metrics  (planguard_tool_calls_total, planguard_tool_duration_...)
"""

from __future__ import annotations

import argparse
import time

from langchain.agents import create_agent
from langchain_core.tools import tool
from planguard_langchain import PlanGuardMiddleware
from planguard_langchain.testing import ScriptedChatModel, call, turn

from planguard.config import Config
from planguard.guard import Guard
from planguard.sinks.otel.config import TelemetryConfig
from planguard.sinks.store.config import StoreConfig


@tool
def read_file(path: str) -> str:
    """Read a file of the repository."""
    return f"def word_count(text):\n    return len(text.split(' '))  # {path}\n"


@tool
def search(pattern: str) -> str:
    """Search the repository."""
    return "src/words.py:1: def word_count(text):"


@tool
def bash(command: str) -> str:
    """Run a shell command."""
    return "2 passed" if "pytest" in command else "ok"


@tool
def edit_file(path: str, old: str, new: str) -> str:
    """Replace text in a file."""
    return f"edited {path}"


def script() -> ScriptedChatModel:
    return ScriptedChatModel(
        turns=[
            turn(call("search", pattern="word_count")),
            turn(call("read_file", path="src/words.py")),
            turn(call("bash", command="python -c 'import words; print(words.word_count(\"a  b\"))'")),
            turn(call("edit_file", path="src/words.py", old="split(' ')", new="split()")),
            turn(call("bash", command="python -m pytest -q")),
            turn(text="Fixed word_count."),
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30, help="requests to handle (default 30)")
    parser.add_argument("--every", type=float, default=2.0, help="seconds between requests (default 2)")
    args = parser.parse_args()
    config = Config(telemetry=TelemetryConfig(agent_name="word-fixer"), store=StoreConfig(enabled=False))
    with Guard(config) as guard:
        agent = create_agent(
            script(), [read_file, search, bash, edit_file], middleware=[PlanGuardMiddleware(guard)]
        )
        for i in range(args.runs):
            agent.invoke(
                {"messages": [("user", "word_count miscounts")]}, {"configurable": {"thread_id": f"req-{i}"}}
            )
            print(f"request {i + 1}/{args.runs} handled", flush=True)
            time.sleep(args.every)


if __name__ == "__main__":
    main()
