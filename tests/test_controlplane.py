"""The real control plane the suite runs on: it answers, serves the NRT CRD, enforces
RBAC for ServiceAccounts and impersonation, and stops without leaving anything behind."""

from __future__ import annotations

import os
import uuid

import pytest
from kubernetes import client

from tests.controlplane.cluster import ControlPlane, binaries_dir
from tests.controlplane.helpers import (
    create_fake_node,
    impersonating_client,
    service_account_client,
)

NRT_GROUP, NRT_VERSION, NRT_PLURAL = "topology.node.k8s.io", "v1alpha2", "noderesourcetopologies"


def test_apiserver_answers_with_pinned_version(api_client: client.ApiClient) -> None:
    info = client.VersionApi(api_client).get_code()
    assert info.git_version.startswith("v1.36.")


def test_nrt_object_round_trips(api_client: client.ApiClient, nrt_crd: list[str]) -> None:
    assert "noderesourcetopologies.topology.node.k8s.io" in nrt_crd
    name = f"node-{uuid.uuid4().hex[:8]}"
    body = {
        "apiVersion": f"{NRT_GROUP}/{NRT_VERSION}",
        "kind": "NodeResourceTopology",
        "metadata": {"name": name},
        "topologyPolicies": ["RestrictedContainerLevel"],
        "attributes": [
            {"name": "topologyManagerPolicy", "value": "restricted"},
            {"name": "topologyManagerScope", "value": "container"},
        ],
        "zones": [
            {
                "name": "node-0",
                "type": "Node",
                "costs": [{"name": "node-0", "value": 10}, {"name": "node-1", "value": 20}],
                "resources": [
                    {"name": "cpu", "capacity": "64", "allocatable": "62", "available": "30"},
                    {
                        "name": "memory",
                        "capacity": "549755813888",
                        "allocatable": "549755813888",
                        "available": "481036337152",
                    },
                    {"name": "nvidia.com/gpu", "capacity": 4, "allocatable": 4, "available": 3},
                ],
            },
            {"name": "node-1", "type": "Node"},
        ],
    }
    api = client.CustomObjectsApi(api_client)
    api.create_cluster_custom_object(NRT_GROUP, NRT_VERSION, NRT_PLURAL, body)
    got = api.get_cluster_custom_object(NRT_GROUP, NRT_VERSION, NRT_PLURAL, name)
    for key in ("topologyPolicies", "attributes", "zones"):
        assert got[key] == body[key]
    assert got["metadata"]["name"] == name


def test_nrt_crd_rejects_a_zone_without_type(
    api_client: client.ApiClient, nrt_crd: list[str]
) -> None:
    body = {
        "apiVersion": f"{NRT_GROUP}/{NRT_VERSION}",
        "kind": "NodeResourceTopology",
        "metadata": {"name": f"bad-{uuid.uuid4().hex[:8]}"},
        "zones": [{"name": "node-0"}],
    }
    with pytest.raises(client.ApiException) as err:
        client.CustomObjectsApi(api_client).create_cluster_custom_object(
            NRT_GROUP, NRT_VERSION, NRT_PLURAL, body
        )
    assert err.value.status == 422


def _narrow_role(api_client: client.ApiClient, namespace: str, sa: str) -> None:
    rbac = client.RbacAuthorizationV1Api(api_client)
    rbac.create_namespaced_role(
        namespace,
        client.V1Role(
            metadata=client.V1ObjectMeta(name="pod-reader"),
            rules=[client.V1PolicyRule(api_groups=[""], resources=["pods"], verbs=["get", "list"])],
        ),
    )
    rbac.create_namespaced_role_binding(
        namespace,
        client.V1RoleBinding(
            metadata=client.V1ObjectMeta(name="pod-reader"),
            role_ref=client.V1RoleRef(
                api_group="rbac.authorization.k8s.io", kind="Role", name="pod-reader"
            ),
            subjects=[client.RbacV1Subject(kind="ServiceAccount", name=sa, namespace=namespace)],
        ),
    )


def test_service_account_gets_exactly_what_its_role_grants(
    control_plane: ControlPlane, api_client: client.ApiClient, namespace: str
) -> None:
    _narrow_role(api_client, namespace, "reader")
    sa_api = service_account_client(control_plane, api_client, namespace, "reader")
    core = client.CoreV1Api(sa_api)
    assert core.list_namespaced_pod(namespace).items == []
    with pytest.raises(client.ApiException) as err:
        core.list_namespaced_secret(namespace)
    assert err.value.status == 403
    with pytest.raises(client.ApiException) as err:
        core.delete_collection_namespaced_pod(namespace)
    assert err.value.status == 403
    with pytest.raises(client.ApiException) as err:
        core.list_node()
    assert err.value.status == 403


def test_impersonating_a_service_account_applies_its_rbac(
    control_plane: ControlPlane, api_client: client.ApiClient, namespace: str
) -> None:
    _narrow_role(api_client, namespace, "reader")
    as_sa = impersonating_client(control_plane, f"system:serviceaccount:{namespace}:reader")
    core = client.CoreV1Api(as_sa)
    core.list_namespaced_pod(namespace)
    with pytest.raises(client.ApiException) as err:
        core.list_namespaced_config_map(namespace)
    assert err.value.status == 403


def test_fake_node_is_ready_with_its_capacity(api_client: client.ApiClient) -> None:
    name = f"fake-{uuid.uuid4().hex[:8]}"
    node = create_fake_node(
        api_client, name, {"example.com/fake": "true"}, {"cpu": "4", "pods": "10"}
    )
    assert node.metadata.labels["example.com/fake"] == "true"
    assert node.status.allocatable["cpu"] == "4"
    assert [c.status for c in node.status.conditions if c.type == "Ready"] == ["True"]


def test_stop_leaves_no_process_or_file_behind() -> None:
    cp = ControlPlane(bin_dir=binaries_dir())
    cp.start()
    pids = [p.pid for p in cp._procs]
    assert len(pids) == 3  # etcd, kube-apiserver, kube-controller-manager
    cp.stop()
    assert not cp.workdir.exists()
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
