"""The terminal table and the self-contained HTML report, both rendered from the JSON
document of :mod:`fakenrt.simulate.results`. Pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from fakenrt.simulate.charts import bar_chart, colour, line_chart

TAE = "topology_affinity_errors_per_1000_binds"

#: (figure, column header) of the terminal table and the HTML table.
COLUMNS = (
    ("binds", "binds"),
    ("topology_affinity_errors", "TAE"),
    (TAE, "TAE/1k"),
    ("other_admission_failures_per_1000_binds", "other/1k"),
    ("completed", "done"),
    ("gpu_hours", "GPU-h"),
    ("gpu_hours_ratio_to_oracle", "vs oracle"),
    ("gpu_utilization", "util"),
    ("stranded_gpus_mean", "stranded"),
    ("pending_seconds_p50", "pend p50 s"),
    ("pending_seconds_p99", "pend p99 s"),
    ("placement_agreement", "agree"),
    ("stale_nrt_read_share", "stale NRT"),
    ("stale_nrt_age_max_seconds", "stale max s"),
)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if value == int(value) and abs(value) >= 100:
            return f"{value:.0f}"
        return f"{value:.3f}".rstrip("0").rstrip(".") if abs(value) < 100 else f"{value:.1f}"
    return str(value)


def rows(doc: Mapping[str, Any]) -> list[list[str]]:
    out = [["strategy", *(h for _, h in COLUMNS)]]
    for name in doc["strategy_order"]:
        figures = doc["strategies"][name]
        out.append([name, *(_cell(figures.get(f)) for f, _ in COLUMNS)])
    return out


def table(doc: Mapping[str, Any]) -> str:
    """The strategies as an aligned text table (plus the sweep's TAE/1k, when swept)."""
    lines = _aligned(rows(doc))
    sweep = doc.get("sweep")
    if sweep:
        header = [f"TAE/1k by {sweep['parameter']}", *(_cell(v) for v in sweep["values"])]
        body = [
            [name, *(_cell(v) for v in curves[TAE])] for name, curves in sweep["strategies"].items()
        ]
        lines += ["", *_aligned([header, *body])]
    return "\n".join(lines) + "\n"


def _aligned(table_rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in table_rows) for i in range(len(table_rows[0]))]
    out = []
    for r in table_rows:
        cells = [
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        ]
        out.append("  ".join(cells).rstrip())
    return out


def explanation(doc: Mapping[str, Any]) -> list[str]:
    """Sentences that say what the table shows and why."""
    s = doc["strategies"]
    out = []
    settings = doc["scenario"]["settings"]
    low = settings["nrt_delay_seconds"]
    lag = f"{low:g}-{low + settings['nrt_jitter_seconds']:g} s"
    for name in ("nrt-trust", "nrt-reserve"):
        if name in s:
            f = s[name]
            out.append(
                f"{name}: {f[TAE]:g} TopologyAffinityErrors per 1,000 binds. It trusts NRT "
                f"available, published {lag} after each change: in "
                f"{100 * (f.get('stale_nrt_read_share') or 0):.1f}% of node reads the NRT "
                f"did not show the kubelet's latest admissions and releases (up to "
                f"{f.get('stale_nrt_age_max_seconds') or 0:g} s behind), so pods were sent "
                "to zones already taken"
                + (
                    " - and with no in-cycle reservation, pods of one cycle also pick the same "
                    "free zone."
                    if name == "nrt-trust"
                    else "; the reservation only protects pods of the same cycle."
                )
            )
    for name in ("reconstruct-predicted", "reconstruct-observed"):
        if name in s:
            f = s[name]
            out.append(
                f"{name}: {f[TAE]:g} TopologyAffinityErrors per 1,000 binds. It rebuilds each "
                "zone's free capacity from the placements annotated on the pods (predicted "
                "at bind"
                + (", replaced by the exporter's observation" if "observed" in name else "")
                + "), never from NRT available, so NRT lag cannot mislead it; predicted and "
                f"observed zones agreed for {100 * (f.get('placement_agreement') or 0):.1f}% "
                "of the pods."
            )
    if "numa-blind" in s:
        f = s["numa-blind"]
        out.append(
            f"numa-blind: {f[TAE]:g} TopologyAffinityErrors per 1,000 binds: it checks whole-node "
            "resources only, so the kubelet rejects every pod it places where no NUMA zone "
            "(or zone set the policy allows) can hold it."
        )
    if "oracle" in s:
        f = s["oracle"]
        out.append(
            f"oracle: {f[TAE]:g} per 1,000 binds and {f['gpu_hours']:g} GPU-hours: the filter "
            "reads the kubelet's true state. It bounds the errors, not the GPU-hours (every "
            "strategy places greedily, so another may pack a little better by chance)."
        )
    return out


STYLE = """
body { font-family: system-ui, sans-serif; margin: 24px; color: #222; max-width: 1100px; }
table { border-collapse: collapse; margin: 12px 0; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 3px 7px; text-align: right; }
th:first-child, td:first-child { text-align: left; }
.chart { display: block; margin: 18px 0; background: #fff; }
.chart .title { font-size: 15px; font-weight: 600; }
.chart .label, .chart .legend { font-size: 12px; }
.chart .tick, .chart .value { font-size: 11px; fill: #444; }
.chart .small { font-size: 10px; }
.chart .axis { stroke: #888; }
.chart .grid { stroke: #eee; }
"""


