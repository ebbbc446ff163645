"""Run the proxy with uvicorn (``planguard proxy`` calls ``serve``)."""

from __future__ import annotations

from typing import Any

from planguard.config import Config

from .app import create_app
from .config import ProxyConfig

__all__ = ["serve"]


def serve(config: Config, proxy: ProxyConfig, **uvicorn_kw: Any) -> None:
    """Serve until interrupted. Access logs stay off: request lines are all they would add, and the
    proxy's traffic carries credentials in headers that must never reach a log."""
    import logging

    import uvicorn

    # httpx logs every upstream request line at INFO; a query string may carry a key (some APIs take one
    # there), so the proxy keeps that logger at WARNING.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    app = create_app(config, proxy)
    # The upstream's own Server/Date headers are forwarded; uvicorn must not add a second pair. Agents' HTTP
    # clients keep idle connections ~5 s (httpx): a longer server keep-alive means a reused connection is
    # never one the proxy is closing at that moment.
    kw: dict[str, Any] = {
        "log_level": "warning",
        "access_log": False,
        "lifespan": "on",
        "timeout_graceful_shutdown": 10,
        "server_header": False,
        "date_header": False,
        "timeout_keep_alive": 75,
    }
    kw.update(uvicorn_kw)
    uvicorn.run(app, host=proxy.host, port=proxy.port, **kw)
