"""manifests/harness RBAC on the real API server: each component's ServiceAccount holds
exactly the permissions its code uses, nothing more (what `kubectl auth can-i --list`
shows, through the same SelfSubjectRulesReview, minus what every authenticated account
has)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from typing import Any

import pytest
from kubernetes import client

from exporter.kube_events import misaligned_event
from tests.controlplane.cluster import ControlPlane
from tests.controlplane.helpers import (
    ensure_namespace,
    ensure_service_account,
    impersonating_client,
    token_client,
)

pytestmark = [pytest.mark.controlplane]

NS = "numa-harness"
NRT = "topology.node.k8s.io"
Permission = tuple[str, str, str]  # (API group, resource, verb)


def _grants(group: str, resource: str, *verbs: str) -> set[Permission]:
    return {(group, resource, verb) for verb in verbs}


CONTROLLER = (
    _grants("", "nodes", "get", "create", "patch")
    | _grants("", "nodes/status", "patch")
    | _grants("", "pods", "list", "watch", "delete")
    | _grants("", "pods/status", "patch")
    | _grants("", "events", "create")
    | _grants(NRT, "noderesourcetopologies", "get", "create", "update")
    | _grants("nodeinfo.volcano.sh", "numatopologies", "get", "create", "update")
    | _grants("resource.k8s.io", "resourceclaims", "list", "watch")
    | _grants("resource.k8s.io", "resourceslices", "list", "create", "update", "delete")
    | _grants("resource.k8s.io", "deviceclasses", "get", "create", "update")
)
CONTROLLER_LEASES = _grants("coordination.k8s.io", "leases", "create", "patch")
EXPORTER = (
    _grants("", "pods", "get", "list", "watch", "patch")
    | _grants("resource.k8s.io", "resourceslices", "list", "watch")
    | _grants("", "events", "create")
)
SCHEDULER = (
    _grants("", "nodes", "list")
    | _grants("", "pods", "list", "watch", "patch")
    | _grants("", "pods/binding", "create")
    | _grants("", "events", "create")
    | _grants(NRT, "noderesourcetopologies", "list")
)


def _rules(cp: ControlPlane, user: str, namespace: str) -> tuple[set[Permission], set[str]]:
    """(resource permissions, non-resource URL:verb pairs) of ``user`` in ``namespace``."""
    api = impersonating_client(cp, user)
    try:
        review = client.AuthorizationV1Api(api).create_self_subject_rules_review(
            client.V1SelfSubjectRulesReview(
                spec=client.V1SelfSubjectRulesReviewSpec(namespace=namespace)
            )
        )
    finally:
        api.close()
    assert not review.status.incomplete, review.status.evaluation_error
    resources: set[Permission] = set()
    for rule in review.status.resource_rules:
        assert not rule.resource_names, rule
        for group in rule.api_groups or [""]:
            for resource in rule.resources or []:
                resources |= {(group, resource, verb) for verb in rule.verbs}
    urls = {
        f"{url}:{verb}"
        for rule in review.status.non_resource_rules
        for url in rule.non_resource_urls or []
        for verb in rule.verbs
    }
    return resources, urls


@pytest.fixture(scope="module")
def other_namespace(api_client: client.ApiClient) -> str:
    name = f"t-{uuid.uuid4().hex[:10]}"
    ensure_namespace(api_client, name)
    return name


@pytest.fixture(scope="module")
def baseline(
    control_plane: ControlPlane, api_client: client.ApiClient, harness_identities: list[str]
) -> dict[str, tuple[set[Permission], set[str]]]:
    """What an unbound ServiceAccount of the harness namespace may do, per namespace."""
    ensure_service_account(api_client, NS, "unbound")
    user = f"system:serviceaccount:{NS}:unbound"
    return {ns: _rules(control_plane, user, ns) for ns in (NS, "kube-node-lease", "default")}


def test_harness_has_exactly_three_accounts(harness_identities: list[str]) -> None:
    assert sorted(harness_identities) == [
        "fakenrt-controller",
        "fakenrt-exporter",
        "fakenrt-scheduler",
    ]


@pytest.mark.parametrize(
    ("account", "namespace", "expected"),
    [
        pytest.param("fakenrt-controller", NS, CONTROLLER, id="controller"),
        pytest.param("fakenrt-controller", "default", CONTROLLER, id="controller-elsewhere"),
        pytest.param(
            "fakenrt-controller", "kube-node-lease", CONTROLLER | CONTROLLER_LEASES,
            id="controller-leases",
        ),
        pytest.param("fakenrt-exporter", NS, EXPORTER, id="exporter"),
        pytest.param("fakenrt-exporter", "kube-node-lease", EXPORTER, id="exporter-no-leases"),
        pytest.param("fakenrt-scheduler", NS, SCHEDULER, id="scheduler"),
        pytest.param("fakenrt-scheduler", "default", SCHEDULER, id="scheduler-elsewhere"),
    ],
)  # fmt: skip
def test_account_holds_exactly_its_permissions(
    control_plane: ControlPlane,
    baseline: dict[str, tuple[set[Permission], set[str]]],
    account: str,
    namespace: str,
    expected: set[Permission],
) -> None:
    resources, urls = _rules(control_plane, f"system:serviceaccount:{NS}:{account}", namespace)
    base_resources, base_urls = baseline[namespace]
    assert resources - base_resources == expected
    assert urls == base_urls


def test_exporter_may_change_only_the_observed_annotations(
    control_plane: ControlPlane,
    api_client: client.ApiClient,
    harness_identities: list[str],
    namespace: str,
) -> None:
    """RBAC lets the exporter patch any pod; the harness's admission policy narrows that to
    the two observed annotations, as the production policy does."""
    core = client.CoreV1Api(api_client)
    core.create_namespaced_pod(
        namespace,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "annotations": {"keep": "me"}},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]},
        },
    )
    token = core.create_namespaced_service_account_token(
        "fakenrt-exporter",
        NS,
        client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=[])),
    ).status.token
    exporter = token_client(control_plane, token)
    pods = client.CoreV1Api(exporter)

    def refused(body: Mapping[str, object]) -> str:
        try:
            pods.patch_namespaced_pod("p", namespace, body)
        except client.ApiException as exc:
            assert exc.status == 403, exc.body
            return str(exc.body)
        return ""

    label = {"metadata": {"labels": {"stolen": "yes"}}}
    deadline = time.monotonic() + 30  # the policy is enforced once the server has loaded it
    while not (message := refused(label)):
        assert time.monotonic() < deadline, "a label change by the exporter was allowed"
        core.patch_namespaced_pod("p", namespace, {"metadata": {"labels": None}})
        time.sleep(0.2)
    assert "may not change a pod's spec, labels" in message
    assert "may only change the annotations" in refused(
        {"metadata": {"annotations": {"keep": "changed"}}}
    )
    assert "may only change the annotations" in refused(
        {"metadata": {"annotations": {"keep": None}}}
    )
    observed = {"kai.scheduler/numa-placement-observed": "[]"}
    pods.patch_namespaced_pod("p", namespace, {"metadata": {"annotations": observed}})
    annotations = core.read_namespaced_pod("p", namespace).metadata.annotations
    assert annotations == {"keep": "me", **observed}

    # its one kind of event: a DRAMisaligned warning about a pod (the harness's policy)
    events = client.CoreV1Api(exporter)
    pod_uid = core.read_namespaced_pod("p", namespace).metadata.uid
    body = misaligned_event(
        namespace=namespace, pod="p", uid=pod_uid, node="fake-1", message="m", now=time.time()
    )
    events.create_namespaced_event(namespace, body)
    try:
        events.create_namespaced_event(namespace, {**body, "reason": "Killing"} | _renamed(body))
        raise AssertionError("another event by the exporter was allowed")
    except client.ApiException as exc:
        assert exc.status == 403 and "only report DRAMisaligned warnings" in str(exc.body)
    exporter.close()


def _renamed(event: Mapping[str, Any]) -> dict[str, Any]:
    return {"metadata": {**event["metadata"], "name": f"{event['metadata']['name']}-2"}}
