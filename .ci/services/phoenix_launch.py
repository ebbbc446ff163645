"""Run ``phoenix serve`` with every listener on 127.0.0.1.

Phoenix honours PHOENIX_HOST for its HTTP server but always binds its OTLP/gRPC receiver to ``[::]``; this
launcher rewrites that one address before Phoenix starts, so nothing it opens is reachable from outside.
Run with the Phoenix venv's interpreter: ``python phoenix_launch.py serve``.
"""

from __future__ import annotations

import sys

from grpc.aio import _server as grpc_aio_server

_add_insecure_port = grpc_aio_server.Server.add_insecure_port
_add_secure_port = grpc_aio_server.Server.add_secure_port


def _loopback(address: str) -> str:
    for wildcard in ("[::]:", "0.0.0.0:"):
        if address.startswith(wildcard):
            return "127.0.0.1:" + address[len(wildcard) :]
    return address


def _insecure(self, address):  # type: ignore[no-untyped-def]
    return _add_insecure_port(self, _loopback(address))


def _secure(self, address, credentials):  # type: ignore[no-untyped-def]
    return _add_secure_port(self, _loopback(address), credentials)


grpc_aio_server.Server.add_insecure_port = _insecure  # type: ignore[method-assign]
grpc_aio_server.Server.add_secure_port = _secure  # type: ignore[method-assign]

if __name__ == "__main__":
    from phoenix.server.main import main

    sys.argv = ["phoenix", *sys.argv[1:]]
    sys.exit(main())
