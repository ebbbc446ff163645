"""planguard's configuration: one pydantic model tree, read from YAML, TOML or JSON.

Every model forbids unknown keys, so a typo is an error rather than a silently ignored setting. Errors
name the file, the line (YAML/JSON; TOML best effort), the key path and what was expected::

    planguard.yaml:12: policies.reminder.every_model_calls: expected an integer >= 1 (got 0)

The common switches can be overridden from the environment (see :data:`ENV_OVERRIDES`); ``load_config``
applies them on top of the file, and ``Guard()`` without a config reads ``PLANGUARD_CONFIG`` first.
"""

from __future__ import annotations

import difflib
import logging
import os
import re
import tomllib
import types
import typing
import warnings
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from .actions.config import ActionsConfig
from .detectors import FINDING_KINDS, custom_detectors
from .detectors.config import DetectorsConfig
from .documents import DocumentError, check_depth, decode_utf8, did_you_mean, loads_json, loads_yaml
from .experiment.config import ExperimentConfig
from .phases import PHASE_ROLES
from .plan import PRESETS, Plan, phase_matches, resolve_plan
from .plugins import PluginSpec
from .policies.config import PoliciesConfig
from .sinks.otel.config import TelemetryConfig
from .sinks.store.config import StoreConfig
from .sinks.webhook import WebhookConfig

__all__ = [
    "ENV_CONFIG",
    "ENV_OVERRIDES",
    "RULES",
    "Config",
    "ConfigError",
    "PlanSpec",
    "SessionsConfig",
    "SinksConfig",
    "apply_env",
    "config_schema",
    "default_config",
    "load_config",
    "load_section",
]

#: Environment variable naming the config file ``Guard()`` loads when given no config.
ENV_CONFIG = "PLANGUARD_CONFIG"
#: The phase rules: the live rules (PHASES_LIVE.md), the paper's newest and older classifier (PHASE_RULES.md),
#: and ``corrected``, an alias of ``live``.
RULES = ("live", "v351278e", "v8ec988e", "corrected")
_M = TypeVar("_M", bound=BaseModel)
#: Keys that moved, old place -> new top-level key: still read, with a deprecation warning naming the new
#: key (the tool vocabulary serves actions, phases and detectors alike; the webhook is a sink).
MOVED_KEYS: dict[tuple[str, str], str] = {
    ("detectors", "actions"): "tools",
    ("policies", "notify"): "webhook",
}
log = logging.getLogger("planguard.config")
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class PlanSpec(Plan):
    """A plan written inline in the config file (instead of a preset name or a plan file path)."""

    name: str = "custom"


class SessionsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_sessions: int = Field(
        10_000, ge=1, description="Live sessions kept at most; beyond this the least recently used is ended."
    )
    idle_timeout_s: float | None = Field(
        1800.0, gt=0, description="A session idle this long is ended and dropped (null: never)."
    )


class SinksConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    custom: list[PluginSpec] = Field(
        default_factory=list,
        description="Further sinks (a built-in name such as console, an entry-point name or an import path), "
        "after the telemetry, store and webhook sinks.",
    )


