"""Kubernetes quantity rounding as the kubelet's managers read requests. Pure."""

from __future__ import annotations

import math
from decimal import Decimal


def value(amount: Decimal) -> int:
    """``resource.Quantity.Value()``: rounded up to a whole unit."""
    return math.ceil(amount)


def milli_value(amount: Decimal) -> int:
    """``resource.Quantity.MilliValue()``: thousandths, rounded up."""
    return math.ceil(amount * 1000)


def is_integral(amount: Decimal) -> bool:
    """``Value()*1000 == MilliValue()``: the amount is a whole number."""
    return value(amount) * 1000 == milli_value(amount)
