"""The harness's own invariants, computed on pods as the API lists them. Pure.

What the kubelets hold must never overlap (:func:`double_allocations`), the exporter's
annotations must say what they hold (:func:`observation_mismatches`), and NRT
``available`` must converge to what is left (:func:`expected_available`). A scheduler
cannot break these: a violation is the harness's fault.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from exporter.annotations import (
    OBSERVED_MEMORY_GROUPS,
    OBSERVED_PLACEMENT,
    parse_zone_name,
    zone_name,
)
from exporter.dra_alignment import CPU_DRIVERS as SHARED_DRA_DRIVERS
from fakenrt.profiles import NodeProfile
from fakenrt.profiles.resources import zone_allocatable
from tests.e2e.allocations import Allocations, expected_observation
from tests.e2e.outcome import annotations_of, node_of, phase


def holding(
    listed: Iterable[Mapping[str, Any]], allocations: Allocations
) -> list[Mapping[str, Any]]:
    """Pods that hold resources on a node: bound, admitted (their kubelet holds an
    allocation), not terminal."""
    return [
        p
        for p in listed
        if node_of(p)
        and phase(p) in ("Pending", "Running")
        and p["metadata"]["name"] in allocations
    ]


def observation_mismatches(
    listed: Iterable[Mapping[str, Any]],
    profiles: Mapping[str, NodeProfile],
    allocations: Allocations,
) -> list[str]:
    """Every Running pod on the deployment's nodes whose observed annotations differ from
    what its kubelet allocated (empty: all agree). A pod with nothing aligned must carry
    no observed placement and ``[]`` memory groups."""
    problems: list[str] = []
    for pod in listed:
        node = node_of(pod)
        if phase(pod) != "Running" or node is None or node not in profiles:
            continue
        name = pod["metadata"]["name"]
        allocation = allocations.get(name)
        if allocation is None:
            problems.append(f"{name}: Running without a recorded allocation")
            continue
        placement, memory = expected_observation(profiles[node], allocation)
        got = annotations_of(pod)
        want_placement = None if placement == "[]" else placement
        if got.get(OBSERVED_PLACEMENT) != want_placement:
            problems.append(
                f"{name}: observed {got.get(OBSERVED_PLACEMENT)!r}, allocated {want_placement!r}"
            )
        if got.get(OBSERVED_MEMORY_GROUPS) != memory:
            problems.append(
                f"{name}: observed groups {got.get(OBSERVED_MEMORY_GROUPS)!r}, allocated {memory!r}"
            )
    return problems


def double_allocations(listed: Iterable[Mapping[str, Any]], allocations: Allocations) -> list[str]:
    """CPUs or devices held by two pods of the same node at once."""
    owner: dict[tuple[str, str, str], str] = {}
    problems: list[str] = []
    for pod in holding(listed, allocations):
        allocation = allocations[pod["metadata"]["name"]]
        node = str(node_of(pod))
        name = pod["metadata"]["name"]
        for container in allocation.containers:
            ids = [("cpu", str(c)) for c in container.cpus] + [
                (res, dev) for res, devs in container.devices.items() for dev in devs
            ]
            # A DRA device two claims hold (the CPU driver's shared devices excepted: their
            # claims consume capacity); one claim's device shared by containers is one.
            ids += [
                (f"{r.driver}/{r.pool}", r.device)
                for claim in container.dynamic
                for r in claim.resources
                if r.driver not in SHARED_DRA_DRIVERS
            ]
            for res, ident in ids:
                key = (node, res, ident)
                if key in owner and owner[key] != name:
                    problems.append(f"{node} {res} {ident}: held by {owner[key]} and {name}")
                owner[key] = name
    return problems


#: How long two pods must be seen holding one CPU or device before it counts as held
#: twice. The simulated kubelet writes a finished pod's Succeeded status and the next
#: pod's allocation record as writes of two objects, in parallel (a real kubelet's status
#: manager is asynchronous too), so a listing between the two shows the released CPU
#: under both pods for a moment; a double hold in the kubelet's own books lasts until one
#: of the pods ends.
HELD_TWICE_S = 2.0


def lasting_doubles(
    suspects: Mapping[str, float], current: Iterable[str], now: float
) -> tuple[dict[str, float], set[str]]:
    """Double holds of one listing (``current``, :func:`double_allocations`) followed over
    time: ``suspects`` maps each to when it was first seen (those not seen again are
    dropped: one of its pods was released). Returns the new suspects and those seen for
    at least :data:`HELD_TWICE_S`."""
    kept = {problem: suspects.get(problem, now) for problem in current}
    return kept, {problem for problem, since in kept.items() if now - since >= HELD_TWICE_S}


def expected_available(
    profile: NodeProfile, listed: Iterable[Mapping[str, Any]], allocations: Allocations
) -> dict[str, dict[str, int]]:
    """What NRT ``available`` must converge to for CPUs and devices: each zone's
    allocatable minus the profile's foreign use and the allocations of the pods holding
    resources on the node. (Memory is left out: the simulator splits a multi-NUMA group's
    memory among its zones, which no observed annotation shows.)"""
    allocatable = zone_allocatable(profile)
    used: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for zone in profile.zones:
        for res, amount in zone.allocated.items():
            used[zone.id][res] += amount
    for pod in holding(listed, allocations):
        if node_of(pod) != profile.name:
            continue
        allocation = allocations[pod["metadata"]["name"]]
        placement, _ = expected_observation(profile, allocation)
        for entry in json.loads(placement):
            zone_id = parse_zone_name(entry["zone"])
            for res, amount in entry["amount"].items():
                used[zone_id][res] += int(amount)
    return {
        zone_name(z.id): {
            res: max(0, amount - used[z.id].get(res, 0))
            for res, amount in allocatable[z.id].items()
            if not is_memory(res)
        }
        for z in profile.zones
    }


def is_memory(resource: str) -> bool:
    return resource == "memory" or resource.startswith("hugepages-")
