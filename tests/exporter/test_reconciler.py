"""The reconcile pass against the real API server and a fake podresources server.

The pod cache is filled by explicit list calls (``sync``) so each test decides exactly
what the exporter believes; the watch loop is exercised in test_daemon.py.
"""

from __future__ import annotations

import logging
import random
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from kubernetes import client
from prometheus_client import CollectorRegistry

from exporter import reconciler as reconciler_module
from exporter.annotations import OBSERVED_MEMORY_GROUPS, OBSERVED_PLACEMENT
from exporter.dra_numa import RULE_STANDARD, DeviceNuma
from exporter.dra_observer import DraObserver
from exporter.health import Health
from exporter.kube_pods import PodApi
from exporter.kubeclient import KubeClient
from exporter.kubesettings import ClusterConfig
from exporter.metrics import ExporterMetrics
from exporter.patching import Patcher
from exporter.pod_cache import PodCache
from exporter.podresources_client import PodResourcesClient
from exporter.pods import pod_view
from exporter.reconciler import PassReport, Reconciler
from exporter.resources import (
    AllocatableResources,
    ClaimDevice,
    ClaimResources,
    ContainerResources,
    MemoryBlock,
    PodResources,
)
from exporter.sysfs import read_cpu_numa_map
from exporter.writepool import WritePool
from tests.controlplane.cluster import ControlPlane
from tests.exporter import scenarios as s
from tests.exporter.fake_podresources import FakePodResources
from tests.exporter.kube_helpers import (
    GUARANTEED,
    annotations_of,
    create_pod,
    delete_pod,
    exporter_kube,
    merge_patch,
    read_pod,
    set_phase,
    wait_until,
)

pytestmark = pytest.mark.controlplane

CPU_ONLY_VALUE = '[{"zone":"node-0","amount":{"cpu":"4"}}]'


@dataclass
class Harness:
    api: client.ApiClient
    namespace: str
    node: str
    fake: FakePodResources
    pod_api: PodApi
    cache: PodCache
    reconciler: Reconciler
    registry: CollectorRegistry
    health: Health

    def sync(self) -> None:
        _, items = self.pod_api.list_node_pods(self.node)
        self.cache.replace(items)
        self.cache.connected = True

    def report(self, template: PodResources, name: str | None = None) -> PodResources:
        return replace(template, namespace=self.namespace, name=name or template.name)

    def metric(self, name: str, **labels: str) -> float:
        return self.registry.get_sample_value(name, labels) or 0.0

    def run(self) -> PassReport:
        return self.reconciler.run_once()


@pytest.fixture
def harness(
    control_plane: ControlPlane,
    api_client: client.ApiClient,
    namespace: str,
    fake_kubelet: FakePodResources,
    sysfs_root: Path,
) -> Iterator[Harness]:
    registry = CollectorRegistry()
    metrics = ExporterMetrics(registry)
    health = Health(clock=time.monotonic)
    pod_api = PodApi(exporter_kube(control_plane))
    node = f"node-{uuid.uuid4().hex[:8]}"
    cache = PodCache(pod_api, node)
    podresources = PodResourcesClient(fake_kubelet.socket_path, timeout_s=5)
    reconciler = Reconciler(
        podresources=podresources,
        cache=cache,
        patcher=Patcher(pod_api, sleep=lambda _: None, rng=random.Random(1)),
        load_cpu_map=lambda: read_cpu_numa_map(sysfs_root),
        metrics=metrics,
        health=health,
        clock=time.monotonic,
        wall_clock=time.time,
    )
    yield Harness(
        api_client, namespace, node, fake_kubelet, pod_api, cache, reconciler, registry, health
    )
    podresources.close()


