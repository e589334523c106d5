"""The scorecard as one self-contained HTML page. Pure.

At the top the findings (cells where a scheduler got something wrong, worst first) and
the assertions; then the matrix - a row per scheduler adapter and variant, a column per
scenario, each cell coloured by what happened and linking its reproducer below: the
figures, what went wrong, the one command that reruns it, the timeline of submissions,
binds, rejections and reports, the pods and the nodes. No script, no external file.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import yaml

from tests.e2e.scenarios import SCENARIOS
from tests.e2e.variants import VARIANTS
from tests.scorecard.assertions import Verdict
from tests.scorecard.records import DEFAULT_ROW, FIELDS, all_findings, harness_problems, matrix_row

Record = Mapping[str, Any]

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;max-width:110em}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em}h3{font-size:1.05em}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.25em .5em;vertical-align:top}
th{background:#f3f3f3;text-align:left}
table.matrix td.cell{padding:0;min-width:7.5em}
table.matrix a{display:block;padding:.3em .5em;color:inherit;text-decoration:none}
.ok{background:#e3f4e1}.errors{background:#f8d0cc}.finding{background:#fbecc2}
.harness{background:#e2d4f3}.absent{background:#fff;color:#999}
.broken{outline:3px solid #b00020;outline-offset:-3px}
.n{font-weight:600;font-size:1.1em}.small{font-size:.85em;color:#555}
.pass{color:#1b6e20;font-weight:600}.fail{color:#b00020;font-weight:600}.na{color:#777}
pre{background:#f7f7f7;padding:.5em;overflow:auto;max-height:30em}
section.cell{border-top:1px solid #ddd;margin-top:1.2em}
code{background:#f3f3f3;padding:0 .2em}
"""

_LEGEND = (
    ("ok", "no finding"),
    ("errors", "TopologyAffinityErrors: the kubelet refused pods the scheduler bound"),
    ("finding", "another finding: a pod left unplaced or unreported, a wrong prediction"),
    ("harness", "the harness itself failed here (asserted)"),
    ("broken", "contradicts a claim the adapter makes, in the default variant (asserted)"),
)


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def anchor(rec: Record) -> str:
    """The id of a record's section in the page."""
    raw = f"cell-{rec.get('scheduler')}-{rec.get('scenario')}-{rec.get('variant')}"
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in raw)


def _classes(rec: Record) -> str:
    if "not_applicable" in rec:
        return "absent"
    if harness_problems(rec):
        kind = "harness"
    elif int(rec.get("topology_affinity_errors") or 0) > 0:
        kind = "errors"
    elif all_findings(rec):
        kind = "finding"
    else:
        kind = "ok"
    broken = rec.get("default_variant") and _broken(rec)
    return f"{kind} broken" if broken else kind


def _broken(rec: Record) -> bool:
    made = set(rec.get("claims") or [])
    return any(p for c, p in (rec.get("findings") or {}).items() if c in made)


def _summary(rec: Record) -> str:
    if "not_applicable" in rec:
        return '<span class="n">n/a</span>'
    if "submitted" not in rec:
        return '<span class="n">did not run</span>'
    errors = int(rec.get("topology_affinity_errors") or 0)
    lines = [
        f'<span class="n">{errors} error{"s" if errors != 1 else ""}</span>',
        f'<span class="small">ran {rec.get("running")}/{rec.get("submitted")}'
        f" · pending {rec.get('pending')}</span>",
    ]
    agreement = rec.get("prediction_agreement")
    if agreement is not None:
        lines.append(f'<span class="small">predicted zones right: {float(agreement):.0%}</span>')
    misaligned = rec.get("misaligned")
    if misaligned is not None:
        lines.append(f'<span class="small">misaligned (DRA): {int(misaligned)}</span>')
    if rec.get("settled") is False:
        lines.append('<span class="small">did not settle</span>')
    return "<br>".join(lines)


