"""The report's charts, built from the JSON document (:mod:`fakenrt.simulate.results`)
with :mod:`fakenrt.simulate.charts`. Pure. Imported only when a report is written
(matplotlib takes about a second to import).

Charts: GPU utilization over time, rejections per 1,000 binds, GPU-hours delivered,
the pending-time distribution (log scale), stranded GPUs over time, rejections by node
shape, and with a sweep the errors and GPU-hours against the swept value (bands: the 95%
intervals over seeds).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fakenrt.simulate.charts import (
    Line,
    bar_chart,
    coinciding,
    colour,
    hours,
    line_chart,
    percent,
    shape_colour,
    stacked_bar_chart,
)
from fakenrt.simulate.numbers import fmt, fmt_value

TAE = "topology_affinity_errors_per_1000_binds"
OTHER = "other_admission_failures_per_1000_binds"
#: Chart ids, in the order they appear.
CHART_IDS = (
    "utilization",
    "rejections",
    "gpu-hours",
    "pending",
    "stranded",
    "node-shapes",
)
SWEEP_CHART_IDS = ("sweep-tae", "sweep-gpu-hours")


def _series(doc: Mapping[str, Any], key: str) -> dict[str, list[tuple[float, float]]]:
    return {
        n: [(float(x), float(y)) for x, y in doc["series"][n][key]] for n in doc["strategy_order"]
    }


def _sweep_lines(sweep: Mapping[str, Any], figure: str, colours: Mapping[str, str]) -> list[Line]:
    values = [float(v) for v in sweep["values"]]
    series = {
        name: list(zip(values, (float(m) for m in c[figure]["mean"]), strict=True))
        for name, c in sweep["strategies"].items()
    }
    bands = None
    if len(sweep["seeds"]) > 1:
        bands = {
            name: (
                [float(v) for v in c[figure]["low"]],
                [float(v) for v in c[figure]["high"]],
            )
            for name, c in sweep["strategies"].items()
        }
    return coinciding(series, colours, bands)


def _delivered(figures: Mapping[str, Any]) -> str:
    text = fmt(figures["gpu_hours"], "hours")
    lost = figures["gpu_hours_lost"]
    return f"{text} (lost {fmt(lost, 'hours')})" if lost else text


def charts(doc: Mapping[str, Any]) -> list[str]:
    """Every chart of the report, as inline SVG."""
    order = doc["strategy_order"]
    colours = {name: colour(i) for i, name in enumerate(order)}
    s = doc["strategies"]
    horizon = float(doc["scenario"]["horizon_seconds"]) or 1.0
    same = "lines that coincide are drawn once, named a = b"
    out = [
        line_chart(
            chart_id="utilization",
            title="GPU utilization over time",
            x_label="simulated time",
            y_label="GPUs in use (share of all)",
            lines=coinciding(_series(doc, "gpu_utilization"), colours),
            x_format=hours,
            x_scale=3600.0,
            y_format=percent,
            x_max=horizon,
            y_max=1.0,
            note=same,
        ),
        bar_chart(
            chart_id="rejections",
            title="Kubelet rejections per 1,000 binds",
            x_label="rejections per 1,000 binds",
            categories=order,
            groups={
                "TopologyAffinityError": [s[n][TAE] for n in order],
                "other reasons": [s[n][OTHER] for n in order],
            },
            colours={"TopologyAffinityError": "#d62728", "other reasons": "#7f7f7f"},
            kind="per1k",
        ),
        bar_chart(
            chart_id="gpu-hours",
            title="GPU-hours delivered (and lost against the best strategy)",
            x_label="GPU-hours",
            categories=order,
            groups={"GPU-hours": [s[n]["gpu_hours"] for n in order]},
            colours={"GPU-hours": "#1f77b4"},
            kind="hours",
            labels=[
                fmt(s[n]["gpu_hours"], "hours")
                + (
                    f" (lost {fmt(s[n]['gpu_hours_lost'], 'hours')})"
                    if s[n]["gpu_hours_lost"]
                    else ""
                )
                for n in order
            ],
        ),
        line_chart(
            chart_id="pending",
            title="Pending time, creation to bind (log scale above 1 s)",
            x_label="percentile of bound pods",
            y_label="seconds pending",
            lines=coinciding(_series(doc, "pending_seconds_quantiles"), colours),
            x_format=lambda v: f"{fmt_value(v)}%",
            x_max=100.0,
            log_y=True,
            note=same,
        ),
        line_chart(
            chart_id="stranded",
            title="Stranded GPUs: free, but no pending GPU pod fits there aligned",
            x_label="simulated time",
            y_label="GPUs",
            lines=coinciding(_series(doc, "stranded_gpus"), colours),
            x_format=hours,
            x_scale=3600.0,
            x_max=horizon,
            note=same,
        ),
    ]
    shapes = [row["node_shape"] for row in doc["scenario"]["node_shapes"]]
    shape_colours = {name: shape_colour(i) for i, name in enumerate(shapes)}
    out.append(
        stacked_bar_chart(
            chart_id="node-shapes",
            title="Kubelet rejections by node shape",
            x_label="rejections (TopologyAffinityError and other)",
            categories=order,
            parts={
                shape: [
                    float(r["topology_affinity_errors"] + r["other_admission_failures"])
                    for n in order
                    for r in s[n]["by_node_shape"]
                    if r["node_shape"] == shape
                ]
                for shape in shapes
            },
            colours=shape_colours,
            kind="count",
        )
    )
    sweep = doc.get("sweep")
    if sweep:
        values = [float(v) for v in sweep["values"]]
        several = len(sweep["seeds"]) > 1
        band = f"; bands: 95% t-intervals over {len(sweep['seeds'])} seeds" if several else ""
        for figure, chart_id, title, unit in (
            (TAE, "sweep-tae", "TopologyAffinityErrors per 1,000 binds", "per 1,000 binds"),
            ("gpu_hours", "sweep-gpu-hours", "GPU-hours delivered", "GPU-hours"),
        ):
            out.append(
                line_chart(
                    chart_id=chart_id,
                    title=f"{title} by {sweep['parameter']}"
                    + (f" (mean of {len(sweep['seeds'])} seeds)" if several else ""),
                    x_label=f"{sweep['parameter']} (seconds)",
                    y_label=unit,
                    lines=_sweep_lines(sweep, figure, colours),
                    markers=True,
                    x_ticks=values,
                    note=same + band,
                )
            )
    return out
