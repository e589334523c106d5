"""Node profiles: what a fake NUMA node is (values), and reading them from YAML.

The YAML format is documented field by field in docs/profiles.md.
"""

from fakenrt.profiles.errors import ProfileError
from fakenrt.profiles.loading import EXAMPLES_DIR, example_profile, load_profiles
from fakenrt.profiles.model import CpuInfo, DeviceSet, KubeletConfig, NodeProfile, Zone
from fakenrt.profiles.parsing import parse_profiles

__all__ = [
    "EXAMPLES_DIR",
    "CpuInfo",
    "DeviceSet",
    "KubeletConfig",
    "NodeProfile",
    "ProfileError",
    "Zone",
    "example_profile",
    "load_profiles",
    "parse_profiles",
]
