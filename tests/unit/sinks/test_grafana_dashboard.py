"""The Grafana dashboard shipped in examples/grafana: every key it sets is a field of Grafana's dashboard
schema (read through Grafana's own typed models, grafana-foundation-sdk: a round trip loses nothing), and
every metric and label its PromQL names is one the Prometheus endpoint really exposes after a session with
findings, a reminder, a denial and a drop. (No Grafana server installs here from Debian or PyPI.)"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from planguard import Config, Guard
from planguard.events import ToolEvent
from planguard.sinks.otel.env import start_prometheus_exporter

DASHBOARD = Path(__file__).resolve().parents[3] / "examples/grafana/planguard-dashboard.json"
#: Labels Prometheus itself adds (the scrape target's) or that histograms carry.
SCRAPE_LABELS = {"job", "instance", "le"}


def dashboard() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return data


def lost_in(original: Any, round_trip: Any, path: str = "") -> list[str]:
    """What ``original`` sets that the round trip dropped or changed (defaults it adds are fine)."""
    if isinstance(original, dict):
        if not isinstance(round_trip, dict):
            return [path]
        return [
            p for k, v in original.items() for p in lost_in(v, round_trip.get(k, KeyError), f"{path}/{k}")
        ]
    if isinstance(original, list):
        if not isinstance(round_trip, list) or len(round_trip) != len(original):
            return [path]
        return [
            p
            for i, (a, b) in enumerate(zip(original, round_trip, strict=True))
            for p in lost_in(a, b, f"{path}[{i}]")
        ]
    return [] if original == round_trip else [path]


def test_the_dashboard_fits_grafanas_dashboard_schema() -> None:
    sdk = pytest.importorskip("grafana_foundation_sdk")
    from grafana_foundation_sdk.cog.encoder import JSONEncoder
    from grafana_foundation_sdk.models.dashboard import Dashboard

    data = dashboard()
    round_trip = json.loads(json.dumps(Dashboard.from_json(data), cls=JSONEncoder))
    assert lost_in(data, round_trip) == [], sdk.__name__
    titles = [p["title"] for p in data["panels"]]
    for wanted in ("compliance", "Findings", "denials", "Reminders", "duration"):
        assert any(wanted in t for t in titles), (wanted, titles)
    assert all(t["datasource"]["uid"] == "${datasource}" for p in data["panels"] for t in p["targets"])


def exposed() -> dict[str, set[str]]:
    """Metric sample name → label names, as the endpoint serves them after a session with every kind."""
    prom = start_prometheus_exporter(port=0)
    config = Config.model_validate(
        {
            "store": {"enabled": False},
            "telemetry": {"agent_name": "coder"},
            "policies": {"reminder": {"every_model_calls": 1}},
        }
    )
    guard = Guard(config, meter_provider=prom.meter_provider)
    try:
        commands = ["cat src/app.py", *["grep -rn parse src"] * 6, "python -m pytest tests", "rm -rf /"]
        for i, command in enumerate(commands):
            ev = ToolEvent.shell(command, call_id=f"c{i}")
            guard.before_model("s")
            if guard.before_tool("s", ev).blocks:
                continue
            ev.result, ev.exit_code, ev.start_time, ev.end_time = "ok", 0, 100.0 + i, 100.5 + i
            guard.after_tool("s", ev)
        (otel,) = [s for s in guard.pipeline.sinks if type(s).__name__ == "OTelSink"]
        otel.drops.add("span_queue_full")  # type: ignore[attr-defined]
        guard.end("s")
        text = httpx.get(prom.url, timeout=5).text
    finally:
        guard.shutdown()
        prom.shutdown()
    out: dict[str, set[str]] = {}
    for line in text.splitlines():
        m = re.match(r"([a-zA-Z_:][\w:]*)(?:\{(.*)\})? ", line)
        if m and not line.startswith("#"):
            out.setdefault(m.group(1), set()).update(re.findall(r'(\w+)="', m.group(2) or ""))
    return out


def test_every_metric_and_label_the_dashboard_queries_is_exposed() -> None:
    metrics = exposed()
    for panel in dashboard()["panels"]:
        for target in panel["targets"]:
            expr = target["expr"]
            names = set(re.findall(r"\bplanguard_\w+", expr)) - {
                n for n in re.findall(r"\b(planguard_\w+)\s*[,)]", expr)
            }
            assert names, expr
            for name in names:
                assert name in metrics, (panel["title"], name, sorted(metrics))
            grouped = {label.strip() for by in re.findall(r"by \(([^)]*)\)", expr) for label in by.split(",")}
            labels = set().union(*(metrics[n] for n in names))
            assert grouped - SCRAPE_LABELS <= labels, (panel["title"], grouped, labels)