def test_writes_once_then_only_on_change(harness: Harness) -> None:
    h = harness
    for template in (s.CPU_ONLY, s.GPU_AND_CPU, s.SHARED_POOL):
        create_pod(h.api, h.namespace, template.name, node=h.node)
    h.fake.set_pods([h.report(s.CPU_ONLY), h.report(s.GPU_AND_CPU), h.report(s.SHARED_POOL)])
    h.sync()

    first = h.run()
    assert first.patches == {"applied": 3}
    assert annotations_of(h.api, h.namespace, "cpu-only") == {
        OBSERVED_PLACEMENT: CPU_ONLY_VALUE,
        OBSERVED_MEMORY_GROUPS: "[]",
    }
    assert annotations_of(h.api, h.namespace, "gpu-cpu")[OBSERVED_PLACEMENT] == (
        '[{"zone":"node-1","amount":{"cpu":"2","nvidia.com/gpu":"2"}}]'
    )
    # no aligned resources: only the memory-groups annotation
    assert annotations_of(h.api, h.namespace, "shared") == {OBSERVED_MEMORY_GROUPS: "[]"}
    versions = {
        n: read_pod(h.api, h.namespace, n)["metadata"]["resourceVersion"]
        for n in ("cpu-only", "gpu-cpu", "shared")
    }

    # steady state: the cache holds the patch responses; nothing is written again,
    # not even after a fresh list
    assert h.run().patches == {}
    h.sync()
    assert h.run().patches == {}
    assert {
        n: read_pod(h.api, h.namespace, n)["metadata"]["resourceVersion"] for n in versions
    } == versions
    assert h.metric("numa_exporter_annotation_patches_total", result="applied") == 3
    assert h.metric("numa_exporter_pods_observed") == 3
    assert h.metric("numa_exporter_observation_lag_seconds_count") == 3
    assert h.health.readiness() == (True, "ok")


def test_the_cache_holds_each_written_pod_as_the_api_server_has_it(harness: Harness) -> None:
    """A patch's answer is the pod's metadata only: the cached pod built from it (the pod
    patched, with the answer's resourceVersion and annotations) equals the pod read
    back, field for field."""
    h = harness
    for template in (s.CPU_ONLY, s.MULTI_NUMA_GROUP):
        create_pod(h.api, h.namespace, template.name, node=h.node, containers={"main": GUARANTEED})
    h.fake.set_pods([h.report(s.CPU_ONLY), h.report(s.MULTI_NUMA_GROUP)])
    h.sync()
    assert h.run().patches == {"applied": 2}
    for name in ("cpu-only", "group"):
        cached = h.cache.get(f"{h.namespace}/{name}")
        assert cached == pod_view(read_pod(h.api, h.namespace, name))
        assert cached is not None and cached.placement_annotation is not None


def test_observation_lag_only_for_pods_started_while_the_exporter_runs(
    harness: Harness,
) -> None:
    # A pod that started long before the exporter (first install, or both annotations
    # stripped by hand) is written but not timed: its age is not an observation lag.
    h = harness
    create_pod(h.api, h.namespace, "cpu-only", node=h.node)
    client.CoreV1Api(h.api).patch_namespaced_pod_status(
        "cpu-only", h.namespace, {"status": {"startTime": "2020-01-01T00:00:00Z"}}
    )
    h.fake.set_pods([h.report(s.CPU_ONLY)])
    h.sync()
    assert h.run().patches == {"applied": 1}
    assert h.metric("numa_exporter_observation_lag_seconds_count") == 0

    merge_patch(h.api, h.namespace, "cpu-only", {"metadata": {"annotations": {
        OBSERVED_PLACEMENT: None, OBSERVED_MEMORY_GROUPS: None}}})  # fmt: skip
    h.sync()
    assert h.run().patches == {"applied": 1}
    assert h.metric("numa_exporter_observation_lag_seconds_count") == 0

    create_pod(h.api, h.namespace, "gpu-cpu", node=h.node)
    h.fake.set_pods([h.report(s.CPU_ONLY), h.report(s.GPU_AND_CPU)])
    h.sync()
    assert h.run().patches == {"applied": 1}
    assert h.metric("numa_exporter_observation_lag_seconds_count") == 1
    assert h.metric("numa_exporter_observation_lag_seconds_sum") < 60


