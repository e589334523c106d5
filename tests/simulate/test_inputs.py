"""What ``fakenrt simulate`` accepts: trace pods pass the one validation every command
uses (``kubelet explain`` refuses the same manifests with the same words), errors name
the files and options that ran (never the bundled scenario a command-line file replaced),
conflicting choices are refused instead of merged, hostile sizes are one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from fakenrt.cli import main
from fakenrt.simulate.generator import MIXES, pod_manifest
from fakenrt.simulate.limits import MAX_PODS, MAX_SEED
from tests.simulate.builders import TWO_ZONES_SNN, pod


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["simulate", *args])
    return result.exit_code, result.output


def _with_resources(resources: dict[str, Any]) -> dict[str, Any]:
    return {
        "metadata": {"name": "a", "namespace": "t"},
        "spec": {"containers": [{"name": "main", "resources": resources}]},
    }


#: Manifests the API server refuses, and the words of the refusal.
REFUSED = [
    pytest.param({"limit": {"cpu": "1"}}, 'unknown field "limit"', id="limit-typo"),
    pytest.param(
        {"limits": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "0.5"}},
        "limits.nvidia.com/gpu: must be an integer",
        id="half-gpu",
    ),
    pytest.param(
        {"limits": {"cpu": "1", "memory": "1Gi", "gpu": "1"}},
        "limits.gpu: must be a standard resource",
        id="unqualified-gpu",
    ),
    pytest.param(
        {
            "limits": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "2"},
            "requests": {"nvidia.com/gpu": "1"},
        },
        "requests.nvidia.com/gpu: must equal the limit",
        id="gpu-request-not-limit",
    ),
    pytest.param(
        {"limits": {"hugepages-2Mi": "2Mi"}},
        "hugepages require a cpu or memory request or limit",
        id="hugepages-alone",
    ),
]


def _nodes(tmp_path: Path) -> Path:
    path = tmp_path / "my-nodes.yaml"
    path.write_text(TWO_ZONES_SNN)
    return path


def _trace(tmp_path: Path, *entries: dict[str, Any], name: str = "my-trace.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump({"pods": list(entries)}))
    return path


@pytest.mark.parametrize(("resources", "words"), REFUSED)
def test_trace_pods_are_validated_as_kubelet_explain_validates_them(
    tmp_path: Path, resources: dict[str, Any], words: str
) -> None:
    manifest = _with_resources(resources)
    trace = _trace(tmp_path, {"at": 0, "duration": "1h", "pod": manifest})
    code, out = invoke(
        "--profiles", str(_nodes(tmp_path)), "--trace", str(trace), "--strategy", "oracle"
    )
    assert code != 0
    assert out.startswith("Error: ") and out.count("\n") == 1, out
    assert f"{trace}: pods[0]: pod t/a: " in out and words in out, out
    # The same manifest given to `kubelet explain`: the same rule, the same words.
    pod_file = tmp_path / "pod.yaml"
    pod_file.write_text(yaml.safe_dump(manifest))
    explained = CliRunner().invoke(
        main, ["kubelet", "explain", "--profile", str(_nodes(tmp_path)), "--pod", str(pod_file)]
    )
    assert explained.exit_code != 0
    problem = out.split("pod t/a: ", 1)[1].strip()
    assert problem in explained.output, (problem, explained.output)


def test_every_generated_class_passes_the_validation() -> None:
    from fakenrt.podvalidation import validated_pod

    for mix, classes in MIXES.items():
        for cls in classes:
            validated_pod(pod_manifest(name="x", namespace="sim", cls=cls), source=mix)


def test_an_empty_trace_has_nothing_to_schedule(tmp_path: Path) -> None:
    trace = tmp_path / "empty.yaml"
    trace.write_text("pods: []\n")
    code, out = invoke("--profiles", str(_nodes(tmp_path)), "--trace", str(trace))
    assert code != 0
    assert out == f"Error: {trace}: nothing to schedule: the trace has no pods\n"


def test_a_trace_that_arrives_after_the_horizon_has_nothing_to_schedule(tmp_path: Path) -> None:
    trace = _trace(tmp_path, {"at": "2h", "duration": "1h", "pod": pod("a")})
    code, out = invoke(
        "--profiles", str(_nodes(tmp_path)), "--trace", str(trace), "--duration", "1h"
    )
    assert code != 0 and f"{trace}: nothing to schedule: every pod arrives after" in out, out


def test_errors_name_the_users_files_not_the_bundled_scenario(tmp_path: Path) -> None:
    trace = _trace(tmp_path, {"at": 0, "duration": "1h", "pod": pod("a"), "colour": "red"})
    code, out = invoke("--profiles", str(_nodes(tmp_path)), "--trace", str(trace))
    assert code != 0 and str(trace) in out and "default.yaml" not in out, out
    broken = tmp_path / "broken-nodes.yaml"
    broken.write_text("nodes:\n- name: x\n  shape: {numaNodes: 0}\n")
    code, out = invoke("--profiles", str(broken), "--trace", str(trace))
    assert code != 0 and str(broken) in out and "default.yaml" not in out, out
    # options name themselves
    for args, option in (
        (["--arrivals-per-hour", "1e9"], "--arrivals-per-hour"),
        (["--nrt-delay", "25h"], "--nrt-delay"),
        (["--seed", str(MAX_SEED + 1)], "--seed"),
        (["--arrivals-per-hour", "9000", "--duration", "720h"], "--arrivals-per-hour"),
    ):
        code, out = invoke(*args)
        assert code != 0 and option in out and "default.yaml" not in out, (args, out)


def test_the_report_and_json_name_what_ran(tmp_path: Path) -> None:
    nodes = _nodes(tmp_path)
    trace = _trace(tmp_path, {"at": 0, "duration": "1h", "pod": pod("a", gpu=1)})
    report = tmp_path / "r.html"
    code, out = invoke(
        "--profiles", str(nodes), "--trace", str(trace), "--strategy", "oracle",
        "--report", str(report), "--json", "--no-progress",
    )  # fmt: skip
    assert code == 0, out
    scenario = json.loads(out)["scenario"]
    assert scenario["profiles"] == str(nodes) and scenario["trace"] == str(trace)
    assert scenario["scenario"] == "bundled default.yaml"
    page = report.read_text()
    assert str(nodes) in page and str(trace) in page
    # the bundled scenario's own nodes and generator are not presented as what ran
    assert "gpu-restricted" not in page and "training-inference" not in page


def test_two_sweeps_are_refused() -> None:
    code, out = invoke("--sweep", "nrt-delay=0,5", "--sweep", "period=1,2")
    assert code != 0 and "--sweep is given 2 times" in out, out


def test_a_trace_plus_a_generator_is_refused(tmp_path: Path) -> None:
    nodes = _nodes(tmp_path)
    trace = _trace(tmp_path, {"at": 0, "duration": "1h", "pod": pod("a")})
    code, out = invoke("--trace", str(trace), "--arrivals-per-hour", "5")
    assert code != 0 and "--trace cannot be combined" in out
    both = tmp_path / "both.yaml"
    both.write_text(
        yaml.safe_dump(
            {
                "profiles": nodes.name,
                "workload": {"trace": trace.name, "generate": {"duration": "1h"}},
            }
        )
    )
    code, out = invoke("--scenario", str(both))
    assert code != 0 and f"{both}: workload has both trace and generate" in out, out
    traced = tmp_path / "traced.yaml"
    traced.write_text(yaml.safe_dump({"profiles": nodes.name, "workload": {"trace": trace.name}}))
    code, out = invoke("--scenario", str(traced), "--mix", "inference")
    assert code != 0 and "the workload is a trace; --mix set a generated workload" in out, out
    # --duration is the horizon of a trace: not a conflict
    code, out = invoke("--scenario", str(traced), "--duration", "30m", "--strategy", "oracle")
    assert code == 0, out


@pytest.mark.parametrize(
    ("text", "words"),
    [
        pytest.param(
            "pods:\n- {at: " + "9" * 5000 + ", duration: 1h, pod: {}}\n",
            "an integer of more than 4,300 digits",
            id="5000-digit-integer",
        ),
        pytest.param(
            "pods:\n- at: 0\n  duration: 1h\n  pod:\n    metadata: {name: a}\n    spec:\n"
            "      containers:\n      - name: main\n        resources: {limits: {cpu: '"
            + "9" * 100_000
            + "'}}\n",
            # shortened where it is refused (exporter.quantities shows 128 characters)
            "...' is not a Kubernetes quantity",
            id="100k-character-quantity",
        ),
        pytest.param(
            "pods:\n- {at: 0, duration: 1h, count: " + "9" * 40 + ", pod: {}}\n",
            f"count: must be between 1 and {MAX_PODS} (got an integer of 40 digits)",
            id="huge-count",
        ),
        pytest.param(
            "pods:\n- {at: 0, duration: 1h, class: " + "x" * 64 + ", pod: {}}\n",
            "class must be a string of at most 63 characters",
            id="long-class",
        ),
    ],
)
def test_hostile_sizes_are_one_short_line(tmp_path: Path, text: str, words: str) -> None:
    trace = tmp_path / "t.yaml"
    trace.write_text(text)
    code, out = invoke("--profiles", str(_nodes(tmp_path)), "--trace", str(trace))
    assert code != 0
    assert out.count("\n") == 1 and len(out) < 500, out[:600]
    assert words in out, out


def test_a_huge_jsonl_integer_is_one_line(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"at": ' + "9" * 5000 + ', "duration": 1, "pod": {}}\n')
    code, out = invoke("--profiles", str(_nodes(tmp_path)), "--trace", str(trace))
    assert code != 0 and "t.jsonl:1: not valid JSON: an integer of more than 4,300" in out, out
