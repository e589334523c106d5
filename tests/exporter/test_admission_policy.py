"""manifests/exporter RBAC and ValidatingAdmissionPolicy, applied to the real API server.

RBAC is checked by impersonating the exporter's ServiceAccount; the admission policy
with a real ServiceAccount token bound to an exporter pod on a node, which is how the
kubelet-mounted token of the DaemonSet's pod looks (it carries
authentication.kubernetes.io/node-name).
"""

from __future__ import annotations

import json
import logging
import random
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from prometheus_client import CollectorRegistry

from exporter.annotations import OBSERVED_MEMORY_GROUPS, OBSERVED_PLACEMENT
from exporter.health import Health
from exporter.kube_events import MisalignedEvents, misaligned_event
from exporter.kube_pods import PodApi
from exporter.kubeclient import KubeClient
from exporter.kubesettings import ClusterConfig
from exporter.metrics import ExporterMetrics
from exporter.patching import Patcher
from exporter.pod_cache import PodCache
from exporter.podresources_client import PodResourcesClient
from exporter.pods import PodView
from exporter.reconciler import Reconciler
from exporter.sysfs import read_cpu_numa_map
from tests.controlplane.cluster import ControlPlane
from tests.controlplane.helpers import (
    create_fake_node,
    ensure_namespace,
    ensure_service_account,
    impersonating_client,
    token_client,
)
from tests.exporter import scenarios as s
from tests.exporter.fake_podresources import FakePodResources
from tests.exporter.kube_helpers import annotations_of, create_pod, exporter_kube, wait_until

pytestmark = pytest.mark.controlplane

MANIFESTS = Path(__file__).resolve().parents[2] / "manifests" / "exporter"
NAMESPACE = "numa-exporter"
SA_USER = f"system:serviceaccount:{NAMESPACE}:numa-exporter"
NODE_CLAIM = "authentication.kubernetes.io/node-name"


def _apply(api: client.ApiClient, doc: dict[str, Any]) -> None:
    kind = doc["kind"]
    rbac = client.RbacAuthorizationV1Api(api)
    adm = client.AdmissionregistrationV1Api(api)
    create, read, replace_ = {
        "ClusterRole": (
            rbac.create_cluster_role,
            rbac.read_cluster_role,
            rbac.replace_cluster_role,
        ),
        "ClusterRoleBinding": (
            rbac.create_cluster_role_binding,
            rbac.read_cluster_role_binding,
            rbac.replace_cluster_role_binding,
        ),
        "ValidatingAdmissionPolicy": (
            adm.create_validating_admission_policy,
            adm.read_validating_admission_policy,
            adm.replace_validating_admission_policy,
        ),
        "ValidatingAdmissionPolicyBinding": (
            adm.create_validating_admission_policy_binding,
            adm.read_validating_admission_policy_binding,
            adm.replace_validating_admission_policy_binding,
        ),
    }[kind]
    try:
        create(doc)
    except client.ApiException as exc:
        if exc.status != 409:
            raise
        doc["metadata"]["resourceVersion"] = read(doc["metadata"]["name"]).metadata.resource_version
        replace_(doc["metadata"]["name"], doc)


def _status(call: Callable[[], object]) -> tuple[int, str]:
    try:
        call()
    except client.ApiException as exc:
        return int(exc.status), str(json.loads(exc.body or "{}").get("message", ""))
    return 200, ""


@pytest.fixture(scope="module")
def installed(control_plane: ControlPlane, api_client: client.ApiClient) -> str:
    """The exporter's namespace, ServiceAccount, RBAC and admission policy, applied and
    enforced (the API server picks a new policy up through an informer: wait for it)."""
    ensure_namespace(api_client, NAMESPACE)
    ensure_service_account(api_client, NAMESPACE, "numa-exporter")
    for name in ("rbac.yaml", "admission-policy.yaml"):
        for doc in yaml.safe_load_all((MANIFESTS / name).read_text()):
            if doc:
                _apply(api_client, doc)
    probe = f"probe-{uuid.uuid4().hex[:6]}"
    create_pod(api_client, NAMESPACE, probe, node="no-such-node")
    sa = impersonating_client(control_plane, SA_USER)
    body = {"metadata": {"annotations": {OBSERVED_PLACEMENT: "[]"}}}
    wait_until(
        lambda: _status(_patch(sa, NAMESPACE, probe, body))[0] == 403,
        what="the admission policy on pods to be enforced",
    )
    # Each policy comes through the informer on its own: the events one may lag the pods
    # one (a test once saw another node's Event admitted).
    event = misaligned_event(
        namespace=NAMESPACE, pod=probe, uid="probe", node="no-such-node", message="probe",
        now=time.time(),
    )  # fmt: skip
    events = client.CoreV1Api(sa)
    wait_until(
        lambda: _status(lambda: events.create_namespaced_event(NAMESPACE, event))[0] == 403,
        what="the admission policy on events to be enforced",
    )
    sa.close()
    return NAMESPACE