def test_drift_is_repaired_and_nothing_else_is_touched(harness: Harness) -> None:
    h = harness
    create_pod(
        h.api,
        h.namespace,
        "cpu-only",
        node=h.node,
        annotations={"team.example/owner": "ml"},
        labels={"app": "train"},
    )
    h.fake.set_pods([h.report(s.CPU_ONLY)])
    h.sync()
    h.run()

    merge_patch(h.api, h.namespace, "cpu-only", {"metadata": {"annotations": {
        OBSERVED_PLACEMENT: '[{"zone":"node-1","amount":{"cpu":"4"}}]',
        OBSERVED_MEMORY_GROUPS: None,
    }}})  # fmt: skip
    h.sync()
    assert h.run().patches == {"applied": 1}
    pod = read_pod(h.api, h.namespace, "cpu-only")
    assert pod["metadata"]["annotations"] == {
        "team.example/owner": "ml",
        OBSERVED_PLACEMENT: CPU_ONLY_VALUE,
        OBSERVED_MEMORY_GROUPS: "[]",
    }
    assert pod["metadata"]["labels"] == {"app": "train"}

    # a placement annotation on a pod without aligned resources is removed
    create_pod(h.api, h.namespace, "shared", node=h.node, annotations={OBSERVED_PLACEMENT: "[]"})
    h.fake.set_pods([h.report(s.CPU_ONLY), h.report(s.SHARED_POOL)])
    h.sync()
    assert h.run().patches == {"applied": 1}
    assert annotations_of(h.api, h.namespace, "shared") == {OBSERVED_MEMORY_GROUPS: "[]"}


@pytest.mark.parametrize(
    "phase,started",
    [
        pytest.param("Pending", False, id="pending-not-acknowledged-by-kubelet"),
        pytest.param("Succeeded", True, id="succeeded"),
        pytest.param("Failed", True, id="failed"),
    ],
)
def test_pods_left_alone(harness: Harness, phase: str, started: bool) -> None:
    h = harness
    create_pod(h.api, h.namespace, "cpu-only", node=h.node, phase=phase, started=started)
    h.fake.set_pods([h.report(s.CPU_ONLY)])
    h.sync()
    assert h.run().patches == {}
    assert annotations_of(h.api, h.namespace, "cpu-only") == {}


def test_pending_pod_acknowledged_by_kubelet_is_annotated(harness: Harness) -> None:
    h = harness
    create_pod(h.api, h.namespace, "cpu-only", node=h.node, phase="Pending", started=True)
    h.fake.set_pods([h.report(s.CPU_ONLY)])
    h.sync()
    assert h.run().patches == {"applied": 1}


def test_pod_listed_twice_by_the_kubelet_is_left_alone(harness: Harness) -> None:
    h = harness
    create_pod(h.api, h.namespace, "cpu-only", node=h.node)
    h.fake.set_pods([h.report(s.CPU_ONLY), h.report(s.GPU_AND_CPU, name="cpu-only")])
    h.sync()
    result = h.run()
    assert result.patches == {}
    assert result.skipped_duplicates == (f"{h.namespace}/cpu-only",)


def test_404_pod_gone(harness: Harness) -> None:
    h = harness
    create_pod(h.api, h.namespace, "cpu-only", node=h.node)
    h.fake.set_pods([h.report(s.CPU_ONLY)])
    h.sync()
    delete_pod(h.api, h.namespace, "cpu-only")  # the cache has not seen the deletion
    assert h.run().patches == {"not_found": 1}
    assert h.cache.get(f"{h.namespace}/cpu-only") is None
    assert h.run().patches == {}


