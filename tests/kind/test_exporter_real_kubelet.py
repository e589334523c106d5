"""The Kind exporter test: the production exporter DaemonSet on a real Kind node, against the real
kubelet (static CPU Manager, kind/cluster.yaml).

The exporter (manifests/exporter via the manifests/overlays/kind-exporter overlay: only the
image, its pull policy, fake-node anti-affinity and the Prometheus Operator objects
differ) must annotate a Guaranteed integer-CPU pod with the CPUs the real kubelet gave it,
per NUMA zone. The expected value is derived from the
kubelet itself, never a constant: the exclusive CPUs its podresources API lists for the
pod (read over the kubelet's socket from inside the exporter's pod, with the generated
stubs only), cross-checked against the CPU Manager's checkpoint (cpu_manager_state), and
mapped to NUMA nodes through the node's sysfs.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest

from tests.kind.cluster import REPO_ROOT, KindCluster, KindError

pytestmark = [pytest.mark.kind, pytest.mark.timeout(900)]

PLACEMENT = "kai.scheduler/numa-placement-observed"
MEMORY_GROUPS = "kai.scheduler/numa-memory-groups-observed"
EXPORTER_NS = "numa-exporter"
IMAGE = "numa-testkit/numa-testkit:local"
WAIT_S = 180.0

# Runs inside the exporter's container (which mounts the kubelet's podresources
# directory): asks the real kubelet for every pod's resources with the generated stubs.
PODRESOURCES_LIST = """
import json, grpc
from protos.podresources.v1 import api_pb2, api_pb2_grpc
channel = grpc.insecure_channel("unix:///var/lib/kubelet/pod-resources/kubelet.sock")
stub = api_pb2_grpc.PodResourcesListerStub(channel)
reply = stub.List(api_pb2.ListPodResourcesRequest(), timeout=10)
print(json.dumps([
    {"namespace": p.namespace, "name": p.name, "containers": [
        {"name": c.name, "cpu_ids": list(c.cpu_ids), "memory_blocks": len(c.memory)}
        for c in p.containers]}
    for p in reply.pod_resources]))
"""

# Prints "<numa node> <cpulist>" for each NUMA node of the Kind node (the host's sysfs).
NODE_CPULISTS = (
    'for d in /sys/devices/system/node/node[0-9]*; do echo "${d##*node} $(cat "$d/cpulist")"; done'
)

T = TypeVar("T")


def wait_for(what: str, probe: Callable[[], T | None], timeout: float = WAIT_S) -> T:
    """Polls probe until it returns something other than None."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value is not None:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(1.0)


def parse_cpulist(text: str) -> set[int]:
    """The kernel's cpulist format ("0-3,8"), parsed independently of the exporter's."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        if not part:
            continue
        low, _, high = part.partition("-")
        cpus.update(range(int(low), int(high or low) + 1))
    return cpus


def guaranteed_pod(name: str, cpus: int) -> dict[str, Any]:
    amount = {"cpu": str(cpus), "memory": "32Mi"}
    return pod(name, {"requests": amount, "limits": amount})


def pod(name: str, resources: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {
                    "name": "work",
                    "image": IMAGE,
                    "imagePullPolicy": "Never",
                    "command": ["sleep", "infinity"],
                    "resources": resources,
                }
            ],
        },
    }


@pytest.fixture(scope="module")
def exporter(kind: KindCluster) -> str:
    """The exporter DaemonSet applied from manifests/overlays/kind-exporter and rolled out;
    its pod's name."""
    kind.kubectl_run("apply", "-k", str(REPO_ROOT / "manifests" / "overlays" / "kind-exporter"))
    kind.kubectl_run(
        "-n",
        EXPORTER_NS,
        "rollout",
        "status",
        "daemonset/numa-exporter",
        "--timeout=180s",
        timeout=200.0,
    )
    pods = kind.kubectl_json(
        "-n", EXPORTER_NS, "pods", "-l", "app.kubernetes.io/name=numa-exporter"
    )
    running = [p for p in pods["items"] if p["status"].get("phase") == "Running"]
    assert len(running) == 1, f"expected one running exporter pod, got {pods['items']}"
    return str(running[0]["metadata"]["name"])


@pytest.fixture
def namespace(kind: KindCluster) -> Iterator[str]:
    name = f"g-{uuid.uuid4().hex[:8]}"
    kind.kubectl_run("create", "namespace", name)
    # Pods are admitted only once the namespace's default ServiceAccount exists.
    wait_for("the default ServiceAccount", lambda: _exists(kind, "-n", name, "sa", "default"))
    yield name
    kind.kubectl_run("delete", "namespace", name, "--wait=false")


