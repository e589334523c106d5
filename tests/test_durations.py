from __future__ import annotations

import pytest

from fakenrt.durations import DurationError, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        pytest.param("30", 30.0, id="plain-seconds"),
        pytest.param("0.5", 0.5, id="fraction"),
        pytest.param("90s", 90.0, id="seconds"),
        pytest.param("1m30s", 90.0, id="minutes-seconds"),
        pytest.param("250ms", 0.25, id="milliseconds"),
        pytest.param("1.5h", 5400.0, id="fractional-hours"),
        pytest.param(" 2m ", 120.0, id="whitespace"),
    ],
)
def test_parse(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("", id="empty"),
        pytest.param("-5s", id="negative"),
        pytest.param("5 s", id="inner-space"),
        pytest.param("5d", id="unknown-unit"),
        pytest.param("s", id="unit-only"),
        pytest.param("1m30", id="trailing-number"),
    ],
)
def test_rejects(text: str) -> None:
    with pytest.raises(DurationError, match="not a duration"):
        parse_duration(text)
