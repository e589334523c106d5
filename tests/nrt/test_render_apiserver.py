"""Rendered NRT objects are accepted by the real API server's CRD and read back unchanged."""

from __future__ import annotations

import uuid

from kubernetes import client

from fakenrt.nrt import render_nrt
from fakenrt.profiles import example_profile, load_profiles

NRT_GROUP, NRT_VERSION, NRT_PLURAL = "topology.node.k8s.io", "v1alpha2", "noderesourcetopologies"


def test_every_example_node_round_trips(api_client: client.ApiClient, nrt_crd: list[str]) -> None:
    api = client.CustomObjectsApi(api_client)
    profiles = [p for name in ("dgx", "shapes") for p in load_profiles(example_profile(name))]
    for profile in profiles:
        body = render_nrt(profile, usage=None, pods=["ns/p1", "ns/p2"])
        # a unique name: other tests of the session may publish NRTs for the example nodes
        name = f"{profile.name}-{uuid.uuid4().hex[:6]}"
        body["metadata"]["name"] = name
        api.create_cluster_custom_object(NRT_GROUP, NRT_VERSION, NRT_PLURAL, body)
        try:
            got = api.get_cluster_custom_object(NRT_GROUP, NRT_VERSION, NRT_PLURAL, name)
            for key in ("topologyPolicies", "zones", "attributes"):
                assert got[key] == body[key], (profile.name, key)
        finally:
            api.delete_cluster_custom_object(NRT_GROUP, NRT_VERSION, NRT_PLURAL, name)
