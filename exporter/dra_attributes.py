"""Where a DRA device's topology is written in its ResourceSlice: the standard attribute
names and the known drivers' own ones. Pure constants, shared by the exporter (which
resolves an allocated device's NUMA node) and fakenrt (which publishes devices as those
drivers do).

Standard attributes (``k8s.io/dynamic-resource-allocation/deviceattribute``; the NUMA
node one standardised by KEP-6072), in the domain ``resource.kubernetes.io``:

* ``numaNode`` - int, the device's NUMA node;
* ``pcieRoot`` - string ``pci<domain>:<bus>``, the PCIe root complex;
* ``pciBusID`` - string ``<domain>:<bus>:<device>.<function>`` (extended BDF).

Drivers that published topology before the standard names did, under their own domain:

| driver | own NUMA attribute | own PCI address attribute |
| --- | --- | --- |
| ``gpu.nvidia.com`` (NVIDIA's driver, 25.x) | ``numa`` (its VFIO devices) | ``pcieBusID`` |
| ``gpu.amd.com`` (ROCm k8s-gpu-dra-driver) | ``numaNode`` | - |
| ``dra.cpu`` (kubernetes-sigs/dra-driver-cpu) | ``numaNodeID`` (and ``dra.net/numaNode``) | - |
"""

from __future__ import annotations

import re
from dataclasses import dataclass

STANDARD_DOMAIN = "resource.kubernetes.io"
NUMA_NODE = f"{STANDARD_DOMAIN}/numaNode"
PCIE_ROOT = f"{STANDARD_DOMAIN}/pcieRoot"
PCI_BUS_ID = f"{STANDARD_DOMAIN}/pciBusID"
_BDF = re.compile(r"^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")


def is_pci_bus_id(address: str) -> bool:
    """A PCI address in extended BDF form (``0000:3b:00.0``): safe as a sysfs path part."""
    return bool(_BDF.match(address))


@dataclass(frozen=True)
class KnownDriver:
    """A DRA driver whose own topology attributes are known (fully qualified names)."""

    name: str
    numa_attribute: str | None = None
    pci_bus_attribute: str | None = None


NVIDIA_GPU = "gpu.nvidia.com"
AMD_GPU = "gpu.amd.com"
CPU_DRIVER = "dra.cpu"

KNOWN_DRIVERS: dict[str, KnownDriver] = {
    NVIDIA_GPU: KnownDriver(
        NVIDIA_GPU, numa_attribute=f"{NVIDIA_GPU}/numa", pci_bus_attribute=f"{NVIDIA_GPU}/pcieBusID"
    ),
    AMD_GPU: KnownDriver(AMD_GPU, numa_attribute=f"{AMD_GPU}/numaNode"),
    CPU_DRIVER: KnownDriver(CPU_DRIVER, numa_attribute=f"{CPU_DRIVER}/numaNodeID"),
}
