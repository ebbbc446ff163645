"""``planguard check-config FILE``: validate a config file and print what it sets up.

Exit status 0 when valid; 1 with one ``FILE:LINE: key.path: problem`` line per problem on standard error.
Environment overrides (``PLANGUARD_*``) are applied as the guard would apply them; ``--no-env`` ignores them.
An integration's section (the proxy's ``proxy:``, found through the ``planguard.commands`` entry points) is
checked with its own model when that integration is installed, and reported as not checked otherwise.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from ...config import Config

__all__ = ["gate_warnings", "integration_sections", "register", "run", "summarize", "validate"]

#: Config sections of integrations, and the extra that installs each: what a file may hold when the
#: integration is not installed here (reported as not checked rather than refused).
_SECTION_EXTRAS = {"proxy": "proxy"}


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "check-config",
        help="validate a config file and summarise it",
        description="Validate a planguard config file (YAML/TOML/JSON) and summarise what it sets up.",
    )
    p.add_argument("file", metavar="FILE", help="config file")
    p.add_argument("--no-env", action="store_true", help="ignore PLANGUARD_* environment overrides")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    env: Mapping[str, str] = {} if args.no_env else os.environ
    config, problems, section_lines = validate(args.file, env)
    if problems or config is None:
        for line in problems:
            print(f"error: {line}", file=sys.stderr)
        return 1
    print(f"{args.file}: valid")
    for line in summarize(config, env):
        print(line)
    for line in section_lines:
        print(line)
    for line in gate_warnings(config):
        print(f"warning: {args.file}: {line}", file=sys.stderr)
    return 0


def validate(path: str, env: Mapping[str, str]) -> tuple[Config | None, list[str], list[str]]:
    """The file's config (None when it is not usable), its problems (one ``FILE:LINE: key: problem`` line
    each; none when it is valid) and the summary lines of the integrations' sections it has. What
    ``check-config`` reports, and what ``planguard install`` refuses a config for."""
    from ...config import ConfigError, load_config

    sections = integration_sections()
    problems: list[str] = []
    config = None
    try:
        config = load_config(path, env=env, other_sections=tuple(sections) + tuple(_SECTION_EXTRAS))
    except ConfigError as exc:
        problems += str(exc).splitlines()
    section_lines: list[str] = []
    try:
        section_lines = _integration_section_lines(path, sections)
    except ConfigError as exc:
        problems += str(exc).splitlines()
    if config is not None and not problems:
        problems = [f"{path}: {line}" for line in _unresolved_plugins(config)]
    # An integration's section is read from the same file: a problem of the file itself shows up twice.
    return config, list(dict.fromkeys(problems)), section_lines


def integration_sections() -> dict[str, Callable[[str], str | None]]:
    """The config sections installed integrations read, with each one's check: a module named by a
    ``planguard.commands`` entry point may declare ``CONFIG_SECTION`` (a top-level key) and
    ``check_config_section(path)`` (its summary line, None when the file has no such section; raises
    ConfigError when it is invalid)."""
    from .. import integration_commands

    out: dict[str, Callable[[str], str | None]] = {}
    for ep in integration_commands().values():
        try:
            module = importlib.import_module(ep.module)
        except ImportError:
            continue  # its command says what is missing when it is run
        section = getattr(module, "CONFIG_SECTION", None)
        check = getattr(module, "check_config_section", None)
        if isinstance(section, str) and callable(check):
            out[section] = check
    return out


def gate_warnings(config: Config) -> list[str]:
    """Gates waiting on a declared phase that nothing can show before the gated call: no match, verb or
    message rule of the phase holds for a call other than the gated tool's or for a turn, or the phase may
    only follow (``after``) a phase in that case, or phases wait on each other. The gate would then hold
    until its max_denials (e.g. a confirm phase matched only by the tool it guards, while the agent
    confirms in chat)."""
    from ...plan import phase_matches

    plan = config.followed_plan
    if not plan.declarative:
        return []
    out = []
    for i, gate in enumerate(config.policies.gates):
        until = gate.until
        waited: list[tuple[str, str]] = [(f"phases_seen.{j}", p) for j, p in enumerate(until.phases_seen)]
        pa = until.phase_after
        if pa is not None:
            waited.append(("phase_after.phase", pa.phase))
            if pa.strict:  # else the gate opens with no 'after' phase at all
                waited.append(("phase_after.after", pa.after))
        gated = gate.compile()
        for key, prefix in waited:
            phases = [p for p in plan.phases if phase_matches(p.id, prefix)]
            reasons = [_never_shown(plan, p.id, gated, ()) for p in phases]
            if phases and all(reasons):
                out.append(
                    f"policies.gates.{i}.until.{key}: gate {gate.name!r} waits on phase {phases[0].id!r}, "
                    f"which nothing before the gated call can show: {reasons[0]}; the gate would hold until "
                    "max_denials (if the agent does this in chat, add a match: {message: ...} to the phase)"
                )
    return out


def _never_shown(plan: Any, pid: str, gated: Any, through: tuple[str, ...]) -> str | None:
    """Why no call but the gated one, and no turn, can show phase ``pid`` before the gated call (None:
    something can). ``through``: the phases that wait on it (an ``after`` chain)."""
    from ...events import ToolEvent

    phase = next((p for p in plan.phases if p.id == pid), None)
    if phase is None:
        return f"no phase {pid!r} exists"
    if pid in through:
        return "its 'after' conditions wait on each other (" + " -> ".join([*through, pid]) + ")"
    if not phase.verbs and not any(_shows_other_calls(m, gated, ToolEvent) for m in phase.matches):
        return f"only the tool the gate holds matches phase {pid!r} (no other tool, verb or message rule)"
    for before in phase.after:
        why = _never_shown(plan, before, gated, (*through, pid))
        if why is not None:
            return f"phase {pid!r} only comes after {before!r}, and {why}"
    return None


def _shows_other_calls(match: Any, gated: Any, event: Any) -> bool:
    """A phase match that some call other than the gated tool's (or a conversation turn) can satisfy."""
    if match.message is not None or match.tool_regex is not None:
        return True
    if match.tool is None:
        return True  # matched by action, target, arguments or outcome: any tool may
    globs = [match.tool] if isinstance(match.tool, str) else match.tool
    return any(any(c in g for c in "*?[") or not gated.matches(event(tool=g)) for g in globs)


