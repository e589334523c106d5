"""CPU -> NUMA from a fixture sysfs tree."""

from __future__ import annotations

from pathlib import Path

import pytest

from exporter.sysfs import SysfsError, node_dir, read_cpu_numa_map, write_fixture


def test_reads_every_node(tmp_path: Path) -> None:
    write_fixture(tmp_path, {0: "0-1,4", 1: "2-3", 10: ""})
    (node_dir(tmp_path) / "possible").write_text("0-1\n")  # non-node entries are ignored
    assert read_cpu_numa_map(tmp_path) == {0: 0, 1: 0, 4: 0, 2: 1, 3: 1}


@pytest.mark.parametrize(
    "nodes,message",
    [
        pytest.param({}, "no node<N> directories", id="no-nodes"),
        pytest.param({0: "0-x"}, "node0/cpulist", id="bad-cpulist"),
        pytest.param({0: "0-3", 1: "3-4"}, "CPU 3 is also listed under node0", id="cpu-twice"),
    ],
)
def test_errors_name_the_file(tmp_path: Path, nodes: dict[int, str], message: str) -> None:
    node_dir(tmp_path).mkdir(parents=True)
    write_fixture(tmp_path, nodes)
    with pytest.raises(SysfsError, match=message):
        read_cpu_numa_map(tmp_path)


def test_missing_root(tmp_path: Path) -> None:
    with pytest.raises(SysfsError, match="cannot list NUMA nodes"):
        read_cpu_numa_map(tmp_path / "absent")
