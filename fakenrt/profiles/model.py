"""Node profile values: what a fake NUMA node is. Frozen, pure; parsing lives beside it.

Units: CPUs are ids (ints); memory and hugepages are bytes; devices are ids.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

POLICIES = ("none", "best-effort", "restricted", "single-numa-node")
SCOPES = ("container", "pod")
CPU_MANAGER_POLICIES = ("none", "static")
MEMORY_MANAGER_POLICIES = ("None", "Static")
DEFAULT_MAX_ALLOWABLE_NUMA_NODES = 8


@dataclass(frozen=True)
class CpuPolicyOptions:
    """``cpuManagerPolicyOptions`` of the static CPU manager policy, parsed
    (``pkg/kubelet/cm/cpumanager/policy_options.go``, ``StaticPolicyOptions``)."""

    full_pcpus_only: bool = False
    distribute_cpus_across_numa: bool = False
    align_by_socket: bool = False
    distribute_cpus_across_cores: bool = False
    strict_cpu_reservation: bool = False
    prefer_align_cpus_by_uncorecache: bool = False


@dataclass(frozen=True)
class EvictionThreshold:
    """A hard eviction threshold on ``memory.available``: an amount in bytes or a
    percentage of the node's memory capacity (exactly one is set)."""

    amount: int | None = None
    percentage: float | None = None

    def bytes_of(self, capacity: int) -> int:
        """The reservation it makes: ``GetThresholdQuantity`` in
        ``pkg/kubelet/eviction/api/types.go`` (capacity times the percentage, the latter a
        Go float32 as the kubelet parses it, truncated)."""
        if self.amount is not None:
            return self.amount
        return int(capacity * (self.percentage or 0.0))


@dataclass(frozen=True)
class KubeletConfig:
    """The kubelet settings that decide NUMA admission on a node."""

    topology_manager_policy: str = "none"
    topology_manager_scope: str = "container"
    #: ``topologyManagerPolicyOptions`` exactly as given (string values).
    policy_options: Mapping[str, str] = field(default_factory=dict)
    prefer_closest_numa_nodes: bool = False
    max_allowable_numa_nodes: int = DEFAULT_MAX_ALLOWABLE_NUMA_NODES
    cpu_manager_policy: str = "static"
    memory_manager_policy: str = "Static"
    #: The CPUs the static policy never hands out exclusively (still counted for hint
    #: width): ``reservedSystemCPUs``, or those it picks for ``systemReserved.cpu`` +
    #: ``kubeReserved.cpu`` when no list is given.
    reserved_cpus: frozenset[int] = frozenset()
    #: ``cpuManagerPolicyOptions`` exactly as given (string values), and parsed.
    cpu_policy_options: Mapping[str, str] = field(default_factory=dict)
    cpu_options: CpuPolicyOptions = CpuPolicyOptions()
    #: ``featureGates`` the profile sets (only the gates the simulator knows).
    feature_gates: Mapping[str, bool] = field(default_factory=dict)
    #: ``systemReserved`` / ``kubeReserved``: ``cpu`` in millicores, ``memory`` and
    #: ``hugepages-<size>`` in bytes.
    system_reserved: Mapping[str, int] = field(default_factory=dict)
    kube_reserved: Mapping[str, int] = field(default_factory=dict)
    #: ``evictionHard["memory.available"]``, if given.
    eviction_hard_memory: EvictionThreshold | None = None
    #: The cpu (millicores) Node Allocatable reserves when it is not the number of
    #: ``reserved_cpus``: ``systemReserved.cpu`` + ``kubeReserved.cpu`` without
    #: ``reservedSystemCPUs`` (which, when given, replaces them).
    cpu_reservation_millis: int | None = None
    #: ``reservedMemory``: NUMA node id -> ``memory`` / ``hugepages-<size>`` -> bytes.
    reserved_memory: Mapping[int, Mapping[str, int]] = field(default_factory=dict)


@dataclass(frozen=True)
class CpuInfo:
    """Where one logical CPU sits: its physical core, socket and NUMA node."""

    cpu: int
    core: int
    socket: int
    numa: int
    #: The uncore (last-level) cache the CPU's core shares; None means the kubelet's
    #: fallback, the socket (``getUncoreCacheID`` in ``cpumanager/topology``).
    uncore: int | None = None


@dataclass(frozen=True)
class DeviceSet:
    """The devices of one resource in one place (a zone, or the node for no-affinity ones).

    ``ids`` lists every device, unhealthy ones included (they count for the kubelet's
    preferred hint width but are never allocated).
    """

    ids: tuple[str, ...]
    unhealthy: frozenset[str] = frozenset()

    @property
    def healthy(self) -> tuple[str, ...]:
        return tuple(i for i in self.ids if i not in self.unhealthy)


@dataclass(frozen=True)
class DraAttribute:
    """One value of a DRA device attribute, typed as in a ResourceSlice: ``kind`` is
    ``string``, ``int``, ``bool`` or ``version`` (a semantic version string)."""

    kind: str
    value: str | int | bool


