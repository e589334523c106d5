"""The charts against the real API server the suite starts: each render (the defaults and
every ci/*-values.yaml, under another release name and namespace) is accepted by a
server-side dry run with the operator's CRDs installed, and the exporter chart's RBAC and
admission policy, installed under another release and namespace, bind the account the
chart names."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import pytest
import yaml
from kubernetes import client

from exporter.annotations import OBSERVED_PLACEMENT
from tests.controlplane.helpers import ensure_namespace
from tests.helm.tools import Helm, ci_values
from tests.manifests.tools import Kubectl

pytestmark = [
    pytest.mark.controlplane,
    pytest.mark.usefixtures("operator_crds", "manifest_namespaces"),
]

#: (chart, release, namespace, values file or None)
RENDERS = [
    ("numa-exporter", "numa-exporter", "numa-exporter", None),
    *(("numa-exporter", "gpu", "gpu-ops", v) for v in ci_values("numa-exporter")),
    ("numa-harness", "numa-harness", "numa-harness", None),
    *(("numa-harness", "harness", "harness-ci", v) for v in ci_values("numa-harness")),
]


@pytest.fixture(scope="module")
def gpu_ops(api_client: client.ApiClient) -> str:
    """The releases' namespaces (with their default ServiceAccount); the exporter's
    non-default one."""
    for _, _, namespace, _ in RENDERS:
        ensure_namespace(api_client, namespace)
    return "gpu-ops"


@pytest.mark.parametrize(
    "render", RENDERS, ids=[f"{c}-{v.name if v else 'defaults'}" for c, _, _, v in RENDERS]
)
def test_the_render_applies_server_side(
    helm: Helm, kubectl: Kubectl, gpu_ops: str, render: tuple[str, str, str, Path | None]
) -> None:
    chart, release, namespace, values = render
    text = helm.template(
        chart, release=release, namespace=namespace, values=[values] if values else []
    )
    objects = [d for d in yaml.safe_load_all(text) if d]
    # --force-conflicts: the suite's other tests create cluster-scoped objects of the same
    # names (the manifests' RBAC and admission policies) with their own field manager;
    # what this checks is that the API server accepts every object, not who owns a field
    proc = kubectl.run(
        "apply", "--server-side", "--force-conflicts", "--dry-run=server", "-f", "-",
        stdin=text, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    applied = [line for line in proc.stdout.splitlines() if line.endswith("(server dry run)")]
    assert len(applied) == len(objects), proc.stdout


def _one_line(proc_stderr: str) -> str:
    return " ".join(proc_stderr.split())


def test_the_admission_policy_binds_the_charts_account(
    helm: Helm, kubectl: Kubectl, gpu_ops: str
) -> None:
    """Under release ``gpu`` in ``gpu-ops`` (ci values: service account
    gpu-numa-exporter), the policies apply to that account: an annotation it may not
    write, and an event it may not report, are refused by the chart's policies (not
    RBAC), and RBAC still refuses what it never may."""
    (values,) = ci_values("numa-exporter")
    namespace = gpu_ops
    account = f"system:serviceaccount:{namespace}:gpu-numa-exporter"
    text = helm.template("numa-exporter", release="gpu", namespace=namespace, values=[values])
    identities = [
        d
        for d in yaml.safe_load_all(text)
        if d
        and d["kind"]
        in (
            "ServiceAccount", "ClusterRole", "ClusterRoleBinding",
            "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
        )
    ]  # fmt: skip
    assert len(identities) == 7
    kubectl.run("apply", "--server-side", "-f", "-", stdin=yaml.safe_dump_all(identities))
    pod = f"p-{uuid.uuid4().hex[:6]}"
    kubectl.run(
        "-n", namespace, "create", "-f", "-",
        stdin=json.dumps({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": pod},
            "spec": {"nodeName": "gpu-node-0", "containers": [{"name": "c", "image": "x"}]},
        }),
    )  # fmt: skip
    try:

        def annotate(key: str) -> str:
            proc = kubectl.run(
                f"--as={account}", "-n", namespace, "annotate", "--overwrite",
                f"pod/{pod}", f"{key}=[]", check=False,
            )  # fmt: skip
            return "" if proc.returncode == 0 else _one_line(proc.stderr)

        deadline = time.monotonic() + 60
        while "ValidatingAdmissionPolicy" not in (refusal := annotate(OBSERVED_PLACEMENT)):
            assert time.monotonic() < deadline, f"the policy is not enforced: {refusal!r}"
            time.sleep(0.5)
        # Impersonation carries no node claim: refused by the chart's own policy ...
        assert "gpu-numa-exporter-observed-annotations-only" in refusal
        assert "the request's token names no node" in refusal
        # ... which the API server reached because RBAC allowed the patch; what RBAC does
        # not allow is refused before it.
        proc = kubectl.run(f"--as={account}", "-n", namespace, "delete", "pod", pod, check=False)
        assert proc.returncode != 0
        assert "cannot delete resource" in proc.stderr
        # RBAC lets it create events; the events policy refuses one from a token without
        # its node (impersonation), as it would another node's.
        event = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"generateName": f"{pod}."},
            "involvedObject": {"kind": "Pod", "namespace": namespace, "name": pod},
            "reason": "DRAMisaligned", "type": "Warning", "message": "m",
            "source": {"component": "numa-exporter", "host": "gpu-node-0"},
            "reportingComponent": "numa-exporter", "reportingInstance": "gpu-node-0",
        }  # fmt: skip

        def report() -> str:
            proc = kubectl.run(
                f"--as={account}", "-n", namespace, "create", "-f", "-",
                stdin=json.dumps(event), check=False,
            )  # fmt: skip
            return "" if proc.returncode == 0 else _one_line(proc.stderr)

        deadline = time.monotonic() + 60
        while "ValidatingAdmissionPolicy" not in (refusal := report()):
            assert time.monotonic() < deadline, f"the events policy is not enforced: {refusal!r}"
            time.sleep(0.5)
        assert "gpu-numa-exporter-own-events-only" in refusal
        assert "the request's token names no node" in refusal
        # Another account of that namespace is not the chart's: the policy leaves it alone.
        kubectl.run("-n", namespace, "create", "serviceaccount", "other", check=False)
        kubectl.run(
            "create", "clusterrolebinding", f"other-{pod}", "--clusterrole=gpu-numa-exporter",
            f"--serviceaccount={namespace}:other",
        )  # fmt: skip
        proc = kubectl.run(
            f"--as=system:serviceaccount:{namespace}:other", "-n", namespace, "annotate",
            f"pod/{pod}", "example.com/x=1",
        )  # fmt: skip
    finally:
        kubectl.run(
            "-n", namespace, "delete", "pod", pod, "--grace-period=0", "--force", "--wait=false",
            check=False,
        )  # fmt: skip
        kubectl.run("delete", "clusterrolebinding", f"other-{pod}", check=False)
        kubectl.run("delete", "-f", "-", stdin=yaml.safe_dump_all(identities), check=False)