@pytest.fixture
def nodes(api_client: client.ApiClient) -> Iterator[tuple[str, str]]:
    names = (f"node-a-{uuid.uuid4().hex[:6]}", f"node-b-{uuid.uuid4().hex[:6]}")
    for name in names:
        create_fake_node(api_client, name)
    yield names
    for name in names:
        client.CoreV1Api(api_client).delete_node(name)


def _bound_token(api: client.ApiClient, node: str) -> str:
    """A token for the exporter's ServiceAccount bound to an exporter pod on ``node``."""
    core = client.CoreV1Api(api)
    pod = create_pod(
        api,
        NAMESPACE,
        f"numa-exporter-{uuid.uuid4().hex[:6]}",
        node=node,
        service_account="numa-exporter",
    )
    request = client.AuthenticationV1TokenRequest(
        spec=client.V1TokenRequestSpec(
            audiences=[],
            expiration_seconds=3600,
            bound_object_ref=client.V1BoundObjectReference(
                api_version="v1", kind="Pod", name=pod["metadata"]["name"],
                uid=pod["metadata"]["uid"],
            ),
        )
    )  # fmt: skip
    response = core.create_namespaced_service_account_token("numa-exporter", NAMESPACE, request)
    return str(response.status.token)


def _patch(
    api: client.ApiClient, namespace: str, name: str, body: dict[str, Any]
) -> Callable[[], object]:
    return lambda: client.CoreV1Api(api).patch_namespaced_pod(
        name, namespace, body, _content_type="application/merge-patch+json"
    )


