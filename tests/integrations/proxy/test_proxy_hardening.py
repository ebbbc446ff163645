"""The proxy under hostile clients and a failing store (issue #21's proxy rows), each against real parts:
raw sockets on 127.0.0.1, a real redis-server killed or frozen mid-run."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from planguard_proxy import ProxyConfig, create_app
from planguard_proxy.server import header_timeout_protocol
from planguard_proxy.store import RedisStore
from proxy_fakes import FakeUpstream, Reply, ServerThread, proxy_stack, quiet_config


def _raw(port: int, data: bytes, wait_s: float = 5.0) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=wait_s) as s:
        s.sendall(data)
        out = b""
        try:
            while chunk := s.recv(65536):
                out += chunk
                if b"\r\n\r\n" in out:
                    break
        except TimeoutError:
            pass
        return out


def test_options_star_gets_an_answer_not_a_500() -> None:
    with proxy_stack() as stack:
        out = _raw(stack.proxy.port, b"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n")
    assert out.startswith(b"HTTP/1.1 204"), out
    assert b"allow: " in out.lower()


@pytest.mark.parametrize("target", [b"/../v1/models", b"/v1/../../v1/models", b"/%2e%2e/v1/models"])
def test_dot_segments_cannot_escape_the_upstream_base_path(target: bytes) -> None:
    fake = FakeUpstream()
    with ServerThread(fake.app) as up, proxy_stack(fake=fake, upstream=up) as stack:
        stack.app._bases = {k: up.url + "/base" for k in stack.app._bases}  # upstream with a base path
        out = _raw(stack.proxy.port, b"GET " + target + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    assert out.startswith(b"HTTP/1.1 400"), out
    assert fake.requests == []  # nothing reached /v1/models outside /base


def test_headers_named_in_connection_are_not_forwarded() -> None:
    with proxy_stack() as stack:
        r = httpx.get(
            stack.url + "/v1/models",
            headers={"Connection": "keep-alive, X-Hop-Secret", "X-Hop-Secret": "s3cr3t", "X-Kept": "1"},
        )
    assert r.status_code == 200
    seen = stack.fake.requests[-1].headers
    assert "x-hop-secret" not in seen
    assert seen["x-kept"] == "1"


def test_a_client_that_never_finishes_its_headers_is_disconnected() -> None:
    app = create_app(quiet_config(), ProxyConfig())
    with ServerThread(app, http=header_timeout_protocol(0.5)) as proxy:
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as s:
            s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n")  # headers never end
            t0 = time.monotonic()
            assert s.recv(100) == b""  # closed by the proxy
            assert time.monotonic() - t0 < 3
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as s:
            t0 = time.monotonic()
            assert s.recv(100) == b""  # connected, sent nothing
            assert time.monotonic() - t0 < 3


def test_a_client_that_never_finishes_its_body_gets_408() -> None:
    with proxy_stack(timeouts={"client_body": 0.5}) as stack:
        head = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"
        t0 = time.monotonic()
        out = _raw(stack.proxy.port, head)
    assert out.startswith(b"HTTP/1.1 408"), out
    assert time.monotonic() - t0 < 3
    assert stack.fake.requests == []


def test_an_ended_conversation_releases_its_log() -> None:
    config = quiet_config(sessions={"idle_timeout_s": 0.4})
    with proxy_stack(config=config) as stack:
        body: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": "task"}]}
        httpx.post(stack.url + "/v1/chat/completions", json=body, timeout=10)
        (sid,) = list(stack.app.monitor.conversations)
        assert asyncio.run(stack.app.store.read(sid, 0))  # logged while it runs
        deadline = time.monotonic() + 10
        while stack.app.monitor.counters["ended"] == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert stack.app.monitor.counters["ended"] == 1
        assert asyncio.run(stack.app.store.read(sid, 0)) == []  # and released once it ended


# ---------------------------------------------------------------------- a real Redis, killed or frozen


@pytest.fixture
def own_redis() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A redis-server of this test's own (it is killed): Debian's, as .ci/services/redis.sh installs."""
    exe = shutil.which("redis-server")
    if exe is None:
        pytest.skip("redis-server not installed: run `bash .ci/services/redis.sh start`")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [exe, "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            if time.monotonic() > deadline:
                proc.kill()
                raise
            time.sleep(0.05)
    yield f"redis://127.0.0.1:{port}/0", proc
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGCONT)
        proc.kill()
    proc.wait(10)


SUBMIT_GATE = {
    "fail_closed_gates": True,
    "policies": {
        "gates": [
            {
                "name": "no-early-submit",
                "tool": "bash",
                "arguments": {"command": "^submit"},
                "until": {"min_steps": 1000},
                "max_denials": None,
                "message": "GATE: run the tests before submitting",
            }
        ]
    },
}
BASH = {"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}


def _submit_script(wire: str, body: dict[str, Any]) -> Reply:
    return Reply(tool_calls=[("bash", {"command": "submit"})])


def _ask(url: str, n: int) -> httpx.Response:
    body = {
        "model": "m",
        "tools": [BASH],
        "messages": [{"role": "system", "content": "agent"}, {"role": "user", "content": f"task {n}"}],
    }
    return httpx.post(url + "/v1/chat/completions", json=body, timeout=30)


@pytest.mark.parametrize("failure", ["killed", "frozen"])
def test_fail_closed_gate_holds_when_redis_dies_mid_run(
    failure: str, own_redis: tuple[str, subprocess.Popen[bytes]]
) -> None:
    url, proc = own_redis
    store = RedisStore(url, prefix="test:hardening:")
    with proxy_stack(
        _submit_script, config=quiet_config(**SUBMIT_GATE), store=store, gate="rewrite", gate_retries=0
    ) as stack:
        first = _ask(stack.url, 1).json()["choices"][0]["message"]
        assert "tool_calls" not in first and "GATE" in first["content"]  # Redis up: denied
        if failure == "killed":
            proc.kill()
            proc.wait(10)
        else:
            os.kill(proc.pid, signal.SIGSTOP)  # Redis hangs: accepts, never answers
        t0 = time.monotonic()
        msgs = [_ask(stack.url, n).json()["choices"][0]["message"] for n in (2, 3, 4)]
        took = time.monotonic() - t0
    for msg in msgs:
        assert "tool_calls" not in msg, "a gated submit reached the agent while Redis was down"
        assert "GATE" in msg["content"]
    # One bounded store call (1 s) times out; the store is then left alone: not seconds per request.
    assert took < 3.0
