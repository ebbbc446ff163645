"""Run the proxy with uvicorn (``planguard proxy`` calls ``serve``)."""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from planguard.config import Config

from .app import create_app
from .config import ProxyConfig

__all__ = ["header_timeout_protocol", "serve"]


def header_timeout_protocol(seconds: float) -> type[HttpToolsProtocol]:
    """uvicorn's HTTP/1.1 protocol, closing a connection whose request headers are not complete within
    ``seconds`` of its opening or of the request's first byte. uvicorn times out idle keep-alive
    connections only: one that opens and never finishes its headers would hold a file descriptor forever
    (a few hundred of them exhaust the process). The body has its own limit in the app."""

    class HeaderTimeoutProtocol(HttpToolsProtocol):
        _header_timer: asyncio.TimerHandle | None = None

        def _arm(self) -> None:
            self._disarm()
            self._header_timer = self.loop.call_later(seconds, self._headers_too_slow)

        def _disarm(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _headers_too_slow(self) -> None:
            self._header_timer = None
            if not self.transport.is_closing():
                self.transport.close()

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._arm()

        def on_headers_complete(self) -> None:
            self._disarm()
            super().on_headers_complete()

    return HeaderTimeoutProtocol


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
        "http": header_timeout_protocol(proxy.timeouts.client_headers),
    }
    kw.update(uvicorn_kw)
    uvicorn.run(app, host=proxy.host, port=proxy.port, **kw)
