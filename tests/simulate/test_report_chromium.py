"""The HTML report in a real browser: headless Chromium (Debian's package, installed by
``tests/setup/chromium.sh``) renders every chart of a report with a sweep; each chart's
data marks must be drawn in its series' colours (legend hidden, so only data counts), and
the page must parse into the expected charts with no external resource."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from fakenrt.simulate.charts import PALETTE
from fakenrt.simulate.engine import simulate
from fakenrt.simulate.metrics import StrategyResult
from fakenrt.simulate.report import STYLE, html
from fakenrt.simulate.results import SweepPoint, document
from fakenrt.simulate.strategies import BY_NAME
from tests.simulate.builders import TWO_ZONES_SNN, pod, profiles, scenario, workload
from tests.simulate.png import colour_counts, read_png

SETUP = Path(__file__).resolve().parents[1] / "setup" / "chromium.sh"
CHARTS = {
    "utilization",
    "rejections",
    "gpu-hours",
    "pending",
    "stranded",
    "sweep-tae",
    "sweep-gpu-hours",
}
STRATEGIES = ("numa-blind", "nrt-trust", "reconstruct-observed", "oracle")


@pytest.fixture(scope="module")
def chromium() -> str:
    binary = os.environ.get("NUMA_TESTKIT_CHROMIUM")
    if binary:
        return binary
    done = subprocess.run([str(SETUP)], capture_output=True, text=True, check=True, timeout=900)
    return done.stdout.strip().splitlines()[-1]


def _browser(chromium: str, tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            f"--user-data-dir={tmp / 'profile'}",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> str:
    nodes = profiles(TWO_ZONES_SNN)
    items = workload(
        (0, 900, pod("a", gpu=3)),
        (5, 1800, pod("b", gpu=3)),
        (10, 600, pod("c", gpu=2)),
        (20, 1200, pod("d", gpu=1)),
        (400, 900, pod("e", gpu=4)),
    )

    def run(delay: float) -> list[StrategyResult]:
        base = scenario(nodes, items, duration=3600.0, nrt_delay=delay, requeue=True)
        return [simulate(base, BY_NAME[n]) for n in STRATEGIES]

    main = run(30.0)
    sweep = [SweepPoint(value=v, results=tuple(run(v))) for v in (0.0, 30.0, 90.0)]
    base = scenario(nodes, items, duration=3600.0, nrt_delay=30.0)
    return html(document(base, main, sweep_parameter="nrt-delay", sweep=sweep))


def _rgb(hex_colour: str) -> tuple[int, int, int]:
    return (int(hex_colour[1:3], 16), int(hex_colour[3:5], 16), int(hex_colour[5:7], 16))


def test_the_page_parses_into_every_chart_and_loads_nothing(
    chromium: str, report: str, tmp_path: Path
) -> None:
    page = tmp_path / "report.html"
    page.write_text(report)
    dom = _browser(chromium, tmp_path, "--dump-dom", page.as_uri()).stdout
    charts = re.findall(r'<svg class="chart" data-chart="([^"]+)"', dom)
    assert set(charts) == CHARTS and len(charts) == len(CHARTS)
    for chart in re.findall(r'<svg class="chart".*?</svg>', dom, flags=re.S):
        assert re.search(r'<path class="series"[^>]* d="M[^"]+L|<rect class="bar"', chart), chart[
            :80
        ]
    assert not re.search(r"<script|<link|src=|url\(|https?://(?!www\.w3\.org)", report)


@pytest.mark.parametrize("chart_id", sorted(CHARTS))
def test_every_chart_is_drawn(chromium: str, report: str, tmp_path: Path, chart_id: str) -> None:
    svg = re.search(
        rf'<svg class="chart" data-chart="{re.escape(chart_id)}".*?</svg>', report, flags=re.S
    )
    assert svg is not None
    # Only the chart, its legend hidden: coloured pixels can then only be data marks.
    page = tmp_path / f"{chart_id}.html"
    page.write_text(
        f"<!DOCTYPE html><html><head><style>{STYLE} body {{margin:0}}"
        " .chart .key, .chart .legend {display:none}</style></head>"
        f"<body>{svg.group(0)}</body></html>"
    )
    shot = tmp_path / f"{chart_id}.png"
    _browser(chromium, tmp_path, "--window-size=800,320", f"--screenshot={shot}", page.as_uri())
    width, height, rows = read_png(shot.read_bytes())
    assert (width, height) == (800, 320)
    colours = [_rgb(c) for c in re.findall(r'(?:stroke|fill)="(#[0-9a-f]{6})"', svg.group(0))]
    drawn = {c for c, n in colour_counts(rows, sorted(set(colours))).items() if n >= 20}
    if chart_id in ("rejections", "gpu-hours"):
        assert drawn, f"{chart_id}: no bar drawn"
    else:
        # Every strategy's line: its colour must be on screen (lines may overlap, so
        # require at least the first and the last drawn series to show).
        series = [_rgb(PALETTE[i]) for i in range(len(STRATEGIES))]
        assert len(drawn & set(series)) >= 2, f"{chart_id}: drew {drawn}"
