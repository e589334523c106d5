"""Durations as users write them in flags and annotations. Pure.

Accepted: Go-style durations (``"90s"``, ``"1m30s"``, ``"1.5h"``, ``"250ms"``) as
``kubectl`` and the kubelet print them, or a plain number of seconds (``"30"``, ``"0.5"``).
"""

from __future__ import annotations

import re

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ms|s|m|h)")
_NUMBER = re.compile(r"\d+(?:\.\d*)?|\.\d+")


class DurationError(ValueError):
    """A duration that cannot be read; the message quotes it."""


def parse_duration(text: str) -> float:
    """Seconds in ``text``; raises DurationError for anything else (negative included)."""
    value = text.strip()
    if _NUMBER.fullmatch(value):
        return float(value)
    pos = 0
    total = 0.0
    for match in _PART.finditer(value):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    if pos != len(value) or not value:
        raise DurationError(
            f"{text!r} is not a duration (examples: 30s, 1m30s, 250ms, 1.5h, or seconds: 30)"
        )
    return total
