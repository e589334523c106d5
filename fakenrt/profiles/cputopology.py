"""Which physical core and socket each logical CPU of a profile belongs to. Pure.

The rules (documented in docs/profiles.md):

* Explicit zones: with ``threadsPerCore`` T, a zone's sorted CPUs split the way Linux
  numbers hyperthreads: the zone has n/T cores and core k owns ``sorted[k]``,
  ``sorted[k + n/T]``, ... - so ``"0-31,64-95"`` with T=2 pairs CPU 0 with CPU 64.
* ``shape``: the first thread of every core of every zone is numbered first, then the
  second threads, and so on: ``cpu = thread * totalCores + coreIndex`` where
  ``coreIndex = zoneIndex * coresPerNumaNode + core``.
* A core's id is the lowest CPU id among its threads, as the kubelet's
  ``getUniqueCoreID`` makes core ids unique across sockets
  (``pkg/kubelet/cm/cpumanager/topology/topology.go``).
* Sockets: consecutive zones (by id) share a socket, ``numaNodesPerSocket`` at a time.
"""

from __future__ import annotations

from collections.abc import Sequence

from fakenrt.profiles.model import CpuInfo


def split_cores(cpus: frozenset[int], threads_per_core: int) -> list[tuple[int, ...]]:
    """The cores of one zone, each as its thread CPU ids (lowest first).

    Raises ValueError when ``threads_per_core`` does not divide the number of CPUs.
    """
    ordered = sorted(cpus)
    if len(ordered) % threads_per_core:
        raise ValueError(
            f"{len(ordered)} CPUs cannot be split into cores of {threads_per_core} threads"
        )
    n_cores = len(ordered) // threads_per_core
    return [
        tuple(ordered[k + t * n_cores] for t in range(threads_per_core)) for k in range(n_cores)
    ]


def zones_topology(
    zone_cpus: Sequence[tuple[int, frozenset[int]]],
    *,
    threads_per_core: int,
    numa_nodes_per_socket: int,
) -> dict[int, CpuInfo]:
    """CPU -> CpuInfo for zones given as ``(zone id, cpus)`` in ascending zone id order."""
    out: dict[int, CpuInfo] = {}
    for index, (zone_id, cpus) in enumerate(zone_cpus):
        socket = index // numa_nodes_per_socket
        for threads in split_cores(cpus, threads_per_core):
            core = threads[0]
            for cpu in threads:
                out[cpu] = CpuInfo(cpu=cpu, core=core, socket=socket, numa=zone_id)
    return dict(sorted(out.items()))


def shape_zone_cpus(
    *, numa_nodes: int, cores_per_numa_node: int, threads_per_core: int
) -> list[frozenset[int]]:
    """The CPUs of each zone of a ``shape``, zone index 0..numa_nodes-1."""
    total_cores = numa_nodes * cores_per_numa_node
    return [
        frozenset(
            thread * total_cores + zone * cores_per_numa_node + core
            for thread in range(threads_per_core)
            for core in range(cores_per_numa_node)
        )
        for zone in range(numa_nodes)
    ]
