"""Policy ``single-numa-node`` (``policy_single_numa_node.go``).

Before merging, every list keeps only its preferred hints that are either "any NUMA
node" or exactly one NUMA node; a list left empty makes the cross product empty, so the
best hint is ``{all nodes, not preferred}`` and the pod is rejected. A best hint
spanning every NUMA node is reported as "any NUMA node" (nil affinity).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fakenrt.kubelet.hints import ProviderHints, TopologyHint
from fakenrt.kubelet.merge import HintMerger, filter_provider_hints
from fakenrt.kubelet.numa_info import NumaInfo

NAME = "single-numa-node"


def filter_single_numa_hints(
    lists: Sequence[Sequence[TopologyHint]],
) -> tuple[tuple[TopologyHint, ...], ...]:
    """``filterSingleNumaHints``."""
    return tuple(
        tuple(h for h in hints if h.preferred and (h.affinity is None or h.affinity.count() == 1))
        for hints in lists
    )


@dataclass(frozen=True)
class SingleNumaNodePolicy:
    numa: NumaInfo
    prefer_closest: bool = False  # accepted for symmetry; upstream ignores it here
    name: str = NAME

    def merge(self, providers: Sequence[ProviderHints]) -> tuple[TopologyHint, bool]:
        lists = filter_single_numa_hints(filter_provider_hints(providers))
        best = HintMerger(self.numa, lists, self.name, self.prefer_closest).merge()
        if best.affinity == self.numa.default_affinity():
            best = TopologyHint(None, best.preferred)
        return best, best.preferred
