"""The proxy's settings: the ``proxy:`` section of the planguard config file, overridable from the CLI.

```yaml
plan: plan                      # the usual planguard sections ...
policies: {reminder: {every_model_calls: 5}}
proxy:
  listen: 127.0.0.1:8787
  upstream: https://api.openai.com      # both APIs; or per API:
  upstreams: {anthropic: https://api.anthropic.com}
  gate: rewrite                 # rewrite | annotate | observe
  text_actions: {enabled: true} # agents that put the command in a fenced block (mini-swe-agent textbased)
  store: {backend: redis, url: redis://127.0.0.1:6379/0}
```
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from planguard.config import Config, ConfigError, apply_env, load_config
from planguard.documents import DocumentError, check_depth, decode_utf8, loads_json, loads_yaml

from .text_actions import DEFAULT_ACTION_REGEX, DEFAULT_RETURNCODE_REGEX

__all__ = [
    "DEFAULT_UPSTREAMS",
    "SESSION_HEADER",
    "WORK_DIR_HEADER",
    "ProxyConfig",
    "StoreSettings",
    "TextActionsSettings",
    "TimeoutSettings",
    "load_proxy_config",
]

SESSION_HEADER = "X-Planguard-Session"
WORK_DIR_HEADER = "X-Planguard-Work-Dir"
DEFAULT_UPSTREAMS = {"openai": "https://api.openai.com", "anthropic": "https://api.anthropic.com"}


class TimeoutSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    connect: float = Field(10.0, gt=0, description="Seconds to connect to the upstream.")
    read: float = Field(
        600.0, gt=0, description="Seconds to wait for upstream bytes (first token, or between chunks)."
    )
    write: float = Field(60.0, gt=0, description="Seconds to send the request upstream.")
    pool: float = Field(10.0, gt=0, description="Seconds to wait for a free upstream connection.")
    client_headers: float = Field(
        30.0,
        gt=0,
        description="Seconds a client has to send a request's headers (then the connection closes).",
    )
    client_body: float = Field(
        60.0, gt=0, description="Seconds a client has to send a request's body (then 408)."
    )


class StoreSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    backend: Literal["memory", "redis"] = Field(
        "memory", description="memory: one proxy process; redis: replicas behind a load balancer share state."
    )
    url: str | None = Field(None, description="redis://HOST:PORT/DB (backend redis).")
    ttl_s: int = Field(
        86_400, ge=60, description="A conversation's state expires this long after its last request."
    )
    key_prefix: str = Field("planguard:proxy:", description="Prefix of the proxy's Redis keys.")
    max_conversations: int = Field(
        100_000, ge=1, description="Conversations the memory store keeps at most (LRU)."
    )
    timeout_s: float = Field(
        1.0,
        gt=0,
        description="Seconds one store call may take; past it (or on any store error) the proxy goes on "
        "with its local state: gates are still consulted, only the replica log misses the entries; the "
        "store is then left alone for 5 s.",
    )


class TextActionsSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(
        False,
        description="Read a fenced bash block in the assistant text as a shell call when the response "
        "has no tool calls (mini-swe-agent text-based mode, SWE-agent-style prompts).",
    )
    action_regex: str = Field(DEFAULT_ACTION_REGEX, description="Regex with one group: the command.")
    returncode_regex: str = Field(
        DEFAULT_RETURNCODE_REGEX,
        description="Regex with one group: the exit code, searched in the next user message.",
    )
    exactly_one: bool = Field(True, description="Only a response with exactly one block is an action.")


class ProxyConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    listen: str = Field("127.0.0.1:8787", description="HOST:PORT to bind (loopback by default).")
    upstream: str | None = Field(
        None, description="Base URL every route is forwarded to (overrides the defaults)."
    )
    upstreams: dict[Literal["openai", "anthropic"], str] = Field(
        default_factory=dict, description="Base URL per API; default api.openai.com / api.anthropic.com."
    )
    session_header: str = Field(SESSION_HEADER, description="Request header naming the session.")
    work_dir: str | None = Field(
        None,
        description="The repository the agents work in (absolute path): the live phase rules judge the "
        "tools' file paths against it, wherever it lives. A session's work_dir_header overrides it.",
    )
    work_dir_header: str = Field(
        WORK_DIR_HEADER, description="Request header naming a session's repository (not sent upstream)."
    )
    gate: Literal["rewrite", "annotate", "observe"] = Field(
        "rewrite",
        description="What a denied tool call becomes. rewrite: the call is removed from the response and the "
        "reason given as assistant text (streams hold a tool call's chunks until it is complete); "
        "annotate: the "
        "response passes unchanged and the call's result in the next request is prefixed with the reason "
        "(advisory: the agent may already have run it); observe: record the decision only.",
    )
    gate_retries: int = Field(
        3,
        ge=0,
        description="rewrite: when every tool call of a response is denied, the proxy answers them itself "
        "(the denial as each call's result) and asks the model again, at most this many times per request; "
        "past that (or with 0) the denied calls become assistant text as before.",
    )
    nonstandard_json: Literal["observe", "refuse"] = Field(
        "observe",
        description="JSON that only Python's json module reads (NaN, Infinity, lone surrogate escapes; in "
        "tool arguments also integers past 64 bits), in requests, answers or tool arguments. observe: "
        "read with the standard library and observed as usual; refuse: a request gets a 400, an answer "
        "is unread (withheld when a fail-closed gate is on, else forwarded unchanged). Counted either way "
        "(/_planguard/health: json_observed, json_refused, unobserved_answers).",
    )
    text_actions: TextActionsSettings = Field(default_factory=TextActionsSettings)
    shell_tools: list[str] = Field(
        default_factory=lambda: [
            "bash",
            "shell",
            "execute_bash",
            "run_shell_command",
            "terminal",
            "exec_command",
        ],
        description="Tool names whose 'command' argument is a shell line (recorded as ToolEvent.shell).",
    )
    max_body_bytes: int = Field(
        32 * 1024 * 1024, ge=1024, description="Largest request body accepted (413 above)."
    )
    timeouts: TimeoutSettings = Field(default_factory=TimeoutSettings)
    http_client: Literal["builtin", "httpx"] = Field(
        "builtin",
        description="Upstream HTTP/1.1 connections. builtin: the proxy's own pool (asyncio + httptools; "
        "a tenth of the CPU per request); httpx: httpx's default transport (httpcore). Requests "
        "through an HTTP proxy from the environment always use httpx's.",
    )
    max_connections: int = Field(512, ge=1, description="Upstream connections at most (pooled).")
    max_keepalive: int = Field(128, ge=0, description="Idle upstream connections kept for reuse.")
    keepalive_expiry_s: float = Field(
        4.0,
        ge=0,
        description="Idle upstream connections are closed after this long; keep it below the "
        "upstream's own keep-alive timeout (5 s for uvicorn/gunicorn), or a request may race the server "
        "closing "
        "the connection (seen by the client as a 502).",
    )
    idle_end_s: float = Field(
        900.0,
        gt=0,
        description="A conversation with no request for this long is ended (its summary recorded).",
    )
    store: StoreSettings = Field(default_factory=StoreSettings)

    @field_validator("listen")
    @classmethod
    def _host_port(cls, v: str) -> str:
        host, sep, port = v.rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ValueError(f"expected HOST:PORT, e.g. 127.0.0.1:8787 (got {v!r})")
        return v

    @property
    def host(self) -> str:
        return self.listen.rpartition(":")[0].strip("[]")

    @property
    def port(self) -> int:
        return int(self.listen.rpartition(":")[2])

    def upstream_for(self, wire: str) -> str:
        upstreams: dict[str, str] = {str(k): v for k, v in self.upstreams.items()}
        url = (
            upstreams.get(wire) or self.upstream or DEFAULT_UPSTREAMS.get(wire) or DEFAULT_UPSTREAMS["openai"]
        )
        return url.rstrip("/")


def load_proxy_config(path: str | Path | None) -> tuple[Config, ProxyConfig]:
    """The planguard config and the proxy section of one file (``None``: defaults for both).

    The core ``Config`` does not know the ``proxy`` section; it is split off here and validated on its own,
    so a typo in either part is reported with the file and key path.
    """
    if path is None:
        return apply_env(Config()), ProxyConfig()
    p = Path(path)
    try:
        text = decode_utf8(p.read_bytes())
    except OSError as exc:
        raise ConfigError(str(p), [(None, "", f"cannot read the file ({exc.strerror or exc})")]) from None
    except DocumentError as exc:
        raise ConfigError(str(p), [(exc.line, "", exc.problem)]) from None
    data = _parse(p, text)
    section = data.get("proxy") if isinstance(data, dict) else None
    if not isinstance(data, dict) or "proxy" not in data or "proxy" in Config.model_fields:
        config = load_config(p)
    else:
        rest = {k: v for k, v in data.items() if k != "proxy"}
        for key in ("plan",):
            v = rest.get(key)
            if isinstance(v, str) and not Path(v).is_absolute() and (p.parent / v).is_file():
                rest[key] = str(p.parent / v)
        try:
            config = apply_env(Config.model_validate(rest))
        except ValidationError as exc:
            raise ConfigError(str(p), [(None, _loc(e["loc"]), e["msg"]) for e in exc.errors()]) from None
    if section is None:
        return config, ProxyConfig()
    if not isinstance(section, dict):
        raise ConfigError(str(p), [(None, "proxy", f"expected a mapping, got {type(section).__name__}")])
    try:
        return config, ProxyConfig.model_validate(section)
    except ValidationError as exc:
        raise ConfigError(
            str(p), [(None, "proxy." + _loc(e["loc"]), e["msg"]) for e in exc.errors()]
        ) from None


def _loc(loc: tuple[Any, ...]) -> str:
    return ".".join(str(x) for x in loc)


def _parse(path: Path, text: str) -> Any:
    """The file's data, read as planguard reads its own config (YAML aliases and deep nesting refused)."""
    try:
        if path.suffix.lower() == ".toml":
            return check_depth(tomllib.loads(text))
        if path.suffix.lower() == ".json":
            return loads_json(text)
        return loads_yaml(text) or {}
    except DocumentError as exc:
        raise ConfigError(str(path), [(exc.line, "", exc.problem)]) from None
    except (tomllib.TOMLDecodeError, RecursionError) as exc:
        raise ConfigError(str(path), [(None, "", f"not valid TOML: {exc}")]) from None
