"""The pods that stand for a profile's foreign ``allocated`` amounts, as Pod objects. Pure.

In a real cluster every exclusive consumer of a node is a pod. A profile's ``allocated``
models such pods outside the simulation; the controller makes them visible as they would
be: one pod per zone holding anything, bound to the node (``spec.nodeName``, never
scheduled), in namespace ``kube-system``, holding exactly the zone's amounts (see
:func:`fakenrt.nrt.loaded.foreign_pods`), labelled :data:`FOREIGN_LABEL` with the node
name and the controller's label, tolerating every taint. The simulated kubelet never
admits them: they hold, from the start, the CPU ids, devices and memory blocks the node
took for its ``allocated``; they are reported by the node's podresources socket (so the
exporter annotates them like any other pod) and counted in its NRT fingerprint.
"""

from __future__ import annotations

from typing import Any

from fakenrt.controller.nodeobjects import CONTROLLER_LABEL
from fakenrt.nrt.loaded import FOREIGN_LABEL, bound_pod_manifest
from fakenrt.podspec import PodSpec

#: The image the foreign pods name (never pulled: no real kubelet runs them).
FOREIGN_IMAGE = "registry.k8s.io/pause:3.10"


def foreign_pod_object(spec: PodSpec, *, node: str, controller: str) -> dict[str, Any]:
    """The Pod object to create for one foreign pod."""
    manifest = bound_pod_manifest(spec, node=node, annotations={})
    del manifest["status"]
    manifest["metadata"]["labels"] = {FOREIGN_LABEL: node, CONTROLLER_LABEL: controller}
    pod_spec = manifest["spec"]
    for container in pod_spec["containers"]:
        container["image"] = FOREIGN_IMAGE
    pod_spec["tolerations"] = [{"operator": "Exists"}]
    pod_spec["automountServiceAccountToken"] = False
    pod_spec["terminationGracePeriodSeconds"] = 0
    return manifest
