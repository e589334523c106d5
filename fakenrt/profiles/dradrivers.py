"""How known DRA drivers publish their devices, so a profile that names one gets devices
shaped as that driver's: device names, attributes, capacities, topology attributes and
the DeviceClass its installation creates. Pure.

* ``gpu.nvidia.com`` - NVIDIA's DRA driver for GPUs (kubernetes-sigs/dra-driver-nvidia-gpu,
  ``cmd/gpu-kubelet-plugin/deviceinfo.go``): devices ``gpu-<minor>``, attributes ``type``
  (``gpu``), ``uuid``, ``productName``, ``brand``, ``architecture``,
  ``cudaComputeCapability`` / ``driverVersion`` / ``cudaDriverVersion`` (versions),
  capacity ``memory``; the standard ``numaNode``, ``pciBusID`` and ``pcieRoot`` (the 25.x
  releases published ``pcieBusID`` instead and no NUMA node for full GPUs). DeviceClass
  ``gpu.nvidia.com`` selecting ``type == "gpu"``.
* ``gpu.amd.com`` - AMD's (ROCm/k8s-gpu-dra-driver, ``docs/driver-attributes.md``):
  devices ``gpu-<card>-<render>``, attributes ``type`` (``amdgpu``), ``deviceID``,
  ``productName``, ``driverVersion``, its own ``numaNode``, the standard ``pciBusID`` and
  ``pcieRoot``; capacities ``memory``, ``computeUnits``, ``simdUnits``. DeviceClass
  ``gpu.amd.com``.
* ``dra.cpu`` - kubernetes-sigs/dra-driver-cpu grouped by NUMA node
  (``pkg/device/builder.go``, ``attributes.go``): one device ``cpudevnuma<NNN>`` per NUMA
  node with capacity ``dra.cpu/cpu`` (its allocatable CPUs) shared by several claims,
  attributes the standard ``numaNode``, ``socketID``, ``smtEnabled``, ``numCPUs`` and the
  compatibility ``numaNodeID`` / ``dra.net/numaNode``. DeviceClass ``dra.cpu``.

Any other driver publishes devices ``<first label of the driver name>-<n>`` with the
standard topology attributes only, and a DeviceClass named after the driver selecting
every device of it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from exporter.dra_attributes import AMD_GPU, CPU_DRIVER, KNOWN_DRIVERS, NVIDIA_GPU
from fakenrt.profiles.model import DraAttribute

#: ``publish`` values: which topology attributes a driver's devices carry.
NUMA_NODE, PCIE_ROOT, PCI_BUS_ID = "numaNode", "pcieRoot", "pciBusID"
DRIVER_NUMA_NODE, DRIVER_PCI_BUS_ID = "driverNumaNode", "driverPciBusID"
PUBLISH_CHOICES = (NUMA_NODE, PCIE_ROOT, PCI_BUS_ID, DRIVER_NUMA_NODE, DRIVER_PCI_BUS_ID)
STANDARD_PUBLISH = frozenset({NUMA_NODE, PCIE_ROOT, PCI_BUS_ID})


def _string(value: str) -> DraAttribute:
    return DraAttribute("string", value)


def _version(value: str) -> DraAttribute:
    return DraAttribute("version", value)


@dataclass(frozen=True)
class DriverPreset:
    """What a driver publishes by default."""

    #: Device name for the n-th device of the node (zones in id order).
    device_name: Callable[[int], str]
    publish: frozenset[str] = STANDARD_PUBLISH
    #: Attributes (qualified names) of every device; the per-device ones below.
    #: Capacities are named exactly as the driver publishes them (claims request them by
    #: that name).
    attributes: Mapping[str, DraAttribute] = field(default_factory=dict)
    per_device: Callable[[str, int], Mapping[str, DraAttribute]] = lambda node, n: {}
    capacity: Mapping[str, str] = field(default_factory=dict)
    #: The DeviceClass: its name (None: the driver name) and extra CEL after the
    #: ``device.driver == ...`` test.
    device_class: str | None = None
    class_condition: str = ""


def _nvidia_uuid(node: str, n: int) -> Mapping[str, DraAttribute]:
    # A stable, node-unique GPU UUID in NVML's format (GPU-xxxxxxxx-xxxx-...).
    value = uuid.uuid5(uuid.NAMESPACE_URL, f"fakenrt:{node}:gpu-{n}")
    return {f"{NVIDIA_GPU}/uuid": _string(f"GPU-{value}")}


_PRESETS: dict[str, DriverPreset] = {
    NVIDIA_GPU: DriverPreset(
        device_name=lambda n: f"gpu-{n}",
        attributes={
            f"{NVIDIA_GPU}/type": _string("gpu"),
            f"{NVIDIA_GPU}/productName": _string("NVIDIA H100 80GB HBM3"),
            f"{NVIDIA_GPU}/brand": _string("Nvidia"),
            f"{NVIDIA_GPU}/architecture": _string("Hopper"),
            f"{NVIDIA_GPU}/cudaComputeCapability": _version("9.0.0"),
            f"{NVIDIA_GPU}/driverVersion": _version("580.95.5"),
            f"{NVIDIA_GPU}/cudaDriverVersion": _version("13.0.0"),
        },
        per_device=_nvidia_uuid,
        capacity={"memory": "80Gi"},
        class_condition=f" && device.attributes['{NVIDIA_GPU}'].type == 'gpu'",
    ),
    AMD_GPU: DriverPreset(
        device_name=lambda n: f"gpu-{n}-{128 + n}",
        publish=frozenset({DRIVER_NUMA_NODE, PCIE_ROOT, PCI_BUS_ID}),
        attributes={
            f"{AMD_GPU}/type": _string("amdgpu"),
            f"{AMD_GPU}/deviceID": _string("0x74a1"),
            f"{AMD_GPU}/productName": _string("AMD Instinct MI300X"),
            f"{AMD_GPU}/driverVersion": _version("6.12.12"),
        },
        capacity={"memory": "192Gi", "computeUnits": "304", "simdUnits": "1216"},
    ),
    CPU_DRIVER: DriverPreset(
        device_name=lambda n: f"cpudevnuma{n:03d}",
        publish=frozenset({NUMA_NODE, DRIVER_NUMA_NODE}),
    ),
}


def preset(driver: str) -> DriverPreset:
    """The driver's preset: a known driver's, else the generic one."""
    known = _PRESETS.get(driver)
    if known is not None:
        return known
    label = driver.split(".", 1)[0].split("/", 1)[0]
    return DriverPreset(device_name=lambda n: f"{label}-{n}")


def own_attribute(driver: str, publish: str) -> str | None:
    """The known driver's own attribute for ``driverNumaNode`` / ``driverPciBusID``."""
    known = KNOWN_DRIVERS.get(driver)
    if known is None:
        return None
    if publish == DRIVER_NUMA_NODE:
        return known.numa_attribute
    if publish == DRIVER_PCI_BUS_ID:
        return known.pci_bus_attribute
    return None


def class_selector(driver: str) -> str:
    """The CEL expression of the DeviceClass the driver's installation creates."""
    return f"device.driver == '{driver}'" + preset(driver).class_condition


def class_name(driver: str) -> str:
    return preset(driver).device_class or driver
