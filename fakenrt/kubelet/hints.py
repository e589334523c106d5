"""Topology hints and what a hint provider returns. Pure values.

Mirrors ``TopologyHint`` in ``pkg/kubelet/cm/topologymanager/topology_manager.go``. A
provider's answer keeps the Go nil/empty distinctions because the merge treats them
differently (``policy.go`` ``filterProvidersHints``):

* the provider returns no map at all (``None``) or an empty map: it has no preference
  for any resource -> one ``{nil, preferred}`` hint;
* a resource maps to ``None``: no preference for that resource -> ``{nil, preferred}``;
* a resource maps to an empty tuple: no NUMA set can satisfy it -> ``{nil, not preferred}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from fakenrt.kubelet.allocation import ProviderHint
from fakenrt.kubelet.bitmask import BitMask


@dataclass(frozen=True)
class TopologyHint:
    """``affinity`` None means "any NUMA node" (no preference)."""

    affinity: BitMask | None
    preferred: bool

    def report(self) -> ProviderHint:
        """The shared value form (NUMA ids as a tuple, None for no affinity)."""
        return ProviderHint(
            numa=None if self.affinity is None else self.affinity.bits(),
            preferred=self.preferred,
        )


#: resource name -> hints (None: no preference; (): impossible), or None for "no map".
ProviderHints = Mapping[str, tuple[TopologyHint, ...] | None] | None

DONT_CARE = TopologyHint(None, True)
IMPOSSIBLE = TopologyHint(None, False)


def normalized(hints: tuple[TopologyHint, ...] | None) -> tuple[TopologyHint, ...]:
    """One resource's hints as the merge sees them (see the module docstring)."""
    if hints is None:
        return (DONT_CARE,)
    if not hints:
        return (IMPOSSIBLE,)
    return hints
