"""Inline SVG charts: no script, no external resource, so a report opens offline. Pure.

Every chart is an ``<svg class="chart" data-chart="<id>">``; its data marks are
``<path class="series">`` (lines) or ``<rect class="bar">`` (bars), each in its series'
colour, so a test can check that every chart drew something.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape

WIDTH, HEIGHT = 760, 300
LEFT, RIGHT, TOP, BOTTOM = 64, 170, 34, 46

#: One colour per strategy (colour-blind friendly, distinct from the grey axes).
PALETTE = (
    "#d62728",  # red
    "#ff7f0e",  # orange
    "#9467bd",  # purple
    "#1f77b4",  # blue
    "#2ca02c",  # green
    "#17becf",  # cyan
    "#8c564b",
    "#e377c2",
)


def colour(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def _nice_max(value: float) -> float:
    if value <= 0:
        return 1.0
    magnitude = 10 ** len(str(int(value))) / 10
    for step in (1, 2, 2.5, 5, 10):
        top = step * magnitude
        if top >= value:
            return float(top)
    return float(value)


def _fmt(value: float) -> str:
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if value == int(value):
        return str(int(value))
    return f"{value:.2f}".rstrip("0").rstrip(".")


def _frame(chart_id: str, title: str, x_label: str, y_label: str, body: list[str]) -> str:
    return "\n".join(
        [
            f'<svg class="chart" data-chart="{escape(chart_id)}" xmlns="http://www.w3.org/2000/svg"'
            f' width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img"'
            f' aria-label="{escape(title)}">',
            f'<text x="{LEFT}" y="20" class="title">{escape(title)}</text>',
            f'<text x="{LEFT + (WIDTH - LEFT - RIGHT) / 2:.1f}" y="{HEIGHT - 8}"'
            f' text-anchor="middle" class="label">{escape(x_label)}</text>',
            f'<text x="14" y="{TOP + (HEIGHT - TOP - BOTTOM) / 2:.1f}" text-anchor="middle"'
            f' class="label" transform="rotate(-90 14 {TOP + (HEIGHT - TOP - BOTTOM) / 2:.1f})">'
            f"{escape(y_label)}</text>",
            *body,
            "</svg>",
        ]
    )


def _axes(y_max: float, x_ticks: Sequence[tuple[float, str]]) -> list[str]:
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    out = [
        f'<line x1="{LEFT}" y1="{TOP + plot_h}" x2="{LEFT + plot_w}" y2="{TOP + plot_h}"'
        ' class="axis"/>',
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + plot_h}" class="axis"/>',
    ]
    for i in range(5):
        value = y_max * i / 4
        y = TOP + plot_h - plot_h * i / 4
        out.append(
            f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + plot_w}" y2="{y:.1f}" class="grid"/>'
        )
        out.append(
            f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" class="tick">'
            f"{_fmt(value)}</text>"
        )
    for x, label in x_ticks:
        out.append(
            f'<text x="{x:.1f}" y="{TOP + plot_h + 16}" text-anchor="middle" class="tick">'
            f"{escape(label)}</text>"
        )
    return out


def _legend(names: Sequence[str], colours: Sequence[str]) -> list[str]:
    out = []
    x = WIDTH - RIGHT + 12
    for i, (name, c) in enumerate(zip(names, colours, strict=True)):
        y = TOP + 6 + i * 18
        out.append(f'<rect x="{x}" y="{y - 9}" width="12" height="12" fill="{c}" class="key"/>')
        out.append(f'<text x="{x + 18}" y="{y + 1}" class="legend">{escape(name)}</text>')
    return out


def line_chart(
    *,
    chart_id: str,
    title: str,
    x_label: str,
    y_label: str,
    series: Mapping[str, Sequence[tuple[float, float]]],
    colours: Mapping[str, str],
    x_max: float | None = None,
    y_max: float | None = None,
    x_format: str = "number",
    x_values: Sequence[float] | None = None,
) -> str:
    """One line per series. ``x_format`` ``hours`` labels the x axis in hours; with
    ``x_values`` the x positions are the values' indices (an ordinal sweep axis)."""
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    points = [p for s in series.values() for p in s]
    top_x = x_max if x_max is not None else max((x for x, _ in points), default=1.0) or 1.0
    top_y = y_max if y_max is not None else _nice_max(max((y for _, y in points), default=1.0))
    if x_values is not None:
        n = max(len(x_values) - 1, 1)

        def px(x: float) -> float:
            return LEFT + plot_w * x_values.index(x) / n

        ticks = [(px(v), _fmt(v)) for v in x_values]
    else:

        def px(x: float) -> float:
            return LEFT + plot_w * x / top_x

        if x_format == "hours":
            hours = top_x / 3600
            step = max(1, round(hours / 8))
            ticks = [(px(h * 3600), f"{h:g}h") for h in range(0, int(hours) + 1, step)]
        else:
            ticks = [(px(top_x * i / 4), _fmt(top_x * i / 4)) for i in range(5)]

    def py(y: float) -> float:
        return TOP + plot_h - plot_h * min(y, top_y) / top_y

    body = _axes(top_y, ticks)
    for name, pts in series.items():
        if not pts:
            continue
        d = " ".join(
            f"{'M' if i == 0 else 'L'}{px(x):.1f},{py(y):.1f}" for i, (x, y) in enumerate(pts)
        )
        body.append(
            f'<path class="series" data-series="{escape(name)}" d="{d}" fill="none"'
            f' stroke="{colours[name]}" stroke-width="2"/>'
        )
        if len(pts) == 1 or x_values is not None:
            for x, y in pts:
                body.append(
                    f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3.5" fill="{colours[name]}"/>'
                )
    body += _legend(list(series), [colours[n] for n in series])
    return _frame(chart_id, title, x_label, y_label, body)


