"""The scheduler loop's Kubernetes edge: read a cluster snapshot, annotate, bind, record
events. The only scheduler module that talks to the API server, through the shared JSON
client (``exporter.kubeclient``); its errors are the shared ``exporter.kubeerrors``
classes, which the loop catches."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from exporter.kubeclient import MERGE_PATCH, KubeClient, path
from exporter.kubeerrors import ApiError, NotFound
from exporter.quantities import QuantityError, parse_decimal
from fakenrt.nrt.render import NRT_GROUP, NRT_PLURAL, NRT_VERSION
from fakenrt.podspec import PodSpecError, pod_from_manifest
from fakenrt.scheduler.cluster import ClusterSnapshot, NodeSnapshot, PodSnapshot
from fakenrt.scheduler.nrt import NRTError, read_nrt

log = logging.getLogger(__name__)

NODES = path("api", "v1", "nodes")
PODS = path("api", "v1", "pods")
NRTS = path("apis", NRT_GROUP, NRT_VERSION, NRT_PLURAL)
#: Longest wait before restarting a pod watch that keeps failing.
WATCH_RETRY_MAX_S = 30.0


def _ready(node: dict[str, Any]) -> bool:
    for cond in (node.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return bool(cond.get("status") == "True")
    return False


def _pod_path(pod: PodSnapshot, *sub: str) -> str:
    return path("api", "v1", "namespaces", pod.spec.namespace, "pods", pod.spec.name, *sub)


class KubeCluster:
    """Snapshot, annotate, bind and record events through one :class:`KubeClient`."""

    def __init__(
        self,
        kube: KubeClient,
        *,
        scheduler_name: str,
        node_selector: str | None = None,
    ) -> None:
        self.kube = kube
        self.scheduler_name = scheduler_name
        self.node_selector = node_selector
        #: object -> the problem last logged for it: each is logged when it appears or
        #: changes, not again every cycle while it lasts
        self._logged: dict[str, str] = {}
        self._seen: set[str] = set()

    def _warn(self, key: str, message: str) -> None:
        self._seen.add(key)
        if self._logged.get(key) != message:
            self._logged[key] = message
            log.warning("%s (logged once while it lasts)", message)

    def _nrts(self) -> dict[str, Any]:
        try:
            items, _ = self.kube.list_all(NRTS, what="list noderesourcetopologies")
        except NotFound:
            return {}  # the NRT CRD is not installed: every node passes the NUMA filter
        return {
            item["metadata"]["name"]: item
            for item in items
            if isinstance(item, dict) and isinstance(item.get("metadata"), dict)
        }

    def snapshot(self) -> ClusterSnapshot:
        self._seen = set()
        snapshot = self._snapshot()
        # problems that are gone may be logged again if they come back
        self._logged = {k: v for k, v in self._logged.items() if k in self._seen}
        return snapshot

    def _snapshot(self) -> ClusterSnapshot:
        query = {"labelSelector": self.node_selector} if self.node_selector else {}
        node_items, _ = self.kube.list_all(NODES, what="list nodes", **query)
        nrts = self._nrts()
        nodes: list[NodeSnapshot] = []
        for node in node_items:
            name = str(node["metadata"]["name"])
            allocatable = {}
            for key, raw in ((node.get("status") or {}).get("allocatable") or {}).items():
                try:
                    allocatable[key] = parse_decimal(raw)
                except QuantityError:
                    self._warn(
                        f"node/{name}/{key}",
                        f"node {name}: status.allocatable[{key}] {raw!r} is not a quantity",
                    )
            nrt = None
            if name in nrts:
                try:
                    nrt = read_nrt(nrts[name], source="api")
                except NRTError as exc:
                    self._warn(f"nrt/{name}", f"ignoring NRT of node {name}: {exc}")
            nodes.append(
                NodeSnapshot(
                    name=name,
                    allocatable=allocatable,
                    ready=_ready(node),
                    unschedulable=bool((node.get("spec") or {}).get("unschedulable")),
                    nrt=nrt,
                )
            )
        pod_items, _ = self.kube.list_all(PODS, what="list pods")
        pods: list[PodSnapshot] = []
        for manifest in pod_items:
            manifest.setdefault("kind", "Pod")
            try:
                spec = pod_from_manifest(manifest, source="api")
            except PodSpecError as exc:
                meta = manifest.get("metadata") or {}
                self._warn(f"pod/{meta.get('uid') or meta.get('name')}", f"ignoring pod: {exc}")
                continue
            status = manifest.get("status") or {}
            meta = manifest.get("metadata") or {}
            pods.append(
                PodSnapshot(
                    spec=spec,
                    phase=str(status.get("phase") or "Pending"),
                    scheduler_name=str(
                        manifest["spec"].get("schedulerName") or "default-scheduler"
                    ),
                    reason=str(status.get("reason") or ""),
                    created=str(meta.get("creationTimestamp") or ""),
                    started=bool(status.get("startTime")),
                )
            )
        return ClusterSnapshot(nodes=tuple(nodes), pods=tuple(pods))

    def annotate(self, pod: PodSnapshot, annotations: Mapping[str, str]) -> None:
        """Write the predicted annotations on the pod (before binding it, so no bound pod
        of ours is ever seen without a placement)."""
        self.kube.patch(
            _pod_path(pod),
            {"metadata": {"annotations": dict(annotations)}},
            content_type=MERGE_PATCH,
            what=f"patch pod {pod.key}",
        )

    def bind(self, pod: PodSnapshot, node: str) -> None:
        """Bind through the ``pods/binding`` subresource."""
        meta: dict[str, Any] = {"name": pod.spec.name}
        if pod.spec.uid:
            meta["uid"] = pod.spec.uid
        self.kube.create(
            _pod_path(pod, "binding"),
            {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": meta,
                "target": {"apiVersion": "v1", "kind": "Node", "name": node},
            },
            what=f"bind pod {pod.key} to {node}",
        )

    def record_unschedulable(self, pod: PodSnapshot, message: str) -> None:
        """A Warning event ``FailedScheduling`` on the pod, as kube-scheduler records."""
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        involved: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": pod.spec.name,
            "namespace": pod.spec.namespace,
        }
        if pod.spec.uid:
            involved["uid"] = pod.spec.uid
        self.kube.create(
            path("api", "v1", "namespaces", pod.spec.namespace, "events"),
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {
                    "name": f"{pod.spec.name}.{time.time_ns():x}",
                    "namespace": pod.spec.namespace,
                },
                "involvedObject": involved,
                "reason": "FailedScheduling",
                "message": message,
                "type": "Warning",
                "source": {"component": self.scheduler_name},
                "reportingComponent": self.scheduler_name,
                "firstTimestamp": now,
                "lastTimestamp": now,
                "count": 1,
            },
            what=f"create event for pod {pod.key}",
        )


def watch_pods(
    kube: KubeClient,
    scheduler_name: str,
    wake: threading.Event,
    stop: threading.Event,
    *,
    timeout_seconds: int = 30,
) -> None:
    """Set ``wake`` whenever a pod for ``scheduler_name`` changes, until ``stop`` is set
    (run in a daemon thread). A failed watch is logged at debug level (the loop reports an
    unreachable API server) and restarted, from the current state (the loop re-reads the
    cluster anyway), after a backoff of 1 s doubling to 30 s while watches keep failing."""
    failures = 0
    while not stop.is_set():
        try:
            for _ in kube.watch(
                PODS,
                timeout_s=timeout_seconds,
                what="watch pods",
                fieldSelector=f"spec.schedulerName={scheduler_name}",
            ):
                failures = 0
                wake.set()
                if stop.is_set():
                    break
            failures = 0
        except ApiError as exc:
            failures += 1
            delay = min(2.0 ** (failures - 1), WATCH_RETRY_MAX_S)
            log.debug("pod watch failed (restart in %.0fs): %s", delay, exc)
            stop.wait(delay)
