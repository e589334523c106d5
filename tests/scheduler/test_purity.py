"""The plugin and the scheduling cycle are pure: only the loop's edge modules may import
the Kubernetes client, Prometheus or gRPC."""

from __future__ import annotations

import ast
from pathlib import Path

import fakenrt.scheduler

PACKAGE = Path(fakenrt.scheduler.__file__).parent
EDGES = {"kube.py", "metrics.py", "loop.py"}
FORBIDDEN = ("kubernetes", "prometheus_client", "grpc", "urllib3", "protos")


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_pure_modules_import_no_io_library() -> None:
    offenders = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name in EDGES:
            continue
        bad = sorted(n for n in _imports(path) if n.split(".")[0] in FORBIDDEN)
        if any(
            n.startswith(("fakenrt.scheduler.kube", "fakenrt.scheduler.metrics"))
            for n in _imports(path)
        ):
            bad.append("an edge module")
        if bad:
            offenders[str(path.relative_to(PACKAGE))] = bad
    assert offenders == {}


def test_loop_reaches_the_api_only_through_its_cluster_protocol() -> None:
    loop = _imports(PACKAGE / "loop.py")
    assert not any(n.split(".")[0] in FORBIDDEN for n in loop)
    assert "fakenrt.scheduler.kube" not in loop
