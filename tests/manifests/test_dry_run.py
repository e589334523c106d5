"""Every kustomization under manifests/ renders with the pinned kubectl and is accepted by
the real API server (server-side apply, dry run): schemas, CRDs (NodeResourceTopology and
the Prometheus Operator's own PodMonitor / PrometheusRule), RBAC and admission."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.manifests.tools import MANIFESTS, Kubectl, kustomizations

pytestmark = [
    pytest.mark.controlplane,
    pytest.mark.usefixtures("operator_crds", "manifest_namespaces"),
]


def _dry_run(kubectl: Kubectl, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
    proc = kubectl.run(
        "apply", "--server-side", "--force-conflicts", "--dry-run=server", *args,
        stdin=stdin, check=False,
    )  # fmt: skip
    return proc.returncode, proc.stdout, proc.stderr


def test_every_kustomization_is_found() -> None:
    found = {str(p.relative_to(MANIFESTS)) for p in kustomizations()}
    assert found == {
        "exporter",
        "harness",
        "nrt-publisher",
        "overlays/kind-exporter",
        "overlays/kind-harness",
    }


@pytest.mark.parametrize(
    "directory", kustomizations(), ids=lambda p: str(Path(p).relative_to(MANIFESTS))
)
def test_kustomization_applies_server_side(kubectl: Kubectl, directory: Path) -> None:
    objects = kubectl.render(directory)
    assert objects, f"{directory} renders nothing"
    code, out, err = _dry_run(kubectl, "-k", str(directory))
    assert code == 0, err
    applied = [line for line in out.splitlines() if line.endswith("(server dry run)")]
    assert len(applied) == len(objects), out


def _with_rule_for(objects: list[dict[str, Any]], duration: str) -> str:
    docs = copy.deepcopy(objects)
    for doc in docs:
        if doc["kind"] == "PrometheusRule":
            doc["spec"]["groups"][0]["rules"][0]["for"] = duration
    return yaml.safe_dump_all(docs)


def test_the_dry_run_enforces_the_operator_schema(kubectl: Kubectl) -> None:
    """A PrometheusRule the operator would refuse (a `for` that is no duration) is refused
    by the dry run too, so a passing dry run means the real schema accepted ours."""
    objects = [o for o in kubectl.render(MANIFESTS / "exporter") if o["kind"] == "PrometheusRule"]
    assert len(objects) == 1
    code, _, _ = _dry_run(kubectl, "-f", "-", stdin=_with_rule_for(objects, "5m"))
    assert code == 0
    code, _, err = _dry_run(kubectl, "-f", "-", stdin=_with_rule_for(objects, "five minutes"))
    assert code != 0
    assert "spec.groups[0].rules[0].for" in err


def test_the_dry_run_enforces_field_validation(kubectl: Kubectl) -> None:
    (controller,) = [
        o
        for o in kubectl.render(MANIFESTS / "harness")
        if o["kind"] == "Deployment" and o["metadata"]["name"] == "fakenrt-controller"
    ]
    broken = copy.deepcopy(controller)
    broken["spec"]["template"]["spec"]["containers"][0]["imagePullPolcy"] = "Never"
    code, _, err = _dry_run(kubectl, "-f", "-", stdin=yaml.safe_dump(broken))
    assert code != 0
    assert "imagePullPolcy" in err