class Config(BaseModel):
    """Everything a ``Guard`` needs. All sections have working defaults: ``Config()`` is a valid config."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(True, description="false: the guard lets every call through and records nothing.")
    plan: str | PlanSpec = Field(
        "plan",
        description="The plan the agent follows: a preset ("
        + ", ".join(sorted(PRESETS))
        + "), a plan file (YAML/TOML/JSON; relative to the config file), or an inline plan.",
    )
    score_plans: list[str | PlanSpec] = Field(
        default_factory=list, description="Further plans to score the run against (not enforced)."
    )
    rules: Literal["live", "v351278e", "v8ec988e", "corrected"] = Field(
        "live",
        description="Phase classifier rules: live (PHASES_LIVE.md, any scaffold and language), or the "
        "paper's v351278e / v8ec988e (PHASE_RULES.md, exact); corrected is an alias of live.",
    )
    tools: ActionsConfig = Field(
        default_factory=ActionsConfig,
        description="The tool vocabulary: how each tool's calls are read (its canonical action, the shell "
        "line it runs, the paths it touches), for actions, phases and detectors alike. Was detectors.actions "
        "(still read, deprecated).",
    )
    policies: PoliciesConfig = Field(default_factory=PoliciesConfig)
    detectors: DetectorsConfig = Field(default_factory=DetectorsConfig)
    sinks: SinksConfig = Field(default_factory=SinksConfig)
    webhook: WebhookConfig = Field(
        default_factory=WebhookConfig,
        description="The webhook sink: findings, decisions and session ends POSTed as JSON. Was "
        "policies.notify (still read, deprecated).",
    )
    telemetry: TelemetryConfig = Field(default_factory=TelemetryConfig)
    store: StoreConfig = Field(default_factory=StoreConfig)
    sessions: SessionsConfig = Field(default_factory=SessionsConfig)
    fail_closed_gates: bool = Field(
        False, description="Gates deny their tool when planguard itself fails (default: fail open)."
    )
    flush_on_sigterm: bool = Field(
        True,
        description="On SIGTERM, flush the background writers (store, telemetry, webhook) before the "
        "application's handler or the default action runs. false: planguard installs no SIGTERM handler "
        "(process-wide; never installed off the main thread, nor over an ignored SIGTERM).",
    )
    experiment: ExperimentConfig | None = Field(
        None, description="Plan experiment: arms (plan A / plan B / no plan), targets, decision window."
    )

    _plans: tuple[Plan, ...] = PrivateAttr(default=())

    @model_validator(mode="before")
    @classmethod
    def _read_moved_keys(cls, data: Any) -> Any:
        """Take each key of :data:`MOVED_KEYS` from its old place (what the new key sets wins)."""
        if not isinstance(data, dict):
            return data
        for (section, key), new in MOVED_KEYS.items():
            old = data.get(section)
            if not isinstance(old, dict) or key not in old:
                continue
            message = f"{section}.{key} is deprecated: write it as the top-level {new}: section"
            warnings.warn(message, DeprecationWarning, stacklevel=2)
            log.warning("planguard config: %s", message)
            moved, given = old[key], data.get(new)
            if isinstance(moved, dict) and isinstance(given, dict):
                moved = {**moved, **given}
            elif given is not None:
                moved = given
            data = {**data, section: {k: v for k, v in old.items() if k != key}, new: moved}
        return data

    @field_validator("plan")
    @classmethod
    def _known_plan(cls, v: str | PlanSpec) -> str | PlanSpec:
        _resolve(v)
        return v

    @field_validator("score_plans")
    @classmethod
    def _known_plans(cls, v: list[str | PlanSpec]) -> list[str | PlanSpec]:
        for spec in v:
            _resolve(spec)
        return v

    @model_validator(mode="after")
    def _resolve_plans(self) -> Config:
        self._plans = tuple(_resolve(s) for s in (self.plan, *self.score_plans))
        return self

    @property
    def plans(self) -> tuple[Plan, ...]:
        """The followed plan first, then the plans only scored."""
        return self._plans

    @property
    def followed_plan(self) -> Plan:
        return self._plans[0]


def _resolve(spec: str | Plan) -> Plan:
    if isinstance(spec, Plan):
        return spec
    try:
        return resolve_plan(spec)
    except OSError as exc:
        raise ValueError(f"cannot read plan file {spec!r} ({exc.strerror or exc})") from None


class ConfigError(ValueError):
    """A config that cannot be used. ``str()`` is one line per problem: ``FILE:LINE: key.path: what``."""

    def __init__(self, source: str, problems: list[tuple[int | None, str, str]]):
        self.source = source
        self.problems = problems  # (line, key path, message)
        super().__init__(
            "\n".join(
                f"{source}{f':{line}' if line else ''}: {path + ': ' if path else ''}{msg}"
                for line, path, msg in problems
            )
        )


# --------------------------------------------------------------------------- environment overrides


def _every(v: str) -> int | str | None:
    v = v.strip().lower()
    return None if v in ("0", "off", "none", "null", "") else v


def _opt(v: str) -> str | None:
    v = v.strip()
    return None if v.lower() in ("", "none", "null") else v


#: Variable -> (key path, parser, meaning). Documented in examples/planguard.yaml; check-config lists them.
ENV_OVERRIDES: dict[str, tuple[tuple[str, ...], Callable[[str], Any], str]] = {
    "PLANGUARD_ENABLED": (
        ("enabled",),
        str.strip,
        "0 turns planguard off (every call allowed, nothing recorded)",
    ),
    "PLANGUARD_PLAN": (("plan",), str.strip, "plan preset name or plan file"),
    "PLANGUARD_RULES": (("rules",), str.strip, "classifier rules version"),
    "PLANGUARD_REMINDERS": (("policies", "reminder", "enabled"), str.strip, "0 turns periodic reminders off"),
    "PLANGUARD_REMINDER_EVERY": (
        ("policies", "reminder", "every_model_calls"),
        _every,
        "remind every N model calls (0: never)",
    ),
    "PLANGUARD_REMINDER_DELIVERY": (
        ("policies", "reminder", "delivery"),
        str.strip,
        "ephemeral or persisted",
    ),
    "PLANGUARD_WEBHOOK_URL": (("webhook", "url"), _opt, "webhook URL for notifications"),
    "PLANGUARD_FAIL_CLOSED_GATES": (("fail_closed_gates",), str.strip, "1: gates deny when planguard fails"),
    "PLANGUARD_FLUSH_ON_SIGTERM": (("flush_on_sigterm",), str.strip, "0: install no SIGTERM handler"),
    "PLANGUARD_TELEMETRY": (("telemetry", "enabled"), str.strip, "0 turns OpenTelemetry output off"),
    "PLANGUARD_STORE": (("store", "enabled"), str.strip, "0 turns the local session store off"),
    "PLANGUARD_STORE_DIR": (("store", "path"), str.strip, "directory of the local session store"),
    "PLANGUARD_MAX_SESSIONS": (("sessions", "max_sessions"), str.strip, "live sessions kept at most"),
    "PLANGUARD_IDLE_TIMEOUT_S": (("sessions", "idle_timeout_s"), _opt, "seconds before an idle session ends"),
}


def _apply_env_dict(data: dict[str, Any], env: Mapping[str, str]) -> dict[tuple[str, ...], str]:
    """Set overridden keys in ``data`` (in place); returns key path -> variable for error messages."""
    applied: dict[tuple[str, ...], str] = {}
    for var, (path, parse, _) in ENV_OVERRIDES.items():
        raw = env.get(var)
        if raw is None:
            continue
        node = data
        for key in path[:-1]:
            child = node.get(key)
            if not isinstance(child, dict):
                child = node[key] = {}
            node = child
        node[path[-1]] = parse(raw)
        applied[path] = var
    return applied


# --------------------------------------------------------------------------- loading


def _parse(path: Path, text: str) -> Any:
    """The file's data. YAML aliases and deep nesting are refused (:mod:`planguard.documents`)."""
    suffix = path.suffix.lower()
    try:
        if suffix == ".toml":
            return check_depth(tomllib.loads(text))  # TOML has no aliases
        if suffix == ".json":
            return loads_json(text)
        return loads_yaml(text, yaml12_booleans=True)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(str(path), [(None, "", f"not valid TOML: {exc}")]) from None
    except RecursionError:
        raise ConfigError(str(path), [(None, "", "not valid TOML: nested too deeply")]) from None
    except DocumentError as exc:
        raise ConfigError(str(path), [(exc.line, "", exc.problem)]) from None


