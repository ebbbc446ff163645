"""The planguard demo: a LangChain v1 coding agent fixes a real bug in a throw-away repository while planguard
watches it live. No API key and no network: the chat model is scripted (it plays a realistic run, mistakes
included), while the agent (``create_agent``), the middleware, the tools and the tests are real.

    planguard demo                          # needs: pip install "planguard-agents[langchain]"
    python -m planguard_langchain.demo      # the same, without the CLI

The script: the agent navigates the code, falls into a search loop, patches before reproducing the bug,
tries to submit before validating, then writes a reproduction script, runs it and the test suite, and
submits. planguard, configured by this folder's ``planguard.yaml`` (package data; ``examples/planguard.yaml``
in the repository is the same file), reminds it of the plan every 5 model calls,
nudges it out of the search loop, denies the early submit, prints a timeline (phase per call, findings,
decisions, compliance) and records the session in the local store.

``--agent support`` (``planguard demo --agent support``) runs a customer-support agent instead
(``support.py``, configured by ``support.yaml``): tools over an in-memory order database, a plan whose
phases are declared by tool name, and a gate that denies ``refund_order`` until the customer has confirmed.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from . import repo_template, support
from . import tools as demo_tools

AGENTS = ("coding", "support")

__all__ = [
    "DEFAULT_CONFIG",
    "DemoResult",
    "add_arguments",
    "main",
    "run_demo",
    "run_from_args",
    "run_support_demo",
    "script",
]

# Shipped in the wheel beside this module, so `planguard demo` runs from a plain install.
DEFAULT_CONFIG = Path(__file__).resolve().parent / "planguard.yaml"

REPRO_SCRIPT = """from textstats import word_count

cases = {"hello  world": 2, "one\\ntwo three": 3, "  padded   text  ": 2, "single": 1}
for text, expected in cases.items():
    got = word_count(text)
    assert got == expected, f"word_count({text!r}) = {got}, expected {expected}"
print("all", len(cases), "cases pass")
"""

FINAL_ANSWER = (
    "Fixed: word_count() split on single spaces, so runs of whitespace and newlines counted as extra words. "
    "It now uses str.split() with no separator. reproduce_wordcount.py covers the reported cases and the "
    "existing test suite passes."
)


def script() -> list[Any]:
    """The scripted model's turns (one per model call)."""
    from planguard_langchain.testing import call, turn

    def finish(messages: list[Any]) -> Any:
        # After the real submit succeeds the agent answers; if a policy denied it, it submits once more.
        last = messages[-1]
        if getattr(last, "name", None) == "submit" and getattr(last, "status", "") == "success":
            return turn(text=FINAL_ANSWER)
        submits = sum(
            1 for m in messages for c in getattr(m, "tool_calls", None) or () if c["name"] == "submit"
        )
        if submits >= 4:
            return turn(text=FINAL_ANSWER)
        return turn(call("submit"), text="The reproduction and the tests pass after the fix. Submitting.")

    return [
        turn(call("read_file", path="."), text="Let me look at the repository layout first."),
        turn(
            call("read_file", path="textstats/wordcount.py"),
            text="The issue is about word_count; reading it.",
        ),
        turn(
            call("search", pattern=r"split\(", path="textstats"),
            call("search", pattern="word_count", path="."),
            text="Where is text split, and who calls word_count?",
        ),
        turn(call("read_file", path="textstats/format.py")),
        turn(call("read_file", path="README.md"), text="What does the package promise?"),
        turn(call("search", pattern="strip", path="textstats")),
        turn(call("read_file", path="textstats/__main__.py")),
        turn(call("search", pattern="WORDS_PER_MINUTE", path=".")),
        turn(call("search", pattern=r"split\(", path="textstats"), text="Let me check the splitting again."),
        turn(call("read_file", path="textstats/__init__.py")),
        turn(call("search", pattern="def ", path="textstats")),
        turn(
            call(
                "edit_file",
                path="textstats/wordcount.py",
                old_str='text.strip().split(" ")',
                new_str="text.split()",
            ),
            text='split(" ") is the bug: it makes an empty word for every extra space. Fixing it.',
        ),
        turn(call("submit"), text="That should do it. Submitting."),
        turn(
            call("create_file", path="reproduce_wordcount.py", content=REPRO_SCRIPT),
            text="Right, nothing has checked the fix yet. Writing a script with the reported cases.",
        ),
        turn(call("bash", command="python reproduce_wordcount.py")),
        turn(call("bash", command="python -m unittest -q"), text="And the existing test suite."),
        finish,
        finish,
        finish,
        finish,
    ]


@dataclass
class DemoResult:
    session_id: str
    summary: Any = None  # planguard.session.SessionSummary
    messages: list[Any] = field(default_factory=list)
    repo: Path | None = None
    store_dir: Path | None = None
    fixed: bool = False
    model: Any = None  # the ScriptedChatModel: every request it received, reminders and nudges included
    shop: Any = None  # the support demo's order database (support.Shop) after the run


