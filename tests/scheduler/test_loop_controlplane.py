"""The scheduler loop against the real API server: binds through pods/binding, writes the
predicted placement, reconstructs from observed placements, records events, counts
TopologyAffinityErrors."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from kubernetes import client
from prometheus_client import CollectorRegistry

from exporter.annotations import OBSERVED_PLACEMENT, PREDICTED_PLACEMENT, parse_placement
from exporter.kubeclient import KubeClient
from exporter.kubesettings import from_kubeconfig
from fakenrt.cli import main
from fakenrt.nrt.render import NRT_GROUP, NRT_PLURAL, NRT_VERSION
from fakenrt.scheduler.args import PluginArgs
from fakenrt.scheduler.backoff import Backoff
from fakenrt.scheduler.kube import KubeCluster, watch_pods
from fakenrt.scheduler.loop import Scheduler
from fakenrt.scheduler.metrics import SchedulerMetrics
from fakenrt.scheduler.plugin import NumaPlugin
from tests.controlplane.cluster import ControlPlane
from tests.controlplane.helpers import create_fake_node
from tests.scheduler.builders import GI, GPU, nrt_object

pytestmark = pytest.mark.controlplane


@dataclass
class FakeClock:
    now: float = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Env:
    api: client.ApiClient
    kube: KubeClient
    namespace: str
    label: str
    scheduler_name: str
    clock: FakeClock = field(default_factory=FakeClock)
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)
    nodes: list[str] = field(default_factory=list)
    _metrics: SchedulerMetrics | None = None

    @property
    def core(self) -> client.CoreV1Api:
        return client.CoreV1Api(self.api)

    def node(
        self, suffix: str, zones: list[dict[str, Any]], policy: str = "single-numa-node"
    ) -> str:
        name = f"{self.label}-{suffix}"
        capacity: dict[str, int] = {}
        for zone in zones:
            for r, v in zone["capacity"].items():
                capacity[r] = capacity.get(r, 0) + v
        capacity["pods"] = 110
        create_fake_node(
            self.api,
            name,
            labels={"numa-test": self.label},
            capacity={k: str(v) for k, v in capacity.items()},
        )
        self.nodes.append(name)
        client.CustomObjectsApi(self.api).create_cluster_custom_object(
            NRT_GROUP,
            NRT_VERSION,
            NRT_PLURAL,
            nrt_object(name, zones, policy=policy, scope="container"),
        )
        return name

    def pod(
        self,
        name: str,
        *,
        cpu: int,
        gpu: int = 0,
        node: str | None = None,
        annotations: dict[str, str] | None = None,
        scheduler: str | None = None,
    ) -> None:
        limits = {"cpu": str(cpu), "memory": "1Gi"}
        if gpu:
            limits[GPU] = str(gpu)
        spec: dict[str, Any] = {
            "schedulerName": scheduler or self.scheduler_name,
            "containers": [
                {
                    "name": "main",
                    "image": "registry.k8s.io/pause:3.9",
                    "resources": {"limits": limits},
                }
            ],
        }
        if node:
            spec["nodeName"] = node
        self.core.create_namespaced_pod(
            self.namespace,
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name, "annotations": annotations or {}},
                "spec": spec,
            },
        )

    def read(self, name: str) -> Any:
        return self.core.read_namespaced_pod(name, self.namespace)

    def scheduler(self, args: PluginArgs | None = None) -> Scheduler:
        return Scheduler(
            cluster=KubeCluster(
                self.kube,
                scheduler_name=self.scheduler_name,
                node_selector=f"numa-test={self.label}",
            ),
            plugin=NumaPlugin(args),
            scheduler_name=self.scheduler_name,
            metrics=self.metrics,
            clock=self.clock,
            backoff=Backoff(initial=5.0, maximum=20.0),
        )

    @property
    def metrics(self) -> SchedulerMetrics:
        if self._metrics is None:
            self._metrics = SchedulerMetrics(self.registry)
        return self._metrics

    def metric(self, name: str, **labels: str) -> float:
        value = self.registry.get_sample_value(name, labels or None)
        return 0.0 if value is None else value


@pytest.fixture
def env(
    api_client: client.ApiClient, control_plane: ControlPlane, nrt_crd: list[str], namespace: str
) -> Iterator[Env]:
    label = f"sched-{uuid.uuid4().hex[:8]}"
    kube = KubeClient(from_kubeconfig(control_plane.kubeconfig))
    e = Env(
        api=api_client, kube=kube, namespace=namespace, label=label, scheduler_name=f"numa-{label}"
    )
    yield e
    custom = client.CustomObjectsApi(api_client)
    for name in e.nodes:
        _ignore_missing(
            custom.delete_cluster_custom_object, NRT_GROUP, NRT_VERSION, NRT_PLURAL, name
        )
        _ignore_missing(e.core.delete_node, name)


def _ignore_missing(call: Any, *args: str) -> None:
    try:
        call(*args)
    except client.ApiException as exc:
        if exc.status != 404:
            raise


GPU_ZONE = {"capacity": {"cpu": 16, GPU: 4, "memory": 64 * GI}}
ONE_GPU_ZONE = {"capacity": {"cpu": 16, GPU: 1, "memory": 64 * GI}}


def test_binds_and_writes_predicted_placement(env: Env) -> None:
    # examined in name order: the split node first (a node examined after a fit that it
    # cannot outscore is skipped, its rejection not counted)
    split = env.node("a-split", [ONE_GPU_ZONE, ONE_GPU_ZONE])
    good = env.node("b-good", [GPU_ZONE, GPU_ZONE])
    env.pod("train", cpu=4, gpu=2)
    report = env.scheduler().run_cycle()
    assert report.bound == {f"{env.namespace}/train": good}
    pod = env.read("train")
    assert pod.spec.node_name == good
    placement = parse_placement(pod.metadata.annotations[PREDICTED_PLACEMENT])
    assert [(z.numa_id, dict(z.amounts)) for z in placement] == [
        (0, {"cpu": 4, "memory": GI, GPU: 2})
    ]
    assert env.metric("numa_scheduler_binds_total") == 1
    assert env.metric("numa_scheduler_filter_rejections_total", reason="single-numa-node") == 1
    assert env.metric("numa_scheduler_bind_latency_seconds_count") == 1
    assert split  # the split node was considered and rejected


def test_observed_placement_steers_the_next_pod(env: Env) -> None:
    node = env.node("n", [GPU_ZONE, GPU_ZONE])
    observed = '[{"zone":"node-0","amount":{"cpu":"8","nvidia.com/gpu":"4"}}]'
    stale_prediction = '[{"zone":"node-1","amount":{"cpu":"8","nvidia.com/gpu":"4"}}]'
    env.pod(
        "running",
        cpu=8,
        gpu=4,
        node=node,
        scheduler="default-scheduler",
        annotations={OBSERVED_PLACEMENT: observed, PREDICTED_PLACEMENT: stale_prediction},
    )
    env.pod("next", cpu=4, gpu=2)
    assert env.scheduler().run_cycle().bound == {f"{env.namespace}/next": node}
    placement = parse_placement(env.read("next").metadata.annotations[PREDICTED_PLACEMENT])
    assert [z.numa_id for z in placement] == [1]


def _second_start() -> None:
    """Wait for the start of the next wall-clock second (the API server's clock)."""
    time.sleep(1.02 - time.time() % 1)


def _created(env: Env, name: str) -> str:
    return str(env.read(name).metadata.creation_timestamp)


def test_in_cycle_reservation_places_exactly_two_of_three(env: Env) -> None:
    node = env.node("n", [{"capacity": {"cpu": 4, "memory": 16 * GI}}] * 2)
    # b is created in a later second than a: the kubelet admits them in bind order
    # whatever it sees at once (fakenrt.scheduler.admission_order).
    env.pod("a", cpu=3)
    _second_start()
    for name, cores in (("b", 3), ("c", 2)):
        env.pod(name, cpu=cores)
    assert _created(env, "a") < _created(env, "b")
    report = env.scheduler().run_cycle()
    ns = env.namespace
    assert report.bound == {f"{ns}/a": node, f"{ns}/b": node}
    assert list(report.unschedulable) == [f"{ns}/c"]
    zones = {
        name: [
            z.numa_id
            for z in parse_placement(env.read(name).metadata.annotations[PREDICTED_PLACEMENT])
        ]
        for name in ("a", "b")
    }
    assert zones == {"a": [0], "b": [1]}
    # Next cycle reconstructs from the predicted annotations and still refuses c.
    env.clock.now += 60
    again = env.scheduler().run_cycle()
    assert again.bound == {}
    assert list(again.unschedulable) == [f"{ns}/c"]


def test_a_pod_created_in_the_second_of_one_awaiting_admission_waits_for_it(env: Env) -> None:
    """The kubelet admits pods it sees at once by creation second, ties in no fixed
    order: a pod of a's second may hold zones on a's node only once a is admitted."""
    node = env.node("n", [{"capacity": {"cpu": 4, "memory": 16 * GI}}] * 2)
    ns = env.namespace
    _second_start()
    env.pod("a", cpu=3)
    env.pod("b", cpu=3)
    assert _created(env, "a") == _created(env, "b")
    sched = env.scheduler()
    first = sched.run_cycle()
    assert first.bound == {f"{ns}/a": node}
    assert first.unschedulable[f"{ns}/b"] == (
        f"0/1 nodes are available: 1 admission order: pod {ns}/a on the node awaits "
        "admission and was created in the same second or later; the kubelet admits such "
        "pods in no fixed order."
    )
    assert env.metric("numa_scheduler_filter_rejections_total", reason="admission order") == 1
    # Still awaiting admission; tried again at once, without a backoff (the bar is
    # transient).
    again = sched.run_cycle()
    assert again.bound == {} and again.deferred == ()
    assert f"{ns}/b" in again.unschedulable
    # The kubelet admits a: its status manager sets startTime.
    env.core.patch_namespaced_pod_status("a", ns, {"status": {"startTime": "2026-01-01T00:00:00Z"}})
    env.clock.now += 60
    assert sched.run_cycle().bound == {f"{ns}/b": node}
    zones = parse_placement(env.read("b").metadata.annotations[PREDICTED_PLACEMENT])
    assert [z.numa_id for z in zones] == [1]


def test_a_pod_that_holds_no_zones_is_not_kept_waiting(env: Env) -> None:
    node = env.node("n", [{"capacity": {"cpu": 4, "memory": 16 * GI}}] * 2)
    ns = env.namespace
    _second_start()
    env.pod("a", cpu=3)
    env.core.create_namespaced_pod(
        ns,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "shared"},
            "spec": {
                "schedulerName": env.scheduler_name,
                "containers": [
                    {
                        "name": "main",
                        "image": "registry.k8s.io/pause:3.9",
                        "resources": {"requests": {"cpu": "500m"}},
                    }
                ],
            },
        },
    )
    assert _created(env, "a") == _created(env, "shared")
    assert env.scheduler().run_cycle().bound == {f"{ns}/a": node, f"{ns}/shared": node}


