"""``fakenrt kubelet explain`` and ``fakenrt demo`` through click's test runner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from fakenrt.cli import main

PROFILE = """\
nodes:
- name: small
  kubelet: {topologyManagerPolicy: single-numa-node}
  shape:
    numaNodes: 2
    coresPerNumaNode: 4
    threadsPerCore: 1
    memoryPerNumaNode: 64Gi
    devicesPerNumaNode: {nvidia.com/gpu: 2}
"""

TWO_NODES = (
    PROFILE
    + """\
- name: other
  kubelet: {topologyManagerPolicy: restricted}
  shape: {numaNodes: 2, coresPerNumaNode: 2, threadsPerCore: 1, memoryPerNumaNode: 8Gi}
"""
)

PODS = """\
apiVersion: v1
kind: Pod
metadata: {name: p1}
spec:
  containers:
  - name: c1
    resources:
      limits: {cpu: "2", memory: 1Gi, nvidia.com/gpu: 1}
---
apiVersion: v1
kind: Pod
metadata: {name: p2, namespace: team}
spec:
  containers:
  - name: c1
    resources:
      limits: {cpu: "5", memory: 1Gi, nvidia.com/gpu: 2}
"""


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_explain_json_is_one_array_in_the_documented_shape(tmp_path: Path) -> None:
    profile = write(tmp_path, "p.yaml", PROFILE)
    pods = write(tmp_path, "pods.yaml", PODS)
    code, out, _ = invoke("kubelet", "explain", "--profile", profile, "--pod", pods, "--json")
    assert code == 0
    assert json.loads(out) == [
        {
            "pod": "default/p1",
            "node": "small",
            "policy": "single-numa-node",
            "scope": "container",
            "admit": True,
            "reason": None,
            "message": None,
            "hints": [
                {
                    "container": "c1",
                    "best": {"numa": [0], "preferred": True},
                    "why": "nvidia.com/gpu, cpu, memory all prefer {0}",
                    "notes": [],
                    "providers": {
                        "nvidia.com/gpu": [
                            {"numa": [0], "preferred": True},
                            {"numa": [1], "preferred": True},
                            {"numa": [0, 1], "preferred": False},
                        ],
                        "cpu": [
                            {"numa": [0], "preferred": True},
                            {"numa": [1], "preferred": True},
                            {"numa": [0, 1], "preferred": False},
                        ],
                        "memory": [
                            {"numa": [0], "preferred": True},
                            {"numa": [1], "preferred": True},
                            {"numa": [0, 1], "preferred": False},
                        ],
                    },
                }
            ],
            "allocation": [
                {
                    "container": "c1",
                    "kind": "regular",
                    "cpus": "0-1",
                    "devices": {"nvidia.com/gpu": ["GPU-0"]},
                    "memory": [{"type": "memory", "size": 1073741824, "numa": [0]}],
                }
            ],
            "dra": None,
        },
        {
            "pod": "team/p2",
            "node": "small",
            "policy": "single-numa-node",
            "scope": "container",
            "admit": False,
            "reason": "TopologyAffinityError",
            "message": "Resources cannot be allocated with Topology locality",
            "hints": [
                {
                    "container": "c1",
                    "best": {"numa": None, "preferred": False},
                    "why": "single-numa-node keeps only preferred single-NUMA hints, and cpu "
                    "has none",
                    "notes": [],
                    "providers": {
                        "nvidia.com/gpu": [
                            {"numa": [1], "preferred": True},
                            {"numa": [0, 1], "preferred": False},
                        ],
                        "cpu": [
                            {"numa": [0, 1], "preferred": True},
                        ],
                        "memory": [
                            {"numa": [0], "preferred": True},
                            {"numa": [1], "preferred": True},
                        ],
                    },
                }
            ],
            "allocation": [],
            "dra": None,
        },
    ]


def test_explain_text_says_why(tmp_path: Path) -> None:
    profile = write(tmp_path, "p.yaml", PROFILE)
    pods = write(tmp_path, "pods.yaml", PODS)
    code, out, _ = invoke("kubelet", "explain", "--profile", profile, "--pod", pods)
    assert code == 0
    assert "pod default/p1 on node small (single-numa-node, container scope): ADMITTED" in out
    assert "REJECTED TopologyAffinityError" in out
    assert "c1 (regular): cpus 0-1; nvidia.com/gpu GPU-0; memory 1Gi on {0}" in out


def test_pods_from_several_files_share_one_node(tmp_path: Path) -> None:
    profile = write(tmp_path, "p.yaml", PROFILE)
    docs = PODS.split("---\n")
    a, b = write(tmp_path, "a.yaml", docs[0]), write(tmp_path, "b.yaml", docs[1])
    code, out, _ = invoke(
        "kubelet", "explain", "--profile", profile, "--pod", a, "--pod", b, "--json"
    )
    assert code == 0
    assert [r["admit"] for r in json.loads(out)] == [True, False]


@pytest.mark.parametrize(
    ("profile_text", "pod_text", "extra", "message"),
    [
        pytest.param(
            TWO_NODES,
            PODS,
            [],
            "has 2 nodes (small, other): pick one with --node",
            id="several-nodes-need-node",
        ),
        pytest.param(
            TWO_NODES,
            PODS,
            ["--node", "nope"],
            "--node 'nope': no such node in ",
            id="unknown-node",
        ),
        pytest.param(
            PROFILE,
            "kind: Pod\nmetadata: {name: x}\n",
            [],
            "spec is required",
            id="pod-without-spec",
        ),
        pytest.param(PROFILE, "a: [b\n", [], "not valid YAML", id="pod-bad-yaml"),
        pytest.param(
            PROFILE,
            "kind: Pod\nmetadata: {name: g}\nspec:\n  containers:\n  - name: c\n"
            "    resources: {requests: {nvidia.com/gpu: 1}}\n",
            [],
            "spec.containers[0](c).resources.limits.nvidia.com/gpu: a limit is required",
            id="gpu-without-limit",
        ),
        pytest.param(
            PROFILE,
            PODS + "---\n" + PODS.split("---\n", maxsplit=1)[0],
            [],
            "pod default/p1 is already given",
            id="duplicate-pod",
        ),
        pytest.param("nodes: [{name: x}]\n", PODS, [], "p.yaml", id="invalid-profile"),
    ],
)
def test_invalid_input_fails_with_a_clear_message(
    tmp_path: Path, profile_text: str, pod_text: str, extra: list[str], message: str
) -> None:
    profile = write(tmp_path, "p.yaml", profile_text)
    pods = write(tmp_path, "pods.yaml", pod_text)
    code, out, err = invoke("kubelet", "explain", "--profile", profile, "--pod", pods, *extra)
    assert code != 0
    assert out == ""
    assert message in err


def test_missing_pod_file(tmp_path: Path) -> None:
    profile = write(tmp_path, "p.yaml", PROFILE)
    code, _, err = invoke(
        "kubelet", "explain", "--profile", profile, "--pod", str(tmp_path / "no.yaml")
    )
    assert code != 0 and "no.yaml: cannot read the file" in err


def test_demo_shows_the_seed_examples() -> None:
    code, out, _ = invoke("demo")
    assert code == 0
    verdicts = [line for line in out.splitlines() if line.startswith("pod ")]
    assert [v.split(": ", 1)[1].split(":")[0] for v in verdicts[:6]] == [
        "REJECTED TopologyAffinityError",
        "ADMITTED",
        "REJECTED TopologyAffinityError",
        "ADMITTED",
        "ADMITTED",
        "REJECTED TopologyAffinityError",
    ]
    assert "gpu6-cpu24" in verdicts[1] and "best hint {0,1} (preferred)" in out


SMT_PROFILE = """\
nodes:
- name: smt
  kubelet:
    topologyManagerPolicy: single-numa-node
    topologyManagerScope: pod
    cpuManagerPolicyOptions: {full-pcpus-only: "true"}
    reservedSystemCPUs: "0,16"
  shape: {numaNodes: 4, coresPerNumaNode: 4, threadsPerCore: 2, memoryPerNumaNode: 4Gi}
