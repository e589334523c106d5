"""The command-line tools the manifest tests drive: kubectl (built at the control
plane's pinned version) and the Prometheus Operator's CRDs, each from a cached script."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
MANIFESTS = REPO / "manifests"
HERE = Path(__file__).resolve().parent


class ToolError(RuntimeError):
    """A setup script failed; the message carries its output."""


def _script_output(script: Path) -> str:
    proc = subprocess.run([str(script)], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise ToolError(f"{script} failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
    return proc.stdout.strip().splitlines()[-1]


def kubectl_path() -> Path:
    """$NUMA_TESTKIT_KUBECTL, or what tests/controlplane/build-kubectl.sh builds."""
    given = os.environ.get("NUMA_TESTKIT_KUBECTL")
    path = (
        Path(given) if given else Path(_script_output(REPO / "tests/controlplane/build-kubectl.sh"))
    )
    if not os.access(path, os.X_OK):
        raise ToolError(f"{path} is missing or not executable")
    return path


def operator_crds_dir() -> Path:
    return Path(_script_output(HERE / "operator-crds.sh"))


@dataclass(frozen=True)
class Kubectl:
    """kubectl against one kubeconfig."""

    binary: Path
    kubeconfig: Path

    def run(
        self, *args: str, stdin: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [str(self.binary), f"--kubeconfig={self.kubeconfig}", *args],
            input=stdin,
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        if check and proc.returncode != 0:
            raise AssertionError(
                f"kubectl {' '.join(args)} failed (exit {proc.returncode}):\n{proc.stderr}"
            )
        return proc

    def render(self, directory: Path) -> list[dict[str, Any]]:
        """`kubectl kustomize DIR` as a list of objects."""
        out = self.run("kustomize", str(directory)).stdout
        return [d for d in yaml.safe_load_all(out) if d]


def kustomizations() -> list[Path]:
    """Every kustomization under manifests/ that builds on its own (Components do not)."""
    found = []
    for path in sorted(MANIFESTS.rglob("kustomization.yaml")):
        doc = yaml.safe_load(path.read_text())
        if doc.get("kind", "Kustomization") == "Kustomization":
            found.append(path.parent)
    return found
