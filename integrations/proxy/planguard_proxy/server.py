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
    import gc
    import logging

    import uvicorn

    # httpx logs every upstream request line at INFO; a query string may carry a key (some APIs take one
    # there), so the proxy keeps that logger at WARNING.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    app = create_app(config, proxy)
    # Everything loaded so far (modules, classes, the config, the guard's rules) lives as long as the process.
    # Frozen, the cyclic collector's full passes skip it: ~50k objects that otherwise cost tens of
    # milliseconds per full pass — a stall of every request in flight — for nothing.
    gc.collect()
    gc.freeze()
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
        # No X-Forwarded-For rewriting of the client address: the proxy never uses it, and the middleware
        # is one more layer on every request.
        "proxy_headers": False,
    }
    kw.update(uvicorn_kw)
    uvicorn.run(app, host=proxy.host, port=proxy.port, **kw)
