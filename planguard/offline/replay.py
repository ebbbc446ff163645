"""Offline replay: recorded trajectories through the very same ``Session`` the live integrations drive.

A replay reports the calls as they ran: a recorded call is a step even where a policy of the replaying
pipeline would now deny it, and a call the recording shows was denied is a denial, not a step. Beside them,
:class:`DecisionLog` keeps what the pipeline's policies decided (or would have decided) at each point,
model calls included when the recording says where they happened (``n_model_calls`` in an event's
metadata, as the session store writes it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ..actions import DEFAULT_CLASSIFIER
from ..actions.config import build_classifier
from ..actions.types import Action, ActionType, WriteKind
from ..detectors import build_detectors, default_detectors
from ..events import MessageEvent, ToolEvent
from ..phases import LETTER_OF, PhaseRules
from ..phases.base import (
    GENERAL,
    CallReader,
    CallRules,
    Classification,
    Command,
    PhaseClassifier,
    letter_map,
)
from ..phases.registry import rules_for
from ..plan import PRESETS, SCORED_SETTINGS, Plan, resolve_plan
from ..policies.config import build_policies
from ..run import RunModel
from ..session import RECORDED_POLICY, Pipeline, Session, SessionSummary
from ..sinks import Sink
from ..sinks.store.records import RECORDED_KEY
from ..step import Step
from ..tools.vocabulary import ToolCall
from .loaders import LoadError, Trajectory, iter_trajectories

if TYPE_CHECKING:
    from ..config import Config
    from ..decisions import Decision

__all__ = [
    "PAPER_SETTINGS",
    "DecisionLog",
    "ReplayResult",
    "config_pipeline",
    "RecordedActions",
    "RecordedRules",
    "replay",
    "replay_items",
    "replay_pipeline",
    "resolve_plans",
]

#: Model calls a replay puts in front of one recorded call at most (bounds a corrupt ``n_model_calls``).
MAX_MODEL_CALLS_GAP = 10_000

#: ``--plan paper-settings``: score every run against all seven scored settings of the paper.
PAPER_SETTINGS = "paper-settings"


@dataclass(slots=True)
class ReplayResult:
    trajectory: Trajectory
    summary: SessionSummary
    steps: list[Step] = field(default_factory=list)  # kept only when asked for (per-step output)
    # Non-allow decisions of the pipeline's policies: {"kind", "policy", "step", "on": tool|model|end}.
    decisions: list[dict[str, Any]] = field(default_factory=list)
    letter_of: Mapping[str, str] = field(default_factory=lambda: LETTER_OF)  # role -> letter under the rules
    # Calls a policy judged by an argument pattern the recording kept no verdict for (a store kept without
    # content records the verdicts of the patterns its own config had): decided as not matching, which
    # may differ from what a run under this pipeline would have decided.
    unjudged: int = 0

    @property
    def ran(self) -> list[Step]:
        """The kept steps that ran (the recording's denied calls left out)."""
        return [s for s in self.steps if s.event.blocked is None]

    @property
    def denied(self) -> list[Step]:
        """The kept calls the recording shows were denied (never ran)."""
        return [s for s in self.steps if s.event.blocked is not None]


class DecisionLog(Sink):
    """Every non-allow decision of a pipeline's policies, per session, with where it was taken: ``step`` is
    the call's index (for a model-call or end decision: the calls run so far). A denial read from a recording
    is not the pipeline's decision and is left out (replay counts it as a denial)."""

    def __init__(self) -> None:
        self._by_session: dict[str, list[dict[str, Any]]] = {}  # ended sessions' logs, until taken

    def new_state(self, session: Session) -> list[dict[str, Any]]:
        return []

    def on_decision(
        self, session: Session, step: Step | None, decision: Decision, state: list[dict[str, Any]]
    ) -> None:
        if decision.policy == RECORDED_POLICY:
            return
        on = "tool" if step is not None else "end" if session.ended else "model"
        state.append(
            {
                "kind": str(decision.kind),
                "policy": decision.policy,
                "step": step.index if step is not None else session.n_steps,
                "on": on,
            }
        )

    def on_session_end(self, session: Session, summary: SessionSummary, state: list[dict[str, Any]]) -> None:
        self._by_session[session.id] = state

    def take(self, session_id: str) -> list[dict[str, Any]]:
        """The ended session's decisions, forgotten here."""
        return self._by_session.pop(session_id, [])


def resolve_plans(spec: str | Sequence[str] | None) -> tuple[Plan, ...]:
    """``None`` → the standard plan; ``paper-settings`` → the seven scored settings; else presets/files."""
    if spec is None:
        return (PRESETS["plan"],)
    specs = [spec] if isinstance(spec, str) else list(spec)
    plans: list[Plan] = []
    for s in specs:
        if s == PAPER_SETTINGS:
            plans.extend(PRESETS[name] for name in SCORED_SETTINGS)
        else:
            plans.append(resolve_plan(s))
    return tuple(plans)


def replay_pipeline(
    plans: Sequence[Plan] = (PRESETS["plan"],),
    rules: str | None = None,
    *,
    diagnostics: bool = True,
    sinks: Sequence[Sink] = (),
) -> Pipeline:
    """The offline pipeline: phases and metrics, plus canonical actions and detectors when ``diagnostics``;
    ``sinks`` receive the replayed sessions (``planguard replay --export otlp``).

    A step recorded without content (a store kept metadata only) is taken as recorded — its commands'
    roles and its action type — since there is nothing to classify again; every other step is classified.
    """
    kwargs: dict[str, Any] = {}
    if diagnostics:
        kwargs = {"actions": RecordedActions(DEFAULT_CLASSIFIER), "detectors": default_detectors()}
    # The first plan's declared phases, when it declares them, classify instead of the coding rules (both
    # over the built-in vocabulary). The pipeline asks its rules only for new_state() and classify(), and
    # reads their name and letters.
    recorded_first = cast(PhaseRules, RecordedRules(rules_for(plans[0], rules)))
    return Pipeline(rules=recorded_first, plans=tuple(plans), sinks=tuple(sinks), **kwargs)


def config_pipeline(config: Config, *, sinks: Sequence[Sink] = ()) -> Pipeline:
    """The pipeline a config describes (plan and scored plans, phase rules or the plan's declared phases,
    actions vocabulary, detectors, policies), as a ``Guard`` builds it but without its sinks: a replay
    records nothing and exports nothing unless given ``sinks`` (``--export otlp``). As in
    :func:`replay_pipeline`, a step recorded without content is taken as recorded."""
    plans = config.plans
    classifier = build_classifier(config.tools)
    detectors = build_detectors(config.detectors, scaffold=config.tools.scaffold)
    return Pipeline(
        rules=cast(PhaseRules, RecordedRules(rules_for(plans[0], config.rules, classifier))),
        plans=plans,
        actions=RecordedActions(classifier),
        detectors=tuple(detectors),
        policies=tuple(build_policies(config.policies, plans[0], fail_closed_gates=config.fail_closed_gates)),
        sinks=tuple(sinks),
    )


def _recorded(event: ToolEvent) -> dict[str, Any] | None:
    """The step's recorded classification (a blocked call's record may hold only the facts its gates read)."""
    meta = event.metadata
    recorded = meta.get(RECORDED_KEY) if meta else None
    return recorded if isinstance(recorded, dict) and "commands" in recorded else None


class RecordedRules:
    """Phase rules that take a step's recorded commands (see ``RECORDED_KEY``) when it has them."""

    def __init__(self, rules: PhaseClassifier) -> None:
        self.rules = rules
        self.name = getattr(rules, "name", None)
        self.letter_of = letter_map(rules)
        self.needs_result = bool(getattr(rules, "needs_result", False))

    def new_state(self) -> Any:
        return self.rules.new_state()

    @property
    def call_reader(self) -> object:
        """The rules' ``call_reader`` (:class:`~planguard.phases.base.CallRules`): a step without a
        recorded phase is then read once, with its action (:meth:`RecordedActions.read`)."""
        return getattr(self.rules, "call_reader", None)

    def classify(self, event: ToolEvent, state: Any, call: ToolCall | None = None) -> Classification:
        recorded = _recorded(event)
        if recorded is None:
            if call is None:
                return self.rules.classify(event, state)
            return cast(CallRules, self.rules).classify(event, state, call)
        commands = _commands(recorded)
        return Classification(commands or (Command(event.tool or "unknown", GENERAL),))

    @property
    def matches_messages(self) -> bool:
        return bool(getattr(self.rules, "matches_messages", False))

    def observe_message(self, message: MessageEvent, state: Any) -> Classification | None:
        """The turn's recorded phase when it has one (a store keeps the match, not the text), else the
        rules' reading of its text."""
        meta = message.metadata
        recorded = meta.get(RECORDED_KEY) if meta else None
        if isinstance(recorded, dict):
            commands = _commands(recorded)
            return Classification(commands) if commands else None
        observe = getattr(self.rules, "observe_message", None)
        return None if observe is None else cast("Classification | None", observe(message, state))


def _commands(recorded: Mapping[str, Any]) -> tuple[Command, ...]:
    return tuple(Command(str(label), str(role)) for label, role in recorded.get("commands") or ())


class RecordedActions:
    """An action classifier that rebuilds a step's recorded action (its type, tool, intent, write kind
    and flags; for target and path, and a script's intent and shell, their digests: the texts were
    content) when it has one."""

    def __init__(self, classify: Callable[[ToolEvent], Any]) -> None:
        self.classify = classify

    @property
    def call_reader(self) -> object:
        """The classifier's ``call_reader`` (:class:`~planguard.phases.base.CallReader`)."""
        return getattr(self.classify, "call_reader", None)

    def read(self, event: ToolEvent, run: RunModel | None) -> tuple[Any, ToolCall | None]:
        """A step's recorded action (the recorded phase needs no reading), else the call read once."""
        recorded = _recorded(event)
        if recorded is None:
            return cast(CallReader, self.classify).read(event, run)
        return _recorded_action(event, recorded), None

    def __call__(self, event: ToolEvent) -> Any:
        recorded = _recorded(event)
        if recorded is None:
            return self.classify(event)
        return _recorded_action(event, recorded)


def _recorded_action(event: ToolEvent, recorded: Mapping[str, Any]) -> Action | None:
    """A step's recorded action (see :class:`RecordedActions`)."""
    fields = recorded.get("action")
    if not isinstance(fields, dict) or fields.get("type") not in _ACTION_TYPES:
        return None
    write = fields.get("write")
    return Action(
        ActionType(fields["type"]),
        target=fields.get("target") or _digest(fields.get("target_id")),
        tool=str(fields.get("tool") or event.tool),
        path=fields.get("path") or _digest(fields.get("path_id")),
        intent=fields.get("intent") or _digest(fields.get("intent_id")),
        is_validation=bool(fields.get("is_validation")),
        is_source_write=bool(fields.get("is_source_write")),
        is_completion=bool(fields.get("is_completion")),
        write=WriteKind(write) if write in _WRITE_KINDS else None,
        shell=fields.get("shell") or _digest(fields.get("shell_id")),
        structured=bool(fields.get("structured")),
        scaffold=fields.get("scaffold"),
    )


def _digest(value: Any) -> str | None:
    """A recorded target's or path's digest, as the text detectors compare (``#`` marks it one)."""
    return f"#{value}" if isinstance(value, str) and value else None


_ACTION_TYPES = frozenset(t.value for t in ActionType)
_WRITE_KINDS = frozenset(k.value for k in WriteKind)


def replay(
    paths: Iterable[str | Path],
    pipeline: Pipeline,
    *,
    source_format: str | None = None,
    keep_steps: bool = False,
    recorded_plans: bool = False,
    diagnostics: bool = True,
) -> Iterator[ReplayResult | LoadError]:
    """Replay every trajectory under ``paths`` in input order; load errors are yielded, not raised.

    ``recorded_plans``: a trajectory that names the plan and rules it was recorded under (a store session)
    replays under them (``diagnostics`` as in :func:`replay_pipeline`); others under ``pipeline``."""
    yield from replay_items(
        iter_trajectories(paths, source_format=source_format),
        pipeline,
        keep_steps=keep_steps,
        recorded_plans=recorded_plans,
        diagnostics=diagnostics,
    )


def replay_items(
    items: Iterable[Trajectory | LoadError],
    pipeline: Pipeline,
    *,
    keep_steps: bool = False,
    recorded_plans: bool = False,
    diagnostics: bool = True,
) -> Iterator[ReplayResult | LoadError]:
    """:func:`replay` of loaded items (a part of a corpus, see :mod:`planguard.offline.parallel`)."""
    log = DecisionLog()
    base = pipeline = dataclasses.replace(pipeline, sinks=(*pipeline.sinks, log))
    recorded: dict[tuple[str, str | None], Pipeline] = {}
    for item in items:
        if isinstance(item, LoadError):
            yield item
            continue
        if recorded_plans:
            pipeline = _recorded_pipeline(item.meta, base, recorded, diagnostics)
        # A recorded run keeps its own clock: its session starts when its first call did (when recorded).
        first = next((e.start_time for e in item.events if e.start_time is not None), None)
        session = Session(item.id, pipeline, metadata=item.meta, started_at=first)
        steps: list[Step] = []
        observe = session.observe
        # (the conversation's turns go to the session only when its plan matches turns)
        turns = item.messages if getattr(pipeline.rules, "matches_messages", False) else []
        told = unjudged = 0
        for i, event in enumerate(item.events):
            told = _turns_until(session, turns, told, i)
            _model_calls_until(session, event.metadata.get("n_model_calls"))
            step = observe(event)
            if keep_steps:
                steps.append(step)
            kept = event.metadata.get(RECORDED_KEY)
            if isinstance(kept, dict) and kept.get("unjudged"):  # (see planguard/policies/match.py)
                unjudged += 1
        _turns_until(session, turns, told, len(item.events))
        _model_calls_until(session, item.meta.get("n_model_calls"))
        summary = session.end()
        yield ReplayResult(item, summary, steps, log.take(session.id), pipeline.letter_of, unjudged)


def _turns_until(session: Session, turns: Sequence[tuple[int, MessageEvent]], told: int, upto: int) -> int:
    """Observe the turns from ``told`` on that came before event ``upto``; returns how many are told."""
    while told < len(turns) and turns[told][0] <= upto:
        session.observe_message(turns[told][1])
        told += 1
    return told


def _recorded_pipeline(
    meta: Mapping[str, Any],
    base: Pipeline,
    cache: dict[tuple[str, str | None], Pipeline],
    diagnostics: bool,
) -> Pipeline:
    """The pipeline of the plan and rules a trajectory was recorded under (``base`` when it names none)."""
    spec, name, rules = meta.get("plan_spec"), meta.get("plan"), meta.get("rules")
    rules = rules if isinstance(rules, str) else None
    if isinstance(spec, Mapping):
        key = (repr(sorted(spec.items())), rules)
    elif isinstance(name, str) and name in PRESETS:
        key = (name, rules)
    else:
        return base
    pipeline = cache.get(key)
    if pipeline is None:
        plan = Plan.model_validate(spec) if isinstance(spec, Mapping) else PRESETS[str(name)]
        try:
            pipeline = replay_pipeline((plan,), rules, diagnostics=diagnostics, sinks=base.sinks)
        except ValueError:  # rules this version does not know: the plan's own, or the default
            pipeline = replay_pipeline((plan,), None, diagnostics=diagnostics, sinks=base.sinks)
        cache[key] = pipeline
    return pipeline


def _model_calls_until(session: Session, n_model_calls: Any) -> None:
    """Make the model calls the recording says happened before this point (none when it does not say)."""
    if not isinstance(n_model_calls, int) or isinstance(n_model_calls, bool):
        return
    for _ in range(min(n_model_calls - session.n_model_calls, MAX_MODEL_CALLS_GAP)):
        session.before_model()
