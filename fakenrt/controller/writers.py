"""Kubernetes writes of the controller, one function per effect kind. Edge module.

Each takes the :class:`~exporter.kubeclient.KubeClient` and one effect and performs it
the way the kubelet (or NFD / RTE for NRT objects) would:

* pod status: strategic-merge patch of ``pods/status`` with a uid precondition; a pod
  that is gone (404) or was replaced by a namesake (422 on ``metadata.uid``) is skipped;
* events: core/v1 Events named ``<pod>.<hex nanoseconds>`` like the kubelet's recorder
  (Node events: ``<node>.<hex nanoseconds>`` in ``default``, the Node's uid being its
  name, as the kubelet's node reference has it);
* the Memory Manager's recorded state: merge patch of one Node annotation;
* deletion: ``DELETE`` with grace period 0 and a uid precondition (404 / 409: done);
* creation of the foreign pods: ``POST`` (409, it exists: done);
* NRT (and Volcano's Numatopology, :data:`NUMATOPOLOGY`): create, or update with the
  last seen resourceVersion, at the body's API version; a conflict re-reads the object and
  retries (someone else wrote it: our state wins);
* Lease: merge patch of ``renewTime`` (created when missing);
* Node status: strategic-merge patch of ``nodes/status``.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from exporter.kubeclient import STRATEGIC_MERGE_PATCH, KubeClient, path
from exporter.kubeerrors import Conflict, Invalid, NotFound
from fakenrt import __version__
from fakenrt.controller.effects import (
    CreatePod,
    DeletePod,
    PatchPodStatus,
    PublishNrt,
    PublishNumatopology,
    RecordMemoryCheckpoint,
    RecordNodeEvent,
    RecordPodEvent,
    RenewLease,
    ReportNodeStatus,
)
from fakenrt.controller.nodeobjects import (
    CONTROLLER_LABEL,
    LEASE_NAMESPACE,
    MEMORY_STATE_ANNOTATION,
    lease_object,
)
from fakenrt.controller.timestamps import micro_time, rfc3339
from fakenrt.nrt import volcano
from fakenrt.nrt.render import KIND, NRT_GROUP, NRT_PLURAL, NRT_VERSION

_CONFLICT_RETRIES = 5


@dataclass(frozen=True)
class TopologyResource:
    """A cluster-scoped, one-per-node topology object kind the controller publishes."""

    group: str
    #: The version used where a body does not name one (deletion, a body without
    #: ``apiVersion``).
    version: str
    plural: str
    kind: str

    def path(self, name: str | None = None, *, version: str | None = None) -> str:
        parts = ["apis", self.group, version or self.version, self.plural]
        return path(*parts, name) if name else path(*parts)

    def version_of(self, body: Mapping[str, Any]) -> str:
        """The version of ``body``'s ``apiVersion`` (ValueError for another group)."""
        api_version = str(body.get("apiVersion") or f"{self.group}/{self.version}")
        group, _, version = api_version.rpartition("/")
        if group != self.group:
            raise ValueError(f"{api_version} is not a version of {self.group}")
        return version


#: NodeResourceTopology: the topology exporter's v1alpha2, or koordlet's v1alpha1.
NRT = TopologyResource(NRT_GROUP, NRT_VERSION, NRT_PLURAL, KIND)
#: Volcano's Numatopology (``nrt.volcano``).
NUMATOPOLOGY = TopologyResource(volcano.GROUP, volcano.VERSION, volcano.PLURAL, volcano.KIND)


def nrt_path(name: str | None = None) -> str:
    return NRT.path(name)


def lease_path(node: str) -> str:
    return path("apis", "coordination.k8s.io", "v1", "namespaces", LEASE_NAMESPACE, "leases", node)


def pod_path(namespace: str, name: str, *sub: str) -> str:
    return path("api", "v1", "namespaces", namespace, "pods", name, *sub)


def patch_pod_status(kube: KubeClient, effect: PatchPodStatus) -> bool:
    """Returns False when the pod is gone or is another pod now."""
    meta: dict[str, Any] = {"uid": effect.uid}
    if effect.annotations:
        meta["annotations"] = dict(effect.annotations)
    body = {"metadata": meta, "status": dict(effect.status)}
    try:
        kube.patch(
            pod_path(effect.namespace, effect.name, "status"),
            body,
            content_type=STRATEGIC_MERGE_PATCH,
        )
    except (NotFound, Conflict):
        return False
    except Invalid as exc:
        # A uid in a patch is a precondition: a namesake pod fails it as an immutable field.
        if "metadata.uid" in str(exc):
            return False
        raise
    return True


def record_event(kube: KubeClient, effect: RecordPodEvent) -> None:
    involved = {
        "apiVersion": "v1",
        "kind": "Pod",
        "namespace": effect.namespace,
        "name": effect.name,
        "uid": effect.uid,
    }
    _create_event(kube, effect, namespace=effect.namespace, name=effect.name, involved=involved)


def record_node_event(kube: KubeClient, effect: RecordNodeEvent) -> None:
    involved = {"apiVersion": "v1", "kind": "Node", "name": effect.node, "uid": effect.node}
    _create_event(kube, effect, namespace="default", name=effect.node, involved=involved)


