"""The table, the sentences and the charts say what the numbers say: every sentence is
built from the figures (change a figure, the sentence changes), every number is written
one way everywhere, every column is in the glossary (``--help``, the report, the docs),
lines that coincide say so, pending time is on a log scale."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from fakenrt.cli import main
from fakenrt.simulate.breakdown import rejection_rows
from fakenrt.simulate.charts import coinciding
from fakenrt.simulate.columns import BY_NODE_SHAPE, BY_POD_CLASS, OUTCOMES, REJECTIONS, VIEW
from fakenrt.simulate.engine import simulate
from fakenrt.simulate.figures import charts
from fakenrt.simulate.numbers import KINDS, fmt
from fakenrt.simulate.report import explanation, html, table
from fakenrt.simulate.results import document
from fakenrt.simulate.strategies import BY_NAME
from tests.simulate.builders import TWO_ZONES_SNN, pod, profiles, scenario, workload

DOCS = Path(__file__).resolve().parents[2] / "docs" / "simulate.md"
STRATEGIES = ("numa-blind", "nrt-trust", "reconstruct-observed", "oracle")


@pytest.fixture(scope="module")
def run() -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    nodes = profiles(TWO_ZONES_SNN)
    items = workload(
        (0, 900, pod("a", gpu=3)),
        (5, 1800, pod("b", gpu=3)),
        (10, 600, pod("c", gpu=2)),
        (20, 1200, pod("d", gpu=1)),
        (400, 900, pod("e", gpu=4)),
        (500, 900, pod("big", gpu=8)),
    )
    base = scenario(nodes, items, duration=3600.0, nrt_delay=30.0, requeue=True)
    results = [simulate(base, BY_NAME[n]) for n in STRATEGIES]
    rejected = {r.strategy: rejection_rows(r, base) for r in results}
    return document(base, results), rejected


def test_every_sentence_comes_from_the_figures(
    run: tuple[dict[str, Any], dict[str, list[dict[str, Any]]]],
) -> None:
    doc, _ = run
    sentences = explanation(doc)
    for name, sentence in zip(doc["strategy_order"], sentences, strict=False):
        f = doc["strategies"][name]
        assert sentence.startswith(f"{name} bound {fmt(f['binds'], 'count')} pods")
        assert fmt(f["gpu_hours"], "hours") in sentence
        rejected = f["topology_affinity_errors"] + f["other_admission_failures"]
        if rejected:
            assert f"rejected {fmt(rejected, 'count')} of those binds" in sentence
        else:
            assert "rejected none of them" in sentence
    # Change the figures: the sentences follow (none is fixed text).
    changed = copy.deepcopy(doc)
    oracle = changed["strategies"]["oracle"]
    oracle["topology_affinity_errors"] = 7
    oracle["topology_affinity_errors_per_1000_binds"] = 1234.5
    oracle["gpu_hours"] = 0.5
    oracle["gpu_hours_lost"] = 99.0
    changed["best"]["strategies"] = ["numa-blind"]
    text = " ".join(explanation(changed))
    assert "oracle bound" in text and "rejected 7 of those binds (1,234.5 Topology" in text
    assert "0.5 GPU-hours, 99.0 fewer than numa-blind" in text
    assert text != " ".join(sentences)


def test_the_pods_no_node_admits_are_said_everywhere(
    run: tuple[dict[str, Any], dict[str, list[dict[str, Any]]]],
) -> None:
    doc, rejected = run
    (entry,) = doc["never_admissible"]
    assert (entry["pod_class"], entry["pods"], entry["examples"]) == (
        "8 GPU, 1 CPU, 1Gi",
        1,
        ["t/big"],
    )
    assert "never admissible: 1 pods of class 8 GPU, 1 CPU, 1Gi" in table(doc)
    page = html(doc, rejections=rejected)
    assert "Resources cannot be allocated with Topology locality" in page
    # the NUMA-aware strategies never place it; numa-blind binds it and the kubelet refuses
    for name in STRATEGIES[1:]:
        assert doc["strategies"][name]["never_placed"] == 1
    assert any(r["workload_pod"] == "t/big" for r in rejected["numa-blind"])


def test_numbers_are_written_one_way_in_the_table_the_report_and_the_sentences(
    run: tuple[dict[str, Any], dict[str, list[dict[str, Any]]]],
) -> None:
    doc, rejected = run
    terminal = table(doc)
    page = html(doc, rejections=rejected)
    sentences = " ".join(explanation(doc))
    for name in STRATEGIES:
        f = doc["strategies"][name]
        for column in (*OUTCOMES, *VIEW):
            cell = fmt(f.get(column.key), column.kind)
            assert f"<td>{cell}</td>" in page, (name, column.header, cell)
        row = next(line for line in terminal.splitlines() if line.startswith(name + " "))
        assert row.split()[1:] == [fmt(f.get(c.key), c.kind) for c in OUTCOMES]
        assert fmt(f["gpu_hours"], "hours") in sentences


def test_every_rejection_is_in_the_report(
    run: tuple[dict[str, Any], dict[str, list[dict[str, Any]]]],
) -> None:
    doc, rejected = run
    page = html(doc, rejections=rejected)
    rows = rejected["numa-blind"]
    assert rows, "numa-blind must have rejections on this workload"
    assert f"numa-blind: {len(rows)} rejections" in page
    for r in rows:
        assert f">{r['pod']}</td>" in page
        assert f"<td>{fmt(r['at_seconds'], 'seconds')}</td>" in page


def test_every_column_is_in_the_glossary_of_help_the_report_and_the_docs(
    run: tuple[dict[str, Any], dict[str, list[dict[str, Any]]]],
) -> None:
    doc, rejected = run
    helped = " ".join(CliRunner().invoke(main, ["simulate", "--help"]).output.split())
    page = html(doc, rejections=rejected)
    docs = DOCS.read_text()
    for column in (*OUTCOMES, *VIEW):
        assert f"{column.header} {column.meaning}" in helped, column.header
    for column in (*OUTCOMES, *VIEW, *BY_NODE_SHAPE, *BY_POD_CLASS, *REJECTIONS):
        assert f"<dt>{column.header} <code>{column.key}</code></dt>" in page
        assert f"| {column.header} | `{column.key}` |" in docs, column.header


def test_every_column_has_a_kind_of_number() -> None:
    columns = (*OUTCOMES, *VIEW, *BY_NODE_SHAPE, *BY_POD_CLASS, *REJECTIONS)
    assert {c.kind for c in columns} <= set(KINDS)
    assert [fmt(1234.5678, k) for k in KINDS] == [
        "1,235", "1,234.6", "1,234.6", "1,234.6", "1,234.6", "123456.8%", "1234.568",
    ]  # fmt: skip
    assert fmt(None, "count") == "-"


def test_lines_that_coincide_are_drawn_once_and_named_together() -> None:
    colours = {"a": "#111111", "b": "#222222", "c": "#333333"}
    lines = coinciding(
        {
            "a": [(0.0, 1.0), (1.0, 2.0)],
            "b": [(0.0, 1.0), (1.0, 3.0)],
            "c": [(0.0, 1.0), (1.0, 2.0)],
        },
        colours,
    )
    assert [(line.label, line.colour) for line in lines] == [("a = c", "#111111"), ("b", "#222222")]
    # with bands, equal means but different intervals are different lines
    banded = coinciding(
        {"a": [(0.0, 1.0)], "c": [(0.0, 1.0)]}, colours, {"a": ([0.5], [1.5]), "c": ([0.0], [2.0])}
    )
    assert len(banded) == 2


def test_the_charts_name_coinciding_lines_and_draw_pending_time_on_a_log_scale(
    run: tuple[dict[str, Any], dict[str, list[dict[str, Any]]]],
) -> None:
    doc, _ = run
    svgs = {
        re.search(r'data-chart="([^"]+)"', svg).group(1): svg  # type: ignore[union-attr]
        for svg in charts(doc)
    }
    texts = {k: re.findall(r"<text[^>]*>([^<]*)</text>", v) for k, v in svgs.items()}
    series = doc["series"]
    if series["reconstruct-observed"]["gpu_utilization"] == series["oracle"]["gpu_utilization"]:
        assert any("= oracle" in t for t in texts["utilization"]), texts["utilization"]
    assert any("coincide" in t for t in texts["utilization"])
    # a symmetric log scale: decades on the axis
    assert {"1", "10", "100"} <= set(texts["pending"]), texts["pending"]
    assert "log scale" in " ".join(texts["pending"])


def test_rejections_file_and_seeds_on_the_command_line(tmp_path: Path) -> None:
    (tmp_path / "nodes.yaml").write_text(TWO_ZONES_SNN)
    entries = [
        {"at": 0, "duration": "30m", "pod": pod("a", gpu=3)},
        {"at": 5, "duration": "30m", "pod": pod("b", gpu=3)},
        {"at": 10, "duration": "20m", "pod": pod("c", gpu=2), "class": "small"},
    ]
    (tmp_path / "t.yaml").write_text(yaml.safe_dump({"pods": entries}))
    out = tmp_path / "rejections.jsonl"
    args = [
        "simulate", "--profiles", str(tmp_path / "nodes.yaml"), "--trace", str(tmp_path / "t.yaml"),
        "--jobs", "1", "--no-progress", "--nrt-jitter", "60s", "--strategy", "numa-blind",
        "--strategy", "nrt-trust",
    ]  # fmt: skip
    done = CliRunner().invoke(main, [*args, "--rejections", str(out), "--json", "--seeds", "3"])
    assert done.exit_code == 0, done.output
    doc = json.loads(done.output)
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    blind = doc["strategies"]["numa-blind"]
    assert len(lines) == sum(
        doc["strategies"][n]["topology_affinity_errors"]
        + doc["strategies"][n]["other_admission_failures"]
        for n in doc["strategy_order"]
    )
    assert blind["topology_affinity_errors"] > 0
    assert {line["pod_class"] for line in lines} <= {"small", "3 GPU, 1 CPU, 1Gi"}
    assert set(lines[0]) == {
        "strategy", "at_seconds", "pod", "workload_pod", "pod_class", "node", "node_shape",
        "reason", "message",
    }  # fmt: skip
    # --seeds 3: the seeds' values are those of separate runs with --seed 1, 2, 3
    seeds = doc["seeds"]
    assert seeds["values"] == [1, 2, 3] and seeds["interval"].startswith("95% t-interval")
    for k, seed in enumerate(seeds["values"]):
        alone = json.loads(CliRunner().invoke(main, [*args, "--json", "--seed", str(seed)]).output)
        for name in doc["strategy_order"]:
            got = seeds["strategies"][name]["gpu_hours"]["per_seed"][k]
            assert got == alone["strategies"][name]["gpu_hours"]
