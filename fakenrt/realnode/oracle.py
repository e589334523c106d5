"""The oracle: the simulator's decisions against a real kubelet's, pod by pod. Pure.

Both sides become :class:`Verdict` values - admitted or the kubelet's reason and message,
and per container the exclusive CPU ids, the devices (their NUMA nodes; their ids where
``GetPreferredAllocation`` fixes them) and the Memory Manager blocks (type, size, NUMA
set) - and :func:`compare` lists every field where they differ.

* The simulator's side: :func:`simulated_verdicts` admits the pods in order on a fresh
  :class:`~fakenrt.kubelet.node.NodeState`.
* The kubelet's side: :func:`real_verdicts` reads the verdict from each Pod's status (a
  pod the kubelet rejects is ``Failed`` with the admit handler's reason and message) and
  the placements from a podresources ``List`` (``exporter.resources`` values, as the
  exporter's client returns them). ``List`` reports exclusive CPUs only, and sidecars and
  regular containers only: plain init containers are not compared.
* ResourceClaims (DRA): a pod's claims are prepared after its admission (the simulator's
  DRA manager, with the claims as the real kube-scheduler allocated them), and each
  container's ``dynamic_resources`` - claim, and per device its driver, pool, device,
  CDI ids and share id - are compared with what the kubelet's podresources lists
  (:class:`ClaimPlacement`; drivers in name order on both sides, as the kubelet lists a
  claim's drivers in map order). Admission itself is compared as for any pod: that the
  kubelet admits a pod whose DRA devices sit on another NUMA node than its CPUs is the
  point (:func:`misaligned_pods` names them).
* Device NUMA nodes are looked up in the profile on both sides (the fake device plugin
  advertises exactly those). Device ids are compared where the simulator's merged hint
  for the container (or pod, in pod scope) has a NUMA affinity: there the kubelet asks
  the plugin's ``GetPreferredAllocation`` whenever it has a choice, and the plugin packs
  as the simulator does. For a hint without affinity the plugin and the simulator pick
  differently by design (docs/device-plugin.md), so only the NUMA nodes count.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from exporter.cpulist import format_cpulist
from exporter.dra_alignment import misalignment
from exporter.resources import PodResources
from fakenrt.dra.claims import ResourceClaim
from fakenrt.kubelet.allocation import (
    INIT,
    AdmissionResult,
    ClaimResource,
    ContainerAllocation,
    DynamicResource,
)
from fakenrt.kubelet.explain_dra import pinned_numa, placements
from fakenrt.kubelet.node import NodeState
from fakenrt.kubelet.provider_devices import DeviceInventory
from fakenrt.podspec import PodSpec
from fakenrt.profiles.model import NodeProfile

ADMITTED = "admitted"


@dataclass(frozen=True)
class DevicePlacement:
    """One resource's devices in one container: the NUMA node of each (sorted; -1 for a
    device without NUMA affinity) and the ids, or None where ids are not compared."""

    numa: tuple[int, ...]
    ids: frozenset[str] | None = None


#: One prepared DRA device as podresources lists it: driver, pool, device, CDI ids, share id.
ClaimDevice = tuple[str, str, str, tuple[str, ...], str | None]


@dataclass(frozen=True)
class ClaimPlacement:
    """One claim of a container (``namespace/name``) and its devices, drivers in name
    order, each driver's devices in the kubelet's order."""

    claim: str
    devices: tuple[ClaimDevice, ...] = ()


def claim_placement(claim: str, devices: Sequence[ClaimDevice]) -> ClaimPlacement:
    """Drivers in name order (the kubelet walks a claim's drivers in map order), each
    driver's devices kept in order (a stable sort)."""
    return ClaimPlacement(claim, tuple(sorted(devices, key=lambda d: d[0])))


@dataclass(frozen=True)
class ContainerPlacement:
    name: str
    cpus: frozenset[int] = frozenset()
    devices: Mapping[str, DevicePlacement] = field(default_factory=dict)
    #: (type, size, NUMA set) of each block, sorted.
    memory: tuple[tuple[str, int, tuple[int, ...]], ...] = ()
    #: Its ResourceClaims in podresources order (``spec.resourceClaims`` order).
    dynamic: tuple[ClaimPlacement, ...] = ()


@dataclass(frozen=True)
class Verdict:
    pod: str
    admitted: bool
    reason: str | None = None
    message: str | None = None
    containers: tuple[ContainerPlacement, ...] = ()
    #: The pod has ResourceClaims: its containers' ``dynamic`` is compared.
    claims: bool = False


@dataclass(frozen=True)
class Difference:
    """One field where the two sides differ. ``container`` is None for pod fields."""

    pod: str
    container: str | None
    field: str
    simulator: str
    kubelet: str


#: The fields compared for every pod, and for every container of an admitted pod.
POD_FIELDS = ("verdict", "message")
CONTAINER_FIELDS = ("cpus", "devices", "memory")
#: Compared for the containers of pods with ResourceClaims.
DRA_FIELDS = ("dynamic",)


def _numa_list(ids: Sequence[str], numa_of: Mapping[str, int | None]) -> tuple[int, ...]:
    return tuple(sorted(-1 if numa_of.get(i) is None else int(numa_of[i] or 0) for i in ids))


def _fixed_ids(result: AdmissionResult) -> dict[str | None, bool]:
    """Per container name (None: the whole pod, pod scope): does the merged hint have a
    NUMA affinity?"""
    return {r.container: r.best.numa is not None for r in result.hints}


def _dynamic(c: ContainerAllocation) -> tuple[ClaimPlacement, ...]:
    return tuple(
        claim_placement(
            f"{d.claim_namespace}/{d.claim_name}",
            [(r.driver, r.pool, r.device, r.cdi_ids, r.share_id) for r in d.resources],
        )
        for d in c.dynamic
    )


def simulated_verdict(
    result: AdmissionResult,
    inventory: DeviceInventory,
    *,
    prepared: Mapping[str, ContainerAllocation] | None = None,
    claims: bool = False,
) -> Verdict:
    """The simulator's :class:`AdmissionResult` as a :class:`Verdict`; ``prepared``: the
    pod's containers once its claims were prepared (their ``dynamic``)."""
    if not result.admit or result.allocation is None:
        return Verdict(result.pod_key, False, result.reason, result.message, claims=claims)
    fixed = _fixed_ids(result)
    containers = []
    for c in result.allocation.containers:
        if c.kind == INIT:
            continue
        # No hint at all (Topology Manager policy none): the kubelet has no affinity either.
        ids_fixed = fixed.get(c.name, fixed.get(None, False))
        devices = {
            name: DevicePlacement(
                _numa_list(ids, inventory.numa_of(name)),
                frozenset(ids) if ids_fixed else None,
            )
            for name, ids in c.devices.items()
            if ids
        }
        memory = tuple(sorted((b.type, b.size, tuple(sorted(b.numa))) for b in c.memory))
        dynamic = _dynamic(prepared[c.name]) if prepared and c.name in prepared else ()
        containers.append(ContainerPlacement(c.name, c.cpus, devices, memory, dynamic))
    return Verdict(
        result.pod_key, True, containers=tuple(sorted(containers, key=_by_name)), claims=claims
    )


def _by_name(c: ContainerPlacement) -> str:
    return c.name


def simulated_verdicts(
    profile: NodeProfile, pods: Sequence[PodSpec], claims: Sequence[ResourceClaim] = ()
) -> tuple[Verdict, ...]:
    """Admit ``pods`` in order on a fresh simulated node, each admitted pod's claims
    (looked up in ``claims``) prepared right after its admission."""
    node = NodeState.from_profile(profile)
    inventory = DeviceInventory.from_profile(profile)
    by_name = {(c.namespace, c.name): c for c in claims}
    results = []
    for pod in pods:
        result = node.admit(pod)
        if result.admit and pod.resource_claims:
            node.prepare(pod.key, lambda ns, name: by_name.get((ns, name)))
        results.append(result)
    final = node.allocations()
    return tuple(
        simulated_verdict(
            result,
            inventory,
            prepared={c.name: c for c in final[pod.key].containers} if pod.key in final else None,
            claims=bool(pod.resource_claims),
        )
        for pod, result in zip(pods, results, strict=True)
    )


def kubelet_decided(status: Mapping[str, Any]) -> bool:
    """Has the kubelet decided on this pod? A new pod is ``Pending`` before the kubelet
    sees it too; the kubelet's verdict is a ``Failed`` phase, or container statuses (an
    admitted pod whose plain init container never ends stays ``Pending``)."""
    if status.get("phase") in ("Failed", "Running", "Succeeded"):
        return True
    return bool(status.get("containerStatuses") or status.get("initContainerStatuses"))


#: What the kubelet puts before an admit handler's message in a rejected pod's status
#: (``rejectPod`` in ``pkg/kubelet/kubelet.go``).
REJECTED_PREFIX = "Pod was rejected: "


def verdict_from_status(status: Mapping[str, Any]) -> tuple[bool, str | None, str | None]:
    """(admitted, reason, message) from a Pod's ``status``. A pod the kubelet rejected is
    ``Failed`` with a reason, and the admit handler's message after
    :data:`REJECTED_PREFIX`; one it admitted is ``Pending`` (containers starting),
    ``Running`` or ``Succeeded``. Raises ValueError when the kubelet has not decided yet
    (no phase) or the status says something else."""
    phase = status.get("phase")
    if phase == "Failed":
        message = status.get("message")
        if isinstance(message, str):
            message = message.removeprefix(REJECTED_PREFIX)
        return False, status.get("reason") or "Failed", message
    if phase in ("Pending", "Running", "Succeeded"):
        return True, None, None
    raise ValueError(f"no kubelet verdict in the pod status (phase {phase!r})")


def real_verdicts(
    *,
    pods: Sequence[PodSpec],
    statuses: Mapping[str, Mapping[str, Any]],
    listed: Sequence[PodResources],
    profile: NodeProfile,
    dynamic: Mapping[str, Mapping[str, tuple[ClaimPlacement, ...]]] | None = None,
) -> tuple[Verdict, ...]:
    """The real kubelet's verdicts: ``statuses`` maps pod key -> Pod ``status``;
    ``listed`` is the podresources ``List`` answer taken after the last pod, and
    ``dynamic`` its ``dynamic_resources`` (pod key -> container -> claims)."""
    dynamic = dynamic or {}
    inventory = DeviceInventory.from_profile(profile)
    by_key = {p.key: p for p in listed}
    out = []
    for pod in pods:
        if pod.key not in statuses:
            raise ValueError(f"pod {pod.key}: no status from the kubelet")
        try:
            admitted, reason, message = verdict_from_status(statuses[pod.key])
        except ValueError as exc:
            raise ValueError(f"pod {pod.key}: {exc}") from None
        claims = bool(pod.resource_claims)
        if not admitted:
            out.append(Verdict(pod.key, False, reason, message, claims=claims))
            continue
        names = [c.name for c in pod.sidecars] + [c.name for c in pod.containers]
        reported = {c.name: c for c in by_key[pod.key].containers} if pod.key in by_key else {}
        containers = []
        for name in names:
            c = reported.get(name)
            listed_claims = dynamic.get(pod.key, {}).get(name, ())
            if c is None:
                containers.append(ContainerPlacement(name, dynamic=listed_claims))
                continue
            devices: dict[str, list[str]] = {}
            for d in c.devices:
                devices.setdefault(d.resource_name, []).extend(d.device_ids)
            containers.append(
                ContainerPlacement(
                    name,
                    frozenset(c.cpu_ids),
                    {
                        r: DevicePlacement(_numa_list(ids, inventory.numa_of(r)), frozenset(ids))
                        for r, ids in devices.items()
                        if ids
                    },
                    tuple(
                        sorted((m.memory_type, m.size, tuple(sorted(m.numa_ids))) for m in c.memory)
                    ),
                    listed_claims,
                )
            )
        out.append(
            Verdict(
                pod.key, True, containers=tuple(sorted(containers, key=_by_name)), claims=claims
            )
        )
    return tuple(out)


def misaligned_pods(verdicts: Sequence[Verdict], profile: NodeProfile) -> tuple[str, ...]:
    """The admitted pods with a misaligned container (:mod:`exporter.dra_alignment`):
    DRA devices on a NUMA node other than its exclusive CPUs and memory."""
    out = []
    for v in verdicts:
        for c in v.containers:
            allocation = ContainerAllocation(
                c.name,
                cpus=c.cpus,
                dynamic=tuple(_as_dynamic(p) for p in c.dynamic),
            )
            pinned = pinned_numa(profile, allocation) | {n for _, _, numa in c.memory for n in numa}
            if misalignment(c.name, pinned, placements(profile, allocation)) is not None:
                out.append(v.pod)
                break
    return tuple(out)


def dra_zones(
    verdicts: Sequence[Verdict], profile: NodeProfile
) -> dict[str, dict[int, dict[str, int]]]:
    """Per admitted pod with DRA devices: NUMA node -> driver -> how many of its devices
    sit there (by the profile; a device listed by several containers counts once, one
    without a NUMA node nowhere) - what the exporter's observed placement must show."""
    numa_of = {
        (driver.name, driver.pool, device.name): device.numa
        for driver in profile.dra
        for device in driver.devices
    }
    out: dict[str, dict[int, dict[str, int]]] = {}
    for v in verdicts:
        if not v.admitted:
            continue
        seen: set[tuple[str, str, str, str | None]] = set()
        zones: dict[int, dict[str, int]] = {}
        for c in v.containers:
            for p in c.dynamic:
                for driver, pool, device, _cdi, share in p.devices:
                    if (driver, pool, device, share) in seen:
                        continue
                    seen.add((driver, pool, device, share))
                    numa = numa_of.get((driver, pool, device))
                    if numa is not None:
                        counts = zones.setdefault(numa, {})
                        counts[driver] = counts.get(driver, 0) + 1
        if zones:
            out[v.pod] = zones
    return out


def _as_dynamic(p: ClaimPlacement) -> DynamicResource:
    namespace, _, name = p.claim.partition("/")
    return DynamicResource(
        name,
        namespace,
        tuple(ClaimResource(d, pool, dev, cdi, share) for d, pool, dev, cdi, share in p.devices),
    )


def _verdict_text(v: Verdict) -> str:
    return ADMITTED if v.admitted else f"rejected {v.reason}"


def _devices_text(devices: Mapping[str, DevicePlacement], *, ids: bool) -> str:
    parts = []
    for name in sorted(devices):
        d = devices[name]
        numa = ",".join("none" if n < 0 else str(n) for n in d.numa)
        text = f"{name} numa [{numa}]"
        if ids and d.ids is not None:
            text += f" ids {sorted(d.ids)}"
        parts.append(text)
    return "; ".join(parts) or "-"


def _memory_text(memory: tuple[tuple[str, int, tuple[int, ...]], ...]) -> str:
    return "; ".join(f"{t} {size} numa {list(numa)}" for t, size, numa in memory) or "-"


def _compare_container(
    pod: str, sim: ContainerPlacement, real: ContainerPlacement, *, claims: bool = False
) -> list[Difference]:
    diffs = []
    if sim.cpus != real.cpus:
        diffs.append(
            Difference(
                pod,
                sim.name,
                "cpus",
                format_cpulist(sim.cpus) or "-",
                format_cpulist(real.cpus) or "-",
            )
        )
    # Ids count only where the simulator says they are fixed.
    real_devices = {
        name: DevicePlacement(d.numa, d.ids if sim.devices.get(name, d).ids is not None else None)
        for name, d in real.devices.items()
    }
    if dict(sim.devices) != real_devices:
        diffs.append(
            Difference(
                pod,
                sim.name,
                "devices",
                _devices_text(sim.devices, ids=True),
                _devices_text(real_devices, ids=True),
            )
        )
    if sim.memory != real.memory:
        diffs.append(
            Difference(pod, sim.name, "memory", _memory_text(sim.memory), _memory_text(real.memory))
        )
    if claims and sim.dynamic != real.dynamic:
        diffs.append(
            Difference(
                pod, sim.name, "dynamic", _dynamic_text(sim.dynamic), _dynamic_text(real.dynamic)
            )
        )
    return diffs


def _dynamic_text(claims: Sequence[ClaimPlacement]) -> str:
    parts = []
    for p in claims:
        devices = ", ".join(
            f"{d}/{pool}/{dev} cdi {list(cdi)}" + (f" share {share}" if share else "")
            for d, pool, dev, cdi, share in p.devices
        )
        parts.append(f"{p.claim}: [{devices}]")
    return "; ".join(parts) or "-"


def compare(
    simulated: Sequence[Verdict], real: Sequence[Verdict], *, messages: bool = True
) -> tuple[Difference, ...]:
    """Every difference, in pod order. Pods must be given in the same order on both
    sides. ``messages=False`` leaves rejection messages out."""
    if [v.pod for v in simulated] != [v.pod for v in real]:
        raise ValueError("the two sides decided different pods")
    diffs: list[Difference] = []
    for sim, kub in zip(simulated, real, strict=True):
        if (sim.admitted, sim.reason) != (kub.admitted, kub.reason):
            diffs.append(
                Difference(sim.pod, None, "verdict", _verdict_text(sim), _verdict_text(kub))
            )
            continue
        if messages and sim.message != kub.message:
            diffs.append(
                Difference(sim.pod, None, "message", sim.message or "-", kub.message or "-")
            )
        if not sim.admitted:
            continue
        sims = {c.name: c for c in sim.containers}
        kubs = {c.name: c for c in kub.containers}
        for name in sorted(set(sims) | set(kubs)):
            diffs.extend(
                _compare_container(
                    sim.pod,
                    sims.get(name, ContainerPlacement(name)),
                    kubs.get(name, ContainerPlacement(name)),
                    claims=sim.claims,
                )
            )
    return tuple(diffs)


def compared_fields(verdicts: Sequence[Verdict], *, messages: bool = True) -> int:
    """How many fields :func:`compare` looks at for these (simulated) verdicts."""
    total = 0
    for v in verdicts:
        total += 1 + (1 if messages else 0)
        if v.admitted:
            fields = len(CONTAINER_FIELDS) + (len(DRA_FIELDS) if v.claims else 0)
            total += fields * len(v.containers)
    return total


def reproducer(
    *,
    scenario: str,
    profile_text: str,
    node: str,
    pods: Sequence[Mapping[str, Any]],
    differences: Sequence[Difference],
    claims: Sequence[Mapping[str, Any]] = (),
) -> str:
    """A self-contained report of a disagreement: the differences, the profile and the
    pods (in admission order) with the ResourceClaims as allocated, and how to replay the
    simulator's side."""
    lines = [f"scenario {scenario}: {len(differences)} difference(s), simulator vs kubelet"]
    for d in differences:
        where = d.pod if d.container is None else f"{d.pod} container {d.container}"
        lines.append(f"  {where}: {d.field}: simulator {d.simulator} | kubelet {d.kubelet}")
    lines += [
        "",
        f"# profile.yaml (node {node})",
        profile_text.rstrip("\n"),
        "",
        "# pods.yaml (bound in this order by spec.nodeName)",
        yaml.safe_dump_all([*pods, *claims], sort_keys=False).rstrip("\n"),
        "",
        f"# replay: fakenrt kubelet explain --profile profile.yaml --node {node} --pod pods.yaml",
    ]
    return "\n".join(lines) + "\n"
