"""DRA devices in profiles: the zone entries, the node's ``dra`` section, the known
drivers' presets, the CPU driver, and one clear error for each kind of bad input."""

from __future__ import annotations

from typing import Any

import pytest

from exporter.dra_attributes import NUMA_NODE, PCI_BUS_ID, PCIE_ROOT
from fakenrt.profiles import ProfileError, parse_profiles
from fakenrt.profiles.model import DraAttribute, NodeProfile


def _node(**extra: Any) -> dict[str, Any]:
    node: dict[str, Any] = {
        "name": "n1",
        "zones": [
            {"id": 0, "cpus": "0-3", "memory": "1Gi"},
            {"id": 1, "cpus": "4-7", "memory": "1Gi"},
        ],
    }
    node.update(extra)
    return node


def _parse(node: dict[str, Any]) -> NodeProfile:
    (profile,) = parse_profiles({"nodes": [node]}, source="p.yaml")
    return profile


def _with_zone_dra(zone0: Any, zone1: Any = None, **extra: Any) -> dict[str, Any]:
    node = _node(**extra)
    node["zones"][0]["dra"] = zone0
    if zone1 is not None:
        node["zones"][1]["dra"] = zone1
    return node


def _error(node: dict[str, Any]) -> str:
    with pytest.raises(ProfileError) as info:
        _parse(node)
    return str(info.value)


def test_counts_get_the_drivers_own_names_node_wide_in_zone_order() -> None:
    profile = _parse(_with_zone_dra({"gpu.nvidia.com": 2}, {"gpu.nvidia.com": 1, "gpu.amd.com": 2}))
    nvidia = profile.dra_driver("gpu.nvidia.com")
    amd = profile.dra_driver("gpu.amd.com")
    assert nvidia is not None and amd is not None
    assert [(d.name, d.numa) for d in nvidia.devices] == [("gpu-0", 0), ("gpu-1", 0), ("gpu-2", 1)]
    assert [(d.name, d.numa) for d in amd.devices] == [("gpu-0-128", 1), ("gpu-1-129", 1)]
    assert [d.name for d in profile.dra] == ["gpu.amd.com", "gpu.nvidia.com"]
    assert nvidia.pool == "n1" and nvidia.device_class == "gpu.nvidia.com"
    assert "type == 'gpu'" in nvidia.class_selector


def test_generic_driver_names_devices_after_its_first_label() -> None:
    profile = _parse(_with_zone_dra({"nic.example.com": 2}))
    (driver,) = profile.dra
    assert [d.name for d in driver.devices] == ["nic-0", "nic-1"]
    assert driver.class_selector == "device.driver == 'nic.example.com'"
    assert driver.publish == {"numaNode", "pcieRoot", "pciBusID"}


def test_nvidia_devices_carry_the_standard_topology_attributes() -> None:
    profile = _parse(_with_zone_dra({}, {"gpu.nvidia.com": 1}))
    (device,) = profile.dra[0].devices
    assert device.pci_bus_id is not None and device.pcie_root is not None
    assert device.attributes[NUMA_NODE] == DraAttribute("int", 1)
    assert device.attributes[PCI_BUS_ID] == DraAttribute("string", device.pci_bus_id)
    assert device.attributes[PCIE_ROOT] == DraAttribute("string", device.pcie_root)
    assert device.pci_bus_id == "0001:01:00.0" and device.pcie_root == "pci0001:00"
    assert str(device.attributes["gpu.nvidia.com/uuid"].value).startswith("GPU-")
    assert profile.dra[0].attributes["gpu.nvidia.com/type"] == DraAttribute("string", "gpu")


def test_amd_publishes_its_own_numa_attribute_and_no_standard_one() -> None:
    profile = _parse(_with_zone_dra({"gpu.amd.com": 1}))
    (device,) = profile.dra[0].devices
    assert device.attributes["gpu.amd.com/numaNode"] == DraAttribute("int", 0)
    assert NUMA_NODE not in device.attributes
    assert PCI_BUS_ID in device.attributes


def test_publish_chooses_the_topology_attributes() -> None:
    node = _with_zone_dra(
        {"gpu.nvidia.com": 1},
        dra={"drivers": {"gpu.nvidia.com": {"publish": ["driverPciBusID"]}}},
    )
    (device,) = _parse(node).dra[0].devices
    topology = {k for k in device.attributes if k.startswith("resource.kubernetes.io")}
    assert topology == set()
    assert device.attributes["gpu.nvidia.com/pcieBusID"] == DraAttribute("string", "0000:01:00.0")


