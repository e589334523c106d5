"""Node profiles from loaded YAML: parsing and validation. Pure (no file access).

``parse_profiles(data, source=...)`` turns the object a YAML loader returned into
:class:`NodeProfile` values, or raises one :class:`ProfileError` naming the file, the node
and the field. The format is documented field by field in docs/profiles.md.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from exporter.cpulist import format_cpulist
from exporter.validation import quoted
from fakenrt.durations import DurationError, parse_duration
from fakenrt.profiles.cputopology import shape_zone_cpus, split_cores, zones_topology
from fakenrt.profiles.devices import DeviceSpec, assign_ids, parse_device_map
from fakenrt.profiles.dra import DraSpec, build_dra, parse_dra_map
from fakenrt.profiles.errors import ProfileError
from fakenrt.profiles.fields import (
    FieldError,
    check_keys,
    child,
    cpulist,
    describe,
    integer,
    mapping,
    quantity,
    sequence,
    string,
)
from fakenrt.profiles.kubeletfields import (
    check_node_kubelet,
    check_reserved_memory_totals,
    parse_cpu_policy_options,
    parse_eviction_hard,
    parse_feature_gates,
    parse_foreign_requests,
    parse_reserved,
    parse_reserved_memory,
)
from fakenrt.profiles.limits import MAX_ALIGNED_NUMA_NODES, MAX_CPUS, MAX_NODES
from fakenrt.profiles.model import (
    CPU_MANAGER_POLICIES,
    DEFAULT_MAX_ALLOWABLE_NUMA_NODES,
    MEMORY_MANAGER_POLICIES,
    POLICIES,
    SCOPES,
    CpuInfo,
    KubeletConfig,
    NodeProfile,
    Zone,
)
from fakenrt.profiles.names import (
    HUGEPAGES_PREFIX,
    dns_subdomain_problem,
    hugepage_size,
    label_value_problem,
    qualified_name_problem,
)
from fakenrt.profiles.resources import node_reservation

#: The kubelet's NUMA bitmask is 64 bits wide (``topologymanager/bitmask``).
MAX_NUMA_ID = 63
PREFER_CLOSEST_NUMA_NODES = "prefer-closest-numa-nodes"
MAX_ALLOWABLE_NUMA_NODES = "max-allowable-numa-nodes"
POLICY_OPTIONS = (PREFER_CLOSEST_NUMA_NODES, MAX_ALLOWABLE_NUMA_NODES)
DEFAULT_MAX_PODS = 110

_TOP_KEYS = ("nodes",)
_NODE_KEYS = (
    "name", "kubelet", "devices", "zones", "shape", "cpuTopology", "labels", "maxPods", "nrt",
    "foreignRequests", "dra",
)  # fmt: skip
_NRT_LAG_KEYS = ("delay", "jitter")
_NRT_SWITCHES = {
    "fingerprintTerminatedPods": "nrt_fingerprint_terminated_pods",
    "topologyPolicies": "nrt_topology_policies",
    "volcano": "nrt_volcano",
    "koordlet": "nrt_koordlet",
}
_NRT_KEYS = (*_NRT_LAG_KEYS, *_NRT_SWITCHES)
_KUBELET_KEYS = (
    "topologyManagerPolicy",
    "topologyManagerScope",
    "topologyManagerPolicyOptions",
    "cpuManagerPolicy",
    "memoryManagerPolicy",
    "reservedSystemCPUs",
    "cpuManagerPolicyOptions",
    "featureGates",
    "systemReserved",
    "kubeReserved",
    "evictionHard",
    "reservedMemory",
)
_HUGEPAGES_KEY = "hugepages-<size>"
_ZONE_KEYS = ("id", "cpus", "memory", "devices", "dra", "distances", "allocated", _HUGEPAGES_KEY)
_CPU_TOPOLOGY_KEYS = ("threadsPerCore", "numaNodesPerSocket", "coresPerUncoreCache")
_SHAPE_KEYS = (
    "numaNodes",
    "coresPerNumaNode",
    "threadsPerCore",
    "numaNodesPerSocket",
    "memoryPerNumaNode",
    "hugepagesPerNumaNode",
    "devicesPerNumaNode",
    "distances",
    "coresPerUncoreCache",
    "draDevicesPerNumaNode",
)
# Go's strconv.ParseBool and strconv.Atoi, which the kubelet uses for option values.
_GO_TRUE = ("1", "t", "T", "TRUE", "true", "True")
_GO_FALSE = ("0", "f", "F", "FALSE", "false", "False")
_GO_INT = re.compile(r"^[+-]?[0-9]+$")


def _is_hugepages(key: str) -> bool:
    return key.startswith(HUGEPAGES_PREFIX)


def parse_profiles(data: object, *, source: str) -> tuple[NodeProfile, ...]:
    """Every node of a loaded profile file, in file order. Pure.

    ``source`` names the file in error messages. Raises :class:`ProfileError`.
    """
    if data is None:
        raise ProfileError(
            "the file is empty; expected a mapping with a 'nodes' list", source=source
        )
    try:
        top = mapping(data, "(top level)")
        check_keys(top, "", _TOP_KEYS, required=_TOP_KEYS)
        raw_nodes = sequence(top["nodes"], "nodes")
        if not raw_nodes:
            raise FieldError("nodes", "must list at least one node")
        if len(raw_nodes) > MAX_NODES:
            raise FieldError(
                "nodes", f"{len(raw_nodes)} nodes; a profile describes at most {MAX_NODES}"
            )
    except FieldError as exc:
        raise ProfileError(exc.detail, source=source, field=exc.field) from None

    profiles: list[NodeProfile] = []
    seen: dict[str, int] = {}
    for index, raw in enumerate(raw_nodes):
        name = _node_name(raw, index, source)
        if name in seen:
            raise ProfileError(
                f"duplicate node name (also nodes[{seen[name]}])",
                source=source,
                node=name,
                field="name",
            )
        seen[name] = index
        try:
            profiles.append(_parse_node(mapping(raw, f"nodes[{index}]"), name))
        except FieldError as exc:
            raise ProfileError(exc.detail, source=source, node=name, field=exc.field) from None
    return tuple(profiles)


def _node_name(raw: object, index: int, source: str) -> str:
    where = f"nodes[{index}]"
    try:
        node = mapping(raw, where)
        if "name" not in node:
            raise FieldError(child(where, "name"), "is required")
        name = string(node["name"], child(where, "name"))
    except FieldError as exc:
        raise ProfileError(exc.detail, source=source, field=exc.field) from None
    problem = dns_subdomain_problem(name)
    if problem is not None:
        raise ProfileError(f"{quoted(name)} {problem}", source=source, field=child(where, "name"))
    return name


@dataclass(frozen=True)
class _RawZone:
    """A zone as written, before node-wide checks and device id generation."""

    where: str
    id: int
    cpus: frozenset[int]
    memory: int
    hugepages: Mapping[str, int] = dataclasses.field(default_factory=dict)
    devices: Sequence[DeviceSpec] = ()
    dra: Sequence[DraSpec] = ()
    distances: tuple[int, ...] | None = None
    distances_field: str = ""
    allocated: Mapping[str, int] = dataclasses.field(default_factory=dict)


@dataclass(frozen=True)
class _Layout:
    """The zones of a node as written, and where its CPU-topology settings came from."""

    zones: list[_RawZone]
    threads: int
    per_socket: int
    #: Field paths to name in errors: explicit zones and shapes spell them differently.
    count_field: str
    threads_field: str
    sockets_field: str


def _read_layout(raw: Mapping[str, object]) -> _Layout:
    if "zones" in raw and "shape" in raw:
        raise FieldError("shape", "give either zones or shape, not both")
    if "zones" in raw:
        listed = sequence(raw["zones"], "zones")
        if not listed:
            raise FieldError("zones", "must list at least one NUMA zone")
        zones = [_parse_zone(z, child("zones", i)) for i, z in enumerate(listed)]
        threads, per_socket = _parse_cpu_topology(raw.get("cpuTopology", {}))
        return _Layout(
            zones,
            threads,
            per_socket,
            count_field="zones",
            threads_field="cpuTopology.threadsPerCore",
            sockets_field="cpuTopology.numaNodesPerSocket",
        )
    if "shape" in raw:
        if "cpuTopology" in raw:
            raise FieldError(
                "cpuTopology", "with shape, give threadsPerCore and numaNodesPerSocket in shape"
            )
        zones, threads, per_socket = _expand_shape(raw["shape"])
        return _Layout(
            zones,
            threads,
            per_socket,
            count_field="shape.numaNodes",
            threads_field="shape.threadsPerCore",
            sockets_field="shape.numaNodesPerSocket",
        )
    raise FieldError("zones", "is required (or give a shape)")


def _parse_node(raw: Mapping[str, object], name: str) -> NodeProfile:
    check_keys(raw, "", _NODE_KEYS, required=("name",))
    kubelet = _parse_kubelet(raw.get("kubelet", {}))
    layout = _read_layout(raw)
    zones = _check_zone_ids(layout.zones)
    if len(zones) % layout.per_socket:
        raise FieldError(
            layout.sockets_field,
            f"{len(zones)} NUMA nodes cannot be grouped into sockets of {layout.per_socket}",
        )
    _check_cpu_overlap(zones)
    _check_distances(zones)
    _check_numa_count(kubelet, len(zones), layout.count_field)
    all_cpus = frozenset().union(*(z.cpus for z in zones))
    if not kubelet.reserved_cpus <= all_cpus:
        raise FieldError(
            "kubelet.reservedSystemCPUs",
            f"{_cpus_phrase(kubelet.reserved_cpus - all_cpus)} not on this node",
        )
    for zone in zones:
        try:
            split_cores(zone.cpus, layout.threads)
        except ValueError as exc:
            raise FieldError(child(zone.where, "cpus"), f"{exc} ({layout.threads_field})") from None

    # device ids are generated node-wide: zones in id order, then no-affinity devices
    node_specs = parse_device_map(raw.get("devices", {}), "devices")
    device_sets = iter(assign_ids([spec for z in zones for spec in z.devices] + node_specs))
    built_zones = []
    for zone in zones:
        zone_sets = {spec.resource: next(device_sets) for spec in zone.devices}
        built = Zone(
            id=zone.id,
            cpus=zone.cpus,
            memory=zone.memory,
            hugepages=dict(zone.hugepages),
            devices=dict(sorted(zone_sets.items())),
            distances=zone.distances or (),
            allocated=dict(zone.allocated),
        )
        _check_allocated(zone, built, kubelet.reserved_cpus)
        built_zones.append(built)
    node_devices = {spec.resource: next(device_sets) for spec in node_specs}
    topology = zones_topology(
        [(z.id, z.cpus) for z in zones],
        threads_per_core=layout.threads,
        numa_nodes_per_socket=layout.per_socket,
    )
    topology = _with_uncore_caches(raw, topology)
    kubelet = _effective_cpu_reservation(kubelet, topology)
    check_node_kubelet(
        kubelet,
        zone_ids=tuple(z.id for z in zones),
        hugepages={z.id: z.hugepages for z in zones},
        topology=topology,
    )
    switches = _parse_nrt_switches(raw.get("nrt", {}))
    dra = build_dra(
        raw.get("dra", {}),
        [(z.id, z.dra) for z in zones],
        node=name,
        topology=topology,
        zone_cpus={z.id: z.cpus for z in zones},
        reserved_cpus=kubelet.reserved_cpus,
    )
    profile = NodeProfile(
        name=name,
        kubelet=kubelet,
        zones=tuple(built_zones),
        devices=dict(sorted(node_devices.items())),
        cpu_topology=topology,
        labels=_parse_labels(raw.get("labels", {})),
        max_pods=integer(raw.get("maxPods", DEFAULT_MAX_PODS), "maxPods", minimum=1),
        foreign_requests=parse_foreign_requests(raw.get("foreignRequests", {})),
        **_parse_nrt_lag(raw.get("nrt", {})),
        nrt_fingerprint_terminated_pods=switches["nrt_fingerprint_terminated_pods"],
        nrt_topology_policies=switches["nrt_topology_policies"],
        nrt_volcano=switches["nrt_volcano"],
        nrt_koordlet=switches["nrt_koordlet"],
        dra=dra,
    )
    check_reserved_memory_totals(kubelet, node_reservation(profile))
    return profile


def _with_uncore_caches(
    raw: Mapping[str, object], topology: dict[int, CpuInfo]
) -> dict[int, CpuInfo]:
    """``coresPerUncoreCache`` (in ``cpuTopology`` or ``shape``): consecutive cores of a
    socket, by core id, share an uncore (last-level) cache; ids count caches across the
    node in socket order. Without it the kubelet falls back to one cache per socket."""
    where = "shape" if "shape" in raw else "cpuTopology"
    section = raw.get(where, {})
    if not isinstance(section, Mapping) or "coresPerUncoreCache" not in section:
        return topology
    field = child(where, "coresPerUncoreCache")
    per_cache = integer(section["coresPerUncoreCache"], field, minimum=1)
    cores_by_socket: dict[int, list[int]] = {}
    for info in topology.values():
        cores = cores_by_socket.setdefault(info.socket, [])
        if info.core not in cores:
            cores.append(info.core)
    cache_of_core: dict[int, int] = {}
    next_id = 0
    for socket in sorted(cores_by_socket):
        cores = sorted(cores_by_socket[socket])
        if len(cores) % per_cache:
            raise FieldError(
                field, f"{len(cores)} cores per socket cannot be split into caches of {per_cache}"
            )
        for index, core in enumerate(cores):
            cache_of_core[core] = next_id + index // per_cache
        next_id += len(cores) // per_cache
    return {
        cpu: dataclasses.replace(info, uncore=cache_of_core[info.core])
        for cpu, info in topology.items()
    }


def _effective_cpu_reservation(
    kubelet: KubeletConfig, topology: dict[int, CpuInfo]
) -> KubeletConfig:
    """``reservedSystemCPUs`` replaces the cpu of systemReserved / kubeReserved
    (``cmd/kubelet/app/server.go``); without it the static policy reserves
    ceil(systemReserved.cpu + kubeReserved.cpu) CPUs picked by its own algorithm from
    all CPUs (``NewStaticPolicy`` in ``cpumanager/policy_static.go``)."""
    if kubelet.reserved_cpus:
        return kubelet
    millis = kubelet.system_reserved.get("cpu", 0) + kubelet.kube_reserved.get("cpu", 0)
    if millis == 0:
        return kubelet
    if kubelet.cpu_manager_policy != "static":
        return dataclasses.replace(kubelet, cpu_reservation_millis=millis)
    count = -(-millis // 1000)
    if count > len(topology):
        raise FieldError(
            "kubelet.systemReserved.cpu",
            f"the static policy must reserve {count} CPUs but the node has {len(topology)}",
        )
    # A local import: the kubelet package imports the profile model.
    from fakenrt.kubelet.cpu_assignment import take_cpus
    from fakenrt.kubelet.topology import CpuTopology

    reserved = take_cpus(CpuTopology(topology), frozenset(topology), count, kubelet.cpu_options)
    return dataclasses.replace(kubelet, reserved_cpus=reserved, cpu_reservation_millis=millis)


def _parse_nrt_switches(value: object) -> dict[str, bool | None]:
    """``nrt: {fingerprintTerminatedPods: true, topologyPolicies: false, volcano: true,
    koordlet: true}``: how this node's NRT is written and which other agents' objects it
    publishes, overriding the controller's flags of the same meaning."""
    raw = mapping(value, "nrt")
    out: dict[str, bool | None] = {}
    for key, attribute in _NRT_SWITCHES.items():
        item = raw.get(key)
        if item is not None and not isinstance(item, bool):
            raise FieldError(child("nrt", key), f"expected true or false, got {describe(item)}")
        out[attribute] = item
    return out


