"""Hostile sizes are bad input: bounded, refused with one line naming the place, never a
hang or an out-of-memory kill (issue 11, item 7), and output that stays readable on
nodes with many NUMA nodes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from fakenrt.cli import main
from fakenrt.profiles import ProfileError, load_profiles
from fakenrt.profiles.limits import MAX_ALIGNED_NUMA_NODES, MAX_CPUS, MAX_DEVICES_PER_RESOURCE
from fakenrt.profiles.loading import load_yaml
from fakenrt.profiles.parsing import parse_profiles
from fakenrt.textfiles import MAX_INPUT_BYTES

POD = """\
apiVersion: v1
kind: Pod
metadata: {name: g}
spec:
  containers:
  - name: c
    image: x
    resources:
      limits: {cpu: "2", memory: 1Gi, nvidia.com/gpu: 1}
"""


def node(body: str) -> str:
    return "nodes:\n- name: n\n" + "".join(f"  {line}\n" for line in body.splitlines())


def shape(numa: int, policy: str = "restricted", memory_manager: str = "Static") -> str:
    return node(
        f"kubelet: {{topologyManagerPolicy: {policy}, memoryManagerPolicy: {memory_manager},\n"
        f"  topologyManagerPolicyOptions: {{max-allowable-numa-nodes: '{numa}'}}}}\n"
        f"shape: {{numaNodes: {numa}, coresPerNumaNode: 2, memoryPerNumaNode: 4Gi,\n"
        "  devicesPerNumaNode: {nvidia.com/gpu: 1}}"
    )


@pytest.mark.parametrize(
    ("text", "field", "problem"),
    [
        pytest.param(
            node('zones: [{id: 0, cpus: "0-999999999", memory: 1Gi}]'),
            "zones[0].cpus",
            f"CPU id 999999999 is too large: CPU ids are below {MAX_CPUS}",
            id="huge-cpu-range",
        ),
        pytest.param(
            node(f'zones: [{{id: 0, cpus: "0-3,{"9" * 5000}", memory: 1Gi}}]'),
            "zones[0].cpus",
            "CPU id 99999999999999999999 is too large",
            id="cpu-id-of-5000-digits",
        ),
        pytest.param(
            node('zones: [{id: 0, cpus: "0", memory: 1Gi}]\nreservedSystemCPUs: "0-99999999"'),
            "reservedSystemCPUs",
            "unknown key",
            id="misplaced-reserved",
        ),
        pytest.param(
            node(
                'kubelet: {reservedSystemCPUs: "0-99999999"}\n'
                'zones: [{id: 0, cpus: "0", memory: 1Gi}]'
            ),
            "kubelet.reservedSystemCPUs",
            "too large",
            id="huge-reserved-range",
        ),
        pytest.param(
            node(
                'zones: [{id: 0, cpus: "0-3", memory: 1Gi, devices: {nvidia.com/gpu: 100000000}}]'
            ),
            'zones[0].devices["nvidia.com/gpu"]',
            f"more than {MAX_DEVICES_PER_RESOURCE} nvidia.com/gpu devices on the node",
            id="huge-device-count",
        ),
        pytest.param(
            node(
                "shape: {numaNodes: 2, coresPerNumaNode: 1, memoryPerNumaNode: 1Gi,\n"
                "  devicesPerNumaNode: {nvidia.com/gpu: 1000}}"
            ),
            'shape.devicesPerNumaNode["nvidia.com/gpu"]',
            "more than 1024",
            id="devices-summed-over-zones",
        ),
        pytest.param(
            node("shape: {numaNodes: 4, coresPerNumaNode: 100000000000, memoryPerNumaNode: 1Gi}"),
            "shape.coresPerNumaNode",
            f"400000000000 CPUs in all; a node has at most {MAX_CPUS}",
            id="huge-shape",
        ),
        pytest.param(
            node('zones: [{id: 0, cpus: "0-3", memory: 1e400}]'),
            "zones[0].memory",
            "'1e400' is not a whole Kubernetes quantity",
            id="memory-1e400",
        ),
        pytest.param(
            node('zones: [{id: 0, cpus: "0-3", memory: .inf}]'),
            "zones[0].memory",
            "expected a quantity",
            id="memory-inf",
        ),
        pytest.param(
            shape(64),
            "shape.numaNodes",
            f"64 NUMA nodes with topologyManagerPolicy restricted and memoryManagerPolicy "
            f"Static: fakenrt simulates at most {MAX_ALIGNED_NUMA_NODES}",
            id="64-zones-aligned",
        ),
        pytest.param(
            shape(17, policy="none"),
            "shape.numaNodes",
            "17 NUMA nodes with memoryManagerPolicy Static: fakenrt simulates at most 16",
            id="17-zones-static-memory-manager",
        ),
    ],
)
def test_hostile_profile_sizes_are_refused(text: str, field: str, problem: str) -> None:
    with pytest.raises(ProfileError) as caught:
        parse_profiles(load_yaml(text, source="p.yaml"), source="p.yaml")
    assert caught.value.field == field
    assert problem in caught.value.detail
    assert str(caught.value).startswith(f'p.yaml: node "n": {field}: ')


def test_a_64_zone_node_without_alignment_is_simulated(tmp_path: Path) -> None:
    """Neither the Topology Manager nor the Memory Manager enumerates NUMA subsets, so 64
    NUMA nodes are fine: the pod is admitted."""
    profile = tmp_path / "p.yaml"
    profile.write_text(shape(64, policy="none", memory_manager="None"))
    pod = tmp_path / "pod.yaml"
    pod.write_text(POD)
    result = CliRunner().invoke(
        main, ["kubelet", "explain", "--profile", str(profile), "--pod", str(pod)]
    )
    assert result.exit_code == 0, result.output
    assert "ADMITTED" in result.stdout


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        pytest.param(b"nodes: []\n\0\0\0", "not a text file (it contains NUL bytes)", id="binary"),
        pytest.param(
            b"nodes:\n- name: \xff\xfe\n", "not UTF-8 text (invalid byte at offset", id="latin1"
        ),
        pytest.param(
            b"#" * (MAX_INPUT_BYTES + 1), "larger than 8 MiB, the most fakenrt reads", id="huge"
        ),
    ],
)
def test_unreadable_files_are_refused(tmp_path: Path, content: bytes, problem: str) -> None:
    path = tmp_path / "f.yaml"
    path.write_bytes(content)
    with pytest.raises(ProfileError, match=re.escape(problem)):
        load_profiles(path)
    pod = tmp_path / "pod.yaml"
    pod.write_text(POD)
    for args in (
        ["kubelet", "explain", "--profile", str(path), "--pod", str(pod)],
        ["kubelet", "explain", "--profile", str(path), "--pod", str(path)],
        ["nrt", "render", "--profile", str(path)],
        ["scheduler", "evaluate", "--nrt", str(path), "--pod", str(pod)],
        ["scheduler", "evaluate", "--nrt", str(path), "--pod", str(path)],
    ):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 1, args
        assert result.stderr.startswith(f"Error: {path}: "), (args, result.stderr)
        assert problem in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1


def test_dev_zero_is_read_bounded() -> None:
    with pytest.raises(ProfileError, match="/dev/zero: larger than 8 MiB"):
        load_profiles("/dev/zero")


def _render_nrt(tmp_path: Path, numa: int, policy: str = "restricted") -> Path:
    profile = tmp_path / "p.yaml"
    profile.write_text(shape(numa, policy=policy, memory_manager="None"))
    result = CliRunner().invoke(main, ["nrt", "render", "--profile", str(profile)])
    assert result.exit_code == 0, result.output
    path = tmp_path / "nrt.yaml"
    path.write_text(result.stdout)
    return path


def test_the_plugin_refuses_an_nrt_with_more_zones_than_it_can_search(tmp_path: Path) -> None:
    nrt = _render_nrt(tmp_path, 24, policy="none")
    pod = tmp_path / "pod.yaml"
    pod.write_text(POD)
    result = CliRunner().invoke(
        main, ["scheduler", "evaluate", "--nrt", str(nrt), "--pod", str(pod)]
    )
    assert result.exit_code == 1
    assert result.stderr.strip() == (
        f"Error: {nrt}: NRT n: 24 NUMA zones; the plugin reads at most 16 "
        "(its NUMA search, like the kubelet's, visits every subset of zones: 2^24)"
    )


def _explain(tmp_path: Path, numa: int, *extra: str) -> str:
    profile = tmp_path / "p.yaml"
    profile.write_text(shape(numa))
    pod = tmp_path / "pod.yaml"
    pod.write_text(POD)
    result = CliRunner().invoke(
        main, ["kubelet", "explain", "--profile", str(profile), "--pod", str(pod), *extra]
    )
    assert result.exit_code == 0, result.output
    return result.stdout


def test_output_stays_readable_at_16_zones(tmp_path: Path) -> None:
    text = _explain(tmp_path, 16)
    assert len(text.splitlines()) < 10
    cpu = next(line for line in text.splitlines() if line.strip().startswith("cpu:"))
    assert cpu.strip() == (
        "cpu: prefers {0} or {1} or {2} or {3} or {4} or {5} or {6} or {7} or 8 more; also fits "
        "{0,1}, {0,2}, {0,3}, {0,4}, {0,5}, {0,6}, {0,7}, {0,8}, 65511 more (not preferred) "
        "[--verbose lists every hint]"
    )
    data = json.loads(_explain(tmp_path, 16, "--json"))
    hints = data[0]["hints"][0]
    assert len(hints["providers"]["cpu"]) == 16
    assert hints["omitted"] == {"nvidia.com/gpu": 65519, "cpu": 65519, "memory": 65519}


def test_verbose_lists_every_hint(tmp_path: Path) -> None:
    text = _explain(tmp_path, 10, "--verbose")
    cpu = next(line for line in text.splitlines() if line.strip().startswith("cpu:"))
    assert cpu.count("{") == 2**10 - 1
    assert "more" not in cpu
    data = json.loads(_explain(tmp_path, 10, "--json", "--verbose"))
    assert len(data[0]["hints"][0]["providers"]["cpu"]) == 2**10 - 1
    assert "omitted" not in data[0]["hints"][0]