def _read(p: Path) -> tuple[str, Any]:
    """A config file's text and parsed content, through the one reader of untrusted documents (aliases,
    deep nesting and invalid UTF-8 refused with the file and line)."""
    try:
        text = decode_utf8(p.read_bytes())
    except OSError as exc:
        raise ConfigError(str(p), [(None, "", f"cannot read the file ({exc.strerror or exc})")]) from None
    except DocumentError as exc:
        raise ConfigError(str(p), [(exc.line, "", exc.problem)]) from None
    return text, _parse(p, text)


def load_config(
    path: str | Path, *, env: Mapping[str, str] | None = None, other_sections: Collection[str] = ()
) -> Config:
    """Read and validate a config file (.yaml/.yml, .toml, .json), then apply environment overrides.

    ``env`` defaults to ``os.environ``; pass ``{}`` to ignore the environment. A plan given as a relative
    file path is resolved against the config file's folder. ``other_sections`` are top-level keys another
    component validates (the proxy's ``proxy:``, see :func:`load_section`); they are left out here.
    Raises :class:`ConfigError`.
    """
    p = Path(path)
    text, data = _read(p)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(
            str(p), [(1, "", f"expected a mapping of sections at the top, got {type(data).__name__}")]
        )
    data = {k: v for k, v in data.items() if k not in other_sections}
    _resolve_relative_plans(data, p.parent)
    return _validate(data, str(p), text, p.suffix.lower(), os.environ if env is None else env)


