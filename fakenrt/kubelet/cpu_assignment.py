"""Which CPU ids the static CPU manager picks. Pure.

Mirrors ``pkg/kubelet/cm/cpumanager/cpu_assignment.go``. ``takeByTopologyNUMAPacked``:

1. take whole NUMA nodes and whole sockets while at least that many CPUs are still
   needed - NUMA nodes first when a NUMA node holds one or more sockets, sockets first
   when a socket holds several NUMA nodes;
2. with ``prefer-align-cpus-by-uncorecache``: whole uncore caches, else the first uncore
   cache whose free cores can hold the rest (``takeUncoreCache``);
3. then whole physical cores - skipped with ``distribute-cpus-across-cores`` (the
   "spread" sorting strategy);
4. then single threads: core by core ("packed"), or per socket in CPU id order
   ("spread": first threads of every core before their siblings).

At every level candidates are sorted by how many free CPUs they have, fewest first, then
by id - so allocations pack onto the most used parts of the machine. Lower levels are
visited inside the order of the higher ones (cores of the emptiest socket first, ...).

``takeByTopologyNUMADistributed`` (``distribute-cpus-across-numa``, KEP-2902) spreads a
request that needs several NUMA nodes evenly over the fewest of them, in groups of
``cpu_group_size`` CPUs (whole cores with ``full-pcpus-only``), and falls back to the
packed algorithm when it cannot (:func:`take_distributed`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import cached_property

from fakenrt.kubelet.topology import CpuTopology
from fakenrt.profiles.model import CpuPolicyOptions


class CpuAllocationError(ValueError):
    """Not enough CPUs to take."""


class _View:
    """The free CPUs grouped by NUMA node, socket and core, and which of those hold each
    other's free CPUs - each computed when first asked, by intersecting the free set with
    the topology's groups; valid until the next ``take``."""

    def __init__(self, topo: CpuTopology, free: set[int]) -> None:
        self.topo = topo
        self.free = free
        self.numa_order: list[int] | None = None
        self.socket_order: list[int] | None = None

    @staticmethod
    def _groups(free: set[int], groups: Mapping[int, frozenset[int]]) -> dict[int, set[int]]:
        out: dict[int, set[int]] = {}
        for key, cpus in groups.items():
            held = free & cpus
            if held:
                out[key] = held
        return out

    def _members(
        self,
        key: int,
        members: Mapping[int, tuple[int, ...]],
        pairs: Mapping[tuple[int, int], frozenset[int]],
    ) -> set[int]:
        """The groups of ``members[key]`` that hold free CPUs of group ``key``."""
        free = self.free
        return {m for m in members.get(key, ()) if not free.isdisjoint(pairs[(key, m)])}

    @cached_property
    def by_numa(self) -> dict[int, set[int]]:
        return self._groups(self.free, self.topo.numa_cpus)

    @cached_property
    def by_socket(self) -> dict[int, set[int]]:
        return self._groups(self.free, self.topo.socket_cpus)

    @cached_property
    def by_core(self) -> dict[int, set[int]]:
        return self._groups(self.free, self.topo.core_cpus)

    def sockets_in_numa(self, numa: int) -> set[int]:
        return self._members(numa, self.topo.sockets_of_numa, self.topo.numa_socket_cpus)

    def numas_in_socket(self, socket: int) -> set[int]:
        return self._members(socket, self.topo.numas_of_socket, self.topo.socket_numa_cpus)

    def cores_in_socket(self, socket: int) -> set[int]:
        return self._members(socket, self.topo.cores_of_socket, self.topo.socket_core_cpus)

    def cores_in_numa(self, numa: int) -> set[int]:
        return self._members(numa, self.topo.cores_of_numa, self.topo.numa_core_cpus)


