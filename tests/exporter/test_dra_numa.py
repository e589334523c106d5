"""A DRA device's NUMA node from the node's ResourceSlices: each rule, their order, the
slices' generations, the sysfs PCI lookup (bounded, never a path from the API), and the
devices in the observed placement and in the misaligned report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from exporter.dra_alignment import pod_misalignments
from exporter.dra_numa import (
    RULE_DRIVER,
    RULE_NONE,
    RULE_PCI,
    RULE_STANDARD,
    DeviceNuma,
    index_slices,
    resolve,
)
from exporter.placement import derive_placement
from exporter.resources import (
    ClaimDevice,
    ClaimResources,
    ContainerResources,
    MemoryBlock,
    PodResources,
)
from exporter.sysfs import read_pci_numa_node
from fakenrt.dra.slices import resource_slices
from fakenrt.profiles import parse_profiles
from fakenrt.sysfs import write_sysfs

STANDARD = "resource.kubernetes.io/numaNode"
PCI = {"0000:3b:00.0": 1, "0000:5e:00.0": -1}


def _pci(address: str) -> int | None:
    return PCI.get(address)


@pytest.mark.parametrize(
    ("driver", "attributes", "expected"),
    [
        pytest.param(
            "gpu.nvidia.com",
            {STANDARD: 1, "gpu.nvidia.com/numa": 0, "resource.kubernetes.io/pciBusID": "x"},
            DeviceNuma(1, RULE_STANDARD, STANDARD),
            id="standard-first",
        ),
        pytest.param(
            "gpu.amd.com",
            {"gpu.amd.com/numaNode": 0},
            DeviceNuma(0, RULE_DRIVER, "gpu.amd.com/numaNode"),
            id="known-driver",
        ),
        pytest.param(
            "dra.cpu",
            {"dra.cpu/numaNodeID": 1},
            DeviceNuma(1, RULE_DRIVER, "dra.cpu/numaNodeID"),
            id="cpu-driver",
        ),
        pytest.param(
            "nic.example.com",
            {"nic.example.com/numaNode": 0, "resource.kubernetes.io/pciBusID": "0000:3B:00.0"},
            DeviceNuma(1, RULE_PCI, "0000:3b:00.0"),
            id="unknown-driver-pci",
        ),
        pytest.param(
            "gpu.nvidia.com",
            {"gpu.nvidia.com/pcieBusID": "0000:3b:00.0"},
            DeviceNuma(1, RULE_PCI, "0000:3b:00.0"),
            id="nvidia-own-pci-address",
        ),
        pytest.param(
            "gpu.nvidia.com",
            {"resource.kubernetes.io/pciBusID": "0000:5e:00.0"},
            DeviceNuma(None, RULE_NONE, "0000:5e:00.0"),
            id="pci-without-affinity",
        ),
        pytest.param(
            "gpu.nvidia.com",
            {"resource.kubernetes.io/pciBusID": "0000:01:00.0"},
            DeviceNuma(None, RULE_NONE, ""),
            id="pci-unknown-to-sysfs",
        ),
        pytest.param(
            "gpu.nvidia.com",
            {"resource.kubernetes.io/pciBusID": "../../../etc/passwd"},
            DeviceNuma(None, RULE_NONE, ""),
            id="not-an-address",
        ),
        pytest.param("gpu.nvidia.com", {STANDARD: 64}, DeviceNuma(None, RULE_NONE, ""), id="huge"),
        pytest.param("gpu.nvidia.com", {STANDARD: True}, DeviceNuma(None, RULE_NONE), id="bool"),
        pytest.param("gpu.nvidia.com", {}, DeviceNuma(None, RULE_NONE), id="nothing"),
        pytest.param("gpu.nvidia.com", None, DeviceNuma(None, RULE_NONE), id="no-device"),
    ],
)
def test_rules(driver: str, attributes: dict[str, Any] | None, expected: DeviceNuma) -> None:
    assert resolve(driver, attributes, _pci) == expected


def _slice(pool: str, generation: int, *devices: dict[str, Any]) -> dict[str, Any]:
    spec = {"driver": "gpu.nvidia.com", "pool": {"name": pool, "generation": generation}}
    return {"spec": {**spec, "devices": list(devices)}}


def test_only_the_newest_generation_of_a_pool_counts() -> None:
    old = _slice("n1", 1, {"name": "gpu-0", "attributes": {"numa": {"int": 0}}})
    new = _slice("n1", 2, {"name": "gpu-0", "attributes": {"numa": {"int": 1}}})
    twice = _slice("n1", 2, {"name": "gpu-0"})
    other = _slice("n2", 1, {"name": "gpu-0", "attributes": {STANDARD: {"int": 0}}})
    index = index_slices([old, new, other])
    # a bare name is in the driver's domain
    assert index[("gpu.nvidia.com", "n1", "gpu-0")] == {"gpu.nvidia.com/numa": 1}
    assert index[("gpu.nvidia.com", "n2", "gpu-0")] == {STANDARD: 0}
    assert index_slices([new, twice])[("gpu.nvidia.com", "n1", "gpu-0")] is None
    assert index_slices([{"spec": "x"}, {}, {"spec": {"driver": 1}}]) == {}


def test_the_fake_nodes_slices_and_sysfs_answer_every_rule(tmp_path: Path) -> None:
    """fakenrt publishes what a driver would: each publish setting lands on one rule."""
    (profile,) = parse_profiles(
        {
            "nodes": [
                {
                    "name": "n1",
                    "dra": {
                        "drivers": {"nic.example.com": {"publish": ["pciBusID"]}},
                        "cpu": {"publish": ["driverNumaNode"]},
                    },
                    "zones": [
                        {"id": 0, "cpus": "0-1", "memory": 0, "dra": {"gpu.nvidia.com": 1}},
                        {
                            "id": 1,
                            "cpus": "2-3",
                            "memory": 0,
                            "dra": {"gpu.amd.com": 1, "nic.example.com": 1},
                        },
                    ],
                }
            ]
        },
        source="t",
    )
    write_sysfs(tmp_path, profile)
    index = index_slices(resource_slices(profile))

    def where(driver: str, device: str) -> DeviceNuma:
        return resolve(
            driver,
            index[(driver, "n1", device)],
            lambda address: read_pci_numa_node(tmp_path, address),
        )

    assert where("gpu.nvidia.com", "gpu-0") == DeviceNuma(0, RULE_STANDARD, STANDARD)
    assert where("gpu.amd.com", "gpu-0-128").rule == RULE_DRIVER
    assert where("gpu.amd.com", "gpu-0-128").numa == 1
    assert where("nic.example.com", "nic-0") == DeviceNuma(1, RULE_PCI, "0001:01:01.0")
    assert where("dra.cpu", "cpudevnuma001") == DeviceNuma(1, RULE_DRIVER, "dra.cpu/numaNodeID")


def test_pci_numa_node_reading_is_bounded(tmp_path: Path) -> None:
    device = tmp_path / "bus/pci/devices/0000:3b:00.0"
    device.mkdir(parents=True)
    (device / "numa_node").write_text("1\n")
    assert read_pci_numa_node(tmp_path, "0000:3b:00.0") == 1
    (device / "numa_node").write_text("-1\n")
    assert read_pci_numa_node(tmp_path, "0000:3b:00.0") == -1
    (device / "numa_node").write_text("1" * 100)
    assert read_pci_numa_node(tmp_path, "0000:3b:00.0") is None
    (device / "numa_node").write_text("one")
    assert read_pci_numa_node(tmp_path, "0000:3b:00.0") is None
    assert read_pci_numa_node(tmp_path, "0000:3c:00.0") is None
    assert read_pci_numa_node(tmp_path, "../../etc") is None


def _gpu(device: str, share: str | None = None, driver: str = "gpu.nvidia.com") -> ClaimDevice:
    return ClaimDevice(driver, "n1", device, (f"k8s.{driver}/device={device}",), share)


NUMA_OF = {"gpu-0": 0, "gpu-1": 0, "gpu-2": 1, "cpudevnuma001": 1}


def _numa(device: ClaimDevice) -> int | None:
    return NUMA_OF.get(device.device)


def test_dra_devices_count_in_their_zone_under_the_drivers_name() -> None:
    shared = ClaimResources("c-shared", "ns", (_gpu("gpu-2"),))
    pod = PodResources(
        "ns",
        "p",
        (
            ContainerResources(
                "a",
                cpu_ids=(0, 1),
                dynamic=(ClaimResources("c1", "ns", (_gpu("gpu-0"), _gpu("gpu-9"))), shared),
            ),
            ContainerResources("b", dynamic=(shared,)),  # one claim, two containers
        ),
    )
    placement = derive_placement(pod, {0: 0, 1: 0}, dra_numa=_numa)
    amounts = {z.numa_id: dict(z.amounts) for z in placement.zones}
    assert amounts == {0: {"cpu": 2, "gpu.nvidia.com": 1}, 1: {"gpu.nvidia.com": 1}}
    # without a resolver (an exporter that does not read slices) DRA devices count nowhere
    assert {z.numa_id for z in derive_placement(pod, {0: 0, 1: 0}).zones} == {0}


def test_misaligned_containers_of_a_report() -> None:
    memory = (MemoryBlock("memory", 1 << 30, (0,)),)
    pod = PodResources(
        "ns",
        "p",
        (
            ContainerResources(
                "far",
                cpu_ids=(0,),
                memory=memory,
                dynamic=(ClaimResources("c", "ns", (_gpu("gpu-2"),)),),
            ),
            ContainerResources(
                "near", cpu_ids=(1,), dynamic=(ClaimResources("d", "ns", (_gpu("gpu-0"),)),)
            ),
            ContainerResources(
                "dra-cpus",
                dynamic=(
                    ClaimResources(
                        "e", "ns", (_gpu("cpudevnuma001", "s1", driver="dra.cpu"), _gpu("gpu-1"))
                    ),
                ),
            ),
        ),
    )
    found = pod_misalignments(pod, {0: 0, 1: 0}, _numa)
    assert [(m.container, [d.device for d in m.devices], m.pinned) for m in found] == [
        ("far", ["gpu-2"], (0,)),
        ("dra-cpus", ["gpu-1"], (1,)),
    ]