def _parse_nrt_lag(value: object) -> dict[str, float | None]:
    """``nrt: {delay: 2s, jitter: 500ms}``: this node's NRT publishing lag, overriding the
    controller's --nrt-delay / --nrt-jitter (durations as in those flags, or seconds)."""
    raw = mapping(value, "nrt")
    check_keys(raw, "nrt", _NRT_KEYS)
    out: dict[str, float | None] = {"nrt_delay": None, "nrt_jitter": None}
    for key in _NRT_LAG_KEYS:
        if key not in raw:
            continue
        field = child("nrt", key)
        item = raw[key]
        if isinstance(item, bool) or not isinstance(item, str | int | float):
            raise FieldError(
                field, f"expected a duration such as 2s or 500ms, got {describe(item)}"
            )
        try:
            out[f"nrt_{key}"] = parse_duration(str(item))
        except DurationError as exc:
            raise FieldError(field, str(exc)) from None
    return out


def _choice(value: object, field: str, choices: Sequence[str]) -> str:
    text = string(value, field)
    if text in choices:
        return text
    same_case = [c for c in choices if c.lower() == text.lower()]
    hint = f" (the kubelet is case-sensitive: write {same_case[0]!r})" if same_case else ""
    raise FieldError(field, f"unknown value {quoted(text)}{hint}; one of: {', '.join(choices)}")