def test_listed_devices_keep_names_addresses_and_own_attributes() -> None:
    node = _with_zone_dra(
        [],
        dra={
            "devices": {"nic.example.com": ["nic-x"]},
            "drivers": {
                "nic.example.com": {
                    "pool": "rack-3",
                    "deviceClass": "fast-nics",
                    "attributes": {"model": "cx7", "example.com/ports": 2, "rdma": True},
                    "capacity": {"bandwidth": "400G"},
                }
            },
        },
    )
    node["zones"][0]["dra"] = {
        "nic.example.com": [
            {
                "name": "nic-a",
                "pciBusID": "0000:3b:00.0",
                "pcieRoot": "pci0000:3a",
                "attributes": {"firmware": {"version": "28.39.1002"}},
            },
            "nic-b",
        ]
    }
    (driver,) = _parse(node).dra
    assert driver.pool == "rack-3" and driver.device_class == "fast-nics"
    assert driver.attributes == {
        "nic.example.com/model": DraAttribute("string", "cx7"),
        "example.com/ports": DraAttribute("int", 2),
        "nic.example.com/rdma": DraAttribute("bool", True),
    }
    assert driver.capacity == {"bandwidth": "400G"}  # as written: claims request this name
    a, b, x = driver.devices
    assert (a.name, a.numa, a.pci_bus_id, a.pcie_root) == ("nic-a", 0, "0000:3b:00.0", "pci0000:3a")
    assert a.attributes["nic.example.com/firmware"] == DraAttribute("version", "28.39.1002")
    assert (b.name, b.pci_bus_id) == ("nic-b", "0000:01:00.0")
    # no NUMA affinity: no numaNode attribute, addresses in their own PCI domain
    assert (x.name, x.numa, x.pci_bus_id) == ("nic-x", None, "0100:01:00.0")
    assert NUMA_NODE not in x.attributes


def test_cpu_driver_publishes_one_device_per_numa_node_of_its_allocatable_cpus() -> None:
    node = _node(
        kubelet={"reservedSystemCPUs": "0"},
        dra={"cpu": {}},
        cpuTopology={"threadsPerCore": 2},
    )
    (driver,) = _parse(node).dra
    assert driver.cpu and driver.name == "dra.cpu" and driver.device_class == "dra.cpu"
    zero, one = driver.devices
    assert (zero.name, zero.numa, zero.cpus, zero.capacity) == (
        "cpudevnuma000",
        0,
        frozenset({1, 2, 3}),
        {"dra.cpu/cpu": "3"},
    )
    assert one.name == "cpudevnuma001" and one.capacity == {"dra.cpu/cpu": "4"}
    assert zero.attributes[NUMA_NODE] == DraAttribute("int", 0)
    assert zero.attributes["dra.cpu/numaNodeID"] == DraAttribute("int", 0)
    assert zero.attributes["dra.cpu/smtEnabled"] == DraAttribute("bool", True)


def test_shape_repeats_dra_counts_on_every_numa_node() -> None:
    node = {
        "name": "s",
        "shape": {
            "numaNodes": 2,
            "coresPerNumaNode": 2,
            "memoryPerNumaNode": "1Gi",
            "draDevicesPerNumaNode": {"gpu.nvidia.com": 2},
        },
    }
    (driver,) = _parse(node).dra
    assert [(d.name, d.numa) for d in driver.devices] == [
        ("gpu-0", 0),
        ("gpu-1", 0),
        ("gpu-2", 1),
        ("gpu-3", 1),
    ]


def test_dra_and_device_plugin_nodes_coexist_in_one_file() -> None:
    dra_node = _with_zone_dra({"gpu.nvidia.com": 1})
    plugin_node = _node(name="n2")
    plugin_node["zones"][0]["devices"] = {"nvidia.com/gpu": 1}
    one, two = parse_profiles({"nodes": [dra_node, plugin_node]}, source="p.yaml")
    assert one.dra and not one.zones[0].devices
    assert not two.dra and two.zones[0].devices


