"""YAML text to values, bounded: every file fakenrt reads as YAML goes through here.

* **libyaml's C parser** (``yaml.CSafeLoader``): the pure-Python loader reads about
  100 KB/s, so the 8 MiB file bound alone did not bound the time (an 88,000-node profile
  ran past a minute and 800 MiB). With the C parser a full load costs ~1 s per
  500,000 YAML values on the development machine.
* **Bounded before anything is built**: a first pass over the parser's events (about a
  tenth of a full load) refuses a document of more than ``max_values`` values
  (:data:`MAX_VALUES`: scalars, aliases, mappings and sequences) or nested deeper than
  :data:`MAX_DEPTH` - so a file that would take long or nest into recursion is refused
  after a fraction of a second, naming the bound. An alias counts once where it is used:
  values are shared, not copied, and readers that walk them have bounds of their own
  (profile nodes, the pod schema walk).
* **Duplicate keys refused**, as the API server's strict decoding refuses duplicate
  fields: PyYAML would silently keep the last one, and a duplicated ``memory:`` must not
  pass unnoticed.
* **Every error is one line** (:class:`YamlError`, with the line and column), quoting
  at most a bounded part of the input; values the safe constructor cannot build (an
  integer of 5,000 digits, a date of month 13) are refused the same way.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.events import (
    AliasEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
)

from exporter.validation import quoted

#: YAML values in one file: a 5,000-node profile written with shapes is ~100,000, a
#: `kubectl get pods -o yaml` of 110 pods ~110,000.
MAX_VALUES = 500_000
#: Nesting of mappings and sequences: Kubernetes objects nest about 15 deep.
MAX_DEPTH = 64


class YamlError(ValueError):
    """Text that is not YAML fakenrt reads; the message is one line, without the file."""


class _StrictLoader(yaml.CSafeLoader):
    """libyaml's parser with the safe constructor, refusing a mapping's repeated key."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode) -> dict[object, object]:
    seen: set[object] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            repeated = key in seen
            seen.add(key)
        except TypeError:  # an unhashable key (a list or mapping as key): not ours to read
            raise yaml.constructor.ConstructorError(
                None, None, "a key that is a list or mapping", key_node.start_mark
            ) from None
        if repeated:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {quoted(key)}", key_node.start_mark
            )
    return loader.construct_mapping(node, deep=True)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _where(mark: Any) -> str:
    return f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""


def _message(exc: yaml.YAMLError) -> str:
    if isinstance(exc, yaml.MarkedYAMLError):
        context = f"{exc.context}: " if exc.context else ""
        return f"{context}{exc.problem}{_where(exc.problem_mark)}"
    return " ".join(str(exc).split())


def _check_size(text: str, max_values: int) -> None:
    count = depth = 0
    for event in yaml.parse(text, Loader=yaml.CSafeLoader):
        if isinstance(event, MappingEndEvent | SequenceEndEvent):
            depth -= 1
            continue
        if isinstance(event, MappingStartEvent | SequenceStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise YamlError(
                    f"nested more than {MAX_DEPTH} levels deep{_where(event.start_mark)}"
                )
        elif not isinstance(event, ScalarEvent | AliasEvent):
            continue
        count += 1
        if count > max_values:
            raise YamlError(
                f"more than {max_values} YAML values{_where(event.start_mark)}; "
                "fakenrt reads at most that many from one file"
            )


def _load(text: str, max_values: int) -> list[object]:
    try:
        _check_size(text, max_values)
        return list(yaml.load_all(text, Loader=_StrictLoader))
    except yaml.YAMLError as exc:
        raise YamlError(f"not valid YAML: {_message(exc)}") from None
    except (ValueError, OverflowError) as exc:
        if isinstance(exc, YamlError):
            raise
        if "integer string conversion" in str(exc):
            raise YamlError("not valid YAML: an integer of more than 4,300 digits") from None
        raise YamlError(f"not valid YAML: a value cannot be read ({quoted(str(exc))})") from None


def load_one(text: str, *, max_values: int = MAX_VALUES) -> object:
    """The single document of ``text`` (None for an empty one). Raises :class:`YamlError`,
    also for a text of several documents."""
    documents = _load(text, max_values)
    if len(documents) > 1:
        raise YamlError(f"{len(documents)} YAML documents where one is expected")
    return documents[0] if documents else None


def load_all(text: str, *, max_values: int = MAX_VALUES) -> list[object]:
    """Every non-empty document of a multi-document text. Raises :class:`YamlError`."""
    return [d for d in _load(text, max_values) if d is not None]
