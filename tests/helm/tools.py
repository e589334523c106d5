"""helm, built from the Go module proxy at the version pinned in tests/helm/go.mod
(tests/helm/build.sh, cached), and what the chart tests compare: a chart's render and the
kustomize render of the manifests it mirrors, without Helm's own bookkeeping labels."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from tests.manifests.tools import ToolError

REPO = Path(__file__).resolve().parents[2]
CHARTS = REPO / "charts"
HERE = Path(__file__).resolve().parent

#: The labels Helm charts add by convention (helm.sh/chart, managed-by, instance,
#: version), which manifests/ does not carry; left out when comparing.
HELM_LABELS = frozenset(
    {
        "helm.sh/chart",
        "app.kubernetes.io/managed-by",
        "app.kubernetes.io/instance",
        "app.kubernetes.io/version",
    }
)

#: Kinds without a namespace. kustomize's `namespace:` puts one on those it does not know
#: as cluster-scoped (ValidatingAdmissionPolicy and its binding); the API server drops it.
CLUSTER_SCOPED = frozenset(
    {
        "Namespace",
        "ClusterRole",
        "ClusterRoleBinding",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "CustomResourceDefinition",
        "PriorityClass",
    }
)

Key = tuple[str, str, str]  # kind, namespace, name


@cache
def helm_path() -> Path:
    """$NUMA_TESTKIT_HELM, or what tests/helm/build.sh builds (cached by version)."""
    given = os.environ.get("NUMA_TESTKIT_HELM")
    if given:
        path = Path(given)
    else:
        proc = subprocess.run([str(HERE / "build.sh")], capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise ToolError(f"tests/helm/build.sh failed:\n{proc.stderr[-4000:]}")
        path = Path(proc.stdout.strip().splitlines()[-1])
    if not os.access(path, os.X_OK):
        raise ToolError(f"{path} is missing or not executable")
    return path


@dataclass(frozen=True)
class Helm:
    binary: Path
    #: a scratch HOME for helm's config, cache and data directories
    home: Path

    def run(
        self, *args: str, kubeconfig: Path | None = None, check: bool = True, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(self.home),
            "HELM_CONFIG_HOME": str(self.home / "config"),
            "HELM_CACHE_HOME": str(self.home / "cache"),
            "HELM_DATA_HOME": str(self.home / "data"),
        }
        if kubeconfig is not None:
            env["KUBECONFIG"] = str(kubeconfig)
        proc = subprocess.run(
            [str(self.binary), *args],
            capture_output=True,
            text=True,
            check=False,
            timeout=timeout,
            env=env,
        )
        if check and proc.returncode != 0:
            raise AssertionError(
                f"helm {' '.join(args)} failed (exit {proc.returncode}):\n{proc.stderr}"
            )
        return proc

    def template(
        self,
        chart: str,
        *,
        release: str,
        namespace: str,
        values: Sequence[Path] = (),
        sets: Mapping[str, str] = {},
    ) -> str:
        args = ["template", release, str(CHARTS / chart), "--namespace", namespace]
        for path in values:
            args += ["--values", str(path)]
        for key, value in sets.items():
            args += ["--set", f"{key}={value}"]
        return self.run(*args).stdout

    def render(
        self,
        chart: str,
        *,
        release: str,
        namespace: str,
        values: Sequence[Path] = (),
        sets: Mapping[str, str] = {},
    ) -> list[dict[str, Any]]:
        """``helm template`` as a list of objects."""
        text = self.template(chart, release=release, namespace=namespace, values=values, sets=sets)
        return [d for d in yaml.safe_load_all(text) if d]


def without_helm_labels(value: Any) -> Any:
    """``value`` with every :data:`HELM_LABELS` key removed, at any depth (they are label
    keys wherever they occur: metadata, selectors, pod templates)."""
    if isinstance(value, Mapping):
        return {k: without_helm_labels(v) for k, v in value.items() if k not in HELM_LABELS}
    if isinstance(value, list):
        return [without_helm_labels(v) for v in value]
    return value


def by_key(objects: Sequence[Mapping[str, Any]]) -> dict[Key, dict[str, Any]]:
    """Objects by (kind, namespace, name); cluster-scoped ones without a namespace, as the
    API server stores them."""
    out: dict[Key, dict[str, Any]] = {}
    for original in objects:
        obj = dict(original)
        if obj["kind"] in CLUSTER_SCOPED and "namespace" in obj["metadata"]:
            obj["metadata"] = {k: v for k, v in obj["metadata"].items() if k != "namespace"}
        meta = obj["metadata"]
        key = (str(obj["kind"]), str(meta.get("namespace", "")), str(meta["name"]))
        assert key not in out, f"{key} rendered twice"
        out[key] = obj
    return out


def ci_values(chart: str) -> list[Path]:
    """The chart's example values files (ci/*-values.yaml, the chart-testing layout)."""
    return sorted((CHARTS / chart / "ci").glob("*-values.yaml"))
