"""The real-kubelet backend of the e2e scenarios (``pytest --kind --real-kubelet
tests/e2e``, docs/e2e.md): each scenario's nodes run on real kubelets v1.36.

One Kind cluster per session (:func:`bring_up`) with as many real-kubelet workers as the
largest topology has nodes (``tests/realnode/realkubelet.py``) and the NRT CRD; the real
-kubelet oracle (tests/realnode/test_oracle_kind.py) shares it. Per scenario,
:class:`RealKubeletDeployment`:

* makes sure the production exporter DaemonSet runs (``manifests/overlays/kind-exporter``:
  on these workers its hostPath ``/sys/devices/system/node`` is the profile's generated
  sysfs; deployed once), and restarts its pods on the reconfigured workers, as a reboot
  would (the exporter reads the machine's NUMA topology when it starts);

* translates each profile node for a real kubelet (:mod:`tests.e2e.realnode_profiles`)
  and gives it the next worker - ``node_name`` maps the scenario's names to Kind's;
* reconfigures those workers (machine files, KubeletConfiguration, checkpoints cleared,
  kubelet restarted, the fake device plugin recreated) and labels them
  ``fakenrt.io/controller=<deployment>``, the node selector of the scenario's pods;
* deploys the NRT publisher DaemonSet (``manifests/nrt-publisher``) on them with the
  profile's lag (``nrt.delay`` / ``nrt.jitter``), which publishes each node's NRT from
  its kubelet's podresources API;
* runs the scheduler under test: the reference scheduler in-cluster (the harness's
  Deployment, pinned to the control-plane node) in the scenario's mode, or a user's
  scheduler as a local process with the cluster's admin kubeconfig.

What the kubelets hold comes from each worker's podresources ``List`` (the exporter's
client over a short symlink to the socket). The "controller" of scenario f is the
kubelet: :meth:`kill_controller` SIGKILLs every worker's kubelet (kept down) and the NRT
publisher's processes; :meth:`restart_controller` starts the kubelets again, which
rebuild their state from their checkpoints and restart the publisher containers.

The DaemonSets here request no CPU: the workers' allocatable CPUs are exactly the
scenario's (the reserved CPU is an extra one), which the scenarios fill.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from exporter.kubeclient import KubeClient, path
from exporter.kubeerrors import NotFound, Transient
from exporter.podresources_client import PodResourcesClient, PodResourcesError
from fakenrt.nrt.render import NRT_GROUP, NRT_PLURAL, NRT_VERSION
from fakenrt.profiles import NodeProfile, parse_profiles
from schedulers.adapter import Adapter
from tests.e2e.allocations import Allocations, listed_allocations
from tests.e2e.cluster import nrt_converged
from tests.e2e.deployment import NUMA_EXPORTER, REPO, Topology, Workload
from tests.e2e.kind_deployment import (
    BASE_IMAGES,
    HARNESS_NAMESPACE,
    KIND_HARNESS,
    SCHEDULER,
    install_crds,
)
from tests.e2e.local_scheduler import LocalSchedulerRun
from tests.e2e.realnode_profiles import for_real_kubelet
from tests.e2e.schedulers import CONTROLLER_LABEL, SchedulerRun
from tests.e2e.topologies import two_zone_node
from tests.kind.cluster import KindCluster, KindError
from tests.realnode.realkubelet import IMAGE, RealKubeletNode, create, delete

#: The session's cluster (its own name: CI's clusters are numa-testkit, -e2e, -oracle).
CLUSTER = os.environ.get("NUMA_TESTKIT_REALNODE_CLUSTER", "numa-testkit-realnode-e2e")
#: Workers: the most nodes any scenario's topology has (a, c, d, e, f: 2; b: 1).
WORKERS = 2
EXPORTER_OVERLAY = REPO / "manifests" / "overlays" / "kind-exporter"
PUBLISHER_MANIFESTS = REPO / "manifests" / "nrt-publisher"
EXPORTER_NAMESPACE = "numa-exporter"
EXPORTER_SELECTOR = "app.kubernetes.io/name=numa-exporter"
CONTROL_PLANE_ROLE = "node-role.kubernetes.io/control-plane"
#: The project image's names in the manifests and overlays (replaced by the one loaded).
PROJECT_IMAGES = BASE_IMAGES
_POLL_S = 0.5


@dataclass
class RealNodeCluster:
    """The session's cluster: its real-kubelet workers and a KindCluster view of it."""

    nodes: tuple[RealKubeletNode, ...]
    kind: KindCluster
    work_dir: Path
    #: The pause image the node image carries (the one kubeadm wants).
    pause: str = ""
    exporter: bool = False

    @property
    def kubeconfig(self) -> Path:
        return self.kind.kubeconfig

    def ensure_exporter(self) -> None:
        """The production exporter DaemonSet runs on every worker."""
        if self.exporter:
            return
        docs = _no_cpu_requests(_local_image(_rendered(self.kind, EXPORTER_OVERLAY), IMAGE))
        self.kind.kubectl_run("apply", "-f", "-", stdin=yaml.safe_dump_all(docs))
        self.kind.kubectl_run(
            "-n", "numa-exporter", "rollout", "status", "daemonset/numa-exporter",
            "--timeout=300s", timeout=330,
        )  # fmt: skip
        self.exporter = True

    def remove_exporter(self) -> None:
        """No exporter pod left (the oracle's workers run only its own pods and Kind's)."""
        self.kind.kubectl_run(
            "delete", "-k", str(EXPORTER_OVERLAY), "--ignore-not-found", "--wait=true",
            timeout=300,
        )  # fmt: skip
        self.exporter = False