@pytest.mark.parametrize(
    ("node", "expected"),
    [
        pytest.param(
            _with_zone_dra({"GPU.example": 1}),
            'p.yaml: node "n1": zones[0].dra["GPU.example"]: \'GPU.example\' is not a DRA driver',
            id="driver-name",
        ),
        pytest.param(
            _with_zone_dra({"dra.cpu": 1}),
            'zones[0].dra["dra.cpu"]: dra.cpu devices stand for the node\'s CPUs',
            id="cpu-in-zone",
        ),
        pytest.param(
            _with_zone_dra({"gpu.nvidia.com": ["GPU_0"]}),
            "zones[0].dra[\"gpu.nvidia.com\"][0]: 'GPU_0' is not a DRA device name",
            id="device-name",
        ),
        pytest.param(
            _with_zone_dra({"gpu.nvidia.com": ["gpu-1"]}, {"gpu.nvidia.com": 2}),
            "device name 'gpu-1' is also in zones[0]",
            id="duplicate-name",
        ),
        pytest.param(
            _with_zone_dra({"gpu.nvidia.com": [{"name": "a", "pciBusID": "0000:01:00.0"}, "b"]}),
            "PCI address 0000:01:00.0 is also in",
            id="duplicate-address",
        ),
        pytest.param(
            _with_zone_dra({"gpu.nvidia.com": [{"name": "a", "pciBusID": "3b:00.0"}]}),
            "'3b:00.0' is not a PCI address in extended BDF form",
            id="bad-address",
        ),
        pytest.param(
            _with_zone_dra({"gpu.nvidia.com": [{"name": "a", "bus": 1}]}),
            "[0].bus: unknown key",
            id="unknown-item-key",
        ),
        pytest.param(
            _with_zone_dra({"gpu.nvidia.com": 1}, dra={"drivers": {"gpu.amd.com": {}}}),
            'dra.drivers["gpu.amd.com"]: the driver has no devices',
            id="driver-without-devices",
        ),
        pytest.param(
            _with_zone_dra(
                {"nic.example.com": 1},
                dra={"drivers": {"nic.example.com": {"publish": ["driverNumaNode"]}}},
            ),
            "fakenrt knows no own NUMA attribute of driver nic.example.com",
            id="own-attribute-unknown",
        ),
        pytest.param(
            _with_zone_dra(
                {"gpu.nvidia.com": 1},
                dra={"drivers": {"gpu.nvidia.com": {"publish": ["numa"]}}},
            ),
            "publish[0]: unknown value 'numa'; one of: numaNode",
            id="publish-value",
        ),
        pytest.param(
            _with_zone_dra(
                {"gpu.nvidia.com": 1},
                dra={"drivers": {"gpu.nvidia.com": {"attributes": {"v": {"version": "1.2"}}}}},
            ),
            "attributes.v.version: '1.2' is not a semantic version",
            id="version",
        ),
        pytest.param(
            _with_zone_dra(
                {"gpu.nvidia.com": 1},
                dra={"drivers": {"gpu.nvidia.com": {"attributes": {"9lives": 1}}}},
            ),
            "'9lives' must be a C identifier",
            id="attribute-name",
        ),
        pytest.param(
            _with_zone_dra(
                {"gpu.nvidia.com": 1},
                dra={"drivers": {"gpu.nvidia.com": {"capacity": {"memory": "lots"}}}},
            ),
            "capacity.memory: 'lots' is not a Kubernetes quantity",
            id="capacity",
        ),
        pytest.param(
            _with_zone_dra(
                {"gpu.nvidia.com": 1},
                dra={
                    "drivers": {"gpu.nvidia.com": {"attributes": {f"a{i}": i for i in range(30)}}}
                },
            ),
            "has 42 attributes and capacities; a ResourceSlice allows 32",
            id="too-many-attributes",
        ),
        pytest.param(
            _with_zone_dra({"gpu.nvidia.com": 1025}),
            "more than 1024 devices of one driver",
            id="hostile-count",
        ),
        pytest.param(
            _with_zone_dra({"gpu.nvidia.com": 1}, dra={"drivres": {}}),
            "dra.drivres: unknown key (did you mean 'drivers'?)",
            id="section-key",
        ),
        pytest.param(
            _with_zone_dra({"gpu.nvidia.com": 1}, dra={"cpu": {"attributes": {}}}),
            "dra.cpu.attributes: unknown key",
            id="cpu-key",
        ),
    ],
)
def test_bad_dra_input_is_one_clear_error(node: dict[str, Any], expected: str) -> None:
    assert expected in _error(node)


def test_the_documented_example_parses() -> None:
    import re
    from pathlib import Path

    import yaml

    text = (Path(__file__).parents[2] / "docs" / "profiles.md").read_text()
    section = text[text.index("## DRA devices") :]
    block = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert block is not None
    (profile,) = parse_profiles(yaml.safe_load(block.group(1)), source="docs/profiles.md")
    names = {d.name: [x.name for x in d.devices] for d in profile.dra}
    assert names == {
        "dra.cpu": ["cpudevnuma000", "cpudevnuma001"],
        "gpu.nvidia.com": ["gpu-0", "gpu-1", "gpu-7", "gpu-8"],
        "nic.example.com": ["nic-0"],
    }
