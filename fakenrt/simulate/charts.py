"""The report's charts, drawn by matplotlib as SVG with the text kept as text, inlined
into the self-contained page (no script, no external resource: it opens offline). Pure:
figures are built with the object API (``matplotlib.figure.Figure``), never pyplot, so no
global state or display is touched.

Why matplotlib: it is the plotting library every Python user knows, it is kept by a large
team, it renders SVG without a browser or a JavaScript runtime (Plotly and Bokeh ship
megabytes of script to inline for every page, Vega-Lite needs Node to render offline), and
its layout engine measures text with the font the page names (DejaVu Sans, bundled with
it and installed by the report test), so labels are placed where they fit.

Every chart is an ``<svg class="chart" data-chart="<id>">``; its data marks carry the id
``series-<n>`` (``<g id=...>``), so a test can find them. Lines that coincide (identical
data) are drawn once, labelled with every strategy they stand for (``a = b``).
"""

from __future__ import annotations

import io
import re
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import matplotlib
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter
from matplotlib.typing import RcKeyType

from fakenrt.simulate.numbers import fmt, fmt_value

#: One colour per strategy (the colour-blind friendly "tab10" order, grey left out).
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
#: Chart size in inches (at 72 points per inch: 720 x 302 pt, 960 x 403 CSS px).
SIZE = (10.0, 4.2)
STYLE: dict[RcKeyType, Any] = {
    "svg.fonttype": "none",  # text stays text: selectable, searchable, measurable
    "font.family": "DejaVu Sans",
    "font.size": 10.0,
    "axes.titlesize": 12.0,
    "axes.titleweight": "bold",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#e6e6e6",
    "legend.frameon": False,
}


#: Node shapes (another set than the strategies', so a shape is never read as one).
SHAPE_PALETTE = (
    "#66c2a5",
    "#fc8d62",
    "#8da0cb",
    "#e78ac3",
    "#a6d854",
    "#ffd92f",
    "#e5c494",
    "#b3b3b3",
)


