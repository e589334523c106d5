"""Node registration and removal: the only code that creates or deletes Node objects. Edge.

A profile's node is created when missing (with a healthy status: a new node has no
recorded state its kubelet could refuse) and updated (labels, taint) when it exists and
carries this controller's labels. An existing node's status is not written here: it keeps
the one it has until the core's first report (``Fleet.start``), which knows whether its
simulated kubelet starts. A node that exists without the labels belongs to someone else
(a real node, another controller): it is left untouched, reported, and the profile is not
served. Removal deletes only nodes selected by this controller's labels, with their Lease
and NodeResourceTopology.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from exporter.kubeclient import STRATEGIC_MERGE_PATCH, KubeClient, path
from exporter.kubeerrors import Conflict, NotFound
from fakenrt.controller.nodeobjects import (
    MEMORY_STATE_ANNOTATION,
    NodeIdentity,
    is_owned,
    merged_taints,
    node_labels,
    node_object,
    node_status,
    owner_selector,
)
from fakenrt.controller.writers import NUMATOPOLOGY, lease_path, nrt_path
from fakenrt.profiles.model import NodeProfile

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Registration:
    """The outcome of registering a fleet: node name -> uid for the nodes served, the
    profiles skipped because a node of that name is not ours, and node name -> the
    recorded Memory Manager state found on the Node (annotation
    ``fakenrt.io/memory-manager-state``), where present."""

    node_uids: dict[str, str]
    foreign: tuple[str, ...]
    memory_states: dict[str, str] = field(default_factory=dict)


def register_nodes(
    kube: KubeClient,
    nodes: Sequence[tuple[NodeProfile, NodeIdentity]],
    *,
    controller: str,
    taint: bool,
    now: float,
    workers: int = 1,
) -> Registration:
    """Create or update every node (``workers`` at a time; a created one gets a healthy
    status with heartbeat ``now``); report the foreign ones."""

    def one(entry: tuple[NodeProfile, NodeIdentity]) -> tuple[str, _Registered | None]:
        profile, identity = entry
        return profile.name, _register(
            kube, profile, identity=identity, controller=controller, taint=taint, now=now
        )

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="fakenrt-register") as pool:
        results = list(pool.map(one, nodes))
    uids = {name: got.uid for name, got in results if got is not None}
    foreign = tuple(name for name, got in results if got is None)
    states = {
        name: got.memory_state
        for name, got in results
        if got is not None and got.memory_state is not None
    }
    return Registration(uids, foreign, states)


@dataclass(frozen=True)
class _Registered:
    uid: str
    memory_state: str | None


def _register(
    kube: KubeClient,
    profile: NodeProfile,
    *,
    identity: NodeIdentity,
    controller: str,
    taint: bool,
    now: float,
) -> _Registered | None:
    """The node's uid and recorded Memory Manager state, or None when a node of that name
    exists and is not ours."""
    desired = node_object(profile, identity, controller=controller, taint=taint)
    node_path = path("api", "v1", "nodes", profile.name)
    created = False
    try:
        current = kube.get(node_path)
    except NotFound:
        try:
            current = kube.create(path("api", "v1", "nodes"), desired)
            created = True
        except Conflict:
            current = kube.get(node_path)
    labels = (current.get("metadata") or {}).get("labels")
    if not is_owned(labels, controller):
        log.error(
            "node %s exists and is not owned by controller %r (labels %s); "
            "leaving it alone and not serving this profile",
            profile.name, controller, labels or {},
        )  # fmt: skip
        return None
    # A merge patch replaces the taint list whole: send back the node's other taints, and
    # make it conditional on the version read, so a taint added meanwhile is not lost.
    while True:
        taints = merged_taints((current.get("spec") or {}).get("taints") or [], taint=taint)
        patch = {
            "metadata": {
                "labels": node_labels(profile, controller),
                "resourceVersion": current["metadata"]["resourceVersion"],
            },
            "spec": {"taints": taints},
        }
        try:
            patched = kube.patch(node_path, patch)
            break
        except Conflict:
            current = kube.get(node_path)
    if created:
        # A brand-new node has no recorded state, so its kubelet starts: healthy at once.
        # A node that exists is being restored and keeps the status it has until the core
        # has checked its recorded state (the Fleet's first status report): a simulated
        # kubelet that refuses to start must never be seen Ready, not even for a moment.
        kube.patch(
            path("api", "v1", "nodes", profile.name, "status"),
            {"status": node_status(profile, identity, at=now)},
            content_type=STRATEGIC_MERGE_PATCH,
        )
    annotations = patched["metadata"].get("annotations") or {}
    state = annotations.get(MEMORY_STATE_ANNOTATION)
    return _Registered(str(patched["metadata"]["uid"]), state if isinstance(state, str) else None)


def remove_nodes(kube: KubeClient, *, controller: str) -> list[str]:
    """Delete every node this controller owns, with its Lease, NRT and Numatopology (where
    Volcano's CRD is installed), and the controller's ResourceSlices and DeviceClasses.
    Returns the node names."""
    from fakenrt.controller.draobjects import remove_dra

    with contextlib.suppress(NotFound):  # resource.k8s.io/v1 not served: nothing to remove
        remove_dra(kube, controller=controller)
    nodes, _ = kube.list_all(path("api", "v1", "nodes"), labelSelector=owner_selector(controller))
    removed: list[str] = []
    for node in nodes:
        meta = node.get("metadata") or {}
        name = str(meta.get("name"))
        if not is_owned(meta.get("labels"), controller):
            continue
        for target in (nrt_path(name), NUMATOPOLOGY.path(name), lease_path(name)):
            with contextlib.suppress(NotFound):
                kube.delete(target)
        try:
            kube.delete(
                path("api", "v1", "nodes", name), {"preconditions": {"uid": meta.get("uid")}}
            )
        except (NotFound, Conflict):
            continue
        removed.append(name)
    return removed
