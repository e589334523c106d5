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
) -> dict[str, Any]:
    """A one-container pod bound to ``node`` (Guaranteed unless told otherwise)."""
    limits: dict[str, Any] = {"cpu": cpu, "memory": memory}
    if gpus:
        limits["nvidia.com/gpu"] = str(gpus)
    resources: dict[str, Any] = {"limits": limits} if guaranteed else {"requests": limits}
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
        "spec": {
            "nodeName": node,
            "containers": [{"name": "main", "image": "busybox", "resources": resources}],
        },
        "status": {"phase": "Pending"},
    }