def bring_up(work_dir: Path) -> RealNodeCluster:
    """The cluster with :data:`WORKERS` real-kubelet workers and the NRT CRD. The caller
    deletes it with :func:`tear_down` (also when this raises)."""
    names = [f"{CLUSTER}-worker" if i == 0 else f"{CLUSTER}-worker{i + 1}" for i in range(WORKERS)]
    start = [
        _parse(for_real_kubelet(two_zone_node(policy="single-numa-node"), name=n)) for n in names
    ]
    nodes = create(cluster=CLUSTER, work_dir=work_dir, profiles=start)
    first = nodes[0]
    cluster = RealNodeCluster(
        nodes=nodes,
        kind=KindCluster(name=CLUSTER, kubeconfig=first.kubeconfig, kubectl=first.kubectl),
        work_dir=work_dir,
    )
    _cluster_services_on_control_plane(cluster.kind)
    install_crds(cluster.kind)
    cluster.pause = _pause_image(first)
    return cluster


def _pause_image(node: RealKubeletNode) -> str:
    """The pause image in the node's containerd (nothing can be pulled)."""
    names = node.node_exec("ctr", "-n", "k8s.io", "images", "ls", "-q").split()
    pauses = sorted(n for n in names if n.startswith("registry.k8s.io/pause:"))
    if not pauses:
        raise KindError(f"no registry.k8s.io/pause image in {node.node}: {names}")
    return pauses[-1]


def _cluster_services_on_control_plane(cluster: KindCluster) -> None:
    """CoreDNS on the control-plane node, Kind's storage provisioner gone: the workers are
    the scenarios' alone, and without a real CNI (docs/kind.md) pods reach pods of their
    own node only - the in-cluster reference scheduler on the control-plane node resolves
    the API server's name through CoreDNS there. (Pods on the workers reach the API
    server through its Service address: kube-proxy and the CNI's masquerading.)"""
    selector = {"spec": {"template": {"spec": {"nodeSelector": {CONTROL_PLANE_ROLE: ""}}}}}
    cluster.kubectl_run(
        "-n", "kube-system", "patch", "deployment", "coredns", "--type=merge",
        "-p", json.dumps(selector),
    )  # fmt: skip
    cluster.kubectl_run(
        "delete", "namespace", "local-path-storage", "--ignore-not-found", "--wait=false"
    )
    cluster.kubectl_run(
        "-n", "kube-system", "rollout", "status", "deployment/coredns", "--timeout=300s",
        timeout=330,
    )  # fmt: skip