def _parse_kubelet(value: object) -> KubeletConfig:
    base = "kubelet"
    data = mapping(value, base)
    check_keys(data, base, _KUBELET_KEYS)
    options = _parse_policy_options(data.get("topologyManagerPolicyOptions", {}))
    gates = parse_feature_gates(data.get("featureGates", {}))
    cpu_policy = _choice(
        data.get("cpuManagerPolicy", KubeletConfig().cpu_manager_policy),
        child(base, "cpuManagerPolicy"),
        CPU_MANAGER_POLICIES,
    )
    cpu_texts, cpu_options = parse_cpu_policy_options(
        data.get("cpuManagerPolicyOptions", {}), gates, cpu_policy
    )
    reserved = frozenset[int]()
    if "reservedSystemCPUs" in data:
        reserved = cpulist(data["reservedSystemCPUs"], child(base, "reservedSystemCPUs"))
    defaults = KubeletConfig()
    max_allowable = options.get(MAX_ALLOWABLE_NUMA_NODES)
    return KubeletConfig(
        topology_manager_policy=_choice(
            data.get("topologyManagerPolicy", defaults.topology_manager_policy),
            child(base, "topologyManagerPolicy"),
            POLICIES,
        ),
        topology_manager_scope=_choice(
            data.get("topologyManagerScope", defaults.topology_manager_scope),
            child(base, "topologyManagerScope"),
            SCOPES,
        ),
        policy_options=options,
        prefer_closest_numa_nodes=options.get(PREFER_CLOSEST_NUMA_NODES, "false") in _GO_TRUE,
        max_allowable_numa_nodes=(
            int(max_allowable) if max_allowable is not None else DEFAULT_MAX_ALLOWABLE_NUMA_NODES
        ),
        cpu_manager_policy=cpu_policy,
        memory_manager_policy=_choice(
            data.get("memoryManagerPolicy", defaults.memory_manager_policy),
            child(base, "memoryManagerPolicy"),
            MEMORY_MANAGER_POLICIES,
        ),
        reserved_cpus=reserved,
        cpu_policy_options=cpu_texts,
        cpu_options=cpu_options,
        feature_gates=gates,
        system_reserved=parse_reserved(
            data.get("systemReserved", {}), child(base, "systemReserved")
        ),
        kube_reserved=parse_reserved(data.get("kubeReserved", {}), child(base, "kubeReserved")),
        eviction_hard_memory=parse_eviction_hard(data.get("evictionHard", {})),
        reserved_memory=parse_reserved_memory(data.get("reservedMemory", [])),
    )


