"""The differential test of issue 19, item 1: the same profiles (with foreign capacity -
zones' ``allocated`` and ``foreignRequests``) and the same trace, run through ``fakenrt
simulate``'s engine and through the real parts on the real control plane, must agree pod
for pod.

The real side is the closest faithful set-up with a deterministic clock:

* etcd + kube-apiserver (the suite's control plane);
* ``fakenrt controller``'s :class:`~fakenrt.controller.runner.Controller` in this process
  with podresources sockets and sysfs (``--state-dir``), on a manual clock that is the
  simulation's clock (simulated second ``t`` is ``T0 + t``);
* one real ``numa-exporter run`` process per node, as the e2e suite runs them;
* the reference scheduler loop (:class:`~fakenrt.scheduler.loop.Scheduler`, what
  ``fakenrt scheduler run`` runs) with :class:`~fakenrt.scheduler.kube.KubeCluster`, its
  backoff on the same manual clock, one ``run_cycle`` per simulated second.

How time and order are made deterministic (the comparison's rules):

* every arrival, run duration and NRT delay is a whole number of seconds, the scheduling
  period is 1 s, NRT jitter is 0 and the exporter delay 0 - so every event of the
  simulation happens on a whole second, and the real side steps through the same seconds;
* each simulated second ``t`` of the real side, in the simulation's order of events at one
  instant: the controller's clock moves to ``t`` and its due timers fire (completions,
  NRT publications) and are written; the exporters have observed every pod holding
  resources (the simulation's exporter, with delay 0, observes a change at the instant it
  happens, before the next cycle); the pods arriving at ``t`` are created, in arrival
  order, named so that name order is arrival order (the loop orders pending pods by
  creation timestamp, then name); one scheduling cycle runs at ``t``; then the test waits
  until the controller has admitted or rejected every pod bound in it, written what that
  changed, and the exporters have observed the admitted ones;
* no re-creation of rejected pods (``requeue: false``): a rejected pod stays Failed on
  both sides.

Compared, per pod of the trace: the node it was bound to (none), the second it was bound,
its final phase (``Pending``, ``Running``, ``Succeeded``, or ``Failed`` with the kubelet's
reason) and the NUMA zones its kubelet gave it (from the controller's recorded allocation
on the real side, the engine's per-pod outcome on the simulated one). Required: no
disagreement. Two configurations of the reference scheduler, each with its simulated
strategy: reconstruction from observed placements (``reconstruct-observed``, the
default) and NRT ``available`` trusted as published (``nrt-reserve``), with NRT lagging
3 s.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import socket
import sys
import tempfile
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from prometheus_client import CollectorRegistry

from exporter.annotations import OBSERVED_MEMORY_GROUPS
from exporter.kubeclient import KubeClient, path
from exporter.kubeerrors import NotFound
from exporter.kubesettings import from_kubeconfig
from fakenrt.controller.endpoints import socket_path, sysfs_root
from fakenrt.controller.nodeobjects import CONTROLLER_LABEL
from fakenrt.controller.pods import ALLOCATION_ANNOTATION, RUN_DURATION_ANNOTATION
from fakenrt.controller.runner import Controller
from fakenrt.controller.timestamps import rfc3339
from fakenrt.controller.writers import nrt_path
from fakenrt.kubelet.allocation_codec import decode_allocation
from fakenrt.kubelet.foreign import FOREIGN_NAMESPACE
from fakenrt.podresources_report import allocation_zones, device_numa
from fakenrt.profiles import NodeProfile, parse_profiles
from fakenrt.scheduler.args import PluginArgs
from fakenrt.scheduler.backoff import Backoff
from fakenrt.scheduler.cluster import ClusterSnapshot, PodSnapshot
from fakenrt.scheduler.kube import KubeCluster
from fakenrt.scheduler.loop import Scheduler
from fakenrt.scheduler.metrics import SchedulerMetrics
from fakenrt.scheduler.plugin import NumaPlugin
from fakenrt.simulate.engine import simulate
from fakenrt.simulate.outcomes import COMPLETED, DROPPED, PENDING, RUNNING, Outcomes
from fakenrt.simulate.scenario import Scenario, Settings
from fakenrt.simulate.strategies import BY_NAME
from fakenrt.simulate.workload import items_from_entries
from tests.controller.conftest import ManualClock
from tests.controller.harness import running, wait_for
from tests.controlplane.cluster import ControlPlane
from tests.controlplane.helpers import ensure_service_account
from tests.e2e.processes import Process

pytestmark = [pytest.mark.controlplane, pytest.mark.usefixtures("nrt_crd")]

GPU = "nvidia.com/gpu"
T0 = 1_800_000_000.0
NRT_DELAY = 3
HORIZON = 48
PAUSE = "registry.k8s.io/pause:3.10"
REPO = Path(__file__).resolve().parents[2]


def nodes(prefix: str) -> list[dict[str, Any]]:
    """Two nodes with foreign capacity: a restricted one whose zone 0 holds 2 CPUs, 4Gi and
    a GPU for pods outside the simulation, plus two foreign pods requesting 2 CPUs; a
    single-numa-node one with one GPU of zone 1 held and 9 CPUs requested."""

    def zone(i: int, gpus: int, allocated: dict[str, Any] | None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": i,
            "cpus": f"{i * 8}-{i * 8 + 7}",
            "memory": "16Gi",
            "devices": {GPU: gpus},
        }
        if allocated:
            out["allocated"] = allocated
        return out

    return [
        {
            "name": f"{prefix}-r",
            "kubelet": {"topologyManagerPolicy": "restricted"},
            "foreignRequests": {"cpu": 2, "pods": 2},
            "zones": [zone(0, 4, {"cpu": 2, "memory": "4Gi", GPU: 1}), zone(1, 4, None)],
        },
        {
            "name": f"{prefix}-s",
            "kubelet": {"topologyManagerPolicy": "single-numa-node"},
            "foreignRequests": {"cpu": 9},
            "zones": [zone(0, 2, None), zone(1, 2, {GPU: 1})],
        },
    ]


@dataclass(frozen=True)
class TracePod:
    name: str
    at: int
    duration: int
    gpus: int
    cpus: int
    memory_gi: int

    def manifest(self, namespace: str, scheduler: str) -> dict[str, Any]:
        limits = {"cpu": str(self.cpus), "memory": f"{self.memory_gi}Gi"}
        if self.gpus:
            limits[GPU] = str(self.gpus)
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": self.name, "namespace": namespace},
            "spec": {
                "schedulerName": scheduler,
                "tolerations": [{"operator": "Exists"}],
                "containers": [{"name": "main", "image": PAUSE, "resources": {"limits": limits}}],
            },
        }


def trace() -> list[TracePod]:
    """Pods of 0-3 GPUs, 1-5 CPUs and 1-6Gi arriving over 36 s and running 4-24 s (seeded:
    the same trace every run), more than the nodes can hold at once."""
    rng = random.Random(19)
    pods = []
    at = 0
    for i in range(26):
        at += rng.choice((0, 0, 1, 2))
        pods.append(
            TracePod(
                name=f"p{i:02d}",
                at=min(at, 36),
                duration=rng.randint(4, 24),
                gpus=rng.choice((0, 1, 1, 2, 2, 3)),
                cpus=rng.randint(1, 5),
                memory_gi=rng.randint(1, 6),
            )
        )
    return pods


Verdicts = dict[str, tuple[str, int | None, str, tuple[int, ...]]]


def simulated(
    profiles: tuple[NodeProfile, ...], pods: list[TracePod], strategy: str, namespace: str
) -> Verdicts:
    items = items_from_entries(
        (p.name, {"at": p.at, "duration": p.duration, "pod": p.manifest(namespace, "x")})
        for p in pods
    )
    settings = Settings(
        nrt_delay=NRT_DELAY,
        nrt_jitter=0,
        exporter_delay=0,
        period=1,
        requeue=False,
        duration=HORIZON,
        plugin=PluginArgs(),
    )
    result = simulate(
        Scenario(nodes=profiles, workload=items, settings=settings), BY_NAME[strategy]
    )
    return verdicts_of(result.outcomes)


def verdicts_of(outcomes: Outcomes) -> Verdicts:
    reasons = {r.pod: r.reason for r in outcomes.rejections}
    phase = {COMPLETED: "Succeeded", RUNNING: "Running", PENDING: "Pending"}
    out: Verdicts = {}
    for p in outcomes.pods:
        verdict = f"Failed {reasons[p.pod]}" if p.fate == DROPPED else phase[p.fate]
        bound = None if p.first_bound is None else round(p.first_bound)
        out[p.pod.split("/", 1)[1]] = (p.node, bound, verdict, p.zones)
    return out


@pytest.fixture
def kube(control_plane: ControlPlane) -> KubeClient:
    return KubeClient(from_kubeconfig(control_plane.kubeconfig))


@pytest.fixture
def workdir() -> Iterator[Path]:
    # Unix socket paths are limited to 107 bytes: keep the state directory short.
    where = Path(tempfile.mkdtemp(prefix="i19-", dir="/tmp"))
    yield where
    shutil.rmtree(where, ignore_errors=True)


class SimulatedCreation:
    """The loop's view of the API with each pod's ``creationTimestamp`` replaced by the
    simulated second it was created in: the API server stamps its own wall clock, the
    simulation its clock, and the scheduler reads creation seconds (the pending order,
    and :mod:`fakenrt.scheduler.admission_order`)."""

    def __init__(self, inner: KubeCluster, created: Mapping[str, str]) -> None:
        self.inner, self.created = inner, created

    def snapshot(self) -> ClusterSnapshot:
        snapshot = self.inner.snapshot()
        pods = tuple(replace(p, created=self.created.get(p.key, p.created)) for p in snapshot.pods)
        return replace(snapshot, pods=pods)

    def annotate(self, pod: PodSnapshot, annotations: Mapping[str, str]) -> None:
        self.inner.annotate(pod, annotations)

    def bind(self, pod: PodSnapshot, node: str) -> None:
        self.inner.bind(pod, node)

    def record_unschedulable(self, pod: PodSnapshot, message: str) -> None:
        self.inner.record_unschedulable(pod, message)


class RealRun:
    """The real parts, stepped second by second (see the module docstring)."""

    def __init__(
        self,
        *,
        kube: KubeClient,
        core: client.CoreV1Api,
        controller: Controller,
        clock: ManualClock,
        namespace: str,
        scheduler_name: str,
        profiles: tuple[NodeProfile, ...],
        args: PluginArgs,
    ) -> None:
        self.kube, self.core, self.ctl, self.clock = kube, core, controller, clock
        self.namespace = namespace
        self.profiles = {p.name: p for p in profiles}
        self.now = 0
        self.created: dict[str, str] = {}
        self.loop = Scheduler(
            cluster=SimulatedCreation(
                KubeCluster(
                    kube,
                    scheduler_name=scheduler_name,
                    node_selector=f"{CONTROLLER_LABEL}={controller.settings.controller}",
                ),
                self.created,
            ),
            plugin=NumaPlugin(args),
            scheduler_name=scheduler_name,
            metrics=SchedulerMetrics(CollectorRegistry()),
            clock=lambda: float(self.now),
            backoff=Backoff(),
        )
        self.bound_at: dict[str, int] = {}

    def settle_controller(self) -> None:
        """The controller has fired every timer due on its clock and written the effects
        of everything it received so far."""
        for _ in range(2):
            before = self.ctl.turns

            def turned(before: int = before) -> bool:
                return self.ctl.turns > before

            self.ctl.wake()
            wait_for(turned, what="a controller turn")
        assert self.ctl.executor is not None
        assert self.ctl.executor.wait_idle(30.0), "the controller's writes did not drain"

    def holding(self) -> list[tuple[str, str]]:
        """(namespace, name) of every pod holding resources on the controller's nodes."""
        assert self.ctl.fleet is not None
        return [
            (t.pod.namespace, t.pod.name)
            for model in self.ctl.fleet.nodes.values()
            for t in list(model.pods.values())
            if t.holds
        ]

    def settle_exporters(self) -> None:
        def observed() -> bool:
            for namespace, name in self.holding():
                pod = self.kube.get(path("api", "v1", "namespaces", namespace, "pods", name))
                if OBSERVED_MEMORY_GROUPS not in (pod["metadata"].get("annotations") or {}):
                    return False
            return True

        wait_for(observed, timeout=60, what="the exporters observed every pod")

    def step(self, t: int, arriving: list[TracePod], scheduler_name: str) -> None:
        self.now = t
        self.clock.now = T0 + t
        self.settle_controller()
        self.settle_exporters()
        for p in arriving:
            manifest = p.manifest(self.namespace, scheduler_name)
            manifest["metadata"]["annotations"] = {
                RUN_DURATION_ANNOTATION: format(float(p.duration), ".3f")
            }
            self.kube.create(path("api", "v1", "namespaces", self.namespace, "pods"), manifest)
            self.created[f"{self.namespace}/{p.name}"] = rfc3339(T0 + t)
        report = self.loop.run_cycle()
        for key in report.bound:
            self.bound_at[key.split("/", 1)[1]] = t

        def admitted() -> bool:
            for key in report.bound:
                name = key.split("/", 1)[1]
                pod = self.kube.get(path("api", "v1", "namespaces", self.namespace, "pods", name))
                if (pod.get("status") or {}).get("phase") not in ("Running", "Failed"):
                    return False
            return True

        wait_for(admitted, what="the bound pods admitted or rejected")
        self.settle_controller()
        self.settle_exporters()

    def verdicts(self) -> Verdicts:
        out: Verdicts = {}
        for pod in self.kube.list_all(
            path("api", "v1", "namespaces", self.namespace, "pods"), what="list pods"
        )[0]:
            name = pod["metadata"]["name"]
            node = pod["spec"].get("nodeName") or ""
            status = pod.get("status") or {}
            phase = str(status.get("phase") or "Pending")
            verdict = f"Failed {status.get('reason')}" if phase == "Failed" else phase
            zones: tuple[int, ...] = ()
            recorded = (pod["metadata"].get("annotations") or {}).get(ALLOCATION_ANNOTATION)
            if recorded is not None:
                profile = self.profiles[node]
                allocation = decode_allocation(recorded, namespace=self.namespace, name=name)
                cpu_numa = {cpu: z.id for z in profile.zones for cpu in z.cpus}
                zones = allocation_zones(allocation, cpu_numa, device_numa(profile))
            out[name] = (node, self.bound_at.get(name), verdict, zones)
        return out


