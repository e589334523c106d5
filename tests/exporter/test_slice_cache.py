"""The exporter's ResourceSlice cache against the real API server: only the node's slices
(field selector), changes seen through the watch, devices placed by the slices as they
are now; and a cluster that does not serve resource.k8s.io/v1."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client

from exporter.dra_numa import RULE_NONE, RULE_STANDARD
from exporter.kube_slices import SLICES, SliceApi
from exporter.kubeclient import KubeClient
from exporter.kubeerrors import NotFound
from exporter.resources import ClaimDevice
from exporter.slice_cache import SliceCache
from fakenrt.dra.slices import resource_slices
from fakenrt.profiles import parse_profiles
from tests.controller.conftest import admin_kube
from tests.controlplane.cluster import ControlPlane
from tests.controlplane.helpers import admin_client, ensure_service_account
from tests.exporter.kube_helpers import exporter_kube


def _wait(probe: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 20
    while not probe():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _slices(node: str, numa: int) -> list[dict[str, Any]]:
    (profile,) = parse_profiles(
        {
            "nodes": [
                {
                    "name": node,
                    "zones": [{"id": numa, "cpus": "0", "memory": 0, "dra": {"gpu.nvidia.com": 1}}],
                }
            ]
        },
        source="t",
    )
    return resource_slices(profile)


def _no_pci(address: str) -> int | None:
    return None


@pytest.mark.controlplane
def test_the_nodes_slices_and_their_changes(control_plane: ControlPlane) -> None:
    kube: KubeClient = admin_kube(control_plane.server, control_plane)
    node, other = f"sc-{uuid.uuid4().hex[:6]}", f"sc-{uuid.uuid4().hex[:6]}"
    for body in (*_slices(node, 0), *_slices(other, 1)):
        kube.create(SLICES, body)
    changes = threading.Event()
    cache = SliceCache(SliceApi(kube), node, on_change=changes.set)
    stop = threading.Event()
    thread = threading.Thread(target=cache.run, args=(stop,), daemon=True)
    thread.start()
    gpu = ClaimDevice("gpu.nvidia.com", node, "gpu-0")
    try:
        assert cache.synced.wait(20) and cache.served
        where = cache.locate(gpu, _no_pci)
        assert (where.numa, where.rule) == (0, RULE_STANDARD)
        # the other node's slice is not listed: its device is unknown here
        assert (
            cache.locate(ClaimDevice("gpu.nvidia.com", other, "gpu-0"), _no_pci).rule == RULE_NONE
        )

        (moved,) = _slices(node, 1)
        current = kube.get(f"{SLICES}/{moved['metadata']['name']}")
        moved["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        moved["spec"]["pool"]["generation"] = 2
        kube.replace(f"{SLICES}/{moved['metadata']['name']}", moved)
        _wait(lambda: cache.locate(gpu, _no_pci).numa == 1, "the moved device")

        kube.delete(f"{SLICES}/{moved['metadata']['name']}")
        _wait(lambda: cache.locate(gpu, _no_pci).rule == RULE_NONE, "the deleted slice")
    finally:
        stop.set()
        cache.interrupt()
        thread.join(10)
        kube.delete(f"{SLICES}/{_slices(other, 1)[0]['metadata']['name']}")
    assert not thread.is_alive()


class _NotServed:
    def __init__(self) -> None:
        self.lists = 0

    def list_node_slices(self, node_name: str) -> tuple[str, list[dict[str, Any]]]:
        self.lists += 1
        raise NotFound(404, "the server could not find the requested resource")

    def watch_node_slices(
        self, node_name: str, resource_version: str, *, on_open: Any = None
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        raise AssertionError("never watched")


def test_a_cluster_without_dra_places_no_device() -> None:
    source = _NotServed()
    cache = SliceCache(source, "n1")
    stop = threading.Event()
    thread = threading.Thread(target=cache.run, args=(stop,), daemon=True)
    thread.start()
    assert cache.synced.wait(10)
    assert cache.served is False
    assert cache.locate(ClaimDevice("gpu.nvidia.com", "n1", "gpu-0"), _no_pci).rule == RULE_NONE
    stop.set()
    thread.join(10)
    assert not thread.is_alive() and source.lists == 1


@pytest.mark.controlplane
def test_an_exporter_not_granted_slices_says_so_once_and_keeps_running(
    control_plane: ControlPlane, caplog: pytest.LogCaptureFixture
) -> None:
    """An install whose ClusterRole predates DRA: the API server refuses the list (403)."""
    admin = admin_client(control_plane)
    sa = f"no-dra-{uuid.uuid4().hex[:6]}"
    ensure_service_account(admin, "default", sa)
    token = (
        client.CoreV1Api(admin)
        .create_namespaced_service_account_token(
            sa, "default", client.AuthenticationV1TokenRequest(spec={"audiences": []})
        )
        .status.token
    )
    cache = SliceCache(SliceApi(exporter_kube(control_plane, token)), "n1")
    stop = threading.Event()
    thread = threading.Thread(target=cache.run, args=(stop,), daemon=True)
    with caplog.at_level(logging.ERROR, logger="exporter.slice_cache"):
        thread.start()
        assert cache.synced.wait(20)
        stop.set()
        thread.join(10)
    assert cache.forbidden and cache.served is None and not thread.is_alive()
    (line,) = [r.getMessage() for r in caplog.records]
    assert "manifests/exporter/rbac.yaml" in line
    assert cache.locate(ClaimDevice("gpu.nvidia.com", "n1", "gpu-0"), _no_pci).rule == RULE_NONE


def test_hostile_numbers_of_slices_are_bounded() -> None:
    cache = SliceCache(_NotServed(), "n1")
    many = [{"metadata": {"name": f"s{i}"}} for i in range(5000)]
    cache.replace(many)
    cache.upsert({"metadata": {"name": "one-more"}})
    assert cache.generation == 1  # 4096 kept, the rest refused
