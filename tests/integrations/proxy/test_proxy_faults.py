"""Faults: the client always gets a well-formed answer or the upstream's own error.

Upstream 500/429/timeouts (before and during a stream), a stream that dies or is not SSE, a client that
hangs up mid-stream (the upstream request is cancelled), garbage request bodies, oversized bodies, and
planguard failing internally (traffic forwarded unchanged).
"""

from __future__ import annotations

import json
import socket
import time
from typing import Any

import httpx
import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from proxy_fakes import Reply, proxy_stack

MSGS = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
OPENAI_BODY = {"model": "m", "messages": MSGS}
ANTHROPIC_BODY = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "u"}]}
PATHS = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages"}


def _post(url: str, api: str, body: Any, **kw: Any) -> httpx.Response:
    return httpx.post(url + PATHS[api], json=body, timeout=30, **kw)


def _body(api: str, stream: bool) -> dict[str, Any]:
    return {**(OPENAI_BODY if api == "openai" else ANTHROPIC_BODY), "stream": stream}


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("api", ["openai", "anthropic"])
@pytest.mark.parametrize("status", [500, 429, 400, 401])
def test_upstream_errors_pass_through_with_status_body_and_headers(
    api: str, stream: bool, status: int
) -> None:
    err = {"error": {"message": f"upstream says {status}", "type": "server_error", "code": None}}
    reply = Reply(status=status, error_body=err, headers={"retry-after": "7", "x-request-id": "req-1"})
    with proxy_stack(lambda w, b: reply) as stack:
        r = _post(stack.url, api, _body(api, stream))
        errors = stack.guard.errors.total
    assert r.status_code == status
    assert r.json() == err
    assert r.headers["retry-after"] == "7" and r.headers["x-request-id"] == "req-1"
    assert errors == 0


def test_upstream_429_reaches_the_sdk_as_rate_limit_error() -> None:
    err = {"error": {"message": "slow down", "type": "rate_limit_error", "code": "rate_limit"}}
    with proxy_stack(lambda w, b: Reply(status=429, error_body=err)) as stack:
        client = openai.OpenAI(base_url=stack.url + "/v1", api_key="k", max_retries=0)
        with pytest.raises(openai.RateLimitError) as exc:
            client.chat.completions.create(model="m", messages=MSGS)  # type: ignore[arg-type]
    assert exc.value.status_code == 429 and "slow down" in str(exc.value)


@pytest.mark.parametrize("http_client", ["builtin", "httpx"])
@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_upstream_timeout_before_answer_is_504_in_api_shape(api: str, http_client: str) -> None:
    with proxy_stack(
        lambda w, b: Reply(text="late", delay_s=3), timeouts={"read": 0.5}, http_client=http_client
    ) as stack:
        t0 = time.monotonic()
        r = _post(stack.url, api, _body(api, False))
        elapsed = time.monotonic() - t0
    assert r.status_code == 504 and elapsed < 2.5
    body = r.json()
    if api == "openai":
        assert body["error"]["type"] == "timeout_error"
    else:
        assert body["type"] == "error" and body["error"]["type"] == "timeout_error"


def _events(raw: bytes) -> list[tuple[str | None, str]]:
    out = []
    for block in raw.decode().split("\n\n"):
        if not block.strip():
            continue
        ev = next((ln[7:] for ln in block.split("\n") if ln.startswith("event: ")), None)
        data = "\n".join(ln[6:] for ln in block.split("\n") if ln.startswith("data: "))
        out.append((ev, data))
    return out


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_stream_stalling_mid_way_ends_with_an_error_event(api: str) -> None:
    reply = Reply(text="hello world", tool_calls=[("bash", {"command": "ls"})], chunk_delay_s=0.0)
    calls = {"n": 0}

    def script(w: str, b: dict[str, Any]) -> Reply:
        calls["n"] += 1
        return Reply(text="hello world, a long answer", chunk_delay_s=1.0)

    with proxy_stack(script, timeouts={"read": 0.4}) as stack:
        r = _post(stack.url, api, _body(api, True))
    assert r.status_code == 200
    events = _events(r.content)
    last_event, last_data = events[-1]
    err = json.loads(last_data)
    if api == "openai":
        assert err["error"]["type"] == "timeout_error"
    else:
        assert last_event == "error" and err["error"]["type"] == "timeout_error"
    assert reply.text  # the scripted reply is unused; the stalling one answered