def load_section(path: str | Path, key: str, model: type[_M]) -> _M | None:
    """The top-level section ``key`` of a config file validated by ``model`` (``None`` when absent): for a
    component's own section, such as the proxy's ``proxy:``. Errors name the file, line and key path."""
    p = Path(path)
    text, data = _read(p)
    if not isinstance(data, dict) or data.get(key) is None:
        return None
    try:
        return model.model_validate(data[key])
    except ValidationError as exc:
        lines = _LineFinder(text, p.suffix.lower())
        problems: list[tuple[int | None, str, str]] = []
        for e in exc.errors(include_url=False):
            loc = (key, *e["loc"])
            problems.append((lines.find(loc), ".".join(str(x) for x in loc), _message(e, loc[1:])))
        raise ConfigError(str(p), problems) from None


def default_config(*, env: Mapping[str, str] | None = None) -> Config:
    """What ``Guard()`` uses: the ``PLANGUARD_CONFIG`` file if set, else the defaults; plus env overrides."""
    environ = os.environ if env is None else env
    file = environ.get(ENV_CONFIG, "").strip()
    if file:
        return load_config(file, env=environ)
    return _validate({}, "<defaults>", "", "", environ)


def apply_env(config: Config, *, env: Mapping[str, str] | None = None) -> Config:
    """``config`` with the environment overrides applied (for configs built in code)."""
    data = config.model_dump(by_alias=True, exclude_unset=True)
    return _validate(data, "<config>", "", "", os.environ if env is None else env)


def config_schema() -> dict[str, Any]:
    """The JSON Schema of the config file (``planguard schema`` prints it)."""
    out: dict[str, Any] = {"$schema": "https://json-schema.org/draft/2020-12/schema"}
    out.update(Config.model_json_schema(by_alias=True))
    out["title"] = "planguard config"
    return out


def _resolve_relative_plans(data: dict[str, Any], base: Path) -> None:
    def fix(v: Any) -> Any:
        if isinstance(v, str) and v not in PRESETS and not Path(v).is_absolute() and (base / v).is_file():
            return str(base / v)
        return v

    if "plan" in data:
        data["plan"] = fix(data["plan"])
    if isinstance(data.get("score_plans"), list):
        data["score_plans"] = [fix(v) for v in data["score_plans"]]
    exp = data.get("experiment")
    if isinstance(exp, dict) and isinstance(exp.get("arms"), list):
        for arm in exp["arms"]:
            if isinstance(arm, dict) and "plan_file" in arm:
                arm["plan_file"] = fix(arm["plan_file"])


def _validate(data: dict[str, Any], source: str, text: str, kind: str, env: Mapping[str, str]) -> Config:
    from_env = _apply_env_dict(data, env)
    try:
        config = Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(source, _problems(exc, data, text, kind, from_env)) from None
    problems = _cross_check(config)
    if problems:
        lines = _LineFinder(text, kind)
        raise ConfigError(
            source, [(lines.find(loc), ".".join(str(x) for x in loc), msg) for loc, msg in problems]
        )
    return config