def test_rbac_impersonating_the_service_account(
    control_plane: ControlPlane, api_client: client.ApiClient, installed: str, namespace: str,
    nodes: tuple[str, str],
) -> None:  # fmt: skip
    node_a, _ = nodes
    create_pod(api_client, namespace, "work", node=node_a)
    sa = impersonating_client(control_plane, SA_USER)
    core = client.CoreV1Api(sa)
    annotate = {"metadata": {"annotations": {OBSERVED_PLACEMENT: "[]"}}}
    # allowed: what the exporter does
    selector = f"spec.nodeName={node_a}"
    assert _status(lambda: core.list_pod_for_all_namespaces(field_selector=selector)) == (200, "")
    slices = client.ResourceV1Api(sa)
    assert _status(lambda: slices.list_resource_slice(field_selector=selector)) == (200, "")
    assert _status(lambda: core.read_namespaced_pod("work", namespace)) == (200, "")
    # RBAC lets the patch through; without a node claim the admission policy refuses it
    code, message = _status(_patch(sa, namespace, "work", annotate))
    assert code == 403
    assert "ValidatingAdmissionPolicy" in message and "no node" in message
    new_pod = {"metadata": {"name": "x"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    # refused by RBAC itself
    for what, call in [
        ("delete pod", lambda: core.delete_namespaced_pod("work", namespace)),
        ("list secrets", lambda: core.list_namespaced_secret(namespace)),
        ("read secret", lambda: core.read_namespaced_secret("any", namespace)),
        ("patch node", lambda: core.patch_node(node_a, {"metadata": {"labels": {"x": "y"}}})),
        ("create pod", lambda: core.create_namespaced_pod(namespace, new_pod)),
        ("read a claim", lambda: slices.list_namespaced_resource_claim(namespace)),
        ("write a slice", slices.delete_collection_resource_slice),
        (
            "patch pod status",
            lambda: core.patch_namespaced_pod_status(
                "work", namespace, {"status": {"phase": "Failed"}}
            ),
        ),
    ]:
        code, message = _status(call)
        assert (what, code) == (what, 403), message
        assert "ValidatingAdmissionPolicy" not in message
    sa.close()

    # with the node claim the impersonated patch is admitted: RBAC allows patch on pods
    claimed = impersonating_client(control_plane, SA_USER)
    claimed.set_default_header(f"Impersonate-Extra-{NODE_CLAIM.replace('/', '%2F')}", node_a)
    assert _status(_patch(claimed, namespace, "work", annotate)) == (200, "")
    claimed.close()


def test_admission_policy_with_a_node_bound_token(
    control_plane: ControlPlane, api_client: client.ApiClient, installed: str, namespace: str,
    nodes: tuple[str, str],
) -> None:  # fmt: skip
    node_a, node_b = nodes
    create_pod(api_client, namespace, "mine", node=node_a, annotations={"keep": "me"})
    create_pod(api_client, namespace, "theirs", node=node_b)
    sa = token_client(control_plane, _bound_token(api_client, node_a))
    review = client.AuthenticationV1Api(sa).create_self_subject_review(
        {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    )
    assert review.status.user_info.extra[NODE_CLAIM] == [node_a]  # populated in 1.36

    ours = {"metadata": {"annotations": {OBSERVED_PLACEMENT: "[]", OBSERVED_MEMORY_GROUPS: "[]"}}}
    cases: list[tuple[str, str, dict[str, Any], int, str]] = [
        ("own node: our two annotations", "mine", ours, 200, ""),
        ("own node: remove one of ours", "mine",
         {"metadata": {"annotations": {OBSERVED_MEMORY_GROUPS: None}}}, 200, ""),
        ("another node's pod", "theirs", ours, 403, "only change pods bound to its own node"),
        ("another annotation", "mine",
         {"metadata": {"annotations": {"other": "x"}}}, 403, "may only change the annotations"),
        ("remove another annotation", "mine",
         {"metadata": {"annotations": {"keep": None}}}, 403, "may only change the annotations"),
        ("predicted annotation", "mine",
         {"metadata": {"annotations": {"kai.scheduler/numa-placement-predicted": "[]"}}}, 403,
         "may only change the annotations"),
        ("a label", "mine", {"metadata": {"labels": {"x": "y"}}}, 403, "spec, labels"),
        ("the spec", "mine", {"spec": {"activeDeadlineSeconds": 5}}, 403, "spec, labels"),
        ("a finalizer", "mine", {"metadata": {"finalizers": ["x.io/hold"]}}, 403, "finalizers"),
        ("an owner", "mine", {"metadata": {"ownerReferences": [{"apiVersion": "v1",
         "kind": "ConfigMap", "name": "c", "uid": "0b5d3c4e-0000-4000-8000-000000000001"}]}},
         403, "owners"),
        ("generateName", "mine", {"metadata": {"generateName": "other-"}}, 403, "generateName"),
    ]  # fmt: skip
    for what, pod, body, expected, message in cases:
        code, text = _status(_patch(sa, namespace, pod, body))
        assert (what, code) == (what, expected), text
        assert message in text, (what, text)
    assert annotations_of(api_client, namespace, "mine") == {
        "keep": "me",
        OBSERVED_PLACEMENT: "[]",
    }
    assert annotations_of(api_client, namespace, "theirs") == {}

    # a token of the same ServiceAccount that is not bound to a pod carries no node: refused
    unbound = client.CoreV1Api(api_client).create_namespaced_service_account_token(
        "numa-exporter", NAMESPACE,
        client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=[])),
    )  # fmt: skip
    code, text = _status(
        _patch(token_client(control_plane, unbound.status.token), namespace, "mine", ours)
    )
    assert code == 403 and "no node" in text
    sa.close()


def test_events_only_dra_misaligned_from_the_own_node(
    *,
    control_plane: ControlPlane, api_client: client.ApiClient, installed: str, namespace: str,
    nodes: tuple[str, str], caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    node_a, node_b = nodes
    pod = create_pod(api_client, namespace, "train", node=node_a)
    token = _bound_token(api_client, node_a)
    kube = KubeClient(
        ClusterConfig(server=control_plane.server, ca_file=control_plane.ca_file, token=token)
    )
    uid = pod["metadata"]["uid"]
    view = PodView(namespace, "train", uid)

    def at_once(_key: str, job: Callable[[], None]) -> bool:
        job()
        return True

    def recorder(node: str) -> MisalignedEvents:
        return MisalignedEvents(kube, node=node, submit=at_once, wall_clock=time.time)

    # what the exporter writes is admitted, and shows on the pod
    recorder(node_a).record(view, "m")
    # as another node's exporter: refused, and the exporter says why (and keeps going)
    with caplog.at_level(logging.ERROR, logger="exporter.kube_events"):
        recorder(node_b).record(view, "m")
    (refused,) = [r for r in caplog.records if r.name == "exporter.kube_events"]
    assert "admission policy numa-exporter-own-events-only" in refused.getMessage()
    events = client.CoreV1Api(api_client).list_namespaced_event(
        namespace, field_selector="involvedObject.name=train"
    )
    (event,) = events.items
    assert (event.reason, event.type, event.source.host) == ("DRAMisaligned", "Warning", node_a)
    sa = token_client(control_plane, token)
    core = client.CoreV1Api(sa)

    def create(**changes: Any) -> tuple[int, str]:
        body = misaligned_event(
            namespace=namespace, pod="train", uid=uid, node=node_a, message="m", now=time.time()
        )
        for key, value in changes.items():
            body[key] = value
        return _status(lambda: core.create_namespaced_event(namespace, body))

    code, text = create(source={"component": "numa-exporter", "host": node_b})
    assert code == 403 and "only report events from its own node" in text
    code, text = create(reportingInstance=node_b)
    assert code == 403 and "only report events from its own node" in text
    code, text = create(reason="Scheduled")
    assert code == 403 and "only report DRAMisaligned warnings about pods" in text
    code, text = create(
        involvedObject={"kind": "Node", "name": node_a, "apiVersion": "v1", "namespace": namespace}
    )
    assert code == 403 and "about pods" in text
    sa.close()
    kube.close()


def test_exporter_patches_pass_the_policy(
    *,
    control_plane: ControlPlane, api_client: client.ApiClient, installed: str, namespace: str,
    nodes: tuple[str, str], fake_kubelet: FakePodResources, sysfs_root: Path,
) -> None:  # fmt: skip
    """The exporter itself, authenticated as its node-bound ServiceAccount token."""
    node_a, _ = nodes
    create_pod(api_client, namespace, "cpu-only", node=node_a)
    fake_kubelet.set_pods([s.pod("cpu-only", *s.CPU_ONLY.containers, namespace=namespace)])
    pod_api = PodApi(exporter_kube(control_plane, _bound_token(api_client, node_a)))
    cache = PodCache(pod_api, node_a)
    _, items = pod_api.list_node_pods(node_a)
    cache.replace(items)
    cache.connected = True
    reconciler = Reconciler(
        podresources=PodResourcesClient(fake_kubelet.socket_path),
        cache=cache,
        patcher=Patcher(pod_api, sleep=time.sleep, rng=random.Random(0)),
        load_cpu_map=lambda: read_cpu_numa_map(sysfs_root),
        metrics=ExporterMetrics(CollectorRegistry()),
        health=Health(clock=time.monotonic),
        clock=time.monotonic,
        wall_clock=time.time,
    )
    result = wait_until(lambda: reconciler.run_once().patches or None, what="a patch")
    assert result == {"applied": 1}
    assert annotations_of(api_client, namespace, "cpu-only") == {
        OBSERVED_PLACEMENT: '[{"zone":"node-0","amount":{"cpu":"4"}}]',
        OBSERVED_MEMORY_GROUPS: "[]",
    }


def test_daemonset_and_namespace_pass_server_side_validation(
    api_client: client.ApiClient, installed: str
) -> None:
    docs = {
        d["kind"]: d
        for name in ("daemonset.yaml", "namespace.yaml", "serviceaccount.yaml")
        for d in yaml.safe_load_all((MANIFESTS / name).read_text())
        if d
    }
    client.AppsV1Api(api_client).create_namespaced_daemon_set(
        NAMESPACE, docs["DaemonSet"], dry_run="All"
    )
    namespace = dict(docs["Namespace"])
    namespace["metadata"] = {**namespace["metadata"], "name": f"ns-{uuid.uuid4().hex[:6]}"}
    client.CoreV1Api(api_client).create_namespace(namespace, dry_run="All")
