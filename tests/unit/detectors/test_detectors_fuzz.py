"""Hypothesis: the detectors and the effect stage never raise and never report once per step, whatever
sequence of calls, arguments and results they see."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planguard.actions import classify_action
from planguard.actions.vocabulary import SURFACES
from planguard.detectors import (
    PlanAbsence,
    RedundantSearch,
    RepeatedCall,
    RereadChurn,
    ShellOverTool,
    ToolOscillation,
    default_detectors,
)
from planguard.events import ToolEvent
from planguard.findings import Finding
from planguard.offline.diff import align, run_view
from planguard.session import Pipeline

# A small vocabulary so that repeats, reads of the same file and reverting writes actually happen.
CALLS = [
    ToolEvent.shell("cat pkg/a.py"),
    ToolEvent.shell("grep -rn x pkg"),
    ToolEvent.shell("sed -i 's/x/y/' pkg/a.py"),
    ToolEvent.shell("sed -i 's/y/x/' pkg/a.py"),
    ToolEvent.shell("echo z > pkg/a.py"),
    ToolEvent.shell("pytest -q"),
    ToolEvent.shell("python reproduce.py"),
    ToolEvent.shell("ls"),
    ToolEvent.shell("git checkout -- pkg/a.py"),
    ToolEvent(tool="Read", arguments={"file_path": "pkg/a.py"}),
    ToolEvent(tool="TodoWrite", arguments={}),
    ToolEvent(tool="Bash", arguments={"command": "cat pkg/b.py"}),
    ToolEvent(tool="finish", arguments={"message": "done"}),
    ToolEvent(tool="str_replace_editor", arguments={"command": "undo_edit", "path": "/testbed/pkg/a.py"}),
    ToolEvent(tool="", arguments={}),
    ToolEvent(tool="weird", arguments="{broken"),
]


@st.composite
def runs(draw: st.DrawFn) -> list[ToolEvent]:
    out = []
    for base in draw(
        st.lists(
            st.sampled_from(CALLS)
            | st.builds(
                ToolEvent,
                tool=st.text(max_size=8),
                arguments=st.dictionaries(st.text(max_size=5), st.text(max_size=20), max_size=3),
            ),
            max_size=60,
        )
    ):
        out.append(
            ToolEvent(
                tool=base.tool,
                arguments=base.arguments,
                action=base.action,
                result=draw(
                    st.none() | st.sampled_from(["ok", "Traceback (most recent call last):", "2 failed"])
                ),
                exit_code=draw(st.none() | st.integers(0, 2)),
                is_error=draw(st.booleans()),
            )
        )
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    runs(),
    st.one_of(st.none(), st.sampled_from(["pkg/a.py", "pkg/b.py\npkg/c.py"])),
    st.one_of(st.none(), st.text(max_size=30)),
)
def test_detectors_never_raise_and_report_episodes(
    events: list[ToolEvent], anchors: str | None, final_text: str | None
) -> None:
    from planguard.detectors import set_anchors

    pipe = Pipeline(actions=classify_action, detectors=(*default_detectors(), RepeatedCall(2, 2)))
    s = pipe.session("f", final_text=final_text)
    if anchors is not None:
        set_anchors(s, anchors)
    per_step = 0
    for e in events:
        step = s.observe(e)
        for f in step.findings:
            assert 0 <= f.first_step <= f.last_step == step.index
        per_step = max(per_step, len(step.findings))
    summary = s.end()
    assert pipe.errors.total == 0, pipe.errors.counts
    for name, n in summary.finding_counts.items():
        assert n <= max(len(events), 1), name
    assert per_step <= len(pipe.detectors)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs(), runs())
def test_alignment_never_raises(a: list[ToolEvent], b: list[ToolEvent]) -> None:
    al = align(run_view(a), run_view(b))
    assert all(x < y for (x, _), (y, _) in zip(al.pairs, al.pairs[1:], strict=False))  # monotonic
    assert all(x < y for (_, x), (_, y) in zip(al.pairs, al.pairs[1:], strict=False))
    assert {layer.verdict for layer in al.layers} <= {"strong", "moderate", "weak"}


def _steps(events: list[ToolEvent]) -> list[Any]:
    s = Pipeline(actions=classify_action).session("steps")
    return [s.observe(e) for e in events]


def _key(f: Finding | None) -> Any:
    return None if f is None else (f.first_step, f.last_step, f.evidence, f.data)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs(), st.integers(2, 3), st.integers(1, 10))
def test_windows_expire_lazily_to_the_same_findings(events: list[ToolEvent], n: int, window: int) -> None:
    """The window detectors expire old entries only before a decision; expiring at every step, as they
    did, gives the same findings."""
    for det in (RereadChurn(n, window), RedundantSearch(n, window)):
        threshold = n
        lazy, eager = det.new_state(), det.new_state()
        for step in _steps(events):
            if eager.entries and eager.entries[0][0] <= step.index - eager.window:
                eager.expire(step.index, threshold)
            assert _key(det.observe(step, lazy)) == _key(det.observe(step, eager))


# Reads and (reverting) writes of one file, mostly succeeding: cycles go bad late, when a revert arrives.
OSCILLATION = st.lists(
    st.sampled_from(
        [
            ToolEvent.shell("cat pkg/a.py"),
            ToolEvent.shell("sed -i 's/x/y/' pkg/a.py"),
            ToolEvent.shell("sed -i 's/y/x/' pkg/a.py"),
            ToolEvent.shell("echo z > pkg/a.py"),
            ToolEvent.shell("git checkout -- pkg/a.py"),
            ToolEvent.shell("sed -i 's/x/y/' pkg/a.py", exit_code=1),
            ToolEvent.shell("ls"),
        ]
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs() | OSCILLATION, st.integers(1, 3))
def test_tool_oscillation_reports_as_soon_as_its_predicate_holds(
    events: list[ToolEvent], cycles: int
) -> None:
    """The predicate is re-evaluated only when a read closes a cycle or a write reverts: it never holds
    for a file that has not been reported."""
    det = ToolOscillation(cycles)
    state = det.new_state()
    for step in _steps(events):
        det.observe(step, state)
        for file in state.files.values():
            bad = [c for c in file.cycles if any(w.bad for w in c.writes)]
            assert file.fired or len(bad) < cycles


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    runs() | OSCILLATION,
    st.one_of(st.none(), st.sampled_from(["pkg/a.py", "pkg/b.py\npkg/c.py"])),
    st.one_of(st.none(), st.text(max_size=30)),
    st.booleans(),
)
def test_shared_facts_give_the_findings_of_standalone_detectors(
    events: list[ToolEvent], anchors: str | None, final_text: str | None, classified: bool
) -> None:
    """In ``default_detectors()`` the end-of-run detectors read the effect tracker's facts and observe no
    step, and ToolOscillation reads the tracker's FAILED label; standalone, each judges for itself. Both
    report the same findings."""
    from planguard.detectors import (
        EffectTracker,
        NoTailValidation,
        UnsupportedCompletion,
        set_anchors,
    )

    def findings(detectors: tuple[Any, ...]) -> list[Any]:
        pipe = Pipeline(actions=classify_action if classified else None, detectors=detectors)
        s = pipe.session("f", final_text=final_text)
        if anchors is not None:
            set_anchors(s, anchors)
        for e in events:
            s.observe(e)
        s.end()
        assert pipe.errors.total == 0, pipe.errors.counts
        return [(f.detector, f.first_step, f.last_step, f.evidence, f.data, f.at_end) for f in s.findings]

    shared = default_detectors()
    assert any(getattr(d, "effects", None) is shared[0] for d in shared)
    names = {"no_tail_validation", "unsupported_completion", "tool_oscillation"}
    alone = (NoTailValidation(), UnsupportedCompletion(), ToolOscillation())
    got = [f for f in findings(shared) if f[0] in names]
    assert sorted(got, key=repr) == sorted(findings(alone), key=repr)
    # the tracker placed after the detectors that read its labels changes nothing either
    tracker = EffectTracker()
    late = (
        ToolOscillation(),
        NoTailValidation(effects=tracker),
        UnsupportedCompletion(effects=tracker),
        tracker,
    )
    assert sorted(findings(late), key=repr) == sorted(findings(alone), key=repr)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs(), st.sampled_from(sorted(SURFACES)))
def test_tool_gated_detectors_skipped_for_a_fixed_surface_report_nothing_anyway(
    events: list[ToolEvent], scaffold: str
) -> None:
    """With a configured scaffold whose surface lacks the tool a predicate needs, the detector asks to see
    no step (``types`` empty); shown every step, it reports the same: nothing."""

    def findings(every_step: bool) -> list[Any]:
        dets = (PlanAbsence(2, scaffold=scaffold), ShellOverTool(scaffold=scaffold))
        if every_step:
            for d in dets:
                d.types = None
        pipe = Pipeline(actions=classify_action, detectors=dets)
        s = pipe.session("f")
        for e in events:
            s.observe(e)
        s.end()
        return [(f.detector, f.first_step, f.last_step, f.evidence) for f in s.findings]

    assert findings(False) == findings(True)
