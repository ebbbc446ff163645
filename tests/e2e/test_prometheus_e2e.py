"""End to end against a real Prometheus (started by ``.ci/services/prometheus.sh``): this process serves
planguard's metrics with the OpenTelemetry Prometheus exporter on the port Prometheus scrapes, and the
counters are read back through Prometheus's HTTP API (``/api/v1/query``)."""

from __future__ import annotations

import os
import time
import uuid
from typing import Any

import httpx
import pytest

from planguard.decisions import Decision, DecisionKind
from planguard.events import ToolEvent
from planguard.session import Pipeline, Session
from planguard.sinks.telemetry.export import start_prometheus_exporter
from planguard.sinks.telemetry.otel import OTelSink
from planguard.stages import Policy
from planguard.step import Step
from planguard.testing import ScriptedDetector

PROMETHEUS_URL = os.environ.get("PROMETHEUS_URL")
EXPORTER_PORT = os.environ.get("PLANGUARD_PROM_EXPORTER_PORT")
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        not (PROMETHEUS_URL and EXPORTER_PORT),
        reason="PROMETHEUS_URL/PLANGUARD_PROM_EXPORTER_PORT are not set: start Prometheus with "
        '`eval "$(bash .ci/services/prometheus.sh start)"` (.ci/run does)',
    ),
]


class Remind(Policy):
    name = "remind"

    def after_tool(self, step: Step, session: Session, state: Any) -> list[Decision]:
        return [Decision(DecisionKind.REMIND, "PLAN REMINDER", self.name)] if step.index % 2 == 0 else []


def query(promql: str, want: float, timeout_s: float = 60) -> float:
    deadline = time.monotonic() + timeout_s
    last: Any = None
    while time.monotonic() < deadline:
        r = httpx.get(f"{PROMETHEUS_URL}/api/v1/query", params={"query": promql}, timeout=10)
        r.raise_for_status()
        body = r.json()
        assert body["status"] == "success", body
        last = body["data"]["result"]
        if last and float(last[0]["value"][1]) == want:
            return want
        time.sleep(0.5)
    raise AssertionError(f"{promql} never reached {want}; last result {last}")


def test_counters_reach_prometheus() -> None:
    detector = f"e2e_{uuid.uuid4().hex[:10]}"  # a label value no earlier run produced
    prom = start_prometheus_exporter(port=int(str(EXPORTER_PORT)))
    try:
        sink = OTelSink(meter_provider=prom.meter_provider)
        pipe = Pipeline(
            detectors=(ScriptedDetector(detector, lambda s: True, episodes=False),),
            policies=(Remind(),),
            sinks=(sink,),
        )
        for sid in ("a", "b"):
            s = pipe.session(sid)
            for i in range(3):
                ev = ToolEvent.shell(f"cat /testbed/src/f{i}.py")
                s.before_tool(ev)
                ev.exit_code = 0
                s.after_tool(ev)
            s.end()
        assert query(
            f'planguard_findings_total{{planguard_finding_detector="{detector}",job="planguard"}}', 6
        )
        assert query('sum(planguard_reminders_total{planguard_decision_kind="remind",job="planguard"})', 4)
        assert query('planguard_session_pc_count{job="planguard",planguard_plan="plan"}', 2)
        assert query('sum(planguard_tool_calls_total{planguard_phase="N",job="planguard"})', 6)
        # tool latency: one observation per call, recorded on the scrape's thread
        assert query('sum(planguard_tool_duration_seconds_count{job="planguard"})', 6)
    finally:
        prom.shutdown()
