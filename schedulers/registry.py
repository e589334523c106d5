"""Every scheduler adapter of this package, and picking them by name.

A module or package directly in ``schedulers/`` that defines ``ADAPTERS`` (a tuple of
:class:`~schedulers.adapter.Adapter`) is a scheduler; nothing else needs registering.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable
from functools import cache

import schedulers
from schedulers.adapter import Adapter

#: Modules of the package that are the interface, not schedulers.
_NOT_SCHEDULERS = frozenset({"adapter", "registry", "building"})
#: The name that picks every scheduler.
ALL = "all"


@cache
def adapters() -> tuple[Adapter, ...]:
    """Every adapter of every scheduler module, checked, in module order (ValueError for
    a malformed one, or two with the same id)."""
    found: list[Adapter] = []
    for info in sorted(pkgutil.iter_modules(schedulers.__path__), key=lambda m: m.name):
        if info.name in _NOT_SCHEDULERS or info.name.startswith("_"):
            continue
        module = importlib.import_module(f"schedulers.{info.name}")
        declared = getattr(module, "ADAPTERS", None)
        if declared is None:
            continue
        if not isinstance(declared, tuple) or not all(isinstance(a, Adapter) for a in declared):
            raise ValueError(f"schedulers.{info.name}.ADAPTERS must be a tuple of Adapter")
        found.extend(declared)
    seen: set[str] = set()
    for adapter in found:
        adapter.check()
        if adapter.id in seen:
            raise ValueError(f"two scheduler adapters are called {adapter.id!r}")
        seen.add(adapter.id)
    for name in dict.fromkeys(a.scheduler for a in found):
        if not any(a.default for a in found if a.scheduler == name):
            raise ValueError(f"scheduler {name!r} has no default mode")
    return tuple(found)


def scheduler_names() -> list[str]:
    """The schedulers (families), in order."""
    return list(dict.fromkeys(a.scheduler for a in adapters()))


def select(names: Iterable[str], *, every_mode: bool) -> tuple[Adapter, ...]:
    """The adapters ``names`` pick: an adapter's id picks that adapter; a scheduler's name
    picks its default modes, or every mode with ``every_mode``; ``all`` picks every
    scheduler so. ValueError naming the unknown name and the known ones."""
    chosen: dict[str, Adapter] = {}
    for name in names:
        if name == ALL:
            picked = [a for a in adapters() if every_mode or a.default]
        else:
            family = [a for a in adapters() if a.scheduler == name]
            exact = [a for a in adapters() if a.id == name]
            picked = [a for a in family if every_mode or a.default] if family else exact
            if not picked:
                known = ", ".join([ALL, *scheduler_names(), *(a.id for a in adapters())])
                raise ValueError(f"unknown scheduler {name!r}; known: {known}")
        for adapter in picked:
            chosen.setdefault(adapter.id, adapter)
    return tuple(chosen.values())
