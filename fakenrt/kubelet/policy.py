"""The Topology Manager policy interface. Pure.

Mirrors ``pkg/kubelet/cm/topologymanager/policy.go``: a policy merges the hints of all
providers into one hint and says whether the pod (or container) may be admitted with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from fakenrt.kubelet.hints import ProviderHints, TopologyHint


class Policy(Protocol):
    @property
    def name(self) -> str: ...

    def merge(self, providers: Sequence[ProviderHints]) -> tuple[TopologyHint, bool]:
        """The best hint and whether it can be admitted."""
        ...