def _matrix(records: Sequence[Record]) -> str:
    scenarios = [s for s in SCENARIOS if any(r.get("scenario") == s for r in records)]
    schedulers = list(dict.fromkeys(str(r.get("scheduler")) for r in records))
    row_names = [DEFAULT_ROW, *(v.id for v in VARIANTS)]
    by_key = {(r.get("scheduler"), matrix_row(r), r.get("scenario")): r for r in records}
    head = "".join(
        f'<th title="{_e(SCENARIOS[s].title)}">{_e(s)}<br>'
        f'<span class="small">{_e(SCENARIOS[s].title)}<br>'
        f"default: {_e(SCENARIOS[s].default_variant.id)}</span></th>"
        for s in scenarios
    )
    rows = []
    for scheduler in schedulers:
        for row in row_names:
            if not any((scheduler, row, s) in by_key for s in scenarios):
                continue
            cells = []
            for s in scenarios:
                rec = by_key.get((scheduler, row, s))
                if rec is None:
                    cells.append('<td class="cell absent">-</td>')
                    continue
                title = "; ".join(all_findings(rec)[:5] + harness_problems(rec)[:3]) or "no finding"
                cells.append(
                    f'<td class="cell {_classes(rec)}"><a href="#{anchor(rec)}" '
                    f'title="{_e(title)}">{_summary(rec)}</a></td>'
                )
            label = "each scenario's default" if row == DEFAULT_ROW else row
            rows.append(f"<tr><th>{_e(scheduler)}</th><th>{_e(label)}</th>{''.join(cells)}</tr>")
    return (
        '<table class="matrix"><tr><th>scheduler</th><th>variant</th>'
        f"{head}</tr>{''.join(rows)}</table>"
    )


def _legend() -> str:
    items = "".join(f'<td class="cell {cls}">{_e(text)}</td>' for cls, text in _LEGEND)
    return f'<table class="matrix legend"><tr>{items}</tr></table>'


def _findings(records: Sequence[Record]) -> str:
    ranked = sorted(
        (
            r
            for r in records
            if all_findings(r) or harness_problems(r) or int(r.get("topology_affinity_errors") or 0)
        ),
        key=lambda r: (
            -len(harness_problems(r)),
            -int(r.get("topology_affinity_errors") or 0),
            -len(all_findings(r)),
            anchor(r),
        ),
    )
    if not ranked:
        return "<p>No finding: every scheduler did what a correct NUMA-aware one does.</p>"
    items = []
    for rec in ranked:
        errors = int(rec.get("topology_affinity_errors") or 0)
        what = [f"{errors} TopologyAffinityErrors"] if errors else []
        what += [f"{len(all_findings(rec))} finding(s)"] if all_findings(rec) else []
        what += ["harness problem"] if harness_problems(rec) else []
        first = (harness_problems(rec) or all_findings(rec) or [""])[0]
        items.append(
            f'<li class="{_classes(rec)}"><a href="#{anchor(rec)}">{_e(rec.get("scheduler"))} · '
            f"{_e(rec.get('scenario'))} · {_e(rec.get('variant'))}</a>: {_e(', '.join(what))}"
            f' <span class="small">{_e(first)}</span></li>'
        )
    return f"<ul>{''.join(items)}</ul>"


def _verdicts(verdicts: Sequence[Verdict]) -> str:
    rows = []
    for v in verdicts:
        if v.passed is None:
            result = '<span class="na">not applicable</span>'
        elif v.passed:
            result = '<span class="pass">holds</span>'
        else:
            result = '<span class="fail">FAILS</span>'
        evidence = "<br>".join(_e(x) for x in v.evidence[:20])
        more = f"<br>... {len(v.evidence) - 20} more" if len(v.evidence) > 20 else ""
        rows.append(
            f"<tr><td><code>{_e(v.id)}</code></td><td>{_e(v.statement)}</td><td>{result}</td>"
            f'<td class="small">{evidence}{more}</td></tr>'
        )
    return (
        "<table><tr><th>assertion</th><th>statement</th><th>result</th><th>evidence</th></tr>"
        f"{''.join(rows)}</table>"
    )


def _figures(rec: Record) -> str:
    rows = []
    for field in FIELDS:
        if field.name not in rec or field.name in ("findings", "harness_problems"):
            continue
        value = rec[field.name]
        shown = "null" if value is None else value
        if isinstance(value, list | dict):
            shown = ", ".join(map(str, value)) if isinstance(value, list) else value
        rows.append(
            f'<tr><th title="{_e(field.meaning)}">{_e(field.name)}</th><td>{_e(shown)}</td>'
            f'<td class="small">{_e(field.meaning)}</td></tr>'
        )
    return f"<table>{''.join(rows)}</table>"


