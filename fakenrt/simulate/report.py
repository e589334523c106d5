"""The terminal tables and the self-contained HTML report, both rendered from the JSON
document of :mod:`fakenrt.simulate.results` (and, for the report's drill-down, the
rejection rows of :func:`fakenrt.simulate.breakdown.rejection_rows`). Pure.

No sentence is fixed text about the results: every one is generated from the figures it
states, and says only what they show (:func:`explanation`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

import yaml

from fakenrt.simulate.columns import (
    BY_NODE_SHAPE,
    BY_POD_CLASS,
    DRA,
    OUTCOMES,
    REJECTIONS,
    VIEW,
    Column,
)
from fakenrt.simulate.numbers import fmt, fmt_value

TAE = "topology_affinity_errors_per_1000_binds"
#: Rejections listed per strategy in the report (every one is in ``--rejections FILE``).
MAX_REPORT_REJECTIONS = 2_000
#: Columns of a terminal breakdown (the largest node shapes / pod classes first).
MAX_BREAKDOWN_COLUMNS = 8
#: The sweep's figures in the terminal and the report: (figure, title, kind).
SWEEP_TABLES = (
    (TAE, "TAE/1k", "per1k"),
    ("gpu_hours_lost", "GPU-h lost", "hours"),
)
#: The figures over seeds in the terminal: (figure, header, kind).
SEED_COLUMNS = (
    (TAE, "TAE/1k", "per1k"),
    ("other_admission_failures_per_1000_binds", "other/1k", "per1k"),
    ("completed", "done", "count"),
    ("never_placed", "never placed", "count"),
    ("waiting_after_rejection", "waiting", "count"),
    ("dropped", "dropped", "count"),
    ("gpu_hours", "GPU-h", "hours"),
    ("gpu_hours_lost", "GPU-h lost", "hours"),
)


def _rows(doc: Mapping[str, Any], columns: Sequence[Column]) -> list[list[str]]:
    out = [["strategy", *(c.header for c in columns)]]
    for name in doc["strategy_order"]:
        figures = doc["strategies"][name]
        out.append([name, *(fmt(figures.get(c.key), c.kind) for c in columns)])
    return out


def rows(doc: Mapping[str, Any]) -> list[list[str]]:
    """The outcomes table: header and one row per strategy."""
    return _rows(doc, OUTCOMES)


def view_rows(doc: Mapping[str, Any]) -> list[list[str]]:
    """The scheduler's view table."""
    return _rows(doc, VIEW)


def dra_rows(doc: Mapping[str, Any]) -> list[list[str]]:
    """The DRA table (--dra), or no rows when the run had no DRA mode."""
    if not doc["scenario"]["settings"].get("dra"):
        return []
    return _rows(doc, DRA)


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


def _estimate(entry: Mapping[str, Any], kind: str) -> str:
    """``mean +- half-width`` (or the mean alone without an interval)."""
    mean = fmt(entry["mean"], kind)
    if entry["low"] is None:
        return mean
    half = (entry["high"] - entry["low"]) / 2
    return f"{mean} ± {fmt(half, kind)}"


def _capped(names: list[str], sizes: Mapping[str, int]) -> tuple[list[str], int]:
    """The largest :data:`MAX_BREAKDOWN_COLUMNS` names (in their order), and how many
    were left out."""
    if len(names) <= MAX_BREAKDOWN_COLUMNS:
        return names, 0
    kept = set(sorted(names, key=lambda n: -sizes[n])[:MAX_BREAKDOWN_COLUMNS])
    return [n for n in names if n in kept], len(names) - len(kept)


def _done_of(row: Mapping[str, Any]) -> str:
    return f"{fmt(row['completed'], 'count')}/{fmt(row['pods'], 'count')}"


