"""The kubernetes library's parts the exporter uses, imported without the rest.

Importing any module of the library (``kubernetes.client.rest``) first runs the
package's ``kubernetes/__init__.py``, which imports every part of it: the kubeconfig
loader with requests, requests-oauthlib and oauthlib (OIDC refresh), the dynamic client,
watch, stream (websocket-client), utils (``create_from_yaml``: PyYAML and the whole
client), leader election and informers. In the exporter's process that was ~17 MiB of
resident memory and ~0.13 s of CPU at every start on every node, for code it never runs
(docs/exporter.md, Footprint). The library's own ``kubernetes.client`` package already
imports its APIs and models on first use (PEP 562); the top-level package and its
``config`` and ``utils`` packages do not.

:func:`import_parts_only` registers those three as *bare* packages: module objects made
from their own import specs (so ``__path__``, ``__file__`` and ``__spec__`` are the
library's), their ``__init__`` not run. Importing a module inside them then imports that
module and what it imports, nothing more: the exporter uses ``kubernetes.client.rest``
(the REST layer its ``ApiClient`` sends every call through), ``.configuration`` and
``.exceptions``, the in-cluster loader, and ``kubernetes.utils.quantity``; a kubeconfig
file brings the kubeconfig loader (and with it requests and oauthlib), an exec plugin the
library's ``ExecProvider``.

A bare package completes itself - runs its own ``__init__`` in place - the first time a
name is asked of it that it does not hold yet (a module-level ``__getattr__``), so code
that uses the library the ordinary way (``import kubernetes; kubernetes.config.load_...``)
gets all of it, exactly as without this: what can change is only what is imported, never
what a name means. Call it in a process's entry point (the exporter's console script)
before the library is first imported; where the library is imported already it does
nothing. ``tests/exporter/test_kubeparts.py`` checks, for the pinned library series, the
modules the exporter's start imports and that a bare package completes itself.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
from types import ModuleType

#: The library's packages whose ``__init__`` imports the whole library or large parts of it.
PACKAGES = ("kubernetes", "kubernetes.config", "kubernetes.utils")

_lock = threading.RLock()
#: names of the bare packages whose ``__init__`` has not run yet
_bare: set[str] = set()


def _complete(module: ModuleType, name: str) -> object:
    """Run the package's own ``__init__`` in it (once), then look ``name`` up there."""
    with _lock:
        if module.__name__ in _bare:
            _bare.discard(module.__name__)  # a name asked while it runs: not there yet
            del module.__dict__["__getattr__"]
            spec = module.__spec__
            assert spec is not None and spec.loader is not None
            spec.loader.exec_module(module)
    try:
        return module.__dict__[name]
    except KeyError:
        raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}") from None


def _bare_package(name: str) -> ModuleType:
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        raise ImportError(f"{name} is not an installed package")
    module = importlib.util.module_from_spec(spec)
    module.__dict__["__getattr__"] = lambda attr: _complete(module, attr)
    return module


def import_parts_only() -> bool:
    """Register the library's packages as bare packages, unless the library is imported
    already; whether it did."""
    with _lock:
        if any(name in sys.modules for name in PACKAGES):
            return False
        try:
            # parents first: finding a subpackage's spec imports its parent, the bare one
            for name in PACKAGES:
                module = _bare_package(name)
                sys.modules[name] = module
                _bare.add(name)
                parent, _, child = name.rpartition(".")
                if parent:  # bound to its parent, as the import system does
                    setattr(sys.modules[parent], child, module)
        except ImportError:
            for name in PACKAGES:
                sys.modules.pop(name, None)
                _bare.discard(name)
            raise
        return True
