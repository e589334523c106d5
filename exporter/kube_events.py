"""The one Event the exporter writes (on the shared client, ``exporter.kubeclient``): a
Warning ``DRAMisaligned`` about a pod whose DRA devices sit on a NUMA node other than its
exclusive CPUs and memory - the silent failure made visible where users look (``kubectl
describe pod``, ``kubectl get events``). A core/v1 Event, as the kubelet reports about
pods, from component ``numa-exporter`` on the node (what the admission policy in
manifests/exporter/admission-policy.yaml admits)."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from exporter.kubeclient import KubeClient, path
from exporter.kubeerrors import ApiError, Forbidden
from exporter.pods import PodView

log = logging.getLogger(__name__)

COMPONENT = "numa-exporter"
DRA_MISALIGNED = "DRAMisaligned"
#: The API server refuses a longer message.
MAX_MESSAGE = 1024


def _time(now: float) -> str:
    return datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _micro_time(now: float) -> str:
    return datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def misaligned_event(
    *, namespace: str, pod: str, uid: str, node: str, message: str, now: float
) -> dict[str, Any]:
    """The Event body (a unique name, as client-go's recorder makes them)."""
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{pod}.{os.urandom(8).hex()}", "namespace": namespace},
        "involvedObject": {
            "apiVersion": "v1",
            "kind": "Pod",
            "namespace": namespace,
            "name": pod,
            "uid": uid,
        },
        "reason": DRA_MISALIGNED,
        "message": message[:MAX_MESSAGE],
        "type": "Warning",
        "source": {"component": COMPONENT, "host": node},
        "reportingComponent": COMPONENT,
        "reportingInstance": node,
        "firstTimestamp": _time(now),
        "lastTimestamp": _time(now),
        "eventTime": _micro_time(now),
        "action": "Observe",
        "count": 1,
    }


def record_misaligned(
    client: KubeClient, *, namespace: str, pod: str, uid: str, node: str, message: str, now: float
) -> None:
    """Create the event; raises ``exporter.kubeerrors`` classes."""
    client.create(
        path("api", "v1", "namespaces", namespace, "events"),
        misaligned_event(
            namespace=namespace, pod=pod, uid=uid, node=node, message=message, now=now
        ),
        what=f"record a {DRA_MISALIGNED} event for pod {namespace}/{pod}",
    )


class MisalignedEvents:
    """Records a pod's ``DRAMisaligned`` Event off the caller's thread: ``submit`` queues a
    job under a key (the daemon's event write pool); the job creates the Event (the
    client retries what is transient) and logs what the API server refused."""

    def __init__(
        self,
        client: KubeClient,
        *,
        node: str,
        submit: Callable[[str, Callable[[], None]], bool],
        wall_clock: Callable[[], float],
    ) -> None:
        self._client = client
        self._node = node
        self._submit = submit
        self._wall_clock = wall_clock

    def record(self, pod: PodView, message: str) -> None:
        def job() -> None:
            try:
                record_misaligned(
                    self._client,
                    namespace=pod.namespace,
                    pod=pod.name,
                    uid=pod.uid,
                    node=self._node,
                    message=message,
                    now=self._wall_clock(),
                )
            except Forbidden as exc:
                log.error(
                    "the API server refused the DRAMisaligned event (RBAC: create events; "
                    "the admission policy numa-exporter-own-events-only)",
                    extra={"pod": pod.key, "error": str(exc)},
                )
            except ApiError as exc:
                log.warning(
                    "could not record the DRAMisaligned event",
                    extra={"pod": pod.key, "error": str(exc)},
                )

        self._submit(f"event/{pod.uid}", job)
