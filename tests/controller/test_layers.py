"""The controller's core stays pure: its modules (and what they import from the project)
import no Kubernetes, gRPC, HTTP, metrics or threading code, so it runs in simulated time."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import fakenrt.controller

PURE = (
    "effects", "fleet", "foreign", "lag", "node", "nodeobjects", "pods", "podstatus",
    "settings", "timers", "timestamps",
)  # fmt: skip
FORBIDDEN = (
    "kubernetes", "grpc", "protos", "prometheus_client", "urllib3", "threading", "socket",
    "subprocess", "exporter.kubeclient", "fakenrt.podresources_server",
)  # fmt: skip
ROOT = Path(fakenrt.controller.__file__).parent


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("module", PURE)
def test_pure_module_imports_no_io(module: str) -> None:
    imported = _imports(ROOT / f"{module}.py")
    bad = {n for n in imported for f in FORBIDDEN if n == f or n.startswith(f + ".")}
    assert not bad, f"fakenrt.controller.{module} imports {sorted(bad)}"
    local = {n.rsplit(".", 1)[1] for n in imported if n.startswith("fakenrt.controller.")}
    assert local <= set(PURE), f"{module} imports edge modules {sorted(local - set(PURE))}"