def test_fits_nowhere_is_never_bound_gets_an_event_and_backs_off(env: Env) -> None:
    env.node("n", [GPU_ZONE, GPU_ZONE])
    env.pod("huge", cpu=2, gpu=8)
    sched = env.scheduler()
    first = sched.run_cycle()
    key = f"{env.namespace}/huge"
    assert key in first.unschedulable
    assert "single-numa-node" in first.unschedulable[key]
    assert env.read("huge").spec.node_name is None
    events = env.core.list_namespaced_event(
        env.namespace, field_selector="involvedObject.name=huge"
    ).items
    assert [(e.reason, e.type) for e in events] == [("FailedScheduling", "Warning")]
    assert events[0].message == first.unschedulable[key]
    assert "nvidia.com/gpu: 8 needs 2 NUMA zones by capacity" in events[0].message
    assert sched.run_cycle().deferred == (key,)  # backoff: no retry at the same instant
    env.clock.now += 5
    assert key in sched.run_cycle().unschedulable
    assert env.metric("numa_scheduler_unschedulable_attempts_total") == 2
    assert env.read("huge").spec.node_name is None


def test_topology_affinity_errors_are_counted_once(env: Env) -> None:
    node = env.node("n", [GPU_ZONE])
    env.pod("rejected", cpu=1, node=node)
    env.core.patch_namespaced_pod_status(
        "rejected",
        env.namespace,
        {
            "status": {
                "phase": "Failed",
                "reason": "TopologyAffinityError",
                "message": "Pod was rejected: Resources cannot be allocated with Topology locality",
            }
        },
    )
    sched = env.scheduler()
    assert sched.run_cycle().topology_affinity_errors == (f"{env.namespace}/rejected",)
    assert sched.run_cycle().topology_affinity_errors == ()
    assert env.metric("numa_scheduler_topology_affinity_errors_total") == 1


