"""Scale-out: proxy replicas sharing conversation state serve alternating requests of one conversation as
one session — same phases, metrics and reminders as one proxy, each operation recorded exactly once.

In process (two proxies sharing a MemoryStore) and across processes (two ``planguard proxy`` servers
sharing Debian's redis-server, started by .ci/services/redis.sh; REDIS_URL names it).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from planguard_proxy import MemoryStore
from proxy_fakes import (
    SCRIPTED_COMMANDS,
    FakeUpstream,
    RecordingSink,
    ServerThread,
    proxy_stack,
    quiet_config,
)
from test_proxy_e2e import GATE, reminder_calls, run_anthropic_agent, run_openai_agent, workdir

COMPARED = (
    "n_steps",
    "n_model_calls",
    "letters",
    "langutory",
    "scores",
    "finding_counts",
    "decision_counts",
    "open_calls",
    "log_position",
)


def _summary(url: str, sid: str) -> dict[str, Any]:
    r = httpx.get(f"{url}/_planguard/sessions/{sid}", timeout=10)
    assert r.status_code == 200, r.text
    return {k: r.json()[k] for k in COMPARED}


def _settled_summary(url: str, sid: str, want: dict[str, Any], timeout_s: float = 10.0) -> dict[str, Any]:
    """The summary once it equals ``want``, or the last one read after ``timeout_s``: a request's
    entries reach the shared store while the upstream answers and its response's own after the client
    has it (write-behind), so a summary read right after the run may miss the last request's results."""
    deadline = time.monotonic() + timeout_s
    while True:
        got = _summary(url, sid)
        if got == want or time.monotonic() > deadline:
            return got
        time.sleep(0.05)


def _reference(
    api: str, tmp_path: Path, stream: bool, config: Any = None
) -> tuple[dict[str, Any], list[int]]:
    """One proxy, one conversation: what the replicas must reproduce."""
    with proxy_stack(config=config) as stack:
        run = run_openai_agent if api == "openai" else run_anthropic_agent
        run(stack.url, workdir(tmp_path / "ref"), stream=stream)
        (sid,) = stack.app.monitor.conversations
        return _summary(stack.url, sid), reminder_calls(stack)


@pytest.mark.parametrize("api,stream", [("openai", False), ("anthropic", True)])
def test_two_replicas_sharing_a_memory_store_are_one_session(api: str, stream: bool, tmp_path: Path) -> None:
    (tmp_path / "ref").mkdir()
    reference, ref_reminders = _reference(api, tmp_path, stream)
    assert reference["n_steps"] == len(SCRIPTED_COMMANDS)
    store = MemoryStore()
    fake = FakeUpstream()
    sinks = (RecordingSink(), RecordingSink())
    with ServerThread(fake.app) as up, ExitStack() as stacks:
        a = stacks.enter_context(proxy_stack(fake=fake, upstream=up, store=store, sinks=(sinks[0],)))
        b = stacks.enter_context(proxy_stack(fake=fake, upstream=up, store=store, sinks=(sinks[1],)))
        run = run_openai_agent if api == "openai" else run_anthropic_agent
        run([a.url, b.url], workdir(tmp_path), stream=stream)
        (sid,) = a.app.monitor.conversations
        assert list(b.app.monitor.conversations) == [sid]
        assert a.app.monitor.counters["replayed"] > 0 and b.app.monitor.counters["replayed"] > 0
        assert _summary(a.url, sid) == reference
        assert _summary(b.url, sid) == reference
        assert reminder_calls(a) == ref_reminders == [5, 10]
    # Telemetry: every tool call recorded once, by the replica that saw it live; one start, one end.
    ends = sinks[0].of("tool_end") + sinks[1].of("tool_end")
    assert len(ends) == len(SCRIPTED_COMMANDS)
    assert len({e[0] for e in ends}) == len(SCRIPTED_COMMANDS)
    assert len(sinks[0].of("start") + sinks[1].of("start")) == 1
    assert sinks[0].of("end") + sinks[1].of("end") == [len(SCRIPTED_COMMANDS)]


class SlowToLogCalls(MemoryStore):
    """A shared store slow to take an answer's tool calls (a busy Redis, a loaded machine): the window in
    which the agent's next request, carrying the calls' results, may already reach the other replica."""

    async def append(self, key: str, entries: list[dict[str, Any]]) -> int:
        if any(e.get("op") == "call" for e in entries):
            await asyncio.sleep(0.3)
        return await super().append(key, entries)


