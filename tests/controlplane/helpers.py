"""Helpers for tests that talk to the real control plane: CRDs, fake nodes, clients
authenticated as a ServiceAccount or impersonating a user."""

from __future__ import annotations

import functools
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client

from tests.controlplane.cluster import ControlPlane

REPO_ROOT = Path(__file__).resolve().parents[2]
CRD_DIR = REPO_ROOT / "manifests" / "crds"


def admin_client(cp: ControlPlane) -> client.ApiClient:
    """A client authenticated with the static admin token (group system:masters)."""
    return token_client(cp, cp.admin_token)


def token_client(cp: ControlPlane, token: str) -> client.ApiClient:
    """A client authenticated with a bearer ``token``."""
    cfg = client.Configuration()
    cfg.host = cp.server
    cfg.ssl_ca_cert = str(cp.ca_file)
    cfg.api_key = {"authorization": token}
    cfg.api_key_prefix = {"authorization": "Bearer"}
    return client.ApiClient(cfg)


def install_crds(
    api: client.ApiClient, timeout: float = 30.0, *, files: Sequence[Path] | None = None
) -> list[str]:
    """Create (or replace) every CRD in ``files`` (default: manifests/crds) and wait until
    each is Established."""
    ext = client.ApiextensionsV1Api(api)
    names: list[str] = []
    for path in files if files is not None else sorted(CRD_DIR.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if not doc:
                continue
            name = doc["metadata"]["name"]
            try:
                existing = ext.read_custom_resource_definition(name)
                doc["metadata"]["resourceVersion"] = existing.metadata.resource_version
                ext.replace_custom_resource_definition(name, doc)
            except client.ApiException as exc:
                if exc.status != 404:
                    raise
                ext.create_custom_resource_definition(doc)
            names.append(name)
    deadline = time.monotonic() + timeout
    for name in names:
        while True:
            crd = ext.read_custom_resource_definition(name)
            conditions = crd.status.conditions or [] if crd.status else []
            if any(c.type == "Established" and c.status == "True" for c in conditions):
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"CRD {name} not Established after {timeout}s")
            time.sleep(0.1)
    return names


def ensure_namespace(api: client.ApiClient, name: str, *, timeout: float = 60.0) -> None:
    """Create a namespace (if missing) and wait until the controller-manager has made what
    a real cluster's namespace has: the ``default`` ServiceAccount (the ServiceAccount
    admission plugin refuses pods without it) and the ``kube-root-ca.crt`` ConfigMap."""
    core = client.CoreV1Api(api)
    try:
        core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    except client.ApiException as exc:
        if exc.status != 409:
            raise
    deadline = time.monotonic() + timeout
    account = functools.partial(core.read_namespaced_service_account, "default", name)
    root_ca = functools.partial(core.read_namespaced_config_map, "kube-root-ca.crt", name)
    for kind, read in (
        ("ServiceAccount default", account),
        ("ConfigMap kube-root-ca.crt", root_ca),
    ):
        while True:
            try:
                read()
                break
            except client.ApiException as exc:
                if exc.status != 404:
                    raise
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"no {kind} in namespace {name} after {timeout:.0f} s: is "
                    "kube-controller-manager running?"
                )
            time.sleep(0.1)


def ensure_service_account(api: client.ApiClient, namespace: str, name: str) -> None:
    core = client.CoreV1Api(api)
    try:
        core.create_namespaced_service_account(
            namespace, client.V1ServiceAccount(metadata=client.V1ObjectMeta(name=name))
        )
    except client.ApiException as exc:
        if exc.status != 409:
            raise


def create_fake_node(
    api: client.ApiClient,
    name: str,
    labels: Mapping[str, str] | None = None,
    capacity: Mapping[str, str] | None = None,
    *,
    ready: bool = True,
) -> Any:
    """Create a Node object (no kubelet behind it) with the given capacity (= allocatable)
    and a Ready condition, and return it."""
    core = client.CoreV1Api(api)
    resources = dict(capacity or {"cpu": "8", "memory": "32Gi", "pods": "110"})
    node = core.create_node(
        client.V1Node(metadata=client.V1ObjectMeta(name=name, labels=dict(labels or {})))
    )
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    status = {
        "status": {
            "capacity": resources,
            "allocatable": resources,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True" if ready else "False",
                    "reason": "KubeletReady" if ready else "KubeletNotReady",
                    "message": "fake node for tests",
                    "lastHeartbeatTime": now,
                    "lastTransitionTime": now,
                }
            ],
        }
    }
    core.patch_node_status(name, status)
    return core.read_node(name) if node else node


def service_account_client(
    cp: ControlPlane,
    api: client.ApiClient,
    namespace: str,
    name: str,
    *,
    expiration_seconds: int = 3600,
) -> client.ApiClient:
    """A client authenticated as ServiceAccount namespace/name via a TokenRequest (the
    ServiceAccount is created if missing)."""
    ensure_service_account(api, namespace, name)
    core = client.CoreV1Api(api)
    request = client.AuthenticationV1TokenRequest(
        spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=expiration_seconds)
    )
    response = core.create_namespaced_service_account_token(name, namespace, request)
    return token_client(cp, response.status.token)


def impersonating_client(cp: ControlPlane, user: str, group: str | None = None) -> client.ApiClient:
    """An admin client that impersonates ``user`` (and optionally one ``group``) on every
    request. Impersonating ``system:serviceaccount:<ns>:<name>`` gets that ServiceAccount's
    groups from the API server itself."""
    api = admin_client(cp)
    api.set_default_header("Impersonate-User", user)
    if group is not None:
        api.set_default_header("Impersonate-Group", group)
    return api