def _parse_policy_options(value: object) -> dict[str, str]:
    """``topologyManagerPolicyOptions``, validated as ``topologymanager/policy_options.go``
    does (``NewPolicyOptions``). Values are strings as in the kubelet config; YAML booleans
    and integers are accepted and kept in their string form."""
    base = "kubelet.topologyManagerPolicyOptions"
    out: dict[str, str] = {}
    data = mapping(value, base)
    check_keys(data, base, POLICY_OPTIONS)
    for name, raw in data.items():
        field_name = child(base, name)
        if isinstance(raw, bool):
            text = "true" if raw else "false"
        elif isinstance(raw, int):
            text = str(raw)
        else:
            text = string(raw, field_name)
        if name == PREFER_CLOSEST_NUMA_NODES and text not in _GO_TRUE + _GO_FALSE:
            raise FieldError(field_name, f'bad value {quoted(text)}: expected "true" or "false"')
        if name == MAX_ALLOWABLE_NUMA_NODES:
            if not _GO_INT.match(text):
                raise FieldError(field_name, f"bad value {quoted(text)}: expected an integer")
            if int(text) < DEFAULT_MAX_ALLOWABLE_NUMA_NODES:
                raise FieldError(
                    field_name,
                    f"must not be less than {DEFAULT_MAX_ALLOWABLE_NUMA_NODES} "
                    "(the kubelet refuses smaller values)",
                )
        out[name] = text
    return out


