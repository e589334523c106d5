"""Static checks of manifests/exporter: least privilege and the DaemonSet's safety settings.
(The objects are applied to the real API server in test_admission_policy.py.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

MANIFESTS = Path(__file__).resolve().parents[2] / "manifests" / "exporter"


def _docs(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((MANIFESTS / name).read_text()) if d]


def _by_kind(kind: str) -> dict[str, Any]:
    for path in sorted(MANIFESTS.glob("*.yaml")):
        for doc in _docs(path.name):
            if doc.get("kind") == kind:
                return doc
    raise AssertionError(f"no {kind} in {MANIFESTS}")


def test_kustomization_lists_every_manifest() -> None:
    kustomization = _docs("kustomization.yaml")[0]
    files = {p.name for p in MANIFESTS.glob("*.yaml")} - {"kustomization.yaml"}
    assert set(kustomization["resources"]) == files


def test_cluster_role_is_exactly_what_the_exporter_does() -> None:
    role = _by_kind("ClusterRole")
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch", "patch"]},
        {
            "apiGroups": ["resource.k8s.io"],
            "resources": ["resourceslices"],
            "verbs": ["list", "watch"],
        },
        {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
    ]
    binding = _by_kind("ClusterRoleBinding")
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "numa-exporter", "namespace": "numa-exporter"}
    ]


def test_daemonset_security_and_mounts() -> None:
    ds = _by_kind("DaemonSet")
    pod = ds["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    sc = container["securityContext"]
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"] == {"drop": ["ALL"]}
    assert "add" not in sc["capabilities"]
    assert not pod.get("hostNetwork") and not pod.get("hostPID") and not pod.get("hostIPC")
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    assert all(m["readOnly"] for m in mounts.values())
    volumes = {v["name"]: v["hostPath"] for v in pod["volumes"]}
    # the pod-resources directory, never the socket file
    assert volumes["pod-resources"] == {
        "path": "/var/lib/kubelet/pod-resources",
        "type": "Directory",
    }
    assert mounts["pod-resources"]["mountPath"] == "/var/lib/kubelet/pod-resources"
    assert volumes["sysfs-numa"]["path"] == "/sys/devices/system/node"
    # a DRA device's NUMA node by its PCI address: bus/pci/devices links into devices/
    assert volumes["sysfs-pci"]["path"] == "/sys/bus/pci/devices"
    assert volumes["sysfs-devices"]["path"] == "/sys/devices"
    assert {m["mountPath"] for m in mounts.values() if m["name"].startswith("sysfs")} == {
        "/host/sys/devices",
        "/host/sys/devices/system/node",
        "/host/sys/bus/pci/devices",
    }
    args = container["args"]
    assert "--podresources-socket=/var/lib/kubelet/pod-resources/kubelet.sock" in args
    assert "--sysfs-root=/host/sys" in args
    env = {e["name"]: e for e in container["env"]}
    assert env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"


def test_daemonset_probes_resources_and_scrape_annotations() -> None:
    ds = _by_kind("DaemonSet")
    template = ds["spec"]["template"]
    (container,) = template["spec"]["containers"]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert {"cpu", "memory"} <= set(container["resources"]["requests"])
    assert "memory" in container["resources"]["limits"]
    annotations = template["metadata"]["annotations"]
    port = next(p for p in container["ports"] if p["name"] == "metrics")["containerPort"]
    assert annotations == {
        "prometheus.io/scrape": "true",
        "prometheus.io/port": str(port),
        "prometheus.io/path": "/metrics",
    }
    monitor = _by_kind("PodMonitor")
    assert monitor["spec"]["selector"]["matchLabels"] == ds["spec"]["selector"]["matchLabels"]
    assert monitor["spec"]["podMetricsEndpoints"][0]["port"] == "metrics"


def test_admission_policies_target_the_exporter_service_account() -> None:
    docs = _docs("admission-policy.yaml")
    policies = [d for d in docs if d["kind"] == "ValidatingAdmissionPolicy"]
    bindings = {
        d["spec"]["policyName"]: d for d in docs if d["kind"] == "ValidatingAdmissionPolicyBinding"
    }
    assert [p["spec"]["matchConstraints"]["resourceRules"][0]["resources"] for p in policies] == [
        ["pods"],
        ["events"],
    ]
    for policy in policies:
        (condition,) = policy["spec"]["matchConditions"]
        assert "system:serviceaccount:numa-exporter:numa-exporter" in condition["expression"]
        assert policy["spec"]["failurePolicy"] == "Fail"
        assert bindings[policy["metadata"]["name"]]["spec"] == {
            "policyName": policy["metadata"]["name"],
            "validationActions": ["Deny"],
        }
