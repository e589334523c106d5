"""`kubelet explain` -> `nrt render` -> `scheduler evaluate`, from the command line: the
scheduler's verdict on the NRT a (loaded) node publishes is the simulator's verdict, on the
bundled profiles and pods, with reconstruction on (the default) and off."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from fakenrt.cli import main
from fakenrt.commands.demo import SCENARIOS, bundled_pods
from fakenrt.profiles import example_profile
from tests.scheduler.builders import container, pod_manifest

PODS = Path(__file__).parents[2] / "fakenrt" / "examples" / "pods"


def cli(*args: str) -> Any:
    return CliRunner().invoke(main, list(args))


def write(path: Path, *docs: Any) -> str:
    path.write_text(yaml.safe_dump_all(list(docs)))
    return str(path)


def explain(profile: str, node: str, *pod_files: str) -> list[dict[str, Any]]:
    args = ["kubelet", "explain", "--profile", profile, "--node", node, "--json"]
    for f in pod_files:
        args += ["--pod", f]
    result = cli(*args)
    assert result.exit_code == 0, result.output
    verdicts: list[dict[str, Any]] = json.loads(result.stdout)
    return verdicts


def render(tmp: Path, profile: str, node: str, *pod_files: str) -> tuple[str, str]:
    """The NRT of the node after ``pod_files`` (file path) and the pods on it (file path)."""
    nrt, on_node = tmp / "nrt.yaml", tmp / "on-node.yaml"
    args = ["nrt", "render", "--profile", profile, "--node", node]
    for f in pod_files:
        args += ["--pod", f]
    if pod_files:
        args += ["--pods-out", str(on_node)]
    else:
        on_node.write_text("")
    result = cli(*args)
    assert result.exit_code == 0, result.output
    nrt.write_text(result.stdout)
    return str(nrt), str(on_node)


def evaluate(nrt: str, pod: str, on_node: str, *, reconstruct: bool, tmp: Path) -> Any:
    args_file = write(tmp / "args.yaml", {"reconstructAvailable": reconstruct})
    args = ["scheduler", "evaluate", "--nrt", nrt, "--pod", pod, "--args", args_file, "--json"]
    if Path(on_node).read_text().strip():
        args += ["--pods-on-node", on_node]
    result = cli(*args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def split_pods(tmp: Path, file_name: str) -> list[str]:
    """One file per pod of a bundled pod file, in order."""
    docs = [d for d in yaml.safe_load_all((PODS / file_name).read_text()) if d]
    return [write(tmp / f"pod-{i}.yaml", doc) for i, doc in enumerate(docs)]


CASES = [
    pytest.param(scenario.profile, node, scenario.pods, id=f"{scenario.profile}-{node}")
    for scenario in SCENARIOS
    for node, _ in scenario.runs
]


@pytest.mark.parametrize("reconstruct", [True, False], ids=["reconstruct", "trust-nrt"])
@pytest.mark.parametrize(("profile_name", "node", "pod_file"), CASES)
def test_evaluate_on_the_rendered_loaded_node_agrees_with_explain(
    tmp_path: Path, profile_name: str, node: str, pod_file: str, reconstruct: bool
) -> None:
    """Every prefix of a bundled pod sequence: render the node loaded with the prefix,
    evaluate the next pod, compare with explain's verdict for that pod after the prefix.
    Default plugin arguments: no ignoreList (the NRT says which managers align), and the
    dgx profile's foreign `allocated` counts (issue 11: a 4-GPU pod on dgx-a's zone 0)."""
    profile = str(example_profile(profile_name))
    files = split_pods(tmp_path, pod_file)
    for i, pod in enumerate(files):
        expected = explain(profile, node, *files[: i + 1])[-1]
        nrt, on_node = render(tmp_path, profile, node, *files[:i])
        verdict = evaluate(nrt, pod, on_node, reconstruct=reconstruct, tmp=tmp_path)
        assert verdict["fit"] is expected["admit"], (i, verdict, expected)
    assert bundled_pods(pod_file)  # the file is the one the demo runs


def test_dgx_four_gpus_are_not_put_on_the_zone_foreign_pods_hold(tmp_path: Path) -> None:
    """Issue 11, item 1: dgx-a's zone 0 has one GPU held by a foreign pod; a 4-GPU pod goes
    to zone 1, where explain admits it too."""
    profile = str(example_profile("dgx"))
    pod = write(
        tmp_path / "pod.yaml",
        pod_manifest(
            "four", [container("main", {"cpu": 8, "memory": "32Gi", "nvidia.com/gpu": 4})]
        ),
    )
    (expected,) = explain(profile, "dgx-a", pod)
    assert expected["admit"] is True
    nrt, on_node = render(tmp_path, profile, "dgx-a")
    verdict = evaluate(nrt, pod, on_node, reconstruct=True, tmp=tmp_path)
    assert verdict["fit"] is True and verdict["zones"] == ["node-1"]


def test_evaluate_fails_what_the_kubelet_fails_for_non_topology_reasons(tmp_path: Path) -> None:
    """Issue 11, item 3: memory that is not a whole number of bytes is an
    UnexpectedAdmissionError of the Memory Manager; evaluate says it does not fit, by the
    same rule."""
    profile = str(example_profile("dgx"))
    pod = write(
        tmp_path / "pod.yaml",
        pod_manifest("odd", [container("main", {"cpu": 2, "memory": "1.1Gi"})]),
    )
    (expected,) = explain(profile, "dgx-a", pod)
    assert expected["admit"] is False and expected["reason"] == "UnexpectedAdmissionError"
    nrt, on_node = render(tmp_path, profile, "dgx-a")
    verdict = evaluate(nrt, pod, on_node, reconstruct=True, tmp=tmp_path)
    assert verdict["fit"] is False
    assert verdict["reason"].startswith("memory manager: container main: ")
    # A node whose Memory Manager is None does not fail it (NRT says so): seed000-4core is
    # single-numa-node with memoryManagerPolicy Static, seed000-4gpu has None.
    demo = str(example_profile("demo"))
    (expected,) = explain(demo, "seed000-4gpu", pod)
    nrt, on_node = render(tmp_path, demo, "seed000-4gpu")
    verdict = evaluate(nrt, pod, on_node, reconstruct=True, tmp=tmp_path)
    assert expected["admit"] is True and verdict["fit"] is True


def test_fractional_devices_are_refused_by_both_commands(tmp_path: Path) -> None:
    profile = str(example_profile("dgx"))
    pod = write(
        tmp_path / "pod.yaml",
        pod_manifest(
            "half", [container("main", {"cpu": 1, "memory": "1Gi", "nvidia.com/gpu": "0.5"})]
        ),
    )
    nrt, _ = render(tmp_path, profile, "dgx-a")
    refused = []
    for args in (
        ["kubelet", "explain", "--profile", profile, "--node", "dgx-a", "--pod", pod],
        ["scheduler", "evaluate", "--nrt", nrt, "--pod", pod],
    ):
        result = cli(*args)
        assert result.exit_code == 1, result.output
        refused.append(result.stderr.strip().splitlines()[-1])
    for message in refused:
        assert "spec.containers[0](main).resources.limits.nvidia.com/gpu" in message
        assert "must be an integer" in message


def test_render_with_pods_out_needs_pods_and_names_rejected_pods(tmp_path: Path) -> None:
    profile = str(example_profile("demo"))
    out = cli("nrt", "render", "--profile", profile, "--pods-out", str(tmp_path / "x.yaml"))
    assert out.exit_code == 2 and "needs --pod" in out.stderr
    files = split_pods(tmp_path, "seed000-restricted.yaml")
    result = cli(
        "nrt",
        "render",
        "--profile",
        profile,
        "--node",
        "seed000-4gpu",
        "--pod",
        files[0],
        "--pods-out",
        str(tmp_path / "on.yaml"),
    )
    assert result.exit_code == 0, result.output
    assert "rejected: TopologyAffinityError" in result.stderr
    assert (tmp_path / "on.yaml").read_text() == ""
    several = cli("nrt", "render", "--profile", profile, "--pod", files[0])
    assert several.exit_code == 1 and "pick one with --node" in several.stderr