class _Accumulator:
    def __init__(
        self, topo: CpuTopology, available: frozenset[int], needed: int, *, spread: bool = False
    ) -> None:
        self.topo = topo
        self.free: set[int] = set(available)
        self.needed = needed
        self.result: set[int] = set()
        self.spread = spread
        # NUMA nodes above sockets when there are at least as many sockets as NUMA nodes.
        self.numa_first = topo.num_sockets >= topo.num_numa_nodes
        self._view: _View | None = None

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

    def view(self) -> _View:
        if self._view is None:
            self._view = _View(self.topo, self.free)
        return self._view

    def _numa(self, cpu: int) -> int:
        return self.topo.numa_of[cpu]

    def _socket(self, cpu: int) -> int:
        return self.topo.socket_of[cpu]

    def _core(self, cpu: int) -> int:
        return self.topo.core_of[cpu]

    @staticmethod
    def _sorted(groups: dict[int, set[int]], ids: Iterable[int]) -> list[int]:
        return sorted(ids, key=lambda i: (len(groups.get(i, ())), i))

    def sorted_numa_nodes(self) -> list[int]:
        view = self.view()
        if view.numa_order is None:
            if self.numa_first:
                view.numa_order = self._sorted(view.by_numa, view.by_numa)
            else:
                order: list[int] = []
                for socket in self.sorted_sockets():
                    order.extend(self._sorted(view.by_numa, view.numas_in_socket(socket)))
                view.numa_order = order
        return list(view.numa_order)

    def sorted_sockets(self) -> list[int]:
        view = self.view()
        if view.socket_order is None:
            if not self.numa_first:
                view.socket_order = self._sorted(view.by_socket, view.by_socket)
            else:
                order: list[int] = []
                for numa in self.sorted_numa_nodes():
                    order.extend(self._sorted(view.by_socket, view.sockets_in_numa(numa)))
                view.socket_order = order
        return list(view.socket_order)

    def sorted_cores(self) -> list[int]:
        view = self.view()
        result: list[int] = []
        if self.numa_first:
            for socket in self.sorted_sockets():
                result.extend(self._sorted(view.by_core, view.cores_in_socket(socket)))
        else:
            for numa in self.sorted_numa_nodes():
                result.extend(self._sorted(view.by_core, view.cores_in_numa(numa)))
        return result

    def sorted_cpus(self) -> list[int]:
        """``sortAvailableCPUsPacked`` (core by core) or ``sortAvailableCPUsSpread`` (per
        socket, in CPU id order)."""
        out: list[int] = []
        view = self.view()
        if self.spread:
            for socket in self.sorted_sockets():
                out.extend(sorted(view.by_socket[socket]))
            return out
        for core in self.sorted_cores():
            out.extend(sorted(view.by_core[core]))
        return out

    def sorted_uncore_caches(self) -> list[int]:
        """``sortAvailableUncoreCaches``: per sorted NUMA node, its uncore caches with free
        CPUs by free CPUs, then id."""
        by_uncore = self._free_in(self.topo.uncore_of.__getitem__)
        out: list[int] = []
        for numa in self.sorted_numa_nodes():
            ids = {self.topo.uncore_of[c] for c in self.free if self._numa(c) == numa}
            out.extend(self._sorted(by_uncore, ids))
        return out

    # -- taking ------------------------------------------------------------------------
    def take(self, cpus: Iterable[int]) -> None:
        cpus = set(cpus)
        self.result |= cpus
        self.free -= cpus
        self.needed -= len(cpus)
        self._view = None

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

    def take_full_uncore(self) -> None:
        for uncore in self.sorted_uncore_caches():
            whole = self.topo.uncore_cpus[uncore]
            if len(self.free & whole) != len(whole) or self.needed < len(whole):
                continue
            self.take(whole)

    def take_partial_uncore(self, uncore: int) -> None:
        """The first ceil(needed / CPUs per core) free cores (by id) of the uncore cache;
        their free CPUs - for an odd need on SMT, without the highest - are taken only if
        they are exactly enough (``takePartialUncore``, ``CoresNeededInUncoreCache``)."""
        per_core = self.topo.cpus_per_core
        cores_needed = (self.needed + per_core - 1) // per_core
        cores = sorted({self._core(c) for c in self.free if self.topo.uncore_of[c] == uncore})
        chosen = set(cores[:cores_needed])
        cpus = sorted(c for c in self.free if self._core(c) in chosen)
        if self.needed % 2 and per_core > 1 and len(cpus) > self.needed:
            cpus = cpus[:-1]
        if len(cpus) == self.needed:
            self.take(cpus)

    def take_uncore_cache(self) -> None:
        for uncore in self.sorted_uncore_caches():
            if self.needed >= len(self.topo.uncore_cpus[uncore]):
                self.take_full_uncore()
            if self.satisfied():
                return
            self.take_partial_uncore(uncore)
            if self.satisfied():
                return

    def take_remaining_cpus(self) -> None:
        for cpu in self.sorted_cpus():
            self.take((cpu,))
            if self.satisfied():
                return


