"""How the components under test run: the seam between the scenarios and a backend.

A scenario describes fake nodes (:class:`Topology`) and talks to the cluster only through
the API; a :class:`Deployment` makes the components exist - the fakenrt controller (fake
nodes, NRT, simulated admission, a podresources socket and sysfs per node), one real
``numa-exporter run`` per fake node, and the scheduler under test - and can kill and
restart the controller. :class:`ProcessDeployment` runs them as local processes against
the suite's control plane; an in-cluster backend (manifests on Kind) implements the same
protocol.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import yaml

from exporter.kubeclient import KubeClient, path
from exporter.kubeerrors import Conflict, Transient
from fakenrt.controller.endpoints import socket_path, sysfs_root
from fakenrt.controller.pods import RUN_DURATION_ANNOTATION
from fakenrt.dra.slices import device_classes
from fakenrt.nrt.render import NRT_GROUP, NRT_PLURAL, NRT_VERSION
from fakenrt.profiles import NodeProfile, parse_profiles
from schedulers.adapter import Adapter, node_label
from schedulers.building import binaries
from schedulers.kai import BUILD as KAI_BUILD
from tests.e2e.allocations import Allocations, recorded_allocations
from tests.e2e.processes import Process, harness_env
from tests.e2e.schedulers import (
    FAKENRT,
    PodScheduling,
    SchedulerRun,
    free_port,
)

REPO = Path(__file__).resolve().parents[2]
#: The placement exporters a deployment can run (Topology.exporter).
NUMA_EXPORTER, KAI_EXPORTER = "numa-exporter", "kai"
EXPORTERS = (NUMA_EXPORTER, KAI_EXPORTER)


@dataclass(frozen=True, kw_only=True)
class Topology:
    """The fake nodes of a scenario and the controller settings they run under."""

    #: Raw profile nodes (docs/profiles.md), names unique in the cluster.
    nodes: tuple[Mapping[str, Any], ...]
    #: Extra ``fakenrt controller`` options, e.g. ``("--nrt-delay", "2s")``.
    controller_args: tuple[str, ...] = ()
    #: Whether a placement exporter runs per node (without: no observed placements).
    exporters: bool = True
    #: Which: this project's ``numa-exporter`` (the default) or KAI's Go
    #: ``numa-placement-exporter`` (``kai``: built by KAI's adapter; the same podresources
    #: socket and sysfs tree). Local processes only.
    exporter: str = "numa-exporter"

    def __post_init__(self) -> None:
        if self.exporter not in EXPORTERS:
            raise ValueError(f"Topology.exporter {self.exporter!r}: one of {EXPORTERS}")

    def profiles(self) -> tuple[NodeProfile, ...]:
        return parse_profiles({"nodes": [dict(n) for n in self.nodes]}, source="e2e topology")

    @property
    def topology_policy(self) -> str:
        """The Topology Manager policy of the first node (``{topology_policy}``)."""
        kubelet = (self.nodes[0].get("kubelet") or {}) if self.nodes else {}
        return str(kubelet.get("topologyManagerPolicy", "none"))

    def for_scheduler(self, scheduler: Adapter) -> Topology:
        """The topology with what ``scheduler`` expects of the nodes: its ``nrt`` keys and
        its ``node_labels`` (each node's own policy filled in) on every node - a node's own
        keys and labels win -, its controller options after the scenario's."""
        nodes = tuple(self._adapted(n, scheduler) for n in self.nodes)
        args = (*self.controller_args, *scheduler.controller_args)
        return replace(self, nodes=nodes, controller_args=args)

    @staticmethod
    def _adapted(node: Mapping[str, Any], scheduler: Adapter) -> dict[str, Any]:
        policy = str((node.get("kubelet") or {}).get("topologyManagerPolicy", "none"))
        expanded = {
            key: node_label(value, policy, where=f"{scheduler.id} node label {key}")
            for key, value in scheduler.node_labels.items()
        }
        labels = {k: v for k, v in expanded.items() if v}  # nothing to say: no label
        adapted = dict(node)
        if scheduler.nrt:
            adapted["nrt"] = {**scheduler.nrt, **(node.get("nrt") or {})}
        if labels:
            adapted["labels"] = {**labels, **(node.get("labels") or {})}
        return adapted


@dataclass(frozen=True, kw_only=True)
class Workload:
    """How a workload pod's one container runs: image, command, and the pod's annotations."""

    image: str
    command: tuple[str, ...] = ()
    annotations: Mapping[str, str] = field(default_factory=dict)


#: The pause image of the simulated kubelets' pods (never pulled: nothing runs them).
SIMULATED_PAUSE = "registry.k8s.io/pause:3.10"


def simulated_workload(run_duration: str | None) -> Workload:
    """A simulated kubelet runs nothing: a pod finishes when its run-duration annotation
    says (docs/controller.md)."""
    annotations = {RUN_DURATION_ANNOTATION: run_duration} if run_duration else {}
    return Workload(image=SIMULATED_PAUSE, annotations=annotations)


class Deployment(Protocol):
    """The components of one scenario, running somewhere."""

    #: Value of the ``fakenrt.io/controller`` label on this deployment's nodes.
    controller_name: str
    scheduler: Adapter
    #: The topology's nodes once started, named as the Nodes that run them (on real
    #: kubelets the Kind workers' names), in the topology's order.
    profiles: tuple[NodeProfile, ...]

    @property
    def pod_scheduling(self) -> PodScheduling:
        """The scheduler name, labels and annotations of the deployment's workload pods."""

    def start(self) -> None:
        """Start everything; return once every node is Ready with an NRT and every
        exporter and the scheduler run."""

    def stop(self) -> None:
        """Stop everything and remove the deployment's nodes."""

    def kill_controller(self) -> None:
        """SIGKILL the controller (no cleanup, as a crash or OOM kill)."""

    def check_alive(self) -> None:
        """Raise AssertionError, with the components' logs, when a component that should
        run has exited (a killed controller until its restart is expected down)."""

    def restart_controller(self) -> None:
        """Start the controller again after :meth:`kill_controller`."""

    def diagnostics(self) -> str:
        """Recent logs of every component, for a failing assertion's message."""

    def node_name(self, profile_name: str) -> str:
        """The Node that runs the topology's node ``profile_name`` (the profile's own name
        on fake nodes; the Kind worker's on real kubelets)."""

    def allocations(self, listed: Iterable[Mapping[str, Any]]) -> Allocations:
        """What the kubelets hold for the pods of ``listed`` (the simulator's record on
        each pod, or a real kubelet's podresources ``List``)."""

    def workload(self, run_duration: str | None) -> Workload:
        """How a workload pod runs: forever (None), or ``run_duration`` (e.g. ``4s``) and
        then exits."""


@runtime_checkable
class ExporterMetrics(Protocol):
    """A deployment whose exporters' Prometheus endpoints the harness can read."""

    def exporter_metrics(self) -> list[str]:
        """The metrics text of every exporter that answers (docs/exporter.md)."""


@dataclass
class ProcessDeployment:
    """Every component as a local process, against one API server (admin kubeconfig)."""

    kube: KubeClient
    kubeconfig: Path
    topology: Topology
    scheduler: Adapter
    controller_name: str
    ready_timeout_s: float = 60.0
    profiles: tuple[NodeProfile, ...] = ()
    # Unix socket paths are limited to 107 bytes: keep the state directory short.
    workdir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="e2e-", dir="/tmp")))
    _controller: Process | None = None
    _others: list[Process] = field(default_factory=list)
    _scheduler: SchedulerRun | None = None
    _controller_killed: bool = False
    _metrics_ports: list[int] = field(default_factory=list)

    @property
    def run(self) -> SchedulerRun:
        """The scheduler under test's components."""
        if self._scheduler is None:
            self._scheduler = SchedulerRun(
                adapter=self.scheduler,
                kubeconfig=self.kubeconfig,
                controller_name=self.controller_name,
                workdir=self.workdir / "scheduler",
                topology_policy=self.topology.topology_policy,
            )
        return self._scheduler

    @property
    def pod_scheduling(self) -> PodScheduling:
        return self.run.pod_scheduling

    @property
    def state_dir(self) -> Path:
        return self.workdir / "s"

    def _env(self) -> dict[str, str]:
        return harness_env()

    def start(self) -> None:
        self.topology = self.topology.for_scheduler(self.scheduler)
        self.profiles = self.topology.profiles()
        try:
            self.run.acquire()  # an exclusive scheduler: one deployment at a time
            self._start()
        except BaseException:
            self.stop()
            raise

    def _start(self) -> None:
        # What the scheduler needs installed comes first: its CRDs may be those of objects
        # the controller publishes for it (Volcano's Numatopology).
        self.run.install()
        install_device_classes(self.kube, self.profiles)
        profile_file = self.workdir / "profiles.yaml"
        profile_file.write_text(yaml.safe_dump({"nodes": [dict(n) for n in self.topology.nodes]}))
        self._controller = Process(
            "controller",
            [
                *_fakenrt(),
                "controller",
                "--kubeconfig", str(self.kubeconfig),
                "--profile", str(profile_file),
                "--state-dir", str(self.state_dir),
                "--controller-name", self.controller_name,
                "--remove-on-exit",
                "--workers", "4",
                *self.topology.controller_args,
            ],
            self.workdir / "controller.log",
        )  # fmt: skip
        self._controller.start(self._env())
        self._wait_nodes()
        for profile in self.profiles if self.topology.exporters else ():
            exporter = Process(
                f"exporter {profile.name}",
                self._exporter_argv(profile.name),
                self.workdir / f"exporter-{profile.name}.log",
            )
            env = self._env()
            if self.topology.exporter == KAI_EXPORTER:  # a controller-runtime client
                env["KUBECONFIG"] = str(self.kubeconfig)
            exporter.start(env)
            self._others.append(exporter)
        self.run.start()
        self.check_alive()

    def _exporter_argv(self, node: str) -> list[str]:
        where = [
            "--node-name", node,
            "--podresources-socket", str(socket_path(self.state_dir, node)),
            "--sysfs-root", str(sysfs_root(self.state_dir, node)),
        ]  # fmt: skip
        if self.topology.exporter == KAI_EXPORTER:
            binary = binaries(KAI_BUILD) / "numa-placement-exporter"
            return [str(binary), *where, "--poll-interval", "500ms"]
        port = free_port()
        self._metrics_ports.append(port)
        return [
            sys.executable, "-c", "from exporter.cli import main; main()", "run", *where,
            "--kubeconfig", str(self.kubeconfig),
            "--metrics-bind-address", f"127.0.0.1:{port}",
            "--poll-interval", "0.5",
            "--log-level", "warning",
        ]  # fmt: skip

    def _wait_nodes(self) -> None:
        """Until every node is Ready and has its NRT, podresources socket and sysfs."""
        deadline = time.monotonic() + self.ready_timeout_s
        missing: list[str] = [p.name for p in self.profiles]
        while time.monotonic() < deadline:
            self.check_alive()
            try:
                missing = [p.name for p in self.profiles if not self._node_ready(p.name)]
            except Transient:  # e.g. 429 while a just-installed CRD's storage initializes
                pass
            else:
                if not missing:
                    return
            time.sleep(0.1)
        raise AssertionError(f"nodes not ready: {missing}\n{self.diagnostics()}")

    def _node_ready(self, node: str) -> bool:
        if not socket_path(self.state_dir, node).exists():
            return False
        if not (sysfs_root(self.state_dir, node) / "devices").exists():
            return False
        items, _ = self.kube.list_all(
            path("apis", NRT_GROUP, NRT_VERSION, NRT_PLURAL),
            what="list NRT",
            fieldSelector=f"metadata.name={node}",
        )
        if not items:
            return False
        nodes, _ = self.kube.list_all(
            path("api", "v1", "nodes"), what="list nodes", fieldSelector=f"metadata.name={node}"
        )
        conditions = (nodes[0].get("status") or {}).get("conditions") or [] if nodes else []
        return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)

    def check_alive(self) -> None:
        controller = [] if self._controller_killed else [self._controller]
        for proc in [*controller, *self._others]:
            if proc is not None and proc.exited():
                raise AssertionError(f"{proc.name} exited\n{self.diagnostics()}")
        if self._scheduler is not None:
            self._scheduler.check_alive()

    def kill_controller(self) -> None:
        assert self._controller is not None and self._controller.alive()
        self._controller_killed = True
        self._controller.kill()

    def restart_controller(self) -> None:
        assert self._controller is not None and not self._controller.alive()
        self._controller.start(self._env())
        self._controller_killed = False
        self._wait_nodes()

    def stop(self) -> None:
        # The scheduler and the exporters in parallel (an exporter may take seconds to
        # drain), then the controller.
        if self._scheduler is not None:
            self._scheduler.signal_stop()
        for proc in self._others:
            proc.signal(signal.SIGTERM)
        if self._scheduler is not None:
            self._scheduler.wait()
        for proc in self._others:
            proc.wait()
        if self._scheduler is not None:
            self._scheduler.remove_objects()
        if self._controller is not None:
            self._controller.stop()  # --remove-on-exit: the nodes go with it
        if self._scheduler is not None:
            self._scheduler.release()  # after its objects and nodes are gone
        keep_logs(self.workdir, self.controller_name)
        shutil.rmtree(self.workdir, ignore_errors=True)

    def diagnostics(self) -> str:
        procs: Sequence[Process | None] = [self._controller, *self._others]
        run = [self._scheduler.diagnostics()] if self._scheduler is not None else []
        return "\n".join([*(p.tail() for p in procs if p is not None), *run])

    def node_name(self, profile_name: str) -> str:
        return profile_name

    def exporter_metrics(self) -> list[str]:
        texts = []
        for port in self._metrics_ports:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                    texts.append(r.read().decode())
            except (OSError, urllib.error.URLError):  # not serving yet: asked again later
                continue
        return texts

    def allocations(self, listed: Iterable[Mapping[str, Any]]) -> Allocations:
        return recorded_allocations(listed)

    def workload(self, run_duration: str | None) -> Workload:
        return simulated_workload(run_duration)


