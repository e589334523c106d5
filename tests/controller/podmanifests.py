"""Pod manifests as the API server returns them, for controller tests."""

from __future__ import annotations

import itertools
from typing import Any

_uids = itertools.count(1)


def pod(
    name: str,
    node: str,
    *,
    namespace: str = "ns",
    cpu: str = "1",
    memory: str = "1Gi",
    gpus: int = 0,
    guaranteed: bool = True,
    annotations: dict[str, str] | None = None,
    uid: str | None = None,
    created: str = "2027-01-01T00:00:00Z",
    init: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A one-container pod bound to ``node`` (Guaranteed unless told otherwise); ``init``:
    the limits of a regular init container ``init`` before it."""
    limits: dict[str, Any] = {"cpu": cpu, "memory": memory}
    if gpus:
        limits["nvidia.com/gpu"] = str(gpus)
    resources: dict[str, Any] = {"limits": limits} if guaranteed else {"requests": limits}
    spec: dict[str, Any] = {
        "nodeName": node,
        "containers": [{"name": "main", "image": "busybox", "resources": resources}],
    }
    if init is not None:
        spec["initContainers"] = [
            {"name": "init", "image": "busybox", "resources": {"limits": dict(init)}}
        ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": uid or f"uid-{next(_uids)}",
            "creationTimestamp": created,
            "resourceVersion": "1",
            "annotations": dict(annotations or {}),
        },
        "spec": spec,
        "status": {"phase": "Pending"},
    }
