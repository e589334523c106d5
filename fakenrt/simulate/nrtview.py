"""The NRT a simulated node publishes, as the scheduler reads it - without rendering it to
an object and parsing it back. Pure.

Per node, the NRT of the profile is rendered and read once (:func:`fakenrt.nrt.render_nrt`,
:func:`fakenrt.scheduler.nrt.read_nrt`): that fixes everything but the free amounts and
the pod fingerprint. A publication of the node's state (the controller core's
:class:`~fakenrt.controller.effects.NrtSnapshot`: per-zone usage, the pods counted) then
only fills those in, by the renderer's own rules (:func:`fakenrt.nrt.render.available_amount`,
:func:`fakenrt.nrt.fingerprint.fingerprint_keys`). A property test requires the result to
equal reading the rendered object back.
"""

from __future__ import annotations

from collections.abc import Mapping

from fakenrt.controller.effects import NrtSnapshot
from fakenrt.nrt import render_nrt
from fakenrt.nrt.fingerprint import fingerprint_keys
from fakenrt.nrt.render import available_amount
from fakenrt.profiles.model import NodeProfile
from fakenrt.scheduler.nrt import read_nrt
from fakenrt.scheduler.topology import NumaTopology


class NrtView:
    """One node's published NRT as typed values."""

    def __init__(self, profile: NodeProfile) -> None:
        self.template = read_nrt(render_nrt(profile, usage=None), source=f"NRT of {profile.name}")

    def of(self, snapshot: NrtSnapshot) -> NumaTopology:
        """The NRT a publication of ``snapshot`` writes, as :func:`read_nrt` reads it."""
        usage: Mapping[int, Mapping[str, int]] = snapshot.usage
        available = {
            z.id: {
                name: available_amount(amount, usage.get(z.id, {}).get(name, 0))
                for name, amount in z.allocatable.items()
            }
            for z in self.template.zones
        }
        return self.template.with_available(available, fingerprint=fingerprint_keys(snapshot.pods))
