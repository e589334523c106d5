"""exporter.validation: bounded quotes, one-line messages, names and addresses (pure)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from exporter.validation import (
    QUOTE_LIMIT,
    bind_address_problem,
    dns_label_problem,
    dns_subdomain_problem,
    one_line,
    quoted,
    seconds_problem,
)


@given(st.text(max_size=5000))
def test_a_quote_is_bounded_and_printable(text: str) -> None:
    shown = quoted(text)
    # the limit as shown, escapes counted; a quote style switched by repr may add one
    # backslash a character, and the cut says how long the text was
    assert len(shown) <= 2 * QUOTE_LIMIT + 30, shown
    shown.encode("utf-8")  # no lone surrogates: printable anywhere
    whole = repr(text).encode("utf-8", "backslashreplace").decode()
    if len(whole) <= QUOTE_LIMIT + 2:
        assert shown == whole
    else:
        assert shown.endswith(f" ({len(text)} characters)")


def test_a_long_quote_says_how_long() -> None:
    assert quoted("a" * 7_000_000) == "'" + "a" * 60 + "...' (7000000 characters)"


@given(st.text(max_size=3000))
def test_one_line_is_one_bounded_line(text: str) -> None:
    line = one_line(text)
    assert "\n" not in line and "\r" not in line
    assert len(line) < 960
    line.encode("utf-8")


@pytest.mark.parametrize(
    ("name", "label", "subdomain"),
    [
        ("node-1", True, True),
        ("gpu.example.com", False, True),
        ("Bad_Name!", False, False),
        ("", False, False),
        ("a" * 64, False, True),
        ("a" * 254, False, False),
        ("-a", False, False),
    ],
)
def test_names_as_the_api_server_checks_them(name: str, label: bool, subdomain: bool) -> None:
    assert (dns_label_problem(name) is None) == label
    assert (dns_subdomain_problem(name) is None) == subdomain


@pytest.mark.parametrize(
    ("address", "ok"),
    [
        (":8080", True),
        ("0.0.0.0:8080", True),
        ("[::1]:8080", True),
        ("localhost:9090", True),
        (":0", True),
        (":99999", False),
        (":-1", False),
        ("localhost", False),
        ("[::1:8080", False),
        ("::1:8080", False),
        ("bad host:80", False),
        ("h" * 10_000 + ":80", False),
    ],
)
def test_bind_addresses(address: str, ok: bool) -> None:
    assert (bind_address_problem(address) is None) == ok


@pytest.mark.parametrize("value", [float("inf"), float("nan"), -1.0, 3601.0])
def test_seconds_out_of_bounds(value: float) -> None:
    assert seconds_problem(value, minimum=0.05, maximum=3600) is not None
    assert seconds_problem(1.0, minimum=0.05, maximum=3600) is None
