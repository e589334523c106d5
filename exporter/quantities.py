"""Kubernetes quantities as exact numbers, for the amounts this project handles.

Pure, standard library only: the exporter must not carry the ``kubernetes`` package
(126 MB installed) for one function. The grammar is the API server's
(``k8s.io/apimachinery/pkg/api/resource/quantity.go``)::

    quantity   ::= [+-] number suffix
    number     ::= digits | digits "." | digits "." digits | "." digits   (ASCII digits)
    suffix     ::= "" | n | u | m | k | M | G | T | P | E          (powers of 1000)
                 | Ki | Mi | Gi | Ti | Pi | Ei                      (powers of 1024)
                 | (e | E) [+-] digits                              (powers of 10)

Every quantity of that grammar parses to the same value as the kubernetes client's
``kubernetes.utils.parse_quantity`` (``tests/exporter/test_quantities.py`` checks it
with hypothesis), with three deliberate differences, all outside the grammar or beyond
its arithmetic: strings the API server would refuse (``"NaN"``, ``"Infinity"``,
``" 1 "``, ``"1_000"``, non-ASCII digits, ``"1e3Ki"``) are refused here too, where the
client's lenient ``Decimal`` parsing accepts them; results are exact where the client
rounds to 28 significant digits; and hostile sizes (more than :data:`MAX_LENGTH`
characters, exponents beyond :data:`MAX_EXPONENT`) are refused instead of building huge
numbers. Formatting writes plain decimal integers, the form the annotations carry
(``"8"``, ``"17179869184"``).
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

_DECIMAL_SI = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SI = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_QUANTITY = re.compile(
    r"(?P<sign>[+-]?)(?P<number>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    r"(?:(?P<binary>[KMGTPE]i)|[eE](?P<exponent>[+-]?[0-9]+)|(?P<si>[numkMGTPE]?))",
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
    from decimal import Decimal

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
        raise QuantityError(f"{quoted(value)} is not a Kubernetes quantity")
    number = Decimal(match["sign"] + match["number"])
    if match["binary"] is not None:
        return _exact().multiply(number, Decimal(1 << _BINARY_SI[match["binary"]]))
    if match["exponent"] is not None:
        exponent = int(match["exponent"])
        if abs(exponent) > MAX_EXPONENT:
            raise QuantityError(f"{quoted(value)}: exponent beyond 1e{MAX_EXPONENT}")
    else:
        exponent = _DECIMAL_SI[match["si"]]
    return number.scaleb(exponent, _exact())


def parse_integer(value: str | int | float) -> int:
    """Parse a quantity that must be a whole number (``"8"``, ``"16Gi"``, ``"2k"``)."""
    amount = parse_decimal(value)
    if amount != amount.to_integral_value():
        raise QuantityError(f"{quoted(value)} is not a whole number")
    return int(amount)


def format_integer(value: int) -> str:
    """Format a whole amount the way the annotations carry it: a plain decimal string."""
    return str(int(value))
