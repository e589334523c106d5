"""Policy ``best-effort``: merge, keep the best hint, always admit (``policy_best_effort.go``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fakenrt.kubelet.hints import ProviderHints, TopologyHint
from fakenrt.kubelet.merge import HintMerger, filter_provider_hints
from fakenrt.kubelet.numa_info import NumaInfo

NAME = "best-effort"


@dataclass(frozen=True)
class BestEffortPolicy:
    numa: NumaInfo
    prefer_closest: bool = False
    name: str = NAME

    def best_hint(self, providers: Sequence[ProviderHints]) -> TopologyHint:
        lists = tuple(filter_provider_hints(providers))
        return HintMerger(self.numa, lists, self.name, self.prefer_closest).merge()

    def merge(self, providers: Sequence[ProviderHints]) -> tuple[TopologyHint, bool]:
        return self.best_hint(providers), True
