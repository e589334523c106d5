"""podresources' ``dynamic_resources`` as the oracle compares them: read with the generated
stubs over a real unix socket (the exporter's own client does not decode them yet)."""

from __future__ import annotations

from pathlib import Path

import grpc

from fakenrt.realnode.oracle import ClaimDevice, ClaimPlacement, claim_placement
from protos.podresources.v1 import api_pb2, api_pb2_grpc

Dynamic = dict[str, dict[str, tuple[ClaimPlacement, ...]]]


def dynamic_of(response: api_pb2.ListPodResourcesResponse) -> Dynamic:
    """Pod key -> container -> its claims, in the order listed."""
    out: Dynamic = {}
    for pod in response.pod_resources:
        per_container: dict[str, tuple[ClaimPlacement, ...]] = {}
        for container in pod.containers:
            claims = []
            for d in container.dynamic_resources:
                devices: list[ClaimDevice] = [
                    (
                        r.driver_name,
                        r.pool_name,
                        r.device_name,
                        tuple(c.name for c in r.cdi_devices),
                        r.share_id if r.HasField("share_id") else None,
                    )
                    for r in d.claim_resources
                ]
                claims.append(claim_placement(f"{d.claim_namespace}/{d.claim_name}", devices))
            per_container[container.name] = tuple(claims)
        out[f"{pod.namespace}/{pod.name}"] = per_container
    return out


def list_dynamic(socket: Path, *, timeout_s: float = 10.0) -> Dynamic:
    with grpc.insecure_channel(f"unix://{socket}") as channel:
        response = api_pb2_grpc.PodResourcesListerStub(channel).List(
            api_pb2.ListPodResourcesRequest(), timeout=timeout_s
        )
    return dynamic_of(response)