def test_409_stale_cache_rereads_and_writes(harness: Harness) -> None:
    h = harness
    create_pod(h.api, h.namespace, "cpu-only", node=h.node)
    h.fake.set_pods([h.report(s.CPU_ONLY)])
    h.sync()
    merge_patch(h.api, h.namespace, "cpu-only", {"metadata": {"labels": {"later": "edit"}}})
    assert h.run().patches == {"applied": 1}
    assert h.metric("numa_exporter_annotation_patches_total", result="conflict") == 1
    pod = read_pod(h.api, h.namespace, "cpu-only")
    assert pod["metadata"]["labels"] == {"later": "edit"}
    assert pod["metadata"]["annotations"][OBSERVED_PLACEMENT] == CPU_ONLY_VALUE


def test_409_after_someone_else_wrote_the_same_value(harness: Harness) -> None:
    h = harness
    create_pod(h.api, h.namespace, "cpu-only", node=h.node)
    h.fake.set_pods([h.report(s.CPU_ONLY)])
    h.sync()
    merge_patch(h.api, h.namespace, "cpu-only", {"metadata": {"annotations": {
        OBSERVED_PLACEMENT: CPU_ONLY_VALUE, OBSERVED_MEMORY_GROUPS: "[]"}}})  # fmt: skip
    assert h.run().patches == {"unchanged": 1}
    assert h.metric("numa_exporter_annotation_patches_total", result="conflict") == 1


def test_new_pod_reusing_the_name_is_never_written_with_the_old_decision(
    harness: Harness,
) -> None:
    h = harness
    create_pod(h.api, h.namespace, "cpu-only", node=h.node)
    h.fake.set_pods([h.report(s.CPU_ONLY)])
    h.sync()
    old = h.cache.get(f"{h.namespace}/cpu-only")
    assert old is not None
    old_uid = old.uid
    delete_pod(h.api, h.namespace, "cpu-only")
    create_pod(h.api, h.namespace, "cpu-only", node=h.node, phase="Pending", started=False)
    assert h.run().patches == {"replaced": 1}
    assert annotations_of(h.api, h.namespace, "cpu-only") == {}
    cached = h.cache.get(f"{h.namespace}/cpu-only")
    assert cached is not None and cached.uid != old_uid  # the cache now holds the new pod
    assert h.run().patches == {}  # not yet acknowledged by the kubelet: left alone
    set_phase(h.api, h.namespace, "cpu-only", "Running")
    h.sync()
    assert h.run().patches == {"applied": 1}


def test_memory_groups_null_until_every_container_reported(harness: Harness) -> None:
    h = harness
    h.fake.allocatable = AllocatableResources(memory=(MemoryBlock("memory", 64 * s.GI, (0,)),))
    create_pod(
        h.api, h.namespace, "group", node=h.node, containers={"a": GUARANTEED, "b": GUARANTEED}
    )
    only_a = s.pod("group", s.MULTI_NUMA_GROUP.containers[0], namespace=h.namespace)
    h.fake.set_pods([only_a])
    h.sync()
    h.run()
    groups = annotations_of(h.api, h.namespace, "group")[OBSERVED_MEMORY_GROUPS]
    assert groups == "null"
    h.fake.set_pods([h.report(s.MULTI_NUMA_GROUP)])
    assert h.run().patches == {"applied": 1}
    assert annotations_of(h.api, h.namespace, "group")[OBSERVED_MEMORY_GROUPS] == (
        '[{"memoryNodes":["node-0","node-1"],"amount":{"memory":"10737418240"}},'
        '{"memoryNodes":["node-1"],"amount":{"memory":"1073741824"}}]'
    )


def test_without_static_memory_manager_guaranteed_pods_get_empty_groups(
    harness: Harness,
) -> None:
    h = harness
    create_pod(h.api, h.namespace, "cpu-only", node=h.node, containers={"main": GUARANTEED})
    h.fake.set_pods([h.report(s.CPU_ONLY)])
    h.sync()
    h.run()
    assert annotations_of(h.api, h.namespace, "cpu-only")[OBSERVED_MEMORY_GROUPS] == "[]"