"""

SMT_PODS = """\
apiVersion: v1
kind: Pod
metadata: {name: three}
spec:
  containers:
  - name: c1
    resources:
      limits: {cpu: 3, memory: 1Gi}
---
apiVersion: v1
kind: Pod
metadata: {name: four}
spec:
  containers:
  - name: c1
    resources:
      limits: {cpu: 4, memory: 1Gi}
"""


def test_explain_shows_smt_alignment_errors(tmp_path: Path) -> None:
    """The real kubelet's verdict on full-pcpus-only (shared/notes/real-kubelet.md): a
    3-CPU pod on an SMT-2 node is rejected in Allocate, after the merge admitted it."""
    profile = write(tmp_path, "p.yaml", SMT_PROFILE)
    pods = write(tmp_path, "pods.yaml", SMT_PODS)
    code, out, _ = invoke("kubelet", "explain", "--profile", profile, "--pod", pods)
    assert code == 0, out
    assert (
        "pod default/three on node smt (single-numa-node, pod scope, CPU Manager options "
        "full-pcpus-only): REJECTED SMTAlignmentError: SMT Alignment Error: requested 3 cpus "
        "not multiple cpus per core = 2" in out
    )
    assert "then the CPU Manager's Allocate refused" in out
    code, out, _ = invoke("kubelet", "explain", "--profile", profile, "--pod", pods, "--json")
    verdicts = [(p["pod"], p["admit"], p["reason"]) for p in json.loads(out)]
    assert verdicts == [("default/three", False, "SMTAlignmentError"), ("default/four", True, None)]
    # whole cores on NUMA node 0: the reserved core (0, 16) leaves it the fewest free
    # CPUs, and the static policy packs the fullest NUMA node first
    assert json.loads(out)[1]["allocation"][0]["cpus"] == "1-2,17-18"
