"""The exporter installed with its Helm chart on the Kind node (issue 21, item 3): ``helm
install`` of charts/numa-exporter under a release and namespace of its own, with the
local image, and the chart's exporter annotates a Guaranteed pod with the CPUs the real
kubelet gave it (from the CPU Manager's checkpoint, mapped through the node's sysfs), as
the Kind exporter test (test_exporter_real_kubelet.py) checks for the kustomize install.
No other exporter runs meanwhile, so the annotation is this one's; ``helm uninstall``
removes every object it made, the cluster-scoped ones included."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest

from tests.helm.tools import CHARTS, Helm, helm_path
from tests.kind.cluster import KindCluster, _lib_value
from tests.kind.test_exporter_real_kubelet import (
    MEMORY_GROUPS,
    PLACEMENT,
    guaranteed_pod,
    numa_of_cpus,
    parse_cpulist,
    running_pod,
    wait_for,
)

pytestmark = [pytest.mark.kind, pytest.mark.timeout(900)]

RELEASE = "gpu"
NAMESPACE = "numa-helm"
NAME = "gpu-numa-exporter"
#: As manifests/overlays/kind-exporter: never on a fake node (no kubelet there).
NOT_ON_FAKE_NODES = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "fakenrt.io/fake-node", "operator": "DoesNotExist"}]}
            ]
        }
    }
}


def _exporters(kind: KindCluster) -> list[str]:
    found = kind.kubectl_json("daemonsets", "-A", "-l", "app.kubernetes.io/name=numa-exporter")
    return [f"{d['metadata']['namespace']}/{d['metadata']['name']}" for d in found["items"]]


@pytest.fixture(scope="module")
def helm(tmp_path_factory: pytest.TempPathFactory) -> Helm:
    return Helm(helm_path(), tmp_path_factory.mktemp("helm-home"))


@pytest.fixture(scope="module")
def release(
    kind: KindCluster, helm: Helm, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """The chart installed (helm install --wait) as the only exporter on the cluster;
    uninstalled afterwards if the test did not."""
    # The Kind exporter test's kustomize exporter (if it ran first in this session) would
    # write the same annotations: remove it, so what is checked is the chart's.
    kind.kubectl_run(
        "delete", "daemonset", "-A", "-l", "app.kubernetes.io/name=numa-exporter", "--wait=true",
        timeout=180.0,
    )  # fmt: skip
    repository, _, tag = _lib_value("PROJECT_IMAGE").rpartition(":")
    values = tmp_path_factory.mktemp("values") / "kind-values.yaml"
    values.write_text(
        json.dumps(
            {
                "image": {"repository": repository, "tag": tag, "pullPolicy": "Never"},
                "affinity": NOT_ON_FAKE_NODES,
                "priorityClassName": "system-node-critical",
                "metrics": {"port": 9464},
            }
        )
    )
    helm.run(
        "install", RELEASE, str(CHARTS / "numa-exporter"), "--namespace", NAMESPACE,
        "--create-namespace", "--values", str(values), "--wait", "--timeout", "3m",
        kubeconfig=kind.kubeconfig, timeout=240,
    )  # fmt: skip
    try:
        yield RELEASE
    finally:
        helm.run(
            "uninstall", RELEASE, "--namespace", NAMESPACE, "--ignore-not-found", "--wait",
            kubeconfig=kind.kubeconfig, timeout=180, check=False,
        )  # fmt: skip


@pytest.fixture
def namespace(kind: KindCluster) -> Iterator[str]:
    name = f"helm-{uuid.uuid4().hex[:8]}"
    kind.kubectl_run("create", "namespace", name)
    wait_for(
        "the default ServiceAccount",
        lambda: kind.kubectl_json("-n", name, "serviceaccounts")["items"] or None,
    )
    yield name
    kind.kubectl_run("delete", "namespace", name, "--wait=false")


def test_helm_install_annotates_a_pod_with_the_real_kubelets_cpus(
    kind: KindCluster, helm: Helm, release: str, namespace: str
) -> None:
    assert _exporters(kind) == [f"{NAMESPACE}/{NAME}"]
    ds = kind.kubectl_json("-n", NAMESPACE, "daemonset", NAME)
    assert ds["status"]["numberReady"] == ds["status"]["desiredNumberScheduled"] >= 1
    pod_spec = ds["spec"]["template"]["spec"]
    assert pod_spec["priorityClassName"] == "system-node-critical"
    assert "--metrics-bind-address=:9464" in pod_spec["containers"][0]["args"]

    # The node has one CPU to give exclusively: wait until an earlier test's pod (deleted
    # without waiting) has given it back.
    wait_for(
        "the CPU Manager to hold no exclusive CPUs",
        lambda: (
            not json.loads(kind.node_exec("cat", "/var/lib/kubelet/cpu_manager_state")).get(
                "entries"
            )
            or None
        ),
    )
    pod = guaranteed_pod("exclusive", 1)
    pod["spec"]["containers"][0]["image"] = _lib_value("PROJECT_IMAGE")  # the one loaded
    kind.kubectl_run("-n", namespace, "apply", "-f", "-", stdin=json.dumps(pod))
    obj = running_pod(kind, namespace, "exclusive")
    state = json.loads(kind.node_exec("cat", "/var/lib/kubelet/cpu_manager_state"))
    cpus = parse_cpulist(state["entries"][obj["metadata"]["uid"]]["work"])
    assert len(cpus) == 1
    numa = numa_of_cpus(kind)
    zones: dict[int, int] = {}
    for cpu in cpus:
        zones[numa[cpu]] = zones.get(numa[cpu], 0) + 1
    expected = [
        {"zone": f"node-{zone}", "amount": {"cpu": str(count)}}
        for zone, count in sorted(zones.items())
    ]

    def annotation(key: str) -> str | None:
        got = kind.kubectl_json("-n", namespace, "pod", "exclusive")
        value: str | None = got["metadata"].get("annotations", {}).get(key)
        return value

    assert (
        json.loads(wait_for("the chart's exporter's placement", lambda: annotation(PLACEMENT)))
        == expected
    )
    assert json.loads(wait_for("memory groups", lambda: annotation(MEMORY_GROUPS))) == []
    # The release's admission policies (annotations, DRAMisaligned events) are installed
    # and name this release's account.
    for policy_name in ("observed-annotations-only", "own-events-only"):
        policy = kind.kubectl_json("validatingadmissionpolicy", f"{NAME}-{policy_name}")
        assert (
            f'"system:serviceaccount:{NAMESPACE}:{NAME}"'
            in policy["spec"]["matchConditions"][0]["expression"]
        )

    # helm uninstall removes every object the release made, the cluster-scoped ones too.
    helm.run(
        "uninstall", release, "--namespace", NAMESPACE, "--wait", "--timeout", "2m",
        kubeconfig=kind.kubeconfig, timeout=180,
    )  # fmt: skip
    left = kind.kubectl_run(
        "get", "daemonset,serviceaccount,clusterrole,clusterrolebinding,"
        "validatingadmissionpolicy,validatingadmissionpolicybinding",
        "-A", "-l", f"app.kubernetes.io/instance={release}", "-o", "name",
    )  # fmt: skip
    assert left.strip() == ""
