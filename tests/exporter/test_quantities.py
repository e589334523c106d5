"""``exporter.quantities`` (the kubernetes library's ``parse_quantity`` behind the API
server's grammar and bounds) against the library called as it comes: equal on the
grammar, stricter outside it, exact where the library's default context rounds."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kubernetes.utils.quantity import parse_quantity

from exporter.quantities import (
    MAX_EXPONENT,
    MAX_LENGTH,
    QuantityError,
    format_integer,
    parse_decimal,
    parse_integer,
)

DECIMAL_SI = ["", "n", "u", "m", "k", "M", "G", "T", "P", "E"]
BINARY_SI = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]


def digits(max_size: int) -> st.SearchStrategy[str]:
    return st.text("0123456789", min_size=1, max_size=max_size)


def numbers(max_digits: int) -> st.SearchStrategy[str]:
    """Every number form of the grammar: 12, 12., 12.5, .5 (at most max_digits digits,
    so the client's 28-digit arithmetic is still exact)."""
    half = max(1, max_digits // 2)
    return st.one_of(
        digits(max_digits),
        digits(max_digits).map(lambda d: d + "."),
        st.tuples(digits(half), digits(half)).map(lambda p: f"{p[0]}.{p[1]}"),
        digits(max_digits).map(lambda d: "." + d),
    )


SIGNS = st.sampled_from(["", "+", "-"])
EXPONENTS = st.tuples(
    st.sampled_from(["e", "E"]), SIGNS, st.integers(0, MAX_EXPONENT).map(str)
).map("".join)
GRAMMAR = st.one_of(
    st.tuples(SIGNS, numbers(20), st.sampled_from(DECIMAL_SI)),
    # 2**60 has 19 digits: at most 9 more keep the client's product exact
    st.tuples(SIGNS, numbers(9), st.sampled_from(BINARY_SI)),
    st.tuples(SIGNS, numbers(20), EXPONENTS),
).map("".join)


@given(GRAMMAR)
def test_equal_to_the_kubernetes_client_on_the_grammar(text: str) -> None:
    assert parse_decimal(text) == Decimal(parse_quantity(text))


QUANTITYISH = st.text(alphabet="0123456789+-.eEnumkKMGTPi _aNfI ", max_size=12)


@given(st.one_of(QUANTITYISH, st.text(max_size=12)))
def test_never_accepts_what_the_client_refuses_nor_differs(text: str) -> None:
    try:
        ours = parse_decimal(text)
    except QuantityError:
        return
    assert ours == Decimal(parse_quantity(text))


@given(st.one_of(st.integers(-(2**70), 2**70), st.floats(allow_nan=False, allow_infinity=False)))
def test_numbers_equal_to_the_client(value: int | float) -> None:
    assert parse_decimal(value) == parse_quantity(value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("500m", Fraction(1, 2), id="milli"),
        pytest.param("16Gi", 16 * 2**30, id="binary"),
        pytest.param("1.5Ki", 1536, id="fractional-binary"),
        pytest.param("2k", 2000, id="kilo"),
        pytest.param("1E", 10**18, id="exa-not-exponent"),
        pytest.param("1e3", 1000, id="exponent"),
        pytest.param("+.5", Fraction(1, 2), id="leading-dot"),
        pytest.param("-7.", -7, id="trailing-dot"),
        pytest.param("3n", Fraction(3, 10**9), id="nano"),
        # the client's 28-digit context rounds these; the API server (inf.Dec) does not
        pytest.param("1234567890123Ei", 1234567890123 * 2**60, id="exact-beyond-28-digits"),
        pytest.param(
            "1.0000000000000000000000000001Ki",
            Fraction(10**28 + 1, 10**28) * 1024,
            id="exact-fraction-beyond-28-digits",
        ),
    ],
)
def test_values(text: str, expected: Fraction) -> None:
    assert Fraction(parse_decimal(text)) == expected


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("NaN", id="nan"),
        pytest.param("Infinity", id="infinity"),
        pytest.param("sNaN", id="signaling-nan"),
        pytest.param(" 1", id="whitespace"),
        pytest.param("1_000", id="underscore"),
        pytest.param("\u0663", id="non-ascii-digit"),
        pytest.param("1e3Ki", id="exponent-and-suffix"),
        pytest.param("1e3k", id="exponent-and-si"),
        pytest.param("1K", id="upper-case-kilo"),
        pytest.param("1" * (MAX_LENGTH + 1), id="too-long"),
        pytest.param(f"1e{MAX_EXPONENT + 1}", id="exponent-too-large"),
    ],
)
def test_client_accepts_but_the_api_server_grammar_refuses(text: str) -> None:
    parse_quantity(text)  # the lenient client takes it
    with pytest.raises(QuantityError):
        parse_decimal(text)


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("", id="empty"),
        pytest.param("1ki", id="lower-binary"),
        pytest.param("1e", id="bare-exponent"),
        pytest.param("abc", id="text"),
        pytest.param(True, id="bool"),
        pytest.param(float("inf"), id="float-infinity"),
        pytest.param(float("nan"), id="float-nan"),
    ],
)
def test_refused(value: str | float) -> None:
    with pytest.raises(QuantityError):
        parse_decimal(value)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param("16Gi", 17179869184, id="bytes"),
        pytest.param("8", 8, id="count"),
        pytest.param("2k", 2000, id="kilo"),
        pytest.param(4, 4, id="int"),
    ],
)
def test_parse_integer(value: str | int, expected: int) -> None:
    assert parse_integer(value) == expected


@pytest.mark.parametrize("value", ["500m", "1.5", "1n"])
def test_parse_integer_refuses_fractions(value: str) -> None:
    with pytest.raises(QuantityError, match="whole number"):
        parse_integer(value)


@given(st.integers(0, 2**80))
def test_format_integer_round_trips(value: int) -> None:
    assert parse_integer(format_integer(value)) == value
