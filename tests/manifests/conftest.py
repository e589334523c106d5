"""Fixtures of the manifest tests: kubectl on the session's control plane, and the CRDs
the manifests need installed there (NodeResourceTopology, Prometheus Operator's
PodMonitor, PrometheusRule and ServiceMonitor)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from kubernetes import client

from tests.controlplane.cluster import ControlPlane
from tests.controlplane.helpers import ensure_namespace
from tests.manifests.tools import MANIFESTS, Kubectl, kubectl_path, operator_crds_dir


@pytest.fixture(scope="session")
def kubectl_binary() -> Path:
    return kubectl_path()


@pytest.fixture(scope="session")
def kubectl(kubectl_binary: Path, control_plane: ControlPlane) -> Kubectl:
    """kubectl as the admin (system:masters) of the session's control plane."""
    return Kubectl(kubectl_binary, control_plane.kubeconfig)


@pytest.fixture(scope="session")
def operator_crds(kubectl: Kubectl, nrt_crd: list[str]) -> list[str]:
    """The operator's PodMonitor, PrometheusRule and ServiceMonitor CRDs, installed and
    Established."""
    directory = operator_crds_dir()
    names = []
    for path in sorted(directory.glob("*.yaml")):
        kubectl.run("apply", "--server-side", "--force-conflicts", "-f", str(path))
        names.append(yaml.safe_load(path.read_text())["metadata"]["name"])
    kubectl.run(
        "wait", "--for=condition=Established", "--timeout=60s",
        *(f"crd/{n}" for n in names),
    )  # fmt: skip
    return names


@pytest.fixture(scope="session")
def manifest_namespaces(api_client: client.ApiClient) -> list[str]:
    """The namespaces the manifests put objects in, created for real: a server-side dry
    run of a namespaced object needs its namespace to exist."""
    names = ["numa-exporter", "numa-harness", "numa-nrt-publisher", "kube-node-lease"]
    for name in names:
        ensure_namespace(api_client, name)
    return names


#: Kinds applied for real by ``harness_identities``: the accounts and what binds them.
IDENTITY_KINDS = frozenset(
    {
        "Namespace",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
    }
)


@pytest.fixture(scope="session")
def harness_identities(kubectl: Kubectl, manifest_namespaces: list[str]) -> list[str]:
    """manifests/harness's namespace, ServiceAccounts, RBAC and admission policy applied
    for real (the workloads are not: no controller-manager runs here to start them).
    Returns the ServiceAccount names."""
    objects = [o for o in kubectl.render(MANIFESTS / "harness") if o["kind"] in IDENTITY_KINDS]
    kubectl.run(
        "apply", "--server-side", "--force-conflicts", "-f", "-",
        stdin=yaml.safe_dump_all(objects),
    )  # fmt: skip
    return [o["metadata"]["name"] for o in objects if o["kind"] == "ServiceAccount"]
