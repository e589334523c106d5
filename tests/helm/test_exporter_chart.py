"""The numa-exporter chart (charts/numa-exporter, docs/helm.md): linted, rendered from the
same objects as manifests/exporter, and every value doing what docs/helm.md says.

Pure rendering (helm template, kubectl kustomize); the server-side dry run and the
admission policy are in test_apiserver.py, helm install on Kind in tests/kind.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helm.tools import (
    CHARTS,
    REPO,
    Helm,
    by_key,
    ci_values,
    without_helm_labels,
)
from tests.manifests.tools import MANIFESTS, Kubectl, kubectl_path

CHART = "numa-exporter"
#: The release name and namespace that give manifests/exporter's names.
RELEASE = NAMESPACE = "numa-exporter"
MONITORING = {
    "metrics.podMonitor.enabled": "true",
    "metrics.prometheusRule.enabled": "true",
}


@pytest.fixture(scope="module")
def kustomize() -> list[dict[str, Any]]:
    return Kubectl(kubectl_path(), Path("/dev/null")).render(MANIFESTS / "exporter")


def _daemonset(objects: list[dict[str, Any]]) -> dict[str, Any]:
    (ds,) = [o for o in objects if o["kind"] == "DaemonSet"]
    return ds


def _pod(objects: list[dict[str, Any]]) -> dict[str, Any]:
    pod: dict[str, Any] = _daemonset(objects)["spec"]["template"]["spec"]
    return pod


@pytest.mark.parametrize(
    "values", [None, *ci_values(CHART)], ids=lambda v: v.name if v else "defaults"
)
def test_the_chart_lints_strictly(helm: Helm, values: Path | None) -> None:
    args = ["lint", "--strict", str(CHARTS / CHART)]
    if values is not None:
        args += ["--values", str(values)]
    out = helm.run(*args).stdout
    assert "1 chart(s) linted, 0 chart(s) failed" in out


def test_the_default_render_is_the_kustomize_render(
    helm: Helm, kustomize: list[dict[str, Any]]
) -> None:
    """Every object both render is the same object (Helm's bookkeeping labels aside);
    the chart leaves out only the Namespace (Helm does not own the namespace it installs
    into) and, by default, the Prometheus Operator objects (they need its CRDs)."""
    chart = by_key(without_helm_labels(helm.render(CHART, release=RELEASE, namespace=NAMESPACE)))
    kustomized = by_key(kustomize)
    assert set(chart) - set(kustomized) == set()
    assert set(kustomized) - set(chart) == {
        ("Namespace", "", "numa-exporter"),
        ("PodMonitor", "numa-exporter", "numa-exporter"),
        ("PrometheusRule", "numa-exporter", "numa-exporter"),
    }
    for key, obj in chart.items():
        assert obj == kustomized[key], key


def test_the_monitoring_objects_are_the_kustomize_ones(
    helm: Helm, kustomize: list[dict[str, Any]]
) -> None:
    chart = by_key(
        without_helm_labels(
            helm.render(CHART, release=RELEASE, namespace=NAMESPACE, sets=MONITORING)
        )
    )
    kustomized = by_key(kustomize)
    for kind in ("PodMonitor", "PrometheusRule"):
        key = (kind, "numa-exporter", "numa-exporter")
        assert chart[key] == kustomized[key], key


def test_the_rules_file_is_the_manifests_one() -> None:
    """The chart's PrometheusRule reads files/numa-exporter.rules.yaml; it must be the rules
    file tests/prometheus tests (compared as YAML: the header comments differ)."""
    ours = yaml.safe_load((CHARTS / CHART / "files" / "numa-exporter.rules.yaml").read_text())
    theirs = yaml.safe_load(
        (MANIFESTS / "exporter" / "alerts" / "numa-exporter.rules.yaml").read_text()
    )
    assert ours == theirs


def test_the_chart_version_is_the_project_version() -> None:
    chart = yaml.safe_load((CHARTS / CHART / "Chart.yaml").read_text())
    project = (REPO / "pyproject.toml").read_text()
    assert f'version = "{chart["appVersion"]}"' in project


def _render(helm: Helm, **sets: str) -> list[dict[str, Any]]:
    return helm.render(CHART, release="gpu", namespace="gpu-ops", sets=sets)


def test_names_follow_the_release_and_namespace(helm: Helm) -> None:
    objects = by_key(_render(helm))
    assert set(objects) == {
        ("ServiceAccount", "gpu-ops", "gpu-numa-exporter"),
        ("ClusterRole", "", "gpu-numa-exporter"),
        ("ClusterRoleBinding", "", "gpu-numa-exporter"),
        ("ValidatingAdmissionPolicy", "", "gpu-numa-exporter-observed-annotations-only"),
        ("ValidatingAdmissionPolicyBinding", "", "gpu-numa-exporter-observed-annotations-only"),
        ("ValidatingAdmissionPolicy", "", "gpu-numa-exporter-own-events-only"),
        ("ValidatingAdmissionPolicyBinding", "", "gpu-numa-exporter-own-events-only"),
        ("DaemonSet", "gpu-ops", "gpu-numa-exporter"),
    }
    binding = objects[("ClusterRoleBinding", "", "gpu-numa-exporter")]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "gpu-numa-exporter", "namespace": "gpu-ops"}
    ]
    for name in ("observed-annotations-only", "own-events-only"):
        policy = objects[("ValidatingAdmissionPolicy", "", f"gpu-numa-exporter-{name}")]
        assert policy["spec"]["matchConditions"][0]["expression"] == (
            'request.userInfo.username == "system:serviceaccount:gpu-ops:gpu-numa-exporter"'
        )
        vapb = objects[("ValidatingAdmissionPolicyBinding", "", f"gpu-numa-exporter-{name}")]
        assert vapb["spec"]["policyName"] == f"gpu-numa-exporter-{name}"
    ds = objects[("DaemonSet", "gpu-ops", "gpu-numa-exporter")]
    assert ds["spec"]["selector"]["matchLabels"] == {
        "app.kubernetes.io/name": "numa-exporter",
        "app.kubernetes.io/instance": "gpu",
    }
    assert ds["spec"]["template"]["spec"]["serviceAccountName"] == "gpu-numa-exporter"


def _container(objects: list[dict[str, Any]]) -> dict[str, Any]:
    (container,) = _pod(objects)["containers"]
    return dict(container)


# (--set values, what changes in the render: a function of the objects -> the value)
CASES: list[tuple[dict[str, str], Any, Any]] = [
    (
        {"image.repository": "r.example/nt", "image.tag": "9.9", "image.pullPolicy": "Never"},
        lambda o: (_container(o)["image"], _container(o)["imagePullPolicy"]),
        ("r.example/nt:9.9", "Never"),
    ),
    (
        {"nodeSelector.nvidia\\.com/gpu\\.product": "NVIDIA-A100-SXM4-80GB"},
        lambda o: _pod(o).get("nodeSelector"),
        {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"},
    ),
    (
        {"tolerations[0].key": "nvidia.com/gpu", "tolerations[0].operator": "Exists"},
        lambda o: _pod(o)["tolerations"],
        [{"key": "nvidia.com/gpu", "operator": "Exists"}],
    ),
    (
        {"priorityClassName": "system-node-critical"},
        lambda o: _pod(o).get("priorityClassName"),
        "system-node-critical",
    ),
    (
        {"resources.requests.cpu": "50m", "resources.limits.memory": "1Gi"},
        lambda o: (
            _container(o)["resources"]["requests"]["cpu"],
            _container(o)["resources"]["limits"]["memory"],
        ),
        ("50m", "1Gi"),
    ),
    (
        {"metrics.port": "9464", "metrics.bindAddress": "0.0.0.0"},
        lambda o: (
            _container(o)["ports"][0]["containerPort"],
            [a for a in _container(o)["args"] if a.startswith("--metrics-bind-address")],
            _daemonset(o)["spec"]["template"]["metadata"]["annotations"]["prometheus.io/port"],
        ),
        (9464, ["--metrics-bind-address=0.0.0.0:9464"], "9464"),
    ),
    (
        {
            "pollInterval": "2.5",
            "rpcTimeout": "5",
            "writeConcurrency": "8",
            "logLevel": "debug",
            "extraArgs[0]": "--x",
        },
        lambda o: _container(o)["args"][3:],
        [
            "--poll-interval=2.5",
            "--metrics-bind-address=:8080",
            "--rpc-timeout=5",
            "--write-concurrency=8",
            "--log-level=debug",
            "--x",
        ],
    ),
    (
        {"podResourcesHostPath": "/var/lib/k0s/kubelet/pod-resources"},
        lambda o: _pod(o)["volumes"][0]["hostPath"]["path"],
        "/var/lib/k0s/kubelet/pod-resources",
    ),
    (
        {"metrics.podAnnotations": "false"},
        lambda o: "annotations" in _daemonset(o)["spec"]["template"]["metadata"],
        False,
    ),
    (
        {"admissionPolicy.enabled": "false"},
        lambda o: sorted(
            {x["kind"] for x in o}
            & {"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}
        ),
        [],
    ),
    (
        {"rbac.create": "false"},
        lambda o: sorted({x["kind"] for x in o} & {"ClusterRole", "ClusterRoleBinding"}),
        [],
    ),
    (
        {"serviceAccount.create": "false", "serviceAccount.name": "existing"},
        lambda o: ("ServiceAccount" in {x["kind"] for x in o}, _pod(o)["serviceAccountName"]),
        (False, "existing"),
    ),
    (
        {"metrics.serviceMonitor.enabled": "true", "metrics.serviceMonitor.labels.release": "prom"},
        lambda o: sorted(
            (x["kind"], x["metadata"]["labels"].get("release"))
            for x in o
            if x["kind"] in ("Service", "ServiceMonitor")
        ),
        [("Service", None), ("ServiceMonitor", "prom")],
    ),
    (
        {"metrics.prometheusRule.enabled": "true", "metrics.prometheusRule.labels.release": "prom"},
        lambda o: [x["metadata"]["labels"]["release"] for x in o if x["kind"] == "PrometheusRule"],
        ["prom"],
    ),
]


@pytest.mark.parametrize(
    ("sets", "read", "expected"),
    CASES,
    ids=[",".join(k.replace("\\", "") for k in sets) for sets, _, _ in CASES],
)
def test_each_value_takes_effect(
    helm: Helm, sets: dict[str, str], read: Any, expected: Any
) -> None:
    assert read(_render(helm)) != expected  # the default differs, so the value is seen
    assert read(_render(helm, **sets)) == expected


@pytest.mark.parametrize(
    ("sets", "problem"),
    [
        ({"metrics.port": "abc"}, "at '/metrics/port': got string, want integer"),
        ({"metrics.port": "70000"}, "at '/metrics/port'"),
        ({"pollInterval": "0"}, "at '/pollInterval'"),
        ({"logLevel": "verbose"}, "at '/logLevel'"),
        ({"image.pullPolicy": "Sometimes"}, "at '/image/pullPolicy'"),
        ({"nodeselector.a": "b"}, "additional properties 'nodeselector' not allowed"),
        ({"serviceAccount.create": "false"}, "serviceAccount.name is required"),
    ],
)
def test_bad_values_are_refused(helm: Helm, sets: dict[str, str], problem: str) -> None:
    args = ["template", "x", str(CHARTS / CHART)]
    for key, value in sets.items():
        args += ["--set", f"{key}={value}"]
    proc = helm.run(*args, check=False)
    assert proc.returncode != 0
    assert problem in proc.stderr


def test_the_ci_values_render_a_gpu_fleet(helm: Helm) -> None:
    (values,) = ci_values(CHART)
    objects = helm.render(CHART, release="gpu", namespace="gpu-ops", values=[values])
    kinds = sorted(o["kind"] for o in objects)
    assert kinds == sorted(
        [
            "ClusterRole", "ClusterRoleBinding", "DaemonSet", "PodMonitor", "PrometheusRule",
            "Service", "ServiceAccount", "ServiceMonitor",
            *["ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"] * 2,
        ]
    )  # fmt: skip
    pod = _pod(objects)
    assert pod["priorityClassName"] == "system-node-critical"
    assert pod["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    assert copy.deepcopy(_container(objects)["args"]) == [
        "run",
        "--podresources-socket=/var/lib/kubelet/pod-resources/kubelet.sock",
        "--sysfs-root=/host/sys",
        "--poll-interval=2.5",
        "--metrics-bind-address=0.0.0.0:9464",
        "--rpc-timeout=5",
        "--write-concurrency=8",
        "--log-level=debug",
    ]