def test_unknown_cpus_are_counted_and_left_out(harness: Harness) -> None:
    h = harness
    create_pod(h.api, h.namespace, "unknown-cpus", node=h.node)
    h.fake.set_pods([h.report(s.UNKNOWN_CPUS)])
    h.sync()
    assert h.run().unknown_cpus == {40, 41}
    assert h.metric("numa_exporter_unknown_cpus") == 2
    assert annotations_of(h.api, h.namespace, "unknown-cpus")[OBSERVED_PLACEMENT] == (
        '[{"zone":"node-0","amount":{"cpu":"1"}}]'
    )


def test_podresources_failure_writes_nothing(harness: Harness) -> None:
    h = harness
    create_pod(h.api, h.namespace, "cpu-only", node=h.node)
    h.fake.set_pods([h.report(s.CPU_ONLY)])
    h.sync()
    h.fake.stop()
    for _ in range(3):
        result = h.run()
        assert (result.podresources_ok, result.patches) == (False, {})
    assert annotations_of(h.api, h.namespace, "cpu-only") == {}
    assert h.health.readiness() == (
        False,
        "not reached in the last 3 passes: kubelet podresources",
    )
    assert h.metric("numa_exporter_podresources_up") == 0
    assert h.metric("numa_exporter_reconciles_total", result="podresources_error") == 3


