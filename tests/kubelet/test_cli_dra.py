"""``fakenrt kubelet explain`` with ResourceClaims: prepared claims, the pod that will run
misaligned, the pod left Pending, and bad claim input refused with one clear line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from fakenrt.cli import main
from fakenrt.profiles.loading import EXAMPLES_DIR

PROFILE = str(EXAMPLES_DIR / "dra.yaml")

POD = """\
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: ml, uid: uid-{name}}}
spec:
  containers:
  - name: main
    image: x
    resources:
      limits: {{cpu: "4", memory: 8Gi}}
      claims: [{{name: gpu}}]
  resourceClaims:
  - {{name: gpu, resourceClaimName: {claim}}}
"""

CLAIM = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {{name: {name}, namespace: ml}}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {{deviceClassName: gpu.nvidia.com}}
status:
  reservedFor: [{{resource: pods, name: {pod}, uid: uid-{pod}}}]
{allocation}"""


def _allocation(device: str) -> str:
    return (
        "  allocation:\n    devices:\n      results:\n"
        f"      - {{request: gpu, driver: gpu.nvidia.com, pool: dra-gpu, device: {device}}}\n"
    )


def _files(tmp_path: Path) -> str:
    text = "---\n".join(
        [
            POD.format(name="far", claim="far-gpu"),
            CLAIM.format(name="far-gpu", pod="far", allocation=_allocation("gpu-2")),
            POD.format(name="near", claim="near-gpu"),
            CLAIM.format(name="near-gpu", pod="near", allocation=_allocation("gpu-0")),
            POD.format(name="waiting", claim="waiting-gpu"),
            CLAIM.format(name="waiting-gpu", pod="waiting", allocation=""),
        ]
    )
    path = tmp_path / "pods.yaml"
    path.write_text(text)
    return str(path)


def _explain(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["kubelet", "explain", "--profile", PROFILE, *args])
    return result.exit_code, result.output


def test_prepared_misaligned_and_pending_pods(tmp_path: Path) -> None:
    pods = _files(tmp_path)
    code, text = _explain("--node", "dra-gpu", "--pod", pods)
    assert code == 0, text
    far, near, waiting = text.split("\n\n")
    # far: CPUs 1-4 on NUMA 0 (the CPU Manager's pick), its GPU on NUMA 1: admitted anyway
    assert "ADMITTED" in far.splitlines()[0]
    assert "main: claim ml/far-gpu: gpu.nvidia.com/dra-gpu/gpu-2 (NUMA node 1)" in far
    assert (
        "MISALIGNED container main: DRA device gpu.nvidia.com/dra-gpu/gpu-2 on NUMA node 1, "
        "its exclusive CPUs and memory on NUMA node 0" in far
    )
    # near: NUMA 0 has 3 free CPUs left (CPU 0 is reserved, far holds 1-4), so its 4
    # CPUs come from NUMA 1 - and its GPU, allocated on NUMA 0, is misaligned too
    assert "main (regular): cpus 8-11" in near
    assert "gpu-0 (NUMA node 0)" in near and "MISALIGNED" in near
    assert "claims not prepared - the pod stays Pending, FailedPrepareDynamicResources: " in waiting
    assert (
        "Failed to prepare dynamic resources: prepare dynamic resources: ResourceClaim "
        "waiting-gpu: not allocated" in waiting
    )
    code, out = _explain("--node", "dra-gpu", "--pod", pods, "--json")
    data = json.loads(out)
    assert [p["dra"]["prepared"] for p in data] == [True, True, False]
    assert data[0]["dra"]["misaligned"] == [
        {
            "container": "main",
            "devices": [{"device": "gpu.nvidia.com/dra-gpu/gpu-2", "numa": 1}],
            "pinnedNuma": [0],
        }
    ]
    assert data[2]["dra"]["event"]["reason"] == "FailedPrepareDynamicResources"
    assert data[2]["allocation"][0]["cpus"]  # the pending pod holds its CPUs


def test_pods_without_claims_have_no_dra_section(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
        "  - {name: c, image: x, resources: {limits: {cpu: '1', memory: 1Gi}}}\n"
    )
    code, out = _explain("--node", "plugin-gpu", "--pod", str(path), "--json")
    assert code == 0 and json.loads(out)[0]["dra"] is None


@pytest.mark.parametrize(
    ("claim", "expected"),
    [
        pytest.param(
            CLAIM.format(name="c", pod="p", allocation="").replace("spec:", "spek:"),
            'ResourceClaim: strict decoding error: spek: unknown field "spek"',
            id="unknown-field",
        ),
        pytest.param(
            CLAIM.format(name="c", pod="p", allocation="").replace("/v1", "/v1beta1"),
            'apiVersion: a ResourceClaim is apiVersion "resource.k8s.io/v1"',
            id="api-version",
        ),
        pytest.param(
            CLAIM.format(name="c", pod="p", allocation="")
            + "---\n"
            + CLAIM.format(name="c", pod="p", allocation=""),
            "ResourceClaim ml/c is already given in",
            id="twice",
        ),
    ],
)
def test_bad_claims_are_one_clear_error(tmp_path: Path, claim: str, expected: str) -> None:
    path = tmp_path / "pods.yaml"
    path.write_text(POD.format(name="p", claim="c") + "---\n" + claim)
    code, out = _explain("--node", "dra-gpu", "--pod", str(path))
    assert code != 0
    assert expected in out
    assert len(out.strip().splitlines()) == 1


def test_a_container_may_use_only_the_pods_claims(tmp_path: Path) -> None:
    path = tmp_path / "pods.yaml"
    path.write_text(
        POD.format(name="p", claim="c").replace("claims: [{name: gpu}]", "claims: [{name: gpus}]")
    )
    code, out = _explain("--node", "dra-gpu", "--pod", str(path))
    assert code != 0
    assert (
        "container main: resources.claims: 'gpus' must be one of the names in spec.resourceClaims"
        in out
    )
