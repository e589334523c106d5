"""Label selectors as the API server parses them (``fakenrt scheduler run --node-selector``),
checked before the first request. Pure.

The grammar of ``k8s.io/apimachinery/pkg/labels/selector.go`` (``Parse``): requirements
separated by commas, each ``key``, ``!key``, ``key=value``, ``key==value``,
``key!=value``, ``key in (v1,v2)`` or ``key notin (v1,v2)``; keys are qualified names,
values label values. A selector the server would refuse is one line naming the
requirement instead of a 400 at every scheduling cycle.
"""

from __future__ import annotations

import re

from exporter.validation import quoted
from fakenrt.profiles.names import label_value_problem, qualified_name_problem

#: A selector longer than this is no selector anyone typed.
MAX_SELECTOR = 4096
_SET = re.compile(r"^\s*(\S+)\s+(in|notin)\s*\((.*)\)\s*$")
_COMPARE = re.compile(r"^\s*([^=!\s]+)\s*(==|!=|=)\s*(\S*)\s*$")
_EXISTS = re.compile(r"^\s*(!?)\s*([^=!\s(),]+)\s*$")


class SelectorError(ValueError):
    """A label selector the API server would refuse; the message says which part."""


def _requirements(text: str) -> list[str]:
    """The comma-separated requirements, commas inside parentheses kept."""
    parts: list[str] = []
    depth = 0
    current = ""
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth < 0:
                raise SelectorError("a ')' without '('")
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    if depth:
        raise SelectorError("a '(' without ')'")
    parts.append(current)
    return parts


def _key(key: str, requirement: str) -> None:
    problem = qualified_name_problem(key)
    if problem:
        raise SelectorError(f"{quoted(requirement)}: key {problem}")


def _value(value: str, requirement: str) -> None:
    problem = label_value_problem(value)
    if problem:
        raise SelectorError(f"{quoted(requirement)}: value {quoted(value)} {problem}")


def check_selector(text: str) -> None:
    """Raises :class:`SelectorError` when the API server would not parse ``text``."""
    if len(text) > MAX_SELECTOR:
        raise SelectorError(f"longer than {MAX_SELECTOR} characters")
    if not text.strip():
        raise SelectorError("empty (leave the option out to consider every node)")
    for requirement in _requirements(text):
        if match := _SET.match(requirement):
            _key(match.group(1), requirement)
            values = [v.strip() for v in match.group(3).split(",")]
            if not any(values):
                raise SelectorError(f"{quoted(requirement)}: no values")
            for value in values:
                _value(value, requirement)
        elif match := _COMPARE.match(requirement):
            _key(match.group(1), requirement)
            _value(match.group(3), requirement)
        elif match := _EXISTS.match(requirement):
            _key(match.group(2), requirement)
        else:
            raise SelectorError(f"{quoted(requirement)} is not a requirement such as pool=gpu")
