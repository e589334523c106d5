"""Audit: the static CPU policy's CPU picking and hints against a second, independent
transcription of ``pkg/kubelet/cm/cpumanager/cpu_assignment.go``
(``takeByTopologyNUMAPacked`` with the packed sorting of ``cpuAccumulator``) and
``policy_static.go`` (``allocateCPUs``, ``generateCPUTopologyHints``), checked on random
machines (HT or not, one or several NUMA nodes per socket, several sockets per NUMA node)
and random free sets.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from hypothesis import given, settings
from hypothesis import strategies as st

from fakenrt.kubelet.bitmask import BitMask, iterate_masks
from fakenrt.kubelet.cpu_assignment import CpuAllocationError, take_by_topology
from fakenrt.kubelet.provider_cpu import generate_hints
from fakenrt.kubelet.topology import CpuTopology
from fakenrt.profiles.model import CpuInfo


class _GoAccumulator:
    """cpuAccumulator, field by field: ``details`` holds the free CPUs."""

    def __init__(self, topo: CpuTopology, available: frozenset[int], n: int) -> None:
        self.topo = topo
        self.details = set(available)
        self.needed = n
        self.result: set[int] = set()
        numa_first = topo.num_sockets >= topo.num_numa_nodes
        self.numa_first = numa_first

    # CPUDetails views restricted to `details`
    def _cpus_in(self, key: Callable[[CpuInfo], int], ids: Iterable[int]) -> set[int]:
        wanted = set(ids)
        return {c for c in self.details if key(self.topo.cpus[c]) in wanted}

    def _ids(self, key: Callable[[CpuInfo], int], within: set[int] | None = None) -> list[int]:
        cpus = self.details if within is None else within
        return sorted({key(self.topo.cpus[c]) for c in cpus})

    def _sort(self, ids: list[int], key: Callable[[CpuInfo], int]) -> list[int]:
        # Go: sort.Slice by size of getCPUs(id) ascending, then id ascending.
        return sorted(ids, key=lambda i: (len(self._cpus_in(key, [i])), i))

    @staticmethod
    def numa(i: CpuInfo) -> int:
        return i.numa

    @staticmethod
    def socket(i: CpuInfo) -> int:
        return i.socket

    @staticmethod
    def core(i: CpuInfo) -> int:
        return i.core

    def sort_numa(self) -> list[int]:
        if self.numa_first:
            return self._sort(self._ids(self.numa), self.numa)
        out: list[int] = []
        for s in self.sort_sockets():
            out += self._sort(self._ids(self.numa, self._cpus_in(self.socket, [s])), self.numa)
        return out

    def sort_sockets(self) -> list[int]:
        if not self.numa_first:
            return self._sort(self._ids(self.socket), self.socket)
        out: list[int] = []
        for n in self.sort_numa():
            out += self._sort(self._ids(self.socket, self._cpus_in(self.numa, [n])), self.socket)
        return out

    def sort_cores(self) -> list[int]:
        out: list[int] = []
        if self.numa_first:
            for s in self.sort_sockets():
                out += self._sort(self._ids(self.core, self._cpus_in(self.socket, [s])), self.core)
        else:
            for n in self.sort_numa():
                out += self._sort(self._ids(self.core, self._cpus_in(self.numa, [n])), self.core)
        return out

    def take(self, cpus: set[int]) -> None:
        self.result |= cpus
        self.details -= cpus
        self.needed -= len(cpus)

    def take_full(
        self, key: Callable[[CpuInfo], int], order: list[int], size: Callable[[int], int]
    ) -> None:
        whole_of = {i: {c for c, info in self.topo.cpus.items() if key(info) == i} for i in order}
        free = [i for i in order if len(self._cpus_in(key, [i])) == size(i)]
        for i in free:
            if self.needed >= len(whole_of[i]):
                self.take(whole_of[i])

    def run(self) -> frozenset[int]:
        if self.needed < 1:
            return frozenset()
        if self.needed > len(self.details):
            raise CpuAllocationError("not enough")
        t = self.topo

        def numa_size(i: int) -> int:
            return len(t.numa_cpus[i])

        def socket_size(_i: int) -> int:
            return t.cpus_per_socket

        def core_size(_i: int) -> int:
            return t.cpus_per_core

        levels = [
            (self.numa, self.sort_numa, numa_size),
            (self.socket, self.sort_sockets, socket_size),
        ]
        if not self.numa_first:
            levels.reverse()
        for key, order, size in levels:
            self.take_full(key, order(), size)
            if self.needed < 1:
                return frozenset(self.result)
        self.take_full(self.core, self.sort_cores(), core_size)
        if self.needed < 1:
            return frozenset(self.result)
        for core in self.sort_cores():
            for cpu in sorted(self._cpus_in(self.core, [core])):
                self.take({cpu})
                if self.needed < 1:
                    return frozenset(self.result)
        raise CpuAllocationError("failed")


@st.composite
def _machine(draw: st.DrawFn) -> CpuTopology:
    sockets = draw(st.integers(1, 2))
    numa_per_socket = draw(st.sampled_from([1, 2]))
    sockets_per_numa = 1 if numa_per_socket > 1 else draw(st.sampled_from([1, 2]))
    if sockets_per_numa == 2:
        sockets = 2
    cores_per_socket = draw(st.integers(1, 4)) * numa_per_socket
    threads = draw(st.sampled_from([1, 2]))
    total_cores = sockets * cores_per_socket
    rows: dict[int, CpuInfo] = {}
    for s in range(sockets):
        for k in range(cores_per_socket):
            core_index = s * cores_per_socket + k
            if sockets_per_numa == 2:
                numa = 0
            else:
                numa = s * numa_per_socket + k // (cores_per_socket // numa_per_socket)
            for t in range(threads):
                cpu = t * total_cores + core_index
                rows[cpu] = CpuInfo(cpu=cpu, core=core_index, socket=s, numa=numa)
    return CpuTopology(rows)


@settings(max_examples=400, deadline=None)
@given(_machine(), st.data())
def test_take_by_topology_equals_a_second_transcription(
    topo: CpuTopology, data: st.DataObject
) -> None:
    """cpu_assignment_test.go TestTakeByTopologyNUMAPacked, generalised."""
    all_cpus = sorted(topo.cpus)
    available = frozenset(data.draw(st.sets(st.sampled_from(all_cpus))))
    count = data.draw(st.integers(0, len(all_cpus)))
    try:
        expected: frozenset[int] | None = _GoAccumulator(topo, available, count).run()
    except CpuAllocationError:
        expected = None
    if expected is None:
        try:
            take_by_topology(topo, available, count)
        except CpuAllocationError:
            return
        raise AssertionError("the simulator took CPUs the kubelet cannot take")
    assert take_by_topology(topo, available, count) == expected


@settings(max_examples=200, deadline=None)
@given(_machine(), st.data())
def test_cpu_hints_follow_generate_cpu_topology_hints(
    topo: CpuTopology, data: st.DataObject
) -> None:
    """policy_static.go generateCPUTopologyHints: preferred width from every CPU of a mask,
    feasibility from available plus reusable CPUs, all reusable CPUs inside the mask."""
    all_cpus = sorted(topo.cpus)
    available = frozenset(data.draw(st.sets(st.sampled_from(all_cpus))))
    others = sorted(set(all_cpus) - available)
    reusable = frozenset(data.draw(st.sets(st.sampled_from(others)))) if others else frozenset()
    request = data.draw(st.integers(1, len(all_cpus)))
    nodes = topo.numa_nodes()
    min_size = len(nodes)
    expected: list[BitMask] = []
    for mask in iterate_masks(nodes):
        in_mask = [c for c in all_cpus if mask.is_set(topo.cpus[c].numa)]
        if len(in_mask) >= request and mask.count() < min_size:
            min_size = mask.count()
        if any(not mask.is_set(topo.cpus[c].numa) for c in reusable):
            continue
        if len(reusable) + sum(1 for c in available if mask.is_set(topo.cpus[c].numa)) < request:
            continue
        expected.append(mask)
    got = generate_hints(topo, available, reusable, request)
    assert [h.affinity for h in got] == expected
    assert [h.preferred for h in got] == [m.count() == min_size for m in expected]
