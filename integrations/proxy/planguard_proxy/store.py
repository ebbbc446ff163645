"""Where a conversation's state lives: an append-only log of what its planguard session consumed.

Every replica appends the operations it applies to a conversation's session — a model call, a tool call
(with the event), a tool result — and a replica that is behind replays the log entries it has not applied
yet before it handles a request (see ``monitor``). In memory for one proxy process; in Redis for replicas
behind a load balancer. Entries are small JSON objects; reads are by position, so catching up costs only
the entries missed.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from typing import Any

from . import _json

__all__ = ["MAX_LOG_ENTRIES", "SKIP_OP", "ConversationStore", "MemoryStore", "RedisStore", "open_store"]

#: Log entries the memory store keeps per conversation (a tool call makes two, a model request one): the log
#: is in this process's memory and would grow with the run. Past this the oldest go; positions stay those of
#: the whole log, and a read from before the oldest kept starts with a ``SKIP_OP`` entry standing for them.
MAX_LOG_ENTRIES = 10_000
#: ``{"op": SKIP_OP, "n": k}``: k log entries no longer kept (a session rebuilt from the log starts after).
SKIP_OP = "skip"


class ConversationStore(ABC):
    #: Calls cost a network round trip (the proxy then overlaps its writes with the upstream call).
    remote: bool = True

    @abstractmethod
    async def read(self, key: str, start: int) -> list[dict[str, Any]]:
        """Log entries of ``key`` from position ``start`` on (empty for an unknown conversation)."""

    @abstractmethod
    async def append(self, key: str, entries: list[dict[str, Any]]) -> int:
        """Append entries atomically; returns the log's new length."""

    @abstractmethod
    async def claim_end(self, key: str, length: int) -> bool:
        """True for exactly one caller per (conversation, log length): that one records the session's end."""

    @abstractmethod
    async def remember_response(self, response_id: str, key: str) -> None:
        """Responses API: the response ``response_id`` belongs to conversation ``key`` (a later request that
        only names it, ``previous_response_id``, joins that conversation on any replica)."""

    @abstractmethod
    async def conversation_of_response(self, response_id: str) -> str | None:
        """The conversation of a response :meth:`remember_response` recorded, if the store still has it."""

    async def forget(self, key: str) -> None:  # noqa: B027 - optional: shared stores expire logs by TTL
        """The conversation ended and its end is recorded: its log may go (a store in this process's
        memory drops it now; a shared one leaves it to its time to live, for replicas that are behind)."""

    async def close(self) -> None:  # noqa: B027 - optional hook: most stores hold nothing to release
        """Release connections."""


class MemoryStore(ConversationStore):
    """One process. Bounded: least recently used conversations beyond ``max_conversations`` are dropped,
    a conversation idle for ``ttl_s`` expires, and each keeps its last ``MAX_LOG_ENTRIES`` log entries."""

    remote = False

    def __init__(self, max_conversations: int = 100_000, ttl_s: float = 86_400) -> None:
        # key -> (the log's kept entries, last write, position of the first kept entry)
        self._logs: OrderedDict[str, tuple[list[dict[str, Any]], float, int]] = OrderedDict()
        self._ended: set[tuple[str, int]] = set()
        self._responses: OrderedDict[str, str] = OrderedDict()  # response id -> conversation (LRU)
        self._max = max_conversations
        self._ttl = ttl_s

    async def read(self, key: str, start: int) -> list[dict[str, Any]]:
        item = self._logs.get(key)
        if item is None:
            return []
        log, written, base = item
        if time.monotonic() - written > self._ttl:
            del self._logs[key]
            return []
        if start >= base:
            return log[start - base :]
        return [{"op": SKIP_OP, "n": base - start}, *log]

    async def append(self, key: str, entries: list[dict[str, Any]]) -> int:
        item = self._logs.pop(key, None)
        log, base = (item[0], item[2]) if item is not None else ([], 0)
        log.extend(entries)
        if len(log) > MAX_LOG_ENTRIES:
            cut = len(log) - MAX_LOG_ENTRIES
            del log[:cut]
            base += cut
        self._logs[key] = (log, time.monotonic(), base)
        while len(self._logs) > self._max:
            self._logs.popitem(last=False)
        return base + len(log)

    async def forget(self, key: str) -> None:
        self._logs.pop(key, None)

    async def remember_response(self, response_id: str, key: str) -> None:
        self._responses[response_id] = key
        self._responses.move_to_end(response_id)
        while len(self._responses) > self._max:
            self._responses.popitem(last=False)

    async def conversation_of_response(self, response_id: str) -> str | None:
        return self._responses.get(response_id)

    async def claim_end(self, key: str, length: int) -> bool:
        if (key, length) in self._ended:
            return False
        if len(self._ended) > self._max:
            self._ended.clear()
        self._ended.add((key, length))
        return True


class RedisStore(ConversationStore):
    """Replicas share conversations through Redis: one list per conversation (RPUSH is atomic, LRANGE reads
    from a position), refreshed to expire ``ttl_s`` after the last request."""

    def __init__(self, url: str, *, ttl_s: int = 86_400, prefix: str = "planguard:proxy:") -> None:
        try:
            import redis.asyncio as aredis
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise RuntimeError(
                "the redis store needs the redis package: pip install 'planguard-proxy[redis]'"
            ) from exc
        self._redis = aredis.from_url(url)
        self._ttl = ttl_s
        self._prefix = prefix

    async def read(self, key: str, start: int) -> list[dict[str, Any]]:
        raw = await self._redis.lrange(self._prefix + "log:" + key, start, -1)
        return [_json.loads(r) for r in raw]

    async def append(self, key: str, entries: list[dict[str, Any]]) -> int:
        k = self._prefix + "log:" + key
        # One round trip; no MULTI/EXEC: RPUSH alone is atomic (and returns the length), the EXPIRE after it
        # only refreshes the time to live.
        async with self._redis.pipeline(transaction=False) as pipe:
            pipe.rpush(k, *[_json.dumps(e) for e in entries])
            pipe.expire(k, self._ttl)
            length, _ = await pipe.execute()
        return int(length)

    async def claim_end(self, key: str, length: int) -> bool:
        ok = await self._redis.set(f"{self._prefix}end:{key}:{length}", b"1", nx=True, ex=self._ttl)
        return bool(ok)

    async def remember_response(self, response_id: str, key: str) -> None:
        await self._redis.set(self._prefix + "response:" + response_id, key.encode("utf-8"), ex=self._ttl)

    async def conversation_of_response(self, response_id: str) -> str | None:
        raw = await self._redis.get(self._prefix + "response:" + response_id)
        return raw.decode("utf-8") if isinstance(raw, bytes) else raw

    async def close(self) -> None:
        await self._redis.aclose()


def open_store(
    backend: str, url: str | None, *, ttl_s: int, prefix: str, max_conversations: int
) -> ConversationStore:
    if backend == "redis":
        if not url:
            raise ValueError("proxy.store.url: expected redis://HOST:PORT/DB for backend redis")
        return RedisStore(url, ttl_s=ttl_s, prefix=prefix)
    return MemoryStore(max_conversations=max_conversations, ttl_s=ttl_s)