@pytest.mark.parametrize("http_client", ["builtin", "httpx"])
@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_stream_dropped_by_upstream_ends_with_an_error_event(api: str, http_client: str) -> None:
    reply = Reply(text="partial answer", tool_calls=[("bash", {"command": "ls -la"})], die_after_events=5)
    with proxy_stack(lambda w, b: reply, http_client=http_client) as stack:
        r = _post(stack.url, api, _body(api, True))
    assert r.status_code == 200
    events = _events(r.content)
    assert len(events) >= 5
    err = json.loads(events[-1][1])
    assert "error" in err
    for _ev, data in events[:-1]:
        json.loads(data)  # everything before the error is the upstream's own well-formed events


@pytest.mark.parametrize(
    "garbage",
    [
        b"data: {this is not json\n\ndata: [DONE]\n\n",
        b"<html>502 Bad Gateway</html>",
        b"\x00\xff\xfe garbage without any event terminator",
    ],
)
@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_malformed_upstream_stream_is_passed_through_unchanged(api: str, garbage: bytes) -> None:
    with proxy_stack(lambda w, b: Reply(malformed=garbage)) as stack:
        r = _post(stack.url, api, _body(api, True))
        stats = httpx.get(stack.url + "/_planguard/health").json()
    assert r.status_code == 200
    assert r.content == garbage  # the upstream's own answer, byte for byte
    assert stats["requests"] == 1


@pytest.mark.parametrize("http_client", ["builtin", "httpx"])
@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_client_disconnect_mid_stream_cancels_the_upstream_stream(api: str, http_client: str) -> None:
    reply = Reply(text="x" * 400, chunk_delay_s=0.05)  # ~10 s of stream if read to the end
    with proxy_stack(lambda w, b: reply, http_client=http_client) as stack:
        with (
            httpx.Client(timeout=10) as client,
            client.stream("POST", stack.url + PATHS[api], json=_body(api, True)) as r,
        ):
            assert r.status_code == 200
            next(r.iter_raw())
        assert stack.fake.disconnect_seen.wait(5), "the upstream stream was not cancelled"
        deadline = time.monotonic() + 5
        while stack.fake.in_flight and time.monotonic() < deadline:
            time.sleep(0.05)
        assert stack.fake.in_flight == 0
        assert stack.fake.streams_cancelled == 1 and stack.fake.streams_completed == 0
        # The proxy is still healthy and serves the next request.
        assert _post(stack.url, api, _body(api, False)).status_code == 200


@pytest.mark.parametrize("http_client", ["builtin", "httpx"])
@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_client_disconnect_while_waiting_cancels_the_upstream_request(api: str, http_client: str) -> None:
    with proxy_stack(lambda w, b: Reply(text="late", delay_s=5), http_client=http_client) as stack:
        body = json.dumps(_body(api, False)).encode()
        with socket.create_connection(("127.0.0.1", stack.proxy.port)) as s:
            s.sendall(
                b"POST "
                + PATHS[api].encode()
                + b" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                + f"Content-Length: {len(body)}\r\n\r\n".encode()
                + body
            )
            time.sleep(0.3)
        assert stack.fake.disconnect_seen.wait(3), "the upstream request was not cancelled"


