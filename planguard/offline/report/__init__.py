"""Compliance reports over many runs: a self-contained HTML file or terminal tables.

``collect(paths)`` turns trajectories, ``planguard replay --format jsonl`` output or the embedded store
into compact :class:`RunRecord` s; ``build_report(records)`` computes every section (corpus, compliance with
the Mann–Whitney U test, phase flow, detectors and effect labels, drill-down sample); ``render_html`` and
``render_terminal`` lay it out. ``planguard report`` is the command-line front end.
"""

from __future__ import annotations

from .aggregate import Flow, Report, build_report, phase_flow, phase_runs, run_effect_shares
from .experiments import read_experiments, register_experiment_reader
from .html import render_html
from .records import RunRecord, collect, model_from_run, record_from_replay, record_from_replay_json
from .stats import UTest, mann_whitney_u, summarize
from .terminal import render_terminal

__all__ = [
    "Flow",
    "Report",
    "RunRecord",
    "UTest",
    "build_report",
    "collect",
    "mann_whitney_u",
    "model_from_run",
    "phase_flow",
    "phase_runs",
    "read_experiments",
    "record_from_replay",
    "record_from_replay_json",
    "register_experiment_reader",
    "render_html",
    "render_terminal",
    "run_effect_shares",
    "summarize",
]