def _cross_check(config: Config) -> list[tuple[tuple[str | int, ...], str]]:
    """What each section's model cannot see alone: a response to a finding kind no detector produces, and a
    gate waiting for a phase the followed plan does not have (it would never open as the plan is followed).
    Only configs read through this module are checked; code that adds detectors to a pipeline itself builds
    its ``Config`` directly."""
    out: list[tuple[tuple[str | int, ...], str]] = []
    try:
        kinds = set(FINDING_KINDS) | {d.name for d in custom_detectors(config.detectors)}
    except ValueError as exc:  # the message starts with the key: detectors.custom.N.class: ...
        where, _, what = str(exc).partition(": ")
        return [(tuple(int(x) if x.isdigit() else x for x in where.split(".")), what)]
    for kind in config.policies.responses.findings:
        if kind not in kinds:
            out.append(
                (
                    ("policies", "responses", "findings", kind),
                    f"unknown finding kind {kind!r}; expected one of: {', '.join(sorted(kinds))} "
                    "(a custom detector's kind: list the detector under detectors.custom)",
                )
            )
    plan = config.followed_plan
    ids = [p.id for p in plan.phases] or list(PHASE_ROLES)
    against = f"the plan {plan.name!r}" if plan.phases else "the classifier's phase roles"
    for i, gate in enumerate(config.policies.gates):
        named: list[tuple[tuple[str | int, ...], str]] = []
        pa = gate.until.phase_after
        if pa is not None:
            named += [(("phase_after", "phase"), pa.phase), (("phase_after", "after"), pa.after)]
        named += [(("phases_seen", j), p) for j, p in enumerate(gate.until.phases_seen)]
        for loc, prefix in named:
            if not any(phase_matches(pid, prefix) or phase_matches(prefix, pid) for pid in ids):
                out.append(
                    (
                        ("policies", "gates", i, "until", *loc),
                        f"{prefix!r} names no phase of {against}{did_you_mean(prefix, ids)} (its phases: "
                        f"{', '.join(ids)}); "
                        "the gate would wait for a phase the agent is never asked to do",
                    )
                )
    return out


# --------------------------------------------------------------------------- error messages


def _problems(
    exc: ValidationError, data: Any, text: str, kind: str, from_env: dict[tuple[str, ...], str]
) -> list[tuple[int | None, str, str]]:
    lines = _LineFinder(text, kind)
    merged: dict[tuple[str | int, ...], list[str]] = {}
    types_at: dict[tuple[str | int, ...], list[str]] = {}
    for e in exc.errors(include_url=False):
        loc = _clean_loc(e["loc"], data, e["type"])
        msg = _message(e, loc)
        loc, msg = _inner_key(loc, msg)
        if msg not in merged.setdefault(loc, []):
            merged[loc].append(msg)
        types_at.setdefault(loc, []).append(e["type"])
    # A union reports each branch; a type mismatch at a key whose other branch has a deeper error is noise.
    locs = list(merged)
    out: list[tuple[int | None, str, str]] = []
    for loc in locs:
        deeper = any(other[: len(loc)] == loc and len(other) > len(loc) for other in locs)
        if deeper and all(t.endswith("_type") for t in types_at[loc]):
            continue
        dotted = ".".join(str(x) for x in loc)
        env_var = next((v for p, v in from_env.items() if loc[: len(p)] == p), None)
        message = " or ".join(merged[loc])
        if env_var is not None:
            out.append((None, dotted, f"{message} (from environment variable {env_var})"))
        else:
            out.append((lines.find(loc), dotted, message))
    return out


#: A plan's checks across its phases (``after: [x]`` naming no phase) fail on the whole ``phases`` list and
#: start their message with the key inside it, e.g. ``phases.2.after.0: unknown phase 'x'``.
_INNER_KEY = re.compile(r"^phases((?:\.\w+)+): (.*)$", re.DOTALL)


def _inner_key(loc: tuple[str | int, ...], msg: str) -> tuple[tuple[str | int, ...], str]:
    """Move the key a plan-level message names into the key path, so the line number is that key's."""
    m = _INNER_KEY.match(msg)
    if not loc or loc[-1] != "phases" or m is None:
        return loc, msg
    inner = tuple(int(x) if x.isdigit() else x for x in m.group(1).lstrip(".").split("."))
    return (*loc, *inner), m.group(2)


def _clean_loc(loc: tuple[str | int, ...], data: Any, err_type: str) -> tuple[str | int, ...]:
    """Drop the union-branch tags pydantic puts into ``loc`` (they are not keys of the file)."""
    out: list[str | int] = []
    cur = data
    for i, part in enumerate(loc):
        last = i == len(loc) - 1
        if isinstance(part, int):
            out.append(part)
            cur = cur[part] if isinstance(cur, list) and 0 <= part < len(cur) else None
        elif isinstance(cur, dict) and part in cur:
            out.append(part)
            cur = cur[part]
        elif (last and err_type == "missing") or (cur is None and not _looks_like_tag(part)):
            out.append(part)
    return tuple(out)


