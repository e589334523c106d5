"""Issue 11, item 1, on the real control plane: the reference scheduler (reconstruction on,
the default) and the simulated kubelet (``fakenrt controller``) agree on nodes whose
capacity is held by pods the scheduler never placed.

Four fake nodes; one has foreign ``allocated`` amounts (the controller makes them pods);
all are pre-fragmented by pods bound directly (``spec.nodeName``, no scheduler) and no
exporter runs, so none of those pods carries a placement annotation. The NRT lags
(``nrt_delay``), so after each bind it is not current for a while. Then a burst of 16 GPU
pods: the scheduler may bind a pod only where it knows the free zones - NRT when its pod
fingerprint says it is current, else its own reconstruction, deferring NUMA-sensitive pods
on a node where some pod holds resources at unknown zones. No pod may be rejected by the
kubelet.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from prometheus_client import CollectorRegistry

from exporter.kubeclient import KubeClient
from exporter.kubesettings import from_kubeconfig
from fakenrt.kubelet.foreign import FOREIGN_NAMESPACE, foreign_pod_name
from fakenrt.profiles.parsing import parse_profiles
from fakenrt.scheduler.backoff import Backoff
from fakenrt.scheduler.kube import KubeCluster
from fakenrt.scheduler.loop import Scheduler
from fakenrt.scheduler.metrics import SchedulerMetrics
from fakenrt.scheduler.plugin import NumaPlugin
from tests.controller.harness import get_pod, running, wait_for
from tests.controlplane.cluster import ControlPlane
from tests.controlplane.helpers import ensure_namespace

pytestmark = [pytest.mark.controlplane, pytest.mark.usefixtures("nrt_crd")]

GPU = "nvidia.com/gpu"


def node(name: str, label: str, policy: str, allocated: dict[str, Any] | None) -> dict[str, Any]:
    zone = {"cpus": "", "memory": "64Gi", "devices": {GPU: 4}}
    zones = []
    for i in range(2):
        z = dict(zone, id=i, cpus=f"{i * 16}-{i * 16 + 15}")
        if allocated and i == 0:
            z["allocated"] = allocated
        zones.append(z)
    return {
        "name": name,
        "labels": {"numa-test": label},
        "kubelet": {"topologyManagerPolicy": policy, "memoryManagerPolicy": "None"},
        "zones": zones,
    }


def pod(name: str, *, gpu: int, cpu: int, node: str | None, scheduler: str) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "tolerations": [{"operator": "Exists"}],
        "containers": [
            {
                "name": "main",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"limits": {"cpu": str(cpu), "memory": "4Gi", GPU: str(gpu)}},
            }
        ],
    }
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


@pytest.fixture
def kube(control_plane: ControlPlane) -> KubeClient:
    return KubeClient(from_kubeconfig(control_plane.kubeconfig))


@pytest.fixture
def label(api_client: client.ApiClient) -> Iterator[str]:
    value = f"frag-{uuid.uuid4().hex[:6]}"
    yield value
    core = client.CoreV1Api(api_client)
    for n in core.list_node(label_selector=f"numa-test={value}").items:
        core.delete_node(n.metadata.name)


def test_a_burst_on_pre_fragmented_nodes_without_exporter_gets_no_rejection(
    api_client: client.ApiClient, kube: KubeClient, namespace: str, label: str
) -> None:
    ensure_namespace(api_client, FOREIGN_NAMESPACE)  # its default ServiceAccount
    names = [f"{label}-{i}" for i in range(4)]
    profiles = parse_profiles(
        {
            "nodes": [
                node(names[0], label, "restricted", {"cpu": 8, "memory": "16Gi", GPU: 1}),
                node(names[1], label, "restricted", None),
                node(names[2], label, "single-numa-node", None),
                node(names[3], label, "single-numa-node", None),
            ]
        },
        source="test",
    )
    core = client.CoreV1Api(api_client)
    scheduler_name = f"numa-{label}"
    with running(kube, profiles, taint=False, nrt_delay=0.5, nrt_refresh=0) as controller:
        # The foreign pod of names[0] zone 0 exists, bound, Running.
        def foreign_running() -> bool:
            p = get_pod(kube, FOREIGN_NAMESPACE, foreign_pod_name(names[0], 0))
            return bool(p.get("status", {}).get("phase") == "Running")

        wait_for(foreign_running, what="the foreign pod runs")
        # Pre-fragment, with pods bound without any scheduler (no annotations): node 1
        # keeps one free GPU per zone, nodes 0, 2 and 3 one full(ish) zone.
        pre = {names[0]: (3,), names[1]: (3, 3), names[2]: (3,), names[3]: (3,)}
        for n, sizes in pre.items():
            for j, gpus in enumerate(sizes):
                core.create_namespaced_pod(
                    namespace, pod(f"pre-{n}-{j}", gpu=gpus, cpu=2, node=n, scheduler="none")
                )

        def all_running(prefix: str, count: int) -> bool:
            pods = [
                p
                for p in core.list_namespaced_pod(namespace).items
                if p.metadata.name.startswith(prefix)
            ]
            return len(pods) == count and all(p.status.phase == "Running" for p in pods)

        wait_for(lambda: all_running("pre-", 5), what="the pre-fragmenting pods run")
        # The burst: 8 pods of 2 GPUs. 16 GPUs are free (4 + 2 + 5 + 5) but only 6 pairs
        # in one zone: node 1's two free GPUs are one per zone (a whole-node view, or a
        # reconstruction blind to the pre-fragmenting pods, sends a pair there).
        for i in range(8):
            core.create_namespaced_pod(
                namespace, pod(f"burst-{i:02d}", gpu=2, cpu=4, node=None, scheduler=scheduler_name)
            )
        loop = Scheduler(
            cluster=KubeCluster(
                kube, scheduler_name=scheduler_name, node_selector=f"numa-test={label}"
            ),
            plugin=NumaPlugin(),
            scheduler_name=scheduler_name,
            metrics=SchedulerMetrics(CollectorRegistry()),
            clock=time.monotonic,
            backoff=Backoff(initial=0.2, maximum=0.5),
        )
        deferred = 0
        bound_so_far = -1
        quiet_since = time.monotonic()
        while time.monotonic() - quiet_since < 4.0:  # until 4 s without a new bind
            report = loop.run_cycle()
            deferred += sum("deferred" in why for why in report.unschedulable.values())
            bound_now = sum(
                1
                for p in core.list_namespaced_pod(namespace).items
                if p.metadata.name.startswith("burst-") and p.spec.node_name
            )
            if bound_now != bound_so_far:
                bound_so_far, quiet_since = bound_now, time.monotonic()
            time.sleep(0.2)
        wait_for(
            lambda: all(
                p.status.phase in ("Running", "Failed")
                for p in core.list_namespaced_pod(namespace).items
                if p.spec.node_name
            ),
            what="every bound pod admitted or rejected",
        )
        pods = core.list_namespaced_pod(namespace).items
        failed = [(p.metadata.name, p.status.reason) for p in pods if p.status.phase == "Failed"]
        assert failed == []
        bound = [p for p in pods if p.metadata.name.startswith("burst-") and p.spec.node_name]
        assert len(bound) == 6, ([p.metadata.name for p in bound], deferred)
        assert names[1] not in {p.spec.node_name for p in bound}
        assert controller.stats()["rejected"] == 0