def _problems(title: str, problems: Iterable[str]) -> str:
    listed = list(problems)
    if not listed:
        return ""
    items = "".join(f"<li>{_e(p)}</li>" for p in listed)
    return f"<p><b>{_e(title)}</b></p><ul>{items}</ul>"


def _timeline(rec: Record) -> str:
    lines = (rec.get("reproducer") or {}).get("timeline") or []
    if not lines:
        return ""
    rows = "".join(
        f"<tr><td>{float(t):.2f}</td><td>{_e(pod)}</td><td>{_e(what)}</td>"
        f'<td class="small">{_e(detail)}</td></tr>'
        for t, pod, what, detail in lines
    )
    return (
        f"<details><summary>timeline ({len(lines)} lines: seconds since the run started)"
        f"</summary><table><tr><th>s</th><th>pod</th><th>what</th><th>detail</th></tr>"
        f"{rows}</table></details>"
    )


def _yaml_block(title: str, docs: Sequence[Any]) -> str:
    if not docs:
        return ""
    text = yaml.safe_dump_all(list(docs), sort_keys=False)
    return f"<details><summary>{_e(title)}</summary><pre>{_e(text)}</pre></details>"


def _cell(rec: Record) -> str:
    reproducer = rec.get("reproducer") or {}
    scenario = SCENARIOS.get(str(rec.get("scenario")))
    title = scenario.title if scenario else ""
    claimed = set(rec.get("claims") or [])
    claim_problems = rec.get("findings") or {}
    made = [f"{c}: {p}" for c, ps in claim_problems.items() if c in claimed for p in ps]
    others = [f"{c}: {p}" for c, ps in claim_problems.items() if c not in claimed for p in ps]
    return (
        f'<section class="cell" id="{anchor(rec)}"><h3>{_e(rec.get("scheduler"))} · '
        f"{_e(rec.get('scenario'))} ({_e(title)}) · {_e(rec.get('variant'))}</h3>"
        f"<p>Rerun this cell: <code>{_e(reproducer.get('command', ''))}</code></p>"
        + _problems("Not applicable", [rec["not_applicable"]] if "not_applicable" in rec else [])
        + _problems("The harness failed here", harness_problems(rec))
        + _problems("Contradicts the adapter's claims", made)
        + _problems("Findings (claims the adapter does not make)", others)
        + _figures(rec)
        + _timeline(rec)
        + _yaml_block(f"pods ({len(reproducer.get('pods') or [])})", reproducer.get("pods") or [])
        + _yaml_block(
            "nodes (profile, docs/profiles.md)",
            [{"nodes": reproducer.get("nodes")}] if reproducer.get("nodes") else [],
        )
        + "</section>"
    )


def render(
    records: Sequence[Record], verdicts: Sequence[Verdict], *, title: str, facts: Mapping[str, str]
) -> str:
    """The page: ``title``, ``facts`` (what ran, where, how long), findings, assertions,
    matrix, and every cell's reproducer."""
    facts_html = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in facts.items())
    scenarios = "".join(f"<li><b>{_e(s.id)}</b>: {_e(s.title)}</li>" for s in SCENARIOS.values())
    failing = [v for v in verdicts if v.passed is False]
    status = (
        f'<p class="fail">{len(failing)} assertion(s) fail: '
        f"{_e(', '.join(v.id for v in failing))}</p>"
        if failing
        else '<p class="pass">Every applicable assertion holds.</p>'
    )
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>"
        f"<h1>{_e(title)}</h1><table>{facts_html}</table>{status}"
        f"<h2>Findings</h2>{_findings(records)}"
        f"<h2>Assertions</h2>{_verdicts(verdicts)}"
        f"<h2>Matrix</h2>{_legend()}<p></p>{_matrix(records)}"
        f"<p class=small>Scenarios:</p><ul class=small>{scenarios}</ul>"
        f"<h2>Cells</h2>{''.join(_cell(r) for r in records)}"
        "</body></html>\n"
    )