def _exists(kind: KindCluster, *args: str) -> bool | None:
    try:
        kind.kubectl_run("get", *args)
    except KindError:
        return None
    return True


def running_pod(kind: KindCluster, namespace: str, name: str) -> dict[str, Any]:
    def probe() -> dict[str, Any] | None:
        obj: dict[str, Any] = kind.kubectl_json("-n", namespace, "pod", name)
        phase = obj["status"].get("phase")
        assert phase in ("Pending", "Running"), f"pod {namespace}/{name}: {obj['status']}"
        return obj if phase == "Running" else None

    return wait_for(f"pod {namespace}/{name} Running", probe)


def kubelet_podresources(kind: KindCluster, exporter_pod: str) -> list[dict[str, Any]]:
    out = kind.kubectl_run(
        "-n",
        EXPORTER_NS,
        "exec",
        exporter_pod,
        "-c",
        "exporter",
        "--",
        "python3",
        "-c",
        PODRESOURCES_LIST,
    )
    listed: list[dict[str, Any]] = json.loads(out)
    return listed


def numa_of_cpus(kind: KindCluster) -> dict[int, int]:
    """CPU id -> NUMA node, from the node's sysfs."""
    out = kind.node_exec("sh", "-c", NODE_CPULISTS)
    mapping: dict[int, int] = {}
    for line in out.splitlines():
        node, _, cpulist = line.partition(" ")
        for cpu in parse_cpulist(cpulist):
            mapping[cpu] = int(node)
    assert mapping, f"no NUMA nodes in the node's sysfs: {out!r}"
    return mapping


def test_exporter_annotates_guaranteed_pod_with_the_real_kubelets_cpus(
    kind: KindCluster, exporter: str, namespace: str
) -> None:
    kind.kubectl_run(
        "-n", namespace, "apply", "-f", "-", stdin=json.dumps(guaranteed_pod("exclusive", 1))
    )
    shared = pod("shared", {"requests": {"cpu": "10m", "memory": "16Mi"}})
    kind.kubectl_run("-n", namespace, "apply", "-f", "-", stdin=json.dumps(shared))
    exclusive_obj = running_pod(kind, namespace, "exclusive")
    running_pod(kind, namespace, "shared")
    assert exclusive_obj["status"]["qosClass"] == "Guaranteed"

    # The real kubelet's answer: podresources over its socket ...
    def listed_cpus() -> list[int] | None:
        for entry in kubelet_podresources(kind, exporter):
            if entry["namespace"] == namespace and entry["name"] == "exclusive":
                (container,) = entry["containers"]
                assert container["memory_blocks"] == 0  # Memory Manager policy None
                return sorted(container["cpu_ids"]) or None
        return None

    cpu_ids = wait_for("the kubelet to list the pod's exclusive CPUs", listed_cpus)
    assert len(cpu_ids) == 1, f"a pod of 1 integer CPU got {cpu_ids} from the static CPU Manager"
    # ... and the CPU Manager's own checkpoint agree.
    state = json.loads(kind.node_exec("cat", "/var/lib/kubelet/cpu_manager_state"))
    assert state["policyName"] == "static"
    uid = exclusive_obj["metadata"]["uid"]
    assert parse_cpulist(state["entries"][uid]["work"]) == set(cpu_ids)
    assert not set(cpu_ids) & parse_cpulist(state["defaultCpuSet"])

    numa = numa_of_cpus(kind)
    zones: dict[int, int] = {}
    for cpu in cpu_ids:
        zones[numa[cpu]] = zones.get(numa[cpu], 0) + 1
    expected = [
        {"zone": f"node-{zone}", "amount": {"cpu": str(count)}}
        for zone, count in sorted(zones.items())
    ]

    def annotations(name: str, key: str) -> str | None:
        obj = kind.kubectl_json("-n", namespace, "pod", name)
        value: str | None = obj["metadata"].get("annotations", {}).get(key)
        return value

    placement = wait_for(
        "the exporter's placement annotation", lambda: annotations("exclusive", PLACEMENT)
    )
    assert json.loads(placement) == expected
    assert (
        json.loads(wait_for("memory groups", lambda: annotations("exclusive", MEMORY_GROUPS))) == []
    )
    # The Burstable pod holds no exclusive CPUs: the exporter has seen it (it writes the
    # memory groups on every pod the kubelet runs) and gives it no placement.
    assert json.loads(wait_for("memory groups", lambda: annotations("shared", MEMORY_GROUPS))) == []
    assert annotations("shared", PLACEMENT) is None
