"""What ``kubelet explain`` says about a pod's ResourceClaims: whether the kubelet could
prepare them, the devices each container gets with their NUMA nodes, and whether the pod
will run misaligned (its DRA devices on a NUMA node other than its exclusive CPUs and
memory, which the kubelet never prevents; :mod:`exporter.dra_alignment`). Pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from exporter.dra_alignment import DraPlacement, Misalignment, misalignment
from fakenrt.kubelet.allocation import ContainerAllocation, PodAllocation
from fakenrt.kubelet.dra import FAILED_PREPARE
from fakenrt.profiles.model import NodeProfile


@dataclass(frozen=True)
class DraOutcome:
    """A pod with ResourceClaims after the kubelet tried to prepare them."""

    #: The kubelet's error (without its prefix) when the claims could not be prepared.
    error: str | None
    #: The pod's allocation, with what podresources lists of its claims.
    allocation: PodAllocation
    misaligned: tuple[Misalignment, ...] = ()


def device_numa(profile: NodeProfile, driver: str, pool: str, device: str) -> int | None:
    """The NUMA node of a DRA device of the node (None: no affinity, or not the node's)."""
    found = profile.dra_driver(driver)
    if found is None or found.pool != pool:
        return None
    listed = found.device(device)
    return None if listed is None else listed.numa


def placements(profile: NodeProfile, container: ContainerAllocation) -> list[DraPlacement]:
    return [
        DraPlacement(r.driver, r.pool, r.device, device_numa(profile, r.driver, r.pool, r.device))
        for d in container.dynamic
        for r in d.resources
    ]


def pinned_numa(profile: NodeProfile, container: ContainerAllocation) -> set[int]:
    """The NUMA nodes of the container's exclusive CPUs and Memory Manager memory."""
    nodes = {profile.cpu_topology[cpu].numa for cpu in container.cpus}
    nodes.update(n for block in container.memory for n in block.numa)
    return nodes


def outcome(profile: NodeProfile, allocation: PodAllocation, error: str | None) -> DraOutcome:
    misaligned = []
    for c in allocation.containers:
        found = misalignment(c.name, pinned_numa(profile, c), placements(profile, c))
        if found is not None:
            misaligned.append(found)
    return DraOutcome(error, allocation, tuple(misaligned))


def pending_message(error: str) -> str:
    """The kubelet's event message for claims it could not prepare."""
    return f"Failed to prepare dynamic resources: prepare dynamic resources: {error}"


def dra_json(result: DraOutcome, profile: NodeProfile) -> dict[str, Any]:
    claims = []
    for c in result.allocation.containers:
        for d in c.dynamic:
            claims.append(
                {
                    "container": c.name,
                    "claim": f"{d.claim_namespace}/{d.claim_name}",
                    "devices": [
                        {
                            "driver": r.driver,
                            "pool": r.pool,
                            "device": r.device,
                            "numa": device_numa(profile, r.driver, r.pool, r.device),
                            "cdi": list(r.cdi_ids),
                            **({"shareID": r.share_id} if r.share_id is not None else {}),
                        }
                        for r in d.resources
                    ],
                }
            )
    return {
        "prepared": result.error is None,
        "event": None
        if result.error is None
        else {"reason": FAILED_PREPARE, "message": pending_message(result.error)},
        "claims": claims,
        "misaligned": [
            {
                "container": m.container,
                "devices": [{"device": d.name, "numa": d.numa} for d in m.devices],
                "pinnedNuma": list(m.pinned),
            }
            for m in result.misaligned
        ],
    }


def dra_text(result: DraOutcome, profile: NodeProfile) -> list[str]:
    lines = []
    if result.error is not None:
        lines.append(
            f"  claims not prepared - the pod stays Pending, {FAILED_PREPARE}: "
            f"{pending_message(result.error)}"
        )
    for c in result.allocation.containers:
        for d in c.dynamic:
            devices = ", ".join(
                f"{r.driver}/{r.pool}/{r.device} "
                f"(NUMA node {device_numa(profile, r.driver, r.pool, r.device)})"
                for r in d.resources
            )
            claim = f"{d.claim_namespace}/{d.claim_name}"
            lines.append(f"  {c.name}: claim {claim}: {devices or 'no device prepared'}")
    lines.extend(
        f"  MISALIGNED {m.describe()} - the kubelet aligns DRA devices with nothing"
        for m in result.misaligned
    )
    return lines
