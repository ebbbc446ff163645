"""Run a small plan experiment end to end on a real LangGraph agent, then report it default-trap-safe.

    python examples/experiment/run_experiment.py [--out DIR] [--customers N] [--seed S]

The agent is ``langchain.agents.create_agent`` with planguard's LangChain middleware and a scripted chat
model whose first read depends on the plan text in its request: it follows a supplied priority with
probability ``FOLLOW`` and otherwise, like with no plan, falls back to its default (order history first
with probability ``DEFAULT_A``) — so the arms really differ and the no-plan default is A-aligned, the
default trap's setting. Each customer has two tasks; each task runs plan A and plan B twice and no plan
once. The task succeeds when the agent read the record the customer asked about; the caller reports that
outcome with ``record_outcome``.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import uuid
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.tools import tool
from planguard_langchain import PlanGuardMiddleware
from planguard_langchain.testing import ScriptedChatModel, call, turn

from planguard.config import load_config
from planguard.experiment import read_results, record_outcome
from planguard.guard import Guard

HERE = Path(__file__).resolve().parent
FOLLOW = 0.9  # probability of following a supplied priority
DEFAULT_A = 0.8  # probability of reading the order history first without a plan
YIELD = 0.05  # probability of answering without any read


@tool
def find_user(email: str) -> str:
    """Find a customer's id by email."""
    return f"user_{email.split('@')[0]}"


@tool
def list_orders(user_id: str) -> str:
    """List the customer's orders."""
    return f"{user_id}: order #W1 (delivered), order #W2 (pending)"


@tool
def list_payment_methods(user_id: str) -> str:
    """List the customer's payment methods."""
    return f"{user_id}: visa ending 4242, gift card (balance 12.00)"


def executor(rng: random.Random) -> ScriptedChatModel:
    """One execution: identify the customer, make the measured read, answer."""

    def first_read(messages: list[BaseMessage]) -> AIMessage:
        text = "\n".join(str(m.content) for m in messages)
        if rng.random() < YIELD:
            return AIMessage(content="Could you tell me more about the problem?")
        if "order history first" in text and rng.random() < FOLLOW:
            target = "list_orders"
        elif "payment methods first" in text and rng.random() < FOLLOW:
            target = "list_payment_methods"
        else:
            target = "list_orders" if rng.random() < DEFAULT_A else "list_payment_methods"
        return turn(call(target, user_id="user_ana"))

    return ScriptedChatModel(
        turns=[turn(call("find_user", email="ana@example.com")), first_read],
        final="Here is what I found.",
    )


def run(out: Path, customers: int = 6, seed: int = 0) -> Path:
    """Run the experiment into ``out`` and return the results file."""
    out.mkdir(parents=True, exist_ok=True)
    config = load_config(HERE / "planguard-experiment.yaml")
    assert config.experiment is not None
    results = out / "results.jsonl"
    if results.exists():
        results.unlink()
    config.experiment.results = str(results)
    rng = random.Random(seed)
    guard = Guard(config)
    middleware = PlanGuardMiddleware(guard)
    tools = [find_user, list_orders, list_payment_methods]
    schedule: list[dict[str, Any]] = []
    for c in range(customers):
        for t in range(2):
            needs = "list_orders" if (c + t) % 2 == 0 else "list_payment_methods"
            for arm, repeats in (("plan-a", 2), ("plan-b", 2), ("no-plan", 1)):
                for r in range(repeats):
                    schedule.append(
                        {"task": f"c{c}-t{t}", "cluster": f"c{c}", "arm": arm, "repeat": r, "needs": needs}
                    )
    rng.shuffle(schedule)  # interleave arms, as a fixed shuffle would
    for item in schedule:
        sid = f"{item['task']}-{item['arm']}-{item['repeat']}-{uuid.uuid4().hex[:6]}"
        # Explicit assignment: the caller pairs arms within each task.
        guard.session(sid, arm=item["arm"], task=item["task"], cluster=item["cluster"], repeat=item["repeat"])
        agent = create_agent(executor(random.Random(rng.random())), tools, middleware=[middleware])
        state = agent.invoke(
            {"messages": [{"role": "user", "content": "Hi, I need help with my account."}]},
            {"configurable": {"thread_id": sid}},
        )
        read = {c["name"] for m in state["messages"] if isinstance(m, AIMessage) for c in m.tool_calls}
        record_outcome(results, sid, success=item["needs"] in read)
    guard.shutdown()
    return results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=HERE / "out")
    ap.add_argument("--customers", type=int, default=6)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--resamples", type=int, default=2000)
    args = ap.parse_args(argv)
    results = run(args.out, args.customers, args.seed)
    from planguard.experiment.analysis import analyze
    from planguard.experiment.format import to_table

    episodes, problems = read_results([results])
    for p in problems:
        print(p, file=sys.stderr)
    print(to_table(analyze(episodes, resamples=args.resamples, seed=args.seed)))
    print(f"results: {results}  (planguard experiment report {results})")
    return 0


if __name__ == "__main__":
    if "--clean" in sys.argv:
        shutil.rmtree(HERE / "out", ignore_errors=True)
        sys.argv.remove("--clean")
    raise SystemExit(main())
