"""``fakenrt scheduler evaluate``: JSON contract, reconstruction input, arguments, errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from exporter.annotations import OBSERVED_PLACEMENT, PREDICTED_PLACEMENT
from fakenrt.cli import main
from tests.scheduler.builders import GI, GPU, container, nrt_object, pod_manifest

ZONES = [
    {
        "capacity": {"cpu": 32, "memory": 64 * GI, GPU: 4},
        "allocatable": {"cpu": 30, "memory": 64 * GI, GPU: 4},
    },
    {"capacity": {"cpu": 32, "memory": 64 * GI, GPU: 4}},
]


def write(tmp: Path, name: str, *docs: Any) -> str:
    path = tmp / name
    path.write_text(yaml.safe_dump_all(list(docs)))
    return str(path)


def pod(name: str = "train", **kw: Any) -> dict[str, Any]:
    return pod_manifest(name, [container("main", {"cpu": 12, "memory": "16Gi", GPU: 2})], **kw)


def invoke(*args: str) -> Any:
    return CliRunner().invoke(main, ["scheduler", "evaluate", *args])


def test_json_is_exactly_one_object(tmp_path: Path) -> None:
    nrt = write(
        tmp_path,
        "nrt.yaml",
        nrt_object("gpu-1", ZONES, policy="single-numa-node", distances=[[10, 20], [20, 10]]),
    )
    result = invoke("--nrt", nrt, "--pod", write(tmp_path, "pod.yaml", pod()), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {
        "fit": True,
        "reason": None,
        "zones": ["node-0"],
        "scores": {
            "LeastNUMANodes": 94,
            "MostAllocated": 38,
            "LeastAllocated": 61,
            "BalancedAllocation": 89,
        },
    }
    assert result.stdout.count("\n") == 1


def test_pods_on_node_reconstruct_and_steer_to_the_other_zone(tmp_path: Path) -> None:
    nrt = write(tmp_path, "nrt.yaml", nrt_object("gpu-1", ZONES, policy="single-numa-node"))
    observed = '[{"zone":"node-0","amount":{"cpu":"24","nvidia.com/gpu":"4"}}]'
    predicted = '[{"zone":"node-1","amount":{"nvidia.com/gpu":"3"}}]'
    on_node = write(
        tmp_path,
        "pods.yaml",
        pod(
            "a",
            annotations={OBSERVED_PLACEMENT: observed, PREDICTED_PLACEMENT: predicted},
            node="gpu-1",
        ),
        pod(
            "b",
            annotations={PREDICTED_PLACEMENT: '[{"zone":"node-1","amount":{"cpu":"2"}}]'},
            node="gpu-1",
        ),
        pod("c", annotations={OBSERVED_PLACEMENT: observed}, node="gpu-1", phase="Succeeded"),
        # holds nothing exclusive (BestEffort): it takes no zone's resources
        pod_manifest("d", [container("main", {})], node="gpu-1"),
    )
    pod_path = write(tmp_path, "pod.yaml", pod())
    result = invoke("--nrt", nrt, "--pod", pod_path, "--pods-on-node", on_node, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["zones"] == ["node-1"]
    human = invoke("--nrt", nrt, "--pod", pod_path, "--pods-on-node", on_node)
    assert human.stdout.splitlines()[:2] == ["fits", "zones: node-1"]
    assert "pod default/d has no placement annotation" in human.stderr


def test_a_pod_holding_resources_at_unknown_zones_defers_numa_pods(tmp_path: Path) -> None:
    """Seed 000's gap: a pod on the node with neither observed nor predicted placement that
    holds exclusive resources, and an NRT that is not current for the node's pods (no
    fingerprint here): the free zones are unknown, so a NUMA-sensitive pod is deferred."""
    nrt = write(tmp_path, "nrt.yaml", nrt_object("gpu-1", ZONES, policy="single-numa-node"))
    on_node = write(tmp_path, "pods.yaml", pod("foreign", node="gpu-1"))
    pod_path = write(tmp_path, "pod.yaml", pod())
    result = invoke("--nrt", nrt, "--pod", pod_path, "--pods-on-node", on_node, "--json")
    assert result.exit_code == 0, result.output
    verdict = json.loads(result.stdout)
    assert verdict["fit"] is False
    assert verdict["reason"].startswith("deferred: pod default/foreign ")
    # a pod that aligns nothing is not NUMA-sensitive: it is not deferred
    plain = write(tmp_path, "plain.yaml", pod_manifest("plain", [container("main", {})]))
    result = invoke("--nrt", nrt, "--pod", plain, "--pods-on-node", on_node, "--json")
    assert json.loads(result.stdout)["fit"] is True


def test_reconstruct_off_trusts_nrt_available(tmp_path: Path) -> None:
    zones = [dict(z, available={"cpu": 0, "memory": 0, GPU: 0}) for z in ZONES]
    nrt = write(tmp_path, "nrt.yaml", nrt_object("gpu-1", zones, policy="restricted"))
    pod_path = write(tmp_path, "pod.yaml", pod())
    # --pods-on-node given (empty: no pods), no fingerprint saying NRT is current: rebuilt
    no_pods = write(tmp_path, "none.yaml")
    default = invoke("--nrt", nrt, "--pod", pod_path, "--pods-on-node", no_pods, "--json")
    assert json.loads(default.stdout)["fit"] is True  # no pods on the node: all free
    # without --pods-on-node the pods are unknown: NRT available is trusted
    unknown = invoke("--nrt", nrt, "--pod", pod_path, "--json")
    assert json.loads(unknown.stdout)["fit"] is False
    args = write(tmp_path, "args.yaml", {"reconstructAvailable": False, "ignoreList": ["memory"]})
    trusted = invoke("--nrt", nrt, "--pod", pod_path, "--args", args, "--json")
    verdict = json.loads(trusted.stdout)
    assert verdict["fit"] is False
    assert verdict["zones"] == []
    assert "not available in any NUMA combination" in verdict["reason"]


def test_best_effort_node_passes_through_with_empty_zones(tmp_path: Path) -> None:
    nrt = write(tmp_path, "nrt.yaml", nrt_object("gpu-1", ZONES, policy="best-effort"))
    result = invoke("--nrt", nrt, "--pod", write(tmp_path, "pod.yaml", pod()), "--json")
    verdict = json.loads(result.stdout)
    assert verdict["fit"] is True and verdict["zones"] == []
    assert verdict["scores"]["LeastNUMANodes"] == 94


@pytest.mark.parametrize(
    ("files", "fragment"),
    [
        pytest.param(
            {"nrt": {"kind": "NodeResourceTopology", "metadata": {"name": "x"}, "zones": "no"}},
            "nrt.yaml: NRT x: zones must be a list",
            id="nrt-field",
        ),
        pytest.param(
            {"pod": {"kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": []}}},
            "pod.yaml: pod default/p: spec.containers must be a non-empty list",
            id="pod-field",
        ),
        pytest.param(
            {"pods": pod("bad", annotations={OBSERVED_PLACEMENT: "[{"})},
            "pod default/bad: annotation kai.scheduler/numa-placement-observed",
            id="pods-on-node-annotation",
        ),
        pytest.param(
            {"args": {"scoringStrategy": "Random"}},
            "args.yaml: scoringStrategy 'Random' is not one of",
            id="args-field",
        ),
        pytest.param(
            {"args": {"ignore": ["cpu"]}}, "unknown argument(s) ignore", id="args-unknown"
        ),
    ],
)
def test_invalid_input_names_file_object_and_field(
    tmp_path: Path, files: dict[str, Any], fragment: str
) -> None:
    paths = {
        "nrt": write(tmp_path, "nrt.yaml", files.get("nrt", nrt_object("gpu-1", ZONES))),
        "pod": write(tmp_path, "pod.yaml", files.get("pod", pod())),
    }
    argv = ["--nrt", paths["nrt"], "--pod", paths["pod"]]
    if "pods" in files:
        argv += ["--pods-on-node", write(tmp_path, "pods.yaml", files["pods"])]
    if "args" in files:
        argv += ["--args", write(tmp_path, "args.yaml", files["args"])]
    result = invoke(*argv, "--json")
    assert result.exit_code != 0
    assert result.stdout == ""
    assert fragment in result.stderr, result.stderr


def test_unreadable_yaml_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "nrt.yaml"
    bad.write_text("zones: [\n")
    result = invoke("--nrt", str(bad), "--pod", write(tmp_path, "pod.yaml", pod()))
    assert result.exit_code != 0
    assert f"{bad}: not valid YAML" in result.stderr


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(["evaluate", "--nrt", "NRT", "--pod", "POD"], id="evaluate"),
        pytest.param(["run", "--kubeconfig", "KUBECONFIG", "--once"], id="run"),
    ],
)
def test_args_with_more_than_one_document_is_rejected_by_both_commands(
    tmp_path: Path, command: list[str]
) -> None:
    args = write(tmp_path, "args.yaml", {"ignoreList": ["memory"]}, {"scoringStrategy": "X"})
    files = {
        "NRT": write(tmp_path, "nrt.yaml", nrt_object("gpu-1", ZONES)),
        "POD": write(tmp_path, "pod.yaml", pod()),
        "KUBECONFIG": write(tmp_path, "unused-kubeconfig"),  # exists; never read
    }
    argv = ["scheduler", *(files.get(a, a) for a in command), "--args", args]
    result = CliRunner().invoke(main, argv)
    assert result.exit_code != 0
    assert f"{args}: expected one YAML mapping, found 2" in result.stderr, result.stderr
