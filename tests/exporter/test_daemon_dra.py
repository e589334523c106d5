"""The daemon's DRA view against the real API server (the node's ResourceSlices) and a
fake podresources server listing ``dynamic_resources``: each allocated device placed by
the rule that answers (the standard numaNode attribute, a known driver's own, the PCI
address through sysfs), counted in the observed placement under its driver's name, a
misaligned pod named in the metrics, and placements that follow a republished pool."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from exporter.annotations import OBSERVED_MEMORY_GROUPS, OBSERVED_PLACEMENT
from exporter.dra_numa import RULE_DRIVER, RULE_NONE, RULE_PCI, RULE_STANDARD
from exporter.kube_slices import SLICES
from exporter.kubeclient import path
from exporter.resources import ClaimDevice, ClaimResources, ContainerResources, PodResources
from tests.controller.conftest import admin_kube
from tests.controlplane.cluster import ControlPlane
from tests.exporter.kube_helpers import create_pod, wait_until
from tests.exporter.test_daemon import Daemon, make_daemon  # noqa: F401 (its fixture)

pytestmark = pytest.mark.controlplane

NVIDIA, AMD = "gpu.nvidia.com", "gpu.amd.com"
STANDARD = "resource.kubernetes.io/numaNode"


def nvidia_slice(node: str, *, gpu1_numa: int, generation: int) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-nvidia"},
        "spec": {
            "driver": NVIDIA,
            "nodeName": node,
            "pool": {"name": node, "generation": generation, "resourceSliceCount": 1},
            "devices": [
                {"name": "gpu-0", "attributes": {STANDARD: {"int": 0}}},
                {"name": "gpu-1", "attributes": {STANDARD: {"int": gpu1_numa}}},
                # the driver's own PCI address attribute only: sysfs says NUMA node 1
                {"name": "gpu-2", "attributes": {"pcieBusID": {"string": "0000:81:00.0"}}},
            ],
        },
    }


def amd_slice(node: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-amd"},
        "spec": {
            "driver": AMD,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": "amd-0", "attributes": {"numaNode": {"int": 0}}}],
        },
    }


def claimed(
    namespace: str, name: str, cpus: tuple[int, ...], *, driver: str, device: str, node: str
) -> PodResources:
    claim = ClaimResources(
        f"{name}-claim",
        namespace,
        (ClaimDevice(driver, node, device, (f"k8s.{driver}/device={device}",)),),
    )
    return PodResources(
        namespace, name, (ContainerResources("main", cpu_ids=cpus, dynamic=(claim,)),)
    )


def placement(*zones: str) -> dict[str, str]:
    return {OBSERVED_PLACEMENT: f"[{','.join(zones)}]", OBSERVED_MEMORY_GROUPS: "[]"}


def test_dra_devices_are_placed_counted_and_a_misaligned_pod_is_named(
    request: pytest.FixtureRequest,
    control_plane: ControlPlane,
    sysfs_root: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    pci = sysfs_root / "bus" / "pci" / "devices" / "0000:81:00.0"
    pci.mkdir(parents=True)
    (pci / "numa_node").write_text("1\n")
    kube = admin_kube(control_plane.server, control_plane)
    caplog.set_level(logging.WARNING, logger="exporter.dra_observer")
    make: Callable[..., Daemon] = request.getfixturevalue("make_daemon")
    d = make()
    kube.create(SLICES, nvidia_slice(d.node, gpu1_numa=1, generation=1))
    kube.create(SLICES, amd_slice(d.node))
    try:
        # by the first list or by the watch, whichever came first for this daemon
        wait_until(lambda: len(d.exporter.slices.held()) == 2, what="the slices cached")
        ns = d.namespace
        d.fake.set_pods(
            [
                claimed(
                    ns, "far", (0, 1, 2, 3), driver=NVIDIA, device="gpu-1", node=d.node
                ),  # CPUs node 0, GPU 1
                claimed(ns, "near", (8, 9), driver=NVIDIA, device="gpu-2", node=d.node),
                claimed(ns, "amd", (4,), driver=AMD, device="amd-0", node=d.node),
            ]
        )
        for name in ("far", "near", "amd"):
            create_pod(d.api, ns, name, node=d.node)
        far_before = placement(
            '{"zone":"node-0","amount":{"cpu":"4"}}',
            '{"zone":"node-1","amount":{"gpu.nvidia.com":"1"}}',
        )
        wait_until(d.annotated("far", far_before), what="far annotated")
        near = placement('{"zone":"node-1","amount":{"cpu":"2","gpu.nvidia.com":"1"}}')
        wait_until(d.annotated("near", near), what="near annotated")
        amd = placement('{"zone":"node-0","amount":{"cpu":"1","gpu.amd.com":"1"}}')
        wait_until(d.annotated("amd", amd), what="amd annotated")

        assert d.metric("numa_exporter_dra_pod_misaligned", namespace=ns, pod="far") == 1
        assert d.metric("numa_exporter_dra_misaligned_pods") == 1
        rules = {
            r: d.metric("numa_exporter_dra_devices", rule=r)
            for r in (RULE_STANDARD, RULE_DRIVER, RULE_PCI, RULE_NONE)
        }
        assert rules == {RULE_STANDARD: 1, RULE_DRIVER: 1, RULE_PCI: 1, RULE_NONE: 0}
        (line,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert line.startswith(f"pod {ns}/far runs misaligned: container main: DRA device ")

        # and one Event on the pod, with the same words
        def events() -> list[dict[str, Any]]:
            items, _ = kube.list_all(
                path("api", "v1", "namespaces", ns, "events"),
                fieldSelector="involvedObject.name=far",
            )
            return [e for e in items if e["reason"] == "DRAMisaligned"]

        (event,) = wait_until(events, what="the DRAMisaligned event")
        assert (event["type"], event["message"]) == ("Warning", line)
        assert event["source"] == {"component": "numa-exporter", "host": d.node}

        # the driver republishes its pool with gpu-1 on NUMA node 0: far is aligned now
        moved = nvidia_slice(d.node, gpu1_numa=0, generation=2)
        current = kube.get(f"{SLICES}/{d.node}-nvidia")
        moved["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        kube.replace(f"{SLICES}/{d.node}-nvidia", moved)
        far_after = placement('{"zone":"node-0","amount":{"cpu":"4","gpu.nvidia.com":"1"}}')
        wait_until(d.annotated("far", far_after), what="far annotated again")
        wait_until(lambda: d.metric("numa_exporter_dra_misaligned_pods") == 0, what="far aligned")
        assert len(events()) == 1  # once per pod
        series = {"namespace": ns, "pod": "far"}
        assert (
            d.exporter.registry.get_sample_value("numa_exporter_dra_pod_misaligned", series) is None
        )
    finally:
        for name in (f"{d.node}-nvidia", f"{d.node}-amd"):
            kube.delete(f"{SLICES}/{name}")
