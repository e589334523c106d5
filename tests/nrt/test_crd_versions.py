"""The NRT CRD serves v1alpha1 as well as v1alpha2, as upstream's does: an object written
in one version reads back in the other on the real API server."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kubernetes import client

from fakenrt.nrt import render_nrt
from fakenrt.nrt.render import NRT_GROUP, NRT_PLURAL
from fakenrt.profiles import example_profile, load_profiles

CRD = Path(__file__).resolve().parents[2] / "manifests" / "crds" / "noderesourcetopology.yaml"


@pytest.fixture
def name(api_client: client.ApiClient, nrt_crd: list[str]) -> Iterator[str]:
    """A unique NRT name, deleted after the test."""
    value = f"crdv-{uuid.uuid4().hex[:8]}"
    yield value
    try:
        client.CustomObjectsApi(api_client).delete_cluster_custom_object(
            NRT_GROUP, "v1alpha2", NRT_PLURAL, value
        )
    except client.ApiException as exc:
        if exc.status != 404:
            raise


def _body(name: str, version: str) -> dict[str, object]:
    (profile, *_) = load_profiles(example_profile("dgx"))
    body = render_nrt(profile, usage=None, pods=["ns/a"])
    body["metadata"] = {"name": name}
    body["apiVersion"] = f"{NRT_GROUP}/{version}"
    return body


def test_the_crd_serves_both_versions_and_stores_v1alpha2() -> None:
    crd = yaml.safe_load(CRD.read_text())
    versions = {v["name"]: (v["served"], v["storage"]) for v in crd["spec"]["versions"]}
    assert versions == {"v1alpha1": (True, False), "v1alpha2": (True, True)}
    assert crd["spec"]["scope"] == "Cluster"


def test_written_as_v1alpha2_read_as_v1alpha1(api_client: client.ApiClient, name: str) -> None:
    api = client.CustomObjectsApi(api_client)
    body = _body(name, "v1alpha2")
    api.create_cluster_custom_object(NRT_GROUP, "v1alpha2", NRT_PLURAL, body)
    got = api.get_cluster_custom_object(NRT_GROUP, "v1alpha1", NRT_PLURAL, name)
    assert got["apiVersion"] == f"{NRT_GROUP}/v1alpha1"
    assert got["zones"] == body["zones"]
    assert got["topologyPolicies"] == body["topologyPolicies"]
    # v1alpha1 has no top-level attributes: pruned on the way out, kept in storage.
    assert "attributes" not in got
    again = api.get_cluster_custom_object(NRT_GROUP, "v1alpha2", NRT_PLURAL, name)
    assert again["attributes"] == body["attributes"]
    listed = api.list_cluster_custom_object(NRT_GROUP, "v1alpha1", NRT_PLURAL)
    assert name in {item["metadata"]["name"] for item in listed["items"]}


def test_written_as_v1alpha1_read_as_v1alpha2(api_client: client.ApiClient, name: str) -> None:
    api = client.CustomObjectsApi(api_client)
    body = _body(name, "v1alpha1")
    del body["attributes"]
    api.create_cluster_custom_object(NRT_GROUP, "v1alpha1", NRT_PLURAL, body)
    got = api.get_cluster_custom_object(NRT_GROUP, "v1alpha2", NRT_PLURAL, name)
    assert got["zones"] == body["zones"]
    assert got["topologyPolicies"] == body["topologyPolicies"]


def test_v1alpha1_requires_topology_policies_and_v1alpha2_does_not(
    api_client: client.ApiClient, name: str
) -> None:
    api = client.CustomObjectsApi(api_client)
    body = _body(name, "v1alpha1")
    del body["attributes"], body["topologyPolicies"]
    with pytest.raises(client.ApiException) as refused:
        api.create_cluster_custom_object(NRT_GROUP, "v1alpha1", NRT_PLURAL, body)
    assert refused.value.status == 422
    assert "topologyPolicies" in str(refused.value.body)
    body["apiVersion"] = f"{NRT_GROUP}/v1alpha2"
    api.create_cluster_custom_object(NRT_GROUP, "v1alpha2", NRT_PLURAL, body)
    got = api.get_cluster_custom_object(NRT_GROUP, "v1alpha1", NRT_PLURAL, name)
    assert "topologyPolicies" not in got
