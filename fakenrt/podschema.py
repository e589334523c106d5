"""Strict field validation of Pod manifests against the Kubernetes Pod schema.

The API server, with strict field validation (``kubectl``'s default since v1.27), refuses
a manifest with a field the schema does not know or a value of the wrong JSON type, so a
typo such as ``limit:`` for ``limits:`` never reaches a kubelet. This module applies the
same check before the simulator or the scheduler plugin reads a pod.

The schema is not written here: it is the model metadata of the ``kubernetes`` Python
client (each generated model's ``openapi_types`` and ``attribute_map``), walked
recursively from ``V1Pod``. The client is generated from the API server's OpenAPI
document, so the set of known fields follows the client version installed (a field newer
than that client is refused: upgrade the client).

Quantity fields (``resources.limits``, ``overhead``, ``sizeLimit``...) are typed as
strings by the client but, like the API server, accept YAML numbers too.
"""

from __future__ import annotations

import datetime
import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

#: Client attributes that are Kubernetes quantities (int-or-string on the wire).
_QUANTITY_ATTRIBUTES = frozenset(
    {"limits", "requests", "overhead", "allocated_resources", "size_limit", "divisor"}
)
#: At most this many values are checked in one manifest. A real Pod has a few thousand;
#: the bound keeps a YAML alias bomb (a small file whose aliases expand to billions of
#: values) from hanging the check.
MAX_VALUES = 100_000
#: At most this many problems are listed in one message.
MAX_REPORTED = 5

_LIST = re.compile(r"^(?:List\[(.*)\]|list\[(.*)\])$")
_DICT = re.compile(r"^(?:Dict\[str, (.*)\]|dict\(str, (.*)\))$")


class ManifestTooLarge(ValueError):
    """The manifest holds more than :data:`MAX_VALUES` values."""


@dataclass(frozen=True)
class _Model:
    """One generated client model: JSON field name -> (client type string, attribute)."""

    name: str
    fields: Mapping[str, tuple[str, str]]


@cache
def _model(name: str) -> _Model | None:
    from kubernetes.client import models

    cls = getattr(models, name, None)
    types = getattr(cls, "openapi_types", None)
    attributes = getattr(cls, "attribute_map", None)
    if not isinstance(types, dict) or not isinstance(attributes, dict):
        return None
    return _Model(name, {str(attributes[a]): (str(t), str(a)) for a, t in types.items()})


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "mapping"
    return type(value).__name__


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


