"""Wire formats of the proxy: SSE framing, incremental tool-call assembly, gate rewrites, injection."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from planguard_proxy.sse import SSEDecoder, SSEFramingError
from planguard_proxy.text_actions import TextActions
from planguard_proxy.wire import WIRES, ToolCall
from proxy_fakes import Reply, _anthropic_events, _anthropic_message, _openai_events, _openai_message

OPENAI, ANTHROPIC = WIRES["openai"], WIRES["anthropic"]
REPLY = Reply(
    text="Let me look.",
    tool_calls=[
        ("bash", {"command": 'ls -la /tmp && echo "hi"'}),
        ("str_replace_editor", {"command": "view", "path": "/a.py"}),
    ],
)


def _events(wire: str, reply: Reply = REPLY) -> list[bytes]:
    return _openai_events(reply, "m", {}) if wire == "openai" else _anthropic_events(reply, "m")


def _run(
    wire: str, stream: bytes, splits: list[int], decide: Any, hold: bool = True, want_text: bool = True
) -> tuple[bytes, Any]:
    tr = WIRES[wire].stream(decide, hold, want_text)
    dec = SSEDecoder()
    out: list[bytes] = []
    pos = 0
    for cut in [*sorted(set(splits)), len(stream)]:
        for ev in dec.feed(stream[pos:cut]):
            out.extend(tr.feed(ev))
        pos = cut
    out.extend(tr.finish())
    out.append(dec.take_rest())
    return b"".join(out), tr


def _allow(call: ToolCall) -> None:
    return None


# ---------------------------------------------------------------------- SSE framing


@given(st.lists(st.integers(min_value=0, max_value=2000), max_size=30))
@settings(max_examples=200, deadline=None)
def test_sse_framing_is_independent_of_chunk_boundaries(splits: list[int]) -> None:
    stream = b"".join(_events("anthropic"))
    splits = [s % (len(stream) + 1) for s in splits]
    dec = SSEDecoder()
    got = []
    pos = 0
    for cut in [*sorted(set(splits)), len(stream)]:
        got.extend(dec.feed(stream[pos:cut]))
        pos = cut
    assert b"".join(e.raw for e in got) == stream
    assert [e.event for e in got][:2] == ["message_start", "ping"]
    assert all(json.loads(e.data)["type"] == e.event for e in got)


def test_sse_crlf_comments_and_multiline_data() -> None:
    dec = SSEDecoder()
    evs = dec.feed(b": keep-alive\r\n\r\nevent: x\r\ndata: a\r\ndata: b\r\n\r\ndata: [DONE]\n\n")
    assert [(e.event, e.data) for e in evs] == [(None, ""), ("x", "a\nb"), (None, "[DONE]")]


_SSE_LINES = st.sampled_from(
    ["data: {}", 'data: {"a": 1}', "data:no-space", "data: [DONE]", "event: ping", ": c", "id: 7", "data:"]
)


@given(
    st.lists(st.lists(_SSE_LINES, min_size=1, max_size=4), max_size=12),
    st.lists(st.integers(min_value=0, max_value=500), max_size=20),
)
@settings(max_examples=300, deadline=None)
def test_sse_lf_fast_path_matches_the_general_parser(events: list[list[str]], splits: list[int]) -> None:
    # The same events framed with \n (fast path) and \r\n (general path) decode alike, at any split.
    def decode(stream: bytes) -> list[tuple[str | None, str, bytes]]:
        dec = SSEDecoder()
        out, pos = [], 0
        for cut in [*sorted({c % (len(stream) + 1) for c in splits}), len(stream)]:
            out.extend(dec.feed(stream[pos:cut]))
            pos = cut
        assert dec.take_rest() == b""
        return [(e.event, e.data, e.raw) for e in out]

    lf = "".join("\n".join(lines) + "\n\n" for lines in events).encode()
    crlf = lf.replace(b"\n", b"\r\n")
    fast, general = decode(lf), decode(crlf)
    assert [(e, d) for e, d, _ in fast] == [(e, d) for e, d, _ in general]
    assert b"".join(r for _, _, r in fast) == lf and b"".join(r for _, _, r in general) == crlf
    assert len(fast) == len(events)


def test_sse_event_without_terminator_is_bounded() -> None:
    dec = SSEDecoder(max_event_bytes=1024)
    with pytest.raises(SSEFramingError):
        dec.feed(b"x" * 2048)


# ---------------------------------------------------------------------- streams: observe and pass through


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
@given(
    splits=st.lists(st.integers(min_value=0, max_value=5000), max_size=40),
    hold=st.booleans(),
    want_text=st.booleans(),
)
@settings(max_examples=100, deadline=None)
def test_stream_tool_calls_assembled_and_bytes_unchanged(
    wire: str, splits: list[int], hold: bool, want_text: bool
) -> None:
    stream = b"".join(_events(wire))
    out, tr = _run(wire, stream, [s % (len(stream) + 1) for s in splits], _allow, hold, want_text)
    assert out == stream  # allowed calls: byte for byte
    assert [(c.name, c.arguments) for c in tr.calls] == [(n, a) for n, a in REPLY.tool_calls]
    assert all(c.id for c in tr.calls)
    # Without want_text the text deltas are not even parsed (they cannot carry a tool call).
    assert tr.text == ("Let me look." if want_text else "")
    assert tr.finished


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
@pytest.mark.parametrize("deny", ["bash", "str_replace_editor", "both", None])
def test_skipping_text_events_changes_no_decision_and_no_byte(wire: str, deny: str | None) -> None:
    """The byte prefilter (``want_text=False``) lets the same events through, rewritten the same way."""
    reply = Reply(
        text="Let me look at the " + "tool_calls finish_reason content_block_delta " * 5,
        tool_calls=[
            ("bash", {"command": 'echo "tool_calls" and "finish_reason": "stop"'}),
            ("str_replace_editor", {"command": "view", "path": "/a.py"}),
        ],
    )
    stream = b"".join(_events(wire, reply))

    def decide(call: ToolCall) -> str | None:
        return "DENIED" if deny in (call.name, "both") else None

    for hold in (True, False):
        full, tr_full = _run(wire, stream, [97, 1000], decide, hold, want_text=True)
        skim, tr_skim = _run(wire, stream, [97, 1000], decide, hold, want_text=False)
        assert skim == full
        assert [(c.id, c.name, c.arguments) for c in tr_skim.calls] == [
            (c.id, c.name, c.arguments) for c in tr_full.calls
        ]
        assert len(tr_skim.calls) == 2 and tr_skim.denied == tr_full.denied


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_stream_holds_tool_call_until_complete(wire: str) -> None:
    seen: list[int] = []
    tr = WIRES[wire].stream(lambda c: seen.append(1), True)  # type: ignore[func-returns-value,unused-ignore]
    dec = SSEDecoder()
    events = _events(wire, Reply(text="Hi", tool_calls=[("bash", {"command": "ls"})]))
    released = []
    for raw in events:
        for ev in dec.feed(raw):
            released.append(b"".join(tr.feed(ev)))
    # Text is released as it arrives; the tool call's events are released together once it is complete.
    first_call_event = next(i for i, r in enumerate(events) if b"call_" in r or b"tool_use" in r)
    assert all(released[i] == events[i] for i in range(first_call_event))
    assert released[first_call_event] == b""
    assert b"".join(released) + b"".join(tr.finish()) == b"".join(events)


def _openai_accumulate(stream: bytes) -> dict[str, Any]:
    content, finish = "", None
    calls: dict[int, dict[str, Any]] = {}
    for block in stream.decode().split("\n\n"):
        data = "".join(line[6:] for line in block.split("\n") if line.startswith("data: "))
        if not data or data == "[DONE]":
            continue
        for ch in json.loads(data)["choices"]:
            d = ch["delta"]
            content += d.get("content") or ""
            for tc in d.get("tool_calls") or ():
                c = calls.setdefault(tc["index"], {"id": None, "name": "", "arguments": ""})
                c["id"] = tc.get("id") or c["id"]
                c["name"] += (tc.get("function") or {}).get("name") or ""
                c["arguments"] += (tc.get("function") or {}).get("arguments") or ""
            finish = ch.get("finish_reason") or finish
    return {"content": content, "calls": calls, "finish": finish}


def test_openai_stream_denied_call_replaced_by_text_and_indices_renumbered() -> None:
    stream = b"".join(_events("openai"))
    out, tr = _run("openai", stream, [], lambda c: "DENIED: no" if c.name == "bash" else None)
    acc = _openai_accumulate(out)
    assert acc["content"] == "Let me look.DENIED: no"
    assert list(acc["calls"]) == [0]  # the surviving call moved to index 0
    assert acc["calls"][0]["name"] == "str_replace_editor"
    assert json.loads(acc["calls"][0]["arguments"]) == {"command": "view", "path": "/a.py"}
    assert acc["finish"] == "tool_calls"
    assert tr.denied and list(tr.denied.values()) == ["DENIED: no"]


def test_openai_stream_all_denied_finishes_with_stop() -> None:
    out, _ = _run("openai", b"".join(_events("openai")), [], lambda c: f"no {c.name}")
    acc = _openai_accumulate(out)
    assert acc["calls"] == {} and acc["finish"] == "stop"
    assert acc["content"] == "Let me look.no bashno str_replace_editor"


def test_anthropic_stream_denied_block_becomes_text_block_at_same_index() -> None:
    out, _ = _run(
        "anthropic", b"".join(_events("anthropic")), [], lambda c: "DENIED" if c.name == "bash" else None
    )
    blocks: dict[int, dict[str, Any]] = {}
    stop_reason = None
    for block in out.decode().split("\n\n"):
        data = "".join(line[6:] for line in block.split("\n") if line.startswith("data: "))
        if not data:
            continue
        ev = json.loads(data)
        if ev["type"] == "content_block_start":
            blocks[ev["index"]] = {**ev["content_block"], "json": ""}
        elif ev["type"] == "content_block_delta":
            d = ev["delta"]
            b = blocks[ev["index"]]
            if d["type"] == "text_delta":
                b["text"] += d["text"]
            else:
                b["json"] += d["partial_json"]
        elif ev["type"] == "message_delta":
            stop_reason = ev["delta"]["stop_reason"]
    assert [b["type"] for b in blocks.values()] == ["text", "text", "tool_use"]
    assert blocks[1]["text"] == "DENIED"
    assert json.loads(blocks[2]["json"]) == {"command": "view", "path": "/a.py"}
    assert stop_reason == "tool_use"
    out_all, _ = _run("anthropic", b"".join(_events("anthropic")), [], lambda c: "no")
    assert b'"stop_reason":"end_turn"' in out_all.replace(b" ", b"")


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_malformed_data_stops_observing_and_passes_everything_through(wire: str) -> None:
    events = _events(wire)
    stream = b"".join(events[:4]) + b"data: {not json\n\n" + b"".join(events[4:])
    out, tr = _run(wire, stream, [37, 200], lambda c: "deny everything")
    assert out == stream
    assert tr.error is None  # malformed upstream data is the upstream's, not an internal failure


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_internal_failure_in_decide_path_fails_open(wire: str) -> None:
    def boom(call: ToolCall) -> str | None:
        raise RuntimeError("bug")

    stream = b"".join(_events(wire))
    out, tr = _run(wire, stream, [], boom)
    assert out == stream
    assert isinstance(tr.error, RuntimeError)


# ---------------------------------------------------------------------- non-streaming


def test_openai_response_calls_and_rewrite() -> None:
    obj = _openai_message(REPLY, "m")
    calls = OPENAI.response_calls(obj)
    assert [(c.name, c.arguments) for c in calls] == REPLY.tool_calls
    OPENAI.rewrite_response(obj, {calls[0].id: "no bash"})
    msg = obj["choices"][0]["message"]
    assert [tc["function"]["name"] for tc in msg["tool_calls"]] == ["str_replace_editor"]
    assert msg["content"] == "Let me look.\nno bash"
    OPENAI.rewrite_response(obj, {calls[1].id: "no editor"})
    assert "tool_calls" not in obj["choices"][0]["message"]
    assert obj["choices"][0]["finish_reason"] == "stop"


def test_anthropic_response_calls_and_rewrite() -> None:
    obj = _anthropic_message(REPLY, "m")
    calls = ANTHROPIC.response_calls(obj)
    assert [(c.name, c.arguments) for c in calls] == REPLY.tool_calls
    ANTHROPIC.rewrite_response(obj, {c.id: "no" for c in calls})
    assert [b["type"] for b in obj["content"]] == ["text", "text", "text"]
    assert obj["stop_reason"] == "end_turn"


def test_openai_unparseable_arguments_kept_as_text() -> None:
    obj = _openai_message(Reply(tool_calls=[("bash", {})]), "m")
    obj["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = '{"command": "ls'
    assert OPENAI.response_calls(obj)[0].arguments == '{"command": "ls'


# ---------------------------------------------------------------------- requests


def test_openai_results_inject_and_annotate() -> None:
    body: dict[str, Any] = {
        "messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "task"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "out"}]},
        ]
    }
    assert [(r.call_id, r.text) for r in OPENAI.tool_results(body, ["c1", "zz"])] == [("c1", "out")]
    assert OPENAI.session_material(body) == ["sys", "task"]
    OPENAI.inject(body, "PLAN REMINDER: x")
    assert body["messages"][-1] == {"role": "user", "content": "PLAN REMINDER: x"}
    assert body["messages"][-2]["role"] == "tool"  # never between the call and its result
    assert OPENAI.annotate_results(body, {"c1": "NOTE"})
    assert body["messages"][3]["content"][0] == {"type": "text", "text": "NOTE"}


def test_anthropic_results_inject_after_tool_results_in_same_turn() -> None:
    body: dict[str, Any] = {
        "system": [{"type": "text", "text": "sys"}],
        "messages": [
            {"role": "user", "content": "task"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "bash", "input": {}}]},
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "boom", "is_error": True}
                ],
            },
        ],
    }
    res = ANTHROPIC.tool_results(body, ["t1"])
    assert [(r.call_id, r.text, r.is_error) for r in res] == [("t1", "boom", True)]
    assert ANTHROPIC.session_material(body) == ["sys", "task"]
    ANTHROPIC.inject(body, "PLAN REMINDER: x")
    last = body["messages"][-1]["content"]
    assert last[0]["type"] == "tool_result" and last[-1] == {"type": "text", "text": "PLAN REMINDER: x"}
    assert len(body["messages"]) == 3
    # A final assistant prefill stays last; the note goes into the user turn before it.
    body["messages"].append({"role": "assistant", "content": "Sure,"})
    ANTHROPIC.inject(body, "N2")
    assert body["messages"][-1] == {"role": "assistant", "content": "Sure,"}
    assert body["messages"][-2]["content"][-1]["text"] == "N2"


def test_text_actions_mini_swe_agent_format() -> None:
    ta = TextActions()
    text = "THOUGHT: look\n\n```mswea_bash_command\nls -la\n```\n"
    assert ta.extract(text) == [("```mswea_bash_command\nls -la\n```", "ls -la")]
    assert ta.extract("```bash\ncat a\n```") == [("```bash\ncat a\n```", "cat a")]
    assert ta.extract("```bash\na\n```\n```bash\nb\n```") == []  # mini-swe-agent runs none of two
    assert TextActions(exactly_one=False).extract("```bash\na\n```\n```bash\nb\n```")[1][1] == "b"
    assert ta.extract("```python\nprint(1)\n```") == []
    assert ta.exit_code("<returncode>2</returncode>\n<output>x</output>") == 2
    assert ta.exit_code("no code") is None
