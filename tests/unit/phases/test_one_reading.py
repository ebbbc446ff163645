"""A pipeline reads each call once when its phase rules take calls as its action classifier reads them
(:class:`planguard.phases.base.CallRules` and :class:`~planguard.phases.base.CallReader` with the same
``call_reader``), whatever classes they are: a custom classifier takes part by the contract, not by type."""

from __future__ import annotations

from typing import Any

from planguard.actions import ActionClassifier, ActionType
from planguard.events import ToolEvent
from planguard.phases import LiveRules, PhaseState
from planguard.phases.base import Classification
from planguard.run import RunModel
from planguard.session import Pipeline
from planguard.tools.vocabulary import ToolCall


class CountingReader:
    """A custom action classifier: wraps the built-in one and counts its readings."""

    def __init__(self, inner: ActionClassifier) -> None:
        self.inner = inner
        self.reads = 0
        self.runs: list[RunModel | None] = []

    @property
    def call_reader(self) -> ActionClassifier:
        return self.inner

    def read(self, event: ToolEvent, run: RunModel | None) -> tuple[Any, ToolCall | None]:
        self.reads += 1
        self.runs.append(run)
        return self.inner.read(event, run)

    def __call__(self, event: ToolEvent) -> Any:
        raise AssertionError("a pipeline with one reading never classifies a call a second time")


class TakesCalls:
    """Custom phase rules that take the one reading's call (and note which calls they got)."""

    name = "custom"

    def __init__(self, inner: LiveRules) -> None:
        self.inner = inner
        self.calls: list[ToolCall | None] = []

    @property
    def call_reader(self) -> ActionClassifier:
        return self.inner.actions

    def new_state(self) -> PhaseState:
        return self.inner.new_state()

    def classify(self, event: ToolEvent, state: Any, call: ToolCall | None = None) -> Classification:
        self.calls.append(call)
        return self.inner.classify(event, state, call)


def test_custom_classifier_and_rules_share_one_reading() -> None:
    inner = ActionClassifier()
    reader, rules = CountingReader(inner), TakesCalls(LiveRules(inner))
    pipeline = Pipeline(rules=rules, actions=reader)
    assert pipeline.one_reading == (reader, rules)
    session = pipeline.session("s")
    step = session.observe(ToolEvent.shell("sed -i 's/a/b/' src/app.py"))
    assert reader.reads == 1 and rules.calls[0] is not None and rules.calls[0].kind == "shell"
    assert reader.runs[0] is session.phase_state.run  # the action is judged against the run model
    assert step.action is not None and step.action.type is ActionType.FILE_WRITE
    assert step.classification.letters == "P"


def test_rules_reading_through_another_classifier_read_calls_themselves() -> None:
    reader = CountingReader(ActionClassifier())
    pipeline = Pipeline(rules=LiveRules(ActionClassifier()), actions=reader)
    assert pipeline.one_reading is None
