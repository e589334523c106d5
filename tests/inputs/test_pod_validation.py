"""Pods given to ``kubelet explain`` / ``scheduler evaluate`` are validated as the API
server validates them with strict field validation (issue 11, item 6)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from fakenrt.cli import main
from fakenrt.commands.podfiles import InputError, parse_pods
from fakenrt.examples import pods as example_pods
from fakenrt.kubelet.podcheck import api_errors, resource_name_problem
from fakenrt.podschema import MAX_VALUES, ManifestTooLarge, SchemaChecker, schema_problems
from fakenrt.podspec import PodSpecError, pod_from_manifest
from fakenrt.profiles.loading import EXAMPLES_DIR

EXAMPLE_PODS = Path(example_pods.__file__).parent
DGX = str(EXAMPLES_DIR / "dgx.yaml")


def manifest(resources: dict[str, Any] | None = None, **container: Any) -> dict[str, Any]:
    c: dict[str, Any] = {"name": "c", "image": "x", **container}
    if resources is not None:
        c["resources"] = resources
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [c]},
    }


# -- strict decoding against the kubernetes client's Pod schema --------------------------


@pytest.mark.parametrize(
    ("doc", "problem"),
    [
        pytest.param(
            manifest({"limit": {"nvidia.com/gpu": 8}}),
            'spec.containers[0].resources.limit: unknown field "limit" (did you mean "limits"?)',
            id="limit-typo",
        ),
        pytest.param(
            {**manifest(), "sepc": {}},
            'sepc: unknown field "sepc" (did you mean "spec"?)',
            id="top-level-typo",
        ),
        pytest.param(
            manifest(imagePullPolicy=3),
            "spec.containers[0].imagePullPolicy: expected a string, got number 3",
            id="number-for-string",
        ),
        pytest.param(
            manifest(ports=[{"containerPort": "80"}]),
            "spec.containers[0].ports[0].containerPort: expected an integer, got string '80'",
            id="string-for-integer",
        ),
        pytest.param(
            manifest({"limits": {"cpu": True}}),
            "spec.containers[0].resources.limits[cpu]: expected a quantity",
            id="bool-quantity",
        ),
        pytest.param(
            manifest({"limits": ["cpu"]}),
            "spec.containers[0].resources.limits: expected a mapping, got list",
            id="list-for-map",
        ),
        pytest.param(
            {**manifest(), "apiVersion": "v2"}, 'apiVersion: a Pod is apiVersion "v1"', id="version"
        ),
        pytest.param([], "(top level): expected a Pod mapping, got list", id="not-a-mapping"),
    ],
)
def test_strict_decoding_refuses(doc: Any, problem: str) -> None:
    problems = schema_problems(doc)
    assert len(problems) == 1
    assert problems[0].startswith(problem)


def test_strict_decoding_accepts_what_the_api_server_returns() -> None:
    """A pod as ``kubectl get -o yaml`` prints it: status, nulls, timestamps, int-or-string
    ports and numeric quantities are all well-formed."""
    doc = manifest(
        {"limits": {"cpu": 2, "memory": "1Gi"}, "requests": {"cpu": 0.5}},
        ports=[{"containerPort": 80}],
        livenessProbe={"httpGet": {"port": "http", "path": "/"}},
        env=[{"name": "A", "value": "1"}],
    )
    doc["metadata"].update(creationTimestamp=None, labels={"app": "x"}, uid="u-1")
    doc["spec"]["volumes"] = [{"name": "v", "emptyDir": {"sizeLimit": 1073741824}}]
    doc["status"] = {
        "phase": "Running",
        "qosClass": "Burstable",
        "startTime": "2026-01-01T00:00:00Z",
    }
    assert schema_problems(doc) == []


def test_alias_bomb_is_bounded() -> None:
    """A few lines of YAML aliases expand to a million values (as PyYAML loads them, shared
    references); the check stops after MAX_VALUES instead of walking them all."""
    text = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nx:\n"
        "  e: &e {name: A, value: b}\n"
        "  e10: &e10 [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
        "  e100: &e100 [*e10, *e10, *e10, *e10, *e10, *e10, *e10, *e10, *e10, *e10]\n"
    )
    doc = yaml.safe_load(text)
    env = [e for block in doc.pop("x")["e100"] for e in block] * 100  # 10,000 shared refs
    doc["spec"] = {"containers": [{"name": "c", "env": env}] * 100}  # 1,000,000 env entries
    with pytest.raises(ManifestTooLarge, match=f"more than {MAX_VALUES} values"):
        schema_problems(doc)
    with pytest.raises(InputError, match=f"strict decoding error: more than {MAX_VALUES}"):
        parse_pods(yaml.safe_dump(doc), source="bomb.yaml")


def test_every_example_pod_is_well_formed() -> None:
    files = sorted(EXAMPLE_PODS.glob("*.yaml"))
    assert files
    for path in files:
        assert parse_pods(path.read_text(), source=path.name)


# -- the API server's rules on container resources ----------------------------------------


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        pytest.param("cpu", None, id="cpu"),
        pytest.param("hugepages-1Gi", None, id="hugepages"),
        pytest.param("ephemeral-storage", None, id="ephemeral-storage"),
        pytest.param("nvidia.com/gpu", None, id="extended"),
        pytest.param("example.kubernetes.io/thing", None, id="native-prefixed"),
        pytest.param("gpu", "must be a standard resource for containers", id="unqualified"),
        pytest.param("pods", "must be a standard resource for containers", id="not-container"),
        pytest.param("requests.example.com/x", "extended resource name standard", id="quota"),
        pytest.param("nvidia.com/", "name part", id="empty-name"),
        pytest.param("Nvidia.COM/gpu", "prefix", id="upper-case-domain"),
    ],
)
def test_resource_names(name: str, problem: str | None) -> None:
    found = resource_name_problem(name)
    if problem is None:
        assert found is None
    else:
        assert found is not None
        assert problem in found


@pytest.mark.parametrize(
    ("resources", "errors"),
    [
        pytest.param({"limits": {"gpu": 8}}, ["limits.gpu: must be a standard resource"], id="gpu"),
        pytest.param(
            {"limits": {"example.com/fpga": "500m"}},
            ["limits.example.com/fpga: must be an integer"],
            id="fraction",
        ),
        pytest.param(
            {"limits": {"example.com/fpga": "1.5"}, "requests": {"example.com/fpga": "1.5"}},
            ["limits.example.com/fpga: must be an integer"],
            id="fraction-both",
        ),
        pytest.param(
            {"requests": {"example.com/fpga": 1}},
            ["limits.example.com/fpga: a limit is required"],
            id="no-limit",
        ),
        pytest.param(
            {
                "requests": {"hugepages-2Mi": "2Mi", "memory": "1Gi"},
                "limits": {"hugepages-2Mi": "4Mi"},
            },
            ["requests.hugepages-2Mi: must equal the limit"],
            id="hugepages-request-differs",
        ),
        pytest.param(
            {"limits": {"hugepages-2Mi": "4Mi"}},
            ["resources: hugepages require a cpu or memory request or limit"],
            id="hugepages-alone",
        ),
        pytest.param(
            {"limits": {"hugepages-2Mi": "3Mi", "memory": "1Gi"}},
            ["limits.hugepages-2Mi: 3145728 is not a whole number of 2Mi pages"],
            id="hugepages-partial-page",
        ),
        pytest.param({"limits": {"cpu": 2, "memory": "1Gi", "nvidia.com/gpu": 1}}, [], id="valid"),
    ],
)
def test_api_rules_on_container_resources(resources: dict[str, Any], errors: list[str]) -> None:
    p = pod_from_manifest(manifest(resources))
    found = api_errors(p, source="f.yaml")
    prefix = "f.yaml: pod default/p: spec.containers[0](c).resources"
    assert len(found) == len(errors)
    for text, expected in zip(found, errors, strict=True):
        assert text.startswith(prefix)
        assert expected in text


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        pytest.param(float("inf"), "inf is not a Kubernetes quantity", id="inf"),
        pytest.param(float("nan"), "nan is not a Kubernetes quantity", id="nan"),
        pytest.param("1e400", "'1e400': exponent beyond 1e64", id="1e400"),
        pytest.param(2**63, "is out of range", id="int64-overflow"),
        pytest.param("-1", "is negative", id="negative"),
    ],
)
def test_quantities_out_of_range_name_the_field(value: object, problem: str) -> None:
    with pytest.raises(PodSpecError) as caught:
        pod_from_manifest(manifest({"limits": {"memory": value}}), source="f.yaml")
    assert str(caught.value).startswith(
        "f.yaml: pod default/p: spec.containers[0](c).resources.limits.memory: "
    )
    assert problem in str(caught.value)


def test_cpu_milli_value_must_fit_64_bits() -> None:
    with pytest.raises(PodSpecError, match=r"limits\.cpu: .* out of range"):
        pod_from_manifest(manifest({"limits": {"cpu": str(2**63 // 1000 + 1)}}))


# -- the commands -------------------------------------------------------------------------

TYPO_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: train}
spec:
  containers:
  - name: main
    image: trainer
    resources:
      limit: {cpu: "16", memory: 64Gi, nvidia.com/gpu: 8}
"""


