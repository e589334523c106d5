"""Per fake node, what a real node offers numa-exporter: a podresources socket and sysfs.

Edge module. Under ``<state_dir>/<node>/``: ``kubelet.sock`` (the fake podresources gRPC
server, ``fakenrt.podresources_server``) and ``sys/`` (``devices/system/node/node<N>/
cpulist`` and friends, ``fakenrt.sysfs``). The servers share one small worker pool (no
thread per node for requests) and rate-limit like the kubelet (100 QPS, burst 10, per
socket). What a socket reports is replaced atomically on every admission or release, so
it always equals the simulator's allocations.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from concurrent import futures
from pathlib import Path

from fakenrt.kubelet.allocation import PodAllocation
from fakenrt.podresources_server import DEFAULT_BURST, DEFAULT_QPS, PodResourcesServer
from fakenrt.profiles.model import NodeProfile
from fakenrt.sysfs import write_sysfs

SOCKET_NAME = "kubelet.sock"
SYSFS_NAME = "sys"


def socket_path(state_dir: Path, node: str) -> Path:
    return state_dir / node / SOCKET_NAME


def sysfs_root(state_dir: Path, node: str) -> Path:
    return state_dir / node / SYSFS_NAME


class NodeSnapshot:
    """The podresources source of one node: its profile and current allocations."""

    def __init__(self, profile: NodeProfile) -> None:
        self._state: tuple[NodeProfile, Sequence[PodAllocation]] = (profile, ())

    def set(self, allocations: Sequence[PodAllocation]) -> None:
        self._state = (self._state[0], tuple(allocations))  # one atomic reference swap

    def snapshot(self) -> tuple[NodeProfile, Sequence[PodAllocation]]:
        return self._state


class NodeEndpoints:
    """The podresources servers and sysfs trees of every served node."""

    def __init__(self, state_dir: Path, *, pool_workers: int = 4) -> None:
        self.state_dir = state_dir
        self._pool = futures.ThreadPoolExecutor(
            max_workers=pool_workers, thread_name_prefix="fakenrt-podresources"
        )
        self._sources: dict[str, NodeSnapshot] = {}
        self._servers: dict[str, PodResourcesServer] = {}
        self._lock = threading.Lock()

    def start(self, profiles: Iterable[NodeProfile]) -> None:
        for profile in profiles:
            write_sysfs(sysfs_root(self.state_dir, profile.name), profile)
            source = NodeSnapshot(profile)
            server = PodResourcesServer(
                socket_path(self.state_dir, profile.name),
                source,
                thread_pool=self._pool,
                rate_limit=(DEFAULT_QPS, DEFAULT_BURST),  # the kubelet's default limiter
            )
            server.start()
            with self._lock:
                self._sources[profile.name] = source
                self._servers[profile.name] = server

    def serve(self, node: str, allocations: Sequence[PodAllocation]) -> None:
        source = self._sources.get(node)
        if source is not None:
            source.set(allocations)

    def withdraw(self, node: str) -> None:
        """Stop the node's server and remove its socket (its kubelet is not running)."""
        with self._lock:
            server = self._servers.pop(node, None)
        if server is not None:
            server.stop(grace=0.5)

    def stop(self) -> None:
        with self._lock:
            servers = list(self._servers.values())
            self._servers.clear()
        for server in servers:
            server.stop(grace=0.5)
        self._pool.shutdown(wait=False)
