"""The publisher's input edge: each unreadable input is one InputError naming the file,
directory or socket and what is wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from exporter.podresources_client import PodResourcesClient
from fakenrt.nrtpub.inputs import InputError, observe, read_kubelet_config, read_machine
from tests.controller.conftest import make_profiles, two_numa_profile
from tests.nrtpub.realnode_files import write_node_files


@pytest.fixture
def root(tmp_path: Path) -> Path:
    raw = two_numa_profile("n")
    raw["kubelet"]["reservedSystemCPUs"] = "0"
    (profile,) = make_profiles(raw)
    write_node_files(profile, tmp_path)
    return tmp_path


def test_the_written_machine_reads_back(root: Path) -> None:
    machine = read_machine(root / "sys")
    assert machine.node_ids == (0, 1)
    assert machine.nodes[1].cpus == frozenset({4, 5, 6, 7})
    assert machine.nodes[0].distances == (10, 20)


def test_missing_sysfs(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"devices/system/node: cannot list NUMA nodes"):
        read_machine(tmp_path / "nowhere")
    (tmp_path / "devices/system/node").mkdir(parents=True)
    with pytest.raises(InputError, match=r"no node<N> directories \(is --sysfs-root"):
        read_machine(tmp_path)


def test_a_missing_node_file_is_named(root: Path) -> None:
    (root / "sys/devices/system/node/node1/meminfo").unlink()
    with pytest.raises(InputError, match=r"node1/meminfo: cannot read the file"):
        read_machine(root / "sys")


def test_a_huge_sysfs_file_is_refused(root: Path) -> None:
    (root / "sys/devices/system/node/node0/distance").write_text("10 " * 100_000)
    with pytest.raises(InputError, match=r"node0/distance: larger than"):
        read_machine(root / "sys")


def test_kubelet_config_problems_name_the_file(root: Path) -> None:
    path = root / "kubelet-config.yaml"
    assert read_kubelet_config(path).policies.topology_manager_policy == "single-numa-node"
    path.write_text("cpuManagerPolicy: [")
    with pytest.raises(InputError, match=rf"{path}: not valid YAML: "):
        read_kubelet_config(path)
    path.unlink()
    with pytest.raises(InputError, match=rf"{path}: cannot read the file"):
        read_kubelet_config(path)


def test_an_absent_socket_is_named(root: Path) -> None:
    client = PodResourcesClient(root / "kubelet.sock", timeout_s=2.0)
    try:
        with pytest.raises(InputError, match=r"UNAVAILABLE.*kubelet.sock"):
            observe(
                client=client,
                sysfs_root=root / "sys",
                kubelet_config=root / "kubelet-config.yaml",
            )
    finally:
        client.close()