class SchemaChecker:
    """Walks values against client type strings (``V1Pod``, ``List[V1Container]``,
    ``dict(str, str)``...), collecting problems as ``<field path>: <problem>``."""

    def __init__(self) -> None:
        self.problems: list[str] = []
        self.budget = MAX_VALUES

    def check(self, value: object, type_name: str, path: str, *, quantity: bool = False) -> None:
        self.budget -= 1
        if self.budget < 0:
            raise ManifestTooLarge(
                f"more than {MAX_VALUES} values (YAML aliases included); not a Pod manifest"
            )
        if value is None:  # JSON null: the field is unset, accepted everywhere
            return
        listed = _LIST.match(type_name)
        if listed:
            if not isinstance(value, list):
                self._wrong(path, value, "a list")
                return
            item_type = listed.group(1) or listed.group(2)
            for i, item in enumerate(value):
                self.check(item, item_type, f"{path}[{i}]", quantity=quantity)
            return
        keyed = _DICT.match(type_name)
        if keyed:
            if not isinstance(value, dict):
                self._wrong(path, value, "a mapping")
                return
            value_type = keyed.group(1) or keyed.group(2)
            for key, item in value.items():
                if not isinstance(key, str):
                    self.problems.append(f"{path}: key {key!r} is not a string")
                    continue
                self.check(item, value_type, f"{path}[{key}]", quantity=quantity)
            return
        self._scalar_or_model(value, type_name, path, quantity=quantity)

    def _scalar_or_model(self, value: object, type_name: str, path: str, *, quantity: bool) -> None:
        if type_name == "object":
            return  # int-or-string and free-form fields
        if type_name in ("str", "bytes"):
            if quantity:
                if isinstance(value, bool) or not isinstance(value, str | int | float):
                    self._wrong(path, value, "a quantity (a string or a number)")
            elif not isinstance(value, str):
                self._wrong(path, value, "a string")
            return
        if type_name == "int":
            if isinstance(value, bool) or not isinstance(value, int):
                self._wrong(path, value, "an integer")
            return
        if type_name == "float":
            if isinstance(value, bool) or not isinstance(value, int | float):
                self._wrong(path, value, "a number")
            return
        if type_name == "bool":
            if not isinstance(value, bool):
                self._wrong(path, value, "true or false")
            return
        if type_name in ("datetime", "date"):
            if not isinstance(value, str | datetime.date):
                self._wrong(path, value, "a timestamp")
            return
        model = _model(type_name)
        if model is None:  # a type this walker does not know: accept, as "object"
            return
        if not isinstance(value, dict):
            self._wrong(path, value, "a mapping")
            return
        for key, item in value.items():
            if not isinstance(key, str) or key not in model.fields:
                self._unknown(path, key, model)
                continue
            field_type, attribute = model.fields[key]
            self.check(
                item, field_type, _child(path, key), quantity=attribute in _QUANTITY_ATTRIBUTES
            )

    def _wrong(self, path: str, value: object, expected: str) -> None:
        shown = "" if isinstance(value, list | dict) else f" {value!r:.40}"
        self.problems.append(f"{path}: expected {expected}, got {_kind(value)}{shown}")

    def _unknown(self, path: str, key: object, model: _Model) -> None:
        close = difflib.get_close_matches(str(key), list(model.fields), n=1, cutoff=0.6)
        hint = f' (did you mean "{close[0]}"?)' if close else ""
        self.problems.append(f'{_child(path, str(key))}: unknown field "{key}"{hint}')


def schema_problems(manifest: object) -> list[str]:
    """What strict decoding of ``manifest`` as a v1 Pod would refuse, each as
    ``<field path>: <problem>``; empty when the manifest is well-formed.

    Raises :class:`ManifestTooLarge` for a manifest of more than :data:`MAX_VALUES` values.
    """
    if not isinstance(manifest, dict):
        return [f"(top level): expected a Pod mapping, got {_kind(manifest)}"]
    checker = SchemaChecker()
    checker.check(manifest, "V1Pod", "")
    api_version = manifest.get("apiVersion")
    if api_version not in (None, "v1"):
        checker.problems.insert(0, f'apiVersion: a Pod is apiVersion "v1", not {api_version!r}')
    return checker.problems


def claim_schema_problems(manifest: object) -> list[str]:
    """What strict decoding of ``manifest`` as a resource.k8s.io/v1 ResourceClaim would
    refuse, as :func:`schema_problems` does for a Pod."""
    if not isinstance(manifest, dict):
        return [f"(top level): expected a ResourceClaim mapping, got {_kind(manifest)}"]
    checker = SchemaChecker()
    checker.check(manifest, "ResourceV1ResourceClaim", "")
    api_version = manifest.get("apiVersion")
    if api_version != "resource.k8s.io/v1":
        checker.problems.insert(
            0,
            f'apiVersion: a ResourceClaim is apiVersion "resource.k8s.io/v1", not {api_version!r}',
        )
    return checker.problems


def summarize(problems: list[str]) -> str:
    """The problems as one line: the first :data:`MAX_REPORTED`, then how many more."""
    shown = "; ".join(problems[:MAX_REPORTED])
    rest = len(problems) - MAX_REPORTED
    return f"{shown}; and {rest} more" if rest > 0 else shown


def check_manifest(manifest: Any, *, claim: bool = False) -> str | None:
    """One line describing what the API server would refuse in ``manifest`` (a Pod, or a
    ResourceClaim with ``claim``), or None."""
    try:
        problems = claim_schema_problems(manifest) if claim else schema_problems(manifest)
    except ManifestTooLarge as exc:
        return str(exc)
    return summarize(problems) if problems else None
