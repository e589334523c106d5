"""The kubelet settings of a profile beyond the Topology Manager: CPU Manager policy
options, feature gates, reservations, and foreign pods' non-exclusive requests. Pure.

Validated as kubelet v1.36 validates them; where the kubelet refuses to start, the profile
is rejected (the upstream file that decides is named at each check).
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Mapping
from decimal import Decimal

from exporter.quantities import QuantityError, parse_decimal
from fakenrt.profiles.fields import FieldError, check_keys, child, describe, mapping, sequence
from fakenrt.profiles.fields import integer as read_integer
from fakenrt.profiles.fields import quantity as read_quantity
from fakenrt.profiles.model import CpuInfo, CpuPolicyOptions, EvictionThreshold, KubeletConfig
from fakenrt.profiles.names import HUGEPAGES_PREFIX, hugepage_size

# pkg/kubelet/cm/cpumanager/policy_options.go: the option names and their maturity in
# kubelet v1.36 (alpha options need the CPUManagerPolicyAlphaOptions gate, off by default;
# beta ones CPUManagerPolicyBetaOptions, on by default; GA ones no gate).
FULL_PCPUS_ONLY = "full-pcpus-only"
DISTRIBUTE_CPUS_ACROSS_NUMA = "distribute-cpus-across-numa"
ALIGN_BY_SOCKET = "align-by-socket"
DISTRIBUTE_CPUS_ACROSS_CORES = "distribute-cpus-across-cores"
STRICT_CPU_RESERVATION = "strict-cpu-reservation"
PREFER_ALIGN_CPUS_BY_UNCORECACHE = "prefer-align-cpus-by-uncorecache"
ALPHA_OPTIONS = (ALIGN_BY_SOCKET, DISTRIBUTE_CPUS_ACROSS_CORES)
BETA_OPTIONS = (
    STRICT_CPU_RESERVATION,
    DISTRIBUTE_CPUS_ACROSS_NUMA,
    PREFER_ALIGN_CPUS_BY_UNCORECACHE,
)
STABLE_OPTIONS = (FULL_PCPUS_ONLY,)
CPU_POLICY_OPTIONS = STABLE_OPTIONS + BETA_OPTIONS + ALPHA_OPTIONS
ALPHA_GATE = "CPUManagerPolicyAlphaOptions"
BETA_GATE = "CPUManagerPolicyBetaOptions"
#: The feature gates a profile may set, with the kubelet's defaults.
FEATURE_GATES = {ALPHA_GATE: False, BETA_GATE: True}
#: NewStaticPolicyOptions: pairs of options the kubelet refuses together.
_INCOMPATIBLE = (
    (FULL_PCPUS_ONLY, DISTRIBUTE_CPUS_ACROSS_CORES),
    (DISTRIBUTE_CPUS_ACROSS_NUMA, DISTRIBUTE_CPUS_ACROSS_CORES),
    (PREFER_ALIGN_CPUS_BY_UNCORECACHE, DISTRIBUTE_CPUS_ACROSS_CORES),
    (PREFER_ALIGN_CPUS_BY_UNCORECACHE, DISTRIBUTE_CPUS_ACROSS_NUMA),
)
_OPTION_FIELDS = {
    FULL_PCPUS_ONLY: "full_pcpus_only",
    DISTRIBUTE_CPUS_ACROSS_NUMA: "distribute_cpus_across_numa",
    ALIGN_BY_SOCKET: "align_by_socket",
    DISTRIBUTE_CPUS_ACROSS_CORES: "distribute_cpus_across_cores",
    STRICT_CPU_RESERVATION: "strict_cpu_reservation",
    PREFER_ALIGN_CPUS_BY_UNCORECACHE: "prefer_align_cpus_by_uncorecache",
}
# Go's strconv.ParseBool, which the kubelet uses for option values.
GO_TRUE = ("1", "t", "T", "TRUE", "true", "True")
GO_FALSE = ("0", "f", "F", "FALSE", "false", "False")
MEMORY_AVAILABLE = "memory.available"
_RESERVED_KEYS = ("cpu", "memory", "hugepages-<size>")
_FOREIGN_KEYS = ("cpu", "memory", "pods")
_RESERVATION_KEYS = ("numaNode", "limits")
_PERCENT = re.compile(r"^([0-9]+(?:\.[0-9]+)?)%$")
#: Upper bounds that keep hostile sizes bad input (no reservation is larger than this).
_MAX_MILLICPU = 1 << 40


def _float32(value: float) -> float:
    """``value`` rounded to a Go float32."""
    return float(struct.unpack("f", struct.pack("f", value))[0])


def _option_text(raw: object, field: str) -> str:
    if isinstance(raw, bool):
        return "true" if raw else "false"
    if isinstance(raw, str):
        return raw
    raise FieldError(field, f'expected "true" or "false", got {describe(raw)}')


def parse_feature_gates(value: object) -> dict[str, bool]:
    base = "kubelet.featureGates"
    data = mapping(value, base)
    check_keys(data, base, tuple(FEATURE_GATES))
    out: dict[str, bool] = {}
    for name, raw in data.items():
        if not isinstance(raw, bool):
            raise FieldError(child(base, name), f"expected true or false, got {describe(raw)}")
        out[name] = raw
    return out


def parse_cpu_policy_options(
    value: object, gates: Mapping[str, bool], cpu_policy: str
) -> tuple[dict[str, str], CpuPolicyOptions]:
    """``cpuManagerPolicyOptions`` as ``NewStaticPolicyOptions`` reads them."""
    base = "kubelet.cpuManagerPolicyOptions"
    data = mapping(value, base)
    check_keys(data, base, CPU_POLICY_OPTIONS)
    if data and cpu_policy != "static":
        # policy_none.go NewNonePolicy: "None policy: received unsupported options"
        raise FieldError(base, "the kubelet refuses policy options with cpuManagerPolicy none")
    texts: dict[str, str] = {}
    flags: dict[str, bool] = {}
    for name, raw in data.items():
        field = child(base, name)
        text = _option_text(raw, field)
        gate = ALPHA_GATE if name in ALPHA_OPTIONS else BETA_GATE if name in BETA_OPTIONS else None
        if gate is not None and not gates.get(gate, FEATURE_GATES[gate]):
            level = "Alpha" if gate == ALPHA_GATE else "Beta"
            raise FieldError(
                field,
                f"CPU Manager Policy {level}-level Options not enabled, but option {name!r} "
                f"provided (set kubelet.featureGates.{gate}: true)",
            )
        if text not in GO_TRUE + GO_FALSE:
            raise FieldError(field, f'bad value {text!r}: expected "true" or "false"')
        texts[name] = text
        flags[_OPTION_FIELDS[name]] = text in GO_TRUE
    options = CpuPolicyOptions(**flags)
    for a, b in _INCOMPATIBLE:
        if getattr(options, _OPTION_FIELDS[a]) and getattr(options, _OPTION_FIELDS[b]):
            raise FieldError(
                base, f"static policy options {a} and {b} can not be used at the same time"
            )
    return texts, options


def _memory_type(name: str, field: str) -> None:
    if name == "memory":
        return
    try:
        size = hugepage_size(name) if name.startswith(HUGEPAGES_PREFIX) else None
    except ValueError as exc:
        raise FieldError(field, str(exc)) from None
    if size is None:
        raise FieldError(field, "expected memory or hugepages-<size> such as hugepages-2Mi")


def _millicpu(raw: object, field: str) -> int:
    if isinstance(raw, bool) or not isinstance(raw, str | int | float):
        raise FieldError(field, f"expected a cpu quantity such as 500m or 2, got {describe(raw)}")
    try:
        amount = parse_decimal(raw)
    except QuantityError:
        raise FieldError(field, f"{describe(raw)} is not a Kubernetes quantity") from None
    # compared as a Decimal first: a hostile exponent (1e999999999) must not become an int
    if amount < 0 or amount > Decimal(_MAX_MILLICPU) / 1000:
        raise FieldError(field, f"{describe(raw)} is out of range (0 to {_MAX_MILLICPU}m)")
    return math.ceil(amount * 1000)


def parse_reserved(value: object, field: str) -> dict[str, int]:
    """``systemReserved`` / ``kubeReserved``: cpu in millicores, memory and hugepages in
    bytes."""
    data = mapping(value, field)
    check_keys(data, field, _RESERVED_KEYS, also_allowed=lambda k: k.startswith(HUGEPAGES_PREFIX))
    out: dict[str, int] = {}
    for name, raw in data.items():
        key_field = child(field, name)
        if name == "cpu":
            out[name] = _millicpu(raw, key_field)
        else:
            _memory_type(name, key_field)
            out[name] = read_quantity(raw, key_field)
    return {k: v for k, v in out.items() if v}


def parse_eviction_hard(value: object) -> EvictionThreshold | None:
    """``evictionHard``: only ``memory.available`` reserves what the simulator models; a
    quantity or a percentage of the node's memory capacity."""
    base = "kubelet.evictionHard"
    data = mapping(value, base)
    check_keys(data, base, (MEMORY_AVAILABLE,))
    if MEMORY_AVAILABLE not in data:
        return None
    field = child(base, MEMORY_AVAILABLE)
    raw = data[MEMORY_AVAILABLE]
    if isinstance(raw, str):
        match = _PERCENT.match(raw.strip())
        if match:
            if float(match.group(1)) > 100:
                raise FieldError(field, f"{raw!r}: a percentage must not exceed 100%")
            percent = _float32(float(match.group(1)))
            # eviction helpers.go parsePercentage: float32(value) / 100, in float32
            return EvictionThreshold(percentage=_float32(percent / 100))
    return EvictionThreshold(amount=read_quantity(raw, field))


