"""Fixtures for the controller tests: small profiles with unique node names, a JSON client
on the session's real API server, and a manual clock."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest

from exporter.kubeclient import KubeClient
from exporter.kubesettings import ClusterConfig
from fakenrt.profiles import NodeProfile, parse_profiles
from tests.controlplane.cluster import ControlPlane


class ManualClock:
    """An injectable clock that moves only when a test says so."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def kube(control_plane: ControlPlane) -> KubeClient:
    return admin_kube(control_plane.server, control_plane)


def admin_kube(server: str, cp: ControlPlane, *, timeout_s: float = 30.0) -> KubeClient:
    """The shared client as the controller uses it (admin token), to ``server``."""
    config = ClusterConfig(server=server, ca_file=cp.ca_file, token=cp.admin_token)
    return KubeClient(config, connect_timeout_s=timeout_s, read_timeout_s=timeout_s, pool_size=16)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def two_numa_profile(
    name: str, *, policy: str = "single-numa-node", gpus: int = 2
) -> dict[str, Any]:
    """A 2-zone node (raw profile YAML): 4 CPUs, 8Gi and ``gpus`` GPUs per zone, no
    reserved CPUs."""
    return {
        "name": name,
        "kubelet": {"topologyManagerPolicy": policy},
        "shape": {
            "numaNodes": 2,
            "coresPerNumaNode": 4,
            "threadsPerCore": 1,
            "memoryPerNumaNode": "8Gi",
            "devicesPerNumaNode": {"nvidia.com/gpu": gpus},
        },
    }


def make_profiles(*nodes: dict[str, Any]) -> tuple[NodeProfile, ...]:
    return parse_profiles({"nodes": list(nodes)}, source="test")


@pytest.fixture
def profile_factory() -> Callable[..., tuple[NodeProfile, ...]]:
    def build(count: int = 1, **kwargs: Any) -> tuple[NodeProfile, ...]:
        return make_profiles(*(two_numa_profile(unique("fake"), **kwargs) for _ in range(count)))

    return build
