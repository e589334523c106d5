"""The in-cluster backend of the e2e scenarios: the components deployed on Kind from the
manifests (``pytest --kind tests/e2e``, docs/e2e.md).

Per scenario, :func:`write_overlay` writes a kustomize overlay of
``manifests/overlays/kind-harness`` into a scratch directory: the scenario's nodes as the
profile ConfigMap, the controller's name and the scenario's controller flags, the
exporters ``fakenrt harness exporters`` generates for those nodes (in place of the
base's), the reference scheduler's mode (plugin arguments, scheduler name, node selector)
and the project image ``kind/up.sh`` loaded. :class:`KindDeployment` applies it with
kubectl, waits until every node is Ready with an NRT and every component is available,
and removes it afterwards (Deployments, then the fake nodes with their Leases and NRTs).

The controller is killed for real: SIGKILL to its process inside the Kind node (no
cleanup runs), its Deployment scaled to 0 and the pod deleted at once; it restarts when
the Deployment, scaled back to 1, creates a new pod. A scheduler under test other than
the reference scheduler runs as a local process with the cluster's admin kubeconfig.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from exporter.kubeclient import JSON_PATCH, KubeClient, path
from exporter.kubeerrors import NotFound, Transient
from fakenrt.controller.registration import remove_nodes
from fakenrt.nrt.render import NRT_GROUP, NRT_PLURAL, NRT_VERSION
from fakenrt.profiles import NodeProfile, load_profiles
from schedulers.adapter import Adapter
from tests.e2e.allocations import Allocations, recorded_allocations
from tests.e2e.deployment import (
    NUMA_EXPORTER,
    REPO,
    Topology,
    Workload,
    simulated_workload,
)
from tests.e2e.local_scheduler import LocalSchedulerRun
from tests.e2e.schedulers import CONTROLLER_LABEL, FAKENRT, SchedulerRun
from tests.kind.cluster import KindCluster, KindError

HARNESS_NAMESPACE = "numa-harness"
KIND_HARNESS = REPO / "manifests" / "overlays" / "kind-harness"
#: The image names the harness manifests use: the published one and kind-harness's.
#: kind-harness renames the first to numa-testkit/numa-testkit:local; that name too, so a
#: $NUMA_TESTKIT_IMAGE tag other than local is the one the pods run.
BASE_IMAGES = ("ghcr.io/numa-testkit/numa-testkit", "numa-testkit", "numa-testkit/numa-testkit")
CONTROLLER = "fakenrt-controller"
SCHEDULER = "fakenrt-scheduler"
_NAME_LABEL = "app.kubernetes.io/name"
_POLL_S = 0.5


def _deployment_patch(name: str, ops: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "target": {"kind": "Deployment", "name": name},
        "patch": yaml.safe_dump(ops, sort_keys=False),
    }


def _append_args(name: str, args: Iterable[str]) -> dict[str, Any]:
    """A patch appending ``args``, in order, to the first container of Deployment
    ``name`` (the commands take the last value of a repeated option)."""
    ops = [
        {"op": "add", "path": "/spec/template/spec/containers/0/args/-", "value": a} for a in args
    ]
    return _deployment_patch(name, ops)


def write_overlay(
    directory: Path,
    *,
    topology: Topology,
    controller_name: str,
    scheduler: Adapter,
    image: str,
) -> Path:
    """Write the scenario's overlay of kind-harness into ``directory``; return it."""
    directory.mkdir(parents=True, exist_ok=True)
    profile = directory / "profile.yaml"
    profile.write_text(yaml.safe_dump({"nodes": [dict(n) for n in topology.nodes]}))
    exporters = subprocess.run(
        [*shlex.split(FAKENRT), "harness", "exporters", "--profile", str(profile)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    if exporters.returncode != 0:
        raise AssertionError(f"fakenrt harness exporters: {exporters.stderr.strip()}")
    (directory / "exporters.yaml").write_text(exporters.stdout)
    # The base's exporters are for manifests/harness/profile.yaml's nodes: drop them.
    base_nodes = [p.name for p in load_profiles(REPO / "manifests" / "harness" / "profile.yaml")]
    patches: list[dict[str, Any]] = [
        {
            "patch": yaml.safe_dump(
                {
                    "$patch": "delete",
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "metadata": {"name": f"numa-exporter-{n}", "namespace": HARNESS_NAMESPACE},
                }
            )
        }
        for n in base_nodes
    ]
    patches.append(
        _append_args(
            CONTROLLER,
            [
                f"--controller-name={controller_name}",
                "--workers=4",
                *topology.controller_args,
            ],
        )
    )
    config_maps: list[dict[str, Any]] = [
        {
            "name": "fakenrt-profile",
            "namespace": HARNESS_NAMESPACE,
            "behavior": "replace",
            "files": ["profile.yaml"],
        }
    ]
    resources = [os.path.relpath(KIND_HARNESS, directory)]
    if topology.exporters:  # without: none at all (the base's deleted above)
        resources.append("exporters.yaml")
    if scheduler.in_cluster_args is not None:
        (directory / "scheduler-args.yaml").write_text(scheduler.in_cluster_args)
        config_maps.append(
            {
                "name": "fakenrt-scheduler",
                "namespace": HARNESS_NAMESPACE,
                "behavior": "merge",
                "files": ["args.yaml=scheduler-args.yaml"],
            }
        )
        patches.append(
            _append_args(
                SCHEDULER,
                [
                    f"--scheduler-name={scheduler.name_for(controller_name)}",
                    f"--node-selector={CONTROLLER_LABEL}={controller_name}",
                    "--period=0.5",
                ],
            )
        )
    else:  # the scheduler runs as local processes: no reference scheduler in the cluster
        patches.append(
            {
                "patch": yaml.safe_dump(
                    {
                        "$patch": "delete",
                        "apiVersion": "apps/v1",
                        "kind": "Deployment",
                        "metadata": {"name": SCHEDULER, "namespace": HARNESS_NAMESPACE},
                    }
                )
            }
        )
    # The image kind/up.sh loaded, never pulled (there is no registry).
    new_name, _, new_tag = image.rpartition(":")
    patches.append(
        {
            "target": {"kind": "Deployment"},
            "patch": yaml.safe_dump(
                [
                    {
                        "op": "replace",
                        "path": "/spec/template/spec/containers/0/imagePullPolicy",
                        "value": "Never",
                    }
                ]
            ),
        }
    )
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": resources,
        "configMapGenerator": config_maps,
        "patches": patches,
        "images": [{"name": n, "newName": new_name, "newTag": new_tag} for n in BASE_IMAGES],
    }
    (directory / "kustomization.yaml").write_text(yaml.safe_dump(kustomization, sort_keys=False))
    return directory


def install_crds(cluster: KindCluster) -> None:
    """The NRT CRD of manifests/crds, applied and Established."""
    cluster.kubectl_run("apply", "--server-side", "-f", str(REPO / "manifests" / "crds"))
    cluster.kubectl_run(
        "wait", "--for=condition=Established", "--timeout=60s", f"crd/{NRT_PLURAL}.{NRT_GROUP}"
    )


@dataclass
class KindDeployment(LocalSchedulerRun):
    """The scenario's components deployed in the Kind cluster from the manifests."""

    cluster: KindCluster
    kube: KubeClient
    topology: Topology
    scheduler: Adapter
    controller_name: str
    #: The project image kind/up.sh loaded into the node.
    image: str
    ready_timeout_s: float = 180.0
    profiles: tuple[NodeProfile, ...] = ()
    workdir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="e2e-kind-")))
    _killed_pods: list[str] = field(default_factory=list)
    _run: SchedulerRun | None = None

    def start(self) -> None:
        self.topology = self.topology.for_scheduler(self.scheduler)
        if self.topology.exporter != NUMA_EXPORTER:
            raise AssertionError(
                f"exporter {self.topology.exporter!r}: only the local-process backend runs "
                "another exporter (in-cluster, the production exporter runs, or none)"
            )
        self.profiles = self.topology.profiles()
        try:
            self._start()
        except BaseException:
            self.stop()
            raise

    def _start(self) -> None:
        if self.scheduler.in_cluster_args is None:
            self.run.install()  # its CRDs first: the controller may publish its objects
        overlay = write_overlay(
            self.workdir / "overlay",
            topology=self.topology,
            controller_name=self.controller_name,
            scheduler=self.scheduler,
            image=self.image,
        )
        self.cluster.kubectl_run("apply", "-k", str(overlay))
        self._wait_ready()
        if self.scheduler.in_cluster_args is None:
            self.run.start()

    # --- waiting -------------------------------------------------------------------

    def _wait_ready(self) -> None:
        """Until every harness Deployment is available and every node is Ready with its
        NRT."""
        deadline = time.monotonic() + self.ready_timeout_s
        waiting: list[str] = ["(not asked yet)"]
        while time.monotonic() < deadline:
            with contextlib.suppress(Transient):
                waiting = self._not_ready()
            if not waiting:
                return
            time.sleep(_POLL_S)
        raise AssertionError(f"not ready after {self.ready_timeout_s}s: {waiting}\n"
                             + self.diagnostics())  # fmt: skip

    def _not_ready(self) -> list[str]:
        deployments, _ = self.kube.list_all(
            path("apis", "apps", "v1", "namespaces", HARNESS_NAMESPACE, "deployments"),
            what="list harness deployments",
        )
        waiting = [
            f"deployment {d['metadata']['name']}"
            for d in deployments
            if (d.get("status") or {}).get("availableReplicas", 0) < d["spec"].get("replicas", 1)
            or (d.get("status") or {}).get("observedGeneration", 0)
            < d["metadata"].get("generation", 0)
        ]
        for profile in self.profiles:
            if not self._node_ready(profile.name):
                waiting.append(f"node {profile.name}")
        return waiting

    def _node_ready(self, node: str) -> bool:
        try:
            self.kube.get(path("apis", NRT_GROUP, NRT_VERSION, NRT_PLURAL, node), what="get NRT")
            got = self.kube.get(path("api", "v1", "nodes", node), what="get node")
        except NotFound:
            return False
        conditions = (got.get("status") or {}).get("conditions") or []
        return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)

    def _pods(self, name: str) -> list[dict[str, Any]]:
        items, _ = self.kube.list_all(
            path("api", "v1", "namespaces", HARNESS_NAMESPACE, "pods"),
            what="list harness pods",
            labelSelector=f"{_NAME_LABEL}={name}",
        )
        return items

    # --- the controller's crash and restart ---------------------------------------

    def _scale(self, name: str, replicas: int) -> None:
        self.kube.patch(
            path("apis", "apps", "v1", "namespaces", HARNESS_NAMESPACE, "deployments", name),
            [{"op": "replace", "path": "/spec/replicas", "value": replicas}],
            content_type=JSON_PATCH,
            what=f"scale {name} to {replicas}",
        )

    def kill_controller(self) -> None:
        (pod,) = [p for p in self._pods(CONTROLLER) if not p["metadata"].get("deletionTimestamp")]
        uid = str(pod["metadata"]["uid"])
        self._sigkill_pod_processes(uid)
        # Nothing may start it again before restart_controller: no replica wanted, and
        # the pod object gone at once (grace 0).
        self._scale(CONTROLLER, 0)
        name = str(pod["metadata"]["name"])
        with contextlib.suppress(NotFound):
            self.kube.request(
                "DELETE",
                path("api", "v1", "namespaces", HARNESS_NAMESPACE, "pods", name),
                query={"gracePeriodSeconds": "0"},
                what=f"delete pod {name}",
            )
        self._killed_pods.append(name)

    def _sigkill_pod_processes(self, uid: str) -> None:
        """SIGKILL every process of the pod but its sandbox's pause process, from inside the
        Kind node (the processes of the pod are those whose cgroup path names its UID, in
        either the cgroupfs or the systemd driver's spelling)."""
        script = (
            'for f in /proc/[0-9]*/cgroup; do p=${f#/proc/}; p=${p%/cgroup}; '
            'if grep -qE "pod($1|$2)" "$f" 2>/dev/null '
            '&& ! tr "\\0" " " <"/proc/$p/cmdline" 2>/dev/null | grep -q "^/pause"; then '
            'kill -9 "$p" && echo "$p"; fi; done'
        )  # fmt: skip
        killed = self.cluster.node_exec(
            "sh", "-c", script, "sh", uid, uid.replace("-", "_"), timeout=60
        ).split()
        if not killed:
            raise AssertionError(f"no process of controller pod {uid} found in the Kind node")

    def restart_controller(self) -> None:
        self._scale(CONTROLLER, 1)
        deadline = time.monotonic() + self.ready_timeout_s
        while time.monotonic() < deadline:
            running = [
                p
                for p in self._pods(CONTROLLER)
                if p["metadata"]["name"] not in self._killed_pods
                and (p.get("status") or {}).get("phase") == "Running"
            ]
            if running:
                break
            time.sleep(_POLL_S)
        else:
            raise AssertionError("the controller did not come back\n" + self.diagnostics())
        self._wait_ready()

    # --- teardown and diagnostics --------------------------------------------------

    def stop(self) -> None:
        if self._run is not None:
            self._run.stop()
        with contextlib.suppress(NotFound):
            for kind in ("deployments", "configmaps"):
                items, _ = self.kube.list_all(_harness(kind), what=f"list harness {kind}")
                for item in items:
                    name = item["metadata"]["name"]
                    if kind == "configmaps" and name == "kube-root-ca.crt":
                        continue
                    with contextlib.suppress(NotFound):
                        self.kube.delete(
                            f"{_harness(kind)}/{name}", {"propagationPolicy": "Background"}
                        )
        self._wait_no_harness_pods()
        remove_nodes(self.kube, controller=self.controller_name)
        shutil.rmtree(self.workdir, ignore_errors=True)

    def _wait_no_harness_pods(self) -> None:
        """Until the harness's pods are gone (the next scenario's scheduler must be the only
        one of its name); their deletion is hurried along with a short grace period."""
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            items, _ = self.kube.list_all(_harness("pods"), what="list harness pods")
            if not items:
                return
            for item in items:
                if not item["metadata"].get("deletionTimestamp"):
                    with contextlib.suppress(NotFound):
                        self.kube.request(
                            "DELETE",
                            f"{_harness('pods')}/{item['metadata']['name']}",
                            query={"gracePeriodSeconds": "1"},
                            what="delete harness pod",
                        )
            time.sleep(_POLL_S)
        raise AssertionError("harness pods still there after 120 s\n" + self.diagnostics())

    def diagnostics(self) -> str:
        parts: list[str] = []
        try:
            pods, _ = self.kube.list_all(_harness("pods"), what="list harness pods")
        except (Transient, NotFound) as exc:
            return f"(cannot list the harness pods: {exc})"
        for pod in pods:
            name = pod["metadata"]["name"]
            phase = (pod.get("status") or {}).get("phase")
            try:
                log = self.cluster.kubectl_run(
                    "logs", "-n", HARNESS_NAMESPACE, name, "--tail=40", timeout=30
                )
            except KindError as exc:
                log = f"(no log: {exc})"
            parts.append(f"--- pod {name} ({phase}):\n{log}")
        if self._run is not None:
            parts.append(self._run.diagnostics())
        return "\n".join(parts)

    def node_name(self, profile_name: str) -> str:
        return profile_name

    def allocations(self, listed: Iterable[Mapping[str, Any]]) -> Allocations:
        return recorded_allocations(listed)

    def workload(self, run_duration: str | None) -> Workload:
        return simulated_workload(run_duration)


def _harness(kind: str) -> str:
    group = ("apis", "apps", "v1") if kind == "deployments" else ("api", "v1")
    return path(*group, "namespaces", HARNESS_NAMESPACE, kind)