def parse_reserved_memory(value: object) -> dict[int, dict[str, int]]:
    """``reservedMemory``: a list of ``{numaNode, limits}`` as in the kubelet config
    (``validation_reserved_memory.go``: memory or hugepages only, non-zero, no duplicate
    NUMA node and type)."""
    base = "kubelet.reservedMemory"
    out: dict[int, dict[str, int]] = {}
    for index, item in enumerate(sequence(value, base)):
        where = child(base, index)
        data = mapping(item, where)
        check_keys(data, where, _RESERVATION_KEYS, required=_RESERVATION_KEYS)
        numa = read_integer(data["numaNode"], child(where, "numaNode"), minimum=0)
        limits = mapping(data["limits"], child(where, "limits"))
        for name, raw in limits.items():
            field = child(child(where, "limits"), name)
            _memory_type(name, field)
            amount = read_quantity(raw, field)
            if amount == 0:
                raise FieldError(field, f"reserved memory may not be zero for NUMA node {numa}")
            if name in out.get(numa, {}):
                raise FieldError(field, f"a duplicate value for NUMA node {numa} and {name}")
            out.setdefault(numa, {})[name] = amount
    return out


def parse_foreign_requests(value: object) -> dict[str, int]:
    """``foreignRequests``: non-exclusive cpu (millicores) and memory (bytes) requests,
    and the number of pods, of pods outside the simulation."""
    base = "foreignRequests"
    data = mapping(value, base)
    check_keys(data, base, _FOREIGN_KEYS)
    out: dict[str, int] = {}
    for name, raw in data.items():
        field = child(base, name)
        if name == "cpu":
            out[name] = _millicpu(raw, field)
        elif name == "pods":
            out[name] = read_integer(raw, field, minimum=0)
        else:
            out[name] = read_quantity(raw, field)
    return out