def breakdown_tables(doc: Mapping[str, Any]) -> list[str]:
    """Rejections by node shape, and pods done of those arrived by pod class."""
    order = doc["strategy_order"]
    scenario = doc["scenario"]
    lines: list[str] = []
    shapes = {s["node_shape"]: s["nodes"] for s in scenario["node_shapes"]}
    names, left = _capped(list(shapes), shapes)
    table = [["rejections by node shape", *(f"{n} ({shapes[n]})" for n in names)]]
    for name in order:
        by = {r["node_shape"]: r for r in doc["strategies"][name]["by_node_shape"]}
        table.append(
            [
                name,
                *(
                    fmt(
                        by[n]["topology_affinity_errors"] + by[n]["other_admission_failures"],
                        "count",
                    )
                    for n in names
                ),
            ]
        )
    lines += _aligned(table)
    if left:
        lines.append(f"({left} smaller node shapes in --json and the report)")
    classes = {c["pod_class"]: c["pods"] for c in scenario["pod_classes"]}
    names, left = _capped(list(classes), classes)
    table = [["done of arrived by pod class", *names]]
    for name in order:
        by = {r["pod_class"]: r for r in doc["strategies"][name]["by_pod_class"]}
        table.append(
            [
                name,
                *(
                    f"{fmt(by[n]['completed'], 'count')}/{fmt(by[n]['pods'], 'count')}"
                    for n in names
                ),
            ]
        )
    lines += ["", *_aligned(table)]
    if left:
        lines.append(f"({left} smaller pod classes in --json and the report)")
    return lines


def never_lines(doc: Mapping[str, Any]) -> list[str]:
    """One line per pod shape no node shape admits."""
    out = []
    for entry in doc["never_admissible"]:
        why = "; ".join(
            f"{r['node_shape']} ({r['nodes']} nodes): {r['reason']}: {r['message']}"
            for r in entry["refusals"]
        )
        out.append(
            f"never admissible: {fmt(entry['pods'], 'count')} pods of class {entry['pod_class']} "
            f"({entry['size']}; {', '.join(entry['examples'])}"
            f"{', ...' if entry['pods'] > len(entry['examples']) else ''}) - no node shape "
            f"admits them on an empty node: {why}"
        )
    return out


def seed_table(doc: Mapping[str, Any]) -> list[str]:
    seeds = doc.get("seeds")
    if not seeds:
        return []
    values = seeds["values"]
    header = [
        f"over {len(values)} seeds ({values[0]}-{values[-1]}): mean ± 95% t-interval",
        *(h for _, h, _ in SEED_COLUMNS),
    ]
    body = [
        [name, *(_estimate(seeds["strategies"][name][f], kind) for f, _, kind in SEED_COLUMNS)]
        for name in doc["strategy_order"]
    ]
    return _aligned([header, *body])


def sweep_tables(doc: Mapping[str, Any]) -> list[str]:
    sweep = doc.get("sweep")
    if not sweep:
        return []
    lines: list[str] = []
    several = len(sweep["seeds"]) > 1
    for figure, title, kind in SWEEP_TABLES:
        label = f"{title} by {sweep['parameter']}" + (
            f" ({len(sweep['seeds'])} seeds, mean ± 95%)" if several else ""
        )
        header = [label, *(fmt_value(v) for v in sweep["values"])]
        body = []
        for name, curves in sweep["strategies"].items():
            c = curves[figure]
            body.append(
                [
                    name,
                    *(
                        _estimate({"mean": m, "low": lo, "high": hi}, kind)
                        for m, lo, hi in zip(c["mean"], c["low"], c["high"], strict=True)
                    ),
                ]
            )
        lines += ["", *_aligned([header, *body])]
    return lines


def table(doc: Mapping[str, Any]) -> str:
    """What the terminal shows: the outcomes, the scheduler's view, the breakdowns, the
    pods no node admits, the figures over seeds and the sweep, and where the columns are
    explained."""
    lines = _aligned(rows(doc))
    lines += ["", *_aligned(view_rows(doc))]
    if dra := dra_rows(doc):
        lines += ["", *_aligned(dra)]
    lines += ["", *breakdown_tables(doc)]
    never = never_lines(doc)
    if never:
        lines += ["", *never]
    seeds = seed_table(doc)
    if seeds:
        lines += ["", *seeds]
    lines += sweep_tables(doc)
    top = doc.get("best")
    lines.append("")
    if top is not None:
        lines.append(
            f"GPU-h lost is against the most GPU-hours of the run: "
            f"{fmt(top['gpu_hours'], 'hours')}, by {_listed(top['strategies'])}."
        )
    lines.append(
        "Every column is explained by `fakenrt simulate --help`; every rejection (pod, node, "
        "time, kubelet message) is in --rejections FILE and --report FILE."
    )
    return "\n".join(lines) + "\n"


