"""Pods in the real API server for the exporter's tests (no kubelet: status is set
through the status subresource), and polling with a timeout."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from exporter.kubeclient import KubeClient
from exporter.kubesettings import ClusterConfig
from tests.controlplane.cluster import ControlPlane
from tests.controlplane.helpers import create_fake_node

T = TypeVar("T")

GUARANTEED = {"limits": {"cpu": "2", "memory": "1Gi"}}
BEST_EFFORT: dict[str, Any] = {}


def wait_until(
    condition: Callable[[], T | None], *, timeout_s: float = 20.0, what: str = "condition"
) -> T:
    """Poll ``condition`` every 20 ms until it returns a truthy value; fail after timeout."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")
        time.sleep(0.02)


def create_pod(
    api: client.ApiClient,
    namespace: str,
    name: str,
    *,
    node: str,
    containers: Mapping[str, Mapping[str, Any]] | None = None,
    phase: str | None = "Running",
    started: bool = True,
    annotations: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
    service_account: str = "default",
) -> dict[str, Any]:
    """Create a pod bound to ``node`` (a Node object made first where there is none) and
    set its status; returns the pod as JSON."""
    core = client.CoreV1Api(api)
    ensure_node(api, node)
    spec_containers = [
        {"name": cname, "image": "registry.k8s.io/pause:3.10", "resources": dict(resources)}
        for cname, resources in (containers or {"main": BEST_EFFORT}).items()
    ]
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "annotations": dict(annotations or {}),
            "labels": dict(labels or {}),
        },
        "spec": {
            "nodeName": node,
            "serviceAccountName": service_account,
            "containers": spec_containers,
        },
    }
    core.create_namespaced_pod(namespace, body)
    if phase is not None:
        set_phase(api, namespace, name, phase, started=started)
    return read_pod(api, namespace, name)


def ensure_node(api: client.ApiClient, name: str) -> None:
    """A Node called ``name``, made (Ready, no kubelet behind it) when missing: the
    suite's kube-controller-manager deletes pods bound to a node that does not exist
    (its pod garbage collector, after 40 s), as a real cluster does."""
    try:
        client.CoreV1Api(api).read_node(name)
    except ApiException as exc:
        if exc.status != 404:
            raise
        try:
            create_fake_node(api, name)
        except ApiException as again:
            if again.status != 409:  # made meanwhile by another thread
                raise


def set_phase(
    api: client.ApiClient, namespace: str, name: str, phase: str, *, started: bool = True
) -> None:
    status: dict[str, Any] = {"phase": phase}
    if started:
        status["startTime"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    client.CoreV1Api(api).patch_namespaced_pod_status(name, namespace, {"status": status})


def read_pod(api: client.ApiClient, namespace: str, name: str) -> dict[str, Any]:
    obj = client.CoreV1Api(api).read_namespaced_pod(name, namespace)
    result: dict[str, Any] = api.sanitize_for_serialization(obj)
    return result


def annotations_of(api: client.ApiClient, namespace: str, name: str) -> dict[str, str]:
    return dict(read_pod(api, namespace, name)["metadata"].get("annotations") or {})


def merge_patch(api: client.ApiClient, namespace: str, name: str, body: dict[str, Any]) -> None:
    client.CoreV1Api(api).patch_namespaced_pod(
        name, namespace, body, _content_type="application/merge-patch+json"
    )


def delete_pod(api: client.ApiClient, namespace: str, name: str) -> None:
    client.CoreV1Api(api).delete_namespaced_pod(name, namespace, grace_period_seconds=0)


def exporter_kube(cp: ControlPlane, token: str | None = None) -> KubeClient:
    """The exporter's own API client for the test control plane (admin token by default)."""
    return KubeClient(
        ClusterConfig(server=cp.server, ca_file=cp.ca_file, token=token or cp.admin_token)
    )