@pytest.mark.parametrize(
    ("strategy", "args"),
    [
        pytest.param("reconstruct-observed", PluginArgs(), id="reconstruct-observed"),
        pytest.param("nrt-reserve", PluginArgs(reconstruct_available=False), id="nrt-reserve"),
    ],
)
def test_simulate_and_the_real_parts_agree_pod_for_pod(
    *,
    strategy: str,
    args: PluginArgs,
    api_client: client.ApiClient,
    kube: KubeClient,
    control_plane: ControlPlane,
    namespace: str,
    workdir: Path,
) -> None:
    ensure_service_account(api_client, FOREIGN_NAMESPACE, "default")
    prefix = f"d{uuid.uuid4().hex[:6]}"
    profiles = parse_profiles({"nodes": nodes(prefix)}, source="differential test")
    pods = trace()
    expected = simulated(profiles, pods, strategy, namespace)

    core = client.CoreV1Api(api_client)
    clock = ManualClock(start=T0)
    scheduler_name = f"numa-{prefix}"
    exporters: list[Process] = []
    try:
        with running(
            kube,
            profiles,
            clock=clock,
            state_dir=workdir / "s",
            controller=prefix,
            taint=False,
            nrt_delay=NRT_DELAY,
            nrt_jitter=0,
            nrt_refresh=0,
        ) as controller:
            for profile in profiles:
                exporter = Process(
                    f"exporter {profile.name}",
                    [
                        sys.executable, "-c", "from exporter.cli import main; main()", "run",
                        "--node-name", profile.name,
                        "--podresources-socket", str(socket_path(workdir / "s", profile.name)),
                        "--sysfs-root", str(sysfs_root(workdir / "s", profile.name)),
                        "--kubeconfig", str(control_plane.kubeconfig),
                        "--metrics-bind-address", f"127.0.0.1:{free_port()}",
                        "--poll-interval", "0.1",
                        "--log-level", "warning",
                    ],
                    workdir / f"exporter-{profile.name}.log",
                )  # fmt: skip
                exporter.start({**os.environ, "PYTHONPATH": str(REPO)})
                exporters.append(exporter)
            real = RealRun(
                kube=kube,
                core=core,
                controller=controller,
                clock=clock,
                namespace=namespace,
                scheduler_name=scheduler_name,
                profiles=profiles,
                args=args,
            )
            # The foreign pods exist and run before the first second.
            fleet = controller.fleet
            assert fleet is not None
            wait_for(
                lambda: all(
                    len(m.pods) == len(m.foreign) and all(t.holds for t in m.pods.values())
                    for m in fleet.nodes.values()
                ),
                what="the foreign pods",
            )
            for t in range(HORIZON + 1):
                real.step(t, [p for p in pods if p.at == t], scheduler_name)
            actual = real.verdicts()
    finally:
        for exporter in exporters:
            exporter.stop()
        for profile in profiles:
            for name in list(controller_foreign_names(core, profile.name)):
                core.delete_namespaced_pod(name, FOREIGN_NAMESPACE, grace_period_seconds=0)
            for delete in (
                lambda name=profile.name: core.delete_node(name),
                lambda name=profile.name: kube.delete(nrt_path(name), what="delete NRT"),
            ):
                with contextlib.suppress(client.ApiException, NotFound):
                    delete()
    disagreements = {
        name: {"simulate": expected.get(name), "real": actual.get(name)}
        for name in sorted(set(expected) | set(actual))
        if expected.get(name) != actual.get(name)
    }
    logs = "\n".join(e.tail() for e in exporters)
    assert disagreements == {}, logs
    # The run exercised what it is about: pods on both nodes, some left pending.
    assert {v[0] for v in actual.values()} >= {p.name for p in profiles}
    assert any(v[2] == "Pending" for v in actual.values())


def controller_foreign_names(core: client.CoreV1Api, node: str) -> list[str]:
    selector = f"spec.nodeName={node}"
    listed = core.list_namespaced_pod(FOREIGN_NAMESPACE, field_selector=selector)
    return [p.metadata.name for p in listed.items]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
