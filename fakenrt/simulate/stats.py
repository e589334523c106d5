"""Means over seeds and their 95% confidence intervals. Pure.

The interval is Student's t interval over the per-seed values: ``mean +- t(0.975, n-1) *
s / sqrt(n)``, with ``s`` the sample standard deviation of the ``n`` seeds' values. Every
run is an independent draw (its own workload and NRT jitter), so the per-seed values are
independent; ``t`` rather than the normal quantile because ``n`` is small (3 to 30 seeds
is typical: at 5 seeds the normal 1.96 would understate the interval by 30%).

The quantile of Student's t is computed here from its distribution function for integer
degrees of freedom (Abramowitz and Stegun 26.7.3 and 26.7.4, a finite sum of powers of
cos(atan(t / sqrt(df)))), inverted by bisection: one number does not justify SciPy (about
100 MB installed) in the ``fakenrt`` extra.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

#: What the intervals are, in words (the JSON and the report say it).
INTERVAL = "95% t-interval over seeds: mean +- t(0.975, n-1) * s / sqrt(n)"


def _central(t: float, df: int) -> float:
    """P(|T| <= t) for Student's t with ``df`` degrees of freedom."""
    theta = math.atan(t / math.sqrt(df))
    s, c = math.sin(theta), math.cos(theta)
    if df % 2 == 1:
        total, term = 0.0, c
        for k in range(1, (df - 1) // 2 + 1):  # cos + 2/3 cos^3 + 2*4/(3*5) cos^5 ...
            if k > 1:
                term *= (2 * k - 2) / (2 * k - 1) * c * c
            total += term
        return 2.0 / math.pi * (theta + s * total) if df > 1 else 2.0 * theta / math.pi
    total, term = 1.0, 1.0
    for k in range(1, df // 2):  # 1 + 1/2 cos^2 + 1*3/(2*4) cos^4 ...
        term *= (2 * k - 1) / (2 * k) * c * c
        total += term
    return s * total


def t_quantile(df: int, level: float = 0.95) -> float:
    """The ``t`` with P(|T| <= t) = ``level`` (two-sided; 0.95 gives t(0.975, df))."""
    if df < 1:
        raise ValueError("at least one degree of freedom")
    low, high = 0.0, 1.0
    while _central(high, df) < level:
        high *= 2
    for _ in range(200):
        mid = (low + high) / 2
        if _central(mid, df) < level:
            low = mid
        else:
            high = mid
        if high - low < 1e-12:
            break
    return (low + high) / 2


@dataclass(frozen=True)
class Estimate:
    mean: float
    #: The interval's bounds (None for a single seed: no interval).
    low: float | None
    high: float | None


def estimate(values: Sequence[float]) -> Estimate:
    """The mean of ``values`` and its 95% t-interval."""
    if not values:
        raise ValueError("no values")
    mean = statistics.fmean(values)
    if len(values) < 2:
        return Estimate(mean, None, None)
    half = t_quantile(len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))
    return Estimate(mean, mean - half, mean + half)
