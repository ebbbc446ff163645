"""The planguard demo (``planguard demo``): a LangChain v1 coding agent with a scripted model and real tools
fixes a bug in a throw-away repository while planguard reminds, nudges and gates it live. Its config,
``planguard.yaml``, ships in this package."""

from __future__ import annotations

from .agent import DEFAULT_CONFIG, DemoResult, add_arguments, main, run_demo, run_from_args

__all__ = ["DEFAULT_CONFIG", "DemoResult", "add_arguments", "main", "run_demo", "run_from_args"]
