"""The HTML report in a real headless Chromium: no console errors, a non-blank screenshot, and the Sankey
the browser ends up with has exactly the nodes and links of a crafted corpus.

Chromium comes from Debian (``.ci/services/chromium.sh start`` installs it and exports CHROMIUM_BIN); the
tests skip, saying so, only when no chromium binary exists. Errors are caught two ways: the page's own
``window.onerror``/``console.error`` counter (``#pg-status[data-errors]`` in the DOM dump) and Chromium's
``--enable-logging=stderr --v=0`` log, where every console message of the page appears as a CONSOLE line.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from planguard.cli import main
from planguard.offline.report.aggregate import phase_flow

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"


def chromium_bin() -> str | None:
    for candidate in (os.environ.get("CHROMIUM_BIN"), "chromium", "chromium-browser"):
        if candidate and shutil.which(candidate):
            return shutil.which(candidate)
    return None


CHROMIUM = chromium_bin()
pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="no chromium binary found (run .ci/services/chromium.sh start, or set CHROMIUM_BIN)",
)


def run_chromium(tmp: Path, url: str, *extra: str) -> tuple[str, str]:
    profile = tmp / f"profile-{len(list(tmp.glob('profile-*')))}"
    cmd = [
        str(CHROMIUM),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--no-first-run",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        "--enable-logging=stderr",
        "--v=0",
        *extra,
        url,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout, proc.stderr


def console_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


def png_pixels(path: Path) -> tuple[int, int, list[bytes]]:
    """Decode an 8-bit RGB/RGBA PNG into rows of raw pixel bytes (zlib + struct; filters 0–4)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat = 8, b""
    width = height = channels = 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and colour in (2, 6), (depth, colour)
            channels = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    raw = zlib.decompress(idat)
    stride = width * channels
    rows: list[bytes] = []
    prev = bytearray(stride)
    i = 0
    for _ in range(height):
        ftype = raw[i]
        line = bytearray(raw[i + 1 : i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - channels] if x >= channels else 0
            b = prev[x]
            c = prev[x - channels] if x >= channels else 0
            if ftype == 1:
                line[x] = (line[x] + a) & 0xFF
            elif ftype == 2:
                line[x] = (line[x] + b) & 0xFF
            elif ftype == 3:
                line[x] = (line[x] + (a + b) // 2) & 0xFF
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[x] = (line[x] + pred) & 0xFF
        rows.append(bytes(line))
        prev = line
    return (
        width,
        height,
        [bytes(r[k] for k in range(len(r)) if k % channels != 3) if channels == 4 else r for r in rows],
    )


def luminance_stats(path: Path) -> tuple[float, int]:
    """(variance of grey level, number of distinct colours) over every 4th pixel."""
    _w, _h, rows = png_pixels(path)
    greys: list[float] = []
    colours: set[bytes] = set()
    for row in rows[::4]:
        for x in range(0, len(row) - 2, 12):
            r, g, b = row[x], row[x + 1], row[x + 2]
            greys.append(0.299 * r + 0.587 * g + 0.114 * b)
            colours.add(row[x : x + 3])
    mean = sum(greys) / len(greys)
    return sum((v - mean) ** 2 for v in greys) / len(greys), len(colours)


# The crafted corpus: replay records whose phase flow is known exactly.
CRAFTED = [
    ("run-a", "NNRPV", True),
    ("run-b", "NRPVV", True),
    ("run-c", "NP", False),
    ("run-d", "NPNPNPNPNPNP", False),
    ("run-e", "RrPv", False),
]


def crafted_corpus(path: Path) -> None:
    from planguard.phases import ROLE_OF_LETTER

    lines = []
    for run_id, letters, resolved in CRAFTED:
        lines.append(
            json.dumps(
                {
                    "id": run_id,
                    "source": "crafted",
                    "format": "crafted",
                    "resolved": resolved,
                    "model": "m",
                    "n_steps": len(letters),
                    "step_roles": [[ROLE_OF_LETTER[ch]] for ch in letters],
                    "letters": letters,
                    "metrics": {"plan": {"PPC": 1.0 if resolved else 0.5, "POC": 1.0, "PPF": 1.0, "PC": 0.9}},
                    "actions": [
                        {"type": "COMMAND", "target": None, "effect": "FAILED" if i == 1 else "SURVIVED"}
                        for i in range(len(letters))
                    ],
                    "findings": [
                        {"detector": "search_loop", "first_step": 0, "last_step": 1, "at_end": False}
                    ],
                }
            )
        )
    path.write_text("\n".join(lines) + "\n")


def first_sankey(dom: str) -> str:
    m = re.search(r'<svg class="sankey".*?</svg>', dom, re.S)
    assert m, "no Sankey SVG in the rendered DOM"
    return m.group(0)


def test_crafted_report_renders_without_errors_and_sankey_matches(tmp_path: Path) -> None:
    corpus = tmp_path / "crafted.jsonl"
    crafted_corpus(corpus)
    out = tmp_path / "report.html"
    assert main(["report", str(corpus), "-o", str(out)]) == 0
    dom, stderr = run_chromium(tmp_path, out.as_uri(), "--dump-dom")
    assert console_lines(stderr) == []
    assert re.search(r'id="pg-status" data-errors="0" data-ready="1"', dom), (
        "page script did not finish cleanly"
    )
    # The drill-down was rendered by the script: one timeline per run, a cell per step.
    assert dom.count('class="run"') == len(CRAFTED)
    assert dom.count('class="step"') == sum(len(letters) for _, letters, _ in CRAFTED)
    assert dom.count('class="finding"') == len(CRAFTED)

    svg = first_sankey(dom)
    nodes = {m.group(1): int(m.group(2)) for m in re.finditer(r'data-node="([^"]+)" data-count="(\d+)"', svg)}
    links = {
        (m.group(1), m.group(2)): int(m.group(3))
        for m in re.finditer(r'data-source="([^"]+)" data-target="([^"]+)" data-count="(\d+)"', svg)
    }
    flow = phase_flow(letters for _, letters, _ in CRAFTED)
    assert nodes == {f"{k}:{ph}": c for (k, ph), c in flow.nodes.items()}
    assert links == {(f"{s[0]}:{s[1]}", f"{d[0]}:{d[1]}"): c for (s, d), c in flow.links.items()}
    # And by hand, so the check does not only compare the code with itself.
    assert nodes["0:N"] == 4 and nodes["0:R"] == 1 and nodes["1:R"] == 2 and nodes["1:r"] == 1
    assert links[("0:N", "1:R")] == 2 and links[("0:N", "1:P")] == 2 and links[("3:V", "4:END")] == 2
    assert links[("1:P", "2:END")] == 1 and links[("10:N", "11:MORE")] == 1 and links[("3:v", "4:END")] == 1
    # Out-of-plan phases are grey: the standard plan's V is 'V_newly_generated_test', so a regression-test
    # validation (v) is out of plan, while its reproduce phase is the 'L_reproduce' prefix and takes r too.
    assert re.search(r'fill="#a0a0a0" data-node="3:v"', svg)
    assert re.search(r'fill="#b07aa1" data-node="1:r"', svg)


def test_error_detection_is_real(tmp_path: Path) -> None:
    """The checks above can fail: a report with a broken script is caught by both channels."""
    corpus = tmp_path / "crafted.jsonl"
    crafted_corpus(corpus)
    out = tmp_path / "report.html"
    assert main(["report", str(corpus), "-o", str(out)]) == 0
    broken = tmp_path / "broken.html"
    broken.write_text(
        out.read_text("utf-8").replace("</body>", "<script>undefinedFunction();</script></body>")
    )
    dom, stderr = run_chromium(tmp_path, broken.as_uri(), "--dump-dom")
    assert any("undefinedFunction" in line for line in console_lines(stderr))
    assert 'data-errors="1"' in dom


def test_report_over_all_shared_trajectories(tmp_path: Path) -> None:
    data = SHARED / "data"
    if not (data / "swe-agent" / "trajectories.jsonl").exists():
        pytest.skip(f"shared data not found at {data}")
    out = Path(os.environ.get("PLANGUARD_REPORT_ARTIFACTS", tmp_path)) / "shared-report.html"
    out.parent.mkdir(parents=True, exist_ok=True)
    assert (
        main(
            ["report", str(data / "swe-agent" / "trajectories.jsonl"), str(data / "realtraj"), "-o", str(out)]
        )
        == 0
    )
    dom, stderr = run_chromium(tmp_path, out.as_uri(), "--dump-dom")
    assert console_lines(stderr) == []
    assert 'data-errors="0" data-ready="1"' in dom
    assert dom.count('class="run"') == 20  # the first page of the drill-down
    png = out.with_suffix(".png")
    run_chromium(
        tmp_path, out.as_uri(), f"--screenshot={png}", "--window-size=1280,2600", "--hide-scrollbars"
    )
    variance, colours = luminance_stats(png)
    assert variance > 200, f"screenshot looks blank (grey-level variance {variance:.1f})"
    assert colours > 50, f"screenshot has only {colours} distinct colours"


def test_blank_page_fails_the_pixel_check(tmp_path: Path) -> None:
    blank = tmp_path / "blank.html"
    blank.write_text("<html><body style='background:#fff'></body></html>")
    png = tmp_path / "blank.png"
    run_chromium(tmp_path, blank.as_uri(), f"--screenshot={png}", "--window-size=400,300")
    variance, colours = luminance_stats(png)
    assert variance < 1.0 and colours <= 2


def test_store_decisions_are_marked_on_the_timeline(tmp_path: Path) -> None:
    from typing import Any

    from planguard.decisions import Decision, DecisionKind
    from planguard.events import ToolEvent
    from planguard.session import Pipeline, Session
    from planguard.sinks.store.config import StoreConfig
    from planguard.sinks.store.writer import StoreSink
    from planguard.stages import Policy
    from planguard.step import Step

    class Gate(Policy):
        name = "gate"

        def before_tool(self, step: Step, session: Session, state: Any) -> Decision | None:
            if "rm -rf" in (step.event.action or ""):
                return Decision(DecisionKind.DENY, "refused rm", self.name)
            return None

    store = tmp_path / "sessions"
    sink = StoreSink(StoreConfig(path=str(store)))
    s = Pipeline(policies=(Gate(),), sinks=(sink,)).session("live-1", model="gpt-test")
    for ev in (
        ToolEvent.shell("cat /testbed/a.py"),
        ToolEvent.shell("rm -rf /testbed"),
        ToolEvent.shell("cat /testbed/b.py"),
    ):
        if not s.before_tool(ev).blocks:
            ev.result, ev.exit_code = "ok", 0
            s.after_tool(ev)
    s.end()
    assert sink.flush()
    sink.shutdown()
    out = tmp_path / "report.html"
    assert main(["report", str(store), "-o", str(out)]) == 0
    dom, stderr = run_chromium(tmp_path, out.as_uri(), "--dump-dom")
    assert console_lines(stderr) == []
    assert 'data-errors="0" data-ready="1"' in dom
    assert dom.count('class="decision" data-kind="deny"') == 1
    assert dom.count('class="step"') == 2