def _not_enough(count: int, available: frozenset[int]) -> CpuAllocationError:
    return CpuAllocationError(
        "not enough cpus available to satisfy request: "
        f"requested={count}, available={len(available)}"
    )


def take_by_topology(
    topo: CpuTopology,
    available: frozenset[int],
    count: int,
    *,
    spread: bool = False,
    uncore: bool = False,
) -> frozenset[int]:
    """``takeByTopologyNUMAPacked``: ``count`` CPUs out of ``available``; ``spread`` is
    the "spread" sorting strategy, ``uncore`` prefers uncore-cache alignment."""
    acc = _Accumulator(topo, available, count, spread=spread)
    if acc.satisfied():
        return frozenset()
    if acc.needed > len(acc.free):
        raise _not_enough(count, available)
    first, second = (
        (acc.take_full_numa_nodes, acc.take_full_sockets)
        if acc.numa_first
        else (acc.take_full_sockets, acc.take_full_numa_nodes)
    )
    steps = [first, second]
    if uncore:
        steps.append(acc.take_uncore_cache)
    if not spread:
        steps.append(acc.take_full_cores)
    steps.append(acc.take_remaining_cpus)
    for step in steps:
        step()
        if acc.satisfied():
            return frozenset(acc.result)
    raise CpuAllocationError("failed to allocate cpus")


#: Picks kept per topology (:attr:`CpuTopology.picks`) before they are started afresh.
MAX_PICKS = 4096


def take_cpus(
    topo: CpuTopology, available: frozenset[int], count: int, options: CpuPolicyOptions
) -> frozenset[int]:
    """``staticPolicy.takeByTopology``: the algorithm the policy options select. A pure
    function of its arguments: the picks are kept on the topology (a failure is not)."""
    key = (available, count, options)
    known = topo.picks.get(key)
    if known is None:
        known = _take_cpus(topo, available, count, options)
        if len(topo.picks) >= MAX_PICKS:
            topo.picks.clear()
        topo.picks[key] = known
    return known


def _take_cpus(
    topo: CpuTopology, available: frozenset[int], count: int, options: CpuPolicyOptions
) -> frozenset[int]:
    spread = options.distribute_cpus_across_cores
    if options.distribute_cpus_across_numa:
        group = topo.cpus_per_core if options.full_pcpus_only else 1
        return take_distributed(topo, available, count, group, spread=spread)
    return take_by_topology(
        topo, available, count, spread=spread, uncore=options.prefer_align_cpus_by_uncorecache
    )


def _go_round3(x: float) -> float:
    """``math.Round(x*1000)/1000`` for x >= 0 (halves away from zero, unlike round())."""
    return math.floor(x * 1000 + 0.5) / 1000


def _std_dev(values: Sequence[int]) -> float:
    """``standardDeviation`` in cpu_assignment.go: population deviation around a mean
    rounded to 3 decimals, itself rounded to 3 decimals."""
    mean = _go_round3(sum(values) / len(values))
    return _go_round3(math.sqrt(sum((v - mean) ** 2 for v in values) / len(values)))


def _combinations(items: Sequence[int], k: int) -> Iterable[tuple[int, ...]]:
    """``iterateCombinations``: k-subsets in lexicographic order of positions."""
    if k < 1:
        return
    if k == 1:
        for item in items:
            yield (item,)
        return
    for i in range(len(items) - k + 1):
        for rest in _combinations(items[i + 1 :], k - 1):
            yield (items[i], *rest)