def _guard(
    config_path: Path, store_dir: Path | None, stream: IO[str], color: bool | None, sinks: Sequence[Any] = ()
) -> tuple[Any, Any, Any]:
    from planguard.config import load_config
    from planguard.guard import Guard
    from planguard.sinks import Sink
    from planguard.sinks.console import ConsoleSink

    class _LastSummary(Sink):
        summary: Any = None

        def on_session_end(self, session: Any, summary: Any, state: Any) -> None:
            self.summary = summary

    cfg = load_config(config_path)
    if store_dir is not None:
        cfg = cfg.model_copy(update={"store": cfg.store.model_copy(update={"path": str(store_dir)})})
    last = _LastSummary()
    if color is not False and importlib.util.find_spec("rich") is None:
        color = False  # colour needs rich; plain text otherwise
    console = ConsoleSink(stream, color=color)
    return Guard(cfg, sinks=[console, last, *sinks]), console, last


def _say(stream: IO[str], text: str) -> None:
    stream.write(text + "\n")
    stream.flush()


def _narrate(stream: IO[str], update: dict[str, Any], console: Any, model: Any) -> None:
    """The agent's side of the run, between the console sink's timeline lines: what planguard added to the
    model request (besides the periodic reminders the timeline already shows) and what the model answered."""
    from langchain_core.messages import AIMessage, HumanMessage

    from planguard_langchain import is_planguard_message

    console.flush()
    for node, delta in update.items():
        if node != "model" or not isinstance(delta, dict):
            continue
        requests = model.requests
        if requests:
            for m in requests[-1].messages:
                text = str(m.content)
                if isinstance(m, HumanMessage) and is_planguard_message(m) and not text.startswith(_PERIODIC):
                    _say(stream, "  planguard ▸ to the model: " + _short(text, 140))
        for m in delta.get("messages", ()):
            if not isinstance(m, AIMessage):
                continue
            calls = ", ".join(f"{c['name']}({_args(c['args'])})" for c in m.tool_calls)
            text = str(m.content).strip()
            line = "  agent ▸ " + (text if text else "") + (f"  → {calls}" if calls else "")
            _say(stream, line.rstrip())


_PERIODIC = "PLAN REMINDER: (automatic"