def _unresolved_plugins(config: Config) -> list[str]:
    """The ``custom`` policies and sinks the guard could not build: each named class must import (or be a
    built-in or an entry point) and be the right kind of stage. Options are only checked when the guard
    builds. Custom detectors need no check here: loading the file builds them already (their names are the
    finding kinds ``policies.responses`` may answer)."""
    from ...plugins import resolve_class

    problems = []
    for kind, specs in (("policies", config.policies.custom), ("sinks", config.sinks.custom)):
        for i, spec in enumerate(specs):
            try:
                resolve_class(kind, spec.class_, f"{kind}.custom.{i}")  # type: ignore[arg-type]
            except ValueError as exc:
                problems.append(str(exc))
    return problems


def _integration_section_lines(path: str, sections: Mapping[str, Callable[[str], str | None]]) -> list[str]:
    """One summary line per integration section the file has (ConfigError if one is invalid); a section of
    an integration that is not installed is reported, not checked."""
    from ...config import load_section

    lines: list[str] = []
    checked: set[str] = set()
    for section, check in sections.items():
        try:
            line = check(path)
        except ImportError:
            continue  # the integration's model does not import: reported as not checked below
        checked.add(section)
        if line is not None:
            lines.append(line)
    for section, extra in _SECTION_EXTRAS.items():
        if section in checked:
            continue
        from pydantic import BaseModel, ConfigDict

        class _AnySection(BaseModel):  # only "is it a mapping": the integration's own model is not here
            model_config = ConfigDict(extra="allow")

        if load_section(path, section, _AnySection) is not None:
            install = f"pip install 'planguard-agents[{extra}]'"
            lines.append(f"{section}: present, not checked (its model comes with: {install})")
    return lines