def _looks_like_tag(part: str) -> bool:
    return (
        "[" in part or part in ("str", "int", "float", "bool", "list", "dict", "none") or part[:1].isupper()
    )


def _message(e: Any, loc: tuple[str | int, ...]) -> str:
    t = e["type"]
    msg: str = e["msg"]
    if t == "extra_forbidden":
        key = str(loc[-1]) if loc else "?"
        allowed = _allowed_keys(loc[:-1])
        if allowed:
            close = difflib.get_close_matches(key, allowed, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            return f"unknown key {key!r}{hint}; expected one of: {', '.join(allowed)}"
        return f"unknown key {key!r}"
    if t == "missing":
        return "required key is missing"
    for prefix in ("Value error, ", "Assertion failed, "):
        if msg.startswith(prefix):
            msg = msg[len(prefix) :]
    if msg.startswith("Input should be "):
        msg = "expected " + msg[len("Input should be ") :]
    if "input" in e and t not in ("value_error", "assertion_error"):
        shown = repr(e["input"])
        msg += f" (got {shown[:80] + '…' if len(shown) > 80 else shown})"
    if t in ("literal_error", "enum"):  # a mistyped value: the closest allowed one
        expected = str((e.get("ctx") or {}).get("expected", ""))
        msg += did_you_mean(e.get("input"), re.findall(r"'([^']*)'", expected))
    return msg


def _allowed_keys(loc: tuple[str | int, ...]) -> list[str]:
    model = _model_at(Config, loc)
    if model is None:
        return []
    return [f.alias or name for name, f in model.model_fields.items()]


def _model_at(model: type[BaseModel], loc: tuple[str | int, ...]) -> type[BaseModel] | None:
    ann: Any = model
    for part in loc:
        ann = _unwrap(ann, part)
        if ann is None:
            return None
    found = _unwrap(ann, None)
    return found if isinstance(found, type) and issubclass(found, BaseModel) else None


def _unwrap(ann: Any, part: str | int | None) -> Any:
    """One step down the annotation tree: a model's field, a list item or a dict value."""
    origin = typing.get_origin(ann)
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(ann):
            r = _unwrap(arg, part)
            if r is not None:
                return r
        return None
    if part is None:
        return ann
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        for name, f in ann.model_fields.items():
            if part in (name, f.alias):
                return f.annotation
        return None
    if origin is list and isinstance(part, int):
        return typing.get_args(ann)[0]
    if origin is dict and isinstance(part, str):
        return typing.get_args(ann)[1]
    return None


class _LineFinder:
    """Line numbers of key paths: exact for YAML and JSON (via the YAML node tree), best effort for TOML."""

    def __init__(self, text: str, kind: str):
        self.text = text
        self.kind = kind
        self._root: Any = None
        if text and kind != ".toml":
            try:
                # Only for a text the document reader already took (no aliases, nesting within its limit):
                # composing builds the node tree, which never expands an alias anyway.
                self._root = yaml.compose(text, Loader=_YAML_LOADER)
            except yaml.YAMLError:
                self._root = None

    def find(self, loc: tuple[str | int, ...]) -> int | None:
        if self._root is not None:
            return self._find_yaml(loc)
        if self.kind == ".toml" and self.text:
            return self._find_toml(loc)
        return None

    def _find_yaml(self, loc: tuple[str | int, ...]) -> int | None:
        node = self._root
        line: int = node.start_mark.line + 1
        for part in loc:
            if isinstance(node, yaml.MappingNode):
                for k, v in node.value:
                    if k.value == str(part):
                        line = k.start_mark.line + 1
                        node = v
                        break
                else:
                    return line
            elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
                node = node.value[part]
                line = node.start_mark.line + 1
            else:
                return line
        return line

    def _find_toml(self, loc: tuple[str | int, ...]) -> int | None:
        keys = [p for p in loc if isinstance(p, str)]
        if not keys:
            return None
        text_lines = self.text.splitlines()
        last = re.escape(keys[-1])
        pattern = re.compile(rf'^\s*(?:\[+\s*)?(?:[\w."-]+\.)?"?{last}"?\s*(?:=|\]|\.)')
        for i, ln in enumerate(text_lines, 1):
            if pattern.match(ln):
                return i
        return None