def test_running_loop_binds_a_new_pod_promptly(env: Env) -> None:
    node = env.node("n", [GPU_ZONE, GPU_ZONE])
    sched = env.scheduler()
    sched.clock = time.monotonic
    stop, wake = threading.Event(), threading.Event()
    watcher = threading.Thread(
        target=watch_pods,
        args=(env.kube, env.scheduler_name, wake, stop),
        kwargs={"timeout_seconds": 2},
        daemon=True,
    )
    loop = threading.Thread(target=sched.run, args=(stop,), kwargs={"period": 5.0, "wake": wake})
    watcher.start()
    loop.start()
    try:
        env.pod("late", cpu=2, gpu=1)
        deadline = time.monotonic() + 20
        while env.read("late").spec.node_name is None:
            assert time.monotonic() < deadline, "pod not bound in time"
            time.sleep(0.1)
        assert env.read("late").spec.node_name == node
    finally:
        stop.set()
        wake.set()
        loop.join(timeout=15)
        watcher.join(timeout=15)
    assert not loop.is_alive()
    assert not watcher.is_alive()


def test_cli_run_once_binds(env: Env, control_plane: ControlPlane, tmp_path: Path) -> None:
    node = env.node("n", [GPU_ZONE, GPU_ZONE])
    env.pod("cli", cpu=2, gpu=1)
    args = tmp_path / "args.yaml"
    args.write_text("scoringStrategy: MostAllocated\n")
    result = CliRunner().invoke(
        main,
        [
            "scheduler",
            "run",
            "--kubeconfig",
            str(control_plane.kubeconfig),
            "--scheduler-name",
            env.scheduler_name,
            "--node-selector",
            f"numa-test={env.label}",
            "--args",
            str(args),
            "--once",
        ],
    )
    assert result.exit_code == 0, result.output
    assert result.stdout == f"bound {env.namespace}/cli -> {node}\n"
    assert env.read("cli").spec.node_name == node


def test_cli_run_rejects_bad_kubeconfig(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    result = CliRunner().invoke(main, ["scheduler", "run", "--kubeconfig", str(missing), "--once"])
    assert result.exit_code != 0
    assert str(missing) in result.stderr
