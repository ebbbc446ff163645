"""``planguard proxy --config FILE [--listen HOST:PORT] [--upstream URL] [--store-url redis://…]``: the
subcommand this distribution adds to the ``planguard`` command (entry-point group ``planguard.commands``).

A model-API proxy: point an agent's base URL at it and planguard monitors the agent with no code change.
The server stack is imported only when the command runs. :func:`check_config_section` is what
``planguard check-config`` runs on a config file's ``proxy:`` section (:data:`CONFIG_SECTION`).
"""

from __future__ import annotations

import argparse
import sys

__all__ = ["CONFIG_SECTION", "check_config_section", "register", "run"]

#: The config file's top-level key this distribution reads (``planguard check-config`` checks it here).
CONFIG_SECTION = "proxy"


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "proxy",
        help="run a model-API proxy that monitors any agent (OpenAI / Anthropic APIs)",
        description="Serve OpenAI-compatible POST /v1/chat/completions and Anthropic POST /v1/messages "
        "(streaming and not), monitoring the tool calls that pass through; everything else is forwarded "
        "unchanged. Settings come from the config file's 'proxy:' section; flags override them.",
    )
    p.add_argument(
        "--config", metavar="FILE", help="planguard config (YAML/TOML/JSON) with an optional proxy: section"
    )
    p.add_argument("--listen", metavar="HOST:PORT", help="address to bind (default 127.0.0.1:8787)")
    p.add_argument("--upstream", metavar="URL", help="base URL of the model API for every route")
    p.add_argument(
        "--gate", choices=("rewrite", "annotate", "observe"), help="what a denied tool call becomes"
    )
    p.add_argument(
        "--text-actions",
        action="store_true",
        default=None,
        help="read fenced bash blocks in assistant text as shell calls (mini-swe-agent text mode)",
    )
    p.add_argument("--store-url", metavar="URL", help="redis://HOST:PORT/DB: share state with other replicas")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from planguard.config import ConfigError

    from .config import load_proxy_config
    from .server import serve

    try:
        config, proxy = load_proxy_config(args.config)
        data = proxy.model_dump()
        for key in ("listen", "upstream", "gate"):  # the flags given override the config's section
            if getattr(args, key):
                data[key] = getattr(args, key)
        if args.text_actions:
            data["text_actions"]["enabled"] = True
        if args.store_url:
            data["store"].update(backend="redis", url=args.store_url)
        proxy = type(proxy).model_validate(data)
    except (ConfigError, ValueError) as exc:
        print(f"planguard proxy: {exc}", file=sys.stderr)
        return 2
    print(
        f"planguard proxy: listening on http://{proxy.listen} "
        f"(store: {proxy.store.backend}, gate: {proxy.gate})",
        file=sys.stderr,
    )
    serve(config, proxy)
    return 0


def check_config_section(path: str) -> str | None:
    """The summary line of the file's ``proxy:`` section (None when it has none); ConfigError if invalid."""
    from planguard.config import load_section

    from .config import ProxyConfig

    proxy = load_section(path, CONFIG_SECTION, ProxyConfig)
    if proxy is None:
        return None
    return f"proxy: listen {proxy.listen}, gate {proxy.gate}, store {proxy.store.backend}"