def tear_down(cluster: RealNodeCluster | None) -> None:
    """Delete the session's cluster (a no-op for one that was never made)."""
    if cluster is not None:
        delete(cluster.nodes)


def _parse(raw: Mapping[str, Any]) -> NodeProfile:
    (profile,) = parse_profiles({"nodes": [dict(raw)]}, source="e2e topology")
    return profile


def _rendered(cluster: KindCluster, directory: Path) -> list[dict[str, Any]]:
    """``kubectl kustomize`` of ``directory`` (or its YAML files, without a
    kustomization), as documents."""
    if (directory / "kustomization.yaml").exists():
        texts = [cluster.kubectl_run("kustomize", str(directory))]
    else:
        texts = [f.read_text() for f in sorted(directory.glob("*.yaml"))]
    return [d for text in texts for d in yaml.safe_load_all(text) if d]


def _pod_spec(doc: Mapping[str, Any]) -> dict[str, Any] | None:
    if doc.get("kind") in ("DaemonSet", "Deployment"):
        spec: dict[str, Any] = doc["spec"]["template"]["spec"]
        return spec
    return None


def _no_cpu_requests(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The DaemonSets' containers without a cpu request (see the module docstring)."""
    for doc in docs:
        spec = _pod_spec(doc)
        if spec is None:
            continue
        for container in spec.get("containers", []):
            requests = (container.get("resources") or {}).get("requests") or {}
            requests.pop("cpu", None)
    return docs


def _local_image(docs: list[dict[str, Any]], image: str) -> list[dict[str, Any]]:
    """The project image loaded into the nodes, never pulled."""
    for doc in docs:
        spec = _pod_spec(doc)
        if spec is None:
            continue
        for container in spec.get("containers", []):
            if container.get("image", "").rpartition(":")[0] in PROJECT_IMAGES:
                container["image"] = image
            container["imagePullPolicy"] = "Never"
    return docs


def _duration(seconds: float | None) -> str:
    return f"{seconds or 0:g}s"


def nrt_publisher(
    cluster: KindCluster,
    *,
    profiles: Sequence[NodeProfile],
    controller_name: str,
    image: str,
) -> list[dict[str, Any]]:
    """The NRT publisher DaemonSet (manifests/nrt-publisher) on the nodes of
    ``controller_name`` with the profiles' lag (every node of a topology has the same
    ``nrt``, as in every scenario), polling every 0.5 s, ready as soon as it is (readiness
    probed every second)."""
    lags = {(p.nrt_delay, p.nrt_jitter) for p in profiles}
    if len(lags) != 1:
        raise AssertionError(f"the nodes' nrt lags differ ({lags}); one DaemonSet has one")
    ((delay, jitter),) = lags
    docs = _local_image(_rendered(cluster, PUBLISHER_MANIFESTS), image)
    for doc in docs:
        spec = _pod_spec(doc)
        if spec is None:
            continue
        spec["nodeSelector"] = {
            **(spec.get("nodeSelector") or {}),
            CONTROLLER_LABEL: controller_name,
        }
        container = spec["containers"][0]
        container["args"] = [
            *(container.get("args") or []),
            f"--delay={_duration(delay)}",
            f"--jitter={_duration(jitter)}",
            "--seed=7",
            "--poll-interval=0.5s",
        ]
        if "readinessProbe" in container:
            container["readinessProbe"]["periodSeconds"] = 1
    return _no_cpu_requests(docs)


def reference_scheduler(
    cluster: KindCluster,
    *,
    scheduler: Adapter,
    controller_name: str,
    image: str,
    directory: Path,
) -> list[dict[str, Any]]:
    """The harness's reference scheduler alone (no fake-node controller, no harness
    exporters) in ``scheduler``'s mode, for the nodes of ``controller_name``, on the
    control-plane node; its overlay is written into ``directory``."""
    assert scheduler.in_cluster_args is not None
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "scheduler-args.yaml").write_text(scheduler.in_cluster_args)
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [os.path.relpath(KIND_HARNESS, directory)],
        "configMapGenerator": [
            {
                "name": "fakenrt-scheduler",
                "namespace": HARNESS_NAMESPACE,
                "behavior": "merge",
                "files": ["args.yaml=scheduler-args.yaml"],
            }
        ],
    }
    (directory / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    docs = []
    for doc in _local_image(_rendered(cluster, directory), image):
        if doc.get("kind") == "Deployment" and doc["metadata"]["name"] != SCHEDULER:
            continue  # the fake-node controller and the harness's exporters
        if doc["metadata"]["name"] == SCHEDULER and doc.get("kind") == "Deployment":
            spec = doc["spec"]["template"]["spec"]
            spec["nodeSelector"] = {CONTROL_PLANE_ROLE: ""}
            spec["tolerations"] = [
                {"key": CONTROL_PLANE_ROLE, "operator": "Exists", "effect": "NoSchedule"}
            ]
            spec["containers"][0]["args"] += [
                f"--scheduler-name={scheduler.name_for(controller_name)}",
                f"--node-selector={CONTROLLER_LABEL}={controller_name}",
                "--period=0.5",
            ]
        docs.append(doc)
    return docs


@dataclass
class RealKubeletDeployment(LocalSchedulerRun):
    """A scenario's nodes on the session's real-kubelet workers."""

    cluster: RealNodeCluster
    kube: KubeClient
    topology: Topology
    scheduler: Adapter
    controller_name: str
    image: str = IMAGE
    ready_timeout_s: float = 240.0
    profiles: tuple[NodeProfile, ...] = ()
    workdir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="e2e-real-")))
    _names: dict[str, str] = field(default_factory=dict)
    _applied: list[dict[str, Any]] = field(default_factory=list)
    _run: SchedulerRun | None = None

    # --- the scenario's nodes ---------------------------------------------------------

    @property
    def workers(self) -> tuple[RealKubeletNode, ...]:
        return self.cluster.nodes[: len(self.profiles)]

    def node_name(self, profile_name: str) -> str:
        return self._names[profile_name]

    def start(self) -> None:
        self.topology = self.topology.for_scheduler(self.scheduler)
        if self.topology.exporter != NUMA_EXPORTER or not self.topology.exporters:
            raise AssertionError(
                f"exporter {self.topology.exporter!r} (exporters={self.topology.exporters}): "
                "only the local-process backend runs another exporter or none"
            )
        nodes = self.topology.nodes
        other_agents = sorted(
            {k for n in nodes for k in ("volcano", "koordlet") if (n.get("nrt") or {}).get(k)}
        )
        if other_agents:
            raise AssertionError(
                f"nrt {other_agents}: on real kubelets the NRT publisher writes NRT v1alpha2 "
                "only; Volcano's resource-exporter or Koordinator's koordlet would have to run "
                "there instead (docs/schedulers/)"
            )
        if len(nodes) > len(self.cluster.nodes):
            raise AssertionError(
                f"the topology has {len(nodes)} nodes, the cluster {len(self.cluster.nodes)} "
                "real-kubelet workers (raise WORKERS in tests/e2e/realnode_deployment.py)"
            )
        raw = [
            for_real_kubelet(n, name=w.node)
            for n, w in zip(nodes, self.cluster.nodes, strict=False)
        ]
        self._names = {n["name"]: w.node for n, w in zip(nodes, self.cluster.nodes, strict=False)}
        self.profiles = parse_profiles({"nodes": raw}, source="e2e topology (real kubelet)")
        try:
            self._start(yaml.safe_dump({"nodes": raw}, sort_keys=False))
        except BaseException:
            self.stop()
            raise

    def _start(self, profile_text: str) -> None:
        kubectl = self.cluster.kind.kubectl_run
        self.cluster.ensure_exporter()
        for worker in self.cluster.nodes:  # no worker is any earlier scenario's
            kubectl("label", "node", worker.node, f"{CONTROLLER_LABEL}-", timeout=60)
        self._delete_nrts()
        with ThreadPoolExecutor(max_workers=len(self.profiles)) as pool:
            list(
                pool.map(
                    lambda pair: pair[0].configure(pair[1], profile_text),
                    zip(self.workers, self.profiles, strict=True),
                )
            )
        self._restart_exporters()
        for worker in self.workers:
            kubectl(
                "label", "node", worker.node, f"{CONTROLLER_LABEL}={self.controller_name}",
                "--overwrite", timeout=60,
            )  # fmt: skip
        self._apply(self._publisher())
        if self.scheduler.in_cluster_args is not None:
            self._apply(self._reference_scheduler())
        self._wait_ready()
        if self.scheduler.in_cluster_args is None:
            self.run.start()

    def _restart_exporters(self) -> None:
        """A reconfigured worker is another machine: its exporter pod starts again, as after
        a reboot (the exporter reads the node's NUMA topology from sysfs when it starts; a
        real machine's never changes under it)."""
        old = {p["metadata"]["name"] for w in self.workers for p in self._exporter_pods(w.node)}
        for name in sorted(old):
            with contextlib.suppress(NotFound):
                self.kube.request(
                    "DELETE",
                    path("api", "v1", "namespaces", EXPORTER_NAMESPACE, "pods", name),
                    query={"gracePeriodSeconds": "1"},
                    what=f"delete exporter pod {name}",
                )

        def restarted() -> bool:
            for worker in self.workers:
                pods = [
                    p for p in self._exporter_pods(worker.node) if p["metadata"]["name"] not in old
                ]
                if not any(_pod_ready(p) for p in pods):
                    return False
            return True

        deadline = time.monotonic() + self.ready_timeout_s
        while not restarted():
            if time.monotonic() > deadline:
                raise AssertionError("the exporters did not start again\n" + self.diagnostics())
            time.sleep(_POLL_S)

    def _exporter_pods(self, node: str) -> list[dict[str, Any]]:
        items, _ = self.kube.list_all(
            path("api", "v1", "namespaces", EXPORTER_NAMESPACE, "pods"),
            what="list exporter pods",
            labelSelector=EXPORTER_SELECTOR,
            fieldSelector=f"spec.nodeName={node}",
        )
        return items

    def _apply(self, docs: list[dict[str, Any]]) -> None:
        self.cluster.kind.kubectl_run("apply", "-f", "-", stdin=yaml.safe_dump_all(docs))
        self._applied.extend(docs)

    # --- the components ---------------------------------------------------------------

    def _publisher(self) -> list[dict[str, Any]]:
        return nrt_publisher(
            self.cluster.kind,
            profiles=self.profiles,
            controller_name=self.controller_name,
            image=self.image,
        )

    def _reference_scheduler(self) -> list[dict[str, Any]]:
        return reference_scheduler(
            self.cluster.kind,
            scheduler=self.scheduler,
            controller_name=self.controller_name,
            image=self.image,
            directory=self.workdir / "scheduler",
        )

    # --- waiting ----------------------------------------------------------------------

    def _wait_ready(self, *, empty: bool = True) -> None:
        """Until the DaemonSets and the scheduler are available and every node is Ready -
        with ``empty``, also with an NRT of the new configuration with nothing used."""
        deadline = time.monotonic() + self.ready_timeout_s
        waiting: list[str] = ["(not asked yet)"]
        while time.monotonic() < deadline:
            with contextlib.suppress(Transient):
                waiting = self._not_ready(empty=empty)
            if not waiting:
                return
            time.sleep(_POLL_S)
        raise AssertionError(
            f"not ready after {self.ready_timeout_s}s: {waiting}\n" + self.diagnostics()
        )

    def _not_ready(self, *, empty: bool) -> list[str]:
        waiting: list[str] = []
        for doc in self._applied:
            if doc.get("kind") not in ("Deployment", "DaemonSet"):
                continue
            meta = doc["metadata"]
            group = "deployments" if doc["kind"] == "Deployment" else "daemonsets"
            try:
                got = self.kube.get(
                    path("apis", "apps", "v1", "namespaces", meta["namespace"], group,
                         meta["name"]),
                )  # fmt: skip
            except NotFound:
                waiting.append(f"{doc['kind']} {meta['name']}")
                continue
            status = got.get("status") or {}
            if doc["kind"] == "Deployment":
                ready = status.get("availableReplicas", 0) >= got["spec"].get("replicas", 1)
            else:
                ready = status.get("desiredNumberScheduled", -1) == status.get(
                    "numberReady", 0
                ) == len(self.profiles) and status.get("updatedNumberScheduled", 0) == len(
                    self.profiles
                )
            if not ready or status.get("observedGeneration", 0) < got["metadata"].get(
                "generation", 0
            ):
                waiting.append(f"{doc['kind']} {meta['name']}")
        for profile in self.profiles:
            if not self._node_ready(profile, empty=empty):
                waiting.append(f"node {profile.name} Ready" + (" with its NRT" if empty else ""))
        return waiting

    def _node_ready(self, profile: NodeProfile, *, empty: bool) -> bool:
        """Ready; with ``empty`` its NRT the new configuration's with nothing used."""
        try:
            got = self.kube.get(path("api", "v1", "nodes", profile.name), what="get node")
            conditions = (got.get("status") or {}).get("conditions") or []
            ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
            return ready and (not empty or nrt_converged(self.kube, profile, [], {}))
        except NotFound:
            return False

    # --- what the kubelets hold -------------------------------------------------------

    def allocations(self, listed: Iterable[Mapping[str, Any]]) -> Allocations:
        namespaces = {p["metadata"]["namespace"] for p in listed}
        out: dict[str, Any] = {}
        for worker in self.workers:
            client = PodResourcesClient(worker.socket, timeout_s=10)
            try:
                reported = client.list()
            except PodResourcesError as exc:  # a kubelet restarting: ask again
                raise Transient(0, f"podresources List of {worker.node}: {exc}") from exc
            finally:
                client.close()
            for namespace in namespaces:
                out.update(listed_allocations(reported, namespace=namespace))
        return out

    def workload(self, run_duration: str | None) -> Workload:
        """A real container: pause, or the project image's ``sleep`` for a pod that
        finishes."""
        if run_duration is None:
            return Workload(image=self.cluster.pause)
        return Workload(image=self.image, command=("sleep", run_duration))

    # --- scenario f: the kubelets crash and come back ---------------------------------

    def kill_controller(self) -> None:
        for worker in self.workers:
            # SIGKILL, then `stop` so that systemd's Restart= does not start it again.
            worker.node_exec(
                "sh", "-c", "systemctl kill --signal=SIGKILL kubelet; systemctl stop kubelet"
            )
            _sigkill_publisher(worker)

    def restart_controller(self) -> None:
        for worker in self.workers:
            worker.node_exec("systemctl", "start", "kubelet")
        for worker in self.workers:
            worker.listed()  # its podresources socket answers
        self._wait_ready(empty=False)

    # --- teardown and diagnostics -----------------------------------------------------

    def stop(self) -> None:
        if self._run is not None:
            self._run.stop()
        for doc in reversed(self._applied):
            if doc.get("kind") in ("Deployment", "DaemonSet", "ConfigMap"):
                meta = doc["metadata"]
                with contextlib.suppress(KindError):
                    self.cluster.kind.kubectl_run(
                        "-n", meta["namespace"], "delete", doc["kind"].lower(), meta["name"],
                        "--ignore-not-found", "--wait=false", timeout=60,
                    )  # fmt: skip
        self._wait_gone()
        for worker in self.workers:
            with contextlib.suppress(KindError):
                self.cluster.kind.kubectl_run(
                    "label", "node", worker.node, f"{CONTROLLER_LABEL}-", timeout=60
                )
        self._delete_nrts()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def _wait_gone(self) -> None:
        """Until the scheduler's and the publisher's pods are gone (hurried along)."""
        workloads = [
            (
                d["metadata"]["namespace"],
                ",".join(f"{k}={v}" for k, v in d["spec"]["selector"]["matchLabels"].items()),
            )
            for d in self._applied
            if d.get("kind") in ("Deployment", "DaemonSet")
        ]
        deadline = time.monotonic() + 120
        for namespace, selector in workloads:
            while time.monotonic() < deadline:
                items, _ = self.kube.list_all(
                    path("api", "v1", "namespaces", namespace, "pods"),
                    what="list pods",
                    labelSelector=selector,
                )
                if not items:
                    break
                for item in items:
                    with contextlib.suppress(NotFound):
                        self.kube.request(
                            "DELETE",
                            path("api", "v1", "namespaces", namespace, "pods",
                                 item["metadata"]["name"]),
                            query={"gracePeriodSeconds": "1"},
                            what="delete pod",
                        )  # fmt: skip
                time.sleep(_POLL_S)

    def _delete_nrts(self) -> None:
        for worker in self.cluster.nodes:
            with contextlib.suppress(NotFound):
                self.kube.delete(path("apis", NRT_GROUP, NRT_VERSION, NRT_PLURAL, worker.node))

    def diagnostics(self) -> str:
        parts: list[str] = []
        namespaces = sorted(
            {d["metadata"]["namespace"] for d in self._applied if "namespace" in d["metadata"]}
            | {"numa-exporter"}
        )
        for namespace in namespaces:
            try:
                pods, _ = self.kube.list_all(
                    path("api", "v1", "namespaces", namespace, "pods"), what="list pods"
                )
            except (Transient, NotFound) as exc:
                parts.append(f"(cannot list the pods of {namespace}: {exc})")
                continue
            for pod in pods:
                name = pod["metadata"]["name"]
                phase = (pod.get("status") or {}).get("phase")
                try:
                    log = self.cluster.kind.kubectl_run(
                        "logs", "-n", namespace, name, "--tail=40", timeout=30
                    )
                except KindError as exc:
                    log = f"(no log: {exc})"
                parts.append(f"--- pod {namespace}/{name} ({phase}):\n{log}")
        parts.append(self._pods_on_workers())
        if self._run is not None:
            parts.append(self._run.diagnostics())
        return "\n".join(parts)

    def _pods_on_workers(self) -> str:
        """Every pod on the scenario's workers: phase, reason, the annotations compared."""
        lines = ["--- pods on the workers:"]
        for worker in self.workers:
            try:
                pods, _ = self.kube.list_all(
                    path("api", "v1", "pods"),
                    what="list pods",
                    fieldSelector=f"spec.nodeName={worker.node}",
                )
            except (Transient, NotFound) as exc:
                lines.append(f"(cannot list the pods of {worker.node}: {exc})")
                continue
            for pod in pods:
                status = pod.get("status") or {}
                notes = {
                    k.rpartition("/")[2]: v
                    for k, v in ((pod["metadata"].get("annotations")) or {}).items()
                    if k.startswith("kai.scheduler/")
                }
                lines.append(
                    f"{worker.node} {pod['metadata']['namespace']}/{pod['metadata']['name']} "
                    f"{status.get('phase')} {status.get('reason') or ''} "
                    f"{(status.get('message') or '')[:200]} {notes}"
                )
        return "\n".join(lines)


def _pod_ready(pod: Mapping[str, Any]) -> bool:
    if pod["metadata"].get("deletionTimestamp"):
        return False
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _sigkill_publisher(worker: RealKubeletNode) -> None:
    """SIGKILL the NRT publisher's processes on ``worker``, found by their command line
    (with a pattern the shell's own command line does not match); their containers stay
    dead until the kubelet is back and restarts them."""
    script = (
        'for f in /proc/[0-9]*/cmdline; do p=${f#/proc/}; p=${p%/cmdline}; '
        'if tr "\\0" " " <"$f" 2>/dev/null | grep -q "nrt[ ]publish"; then '
        'kill -9 "$p" && echo "$p"; fi; done'
    )  # fmt: skip
    worker.node_exec("sh", "-c", script)