def take_distributed(
    topo: CpuTopology, available: frozenset[int], count: int, group: int, *, spread: bool = False
) -> frozenset[int]:
    """``takeByTopologyNUMADistributed`` (see the module docstring)."""
    if count % group:
        return take_by_topology(topo, available, count, spread=spread)
    acc = _Accumulator(topo, available, count, spread=spread)
    if acc.satisfied():
        return frozenset()
    if acc.needed > len(acc.free):
        raise _not_enough(count, available)
    numas = acc.sorted_numa_nodes()
    free = {n: len(available & topo.numa_cpus[n]) for n in numas}
    # rangeNUMANodesNeededToSatisfy
    groups_total = (topo.num_cpus - 1) // group + 1
    groups_per_numa = (groups_total - 1) // topo.num_numa_nodes + 1
    groups_needed = (count - 1) // group + 1
    min_numas = (groups_needed - 1) // groups_per_numa + 1
    max_numas = min(groups_needed, len(numas))
    for k in range(min_numas, max_numas + 1):
        best: tuple[float, tuple[int, ...], tuple[int, ...]] | None = None
        for combo in _combinations(numas, k):
            if best is not None and best[0] == 0:
                break
            scored = _score_combo(combo, free, numas, count, group)
            if scored is not None and (best is None or scored[0] < best[0]):
                best = (scored[0], combo, scored[1])
        if best is None:
            continue
        _, combo, remainder_set = best
        distribution = count // len(combo) // group * group
        for numa in combo:
            acc.take(take_by_topology(topo, _in(acc, numa), distribution, spread=spread))
        remainder = count - distribution * len(combo)
        while remainder > 0:
            before = remainder
            for numa in remainder_set:
                if remainder == 0:
                    break
                if len(_in(acc, numa)) < group:
                    continue
                acc.take(take_by_topology(topo, _in(acc, numa), group, spread=spread))
                remainder -= group
            if remainder == before:
                break
        if acc.needed != 0:
            raise CpuAllocationError(f"accounting error, remaining: {acc.needed}")
        return frozenset(acc.result)
    return take_by_topology(topo, available, count, spread=spread)


def _in(acc: _Accumulator, numa: int) -> frozenset[int]:
    return frozenset(acc.free & acc.topo.numa_cpus[numa])


def _score_combo(
    combo: tuple[int, ...], free: dict[int, int], numas: list[int], count: int, group: int
) -> tuple[float, tuple[int, ...]] | None:
    """The best balance score of a NUMA combination and the subset that takes the
    remainder, or None when the combination cannot be balanced."""
    if sum(free[n] for n in combo) < count:
        return None
    if sum(free[n] // group for n in combo) * group < count:
        return None
    distribution = count // len(combo) // group * group
    if any(free[n] < distribution for n in combo):
        return None
    after = {n: free[n] for n in numas}
    for n in combo:
        after[n] -= distribution
    remainder = count - distribution * len(combo)
    candidates = [n for n in combo if after[n] >= group]
    best_balance = math.inf
    best_subset: tuple[int, ...] = ()
    if remainder == 0:
        best_balance = _std_dev(list(after.values()))
    for k in range(len(candidates), 0, -1):
        if remainder <= 0:
            break
        for subset in _combinations(candidates, k):
            local = dict(after)
            if sum(local[n] for n in subset) < remainder:
                continue
            left = remainder
            while left > 0:
                before = left
                for n in subset:
                    if left == 0:
                        break
                    if local[n] < group:
                        continue
                    local[n] -= group
                    left -= group
                if left == before:
                    # The kubelet's loop would spin forever here; no such subset can
                    # arise from a valid request, and skipping it keeps us finite.
                    break
            if left > 0:
                continue
            balance = _std_dev(list(local.values()))
            if balance < best_balance:
                best_balance, best_subset = balance, subset
    if best_balance == math.inf:
        return None
    return best_balance, best_subset
