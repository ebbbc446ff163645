"""planguard model-API proxy: point an agent's base URL here and planguard monitors it with no code change.

OpenAI Chat Completions (``POST /v1/chat/completions``) and Anthropic Messages (``POST /v1/messages``),
streaming and not, are observed; everything else is forwarded unchanged. See ``planguard proxy --help``
and ``planguard_proxy.monitor`` for how replicas share a conversation.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .app import HEALTH_PATH, ProxyApp, create_app
    from .config import ProxyConfig, load_proxy_config
    from .monitor import DENIAL_PREFIX, Monitor, session_key
    from .server import serve
    from .store import ConversationStore, MemoryStore, RedisStore, open_store

__all__ = [
    "DENIAL_PREFIX",
    "HEALTH_PATH",
    "ConversationStore",
    "MemoryStore",
    "Monitor",
    "ProxyApp",
    "ProxyConfig",
    "RedisStore",
    "create_app",
    "load_proxy_config",
    "open_store",
    "serve",
    "session_key",
]

# Submodules load on first use, so the wire parsers can be imported without the server stack.
_WHERE = {
    "HEALTH_PATH": "app",
    "ProxyApp": "app",
    "create_app": "app",
    "ProxyConfig": "config",
    "load_proxy_config": "config",
    "DENIAL_PREFIX": "monitor",
    "Monitor": "monitor",
    "session_key": "monitor",
    "ConversationStore": "store",
    "MemoryStore": "store",
    "RedisStore": "store",
    "open_store": "store",
    "serve": "server",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