def _nrt(tmp_path: Path) -> str:
    result = CliRunner().invoke(main, ["nrt", "render", "--profile", DGX, "--node", "dgx-a"])
    assert result.exit_code == 0, result.output
    path = tmp_path / "nrt.yaml"
    path.write_text(result.stdout)
    return str(path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            TYPO_POD,
            ": pod default/train: strict decoding error: spec.containers[0].resources.limit: "
            'unknown field "limit" (did you mean "limits"?)',
            id="typo",
        ),
        pytest.param(
            TYPO_POD.replace("limit:", "limits:").replace("nvidia.com/gpu", "gpu"),
            ": pod default/train: spec.containers[0](main).resources.limits.gpu: must be a "
            "standard resource",
            id="unqualified",
        ),
        pytest.param(
            TYPO_POD.replace("limit:", "limits:").replace("64Gi", ".inf"),
            ": pod default/train: spec.containers[0](main).resources.limits.memory: inf is not "
            "a Kubernetes quantity",
            id="inf",
        ),
        pytest.param(
            TYPO_POD.replace("limit:", "limits:").replace("8}", "2.5}"),
            ": pod default/train: spec.containers[0](main).resources.limits.nvidia.com/gpu: "
            "must be an integer",
            id="fractional-gpu",
        ),
    ],
)
@pytest.mark.parametrize("command", ["explain", "evaluate"])
def test_commands_refuse_what_the_api_server_refuses(
    tmp_path: Path, text: str, message: str, command: str
) -> None:
    pod = tmp_path / "pod.yaml"
    pod.write_text(text)
    if command == "explain":
        args = ["kubelet", "explain", "--profile", DGX, "--node", "dgx-a", "--pod", str(pod)]
    else:
        args = ["scheduler", "evaluate", "--nrt", _nrt(tmp_path), "--pod", str(pod)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert lines == [f"Error: {pod}{message}" + lines[0].split(message, 1)[1]]


def test_duplicate_keys_are_refused() -> None:
    with pytest.raises(InputError, match="duplicate key 'limits' \\(line 10"):
        parse_pods(
            TYPO_POD.replace("limit:", "limits:") + "      limits: {cpu: 1}\n", source="f.yaml"
        )


@pytest.mark.parametrize(
    ("value", "type_name", "problem"),
    [
        pytest.param([1], "List[str]", "x[0]: expected a string, got number 1", id="List"),
        pytest.param([1], "list[str]", "x[0]: expected a string, got number 1", id="list-old"),
        pytest.param({"a": 1}, "Dict[str, str]", "x[a]: expected a string", id="Dict"),
        pytest.param({"a": 1}, "dict(str, str)", "x[a]: expected a string", id="dict-old"),
        pytest.param({"a": ["b"]}, "dict(str, list[str])", None, id="nested-old"),
        pytest.param({"nmae": "c"}, "V1Container", 'x.nmae: unknown field "nmae"', id="model"),
    ],
)
def test_both_type_spellings_of_the_client_are_read(
    value: object, type_name: str, problem: str | None
) -> None:
    """Clients before v31 spell container types ``list[...]`` / ``dict(str, ...)``."""
    checker = SchemaChecker()
    checker.check(value, type_name, "x")
    if problem is None:
        assert checker.problems == []
    else:
        assert len(checker.problems) == 1
        assert checker.problems[0].startswith(problem)
