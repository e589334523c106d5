"""Kubernetes quantities as exact numbers: the kubernetes library's ``parse_quantity``
behind the API server's grammar and size bounds.

The value is the library's (``kubernetes.utils.quantity.parse_quantity``), computed in a
decimal context wide enough that nothing is rounded (the library's default 28-digit
context rounds ``"1234567890123Ei"``; the API server's ``inf.Dec`` does not). What the
library leaves open is refused first, in one line naming the value: its lenient
``Decimal`` parsing takes strings the API server refuses (``"NaN"``, ``"Infinity"``,
``" 1 "``, ``"1_000"``, non-ASCII digits, ``"1e3Ki"``), and a hostile size
(``"1e999999999"``: the integer of that is a 400 MB allocation) would cost the process
dearly. Accepted is exactly the API server's grammar
(``k8s.io/apimachinery/pkg/api/resource/quantity.go``), at most :data:`MAX_LENGTH`
characters with exponents up to :data:`MAX_EXPONENT`::

    quantity   ::= [+-] number suffix
    number     ::= digits | digits "." | digits "." digits | "." digits   (ASCII digits)
    suffix     ::= "" | n | u | m | k | M | G | T | P | E          (powers of 1000)
                 | Ki | Mi | Gi | Ti | Pi | Ei                      (powers of 1024)
                 | (e | E) [+-] digits                              (powers of 10)

Pure: no I/O. The library is imported on the first parse of a string (the import costs
~0.2 s of CPU: the exporter has it loaded anyway, the pure simulators pay it once).
Formatting writes plain decimal integers, the form the annotations carry (``"8"``,
``"17179869184"``).
"""

from __future__ import annotations

import re
from functools import cache
from typing import TYPE_CHECKING

from exporter.validation import quoted

if TYPE_CHECKING:  # imported on the first parse: the exporter's daemon only formats
    from decimal import Context, Decimal

#: The longest quantity string accepted (the API server's canonical forms are short).
MAX_LENGTH = 128
#: The largest power of ten a quantity may carry (1e18 is "E"; far beyond any amount).
MAX_EXPONENT = 64

_QUANTITY = re.compile(
    r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    r"(?:[KMGTPE]i|[eE](?P<exponent>[+-]?[0-9]+)|[numkMGTPE]?)",
    re.ASCII,
)


@cache
def _exact() -> Context:
    """Wide enough that no product or scaling of accepted inputs is ever rounded."""
    from decimal import Context

    return Context(prec=MAX_LENGTH + 2 * MAX_EXPONENT + 32, Emax=10**6, Emin=-(10**6))


class QuantityError(ValueError):
    """A quantity that is malformed, or not a whole number where one is required."""


def parse_decimal(value: str | int | float) -> Decimal:
    """Parse a Kubernetes quantity (``"500m"``, ``"16Gi"``, ``8``) into an exact Decimal."""
    from decimal import Decimal, localcontext

    if isinstance(value, bool):
        raise QuantityError(f"{quoted(value)} is not a Kubernetes quantity")
    if isinstance(value, int | float):
        amount = Decimal(value)
        if not amount.is_finite():
            raise QuantityError(f"{quoted(value)} is not a Kubernetes quantity")
        return amount
    text = str(value)
    match = _QUANTITY.fullmatch(text) if len(text) <= MAX_LENGTH else None
    if match is None:
        shown = text if len(text) <= MAX_LENGTH else text[:MAX_LENGTH] + "..."
        raise QuantityError(f"{shown!r} is not a Kubernetes quantity")
    exponent = match["exponent"]
    if exponent is not None and abs(int(exponent)) > MAX_EXPONENT:
        raise QuantityError(f"{text!r}: exponent beyond 1e{MAX_EXPONENT}")
    from kubernetes.utils.quantity import parse_quantity

    with localcontext(_exact()):
        try:
            amount = parse_quantity(text)
        except (ValueError, ArithmeticError) as exc:  # not expected within the grammar
            raise QuantityError(f"{text!r} is not a Kubernetes quantity ({exc})") from None
    assert isinstance(amount, Decimal)
    return amount


def parse_integer(value: str | int | float) -> int:
    """Parse a quantity that must be a whole number (``"8"``, ``"16Gi"``, ``"2k"``)."""
    amount = parse_decimal(value)
    if amount != amount.to_integral_value():
        raise QuantityError(f"{quoted(value)} is not a whole number")
    return int(amount)


def format_integer(value: int) -> str:
    """Format a whole amount the way the annotations carry it: a plain decimal string."""
    return str(int(value))
