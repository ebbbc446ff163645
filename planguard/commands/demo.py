"""``planguard demo [--agent coding|support] [--config FILE] [--store DIR] [--keep-repo] [--no-color]``

A monitored agent run that needs no API key and no network: a LangChain v1 agent with a scripted model and
real tools fixes a bug in a throw-away repository (``coding``, the default) or handles a refund request over
an in-memory order database under a plan of declared phases (``support``), while planguard prints its live
timeline and records the session. The agents live in the repository's ``examples/demo/``; the LangChain
integration is imported only here, inside ``run``, so the core never depends on it.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

__all__ = ["find_demo", "load_demo", "register", "run"]

DEMO_SCRIPT = Path("examples") / "demo" / "agent.py"
INSTALL_HINT = (
    "planguard demo needs the LangChain integration. From the planguard repository run:\n"
    "    pip install -e integrations/langchain"
)


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "demo",
        help="run a monitored LangChain agent (coding or support) with a scripted model (no API key)",
        description="A LangChain v1 coding agent (scripted model, real tools) fixes a bug in a throw-away "
        "repository; planguard reminds, nudges and gates it live, prints a timeline and records the session.",
    )
    p.add_argument(
        "--agent",
        choices=("coding", "support"),
        default="coding",
        help="coding (default): fix a bug in a throw-away repository; support: a refund request over an "
        "in-memory order database, under a plan of declared phases and a confirm-before-refund gate",
    )
    p.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="planguard config (default: examples/planguard.yaml; examples/demo/support.yaml for support)",
    )
    p.add_argument(
        "--store", type=Path, metavar="DIR", help="session store directory (default: the config's)"
    )
    p.add_argument("--keep-repo", action="store_true", help="keep the throw-away repository for inspection")
    p.add_argument("--no-color", action="store_true", help="plain text even on a terminal")
    p.set_defaults(func=run)


def find_demo() -> Path | None:
    """The demo script: in the checkout planguard runs from, else under the working directory."""
    here = Path(__file__).resolve().parents[2]  # planguard/commands/demo.py -> repository root
    for root in (here, Path.cwd()):
        candidate = root / DEMO_SCRIPT
        if candidate.is_file():
            return candidate
    return None


def load_demo(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("_planguard_demo_agent", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def run(args: argparse.Namespace) -> int:
    try:
        import langchain.agents  # noqa: F401
        import planguard_langchain  # noqa: F401
    except ImportError as exc:
        print(f"{INSTALL_HINT}\n({exc})", file=sys.stderr)
        return 2
    path = find_demo()
    if path is None:
        print(
            f"planguard demo: {DEMO_SCRIPT} not found. The demo ships with the planguard repository; run "
            "this "
            "command from a checkout (or an editable install) of it.",
            file=sys.stderr,
        )
        return 2
    demo = load_demo(path)
    return int(demo.run_from_args(args))