def test_a_kubelet_outage_is_logged_when_it_starts_and_ends(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    # one line per pass (every second) for the length of an outage floods the node's logs
    h = harness
    h.sync()
    h.fake.stop()
    with caplog.at_level(logging.INFO, logger="exporter.reconciler"):
        for _ in range(5):
            h.run()
        h.fake.start()
        h.run()
        h.run()
    messages = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert messages == [
        ("WARNING", "podresources unavailable; no writes until it answers"),
        ("INFO", "podresources reachable again"),
    ]


def test_a_pod_unknown_to_the_api_is_skipped(harness: Harness) -> None:
    h = harness
    h.fake.set_pods([h.report(s.CPU_ONLY), h.report(s.GPU_AND_CPU)])
    create_pod(h.api, h.namespace, "gpu-cpu", node=h.node)
    h.sync()
    assert h.run().patches == {"applied": 1}


def test_a_pod_unknown_to_the_api_is_never_patched_pass_after_pass(harness: Harness) -> None:
    """The kubelet lists a pod the API does not have (deleted, or not yet seen): no patch
    and no 404, in any pass (the Go exporter sent one a second)."""
    h = harness
    h.fake.set_pods([h.report(s.CPU_ONLY)])
    h.sync()
    for _ in range(5):
        assert h.run().patches == {}
    assert h.metric("numa_exporter_annotation_patches_total", result="not_found") == 0


def test_a_pod_listed_twice_is_never_patched_pass_after_pass(harness: Harness) -> None:
    h = harness
    create_pod(h.api, h.namespace, "cpu-only", node=h.node)
    h.fake.set_pods([h.report(s.CPU_ONLY), h.report(s.GPU_AND_CPU, name="cpu-only")])
    h.sync()
    for _ in range(5):
        assert h.run().patches == {}
    assert annotations_of(h.api, h.namespace, "cpu-only") == {}
    h.fake.set_pods([h.report(s.CPU_ONLY)])  # the old pod is gone: now it is written
    assert h.run().patches == {"applied": 1}


def test_steady_state_passes_derive_nothing_until_an_input_changes(harness: Harness) -> None:
    h = harness
    for template in (s.CPU_ONLY, s.GPU_AND_CPU):
        create_pod(h.api, h.namespace, template.name, node=h.node)
    h.fake.set_pods([h.report(s.CPU_ONLY), h.report(s.GPU_AND_CPU)])
    h.sync()
    assert h.run().patches == {"applied": 2}
    assert not h.run().unchanged  # the cache took the patch answers: one full pass
    for _ in range(3):
        result = h.run()
        assert result.unchanged and result.patches == {} and result.pods_reported == 2
    # the kubelet lists the same pods in another order: still nothing to do
    h.fake.set_pods([h.report(s.GPU_AND_CPU), h.report(s.CPU_ONLY)])
    assert h.run().unchanged
    # the pod cache changes (an annotation removed out of band): a full pass repairs it
    merge_patch(
        h.api, h.namespace, "cpu-only", {"metadata": {"annotations": {OBSERVED_PLACEMENT: None}}}
    )
    h.sync()
    result = h.run()
    assert not result.unchanged and result.patches == {"applied": 1}
    # the kubelet's answer changes: a full pass
    h.fake.set_pods([h.report(s.CPU_ONLY)])
    assert not h.run().unchanged


def test_a_kubelet_reordering_pods_on_every_list_costs_no_derivation(harness: Harness) -> None:
    h = harness
    names = [f"pod-{i}" for i in range(6)]
    for name in names:
        create_pod(h.api, h.namespace, name, node=h.node)
    h.fake.set_pods([h.report(s.CPU_ONLY, name=n) for n in names])
    h.fake.shuffle = True
    h.sync()
    assert h.run().patches == {"applied": 6}
    h.run()
    assert all(h.run().unchanged for _ in range(5))


def test_unreachable_api_stops_the_pass_after_one_failed_patch(
    harness: Harness, control_plane: ControlPlane, sysfs_root: Path
) -> None:
    h = harness
    for template in (s.CPU_ONLY, s.GPU_AND_CPU, s.SHARED_POOL):
        create_pod(h.api, h.namespace, template.name, node=h.node)
    h.fake.set_pods([h.report(s.CPU_ONLY), h.report(s.GPU_AND_CPU), h.report(s.SHARED_POOL)])
    h.sync()
    dead = PodApi(
        KubeClient(
            ClusterConfig(server="https://127.0.0.1:1", ca_file=control_plane.ca_file, token="t"),
            connect_timeout_s=1,
        )
    )
    delays: list[float] = []
    reconciler = Reconciler(
        podresources=PodResourcesClient(h.fake.socket_path),
        cache=h.cache,
        patcher=Patcher(dead, sleep=delays.append, rng=random.Random(1)),
        load_cpu_map=lambda: read_cpu_numa_map(sysfs_root),
        metrics=ExporterMetrics(CollectorRegistry()),
        health=h.health,
        clock=time.monotonic,
        wall_clock=time.time,
    )
    result = reconciler.run_once()
    assert (result.patches, result.api_ok, len(delays)) == ({"failed": 1}, False, 3)
    # the API is back: the next pass writes every pod
    assert h.run().patches == {"applied": 3}


def test_a_refused_patch_backs_off_per_pod(
    harness: Harness, control_plane: ControlPlane, api_client: client.ApiClient, sysfs_root: Path
) -> None:
    # RBAC or the admission policy refusing every patch (a misconfigured install) must
    # not turn each node's exporter into one API request per pod per second
    h = harness
    for template in (s.CPU_ONLY, s.GPU_AND_CPU, s.SHARED_POOL):
        create_pod(h.api, h.namespace, template.name, node=h.node)
    h.fake.set_pods([h.report(s.CPU_ONLY), h.report(s.GPU_AND_CPU), h.report(s.SHARED_POOL)])
    h.sync()
    token = (
        client.CoreV1Api(api_client)
        .create_namespaced_service_account_token(
            "default", h.namespace, client.AuthenticationV1TokenRequest(spec={"audiences": []})
        )
        .status.token
    )
    now = [1000.0]
    registry = CollectorRegistry()
    reconciler = Reconciler(
        podresources=PodResourcesClient(h.fake.socket_path),
        cache=h.cache,
        patcher=Patcher(
            PodApi(exporter_kube(control_plane, token)), sleep=lambda _: None, rng=random.Random(1)
        ),
        load_cpu_map=lambda: read_cpu_numa_map(sysfs_root),
        metrics=ExporterMetrics(registry),
        health=h.health,
        clock=lambda: now[0],
        wall_clock=time.time,
        rng=random.Random(2),
    )
    assert reconciler.run_once().patches == {"rejected": 3}
    assert reconciler.run_once().patches == {}  # backing off, not asking again
    now[0] += 10.01  # the first wait is at most 10 s
    assert reconciler.run_once().patches == {"rejected": 3}
    now[0] += 9.99  # then at least 10 s (20 s with jitter down to half)
    assert reconciler.run_once().patches == {}
    now[0] += 10.02
    assert reconciler.run_once().patches == {"rejected": 3}
    assert (
        registry.get_sample_value("numa_exporter_annotation_patches_total", {"result": "rejected"})
        == 9
    )
    assert annotations_of(h.api, h.namespace, "cpu-only") == {}


@pytest.mark.parametrize("workers", [1, 2])
def test_a_failing_api_server_gets_no_more_patches_this_pass(
    harness: Harness, control_plane: ControlPlane, sysfs_root: Path, workers: int
) -> None:
    # The API server answers, but every patch fails with a 5xx (here: a webhook it cannot
    # call; an overloaded server's 429 is the same class). After one pod's retries the
    # writes still queued are dropped: the rest would cost (pods x retries x backoff)
    # against a server that is already struggling. Those in flight at once (one per
    # worker) end with their own retries.
    h = harness
    for template in (s.CPU_ONLY, s.GPU_AND_CPU, s.SHARED_POOL):
        create_pod(h.api, h.namespace, template.name, node=h.node)
    h.fake.set_pods([h.report(s.CPU_ONLY), h.report(s.GPU_AND_CPU), h.report(s.SHARED_POOL)])
    h.sync()
    admission = client.AdmissionregistrationV1Api(h.api)
    webhook = admission.create_validating_webhook_configuration(
        {
            "metadata": {"name": f"unreachable-{h.namespace}"},
            "webhooks": [
                {
                    "name": "unreachable.numa-testkit.io",
                    "clientConfig": {"url": "https://127.0.0.1:1/validate"},
                    "rules": [
                        {
                            "apiGroups": [""],
                            "apiVersions": ["v1"],
                            "operations": ["UPDATE"],
                            "resources": ["pods"],
                        }
                    ],
                    "namespaceSelector": {
                        "matchLabels": {"kubernetes.io/metadata.name": h.namespace}
                    },
                    "failurePolicy": "Fail",
                    "sideEffects": "None",
                    "admissionReviewVersions": ["v1"],
                    "timeoutSeconds": 1,
                }
            ],
        }
    )
    delays: list[float] = []
    reconciler = Reconciler(
        podresources=PodResourcesClient(h.fake.socket_path),
        cache=h.cache,
        patcher=Patcher(h.pod_api, sleep=delays.append, rng=random.Random(1)),
        load_cpu_map=lambda: read_cpu_numa_map(sysfs_root),
        metrics=ExporterMetrics(CollectorRegistry()),
        health=h.health,
        clock=time.monotonic,
        wall_clock=time.time,
        writes=WritePool(workers),
    )

    def webhook_active() -> bool:
        try:
            merge_patch(h.api, h.namespace, "probe", {"metadata": {"labels": {"x": "y"}}})
        except client.ApiException as exc:
            return bool(exc.status == 500)
        return False

    create_pod(h.api, h.namespace, "probe", node="elsewhere")
    try:
        # the configuration takes a moment to reach the API server's admission chain
        wait_until(webhook_active, what="the webhook to be called")
        result = reconciler.run_once()
    finally:
        admission.delete_validating_webhook_configuration(webhook.metadata.name)
    assert (result.patches, result.api_ok, len(delays)) == (
        {"failed": workers},
        True,
        3 * workers,
    )
    assert annotations_of(h.api, h.namespace, "cpu-only") == {}


def test_a_pass_logs_its_writes_in_one_line_and_each_pod_at_debug(
    harness: Harness, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a burst of new pods is one info line, not one per pod (the log is paid on every
    # node); the names in it are bounded, the rest counted
    h = harness
    monkeypatch.setattr(reconciler_module, "LOGGED_NAMES", 2)
    templates = (s.CPU_ONLY, s.GPU_AND_CPU, s.SHARED_POOL)
    for template in templates:
        create_pod(h.api, h.namespace, template.name, node=h.node)
    h.fake.set_pods([h.report(t) for t in templates])
    h.sync()
    with caplog.at_level(logging.DEBUG, logger="exporter.reconciler"):
        assert h.run().patches == {"applied": 3}
    records = [r for r in caplog.records if r.getMessage() == "annotations written"]
    info = [r for r in records if r.levelno == logging.INFO]
    debug = {
        r.__dict__["pod"]: r.__dict__["annotations"] for r in records if r.levelno == logging.DEBUG
    }
    assert len(info) == 1
    assert (info[0].__dict__["pods"], info[0].__dict__["more"]) == (3, 1)
    assert info[0].__dict__["names"] == [f"{h.namespace}/cpu-only", f"{h.namespace}/gpu-cpu"]
    assert debug[f"{h.namespace}/cpu-only"] == {
        OBSERVED_PLACEMENT: CPU_ONLY_VALUE,
        OBSERVED_MEMORY_GROUPS: "[]",
    }
    assert len(debug) == 3


def test_a_pod_with_dra_devices_waits_for_the_nodes_slices(
    harness: Harness, sysfs_root: Path
) -> None:
    """Before the node's ResourceSlices are listed, a DRA device's NUMA node is unknown: a
    pod holding one is not written (it would be written without the device), the others
    are; once the slices are in, it is written with the device."""
    h = harness
    slices_listed = False
    observer = DraObserver(
        locate=lambda device: DeviceNuma(1, RULE_STANDARD),
        generation=lambda: 1,
        metrics=ExporterMetrics(CollectorRegistry()),
        ready=lambda: slices_listed,
    )
    reconciler = Reconciler(
        podresources=PodResourcesClient(h.fake.socket_path),
        cache=h.cache,
        patcher=Patcher(h.pod_api, sleep=lambda _: None, rng=random.Random(1)),
        load_cpu_map=lambda: read_cpu_numa_map(sysfs_root),
        metrics=ExporterMetrics(CollectorRegistry()),
        health=h.health,
        clock=time.monotonic,
        wall_clock=time.time,
        dra=observer,
    )
    device = ClaimDevice("gpu.nvidia.com", h.node, "gpu-1", ())
    claim = ClaimResources("gpu", h.namespace, (device,))
    with_dra = PodResources(
        h.namespace, "dra", (ContainerResources("main", cpu_ids=(0, 1), dynamic=(claim,)),)
    )
    for name in ("dra", s.CPU_ONLY.name):
        create_pod(h.api, h.namespace, name, node=h.node)
    h.fake.set_pods([with_dra, h.report(s.CPU_ONLY)])
    h.sync()

    first = reconciler.run_once()
    assert first.patches == {"applied": 1}
    assert OBSERVED_PLACEMENT not in annotations_of(h.api, h.namespace, "dra")
    assert OBSERVED_PLACEMENT in annotations_of(h.api, h.namespace, s.CPU_ONLY.name)

    slices_listed = True
    h.sync()
    assert reconciler.run_once().patches == {"applied": 1}
    assert annotations_of(h.api, h.namespace, "dra")[OBSERVED_PLACEMENT] == (
        '[{"zone":"node-0","amount":{"cpu":"2"}},{"zone":"node-1","amount":{"gpu.nvidia.com":"1"}}]'
    )