DEVICE_CLASSES = path("apis", "resource.k8s.io", "v1", "deviceclasses")


def install_device_classes(kube: KubeClient, profiles: Iterable[NodeProfile]) -> None:
    """The DeviceClasses of the profiles' DRA drivers, created once per cluster and left in
    place, as a driver's installation does. A controller leaves a class it did not create
    alone (docs/controller.md, "DRA nodes"); one that created it would delete it when it
    stops - under the pods of deployments still running (the scorecard's cells at once)."""
    for body in device_classes(profiles):
        try:
            kube.create(DEVICE_CLASSES, body, what="create DeviceClass")
        except Conflict:  # there already: the cluster's, left as it is
            continue


#: When set, every deployment's component logs are kept under this directory.
LOGS_ENV = "NUMA_TESTKIT_E2E_LOGS"


def keep_logs(workdir: Path, deployment: str) -> None:
    """Copy the ``*.log`` files under ``workdir`` to ``$NUMA_TESTKIT_E2E_LOGS/<deployment>/``
    (nothing when the variable is unset)."""
    target = os.environ.get(LOGS_ENV)
    if not target:
        return
    for log in workdir.rglob("*.log"):
        dest = Path(target) / deployment / log.relative_to(workdir)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(log, dest)


def _fakenrt() -> list[str]:
    return shlex.split(FAKENRT)
