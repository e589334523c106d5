"""The numa-harness chart (charts/numa-harness, docs/helm.md): linted, rendered from the
same objects as manifests/harness, one exporter per node of the profile it is given.

Pure rendering; the server-side dry run is in test_apiserver.py.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helm.tools import CHARTS, Helm, by_key, ci_values, without_helm_labels
from tests.manifests.tools import MANIFESTS, Kubectl, kubectl_path

CHART = "numa-harness"
NAMESPACE = "numa-harness"
#: kustomize's configMapGenerator appends a hash of the content to the name
_HASHED = re.compile(r"^(fakenrt-profile|fakenrt-scheduler)-[a-z0-9]{10}$")


def _unhashed(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _unhashed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unhashed(v) for v in value]
    if isinstance(value, str) and (m := _HASHED.match(value)):
        return m.group(1)
    return value


def _without_checksums(obj: dict[str, Any]) -> dict[str, Any]:
    template = obj.get("spec", {}).get("template", {})
    annotations = template.get("metadata", {}).get("annotations", {})
    for key in [k for k in annotations if k.startswith("checksum/")]:
        del annotations[key]
    return obj


def _parsed_data(obj: dict[str, Any]) -> dict[str, Any]:
    """A ConfigMap's files compared as YAML: the chart's default profile carries comments
    of its own."""
    if obj["kind"] == "ConfigMap":
        obj = {**obj, "data": {k: yaml.safe_load(v) for k, v in obj["data"].items()}}
    return obj


@pytest.fixture(scope="module")
def kustomize() -> dict[tuple[str, str, str], dict[str, Any]]:
    rendered = Kubectl(kubectl_path(), Path("/dev/null")).render(MANIFESTS / "harness")
    return by_key([_parsed_data(_unhashed(o)) for o in rendered])


def _render(helm: Helm, **sets: str) -> list[dict[str, Any]]:
    return helm.render(CHART, release="numa-harness", namespace=NAMESPACE, sets=sets)


@pytest.mark.parametrize(
    "values", [None, *ci_values(CHART)], ids=lambda v: v.name if v else "defaults"
)
def test_the_chart_lints_strictly(helm: Helm, values: Path | None) -> None:
    args = ["lint", "--strict", str(CHARTS / CHART)]
    if values is not None:
        args += ["--values", str(values)]
    assert "1 chart(s) linted, 0 chart(s) failed" in helm.run(*args).stdout


def test_the_default_render_is_the_kustomize_render(
    helm: Helm, kustomize: dict[tuple[str, str, str], dict[str, Any]]
) -> None:
    """Every object is the kustomize one (Helm's labels, kustomize's ConfigMap name hashes
    and the chart's checksum annotations aside; ConfigMap files as YAML); the chart
    leaves out only the Namespace."""
    chart = by_key(
        [_parsed_data(_without_checksums(without_helm_labels(o))) for o in _render(helm)]
    )
    assert set(chart) - set(kustomize) == set()
    assert set(kustomize) - set(chart) == {("Namespace", "", NAMESPACE)}
    for key, obj in chart.items():
        assert obj == kustomize[key], key


def test_the_default_profile_is_the_manifests_one() -> None:
    values = yaml.safe_load((CHARTS / CHART / "values.yaml").read_text())
    for value, path in (
        (values["profile"], "profile.yaml"),
        (values["scheduler"]["args"], "scheduler-args.yaml"),
    ):
        assert yaml.safe_load(value) == yaml.safe_load((MANIFESTS / "harness" / path).read_text())


def test_one_exporter_per_node_of_the_profile(helm: Helm) -> None:
    (values,) = ci_values(CHART)
    objects = helm.render(CHART, release="h", namespace="ci", values=[values])
    exporters = [
        o
        for o in objects
        if o["kind"] == "Deployment" and o["metadata"]["name"].startswith("numa-exporter-")
    ]
    assert [o["metadata"]["name"] for o in exporters] == [
        "numa-exporter-dgx-a", "numa-exporter-dgx-b", "numa-exporter-cpu-only",
    ]  # fmt: skip
    pod = exporters[2]["spec"]["template"]["spec"]
    assert pod["containers"][0]["env"][0] == {"name": "NODE_NAME", "value": "cpu-only"}
    assert [v["hostPath"]["path"] for v in pod["volumes"]] == [
        "/var/lib/fakenrt/ci/cpu-only",
        "/var/lib/fakenrt/ci/cpu-only/sys/devices",
        "/var/lib/fakenrt/ci/cpu-only/sys/devices/system/node",
        "/var/lib/fakenrt/ci/cpu-only/sys/bus/pci/devices",
    ]
    assert "--poll-interval=2" in pod["containers"][0]["args"]
    by_name = {(o["kind"], o["metadata"]["name"]): o for o in objects}
    controller = by_name["Deployment", "fakenrt-controller"]["spec"]["template"]["spec"][
        "containers"
    ][0]
    assert controller["args"][-4:] == [
        "--nrt-volcano", "--nrt-koordlet", "--nrt-delay=20s", "--nrt-jitter=5s",
    ]  # fmt: skip
    assert "--state-dir=/var/lib/fakenrt/ci" in controller["args"]
    assert controller["image"] == "numa-testkit/numa-testkit:local"
    assert controller["imagePullPolicy"] == "Never"
    scheduler = by_name["Deployment", "fakenrt-scheduler"]["spec"]["template"]["spec"][
        "containers"
    ][0]
    assert "--scheduler-name=numa-ci" in scheduler["args"]
    assert "--period=2" in scheduler["args"]
    args = yaml.safe_load(by_name["ConfigMap", "fakenrt-scheduler"]["data"]["args.yaml"])
    assert args == {"reconstructAvailable": False, "scoringStrategy": "MostAllocated"}
    for policy_name in (
        "fakenrt-exporter-observed-annotations-only",
        "fakenrt-exporter-dra-events-only",
    ):
        policy = by_name["ValidatingAdmissionPolicy", policy_name]
        assert (
            '"system:serviceaccount:ci:fakenrt-exporter"'
            in policy["spec"]["matchConditions"][0]["expression"]
        )


def _controller_args(objects: list[dict[str, Any]]) -> list[str]:
    (controller,) = [
        o
        for o in objects
        if o["kind"] == "Deployment" and o["metadata"]["name"] == "fakenrt-controller"
    ]
    args: list[str] = controller["spec"]["template"]["spec"]["containers"][0]["args"]
    return args


@pytest.mark.parametrize(
    ("value", "flag"),
    [("controller.nrt.volcano", "--nrt-volcano"), ("controller.nrt.koordlet", "--nrt-koordlet")],
)
def test_an_agents_format_is_the_controllers_flag(helm: Helm, value: str, flag: str) -> None:
    """Off by default (the manifests' controller runs without either flag); on, the
    controller gets the flag, and only that one."""
    default = _controller_args(_render(helm))
    assert not [a for a in default if a.startswith("--nrt-")]
    assert _controller_args(_render(helm, **{value: "true"})) == [*default, flag]


def test_admission_policy_off_renders_neither_policy(helm: Helm) -> None:
    kinds = ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")
    assert len([o for o in _render(helm) if o["kind"] in kinds]) == 4
    assert [
        o for o in _render(helm, **{"admissionPolicy.enabled": "false"}) if o["kind"] in kinds
    ] == []


@pytest.mark.parametrize(
    ("sets", "problem"),
    [
        (
            {"controller.nrt.volcano": "maybe"},
            "at '/controller/nrt/volcano': got string, want boolean",
        ),
        ({"controller.nrt.volcanoes": "true"}, "additional properties 'volcanoes' not allowed"),
    ],
)
def test_bad_values_are_refused(helm: Helm, sets: dict[str, str], problem: str) -> None:
    args = ["template", "h", str(CHARTS / CHART)]
    for key, value in sets.items():
        args += ["--set", f"{key}={value}"]
    proc = helm.run(*args, check=False)
    assert proc.returncode != 0
    assert problem in proc.stderr


def test_a_changed_profile_rolls_the_controller(helm: Helm, tmp_path: Path) -> None:
    def checksum(objects: list[dict[str, Any]]) -> str:
        (controller,) = [
            o
            for o in objects
            if o["metadata"]["name"] == "fakenrt-controller" and o["kind"] == "Deployment"
        ]
        return str(controller["spec"]["template"]["metadata"]["annotations"]["checksum/config"])

    other = tmp_path / "values.yaml"
    other.write_text(
        "profile: |\n  nodes:\n  - name: n1\n"
        "    shape: {numaNodes: 1, coresPerNumaNode: 2, memoryPerNumaNode: 1Gi}\n"
    )
    assert checksum(_render(helm)) != checksum(
        helm.render(CHART, release="h", namespace="ci", values=[other])
    )


@pytest.mark.parametrize(
    ("profile", "problem"),
    [
        ("a: [", "profile: not a profile file"),
        ("nodes: 3", "profile: not a profile file"),
        ("nodes: [{shape: {}}]", "profile: nodes[0] has no name"),
        (
            'nodes: [{name: "Bad Name!"}]',
            'profile: nodes[0]: "Bad Name!" is not usable as a label value',
        ),
        ("nodes: [{name: " + "n" * 64 + "}]", "is not usable as a label value"),
    ],
)
def test_a_bad_profile_is_refused_naming_it(helm: Helm, profile: str, problem: str) -> None:
    proc = helm.run(
        "template", "h", str(CHARTS / CHART), "--set-string", f"profile={profile}", check=False
    )
    assert proc.returncode != 0
    assert problem in proc.stderr
