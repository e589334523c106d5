"""Optional parts of the install: modules an extra of numa-testkit provides, and the one
line that names the extra when such a module is missing.

``pip install numa-testkit`` installs the exporter and what it imports;
``pip install 'numa-testkit[fakenrt]'`` adds what the ``fakenrt`` commands import. A
command that needs an extra that is not installed says so in one line (which module is
missing, which extra installs it, the pip command) instead of a ModuleNotFoundError
traceback. Shared by both console scripts, so it imports nothing optional itself.

``tests/test_install.py`` checks :data:`EXTRA_MODULES` against ``pyproject.toml`` and that
every module a command can import is installed with the extra it documents.
"""

from __future__ import annotations

import importlib
from types import ModuleType

DISTRIBUTION = "numa-testkit"

#: Top-level modules (or packages) each extra provides, by extra.
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "fakenrt": ("click", "matplotlib", "xxhash"),
    "distributed": ("distributed",),
}


class MissingExtra(ImportError):
    """An optional module is not installed; ``str()`` is the one line to show."""

    def __init__(self, *, module: str, extra: str, needed_by: str) -> None:
        super().__init__(
            f"{needed_by} needs the {extra!r} extra of {DISTRIBUTION} ({module} is not "
            f"installed): pip install '{DISTRIBUTION}[{extra}]'",
            name=module,
        )
        self.module = module
        self.extra = extra


def _extra_of(missing: str) -> tuple[str, str] | None:
    """(module, extra) for a missing module name that belongs to an extra, else None."""
    for extra, modules in EXTRA_MODULES.items():
        for module in modules:
            if (
                missing == module
                or missing.startswith(f"{module}.")
                or (
                    module.startswith(f"{missing}.")  # "google" missing: google.protobuf is
                )
            ):
                return module, extra
    return None


def missing_extra(exc: ModuleNotFoundError, *, needed_by: str) -> MissingExtra | None:
    """The :class:`MissingExtra` to raise for ``exc`` when the module it did not find is
    one an extra provides; None when it is not (a broken install or a bug: let it raise)."""
    found = _extra_of(exc.name or "")
    if found is None:
        return None
    module, extra = found
    return MissingExtra(module=module, extra=extra, needed_by=needed_by)


def import_optional(module: str, *, needed_by: str) -> ModuleType:
    """``importlib.import_module(module)``; raises :class:`MissingExtra` (one line naming
    the extra) when it, or a module its extra provides, is not installed. ``needed_by``
    names what needs it, e.g. ``"fakenrt kubelet explain (pod validation)"``."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        refusal = missing_extra(exc, needed_by=needed_by)
        if refusal is None:
            raise
        raise refusal from None
