"""Small builders for node profiles and pods used across the kubelet simulator tests."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from exporter.quantities import parse_integer
from fakenrt.podspec import PodSpec, pod_from_manifest
from fakenrt.profiles.cputopology import zones_topology
from fakenrt.profiles.model import CpuPolicyOptions, DeviceSet, KubeletConfig, NodeProfile, Zone

GI = 1024**3


def node(
    *,
    zones: int = 2,
    cpus_per_zone: int = 4,
    threads: int = 1,
    memory: int = 64 * GI,
    devices: Mapping[str, int] | None = None,
    policy: str = "restricted",
    scope: str = "container",
    reserved: frozenset[int] = frozenset(),
    cpu_policy: str = "static",
    memory_policy: str = "Static",
    hugepages: Mapping[str, int] | None = None,
    distances: Sequence[Sequence[int]] | None = None,
    prefer_closest: bool = False,
    unhealthy: Mapping[str, int] | None = None,
    allocated: Mapping[int, Mapping[str, int]] | None = None,
    node_devices: Mapping[str, int] | None = None,
    numa_per_socket: int = 1,
    max_pods: int = 110,
    name: str = "n1",
    cpu_options: CpuPolicyOptions | None = None,
) -> NodeProfile:
    """``zones`` NUMA zones of ``cpus_per_zone`` CPUs; CPU ids numbered like Linux (first
    threads of all cores first); devices named ``<short>-<zone>-<i>``."""
    total_cores = zones * cpus_per_zone // threads
    cores_per_zone = cpus_per_zone // threads
    zone_cpus: list[tuple[int, frozenset[int]]] = []
    built: list[Zone] = []
    for z in range(zones):
        cpus = frozenset(
            t * total_cores + z * cores_per_zone + c
            for t in range(threads)
            for c in range(cores_per_zone)
        )
        zone_cpus.append((z, cpus))
        devs: dict[str, DeviceSet] = {}
        for res, count in (devices or {}).items():
            short = res.rsplit("/", 1)[-1]
            ids = tuple(f"{short}-{z}-{i}" for i in range(count))
            bad = (unhealthy or {}).get(res, 0)
            devs[res] = DeviceSet(ids=ids, unhealthy=frozenset(ids[:bad]))
        built.append(
            Zone(
                id=z,
                cpus=cpus,
                memory=memory,
                hugepages=dict(hugepages or {}),
                devices=devs,
                distances=tuple(distances[z]) if distances else (),
                allocated=dict((allocated or {}).get(z, {})),
            )
        )
    node_devs = {
        res: DeviceSet(ids=tuple(f"{res.rsplit('/', 1)[-1]}-{i}" for i in range(n)))
        for res, n in (node_devices or {}).items()
    }
    return NodeProfile(
        name=name,
        kubelet=KubeletConfig(
            topology_manager_policy=policy,
            topology_manager_scope=scope,
            prefer_closest_numa_nodes=prefer_closest,
            cpu_manager_policy=cpu_policy,
            memory_manager_policy=memory_policy,
            reserved_cpus=reserved,
            cpu_options=cpu_options or CpuPolicyOptions(),
        ),
        zones=tuple(built),
        devices=node_devs,
        cpu_topology=zones_topology(
            zone_cpus, threads_per_core=threads, numa_nodes_per_socket=numa_per_socket
        ),
        max_pods=max_pods,
    )


def container(name: str, *, guaranteed: bool = True, **resources: Any) -> dict[str, Any]:
    """A container manifest; keyword names use ``_`` for ``/`` and ``.`` is not needed:
    ``gpu=2`` means ``nvidia.com/gpu: 2``."""
    res: dict[str, Any] = {}
    for key, amount in resources.items():
        if key == "gpu":
            res["nvidia.com/gpu"] = amount
        elif key == "hca":
            res["rdma/hca"] = amount
        elif key.startswith("hugepages_"):
            res["hugepages-" + key.split("_", 1)[1]] = amount
        else:
            res[key] = amount
    if guaranteed:
        res.setdefault("cpu", 1)
        res.setdefault("memory", "1Gi")
        return {"name": name, "resources": {"limits": res}}
    return {"name": name, "resources": {"requests": res} if res else {}}


def pod(
    name: str,
    *containers: dict[str, Any],
    init: Sequence[dict[str, Any]] = (),
    namespace: str = "default",
) -> PodSpec:
    manifest: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"containers": list(containers)},
    }
    if init:
        manifest["spec"]["initContainers"] = list(init)
    return pod_from_manifest(manifest)


def gi(text: str) -> int:
    return parse_integer(text)
