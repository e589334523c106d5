"""Kubernetes quantities as exact integers, for the amounts this project handles.

Every amount the exporter, the simulator and the scheduler plugin exchange is integral:
exclusive CPUs (a count), devices (a count), memory and hugepages (bytes). Parsing reuses
the kubernetes client's ``parse_quantity``; formatting writes plain decimal integers, the
form the annotations carry (``"8"``, ``"17179869184"``).
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation


class QuantityError(ValueError):
    """A quantity that is malformed, or not a whole number where one is required."""


def parse_decimal(value: str | int | float) -> Decimal:
    """Parse a Kubernetes quantity (``"500m"``, ``"16Gi"``, ``8``) into an exact Decimal."""
    # Imported on first use: importing the kubernetes package loads its whole generated
    # client (~20 MiB resident), which the exporter daemon otherwise never needs.
    from kubernetes.utils.quantity import parse_quantity

    try:
        return Decimal(parse_quantity(value))
    except (ValueError, TypeError, InvalidOperation) as exc:
        raise QuantityError(f"{value!r} is not a Kubernetes quantity") from exc


def parse_integer(value: str | int | float) -> int:
    """Parse a quantity that must be a whole number (``"8"``, ``"16Gi"``, ``"2k"``)."""
    amount = parse_decimal(value)
    if amount != amount.to_integral_value():
        raise QuantityError(f"{value!r} is not a whole number")
    return int(amount)


def format_integer(value: int) -> str:
    """Format a whole amount the way the annotations carry it: a plain decimal string."""
    return str(int(value))