def summarize(config: Config, env: Mapping[str, str] | None = None) -> list[str]:
    """Human-readable lines: plan, rules, each policy, sinks, sessions, and the active env overrides."""
    from ...config import ENV_OVERRIDES

    out: list[str] = []
    if not config.enabled:
        out.append("planguard: DISABLED (enabled: false) — every call is allowed, nothing is recorded")
    plan = config.followed_plan
    phases = (
        " → ".join(f"{p.name}" + ("" if p.scored else " (not scored)") for p in plan.phases) or "(no phases)"
    )
    out.append(f"plan: {plan.name}: {phases}")
    if len(config.plans) > 1:
        out.append("also scored against: " + ", ".join(p.name for p in config.plans[1:]))
    if plan.declarative:
        out.append("phases: declared by the plan (the coding rules are not used)")
        for p in plan.phases:
            order = [f"after {', '.join(p.after)}"] if p.after else []
            order += [f"before {', '.join(p.before)}"] if p.before else []
            order += ["first call only"] if p.first_only else []
            matches = " or ".join(
                "{" + ", ".join(f"{k}: {v}" for k, v in m.model_dump(exclude_defaults=True).items()) + "}"
                for m in p.matches
            )
            out.append(f"  {p.symbol} {p.id}: {matches}" + (f" ({'; '.join(order)})" if order else ""))
    else:
        out.append(f"rules: {config.rules}")
    pol = config.policies
    r = pol.reminder
    if r.enabled and plan.phases and (r.every_model_calls or r.every_tool_calls):
        counts = ((r.every_model_calls, "model"), (r.every_tool_calls, "tool"))
        every = " or ".join(f"{n} {kind} calls" for n, kind in counts if n)
        cap = "no cap" if r.max_per_session is None else f"at most {r.max_per_session} per session"
        out.append(
            f"reminder: every {every}, {r.delivery}, {cap}, min gap {r.min_gap_model_calls} model calls"
        )
    else:
        out.append("reminder: off")
    v = pol.violations
    if v.enabled and plan.phases:
        kinds = [k for k in ("skipped", "out_of_order", "out_of_plan", "missing_at_finish") if getattr(v, k)]
        out.append(f"violations: {', '.join(kinds) or 'none'}; on finish: {v.on_finish}; {v.delivery}")
    else:
        out.append("violations: off")
    resp = pol.responses
    if resp.enabled:

        def rungs(ladder: object) -> str:
            """The ladder's rungs with the finding count each starts at, e.g. ``warn@2, block@4``."""
            at = {rung: getattr(ladder, rung) for rung in ("log", "warn", "nudge", "block", "stop")}
            return ", ".join(f"{rung}@{n}" for rung, n in at.items() if n is not None)

        for kind, rc in resp.findings.items():
            extra = f", exempt {rc.exempt_tools}" if rc.exempt_tools else ""
            out.append(
                f"responses: {kind}: {rungs(rc.ladder) or 'none'} (cooldown {rc.cooldown_steps} steps{extra})"
            )
        out.append(f"responses: other kinds: {rungs(resp.default.ladder) or 'ignored'}")
    else:
        out.append("responses: off")
    for g in pol.gates:
        tools = g.tool_regex or (g.tool if isinstance(g.tool, str) else ", ".join(g.tool))
        args = f" with {g.arguments}" if g.arguments else ""
        until = g.until
        pa = until.phase_after
        conds = [f"{pa.phase} after {pa.after}"] if pa is not None else []
        conds += [f"{p} seen" for p in until.phases_seen]
        conds += ["plan complete"] if until.plan_complete else []
        conds += [f"{until.min_steps} steps"] if until.min_steps else []
        closed = g.fail_closed if g.fail_closed is not None else config.fail_closed_gates
        out.append(
            f"gate {g.name}: deny {tools}{args} until {', '.join(conds)}; "
            f"max denials {g.max_denials if g.max_denials is not None else 'unlimited'}; "
            f"{'fail-closed' if closed else 'fail-open'}"
        )
    n = config.webhook
    if n.enabled and n.url:
        u = urlsplit(n.url)  # never print credentials, query strings or header values
        out.append(
            f"webhook: {u.scheme}://{u.hostname}{':' + str(u.port) if u.port else ''}{u.path} "
            f"on {', '.join(n.events)} (timeout {n.timeout_s}s, {n.max_retries} retries, "
            f"queue {n.queue_size})"
        )
    else:
        out.append("webhook: off")
    out += [f"custom policy: {spec.class_}" for spec in pol.custom]
    out += [f"custom detector: {spec.class_}" for spec in config.detectors.custom]
    out += [f"custom sink: {spec.class_}" for spec in config.sinks.custom]
    out.append(
        f"telemetry: {'on' if config.telemetry.enabled else 'off'}; "
        f"store: {config.store.path if config.store.enabled else 'off'}"
    )
    idle = config.sessions.idle_timeout_s
    out.append(
        f"sessions: at most {config.sessions.max_sessions}, idle timeout "
        f"{'none' if idle is None else f'{idle:g}s'}"
    )
    active = [var for var in ENV_OVERRIDES if env is not None and var in env]
    if active:
        out.append("environment overrides: " + ", ".join(active))
    return out