@pytest.mark.parametrize("api,stream", [("openai", True), ("anthropic", False)])
def test_the_next_request_on_another_replica_knows_the_answers_calls_however_slow_the_log(
    api: str, stream: bool, tmp_path: Path
) -> None:
    """An answer's tool calls are in the log before the client has the answer: with them logged after it,
    the agent's next request reached the other replica first, which did not know the calls and lost their
    results (one log entry short: ``log_position`` 30 against 31, the flaky two-process Redis test)."""
    (tmp_path / "ref").mkdir()
    reference, _ = _reference(api, tmp_path, stream)
    store = SlowToLogCalls()
    fake = FakeUpstream()
    with ServerThread(fake.app) as up, ExitStack() as stacks:
        a = stacks.enter_context(proxy_stack(fake=fake, upstream=up, store=store))
        b = stacks.enter_context(proxy_stack(fake=fake, upstream=up, store=store))
        run = run_openai_agent if api == "openai" else run_anthropic_agent
        run([a.url, b.url], workdir(tmp_path), stream=stream)
        (sid,) = a.app.monitor.conversations
        assert _summary(a.url, sid) == reference
        assert _summary(b.url, sid) == reference


def test_replicas_agree_on_gate_decisions(tmp_path: Path) -> None:
    (tmp_path / "ref").mkdir()
    config = quiet_config(**GATE)
    reference, _ = _reference("openai", tmp_path, True, config)
    assert reference["decision_counts"].get("deny", 0) >= 1  # the sed (and, asked again, more)
    store = MemoryStore()
    fake = FakeUpstream()
    with ServerThread(fake.app) as up, ExitStack() as stacks:
        a = stacks.enter_context(proxy_stack(fake=fake, upstream=up, store=store, config=config))
        b = stacks.enter_context(proxy_stack(fake=fake, upstream=up, store=store, config=config))
        run_openai_agent([a.url, b.url], workdir(tmp_path), stream=True)
        (sid,) = a.app.monitor.conversations
        assert _summary(b.url, sid) == reference
        assert _summary(a.url, sid) == reference


# ---------------------------------------------------------------------- two processes, one Redis


@contextmanager
def _proxy_process(config_file: Path, port: int) -> Iterator[str]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "planguard",
            "proxy",
            "--config",
            str(config_file),
            "--listen",
            f"127.0.0.1:{port}",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(url + "/_planguard/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                out = proc.stdout.read() if proc.stdout else ""
                raise RuntimeError(f"planguard proxy did not start:\n{out}")
            time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def redis_url() -> str:
    url = os.environ.get("REDIS_URL")
    if not url:
        pytest.skip("REDIS_URL not set: start Redis with `eval $(bash .ci/services/redis.sh start)`")
    return url


@pytest.mark.e2e
@pytest.mark.parametrize("api,stream", [("openai", True), ("anthropic", False)])
def test_two_proxy_processes_sharing_redis_are_one_session(
    api: str, stream: bool, tmp_path: Path, redis_url: str
) -> None:
    (tmp_path / "ref").mkdir()
    reference, _ = _reference(api, tmp_path, stream)
    fake = FakeUpstream()
    with ServerThread(fake.app) as up:
        cfg = {
            "telemetry": {"enabled": False},
            "store": {"enabled": False},
            "proxy": {
                "upstream": up.url,
                "store": {"backend": "redis", "url": redis_url, "key_prefix": f"test:{uuid.uuid4().hex}:"},
            },
        }
        config_file = tmp_path / "planguard.yaml"
        config_file.write_text(yaml.safe_dump(cfg))
        with _proxy_process(config_file, _free_port()) as a, _proxy_process(config_file, _free_port()) as b:
            run = run_openai_agent if api == "openai" else run_anthropic_agent
            run([a, b], workdir(tmp_path), stream=stream)
            sid = httpx.get(a + "/_planguard/health").json()
            assert sid["requests"] == 6 and sid["replayed"] > 0
            conv_id = _conversation_id(fake)
            assert _settled_summary(a, conv_id, reference) == reference
            assert _settled_summary(b, conv_id, reference) == reference
            assert reminder_calls_of(fake) == [5, 10]


def _conversation_id(fake: FakeUpstream) -> str:
    from planguard_proxy import session_key
    from planguard_proxy.wire import WIRES

    r = fake.requests[0]
    wire = WIRES["openai" if r.path.endswith("/chat/completions") else "anthropic"]
    sid = session_key(wire, r.body)
    assert sid is not None
    return str(sid)


def reminder_calls_of(fake: FakeUpstream) -> list[int]:
    class _S:
        pass

    s = _S()
    s.fake = fake  # type: ignore[attr-defined]
    return reminder_calls(s)
