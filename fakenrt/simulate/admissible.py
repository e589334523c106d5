"""Pods no node of the scenario could ever admit, and why. Pure.

A node's kubelet admits a pod or not from the resources still free on it; an empty node
(holding only the profile's foreign pods, which never leave) has the most free, so a pod
its kubelet refuses on every empty node shape of the scenario is refused on every node at
every moment of any run, under every strategy: no scheduler can place it. Each pod shape
(what admission depends on: everything but the pod's name) is tried once per node shape
(the profile the nodes copy) with the kubelet simulator itself
(:meth:`fakenrt.kubelet.node.NodeState.admit`: the Topology Manager, then the whole-node
fit), and the refusals are kept - the kubelet's reason and message on each node shape.
In the DRA mode a node shape with DRA GPUs (:mod:`fakenrt.simulate.dra`) admits the pod
without its GPU requests, and refuses it as the scheduler does (``Unschedulable``) when
it has fewer DRA GPUs than the pod asks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from fakenrt.kubelet.node import NodeState
from fakenrt.podspec import PodSpec, effective_requests
from fakenrt.profiles.model import NodeProfile
from fakenrt.scheduler.cycle import pod_shape
from fakenrt.simulate.dra import admission_spec, gpu_driver, too_few
from fakenrt.simulate.scenario import Scenario
from fakenrt.simulate.workload import GPU, size_label

#: Pod names listed per never-admissible shape (the count says how many there are).
SHOWN_PODS = 5


@dataclass(frozen=True)
class Refusal:
    """What the kubelet of one node shape says to the pod on an empty node."""

    node_shape: str
    nodes: int
    reason: str
    message: str


@dataclass(frozen=True)
class Inadmissible:
    """Pods of one shape that no node shape admits."""

    pod_class: str
    size: str
    #: The first :data:`SHOWN_PODS` of them (``namespace/name``), in workload order.
    pods: tuple[str, ...]
    count: int
    refusals: tuple[Refusal, ...]


def _shapes(scenario: Scenario) -> dict[str, tuple[NodeProfile, int]]:
    """Node shape (profile name) -> a node of it and how many nodes have it."""
    out: dict[str, tuple[NodeProfile, int]] = {}
    for node in scenario.nodes:
        name = scenario.profile_of(node.name)
        kept = out.get(name)
        out[name] = (node, 1) if kept is None else (kept[0], kept[1] + 1)
    return out


def _refusals(
    spec: PodSpec,
    empty: Mapping[str, NodeState],
    shapes: Mapping[str, tuple[NodeProfile, int]],
    *,
    dra: bool,
) -> tuple[Refusal, ...] | None:
    """The refusal of every node shape, or None when one admits the pod."""
    refusals = []
    for name, state in empty.items():
        driver = gpu_driver(shapes[name][0]) if dra else None
        admitted = spec if driver is None else admission_spec(spec)
        problem = None
        if driver is not None:
            problem = too_few(int(effective_requests(spec).get(GPU, 0)), driver)
        if problem is not None:
            reason, message = "Unschedulable", problem
        else:
            result = state.copy().admit(admitted)
            if result.admit:
                return None
            reason, message = result.reason or "", result.message or ""
        refusals.append(
            Refusal(node_shape=name, nodes=shapes[name][1], reason=reason, message=message)
        )
    return tuple(refusals)


def never_admissible(scenario: Scenario) -> tuple[Inadmissible, ...]:
    """Every pod shape of the workload that no node shape's kubelet admits on an empty
    node, in workload order of their first pod."""
    shapes = _shapes(scenario)
    empty = {name: NodeState.from_profile(node) for name, (node, _) in shapes.items()}
    verdicts: dict[str, tuple[Refusal, ...] | None] = {}
    found: dict[str, Inadmissible] = {}
    for item in scenario.workload:
        key = pod_shape(item.spec)
        if key not in verdicts:
            verdicts[key] = _refusals(item.spec, empty, shapes, dra=scenario.settings.dra)
        refusals = verdicts[key]
        if refusals is None:
            continue
        kept = found.get(key)
        if kept is None:
            found[key] = Inadmissible(
                pod_class=item.pod_class,
                size=size_label(item.spec),
                pods=(item.key,),
                count=1,
                refusals=refusals,
            )
        else:
            pods = kept.pods if len(kept.pods) >= SHOWN_PODS else (*kept.pods, item.key)
            found[key] = replace(kept, pods=pods, count=kept.count + 1)
    return tuple(found.values())
