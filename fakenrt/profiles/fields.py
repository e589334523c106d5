"""Typed reads from loaded YAML, each naming the field it reads. Pure.

Every reader raises :class:`FieldError` with the dotted path of the field
(``zones[0].devices["nvidia.com/gpu"].count``); the profile parser adds the file and node.
Unknown keys are errors with a "did you mean" hint, so a typo never passes silently.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Collection, Mapping

from exporter.cpulist import CpuListError, parse_cpulist
from exporter.quantities import QuantityError, parse_integer
from exporter.validation import QUOTE_LIMIT, quoted
from fakenrt.profiles.limits import MAX_CPUS, MAX_QUANTITY

_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_DIGITS = re.compile(r"[0-9]+")


class FieldError(Exception):
    """A bad value at ``field`` (a path relative to the node, or to the file's top level)."""

    def __init__(self, field: str, detail: str) -> None:
        super().__init__(f"{field}: {detail}")
        self.field = field
        self.detail = detail


def child(field: str, key: str | int) -> str:
    """The path of ``key`` inside ``field``: ``a.b``, ``a[3]`` or ``a["x.io/y"]``."""
    if isinstance(key, int):
        return f"{field}[{key}]"
    if len(key) > QUOTE_LIMIT:
        return f"{field}[{quoted(key)}]"
    if _PLAIN_KEY.match(key):
        return f"{field}.{key}" if field else key
    return f'{field}["{key}"]'


def describe(value: object) -> str:
    """A short rendering of a YAML value for error messages."""
    if isinstance(value, str):
        return quoted(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null (empty)"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return str(value)


def mapping(value: object, field: str) -> dict[str, object]:
    """``value`` as a mapping with string keys."""
    if not isinstance(value, dict):
        raise FieldError(field, f"expected a mapping, got {describe(value)}")
    for key in value:
        if not isinstance(key, str):
            raise FieldError(field, f"key {describe(key)} is not a string")
    return value


def sequence(value: object, field: str) -> list[object]:
    if not isinstance(value, list):
        raise FieldError(field, f"expected a list, got {describe(value)}")
    return value


def check_keys(
    data: Mapping[str, object],
    field: str,
    allowed: Collection[str],
    *,
    required: Collection[str] = (),
    also_allowed: Callable[[str], bool] | None = None,
) -> None:
    """Reject keys outside ``allowed`` (unless ``also_allowed(key)``) and missing ``required``."""
    for key in data:
        if key in allowed or (also_allowed is not None and also_allowed(key)):
            continue
        close = difflib.get_close_matches(key, list(allowed), n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        known = ", ".join(sorted(allowed))
        raise FieldError(child(field, key), f"unknown key{hint}; known keys: {known}")
    for key in required:
        if key not in data:
            raise FieldError(child(field, key), "is required")


def string(value: object, field: str) -> str:
    if not isinstance(value, str):
        raise FieldError(field, f"expected a string, got {describe(value)}")
    return value


def integer(value: object, field: str, *, minimum: int | None = None) -> int:
    """A YAML integer (not a bool, not a quoted number) at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise FieldError(field, f"expected an integer, got {describe(value)}")
    if minimum is not None and value < minimum:
        raise FieldError(field, f"must be at least {minimum}, got {value}")
    return value


def quantity(value: object, field: str) -> int:
    """A non-negative whole Kubernetes quantity (``16Gi``, ``8``, ``"2"``) as an int."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise FieldError(field, f"expected a quantity such as 64Gi or 8, got {describe(value)}")
    try:
        amount = parse_integer(value)
    except QuantityError as exc:
        raise FieldError(field, f"{describe(value)} is not a whole Kubernetes quantity") from exc
    if amount < 0:
        raise FieldError(field, f"must not be negative, got {describe(value)}")
    if amount > MAX_QUANTITY:
        raise FieldError(
            field, f"{describe(value)} is out of range (the kubelet holds amounts in 64 bits)"
        )
    return amount


def cpulist(value: object, field: str) -> frozenset[int]:
    """A Linux cpulist (``"0-31,64-95"``); a bare integer is one CPU. CPU ids are below
    :data:`~fakenrt.profiles.limits.MAX_CPUS` (checked before any range is expanded)."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise FieldError(field, f'expected a cpulist such as "0-3,8", got {describe(value)}')
    for number in _DIGITS.findall(str(value)):
        if len(number) > len(str(MAX_CPUS)) or int(number) >= MAX_CPUS:
            raise FieldError(
                field, f"CPU id {number:.20} is too large: CPU ids are below {MAX_CPUS}"
            )
    try:
        return parse_cpulist(str(value))
    except CpuListError as exc:
        raise FieldError(field, str(exc)) from exc
