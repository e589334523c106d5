"""How every number of ``fakenrt simulate`` is written - in the terminal table, the HTML
report, its sentences and its chart axes - so one figure reads the same everywhere. Pure.

A figure has a kind, and the kind fixes its format:

* ``count`` - whole numbers with thousands separators (``1,899``);
* ``per1k`` - per 1,000 binds, one decimal (``75.4``);
* ``hours`` - GPU-hours, one decimal (``2,748.1``);
* ``seconds`` - one decimal (``14,835.9``);
* ``gpus`` - a mean number of GPUs, one decimal;
* ``share`` - a share shown as a percentage, one decimal (``89.5%``);
* ``ratio`` - three decimals (``0.986``).

``None`` (not measured, or not applicable to the strategy) is ``-``.
"""

from __future__ import annotations

from typing import Any

KINDS = ("count", "per1k", "hours", "seconds", "gpus", "share", "ratio")


def fmt(value: Any, kind: str) -> str:
    """``value`` written as figures of ``kind`` are."""
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    if kind == "count":
        return f"{round(value):,}"
    if kind in ("per1k", "hours", "seconds", "gpus"):
        return f"{value:,.1f}"
    if kind == "share":
        return f"{100 * value:.1f}%"
    if kind == "ratio":
        return f"{value:.3f}"
    raise ValueError(f"unknown kind of figure {kind!r}")


def fmt_value(value: float) -> str:
    """A setting's value (a swept delay, an axis tick): no trailing zeros (``0``, ``2.5``,
    ``1,000``)."""
    if value == int(value):
        return f"{int(value):,}"
    return f"{value:,.3f}".rstrip("0").rstrip(".")
