"""``planguard report`` end to end over real trajectories, replay output and the store."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from planguard.cli import main
from planguard.decisions import Decision, DecisionKind
from planguard.events import ToolEvent
from planguard.offline.report import collect, register_experiment_reader
from planguard.offline.report import experiments as experiments_mod
from planguard.session import Pipeline, Session
from planguard.sinks.store.config import StoreConfig
from planguard.sinks.store.writer import StoreSink
from planguard.stages import Policy
from planguard.step import Step


@pytest.fixture()
def corpus(shared: Path) -> Path:
    path = shared / "data" / "swe-agent" / "trajectories.jsonl"
    if not path.exists():
        pytest.skip(f"{path} not found")
    return path


def test_html_report_over_the_shared_corpus(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    assert main(["report", str(corpus), "-o", str(out)]) == 0
    html = out.read_text("utf-8")
    for section in ("summary", "compliance", "flow", "detectors", "runs", "experiments"):
        assert f'<section id="{section}">' in html
    assert '<b id="n-runs">81</b>' in html
    for model in (
        "lm_32b",
        "claude-4-sonnet-20250514",
        "gpt-5-2025-08-07",
        "kimi-k2-instruct-0905",
        "qwen3-coder-480b-a35b-instruct",
    ):
        assert "<option value=" in html and f">{model}</option>" in html
    # One Sankey per group (all runs + 5 models), each with its run count.
    assert html.count('<svg class="sankey"') == 6
    assert 'data-runs="81"' in html and 'data-runs="42"' in html
    found = re.search(r'<script type="application/json" id="pg-runs">(.*?)</script>', html)
    assert found is not None
    runs = json.loads(found.group(1))
    assert len(runs) == 81 and {r["o"] for r in runs} == {"resolved", "unresolved"}
    assert "<link" not in html and "src=" not in html  # nothing to fetch


def test_replay_jsonl_input_gives_the_same_numbers(corpus: Path, tmp_path: Path) -> None:
    replayed = tmp_path / "replay.jsonl"
    # ``report`` and ``replay`` score with the same rules by default (the live rules).
    assert main(["replay", str(corpus), "--format", "jsonl", "-o", str(replayed)]) == 0
    direct = [r for r in collect([corpus]) if not isinstance(r, str)]
    via = [r for r in collect([replayed]) if not isinstance(r, str)]
    assert len(direct) == len(via) == 81
    for a, b in zip(direct, via, strict=True):
        assert (a.id, a.model, a.steps, a.letters, a.metrics, a.effects, a.findings) == (
            b.id,
            b.model,
            b.steps,
            b.letters,
            b.metrics,
            b.effects,
            b.findings,
        )
    # The replay record carries the run's metadata, so outcomes survive the round trip.
    assert [r.outcome for r in via] == [r.outcome for r in direct]
    assert {r.outcome for r in direct} == {"resolved", "unresolved"}


def _drill(html: str) -> list[dict[str, Any]]:
    found = re.search(r'<script type="application/json" id="pg-runs">(.*?)</script>', html)
    assert found is not None
    runs: list[dict[str, Any]] = json.loads(found.group(1))
    return runs


def test_report_defaults_to_the_rules_replay_defaults_to(corpus: Path, tmp_path: Path) -> None:
    replayed = tmp_path / "replay.jsonl"
    assert main(["replay", str(corpus), "--format", "jsonl", "-o", str(replayed)]) == 0
    for args, out in (([], "default.html"), (["--rules", "live"], "live.html"), ([], "via.html")):
        src = replayed if out == "via.html" else corpus
        assert main(["report", str(src), *args, "-o", str(tmp_path / out)]) == 0
    default, live, via = (
        _drill((tmp_path / n).read_text("utf-8")) for n in ("default.html", "live.html", "via.html")
    )
    assert default == live
    assert [(r["id"], r["s"], r["m"]) for r in default] == [(r["id"], r["s"], r["m"]) for r in via]
    # The paper's rules are still one flag away, and they do score these runs differently.
    assert main(["report", str(corpus), "--rules", "v351278e", "-o", str(tmp_path / "paper.html")]) == 0
    paper = _drill((tmp_path / "paper.html").read_text("utf-8"))
    assert [r["s"] for r in paper] != [r["s"] for r in default]


def test_replay_writes_a_lone_surrogate_as_a_json_escape(corpus: Path, tmp_path: Path) -> None:
    # JSON may carry a lone surrogate ("\\ud800"), which UTF-8 cannot encode: the output stays valid JSON.
    record = json.loads(corpus.open("rb").readline())
    record["id"] = "odd\ud800id"
    src = tmp_path / "odd.jsonl"
    src.write_text(json.dumps(record), "utf-8")
    out = tmp_path / "out.jsonl"
    assert main(["replay", str(src), "--format", "jsonl", "-o", str(out)]) == 0
    assert json.loads(out.read_text("utf-8"))["id"] == "odd\ud800id"


def test_bad_lines_are_named_and_the_rest_reports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = {
        "id": "r1",
        "letters": "NP",
        "step_roles": [["L_navigate"], ["P"]],
        "metrics": {"plan": {"PPC": 0.5, "POC": 0.5, "PPF": 1.0, "PC": 0.63}},
        "findings": [],
    }
    path = tmp_path / "mixed.jsonl"
    path.write_text(
        "\n".join([json.dumps(good), "{not json", json.dumps({**good, "id": "r3", "metrics": 3})])
    )
    out = tmp_path / "r.html"
    assert main(["report", str(path), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"{path}:2: " in err
    assert f"{path}:3: 'metrics' has the wrong type" in err
    html = out.read_text("utf-8")
    assert '<b id="n-runs">1</b>' in html and "Inputs that failed (2)" in html


def test_missing_input_is_an_error_but_others_still_report(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    assert main(["report", str(corpus), str(tmp_path / "nope.jsonl"), "-o", str(out)]) == 1
    assert "nope.jsonl: no such file" in out.read_text("utf-8")


def test_terminal_format(corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(corpus), "--format", "terminal", "--group-by", "setting"]) == 0
    text = capsys.readouterr().out
    assert "81 runs" in text and "Compliance" in text and "Detector prevalence" in text
    assert "Effect-label profile" in text and "default" in text


def test_parallel_collection_matches_serial(shared: Path) -> None:
    real = shared / "data" / "realtraj"
    if not real.is_dir():
        pytest.skip("realtraj not found")
    serial = [r.id if not isinstance(r, str) else r for r in collect([real])]
    parallel = [r.id if not isinstance(r, str) else r for r in collect([real], jobs=2)]
    assert serial == parallel and len(serial) >= 10


class _Gate(Policy):
    name = "gate"

    def before_tool(self, step: Step, session: Session, state: Any) -> Decision | None:
        if "rm -rf" in (step.event.action or ""):
            return Decision(DecisionKind.DENY, "refused rm", self.name)
        return None

    def after_tool(self, step: Step, session: Session, state: Any) -> list[Decision]:
        return (
            [Decision(DecisionKind.REMIND, "PLAN REMINDER: navigate first", self.name)]
            if step.index == 0
            else []
        )


def test_store_sessions_report_with_recorded_decisions(tmp_path: Path) -> None:
    store = tmp_path / "sessions"
    sink = StoreSink(StoreConfig(path=str(store)))
    pipe = Pipeline(policies=(_Gate(),), sinks=(sink,))
    s = pipe.session("live-1", model="gpt-test", resolved=True)
    for ev in (
        ToolEvent.shell("cat /testbed/src/mod.py"),
        ToolEvent.shell("rm -rf /testbed"),
        ToolEvent(
            tool="str_replace_editor",
            arguments={
                "command": "str_replace",
                "path": "/testbed/src/mod.py",
                "old_str": "a",
                "new_str": "b",
            },
        ),
    ):
        if s.before_tool(ev).blocks:
            continue
        ev.result, ev.exit_code = "ok", 0
        s.after_tool(ev)
    s.end()
    assert sink.flush()
    sink.shutdown()
    (record,) = [r for r in collect([store]) if not isinstance(r, str)]
    assert record.model == "gpt-test" and record.outcome == "resolved" and record.format == "planguard-store"
    assert record.steps == "NP"
    kinds = [(d[0], d[1]) for d in record.decisions]
    assert (0, "remind") in kinds and (1, "deny") in kinds


def test_experiment_tables_come_from_registered_readers(corpus: Path, tmp_path: Path) -> None:
    exp = tmp_path / "results.exp.json"
    exp.write_text(json.dumps({"settings": {"plan": 0.5, "no_plan": 0.25}}))

    def reader(path: Path) -> list[dict[str, Any]] | None:
        if not path.name.endswith(".exp.json"):
            return None
        data = json.loads(path.read_text())
        return [
            {
                "title": "Resolve rate by setting",
                "columns": ["setting", "resolve rate"],
                "rows": [[k, v] for k, v in data["settings"].items()],
            }
        ]

    register_experiment_reader(reader)
    try:
        out = tmp_path / "r.html"
        assert main(["report", str(corpus), str(exp), "-o", str(out)]) == 0
        html = out.read_text("utf-8")
        assert "<h3>Resolve rate by setting</h3>" in html and "<td>no_plan</td><td>0.250</td>" in html
    finally:
        experiments_mod._READERS.remove(reader)


def test_no_runs_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty").mkdir()
    assert main(["report", str(tmp_path / "empty"), "-o", str(tmp_path / "r.html")]) == 1
    assert "no runs found" in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()


def test_experiment_result_files_become_tables(corpus: Path, tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    lines = []
    for i, (cond, endpoint, success) in enumerate(
        [
            ("A", "A", 1),
            ("A", "A", 0),
            ("A", "B", 1),
            ("B", "B", 1),
            ("B", "A", 0),
            ("none", "A", 1),
            ("none", "OTHER", 0),
        ]
    ):
        lines.append(
            {
                "type": "result",
                "experiment": "exp1",
                "session_id": f"s{i}",
                "condition": cond,
                "endpoint": endpoint,
                "task": f"t{i % 3}",
                "tool_calls": 4,
                "success": success,
            }
        )
    lines.append({"type": "outcome", "session_id": "s6", "success": 1})
    results.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    out = tmp_path / "r.html"
    assert main(["report", str(corpus), str(results), "-o", str(out)]) == 0
    html = out.read_text("utf-8")
    assert "Plan experiment exp1: endpoint distribution by condition" in html
    # Condition A: 3 episodes, 2 ended at A (66.7%), 1 at B; success 2/3.
    assert "<td>A</td><td>3</td><td>66.7% (2)</td><td>33.3% (1)</td>" in html
    # The late outcome line overrides s6's success: condition none has 2/2 successes.
    assert re.search(r"<td>none</td><td>2</td><td>50.0% \(1\)</td>.*?<td>1.000</td><td>4.000</td>", html)
    # The result file is not mistaken for trajectories: still 81 runs.
    assert '<b id="n-runs">81</b>' in html
