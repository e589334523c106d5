"""Nodes with the same CPU map share one CpuTopology (it is never modified): a fleet of a
few shapes holds a few topologies, not one per node."""

from __future__ import annotations

from dataclasses import replace

from fakenrt.kubelet import topology
from fakenrt.kubelet.topology import CpuTopology
from fakenrt.profiles import example_profile, load_profiles
from fakenrt.profiles.model import CpuInfo

SHAPES = example_profile("shapes")


def test_nodes_of_one_shape_share_a_topology_and_other_shapes_do_not() -> None:
    profiles = load_profiles(SHAPES)
    first, other = profiles[0], profiles[1]
    copy = replace(first, name=f"{first.name}-copy")
    shared = CpuTopology.from_profile(first)
    assert CpuTopology.from_profile(copy) is shared
    # Equal to one built for the node alone.
    assert shared == CpuTopology(dict(shared.cpus))
    if dict(other.cpu_topology) != dict(first.cpu_topology) or other.zones != first.zones:
        assert CpuTopology.from_profile(other) is not shared


def test_a_different_map_is_a_different_topology() -> None:
    profile = load_profiles(SHAPES)[0]
    base = CpuTopology.from_profile(profile)
    cpus = dict(base.cpus)
    cpu, info = next(iter(cpus.items()))
    cpus[cpu] = CpuInfo(cpu=cpu, core=info.core, socket=info.socket, numa=info.numa, uncore=99)
    changed = CpuTopology.from_profile(replace(profile, cpu_topology=cpus))
    assert changed is not base
    assert changed.uncore_of[cpu] == 99


def test_the_shared_topologies_are_bounded() -> None:
    profile = load_profiles(SHAPES)[0]
    base = dict(CpuTopology.from_profile(profile).cpus)
    for uncore in range(topology._SHARED_MAX + 5):
        cpus = {c: replace(i, uncore=1000 + uncore) for c, i in base.items()}
        CpuTopology.from_profile(replace(profile, cpu_topology=cpus))
    assert len(topology._SHARED) <= topology._SHARED_MAX
