"""The HTML report in a real browser: headless Chromium (Debian's package, installed by
``tests/setup/chromium.sh``) lays out a report with every chart (a sweep over two seeds
included), and the page measures itself: every text of every chart lies inside its chart
and overlaps no other text, every chart fits the page, every chart drew its data. The
measuring script is added to a copy of the page by the test; the report itself has no
script and loads nothing."""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import replace
from html import unescape
from pathlib import Path
from typing import Any

import pytest

from fakenrt.simulate.breakdown import rejection_rows
from fakenrt.simulate.engine import simulate
from fakenrt.simulate.figures import CHART_IDS, SWEEP_CHART_IDS, charts
from fakenrt.simulate.metrics import StrategyResult
from fakenrt.simulate.report import html
from fakenrt.simulate.results import SweepPoint, document
from fakenrt.simulate.strategies import BY_NAME
from tests.simulate.builders import TWO_ZONES_SNN, pod, profiles, scenario, workload

SETUP = Path(__file__).resolve().parents[1] / "setup" / "chromium.sh"
STRATEGIES = ("numa-blind", "nrt-trust", "reconstruct-observed", "oracle")
#: Text boxes may touch; they overlap when they share more than this many square pixels.
OVERLAP_PX2 = 1.0

#: Runs in the browser on load: the boxes of every chart and of its texts, as JSON.
MEASURE = """
<script>
const out = [];
for (const svg of document.querySelectorAll('svg.chart')) {
  const box = svg.getBoundingClientRect();
  const texts = [];
  for (const t of svg.querySelectorAll('text')) {
    const r = t.getBoundingClientRect();
    if (t.textContent.trim() && r.width > 0) {
      texts.push({text: t.textContent.trim(), x0: r.left, y0: r.top, x1: r.right, y1: r.bottom});
    }
  }
  out.push({chart: svg.dataset.chart, x0: box.left, y0: box.top, x1: box.right, y1: box.bottom,
            page: document.documentElement.clientWidth,
            series: svg.querySelectorAll('[id^="series-"]').length, texts});
}
const pre = document.createElement('pre');
pre.id = 'boxes';
pre.textContent = JSON.stringify(out);
document.body.appendChild(pre);
</script>
"""


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
def report() -> str:
    nodes = profiles(TWO_ZONES_SNN)
    nodes = (*nodes, replace(nodes[0], name="n2"))
    items = workload(
        (0, 900, pod("a", gpu=3)),
        (5, 1800, pod("b", gpu=3)),
        (10, 600, pod("c", gpu=2)),
        (20, 1200, pod("d", gpu=1)),
        (30, 600, pod("e", gpu=3)),
        (40, 600, pod("f", gpu=3)),
        (400, 900, pod("g", gpu=4)),
        (500, 900, pod("too-big", gpu=8)),  # no node admits it
    )

    def run(delay: float, seed: int) -> tuple[StrategyResult, ...]:
        base = scenario(nodes, items, duration=3600.0, nrt_delay=delay, seed=seed, requeue=True)
        return tuple(simulate(base, BY_NAME[n]) for n in STRATEGIES)

    main = run(30.0, 1)
    seeds = [main, run(30.0, 2)]
    sweep = [SweepPoint(value=v, seeds=(run(v, 1), run(v, 2))) for v in (0.0, 30.0, 90.0)]
    base = scenario(nodes, items, duration=3600.0, nrt_delay=30.0, seed=1)
    doc = document(
        base,
        main,
        seeds=(1, 2),
        main_seeds=seeds,
        sweep_parameter="nrt-delay",
        sweep=sweep,
    )
    rejected = {r.strategy: rejection_rows(r, base) for r in main}
    return html(doc, charts=charts(doc), rejections=rejected)


def test_the_page_has_every_chart_and_loads_nothing(report: str) -> None:
    found = re.findall(r'<svg class="chart" data-chart="([^"]+)"', report)
    assert found == [*CHART_IDS, *SWEEP_CHART_IDS]
    assert not re.search(
        r"<script|<link|<img|src=|url\(#?[a-z]+:|https?://(?!www\.w3\.org)", report
    )


def _overlap(a: dict[str, Any], b: dict[str, Any]) -> float:
    w = min(a["x1"], b["x1"]) - max(a["x0"], b["x0"])
    h = min(a["y1"], b["y1"]) - max(a["y0"], b["y0"])
    return w * h if w > 0 and h > 0 else 0.0


def _measure(chromium: str, page_html: str, tmp: Path, width: int) -> list[dict[str, Any]]:
    page = tmp / "measured.html"
    page.write_text(page_html.replace("</body>", MEASURE + "</body>"))
    dom = _browser(chromium, tmp, f"--window-size={width},900", "--dump-dom", page.as_uri())
    found = re.search(r'<pre id="boxes">(.*?)</pre>', dom.stdout, flags=re.S)
    assert found is not None, dom.stdout[-500:]
    boxes: list[dict[str, Any]] = json.loads(unescape(found.group(1)))
    return boxes


def problems(boxes: list[dict[str, Any]]) -> list[str]:
    """Everything wrong with the measured charts: no data, wider than the page, a text
    outside its chart, two texts on each other."""
    out = []
    for chart in boxes:
        name = chart["chart"]
        if chart["series"] == 0:
            out.append(f"{name}: no data drawn")
        if chart["x1"] > chart["page"] + 0.5:
            out.append(f"{name}: wider than the page")
        texts = chart["texts"]
        for t in texts:
            inside = (
                t["x0"] >= chart["x0"] - 0.5
                and t["x1"] <= chart["x1"] + 0.5
                and t["y0"] >= chart["y0"] - 0.5
                and t["y1"] <= chart["y1"] + 0.5
            )
            if not inside:
                out.append(f"{name}: {t['text']!r} is clipped")
        for i, a in enumerate(texts):
            for b in texts[i + 1 :]:
                if _overlap(a, b) > OVERLAP_PX2:
                    out.append(f"{name}: {a['text']!r} overlaps {b['text']!r}")
    return out


@pytest.mark.parametrize("width", [1200, 800])
def test_no_text_is_clipped_or_overlaps_and_every_chart_fits(
    chromium: str, report: str, tmp_path: Path, width: int
) -> None:
    boxes = _measure(chromium, report, tmp_path, width)
    assert [b["chart"] for b in boxes] == [*CHART_IDS, *SWEEP_CHART_IDS]
    assert all(len(b["texts"]) >= 5 for b in boxes), boxes
    assert problems(boxes) == []


def test_the_measure_sees_a_clipped_and_an_overlapping_text(
    chromium: str, report: str, tmp_path: Path
) -> None:
    # The first text of the first chart twice (overlapping itself), and a text moved
    # beyond the chart's right edge.
    first = re.search(r"<text [^>]*>[^<]+</text>", report)
    assert first is not None
    broken = report.replace(first.group(0), first.group(0) * 2, 1)
    broken = broken.replace(
        "</svg>", '<text x="5000" y="20" style="font-size: 10px">outside</text></svg>', 1
    )
    found = problems(_measure(chromium, broken, tmp_path, 1200))
    assert any("overlaps" in p for p in found), found
    assert any("'outside' is clipped" in p for p in found), found