# ---- sentences --------------------------------------------------------------------------


def _listed(names: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _strategy_sentence(name: str, f: Mapping[str, Any], tops: Sequence[str]) -> str:
    rejected = f["topology_affinity_errors"] + f["other_admission_failures"]
    parts = [f"{name} bound {fmt(f['binds'], 'count')} pods"]
    if rejected:
        parts.append(
            f"the kubelet rejected {fmt(rejected, 'count')} of those binds "
            f"({fmt(f[TAE], 'per1k')} TopologyAffinityErrors and "
            f"{fmt(f['other_admission_failures_per_1000_binds'], 'per1k')} other rejections "
            f"per 1,000 binds); {fmt(f['requeued'], 'count')} were re-created and "
            f"{fmt(f['dropped'], 'count')} dropped"
        )
    else:
        parts.append("the kubelet rejected none of them")
    waiting = [
        f"{fmt(f[key], 'count')} {words}"
        for key, words in (
            ("never_placed", "never placed"),
            ("waiting_after_rejection", "waiting to be bound again"),
        )
        if f.get(key)
    ]
    if waiting:
        parts.append(f"at the end {' and '.join(waiting)}")
    others = [t for t in tops if t != name]
    if name in tops:
        parts.append(
            f"it delivered the most GPU-hours, {fmt(f['gpu_hours'], 'hours')}"
            + (f" (as did {_listed(others)})" if others else "")
        )
    else:
        parts.append(
            f"it delivered {fmt(f['gpu_hours'], 'hours')} GPU-hours, "
            f"{fmt(f['gpu_hours_lost'], 'hours')} fewer than {_listed(tops)}"
        )
    sentence = "; ".join(parts) + "."
    if f.get("stale_nrt_read_share") is not None:
        sentence += (
            f" It filters on the published NRT, which lagged the kubelet in "
            f"{fmt(f['stale_nrt_read_share'], 'share')} of its node reads (by up to "
            f"{fmt(f['stale_nrt_age_max_seconds'], 'seconds')} s)."
        )
    if f.get("placement_agreement") is not None:
        sentence += (
            f" Its predicted zones matched the observed zones for "
            f"{fmt(f['placement_agreement'], 'share')} of "
            f"{fmt(f['placements_compared'], 'count')} pods."
        )
    if f.get("dra_pods") is not None:
        sentence += (
            f" Of the {fmt(f['dra_pods'], 'count')} pods that started with DRA GPUs, "
            f"{fmt(f['misaligned'], 'count')} ({fmt(f['misaligned_share'], 'share')}) ran "
            "with a GPU on another NUMA node than their exclusive CPUs and memory."
        )
    return sentence


def explanation(doc: Mapping[str, Any]) -> list[str]:
    """Sentences that state what the figures show, each built from the figures."""
    s = doc["strategies"]
    tops = doc["best"]["strategies"] if doc.get("best") else []
    out = [_strategy_sentence(name, s[name], tops) for name in doc["strategy_order"]]
    if "oracle" in s:
        oracle = s["oracle"]
        above = [n for n in doc["strategy_order"] if s[n]["gpu_hours"] > oracle["gpu_hours"]]
        if above:
            out.append(
                f"{', '.join(above)} delivered more GPU-hours than the oracle: every strategy "
                "places greedily, so the oracle bounds the rejections, not the GPU-hours."
            )
    for line in never_lines(doc):
        out.append(line[0].upper() + line[1:] + ".")
    return out


# ---- HTML -------------------------------------------------------------------------------

STYLE = """
body { font-family: 'DejaVu Sans', system-ui, sans-serif; margin: 24px; color: #222;
       max-width: 1100px; }
table { border-collapse: collapse; margin: 12px 0; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 3px 7px; text-align: right; vertical-align: top; }
th { white-space: nowrap; }
th:first-child, td:first-child, th.text, td.text { text-align: left; }
.chart { display: block; margin: 18px 0; max-width: 100%; height: auto; }
details { margin: 6px 0; }
dl.glossary dt { font-weight: 600; margin-top: 6px; }
dl.glossary dd { margin-left: 18px; }
pre { background: #f6f6f6; padding: 8px; overflow-x: auto; }
"""


_TEXT = ' class="text"'


def _html_table(table_rows: Sequence[Sequence[str]], *, text_columns: int = 1) -> str:
    head = "".join(
        f"<th{_TEXT if 0 < i < text_columns else ''}>{escape(c)}</th>"
        for i, c in enumerate(table_rows[0])
    )
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="text">{escape(c)}</td>'
            if 0 < i < text_columns
            else f"<td>{escape(c)}</td>"
            for i, c in enumerate(r)
        )
        + "</tr>"
        for r in table_rows[1:]
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _breakdown_html(
    doc: Mapping[str, Any], key: str, name_key: str, columns: Sequence[Column]
) -> str:
    table_rows = [[name_key.replace("_", " "), "strategy", *(c.header for c in columns)]]
    order = doc["strategy_order"]
    names = [r[name_key] for r in doc["strategies"][order[0]][key]] if order else []
    for shape in names:
        for strategy in order:
            row = next(r for r in doc["strategies"][strategy][key] if r[name_key] == shape)
            table_rows.append([shape, strategy, *(fmt(row.get(c.key), c.kind) for c in columns)])
    return _html_table(table_rows, text_columns=2)


