"""Policy ``restricted``: best-effort's merge, admitted only with a preferred best hint
(``policy_restricted.go``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fakenrt.kubelet.hints import ProviderHints, TopologyHint
from fakenrt.kubelet.merge import HintMerger, filter_provider_hints
from fakenrt.kubelet.numa_info import NumaInfo

NAME = "restricted"


@dataclass(frozen=True)
class RestrictedPolicy:
    numa: NumaInfo
    prefer_closest: bool = False
    name: str = NAME

    def merge(self, providers: Sequence[ProviderHints]) -> tuple[TopologyHint, bool]:
        lists = tuple(filter_provider_hints(providers))
        best = HintMerger(self.numa, lists, self.name, self.prefer_closest).merge()
        return best, best.preferred
