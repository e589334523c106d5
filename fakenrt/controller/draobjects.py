"""The DRA objects of fake nodes: each node's ResourceSlices and the DeviceClasses of its
drivers, written (at controller start, or by the fake DRA kubelet plugin of a real node)
as the drivers' kubelet plugins and their installations would. Edge module (the bodies
come from :mod:`fakenrt.dra.slices`).

* Slices carry the writer's labels and are owned by their Node (so they go with it);
  a node's pool keeps its ``generation`` while its slices are unchanged and gets the next
  one when the profile changed them (as a driver republishing a changed pool does). Slices
  of ours for a node that no longer match the profile (a driver removed, fewer devices)
  are deleted; a writer serving some drivers only (``fakenrt dra-plugin --driver``) names
  them and leaves the other drivers' slices alone. :func:`drop_slices` deletes ours on
  nodes that have no DRA driver left.
* A DeviceClass is created when missing and updated when it carries our label; one that
  exists without it belongs to someone else (a real driver's installation) and is left
  alone.
* :func:`remove_dra` deletes the slices and DeviceClasses carrying the controller's label.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from exporter.kubeclient import KubeClient, path
from exporter.kubeerrors import Conflict, NotFound
from fakenrt.controller.nodeobjects import CONTROLLER_LABEL
from fakenrt.dra.slices import device_classes, resource_slices
from fakenrt.profiles.model import NodeProfile

log = logging.getLogger(__name__)

SLICES = path("apis", "resource.k8s.io", "v1", "resourceslices")
CLASSES = path("apis", "resource.k8s.io", "v1", "deviceclasses")


def _labels(controller: str) -> dict[str, str]:
    return {CONTROLLER_LABEL: controller}


def _selector(labels: Mapping[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def _content(body: Mapping[str, Any]) -> Any:
    """What identifies a slice's content: its spec without the pool generation."""
    spec = dict(body.get("spec") or {})
    pool = dict(spec.get("pool") or {})
    pool.pop("generation", None)
    spec["pool"] = pool
    return spec


def publish_slices(
    kube: KubeClient,
    profile: NodeProfile,
    *,
    node_uid: str,
    labels: Mapping[str, str],
    drivers: Collection[str] | None = None,
) -> list[str]:
    """Bring the node's ResourceSlices in line with its profile (the slices carrying
    ``labels``, of ``drivers`` when given, else of every driver); returns their names.
    The profile's name is the Node's."""
    existing, _ = kube.list_all(
        SLICES, labelSelector=_selector(labels), fieldSelector=f"spec.nodeName={profile.name}"
    )
    if drivers is not None:
        existing = [s for s in existing if (s.get("spec") or {}).get("driver") in drivers]
    current = {str(s["metadata"]["name"]): s for s in existing}
    owner = {
        "apiVersion": "v1",
        "kind": "Node",
        "name": profile.name,
        "uid": node_uid,
        "controller": True,
    }
    desired = resource_slices(profile, labels=labels, owner=owner)
    same = len(desired) == len(current) and all(
        b["metadata"]["name"] in current and _content(current[b["metadata"]["name"]]) == _content(b)
        for b in desired
    )
    generations = [int((s["spec"].get("pool") or {}).get("generation") or 0) for s in existing]
    generation = max(generations, default=0) + (0 if same else 1)
    desired = resource_slices(profile, generation=max(generation, 1), labels=labels, owner=owner)
    for body in desired:
        name = body["metadata"]["name"]
        old = current.pop(name, None)
        if old is None:
            kube.create(SLICES, body)
        elif _content(old) != _content(body) or old["spec"]["pool"] != body["spec"]["pool"]:
            body["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
            kube.replace(f"{SLICES}/{name}", body)
    for name in current:
        with contextlib.suppress(NotFound):
            kube.delete(f"{SLICES}/{name}")
    return [b["metadata"]["name"] for b in desired]


def drop_slices(kube: KubeClient, nodes: Collection[str], *, labels: Mapping[str, str]) -> int:
    """Delete the slices carrying ``labels`` on ``nodes`` (nodes whose profile has no DRA
    driver any more); returns how many. One list, however many nodes."""
    if not nodes:
        return 0
    items, _ = kube.list_all(SLICES, labelSelector=_selector(labels))
    dropped = 0
    for item in items:
        if (item.get("spec") or {}).get("nodeName") in nodes:
            with contextlib.suppress(NotFound):
                kube.delete(f"{SLICES}/{item['metadata']['name']}")
                dropped += 1
    return dropped


def publish_classes(kube: KubeClient, profiles: Sequence[NodeProfile], *, controller: str) -> None:
    """Create or update the fleet's DeviceClasses (raises DeviceClassConflict)."""
    for body in device_classes(profiles, labels=_labels(controller)):
        name = body["metadata"]["name"]
        try:
            kube.create(CLASSES, body)
            continue
        except Conflict:
            pass
        current = kube.get(f"{CLASSES}/{name}")
        labels = (current.get("metadata") or {}).get("labels") or {}
        if labels.get(CONTROLLER_LABEL) != controller:
            log.warning(
                "DeviceClass %s exists and is not ours (labels %s): leaving it as it is",
                name, labels,
            )  # fmt: skip
            continue
        if current.get("spec") != body["spec"]:
            body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            kube.replace(f"{CLASSES}/{name}", body)


def remove_dra(kube: KubeClient, *, controller: str) -> None:
    """Delete every ResourceSlice and DeviceClass carrying the controller's label."""
    for collection in (SLICES, CLASSES):
        items, _ = kube.list_all(collection, labelSelector=_selector(_labels(controller)))
        for item in items:
            with contextlib.suppress(NotFound):
                kube.delete(f"{collection}/{item['metadata']['name']}")
