"""The NRT knobs a scheduler written for older kubelets or readers needs, on the real API
server: the pod fingerprint with terminated pods (kubelet < 1.32) and the deprecated
``topologyPolicies`` field left out - each a controller setting a profile overrides."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from exporter.kubeclient import KubeClient
from exporter.kubeerrors import NotFound
from fakenrt.controller.pods import RUN_DURATION_ANNOTATION
from fakenrt.controller.writers import nrt_path
from fakenrt.nrt import fingerprint
from fakenrt.nrt.fingerprint import ATTRIBUTE
from tests.controller.conftest import make_profiles, two_numa_profile, unique
from tests.controller.harness import create_pod, get_nrt, get_pod, phase_of, running, wait_for
from tests.controller.podmanifests import pod

pytestmark = [pytest.mark.controlplane, pytest.mark.usefixtures("nrt_crd")]


def _fingerprint_of(nrt: dict[str, Any]) -> str:
    return str(next(a["value"] for a in nrt["attributes"] if a["name"] == ATTRIBUTE))


def _node(*, nrt: dict[str, Any] | None = None) -> dict[str, Any]:
    raw = two_numa_profile(unique("knob"))
    if nrt is not None:
        raw["nrt"] = nrt
    return raw


@pytest.mark.parametrize(
    ("setting", "profile_nrt", "terminated_counted"),
    [
        pytest.param(False, None, False, id="default-current-kubelet"),
        pytest.param(True, None, True, id="controller-setting-old-kubelet"),
        pytest.param(False, {"fingerprintTerminatedPods": True}, True, id="profile-old-kubelet"),
        pytest.param(True, {"fingerprintTerminatedPods": False}, False, id="profile-overrides"),
    ],
)
def test_fingerprint_and_terminated_pods(
    *,
    kube: KubeClient,
    api_client: client.ApiClient,
    namespace: str,
    setting: bool,
    profile_nrt: dict[str, Any] | None,
    terminated_counted: bool,
) -> None:
    (profile,) = make_profiles(_node(nrt=profile_nrt))
    node = profile.name
    with running(kube, [profile], nrt_fingerprint_terminated_pods=setting):
        done = pod(
            "done", node, namespace=namespace, cpu="1", annotations={RUN_DURATION_ANNOTATION: "1s"}
        )
        create_pod(kube, done)
        create_pod(kube, pod("runs", node, namespace=namespace, cpu="1"))
        create_pod(kube, pod("shared", node, namespace=namespace, cpu="500m", guaranteed=False))
        wait_for(phase_of(kube, namespace, "done", "Succeeded"), what="done Succeeded")
        wait_for(phase_of(kube, namespace, "runs", "Running"), what="runs Running")
        # Exclusive holders only: the Burstable pod never counts.
        expected = {(namespace, "runs")} | ({(namespace, "done")} if terminated_counted else set())
        wait_for(
            lambda: _fingerprint_of(get_nrt(kube, node)) == fingerprint(expected),
            what="fingerprint with the Succeeded pod" if terminated_counted else "fingerprint",
        )
        client.CoreV1Api(api_client).delete_namespaced_pod(
            "done", namespace, grace_period_seconds=0
        )

        def gone() -> bool:
            try:
                get_pod(kube, namespace, "done")
            except NotFound:
                return True
            return False

        wait_for(gone, what="done deleted")
        # Deleted: out of the fingerprint in every mode.
        wait_for(
            lambda: _fingerprint_of(get_nrt(kube, node)) == fingerprint({(namespace, "runs")}),
            what="fingerprint without the deleted pod",
        )


@pytest.mark.parametrize(
    ("setting", "profile_nrt", "written"),
    [
        pytest.param(True, None, True, id="default-written"),
        pytest.param(False, None, False, id="controller-setting-off"),
        pytest.param(True, {"topologyPolicies": False}, False, id="profile-off"),
        pytest.param(False, {"topologyPolicies": True}, True, id="profile-on"),
    ],
)
def test_topology_policies_optional(
    *, kube: KubeClient, setting: bool, profile_nrt: dict[str, Any] | None, written: bool
) -> None:
    (profile,) = make_profiles(_node(nrt=profile_nrt))
    with running(kube, [profile], nrt_topology_policies=setting):
        nrt = wait_for(lambda: get_nrt(kube, profile.name), what="NRT published")
    if written:
        assert nrt["topologyPolicies"] == ["SingleNUMANodeContainerLevel"]
    else:
        assert "topologyPolicies" not in nrt
    assert {"name": "topologyManagerPolicy", "value": "single-numa-node"} in nrt["attributes"]


@pytest.mark.parametrize("terminated_counted", [True, False], ids=["old-kubelet", "current"])
def test_terminated_pods_stay_fingerprinted_across_a_restart(
    *, kube: KubeClient, namespace: str, terminated_counted: bool
) -> None:
    """A restarted controller rebuilds the fingerprint from the API: a Succeeded pod that
    held exclusive resources (its recorded allocation says so) is in it again under an old
    kubelet; a Succeeded pod that held nothing exclusive never is."""
    (profile,) = make_profiles(_node())
    node = profile.name
    finish = {RUN_DURATION_ANNOTATION: "1s"}
    with running(kube, [profile], nrt_fingerprint_terminated_pods=terminated_counted):
        create_pod(kube, pod("done", node, namespace=namespace, cpu="1", annotations=finish))
        create_pod(
            kube,
            pod("shared", node, namespace=namespace, cpu="1", guaranteed=False, annotations=finish),
        )
        wait_for(phase_of(kube, namespace, "done", "Succeeded"), what="done Succeeded")
        wait_for(phase_of(kube, namespace, "shared", "Succeeded"), what="shared Succeeded")
    expected = fingerprint({(namespace, "done")} if terminated_counted else set())
    kube.delete(nrt_path(node))  # the restarted controller must write it from scratch
    with running(kube, [profile], nrt_fingerprint_terminated_pods=terminated_counted):
        wait_for(
            lambda: _fingerprint_of(get_nrt(kube, node)) == expected,
            what="fingerprint rebuilt after the restart",
        )