def _create_event(
    kube: KubeClient,
    effect: RecordPodEvent | RecordNodeEvent,
    *,
    namespace: str,
    name: str,
    involved: Mapping[str, str],
) -> None:
    stamp = rfc3339(effect.at)
    body = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{name}.{int(effect.at * 1e9):x}", "namespace": namespace},
        "involvedObject": dict(involved),
        "type": effect.type,
        "reason": effect.reason,
        "message": effect.message,
        "source": {"component": "kubelet", "host": effect.node},
        "reportingComponent": "kubelet",
        "reportingInstance": effect.node,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "eventTime": None,
        "count": 1,
    }
    # NotFound: the namespace is being deleted; Conflict: this event was recorded already.
    with contextlib.suppress(NotFound, Conflict):
        kube.create(path("api", "v1", "namespaces", namespace, "events"), body)


def delete_pod(kube: KubeClient, effect: DeletePod) -> None:
    body = {"gracePeriodSeconds": 0, "preconditions": {"uid": effect.uid}}
    with contextlib.suppress(NotFound, Conflict):
        kube.delete(pod_path(effect.namespace, effect.name), body)


def create_pod(kube: KubeClient, effect: CreatePod) -> None:
    with contextlib.suppress(Conflict):
        kube.create(path("api", "v1", "namespaces", effect.namespace, "pods"), effect.manifest)


def renew_lease(kube: KubeClient, effect: RenewLease, *, node_uid: str, duration_s: int) -> None:
    spec = {
        "holderIdentity": effect.node,
        "leaseDurationSeconds": duration_s,
        "renewTime": micro_time(effect.at),
    }
    try:
        kube.patch(lease_path(effect.node), {"spec": spec})
    except NotFound:
        body = lease_object(effect.node, node_uid, at=effect.at, duration_s=duration_s)
        try:
            kube.create(
                path("apis", "coordination.k8s.io", "v1", "namespaces", LEASE_NAMESPACE, "leases"),
                body,
            )
        except Conflict:
            kube.patch(lease_path(effect.node), {"spec": spec})


def record_memory_checkpoint(kube: KubeClient, effect: RecordMemoryCheckpoint) -> None:
    """Merge-patch the Node's recorded Memory Manager state (a Node gone: nothing to do)."""
    body = {"metadata": {"annotations": {MEMORY_STATE_ANNOTATION: effect.value}}}
    with contextlib.suppress(NotFound):
        kube.patch(path("api", "v1", "nodes", effect.node), body)


def report_node_status(kube: KubeClient, effect: ReportNodeStatus) -> None:
    kube.patch(
        path("api", "v1", "nodes", effect.node, "status"),
        {"status": dict(effect.status)},
        content_type=STRATEGIC_MERGE_PATCH,
    )


class NrtWriter:
    """Creates and updates one per-node topology object kind (NodeResourceTopology by
    default), remembering resourceVersions.

    Every object gets ``labels``, and the ``fakenrt.io/controller`` label when
    ``controller`` is given (the fake controller's; ``fakenrt nrt publish`` writes none).
    """

    def __init__(
        self,
        kube: KubeClient,
        *,
        controller: str | None = None,
        labels: Mapping[str, str] | None = None,
        resource: TopologyResource = NRT,
    ) -> None:
        self._kube = kube
        self.resource = resource
        self._labels = dict(labels or {})
        if controller is not None:
            self._labels[CONTROLLER_LABEL] = controller
        self._versions: dict[str, str] = {}
        self._node_uids: dict[str, str] = {}
        self._lock = threading.Lock()
        self.writes = 0

    def set_node_uid(self, node: str, uid: str) -> None:
        self._node_uids[node] = uid

    def _object(self, node: str, body: Mapping[str, Any], version: str | None) -> dict[str, Any]:
        obj = dict(body)
        meta: dict[str, Any] = dict(obj.get("metadata") or {})
        meta["name"] = node
        meta.setdefault("labels", {})
        meta["labels"] = {**meta["labels"], **self._labels}
        meta["annotations"] = {**(meta.get("annotations") or {}), "fakenrt.io/version": __version__}
        uid = self._node_uids.get(node)
        if uid:
            meta["ownerReferences"] = [
                {"apiVersion": "v1", "kind": "Node", "name": node, "uid": uid}
            ]
        if version:
            meta["resourceVersion"] = version
        obj["metadata"] = meta
        obj.setdefault("apiVersion", f"{self.resource.group}/{self.resource.version}")
        obj.setdefault("kind", self.resource.kind)
        return obj

    def publish(self, effect: PublishNrt | PublishNumatopology) -> None:
        node = effect.node
        api = self.resource.version_of(effect.body)
        for _ in range(_CONFLICT_RETRIES):
            with self._lock:
                version = self._versions.get(node)
            try:
                if version is None:
                    result = self._kube.create(
                        self.resource.path(version=api), self._object(node, effect.body, None)
                    )
                else:
                    result = self._kube.replace(
                        self.resource.path(node, version=api),
                        self._object(node, effect.body, version),
                    )
            except Conflict:
                # Exists already (create) or changed behind our back (update): re-read.
                try:
                    current = self._kube.get(self.resource.path(node, version=api))
                    fresh = str((current.get("metadata") or {}).get("resourceVersion") or "")
                except NotFound:
                    fresh = ""
                with self._lock:
                    if fresh:
                        self._versions[node] = fresh
                    else:
                        self._versions.pop(node, None)
                continue
            except NotFound:
                with self._lock:
                    self._versions.pop(node, None)
                continue
            with self._lock:
                self._versions[node] = str(result["metadata"]["resourceVersion"])
                self.writes += 1
            return
        raise Conflict(409, f"{self.resource.kind} {node}: still conflicting after retries")

    def delete(self, node: str) -> None:
        with contextlib.suppress(NotFound):
            self._kube.delete(self.resource.path(node))
        with self._lock:
            self._versions.pop(node, None)