@dataclass(frozen=True)
class DraDevice:
    """One device a DRA driver publishes in the node's ResourceSlices."""

    name: str
    #: The NUMA node the device is attached to; None: no NUMA affinity.
    numa: int | None
    #: Its PCI address (extended BDF, ``0000:3b:00.0``) and PCIe root complex
    #: (``pci0000:3a``); None for devices that are not PCI devices (CPU groups).
    pci_bus_id: str | None = None
    pcie_root: str | None = None
    #: Attributes of this device only, over the driver's (fully qualified names).
    attributes: Mapping[str, DraAttribute] = field(default_factory=dict)
    #: For the CPU driver's per-NUMA-node devices: the CPUs the device stands for.
    cpus: frozenset[int] = frozenset()
    #: Capacities of this device only, over the driver's (quantity strings).
    capacity: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class DraDriver:
    """A DRA driver on the node: one pool of devices published as ResourceSlices, and the
    DeviceClass its installation creates."""

    name: str
    #: The pool's name (the node name unless the profile says otherwise).
    pool: str
    #: The DeviceClass selecting this driver's devices, and its CEL selector.
    device_class: str
    class_selector: str
    #: Which topology attributes the driver publishes: ``numaNode``, ``pcieRoot`` and
    #: ``pciBusID`` (the standard ones), ``driverNumaNode`` and ``driverPciBusID`` (the
    #: known driver's own, see :mod:`exporter.dra_attributes`).
    publish: frozenset[str]
    #: Attributes and capacities of every device (fully qualified names; capacities as
    #: Kubernetes quantity strings).
    attributes: Mapping[str, DraAttribute] = field(default_factory=dict)
    capacity: Mapping[str, str] = field(default_factory=dict)
    devices: tuple[DraDevice, ...] = ()
    #: The CPU driver (kubernetes-sigs/dra-driver-cpu): one device per NUMA node whose
    #: CPUs claims consume as capacity (``allowMultipleAllocations``).
    cpu: bool = False

    def device(self, name: str) -> DraDevice | None:
        return next((d for d in self.devices if d.name == name), None)


@dataclass(frozen=True)
class Zone:
    """One NUMA node of a fake machine."""

    id: int
    cpus: frozenset[int]
    #: Allocatable memory of this NUMA node, in bytes.
    memory: int
    #: ``hugepages-<size>`` -> allocatable bytes on this NUMA node.
    hugepages: Mapping[str, int] = field(default_factory=dict)
    #: Extended resource name -> the devices with affinity to this NUMA node.
    devices: Mapping[str, DeviceSet] = field(default_factory=dict)
    #: This zone's row of the NUMA distance matrix, in zone order (index i = i-th zone).
    distances: tuple[int, ...] = ()
    #: Exclusive resources already held by pods outside the simulation (foreign pods):
    #: ``cpu`` (count), ``memory`` / ``hugepages-*`` (bytes), device resources (count).
    allocated: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class NodeProfile:
    """A whole fake node: kubelet settings, NUMA zones (sorted by id), CPU topology."""

    name: str
    kubelet: KubeletConfig
    zones: tuple[Zone, ...]
    #: Devices with no NUMA affinity: resource name -> devices.
    devices: Mapping[str, DeviceSet] = field(default_factory=dict)
    #: Every CPU of the node -> its core / socket / NUMA node.
    cpu_topology: Mapping[int, CpuInfo] = field(default_factory=dict)
    #: Node labels to add to the Node object (fakenrt controller).
    labels: Mapping[str, str] = field(default_factory=dict)
    #: Maximum pods the node admits (the kubelet's maxPods).
    max_pods: int = 110
    #: This node's NRT publishing lag in seconds (``nrt.delay`` / ``nrt.jitter``); None
    #: means the controller's ``--nrt-delay`` / ``--nrt-jitter``.
    nrt_delay: float | None = None
    nrt_jitter: float | None = None
    #: Non-exclusive requests of pods outside the simulation (``foreignRequests``):
    #: ``cpu`` in millicores, ``memory`` in bytes, ``pods`` a count. They count in the
    #: whole-node fit check only.
    foreign_requests: Mapping[str, int] = field(default_factory=dict)
    #: ``nrt.fingerprintTerminatedPods``: the NRT pod fingerprint also covers Succeeded /
    #: Failed pods still bound to the node, as from a kubelet before 1.32 (whose
    #: podresources List still reported them); None means the controller's setting.
    nrt_fingerprint_terminated_pods: bool | None = None
    #: ``nrt.topologyPolicies``: write the deprecated ``topologyPolicies`` field; None
    #: means the controller's setting.
    nrt_topology_policies: bool | None = None
    #: ``nrt.volcano``: also publish Volcano's ``Numatopology`` object, as its
    #: resource-exporter writes it; None means the controller's setting.
    nrt_volcano: bool | None = None
    #: ``nrt.koordlet``: write the node's NRT as Koordinator's node agent (koordlet) does -
    #: ``v1alpha1``, its annotations and zones - instead of the topology exporter's
    #: ``v1alpha2``; None means the controller's setting.
    nrt_koordlet: bool | None = None
    #: The node's DRA drivers (``dra`` and the zones' ``dra``), sorted by driver name.
    dra: tuple[DraDriver, ...] = ()

    def dra_driver(self, name: str) -> DraDriver | None:
        return next((d for d in self.dra if d.name == name), None)

    @property
    def zone_ids(self) -> tuple[int, ...]:
        return tuple(z.id for z in self.zones)

    def distance(self, a: int, b: int) -> int:
        """NUMA distance between zones with ids a and b (10 on the diagonal, 20 elsewhere
        when the profile gives no matrix)."""
        ids = self.zone_ids
        row = self.zones[ids.index(a)].distances
        if row:
            return row[ids.index(b)]
        return 10 if a == b else 20