def _never_html(doc: Mapping[str, Any]) -> str:
    entries = doc["never_admissible"]
    if not entries:
        return "<p>Every pod shape of the workload is admitted by at least one node shape.</p>"
    table_rows = [["pod class", "size", "pods", "examples", "node shape", "nodes", "kubelet says"]]
    for e in entries:
        for r in e["refusals"]:
            table_rows.append(
                [
                    e["pod_class"],
                    e["size"],
                    fmt(e["pods"], "count"),
                    ", ".join(e["examples"]),
                    r["node_shape"],
                    fmt(r["nodes"], "count"),
                    f"{r['reason']}: {r['message']}",
                ]
            )
    return _html_table(table_rows, text_columns=7)


def _rejections_html(
    doc: Mapping[str, Any], rejections: Mapping[str, Sequence[Mapping[str, Any]]]
) -> str:
    parts = []
    for name in doc["strategy_order"]:
        found = rejections.get(name, ())
        shown = found[:MAX_REPORT_REJECTIONS]
        table_rows = [[c.header for c in REJECTIONS]]
        for r in shown:
            table_rows.append(
                [fmt(r["at_seconds"], "seconds"), *(str(r[c.key]) for c in REJECTIONS[1:])]
            )
        more = len(found) - len(shown)
        note = (
            f"<p>The first {fmt(len(shown), 'count')} of {fmt(len(found), 'count')}; "
            "every one is in <code>--rejections FILE</code>.</p>"
            if more
            else ""
        )
        body = _html_table(table_rows, text_columns=len(REJECTIONS)) if shown else ""
        parts.append(
            f"<details><summary>{escape(name)}: {fmt(len(found), 'count')} rejections"
            f"</summary>{note}{body}</details>"
        )
    return "".join(parts)


def _glossary_html(doc: Mapping[str, Any]) -> str:
    parts = []
    dra = (("DRA GPUs", DRA),) if dra_rows(doc) else ()
    for title, columns in (
        ("Outcomes", OUTCOMES),
        ("The scheduler's view", VIEW),
        *dra,
        ("By node shape", BY_NODE_SHAPE),
        ("By pod class", BY_POD_CLASS),
        ("Rejections", REJECTIONS),
    ):
        items = "".join(
            f"<dt>{escape(c.header)} <code>{escape(c.key)}</code></dt><dd>{escape(c.meaning)}</dd>"
            for c in columns
        )
        parts.append(f'<h3>{escape(title)}</h3><dl class="glossary">{items}</dl>')
    return "".join(parts)


def _seeds_html(doc: Mapping[str, Any]) -> str:
    lines = seed_table(doc)
    if not lines:
        return ""
    seeds = doc["seeds"]
    header = ["strategy", *(h for _, h, _ in SEED_COLUMNS)]
    body = [
        [name, *(_estimate(seeds["strategies"][name][f], kind) for f, _, kind in SEED_COLUMNS)]
        for name in doc["strategy_order"]
    ]
    values = seeds["values"]
    return (
        f"<h2>Over {len(values)} seeds</h2><p>Seeds {values[0]} to {values[-1]}, each its own "
        f"workload draw and NRT jitter; mean ± half-width of the {escape(seeds['interval'])}."
        f"</p>{_html_table([header, *body])}"
    )