def _short(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _args(args: dict[str, Any]) -> str:
    parts = []
    for k, v in args.items():
        s = repr(v)
        parts.append(f"{k}={s if len(s) <= 40 else s[:37] + '…'}")
    return ", ".join(parts)


def run_demo(
    config_path: Path | None = None,
    *,
    store_dir: Path | None = None,
    stream: IO[str] | None = None,
    color: bool | None = None,
    keep_repo: bool = False,
) -> DemoResult:
    """Run the demo once; returns what happened (the timeline goes to ``stream``)."""
    from langchain.agents import create_agent

    from planguard_langchain import PlanGuardMiddleware
    from planguard_langchain.testing import ScriptedChatModel

    out = stream if stream is not None else sys.stdout
    config_path = config_path or DEFAULT_CONFIG
    guard, console, last = _guard(config_path, store_dir, out, color)
    tmp = repo_template.temporary_repo()
    repo = Path(tmp.name)
    result = DemoResult(
        session_id=f"demo-{uuid.uuid4().hex[:6]}", repo=repo, store_dir=Path(guard.config.store.path)
    )
    try:
        _say(out, "planguard demo — a LangChain v1 coding agent (scripted model, real tools), monitored live")
        _say(out, f"  repository  {repo}   (throw-away copy of a small package with a real bug)")
        _say(out, f"  task        {repo_template.ISSUE}")
        _say(out, f"  config      {_shown(config_path)}")
        _say(out, "")
        model = result.model = ScriptedChatModel(turns=script(), final=FINAL_ANSWER)
        agent = create_agent(
            model,
            demo_tools.make_tools(repo),
            system_prompt="You are a careful software engineer. " + guard.pipeline.plan.render(),
            middleware=[PlanGuardMiddleware(guard, actions=demo_tools.TOOL_ACTIONS)],
        )
        _stream(agent, repo_template.ISSUE, result, out, console)
        result.fixed = _tests_pass(repo)
    finally:
        guard.shutdown()
        if not keep_repo:
            tmp.cleanup()
    result.summary = last.summary
    _report(out, result)
    return result


def _stream(agent: Any, task: str, result: DemoResult, out: IO[str], console: Any) -> None:
    """Run the agent on ``task``, narrating each model turn between the timeline lines."""
    from langchain_core.messages import HumanMessage
    from langchain_core.runnables import RunnableConfig

    config: RunnableConfig = {"configurable": {"thread_id": result.session_id}, "recursion_limit": 200}
    inputs: Any = {"messages": [HumanMessage(task)]}
    chunk: Any
    for mode, chunk in agent.stream(inputs, config, stream_mode=["updates", "values"]):
        if mode == "updates":
            _narrate(out, chunk, console, result.model)
        else:
            result.messages = list(chunk.get("messages", ()))


def run_support_demo(
    config_path: Path | None = None,
    *,
    store_dir: Path | None = None,
    stream: IO[str] | None = None,
    color: bool | None = None,
    sinks: Sequence[Any] = (),
) -> DemoResult:
    """The support demo once: a refund request handled over an in-memory order database. ``fixed`` is true
    when the order was refunded exactly once, after the customer confirmed. ``sinks`` are added to the
    guard's (a test's recorder)."""
    from langchain.agents import create_agent

    from planguard_langchain import PlanGuardMiddleware
    from planguard_langchain.testing import ScriptedChatModel

    out = stream if stream is not None else sys.stdout
    config_path = config_path or support.CONFIG
    guard, console, last = _guard(config_path, store_dir, out, color, sinks)
    shop = support.Shop.sample()
    result = DemoResult(
        session_id=f"support-{uuid.uuid4().hex[:6]}", store_dir=Path(guard.config.store.path), shop=shop
    )
    try:
        _say(
            out, "planguard demo — a LangChain v1 support agent (scripted model, real tools), monitored live"
        )
        _say(out, "  shop        an in-memory order database (3 orders, 2 customers)")
        _say(out, f"  task        {support.TASK}")
        _say(out, f"  config      {_shown(config_path)}")
        _say(out, "")
        model = result.model = ScriptedChatModel(turns=support.script(), final=support.FINAL_ANSWER)
        agent = create_agent(
            model,
            support.make_tools(shop),
            system_prompt="You are a customer support agent of an online shop. "
            + guard.pipeline.plan.render(),
            middleware=[PlanGuardMiddleware(guard)],
        )
        _stream(agent, support.TASK, result, out, console)
    finally:
        guard.shutdown()
    result.summary = last.summary
    result.fixed = shop.refunds == [("O-5531", 89.0)] and "O-5531" in shop.confirmed
    _report(out, result, outcome="refunded once, after the customer confirmed" if result.fixed else None)
    return result


def _tests_pass(repo: Path) -> bool:
    import subprocess

    proc = subprocess.run(
        [sys.executable, "-m", "unittest", "-q"],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return proc.returncode == 0


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _report(out: IO[str], r: DemoResult, outcome: str | None = None) -> None:
    s = r.summary
    _say(out, "")
    if s is None:
        _say(out, "planguard recorded no session summary (see the warnings above).")
        return
    primary = s.primary
    _say(out, "Result")
    _say(out, f"  tool calls {s.n_steps} · model calls {s.n_model_calls} · phases {s.letters}")
    _say(out, f"  Langutory  {' '.join(s.langutory)}")
    if primary is not None:
        _say(
            out,
            f"  compliance PC {primary.PC:.2f} (PPC {primary.PPC:.2f} · POC {primary.POC:.2f} · "
            f"PPF {primary.PPF:.2f})"
            + (f" · skipped/out of plan: {', '.join(primary.extra_phases)}" if primary.extra_phases else ""),
        )
    decisions = ", ".join(f"{k} ×{n}" for k, n in sorted(s.decision_counts.items()))
    findings = ", ".join(f"{k} ×{n}" for k, n in sorted(s.finding_counts.items()))
    _say(out, f"  decisions  {decisions or 'none'}")
    _say(out, f"  findings   {findings or 'none'}")
    if r.shop is not None:
        _say(out, f"  outcome    {outcome or 'NOT as intended (see the timeline)'}")
    else:
        _say(out, f"  the fix    {'tests pass in the agent’s repository' if r.fixed else 'tests FAIL'}")
    if r.store_dir is not None:
        replay = "planguard replay" + (f" --config {_shown(support.CONFIG)}" if r.shop is not None else "")
        _say(out, f"  recorded   {_shown(r.store_dir)}/  (replay it: {replay} {_shown(r.store_dir)})")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description="planguard demo: a monitored LangChain agent run, no API key needed."
    )
    add_arguments(p)
    args = p.parse_args(argv)
    return run_from_args(args)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--agent",
        choices=AGENTS,
        default="coding",
        help="coding (default): fix a bug in a throw-away repository; support: handle a refund request",
    )
    p.add_argument(
        "--config",
        type=Path,
        help="planguard config (default: the demo's own planguard.yaml, or support.yaml for support)",
    )
    p.add_argument(
        "--store", type=Path, metavar="DIR", help="session store directory (default: the config's)"
    )
    p.add_argument("--keep-repo", action="store_true", help="keep the throw-away repository for inspection")
    p.add_argument("--no-color", action="store_true", help="plain text even on a terminal")


def run_from_args(args: argparse.Namespace) -> int:
    from planguard.config import ConfigError, load_config

    agent = getattr(args, "agent", "coding")
    config = args.config or (support.CONFIG if agent == "support" else DEFAULT_CONFIG)
    try:
        load_config(config)
    except (ConfigError, OSError) as exc:
        print(f"planguard demo: {exc}", file=sys.stderr)
        return 2
    if agent == "support":
        handled = run_support_demo(args.config, store_dir=args.store, color=False if args.no_color else None)
        return 0 if handled.summary is not None and handled.fixed else 1
    result = run_demo(
        args.config, store_dir=args.store, color=False if args.no_color else None, keep_repo=args.keep_repo
    )
    return 0 if result.summary is not None and result.fixed else 1