def _parse_zone(value: object, base: str) -> _RawZone:
    data = mapping(value, base)
    check_keys(
        data, base, _ZONE_KEYS, required=("id", "cpus", "memory"), also_allowed=_is_hugepages
    )
    zone_id = integer(data["id"], child(base, "id"), minimum=0)
    if zone_id > MAX_NUMA_ID:
        raise FieldError(
            child(base, "id"), f"{zone_id} does not fit the kubelet's 64-bit NUMA mask (max 63)"
        )
    distances = None
    if "distances" in data:
        row_field = child(base, "distances")
        distances = tuple(
            integer(d, child(row_field, i), minimum=1)
            for i, d in enumerate(sequence(data["distances"], row_field))
        )
    allocated = {}
    if "allocated" in data:
        alloc_field = child(base, "allocated")
        for resource, amount in mapping(data["allocated"], alloc_field).items():
            allocated[resource] = quantity(amount, child(alloc_field, resource))
    return _RawZone(
        where=base,
        id=zone_id,
        cpus=cpulist(data["cpus"], child(base, "cpus")),
        memory=quantity(data["memory"], child(base, "memory")),
        hugepages=_parse_hugepages({k: v for k, v in data.items() if _is_hugepages(k)}, base),
        devices=parse_device_map(data.get("devices", {}), child(base, "devices")),
        dra=parse_dra_map(data.get("dra", {}), child(base, "dra")),
        distances=distances,
        distances_field=child(base, "distances"),
        allocated=allocated,
    )