def check_node_kubelet(
    cfg: KubeletConfig,
    *,
    zone_ids: tuple[int, ...],
    hugepages: Mapping[int, Mapping[str, int]],
    topology: Mapping[int, CpuInfo],
) -> None:
    """The start-up checks of the kubelet that depend on the machine."""
    opts = cfg.cpu_options
    if opts.align_by_socket:
        # policy_options.go ValidateStaticPolicyOptions
        if cfg.topology_manager_policy == "single-numa-node":
            raise FieldError(
                child("kubelet.cpuManagerPolicyOptions", ALIGN_BY_SOCKET),
                "Topology manager single-numa-node policy is incompatible with CPUManager "
                "align-by-socket policy option",
            )
        sockets = {i.socket for i in topology.values()}
        numas = {i.numa for i in topology.values()}
        if len(sockets) > len(numas):
            raise FieldError(
                child("kubelet.cpuManagerPolicyOptions", ALIGN_BY_SOCKET),
                "Align by socket is not compatible with hardware where number of sockets are "
                "more than number of NUMA",
            )
    for numa, limits in cfg.reserved_memory.items():
        field = "kubelet.reservedMemory"
        if numa not in zone_ids:
            # memory_manager.go getTotalMemoryTypeReserved
            raise FieldError(
                field,
                f"the reserved memory configuration references a NUMA node {numa} that does "
                "not exist on this machine",
            )
        for name in limits:
            if name != "memory" and name not in hugepages.get(numa, {}):
                raise FieldError(field, f"NUMA node {numa} has no {name} (zone hugepages)")
    if cfg.reserved_memory and cfg.memory_manager_policy != "Static":
        raise FieldError("kubelet.reservedMemory", "is used only by memoryManagerPolicy Static")


def check_reserved_memory_totals(cfg: KubeletConfig, reservation: Mapping[str, int]) -> None:
    """memory_manager.go ``validateReservedMemory``: with the Static policy, per memory
    type, the reservedMemory total must equal the Node Allocatable reservation
    (systemReserved + kubeReserved + evictionHard)."""
    if cfg.memory_manager_policy != "Static":
        return
    totals: dict[str, int] = {}
    for limits in cfg.reserved_memory.values():
        for name, amount in limits.items():
            totals[name] = totals.get(name, 0) + amount
    kinds = set(totals) | {k for k in reservation if k == "memory" or k.startswith("hugepages-")}
    for kind in sorted(kinds):
        if totals.get(kind, 0) != reservation.get(kind, 0):
            raise FieldError(
                "kubelet.reservedMemory",
                f"the total amount {totals.get(kind, 0)} of type {kind!r} is not equal to the "
                f"value {reservation.get(kind, 0)} determined by Node Allocatable feature "
                "(systemReserved + kubeReserved + evictionHard memory.available); the kubelet "
                "refuses to start",
            )
