"""Which CPU ids the static CPU manager picks: ``takeByTopologyNUMAPacked``. Pure.

Mirrors ``pkg/kubelet/cm/cpumanager/cpu_assignment.go`` with the default options (packed
sorting, no uncore-cache alignment, no distribution across NUMA nodes):

1. take whole NUMA nodes and whole sockets while at least that many CPUs are still
   needed - NUMA nodes first when a NUMA node holds one or more sockets, sockets first
   when a socket holds several NUMA nodes;
2. then whole physical cores;
3. then single threads.

At every level candidates are sorted by how many free CPUs they have, fewest first, then
by id - so allocations pack onto the most used parts of the machine. Lower levels are
visited inside the order of the higher ones (cores of the emptiest socket first, ...).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from fakenrt.kubelet.topology import CpuTopology


class CpuAllocationError(ValueError):
    """Not enough CPUs to take."""


class _Accumulator:
    def __init__(self, topo: CpuTopology, available: frozenset[int], needed: int) -> None:
        self.topo = topo
        self.free: set[int] = set(available)
        self.needed = needed
        self.result: set[int] = set()
        # NUMA nodes above sockets when there are at least as many sockets as NUMA nodes.
        self.numa_first = topo.num_sockets >= topo.num_numa_nodes

    # -- views of the free CPUs ------------------------------------------------------
    def _free_in(
        self, group: Callable[[int], int], ids: Iterable[int] | None = None
    ) -> dict[int, set[int]]:
        out: dict[int, set[int]] = {}
        wanted = None if ids is None else set(ids)
        for cpu in self.free:
            key = group(cpu)
            if wanted is None or key in wanted:
                out.setdefault(key, set()).add(cpu)
        return out

    def _numa(self, cpu: int) -> int:
        return self.topo.cpus[cpu].numa

    def _socket(self, cpu: int) -> int:
        return self.topo.cpus[cpu].socket

    def _core(self, cpu: int) -> int:
        return self.topo.cpus[cpu].core

    @staticmethod
    def _sorted(groups: dict[int, set[int]], ids: Iterable[int]) -> list[int]:
        return sorted(ids, key=lambda i: (len(groups.get(i, ())), i))

    def sorted_numa_nodes(self) -> list[int]:
        by_numa = self._free_in(self._numa)
        if self.numa_first:
            return self._sorted(by_numa, by_numa)
        result: list[int] = []
        for socket in self.sorted_sockets():
            ids = {self._numa(c) for c in self.free if self._socket(c) == socket}
            result.extend(self._sorted(by_numa, ids))
        return result

    def sorted_sockets(self) -> list[int]:
        by_socket = self._free_in(self._socket)
        if not self.numa_first:
            return self._sorted(by_socket, by_socket)
        result: list[int] = []
        for numa in self.sorted_numa_nodes():
            ids = {self._socket(c) for c in self.free if self._numa(c) == numa}
            result.extend(self._sorted(by_socket, ids))
        return result

    def sorted_cores(self) -> list[int]:
        by_core = self._free_in(self._core)
        result: list[int] = []
        if self.numa_first:
            for socket in self.sorted_sockets():
                ids = {self._core(c) for c in self.free if self._socket(c) == socket}
                result.extend(self._sorted(by_core, ids))
        else:
            for numa in self.sorted_numa_nodes():
                ids = {self._core(c) for c in self.free if self._numa(c) == numa}
                result.extend(self._sorted(by_core, ids))
        return result

    def sorted_cpus(self) -> list[int]:
        by_core = self._free_in(self._core)
        out: list[int] = []
        for core in self.sorted_cores():
            out.extend(sorted(by_core[core]))
        return out

    # -- taking ------------------------------------------------------------------------
    def take(self, cpus: Iterable[int]) -> None:
        cpus = set(cpus)
        self.result |= cpus
        self.free -= cpus
        self.needed -= len(cpus)

    def satisfied(self) -> bool:
        return self.needed < 1

    def take_full_numa_nodes(self) -> None:
        for numa in self.sorted_numa_nodes():
            whole = self.topo.numa_cpus[numa]
            if len(self.free & whole) != len(whole) or self.needed < len(whole):
                continue
            self.take(whole)

    def take_full_sockets(self) -> None:
        per_socket = self.topo.cpus_per_socket
        for socket in self.sorted_sockets():
            whole = self.topo.socket_cpus[socket]
            if len(self.free & whole) != per_socket or self.needed < len(whole):
                continue
            self.take(whole)

    def take_full_cores(self) -> None:
        per_core = self.topo.cpus_per_core
        for core in self.sorted_cores():
            whole = self.topo.core_cpus[core]
            if len(self.free & whole) != per_core or self.needed < len(whole):
                continue
            self.take(whole)

    def take_remaining_cpus(self) -> None:
        for cpu in self.sorted_cpus():
            self.take((cpu,))
            if self.satisfied():
                return


def take_by_topology(topo: CpuTopology, available: frozenset[int], count: int) -> frozenset[int]:
    """``count`` CPUs out of ``available``, chosen as the static policy does."""
    acc = _Accumulator(topo, available, count)
    if acc.satisfied():
        return frozenset()
    if acc.needed > len(acc.free):
        raise CpuAllocationError(
            "not enough cpus available to satisfy request: "
            f"requested={count}, available={len(available)}"
        )
    first, second = (
        (acc.take_full_numa_nodes, acc.take_full_sockets)
        if acc.numa_first
        else (acc.take_full_sockets, acc.take_full_numa_nodes)
    )
    for step in (first, second, acc.take_full_cores, acc.take_remaining_cpus):
        step()
        if acc.satisfied():
            return frozenset(acc.result)
    raise CpuAllocationError("failed to allocate cpus")
