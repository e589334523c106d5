"""DRA devices in what the kubelets hold, and which pods run misaligned. Pure.

The simulated kubelet's allocation record (``fakenrt.io/allocation``) holds what admission
gave a pod - exclusive CPUs, device-plugin devices, memory - not its DRA devices: those
the kubelet prepares after admission, exactly as the pod's ResourceClaims were allocated
(``status.allocation``, written by the scheduler's allocator). So what a Running pod
holds through DRA is its claims' allocation, and :func:`with_claims` adds it to the
record. Where each device sits is the profile's (the ResourceSlices the controller
published say the same); whether a pod runs misaligned is the definition the exporter
and ``fakenrt kubelet explain`` share (``exporter/dra_alignment.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from exporter.dra_alignment import DraPlacement, misalignment
from fakenrt.kubelet.allocation import ClaimResource, DynamicResource, PodAllocation
from fakenrt.profiles import NodeProfile
from tests.e2e.allocations import Allocations
from tests.e2e.outcome import node_of, phase

#: The metric naming a pod the exporter sees running misaligned (docs/exporter.md).
MISALIGNED_METRIC = "numa_exporter_dra_pod_misaligned"
#: The exporter's Event about such a pod.
MISALIGNED_EVENT = "DRAMisaligned"


def claim_devices(claim: Mapping[str, Any]) -> tuple[ClaimResource, ...]:
    """The devices the allocator gave ``claim`` (none while it is not allocated)."""
    allocation = (claim.get("status") or {}).get("allocation") or {}
    results = (allocation.get("devices") or {}).get("results") or []
    return tuple(
        ClaimResource(
            driver=str(r.get("driver")),
            pool=str(r.get("pool")),
            device=str(r.get("device")),
            share_id=r.get("shareID"),
        )
        for r in results
    )


def _claims_of_container(pod: Mapping[str, Any], container: str) -> list[str]:
    """The ResourceClaim names ``container`` of ``pod`` uses: a claim the pod names, or the
    one the resourceclaim controller made from a template (named in the pod's
    ``status.resourceClaimStatuses``; not yet made: none)."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    made = {
        c.get("name"): c.get("resourceClaimName") for c in status.get("resourceClaimStatuses") or []
    }
    by_pod_name = {
        c.get("name"): c.get("resourceClaimName") or made.get(c.get("name"))
        for c in spec.get("resourceClaims") or []
    }
    for c in spec.get("containers") or []:
        if c.get("name") == container:
            used = ((c.get("resources") or {}).get("claims")) or []
            return [str(by_pod_name[u["name"]]) for u in used if by_pod_name.get(u.get("name"))]
    return []


def with_claims(
    allocations: Allocations,
    listed: Iterable[Mapping[str, Any]],
    claims: Mapping[str, Mapping[str, Any]],
) -> dict[str, PodAllocation]:
    """``allocations`` with, for every Running pod, the DRA devices the kubelet prepared
    for its containers: their claims' allocated devices."""
    out = dict(allocations)
    for pod in listed:
        name = pod["metadata"]["name"]
        allocation = out.get(name)
        if allocation is None or phase(pod) != "Running":
            continue
        containers = []
        for c in allocation.containers:
            dynamic = tuple(
                DynamicResource(claim, pod["metadata"]["namespace"], claim_devices(claims[claim]))
                for claim in _claims_of_container(pod, c.name)
                if claim in claims
            )
            containers.append(replace(c, dynamic=dynamic) if dynamic else c)
        out[name] = replace(allocation, containers=tuple(containers))
    return out


def device_zone(profile: NodeProfile, device: ClaimResource) -> int | None:
    """The NUMA node of a DRA device of ``profile`` (None: none, or not the node's)."""
    driver = profile.dra_driver(device.driver)
    if driver is None or driver.pool != device.pool:
        return None
    found = driver.device(device.device)
    return found.numa if found is not None else None


def misaligned(profile: NodeProfile, allocation: PodAllocation) -> list[str]:
    """The containers of ``allocation`` whose DRA devices lie off the NUMA nodes of their
    exclusive CPUs and memory, described (empty: aligned)."""
    zone_of_cpu = {cpu: z.id for z in profile.zones for cpu in z.cpus}
    out = []
    for c in allocation.containers:
        pinned = {zone_of_cpu[cpu] for cpu in c.cpus} | {n for b in c.memory for n in b.numa}
        devices = [
            DraPlacement(r.driver, r.pool, r.device, device_zone(profile, r))
            for d in c.dynamic
            for r in d.resources
        ]
        found = misalignment(c.name, pinned, devices)
        if found is not None:
            out.append(found.describe())
    return out


def misaligned_pods(
    listed: Iterable[Mapping[str, Any]],
    profiles: Mapping[str, NodeProfile],
    allocations: Allocations,
) -> dict[str, list[str]]:
    """Running pod -> how it runs misaligned, for every such pod (the truth the exporter's
    report is held to)."""
    out: dict[str, list[str]] = {}
    for pod in listed:
        node, name = node_of(pod), pod["metadata"]["name"]
        running = phase(pod) == "Running" and name in allocations
        if not running or node is None or node not in profiles:
            continue
        found = misaligned(profiles[node], allocations[name])
        if found:
            out[name] = found
    return out


def reported_misaligned(events: Iterable[Mapping[str, Any]]) -> set[str]:
    """Pods the exporter wrote a ``DRAMisaligned`` Event about."""
    return {
        str((e.get("involvedObject") or {}).get("name"))
        for e in events
        if e.get("reason") == MISALIGNED_EVENT
        and ((e.get("source") or {}).get("component") or e.get("reportingComponent"))
        == "numa-exporter"
    }


def metric_misaligned(texts: Iterable[str], namespace: str) -> set[str]:
    """Pods of ``namespace`` the exporters' metrics name running misaligned
    (``numa_exporter_dra_pod_misaligned{namespace,pod} 1``)."""
    return {
        s.labels["pod"]
        for text in texts
        for family in text_string_to_metric_families(text)
        if family.name == MISALIGNED_METRIC
        for s in family.samples
        if s.labels.get("namespace") == namespace and s.value == 1
    }