@pytest.mark.parametrize("api", ["openai", "anthropic"])
@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"\x00\xff garbage",
        b"{",
        b"[]",
        b'"str"',
        b"null",
        b'{"messages": "nope"}',
        b'{"messages": [1, null, "x"]}',
        b'{"messages": [{"role": "tool"}], "model": 3}',
    ],
)
def test_garbage_request_bodies_get_the_upstreams_own_answer(api: str, body: bytes) -> None:
    with proxy_stack() as stack:
        r = httpx.post(stack.url + PATHS[api], content=body, headers={"content-type": "application/json"})
        sent = stack.fake.requests[-1]
        errors = stack.guard.errors.total
    assert r.status_code == (200 if body.startswith(b'{"messages": [') else 400)  # the upstream's own answer
    assert sent.body == (json.loads(body) if body not in (b"", b"\x00\xff garbage", b"{") else None)
    assert errors == 0


@given(
    st.one_of(
        st.binary(max_size=300),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=20),
            lambda c: (
                st.lists(c, max_size=4)
                | st.dictionaries(
                    st.sampled_from(
                        [
                            "messages",
                            "role",
                            "content",
                            "tool_calls",
                            "tool_call_id",
                            "system",
                            "model",
                            "stream",
                            "type",
                            "tool_use_id",
                            "id",
                            "function",
                            "arguments",
                        ]
                    ),
                    c,
                    max_size=5,
                )
            ),
            max_leaves=25,
        ).map(lambda v: json.dumps(v).encode()),
    )
)
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_fuzzed_request_bodies_never_break_the_proxy(fuzz_stack: Any, body: bytes) -> None:
    for path in PATHS.values():
        r = httpx.post(
            fuzz_stack.url + path, content=body, headers={"content-type": "application/json"}, timeout=10
        )
        assert r.status_code in (200, 400), r.text
        if r.status_code == 200 and r.headers.get("content-type", "").startswith("text/event-stream"):
            # A body asking for a stream gets one: every data line must be JSON (or OpenAI's [DONE]).
            data = [line[5:].strip() for line in r.text.splitlines() if line.startswith("data:")]
            assert data, r.text
            for d in data:
                if d != "[DONE]":
                    json.loads(d)
        elif r.status_code == 200:
            r.json()
    assert fuzz_stack.guard.errors.total == 0, dict(fuzz_stack.guard.errors.counts)


@pytest.fixture(scope="module")
def fuzz_stack() -> Any:
    with proxy_stack() as stack:
        yield stack


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_request_size_limit(api: str) -> None:
    with proxy_stack(max_body_bytes=4096) as stack:
        big = {**_body(api, False), "pad": "x" * 10_000}
        r = _post(stack.url, api, big)
        assert r.status_code == 413
        assert "larger than 4096" in json.dumps(r.json())
        assert stack.fake.requests == []
        # Chunked upload with no Content-Length is cut off as well.
        chunks = (b"x" * 1024 for _ in range(10))
        r = httpx.post(stack.url + PATHS[api], content=chunks)
        assert r.status_code == 413


class _BrokenStore:
    async def read(self, key: str, start: int) -> list[dict[str, Any]]:
        raise ConnectionError("store down")

    async def append(self, key: str, entries: list[dict[str, Any]]) -> int:
        raise ConnectionError("store down")

    async def claim_end(self, key: str, length: int) -> bool:
        raise ConnectionError("store down")

    async def close(self) -> None:
        pass


@pytest.mark.parametrize("stream", [False, True])
def test_internal_failure_forwards_traffic_unchanged(stream: bool) -> None:
    with proxy_stack(store=_BrokenStore()) as stack:
        client = openai.OpenAI(base_url=stack.url + "/v1", api_key="k", max_retries=0)
        msg: Any
        if stream:
            with client.chat.completions.stream(model="m", messages=MSGS) as s:  # type: ignore[arg-type]
                for _ in s:
                    pass
                msg = s.get_final_completion().choices[0].message
        else:
            msg = client.chat.completions.create(model="m", messages=MSGS).choices[0].message  # type: ignore[arg-type]
        assert msg.tool_calls and msg.tool_calls[0].function.name == "bash"
        sent = stack.fake.requests[-1].body
        assert sent["messages"] == MSGS  # forwarded as the client sent it
        assert stack.app.monitor.counters["fail_open"] >= 1
