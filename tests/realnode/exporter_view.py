"""The exporter on a real kubelet: the daemon itself (``exporter.daemon.Exporter``, in this
process) against a real-kubelet worker's podresources socket, its machine's sysfs files
and the Kind API server (the ResourceSlices the fake DRA plugin published, the pods the
scenario ran). What it observed - each DRA pod's devices per NUMA zone in its observed
placement, the pods its metric names misaligned and its DRAMisaligned Events - is
compared by the oracle with the kubelet's own listing (tests/realnode/oracle_run.py)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

from exporter.annotations import OBSERVED_PLACEMENT, parse_placement
from exporter.daemon import Exporter, Options
from exporter.kubeclient import path
from fakenrt.commands.kubeaccess import kube_client
from tests.realnode.realkubelet import RealKubeletNode

SETTLE_PASSES = 5
TIMEOUT_S = 90.0


@dataclass(frozen=True)
class ExporterView:
    #: pod key -> NUMA node -> resource -> amount, from the observed annotations
    placements: Mapping[str, Mapping[int, Mapping[str, int]]]
    #: pod keys ``numa_exporter_dra_pod_misaligned`` names
    misaligned: frozenset[str]
    #: ``numa_exporter_dra_devices`` by rule
    rules: Mapping[str, int]
    #: pod key -> how many DRAMisaligned Events the exporter recorded about it
    events: Mapping[str, int]


def _misaligned(exporter: Exporter) -> frozenset[str]:
    return frozenset(
        f"{s.labels['namespace']}/{s.labels['pod']}"
        for family in exporter.registry.collect()
        if family.name == "numa_exporter_dra_pod_misaligned"
        for s in family.samples
    )


def _count(exporter: Exporter, name: str, **labels: str) -> float:
    return exporter.registry.get_sample_value(name, labels) or 0.0


def observe(real: RealKubeletNode, namespace: str) -> ExporterView:
    """Run the exporter on ``real`` until what it reports holds for SETTLE_PASSES passes
    in a row (the slices read, every pod written), and read it."""
    kube = kube_client(real.kubeconfig, component="numa-exporter")
    options = Options(
        node_name=real.node,
        podresources_socket=real.socket,
        sysfs_root=real.work_dir / "nodes" / real.node / "sys",
        poll_interval_s=0.2,
        metrics_bind_address="127.0.0.1:0",
    )
    exporter = Exporter(options, kube)
    exporter.start()
    try:
        deadline = time.monotonic() + TIMEOUT_S
        if not exporter.slices.synced.wait(TIMEOUT_S):
            raise AssertionError("the exporter never listed the node's ResourceSlices")
        last: tuple[object, ...] = ()
        stable_since = 0.0
        while True:
            passes = _count(exporter, "numa_exporter_reconcile_duration_seconds_count")
            state = (
                _misaligned(exporter),
                _count(exporter, "numa_exporter_annotation_patches_total", result="applied"),
                exporter.slices.generation,
            )
            if state != last:
                last, stable_since = state, passes
            elif passes - stable_since >= SETTLE_PASSES and passes > SETTLE_PASSES:
                break
            if time.monotonic() > deadline:
                raise AssertionError("the exporter's view did not settle")
            time.sleep(0.1)
        rules = {
            s.labels["rule"]: int(s.value)
            for family in exporter.registry.collect()
            if family.name == "numa_exporter_dra_devices"
            for s in family.samples
        }
        misaligned = _misaligned(exporter)
    finally:
        exporter.stop()
    pods, _ = kube.list_all(
        path("api", "v1", "namespaces", namespace, "pods"),
        fieldSelector=f"spec.nodeName={real.node}",
    )
    placements: dict[str, dict[int, dict[str, int]]] = {}
    #: the scenario's pods (earlier scenarios' pods of the same names had other uids)
    uids = {pod["metadata"]["name"]: pod["metadata"]["uid"] for pod in pods}
    for pod in pods:
        value = (pod["metadata"].get("annotations") or {}).get(OBSERVED_PLACEMENT)
        if value is not None:
            key = f"{namespace}/{pod['metadata']['name']}"
            placements[key] = {z.numa_id: dict(z.amounts) for z in parse_placement(value)}
    items, _ = kube.list_all(path("api", "v1", "namespaces", namespace, "events"))
    events: dict[str, int] = {}
    for event in items:
        involved = event.get("involvedObject") or {}
        if event.get("reason") == "DRAMisaligned" and uids.get(
            involved.get("name")
        ) == involved.get("uid"):
            key = f"{namespace}/{involved['name']}"
            events[key] = events.get(key, 0) + 1
    kube.close()
    return ExporterView(placements, misaligned, rules, events)