def bar_chart(
    *,
    chart_id: str,
    title: str,
    y_label: str,
    categories: Sequence[str],
    groups: Mapping[str, Sequence[float]],
    colours: Mapping[str, str],
    annotations: Sequence[str] | None = None,
) -> str:
    """Grouped bars: one group per category, one bar per entry of ``groups``."""
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    top = _nice_max(max((v for vs in groups.values() for v in vs), default=1.0))
    slot = plot_w / max(len(categories), 1)
    width = slot * 0.7 / max(len(groups), 1)
    ticks = [(LEFT + slot * (i + 0.5), c) for i, c in enumerate(categories)]
    body = _axes(top, [])
    for x, label in ticks:
        body.append(
            f'<text x="{x:.1f}" y="{TOP + plot_h + 16}" text-anchor="middle" class="tick small">'
            f"{escape(label)}</text>"
        )
    for g, (name, values) in enumerate(groups.items()):
        for i, value in enumerate(values):
            h = plot_h * value / top if top else 0
            x = LEFT + slot * i + slot * 0.15 + g * width
            # A zero still draws a hairline so every category shows it was measured.
            body.append(
                f'<rect class="bar" data-series="{escape(name)}" x="{x:.1f}"'
                f' y="{TOP + plot_h - max(h, 1):.1f}" width="{width:.1f}" height="{max(h, 1):.1f}"'
                f' fill="{colours[name]}">'
                f"<title>{escape(categories[i])}: {_fmt(value)}</title></rect>"
            )
            body.append(
                f'<text x="{x + width / 2:.1f}" y="{TOP + plot_h - max(h, 1) - 4:.1f}"'
                f' text-anchor="middle" class="value">{_fmt(value)}</text>'
            )
    if annotations:
        for (x, _), note in zip(ticks, annotations, strict=True):
            body.append(
                f'<text x="{x:.1f}" y="{TOP + plot_h + 30}" text-anchor="middle"'
                ' class="tick small">'
                f"{escape(note)}</text>"
            )
    body += _legend(list(groups), [colours[n] for n in groups])
    return _frame(chart_id, title, "", y_label, body)
