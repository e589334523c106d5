"""Policy ``none``: no alignment, always admit (``policy_none.go``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fakenrt.kubelet.hints import DONT_CARE, ProviderHints, TopologyHint

NAME = "none"


@dataclass(frozen=True)
class NonePolicy:
    name: str = NAME

    def merge(self, providers: Sequence[ProviderHints]) -> tuple[TopologyHint, bool]:
        return DONT_CARE, True