def _html_table(table_rows: Sequence[Sequence[str]]) -> str:
    head = "".join(f"<th>{escape(c)}</th>" for c in table_rows[0])
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(c)}</td>" for c in r) + "</tr>" for r in table_rows[1:]
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def charts(doc: Mapping[str, Any]) -> list[str]:
    order = doc["strategy_order"]
    colours = {name: colour(i) for i, name in enumerate(order)}
    s, series = doc["strategies"], doc["series"]
    horizon = doc["scenario"]["horizon_seconds"]
    out = [
        line_chart(
            chart_id="utilization",
            title="GPU utilization over time",
            x_label="simulated time",
            y_label="GPUs in use (share)",
            series={n: [tuple(p) for p in series[n]["gpu_utilization"]] for n in order},
            colours=colours,
            x_max=horizon,
            y_max=1.0,
            x_format="hours",
        ),
        bar_chart(
            chart_id="rejections",
            title="Admission failures per 1,000 binds",
            y_label="per 1,000 binds",
            categories=order,
            groups={
                "TopologyAffinityError": [s[n][TAE] for n in order],
                "other reasons": [s[n]["other_admission_failures_per_1000_binds"] for n in order],
            },
            colours={"TopologyAffinityError": "#d62728", "other reasons": "#7f7f7f"},
        ),
        bar_chart(
            chart_id="gpu-hours",
            title="GPU-hours delivered",
            y_label="GPU-hours",
            categories=order,
            groups={"GPU-hours": [s[n]["gpu_hours"] for n in order]},
            colours={"GPU-hours": "#1f77b4"},
            annotations=[
                "-"
                if s[n]["gpu_hours_ratio_to_oracle"] is None
                else f"{100 * s[n]['gpu_hours_ratio_to_oracle']:.1f}% of oracle"
                for n in order
            ],
        ),
        line_chart(
            chart_id="pending",
            title="Pending time distribution (creation to bind)",
            x_label="percentile of bound pods",
            y_label="seconds pending",
            series={n: [tuple(p) for p in series[n]["pending_seconds_quantiles"]] for n in order},
            colours=colours,
            x_max=100.0,
        ),
        line_chart(
            chart_id="stranded",
            title="Stranded GPUs (free, but no pending GPU pod fits there aligned)",
            x_label="simulated time",
            y_label="GPUs",
            series={n: [tuple(p) for p in series[n]["stranded_gpus"]] for n in order},
            colours=colours,
            x_max=horizon,
            x_format="hours",
        ),
    ]
    sweep = doc.get("sweep")
    if sweep:
        values = [float(v) for v in sweep["values"]]
        for figure, chart_id, title, unit in (
            (TAE, "sweep-tae", "TopologyAffinityErrors per 1,000 binds", "per 1,000 binds"),
            ("gpu_hours", "sweep-gpu-hours", "GPU-hours delivered", "GPU-hours"),
        ):
            out.append(
                line_chart(
                    chart_id=chart_id,
                    title=f"{title} by {sweep['parameter']}",
                    x_label=f"{sweep['parameter']} (seconds)",
                    y_label=unit,
                    series={
                        n: list(zip(values, [float(v) for v in c[figure]], strict=True))
                        for n, c in sweep["strategies"].items()
                    },
                    colours=colours,
                    x_values=values,
                )
            )
    return out


def html(doc: Mapping[str, Any], *, scenario_text: str = "") -> str:
    """One self-contained page: no script, no external resource."""
    scenario = doc["scenario"]
    settings_rows = [["setting", "value"]] + [
        [k, _cell(v) if not isinstance(v, list) else ", ".join(map(str, v)) or "-"]
        for k, v in scenario["settings"].items()
    ]
    shapes = ", ".join(f"{n} {k}" for k, n in scenario["node_shapes"].items())
    about = [
        ["", ""],
        *[[k, str(scenario[k])] for k in ("scenario", "profiles", "workload") if k in scenario],
        ["nodes", f"{scenario['nodes']} ({shapes})"],
        ["GPUs", str(scenario["gpus"])],
        ["pods submitted", str(scenario["pods"])],
        ["simulated time", f"{scenario['horizon_seconds'] / 3600:g} h"],
    ]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<title>fakenrt simulate report</title>",
        f"<style>{STYLE}</style></head><body>",
        "<h1>fakenrt simulate: scheduling strategies on one workload</h1>",
        _html_table(about),
        "<h2>Results</h2>",
        _html_table(rows(doc)),
        "<ul>" + "".join(f"<li>{escape(t)}</li>" for t in explanation(doc)) + "</ul>",
        "<h2>Charts</h2>",
        *charts(doc),
        "<h2>Scenario</h2>",
        _html_table(settings_rows),
    ]
    if scenario_text:
        parts.append(f"<pre>{escape(scenario_text)}</pre>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