def colour(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def shape_colour(index: int) -> str:
    return SHAPE_PALETTE[index % len(SHAPE_PALETTE)]


@dataclass(frozen=True)
class Line:
    """A line (or a group of lines with identical data) to draw."""

    label: str
    colour: str
    points: tuple[tuple[float, float], ...]
    #: The interval around each point (lows, highs), drawn as a band.
    band: tuple[tuple[float, ...], tuple[float, ...]] | None = None


def coinciding(
    series: Mapping[str, Sequence[tuple[float, float]]],
    colours: Mapping[str, str],
    bands: Mapping[str, tuple[Sequence[float], Sequence[float]]] | None = None,
) -> list[Line]:
    """One :class:`Line` per distinct data: series with identical points (and bands) are
    drawn once, labelled ``a = b = c`` in the colour of the first."""
    groups: dict[Any, list[str]] = {}
    for name, points in series.items():
        band = bands.get(name) if bands else None
        key = (tuple(points), None if band is None else (tuple(band[0]), tuple(band[1])))
        groups.setdefault(key, []).append(name)
    out = []
    for (points, band), names in groups.items():
        out.append(
            Line(
                label=_wrapped(names),
                colour=colours[names[0]],
                points=tuple((float(x), float(y)) for x, y in points),
                band=band,
            )
        )
    return out


#: Characters per line of a legend entry (longer ones wrap at " = ").
LEGEND_WIDTH = 30


def _wrapped(names: Sequence[str]) -> str:
    """``a = b = c``, wrapped into lines of at most :data:`LEGEND_WIDTH` characters."""
    lines = [names[0]]
    for name in names[1:]:
        if len(lines[-1]) + 3 + len(name) <= LEGEND_WIDTH:
            lines[-1] += f" = {name}"
        else:
            lines.append(f"= {name}")
    return "\n".join(lines)


def _figure() -> tuple[Figure, Axes]:
    figure = Figure(figsize=SIZE, layout="constrained")
    return figure, figure.add_subplot()


def _svg(figure: Figure, chart_id: str, title: str) -> str:
    """The figure as an inline ``<svg>`` element (no XML prolog, no metadata)."""
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    text = buffer.getvalue()
    text = text[text.index("<svg") :]
    text = re.sub(r"\s*<metadata>.*?</metadata>", "", text, count=1, flags=re.S)
    return text.replace(
        "<svg ",
        f'<svg class="chart" data-chart="{chart_id}" role="img" aria-label="{title}" ',
        1,
    )


def _legend(axes: Axes, note: str = "") -> None:
    handles, labels = axes.get_legend_handles_labels()
    if handles:
        axes.legend(
            handles,
            labels,
            loc="upper left",
            bbox_to_anchor=(1.02, 1.0),
            borderaxespad=0.0,
            title="\n".join(textwrap.wrap(note, LEGEND_WIDTH + 6)) if note else None,
            title_fontsize=9.0,
            fontsize=9.0,
        )


def _ticks(axes: Axes, x: Callable[[float], str] | None, y: Callable[[float], str] | None) -> None:
    if x is not None:
        axes.xaxis.set_major_formatter(FuncFormatter(lambda v, _: x(float(v))))
    if y is not None:
        axes.yaxis.set_major_formatter(FuncFormatter(lambda v, _: y(float(v))))


def render(chart_id: str, title: str, draw: Callable[[Figure, Axes], None]) -> str:
    """One chart: ``draw`` fills the axes; the SVG comes back inline-ready."""
    rc = dict(STYLE)
    rc["svg.hashsalt"] = chart_id  # ids unique per chart, and the same on every run
    with matplotlib.rc_context(rc):
        figure, axes = _figure()
        axes.set_title(title, loc="left")
        draw(figure, axes)
        return _svg(figure, chart_id, title)


def line_chart(
    *,
    chart_id: str,
    title: str,
    x_label: str,
    y_label: str,
    lines: Sequence[Line],
    x_format: Callable[[float], str] = fmt_value,
    y_format: Callable[[float], str] = fmt_value,
    x_max: float | None = None,
    y_max: float | None = None,
    log_y: bool = False,
    markers: bool = False,
    x_ticks: Sequence[float] | None = None,
    x_scale: float = 1.0,
    note: str = "",
) -> str:
    """Lines over a shared x axis (x values divided by ``x_scale``: 3600 draws seconds as
    hours); ``log_y`` is a symmetric log scale (linear below 1, so zeros stay on the
    chart); bands are drawn under their line."""

    def draw(_: Figure, axes: Axes) -> None:
        highest = 0.0
        for i, line in enumerate(lines):
            xs = [p[0] / x_scale for p in line.points]
            ys = [p[1] for p in line.points]
            highest = max([highest, *ys, *(line.band[1] if line.band else ())])
            if line.band is not None:
                axes.fill_between(
                    xs, line.band[0], line.band[1], color=line.colour, alpha=0.18, linewidth=0
                )
            (drawn,) = axes.plot(
                xs,
                ys,
                color=line.colour,
                linewidth=2.0,
                marker="o" if markers or len(xs) == 1 else None,
                markersize=4,
                label=line.label,
                zorder=3 + i,
            )
            drawn.set_gid(f"series-{i}")
        axes.set_xlabel(x_label)
        axes.set_ylabel(y_label)
        if log_y:
            axes.set_yscale("symlog", linthresh=1.0)
        if x_ticks is None:
            axes.set_xlim(0, None if x_max is None else x_max / x_scale)
        top = y_max if y_max is not None else (highest * 1.1 if highest > 0 else 1.0)
        if log_y:
            top = y_max if y_max is not None else max(highest * 2, 2.0)
        axes.set_ylim(0, top)
        if x_ticks is not None:
            axes.set_xticks([x / x_scale for x in x_ticks])
        _ticks(axes, x_format, y_format)
        _legend(axes, note)

    return render(chart_id, title, draw)


def bar_chart(
    *,
    chart_id: str,
    title: str,
    x_label: str,
    categories: Sequence[str],
    groups: Mapping[str, Sequence[float]],
    colours: Mapping[str, str],
    kind: str,
    labels: Sequence[str] | None = None,
) -> str:
    """Horizontal grouped bars, one group per category (top to bottom), each bar labelled
    with its value (as the tables write it), or with ``labels`` when given (one group)."""

    def draw(_: Figure, axes: Axes) -> None:
        n = max(len(groups), 1)
        height = 0.8 / n
        top = max((v for vs in groups.values() for v in vs), default=0.0)
        for g, (name, values) in enumerate(groups.items()):
            ys = [i + (g - (n - 1) / 2) * height for i in range(len(categories))]
            bars = axes.barh(ys, values, height=height * 0.92, color=colours[name], label=name)
            for i, patch in enumerate(bars):
                patch.set_gid(f"series-{g}-{i}")
            texts = (
                list(labels)
                if labels is not None and len(groups) == 1
                else [fmt(v, kind) for v in values]
            )
            axes.bar_label(bars, labels=texts, padding=3, fontsize=9.0)
        axes.set_yticks(range(len(categories)), list(categories))
        axes.invert_yaxis()
        axes.set_xlabel(x_label)
        axes.set_xlim(0, top * 1.25 if top > 0 else 1.0)
        axes.grid(axis="y", visible=False)
        _ticks(axes, fmt_value, None)
        if len(groups) > 1:
            _legend(axes)

    return render(chart_id, title, draw)


def stacked_bar_chart(
    *,
    chart_id: str,
    title: str,
    x_label: str,
    categories: Sequence[str],
    parts: Mapping[str, Sequence[float]],
    colours: Mapping[str, str],
    kind: str,
) -> str:
    """One horizontal bar per category (top to bottom), stacked from ``parts`` (each in its
    colour, named in the legend), labelled with its total."""

    def draw(_: Figure, axes: Axes) -> None:
        left = [0.0] * len(categories)
        ys = list(range(len(categories)))
        for g, (name, values) in enumerate(parts.items()):
            bars = axes.barh(ys, values, left=left, height=0.6, color=colours[name], label=name)
            for i, patch in enumerate(bars):
                patch.set_gid(f"series-{g}-{i}")
            left = [a + b for a, b in zip(left, values, strict=True)]
        for y, total in zip(ys, left, strict=True):
            axes.annotate(
                fmt(total, kind),
                (total, y),
                xytext=(3, 0),
                textcoords="offset points",
                va="center",
                fontsize=9.0,
            )
        top = max(left, default=0.0)
        axes.set_yticks(ys, list(categories))
        axes.invert_yaxis()
        axes.set_xlabel(x_label)
        axes.set_xlim(0, top * 1.2 if top > 0 else 1.0)
        axes.grid(axis="y", visible=False)
        _ticks(axes, fmt_value, None)
        _legend(axes)

    return render(chart_id, title, draw)


def hours(value: float) -> str:
    """An axis tick in hours (the axis drawn with ``x_scale=3600``)."""
    return f"{fmt_value(round(value, 3))}h"


def percent(share: float) -> str:
    return f"{fmt_value(round(100 * share, 1))}%"
