"""The scheduler loop's Kubernetes edge: read a cluster snapshot, annotate, bind, record
events. The only scheduler module that talks to the API server. API errors are mapped by
HTTP status to :class:`ClusterError` subclasses."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import urllib3
from kubernetes import client

from exporter.annotations import PREDICTED_PLACEMENT
from exporter.quantities import QuantityError, parse_decimal
from fakenrt.podspec import PodSpecError, pod_from_manifest
from fakenrt.scheduler.cluster import ClusterSnapshot, NodeSnapshot, PodSnapshot
from fakenrt.scheduler.errors import ClusterError, Conflict, NotFound
from fakenrt.scheduler.nrt import NRT_GROUP, NRT_PLURAL, NRT_VERSION, NRTError, read_nrt

log = logging.getLogger(__name__)

REQUEST_TIMEOUT = 10.0


@contextmanager
def _mapped(what: str) -> Iterator[None]:
    try:
        yield
    except client.ApiException as exc:
        status = exc.status
        detail = f"{what}: HTTP {status} {exc.reason}"
        if status == 404:
            raise NotFound(detail) from exc
        if status == 409:
            raise Conflict(detail) from exc
        raise ClusterError(detail) from exc
    except OSError as exc:  # connection refused / reset, timeouts
        raise ClusterError(f"{what}: {exc}") from exc


def _ready(node: Any) -> bool:
    for cond in (node.status.conditions or []) if node.status else []:
        if cond.type == "Ready":
            return bool(cond.status == "True")
    return False


class KubeCluster:
    """Snapshot, annotate, bind and record events through one ApiClient."""

    def __init__(
        self,
        api: client.ApiClient,
        *,
        scheduler_name: str,
        node_selector: str | None = None,
    ) -> None:
        self.api = api
        self.core = client.CoreV1Api(api)
        self.custom = client.CustomObjectsApi(api)
        self.scheduler_name = scheduler_name
        self.node_selector = node_selector

    def _nrts(self) -> dict[str, Any]:
        try:
            with _mapped("list noderesourcetopologies"):
                listing = self.custom.list_cluster_custom_object(
                    NRT_GROUP, NRT_VERSION, NRT_PLURAL, _request_timeout=REQUEST_TIMEOUT
                )
        except NotFound:
            return {}  # the NRT CRD is not installed: every node passes the NUMA filter
        return {
            item["metadata"]["name"]: item
            for item in listing.get("items", [])
            if isinstance(item, dict) and isinstance(item.get("metadata"), dict)
        }

    def snapshot(self) -> ClusterSnapshot:
        kwargs: dict[str, Any] = {"_request_timeout": REQUEST_TIMEOUT}
        if self.node_selector:
            kwargs["label_selector"] = self.node_selector
        with _mapped("list nodes"):
            node_list = self.core.list_node(**kwargs)
        nrts = self._nrts()
        nodes: list[NodeSnapshot] = []
        for node in node_list.items:
            name = node.metadata.name
            allocatable = {}
            for key, raw in ((node.status.allocatable or {}) if node.status else {}).items():
                try:
                    allocatable[key] = parse_decimal(raw)
                except QuantityError:
                    log.warning(
                        "node %s: status.allocatable[%s] %r is not a quantity", name, key, raw
                    )
            nrt = None
            problem = None
            if name in nrts:
                try:
                    nrt = read_nrt(nrts[name], source="api")
                except NRTError as exc:
                    problem = str(exc)
                    log.warning("ignoring NRT of node %s: %s", name, exc)
            nodes.append(
                NodeSnapshot(
                    name=name,
                    allocatable=allocatable,
                    ready=_ready(node),
                    unschedulable=bool(node.spec and node.spec.unschedulable),
                    nrt=nrt,
                    nrt_problem=problem,
                )
            )
        with _mapped("list pods"):
            pod_list = self.core.list_pod_for_all_namespaces(_request_timeout=REQUEST_TIMEOUT)
        pods: list[PodSnapshot] = []
        for raw_pod in pod_list.items:
            manifest = self.api.sanitize_for_serialization(raw_pod)
            manifest.setdefault("kind", "Pod")
            try:
                spec = pod_from_manifest(manifest, source="api")
            except PodSpecError as exc:
                log.warning("ignoring pod: %s", exc)
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
                )
            )
        return ClusterSnapshot(nodes=tuple(nodes), pods=tuple(pods))

    def annotate(self, pod: PodSnapshot, value: str) -> None:
        """Write the predicted placement on the pod (before binding it, so no bound pod of
        ours is ever seen without a placement)."""
        body = {"metadata": {"annotations": {PREDICTED_PLACEMENT: value}}}
        with _mapped(f"patch pod {pod.key}"):
            self.core.patch_namespaced_pod(
                pod.spec.name, pod.spec.namespace, body, _request_timeout=REQUEST_TIMEOUT
            )

    def bind(self, pod: PodSnapshot, node: str) -> None:
        """Bind through the ``pods/binding`` subresource."""
        body = client.V1Binding(
            metadata=client.V1ObjectMeta(name=pod.spec.name, uid=pod.spec.uid or None),
            target=client.V1ObjectReference(api_version="v1", kind="Node", name=node),
        )
        with _mapped(f"bind pod {pod.key} to {node}"):
            self.core.create_namespaced_pod_binding(
                pod.spec.name,
                pod.spec.namespace,
                body,
                _preload_content=False,
                _request_timeout=REQUEST_TIMEOUT,
            )

    def record_unschedulable(self, pod: PodSnapshot, message: str) -> None:
        """A Warning event ``FailedScheduling`` on the pod, as kube-scheduler records."""
        now = datetime.now(UTC)
        event = client.CoreV1Event(
            metadata=client.V1ObjectMeta(
                name=f"{pod.spec.name}.{time.time_ns():x}", namespace=pod.spec.namespace
            ),
            involved_object=client.V1ObjectReference(
                api_version="v1",
                kind="Pod",
                name=pod.spec.name,
                namespace=pod.spec.namespace,
                uid=pod.spec.uid or None,
            ),
            reason="FailedScheduling",
            message=message,
            type="Warning",
            source=client.V1EventSource(component=self.scheduler_name),
            reporting_component=self.scheduler_name,
            first_timestamp=now,
            last_timestamp=now,
            count=1,
        )
        with _mapped(f"create event for pod {pod.key}"):
            self.core.create_namespaced_event(
                pod.spec.namespace, event, _request_timeout=REQUEST_TIMEOUT
            )


def watch_pods(
    api: client.ApiClient,
    scheduler_name: str,
    wake: threading.Event,
    stop: threading.Event,
    *,
    timeout_seconds: int = 30,
) -> None:
    """Set ``wake`` whenever a pod for ``scheduler_name`` changes, until ``stop`` is set
    (run in a daemon thread). Watch errors are logged and the watch restarted."""
    from kubernetes import watch

    core = client.CoreV1Api(api)
    while not stop.is_set():
        w = watch.Watch()
        try:
            for _ in w.stream(
                core.list_pod_for_all_namespaces,
                field_selector=f"spec.schedulerName={scheduler_name}",
                timeout_seconds=timeout_seconds,
            ):
                wake.set()
                if stop.is_set():
                    break
        except (client.ApiException, OSError, ValueError, urllib3.exceptions.HTTPError) as exc:
            log.debug("pod watch restarting: %s", exc)
            stop.wait(1.0)
        finally:
            w.stop()
