"""NodeResourceTopology objects from node profiles and node state (pure), and the pod-set
fingerprint they carry. See docs/nrt.md."""

from fakenrt.nrt.fingerprint import fingerprint, fingerprint_keys
from fakenrt.nrt.render import foreign_usage, legacy_topology_policy, render_nrt

__all__ = [
    "fingerprint",
    "fingerprint_keys",
    "foreign_usage",
    "legacy_topology_policy",
    "render_nrt",
]