def _parse_hugepages(data: Mapping[str, object], base: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for key, amount in sorted(data.items()):
        key_field = child(base, key)
        try:
            size = hugepage_size(key)
        except ValueError as exc:
            raise FieldError(key_field, str(exc)) from None
        if size is None:
            raise FieldError(
                key_field, "expected a hugepages-<size> resource such as hugepages-1Gi"
            )
        total = quantity(amount, key_field)
        if total % size:
            raise FieldError(
                key_field, f"{describe(amount)} is not a whole number of {key[10:]} pages"
            )
        out[key] = total
    return out


def _parse_cpu_topology(value: object) -> tuple[int, int]:
    base = "cpuTopology"
    data = mapping(value, base)
    check_keys(data, base, _CPU_TOPOLOGY_KEYS)
    threads = integer(data.get("threadsPerCore", 1), child(base, "threadsPerCore"), minimum=1)
    per_socket = integer(
        data.get("numaNodesPerSocket", 1), child(base, "numaNodesPerSocket"), minimum=1
    )
    return threads, per_socket


def _expand_shape(value: object) -> tuple[list[_RawZone], int, int]:
    base = "shape"
    data = mapping(value, base)
    check_keys(
        data, base, _SHAPE_KEYS, required=("numaNodes", "coresPerNumaNode", "memoryPerNumaNode")
    )
    numa_nodes = integer(data["numaNodes"], child(base, "numaNodes"), minimum=1)
    if numa_nodes > MAX_NUMA_ID + 1:
        raise FieldError(child(base, "numaNodes"), "the kubelet's NUMA mask holds at most 64 nodes")
    cores = integer(data["coresPerNumaNode"], child(base, "coresPerNumaNode"), minimum=1)
    threads = integer(data.get("threadsPerCore", 1), child(base, "threadsPerCore"), minimum=1)
    per_socket = integer(
        data.get("numaNodesPerSocket", 1), child(base, "numaNodesPerSocket"), minimum=1
    )
    if numa_nodes * cores * threads > MAX_CPUS:
        raise FieldError(
            child(base, "coresPerNumaNode"),
            f"{numa_nodes * cores * threads} CPUs in all; a node has at most {MAX_CPUS}",
        )
    memory = quantity(data["memoryPerNumaNode"], child(base, "memoryPerNumaNode"))
    hugepages = _parse_hugepages(
        mapping(data.get("hugepagesPerNumaNode", {}), child(base, "hugepagesPerNumaNode")),
        child(base, "hugepagesPerNumaNode"),
    )
    devices = parse_device_map(
        data.get("devicesPerNumaNode", {}), child(base, "devicesPerNumaNode"), allow_ids=False
    )
    dra = parse_dra_map(
        data.get("draDevicesPerNumaNode", {}),
        child(base, "draDevicesPerNumaNode"),
        allow_list=False,
    )
    rows: list[tuple[int, ...] | None] = [None] * numa_nodes
    if "distances" in data:
        matrix_field = child(base, "distances")
        matrix = sequence(data["distances"], matrix_field)
        if len(matrix) != numa_nodes:
            raise FieldError(matrix_field, f"{len(matrix)} rows for {numa_nodes} NUMA nodes")
        for i, row in enumerate(matrix):
            row_field = child(matrix_field, i)
            rows[i] = tuple(
                integer(d, child(row_field, j), minimum=1)
                for j, d in enumerate(sequence(row, row_field))
            )
    cpus = shape_zone_cpus(
        numa_nodes=numa_nodes, cores_per_numa_node=cores, threads_per_core=threads
    )
    zones = [
        _RawZone(
            where=f"shape (zone {i})",
            id=i,
            cpus=cpus[i],
            memory=memory,
            hugepages=hugepages,
            devices=devices,
            dra=dra,
            distances=rows[i],
            distances_field=child(child(base, "distances"), i),
        )
        for i in range(numa_nodes)
    ]
    return zones, threads, per_socket


def _check_zone_ids(zones: Sequence[_RawZone]) -> list[_RawZone]:
    """Zones sorted by id; duplicate ids are an error."""
    seen: dict[int, str] = {}
    for zone in zones:
        if zone.id in seen:
            raise FieldError(
                child(zone.where, "id"), f"duplicate zone id {zone.id} (also {seen[zone.id]})"
            )
        seen[zone.id] = zone.where
    return sorted(zones, key=lambda z: z.id)


def _check_cpu_overlap(zones: Sequence[_RawZone]) -> None:
    for i, zone in enumerate(zones):
        for other in zones[:i]:
            shared = zone.cpus & other.cpus
            if shared:
                raise FieldError(
                    child(zone.where, "cpus"),
                    f"{_cpus_phrase(shared)} also in {other.where} (zone {other.id})",
                )


def _cpus_phrase(cpus: frozenset[int]) -> str:
    if len(cpus) == 1:
        return f"CPU {format_cpulist(cpus)} is"
    return f"CPUs {format_cpulist(cpus)} are"


def _check_distances(zones: Sequence[_RawZone]) -> None:
    """Rows are in ascending zone id order; the matrix must be square and symmetric, with
    each zone nearest to itself (the local distance is the strict minimum of its row)."""
    given = [z for z in zones if z.distances is not None]
    if not given:
        return
    if len(given) != len(zones):
        missing = next(z for z in zones if z.distances is None)
        raise FieldError(missing.distances_field, "is required when another zone gives distances")
    for i, zone in enumerate(zones):
        row = zone.distances or ()
        if len(row) != len(zones):
            raise FieldError(
                zone.distances_field,
                f"{len(row)} entries for {len(zones)} NUMA zones (one per zone, in zone id order)",
            )
        local = row[i]
        for j, other in enumerate(zones):
            if j != i and row[j] <= local:
                raise FieldError(
                    zone.distances_field,
                    f"distance {row[j]} to zone {other.id} is not larger than the local "
                    f"distance {local} (the diagonal must be the row's strict minimum)",
                )
            back = (other.distances or ())[i]
            if row[j] != back:
                raise FieldError(
                    zone.distances_field,
                    f"distance to zone {other.id} is {row[j]} but zone {other.id} gives {back} "
                    "back (the matrix must be symmetric)",
                )


def _check_numa_count(kubelet: KubeletConfig, count: int, count_field: str) -> None:
    """``topologymanager.NewManager``: with a policy other than none the kubelet refuses
    to start on a machine with more NUMA nodes than max-allowable-numa-nodes."""
    limit = kubelet.max_allowable_numa_nodes
    enumerating = [
        f"topologyManagerPolicy {kubelet.topology_manager_policy}"
        if kubelet.topology_manager_policy != "none"
        else "",
        "memoryManagerPolicy Static" if kubelet.memory_manager_policy == "Static" else "",
    ]
    if count > MAX_ALIGNED_NUMA_NODES and any(enumerating):
        raise FieldError(
            count_field,
            f"{count} NUMA nodes with {' and '.join(e for e in enumerating if e)}: fakenrt "
            f"simulates at most {MAX_ALIGNED_NUMA_NODES} (the kubelet's NUMA hint search "
            f"visits every subset of NUMA nodes, 2^{count} of them); larger nodes need "
            "topologyManagerPolicy none and memoryManagerPolicy None",
        )
    if kubelet.topology_manager_policy != "none" and count > limit:
        raise FieldError(
            count_field,
            f"{count} NUMA nodes but max-allowable-numa-nodes is {limit}: the kubelet refuses "
            f"to start the Topology Manager on machines with more than {limit} NUMA nodes "
            "(raise kubelet.topologyManagerPolicyOptions.max-allowable-numa-nodes)",
        )


def _check_allocated(raw: _RawZone, zone: Zone, reserved: frozenset[int]) -> None:
    """Foreign ``allocated`` amounts must be resources of the zone and fit what it can give."""
    limits: dict[str, tuple[int, str]] = {
        "cpu": (len(zone.cpus - reserved), "allocatable CPUs (reserved ones excluded)"),
        "memory": (zone.memory, "bytes of memory"),
    }
    for name, amount in zone.hugepages.items():
        limits[name] = (amount, f"bytes of {name}")
    for name, devices in zone.devices.items():
        limits[name] = (len(devices.healthy), "healthy devices")
    base = child(raw.where, "allocated")
    for resource, amount in zone.allocated.items():
        if resource not in limits:
            known = ", ".join(sorted(limits))
            raise FieldError(
                child(base, resource), f"the zone has no such resource; it has: {known}"
            )
        limit, unit = limits[resource]
        if amount > limit:
            raise FieldError(
                child(base, resource), f"{amount} is more than the zone's {limit} {unit}"
            )


def _parse_labels(value: object) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, raw in mapping(value, "labels").items():
        key_field = child("labels", key)
        problem = qualified_name_problem(key)
        if problem is not None:
            raise FieldError(key_field, f"invalid label key: {problem}")
        text = string(raw, key_field)
        problem = label_value_problem(text)
        if problem is not None:
            raise FieldError(key_field, f"invalid label value {quoted(text)}: {problem}")
        out[key] = text
    return out
