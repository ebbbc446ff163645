"""The Prometheus scrape endpoint's HTTP server, bounded in threads.

``prometheus_client``'s own server starts a thread per connection and waits for the request without a
limit: 300 clients that send half a request hold 300 threads of the agent's process. This one serves at
most ``max_threads`` connections at once, gives each ``request_timeout_s`` to send its request, and closes
a connection that finds every thread busy at once (counted), so a scraper is served again as soon as a
slow client's time is up.
"""

from __future__ import annotations

import socket
import threading
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

from ..drops import DropCounter

__all__ = ["BoundedWSGIServer"]


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # scrapes are not the agent's log
        pass


class BoundedWSGIServer(WSGIServer):
    """Serves a WSGI app on at most ``max_threads`` daemon threads (see the module docstring)."""

    daemon_threads = True
    # Connections waiting to be accepted (then served or refused at once); the default 5 leaves a burst of
    # clients retrying their handshakes for seconds.
    request_queue_size = 128

    def __init__(
        self,
        address: tuple[str, int],
        app: Any,
        *,
        max_threads: int,
        request_timeout_s: float,
        drops: DropCounter,
    ) -> None:
        if max_threads < 1:
            raise ValueError("max_threads must be at least 1")
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, _QuietHandler)
        self.set_app(app)
        self.request_timeout_s = request_timeout_s
        self.drops = drops
        self._slots = threading.BoundedSemaphore(max_threads)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            self.drops.add("prometheus_connection_refused")
            self.shutdown_request(request)
            return
        threading.Thread(
            target=self._serve, args=(request, client_address), name="planguard-prometheus-conn", daemon=True
        ).start()

    def _serve(self, request: Any, client_address: Any) -> None:
        try:
            request.settimeout(self.request_timeout_s)
            self.finish_request(request, client_address)
        except Exception:  # a client that went away or sent too slowly: nothing to answer
            pass
        finally:
            self.shutdown_request(request)
            self._slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:  # no tracebacks on stderr
        pass
