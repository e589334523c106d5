"""The fake sysfs tree: the files Linux has, readable by the exporter, written idempotently."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from exporter.sysfs import read_cpu_numa_map
from fakenrt.profiles import NodeProfile, example_profile, load_profiles
from fakenrt.sysfs import sysfs_files, write_sysfs


def _dgx_small() -> tuple[NodeProfile, ...]:
    return load_profiles(example_profile("dgx"))


def test_files_of_the_dgx_node() -> None:
    dgx = _dgx_small()[0]
    files = sysfs_files(dgx)
    assert files == {
        "devices/system/node/node0/cpulist": "0-31,64-95\n",
        "devices/system/node/node0/distance": "10 20\n",
        "devices/system/node/node1/cpulist": "32-63,96-127\n",
        "devices/system/node/node1/distance": "20 10\n",
        "devices/system/node/online": "0-1\n",
        "devices/system/node/possible": "0-1\n",
        "devices/system/node/has_cpu": "0-1\n",
        "devices/system/node/has_memory": "0-1\n",
        "devices/system/cpu/online": "0-127\n",
        "devices/system/cpu/possible": "0-127\n",
        "devices/system/cpu/present": "0-127\n",
    }


def test_cpu_topology_files() -> None:
    node = next(p for p in load_profiles(example_profile("shapes")) if p.name == "gpu-2numa")
    files = sysfs_files(node, cpu_topology=True)
    base = "devices/system/cpu/cpu112/topology"
    assert files[f"{base}/core_id"] == "0\n"
    assert files[f"{base}/physical_package_id"] == "0\n"
    assert files[f"{base}/thread_siblings_list"] == "0,112\n"
    assert files[f"{base}/core_siblings_list"] == "0-55,112-167\n"
    assert files["devices/system/cpu/cpu223/topology/physical_package_id"] == "1\n"


def test_exporter_reads_the_tree(tmp_path: Path) -> None:
    for profile in load_profiles(example_profile("shapes")):
        root = tmp_path / profile.name
        write_sysfs(root, profile)
        assert read_cpu_numa_map(root) == {c: i.numa for c, i in profile.cpu_topology.items()}


def test_rewriting_is_idempotent_and_follows_profile_changes(tmp_path: Path) -> None:
    dgx, small = _dgx_small()
    write_sysfs(tmp_path, dgx, cpu_topology=True)
    cpulist = tmp_path / "devices/system/node/node0/cpulist"
    before = cpulist.stat()
    write_sysfs(tmp_path, dgx, cpu_topology=True)
    after = cpulist.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)

    # one zone fewer and no per-CPU files: stale node<N> and cpu<C> directories go away
    one_zone = dataclasses.replace(small, zones=small.zones[:1])
    write_sysfs(tmp_path, one_zone)
    node_dirs = sorted(p.name for p in (tmp_path / "devices/system/node").iterdir() if p.is_dir())
    assert node_dirs == ["node0"]
    assert cpulist.read_text() == "0-3\n"
    assert not any(p.name.startswith("cpu") for p in (tmp_path / "devices/system/cpu").iterdir())
    assert (tmp_path / "devices/system/cpu/online").read_text() == "0-3\n"
    assert not list(tmp_path.rglob(".*"))  # no temporary files left behind


def test_dra_devices_get_their_pci_numa_node(tmp_path: Path) -> None:
    (profile,) = [p for p in load_profiles(example_profile("dra")) if p.name == "dra-gpu"]
    files = sysfs_files(profile)
    assert files["bus/pci/devices/0000:01:00.0/numa_node"] == "0\n"
    assert files["bus/pci/devices/0001:01:01.0/numa_node"] == "1\n"
    assert len([f for f in files if f.startswith("bus/pci/")]) == 4  # the CPU driver has none
    write_sysfs(tmp_path, profile)
    stale = tmp_path / "bus/pci/devices/0007:01:00.0"
    stale.mkdir()
    write_sysfs(tmp_path, profile)
    assert not stale.exists()
    assert (tmp_path / "bus/pci/devices/0001:01:00.0/numa_node").read_text() == "1\n"