def html(
    doc: Mapping[str, Any],
    *,
    charts: Sequence[str] = (),
    rejections: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
) -> str:
    """One self-contained page: no script, no external resource. ``charts``: the inline
    SVG charts (:mod:`fakenrt.simulate.figures`)."""
    scenario = doc["scenario"]
    settings_rows = [["setting", "value"]] + [
        [k, ", ".join(map(str, v)) or "-" if isinstance(v, list) else str(v)]
        for k, v in scenario["settings"].items()
    ]
    shapes = ", ".join(
        f"{s['nodes']} {s['node_shape']} ({s['kubelet']})" for s in scenario["node_shapes"]
    )
    about = [
        ["what ran", ""],
        *[[k, str(scenario[k])] for k in ("scenario", "profiles", "workload") if k in scenario],
        ["nodes", f"{scenario['nodes']}: {shapes}"],
        ["GPUs", fmt(scenario["gpus"], "count")],
        ["pods submitted", fmt(scenario["pods"], "count")],
        ["simulated time", f"{fmt_value(scenario['horizon_seconds'] / 3600)} h"],
    ]
    as_run = yaml.safe_dump(scenario["as_run"], sort_keys=False, default_flow_style=None)
    sweep = doc.get("sweep")
    sweep_html = ""
    if sweep:
        several = len(sweep["seeds"]) > 1
        for figure, title, kind in SWEEP_TABLES:
            header = [f"{title} by {sweep['parameter']}", *(fmt_value(v) for v in sweep["values"])]
            body = [
                [
                    name,
                    *(
                        _estimate({"mean": m, "low": lo, "high": hi}, kind)
                        for m, lo, hi in zip(
                            c[figure]["mean"], c[figure]["low"], c[figure]["high"], strict=True
                        )
                    ),
                ]
                for name, c in sweep["strategies"].items()
            ]
            sweep_html += _html_table([header, *body])
        if several:
            sweep_html = (
                f"<p>{len(sweep['seeds'])} seeds per value: mean ± half-width of the "
                f"{escape(sweep['interval'])}.</p>" + sweep_html
            )
        sweep_html = "<h2>Sweep</h2>" + sweep_html
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<title>fakenrt simulate report</title>",
        f"<style>{STYLE}</style></head><body>",
        "<h1>fakenrt simulate: scheduling strategies on one workload</h1>",
        _html_table(about, text_columns=2),
        "<h2>What happened</h2>",
        "<ul>" + "".join(f"<li>{escape(t)}</li>" for t in explanation(doc)) + "</ul>",
        "<h2>Outcomes</h2>",
        _html_table(rows(doc)),
        "<h2>The scheduler's view</h2>",
        _html_table(view_rows(doc)),
        *(("<h2>DRA GPUs</h2>", _html_table(dra)) if (dra := dra_rows(doc)) else ()),
        "<h2>Pods no node can admit</h2>",
        _never_html(doc),
        "<h2>By node shape</h2>",
        _breakdown_html(doc, "by_node_shape", "node_shape", BY_NODE_SHAPE),
        "<h2>By pod class</h2>",
        _breakdown_html(doc, "by_pod_class", "pod_class", BY_POD_CLASS),
        _seeds_html(doc),
        sweep_html,
        "<h2>Charts</h2>",
        *charts,
        "<h2>Every rejection</h2>",
        _rejections_html(doc, rejections or {}),
        "<h2>Glossary</h2>",
        _glossary_html(doc),
        "<h2>The scenario as it ran</h2>",
        "<p>Paths as given (a bundled file is in <code>fakenrt/examples/simulate/</code> of "
        "the package); settings in seconds. Saved as a file, it runs this simulation "
        "again.</p>",
        f"<pre>{escape(as_run)}</pre>",
        _html_table(settings_rows),
        "</body></html>",
    ]
    return "\n".join(p for p in parts if p) + "\n"
