"""A real kubelet on profile nodes, in Kind: the oracle's kubelet side (I/O).

One Kind cluster with one or more real-kubelet workers (``fakenrt realnode render``).
Each scenario reconfigures a worker instead of making a new cluster: its pods are deleted,
the machine files are rewritten in place (the bind mounts show the new content), the
scenario's KubeletConfiguration is merged onto the one ``kubeadm join`` wrote, the kubelet
stops, the CPU and Memory Manager checkpoints are removed (a policy change needs it) and
it starts again; the fake device plugin Pod is recreated with the scenario's profile, and
for a node with DRA drivers the fake DRA kubelet plugin Pod (which publishes the node's
ResourceSlices; the DRA checkpoint, the previous claims and the node's slices are removed
first). Then the scenario's claims are created, and the pods one by one - with
``spec.nodeName``, or pinned by a node selector for the cluster's kube-scheduler to place
them and allocate their claims - each waiting for the kubelet's verdict (and, for a pod
with claims, for them to be prepared or for the kubelet's FailedPrepareDynamicResources
event); placements come from the podresources ``List`` of the worker's socket, read with
the exporter's client through a short symlink to it (Kind keeps ``/var`` of a node in a
Docker volume; a unix socket path must be short).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml

from exporter.kubeclient import KubeClient, path
from exporter.podresources_client import PodResourcesClient, PodResourcesError
from exporter.quantities import parse_decimal, parse_integer
from exporter.resources import PodResources
from fakenrt.commands.kubeaccess import kube_client
from fakenrt.deviceplugin.inventory import resources
from fakenrt.profiles import NodeProfile
from fakenrt.profiles.resources import node_allocatable
from fakenrt.realnode.kind import (
    DRA_PLUGIN,
    DRA_PLUGIN_LABEL,
    PLUGIN_NAMESPACE,
    PROFILES_CONFIGMAP,
    device_plugin_manifests,
    dra_plugin_manifests,
    kind_cluster,
    worker_name,
)
from fakenrt.realnode.kubeletconfig import MANAGED_FIELDS, kubelet_configuration
from fakenrt.realnode.machine import MOUNTS, machine_files
from fakenrt.realnode.oracle import kubelet_decided
from fakenrt.realnode.scenarios import NAMESPACE
from fakenrt.realnode.writing import render_node, write_files
from tests.kind.cluster import KIND_DIR, KindError, _lib_value, _run

T = TypeVar("T")
#: The project image kind/image.sh builds (``NUMA_TESTKIT_IMAGE``, as kind/lib.sh reads it).
IMAGE = os.environ.get("NUMA_TESTKIT_IMAGE", "numa-testkit/numa-testkit:local")
WAIT_S = 120.0


@dataclass(frozen=True)
class Waiting:
    """A probe's "not yet" with what it saw (named when the wait times out)."""

    seen: str


def wait_for(what: str, probe: Callable[[], T | Waiting | None], timeout: float = WAIT_S) -> T:
    """Polls ``probe`` until it returns something other than None or :class:`Waiting`."""
    deadline = time.monotonic() + timeout
    seen = ""
    while True:
        value = probe()
        if isinstance(value, Waiting):
            seen = value.seen
        elif value is not None:
            return value
        if time.monotonic() > deadline:
            last = f"; last seen: {seen}" if seen else ""
            raise KindError(f"timed out after {timeout:.0f} s waiting for {what}{last}")
        time.sleep(0.2)


def scenario_config(base: Mapping[str, Any], profile: NodeProfile) -> dict[str, Any]:
    """The join-time kubelet config with every profile-managed field from ``profile``."""
    kept = {k: v for k, v in base.items() if k not in MANAGED_FIELDS}
    return kept | kubelet_configuration(profile)


@dataclass
class RealKubeletNode:
    cluster: str
    kubeconfig: Path
    kubectl: Path
    kind: Path
    work_dir: Path
    node: str
    #: The kubelet config ``kubeadm join`` wrote.
    base_config: dict[str, Any]
    socket: Path
    #: The namespace of the scenarios' pods and claims on this worker (workers running
    #: scenarios side by side have one each).
    namespace: str = NAMESPACE
    _client: KubeClient | None = field(default=None, init=False, repr=False, compare=False)

    # -- commands ----------------------------------------------------------------------
    def kubectl_run(self, *args: str, stdin: str | None = None) -> str:
        return _run([str(self.kubectl), "--kubeconfig", str(self.kubeconfig), *args], stdin, 120)

    def kubectl_json(self, *args: str) -> Any:
        return json.loads(self.kubectl_run("get", *args, "-o", "json"))

    def api_get(self, *parts: str, **query: str) -> dict[str, Any]:
        """GET an API path through the Kubernetes client: the polls of a scenario run
        several times a second, where a kubectl process each would cost a core's tenth."""
        if self._client is None:
            self._client = kube_client(self.kubeconfig, component="numa-testkit-oracle")
        return self._client.get(path(*parts), **query)

    def close(self) -> None:
        """Close the Kubernetes client's connections (``api_get`` opens it again)."""
        client, self._client = self._client, None
        if client is not None:
            client.close()

    def node_exec(self, *command: str, stdin: str | None = None) -> str:
        flags = ["-i"] if stdin is not None else []
        return _run(["docker", "exec", *flags, self.node, *command], stdin, 120)

    # -- scenario set-up ---------------------------------------------------------------
    def configure(self, profile: NodeProfile, profile_text: str) -> None:
        """Make the worker's kubelet see ``profile`` with nothing on it."""
        self.delete_pods()
        for plugin in ("fakenrt-device-plugin", DRA_PLUGIN):
            self.kubectl_run(
                "-n", PLUGIN_NAMESPACE, "delete", "pod", "-l",
                f"{DRA_PLUGIN_LABEL}={plugin}",
                "--field-selector", f"spec.nodeName={self.node}", "--grace-period=0", "--force",
                "--ignore-not-found", "--wait=true",
            )  # fmt: skip
        self.delete_claims()
        files_root = self.work_dir / "nodes" / self.node
        for relative, _ in MOUNTS:
            target = files_root / relative
            if target.is_dir():
                for child in target.iterdir():
                    shutil.rmtree(child) if child.is_dir() else child.unlink()
        write_files(files_root, machine_files(profile))
        config = scenario_config(self.base_config, profile)
        before = self._kubelet_pid()
        # The checkpoints are removed only once the old kubelet has stopped: a running one
        # writes them again (removing a deleted pod's CPUs or memory, or on its reconcile),
        # and a new kubelet that finds the previous scenario's machine in them refuses to
        # start its CPU or Memory Manager and exits - systemd restarts it, and each short
        # life renews the node's lease, so the Node stays Ready with the old capacity.
        self.node_exec(
            "sh", "-c",
            "cat > /var/lib/kubelet/config.yaml && systemctl stop kubelet "
            "&& rm -f /var/lib/kubelet/cpu_manager_state "
            "/var/lib/kubelet/memory_manager_state /var/lib/kubelet/dra_manager_state "
            "/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint "
            "&& systemctl start kubelet",
            stdin=yaml.safe_dump(config),
        )  # fmt: skip
        # The new kubelet: a new process, its podresources socket, then a Node status of
        # the profile's.
        wait_for("the restarted kubelet", lambda: self._new_kubelet(before))
        wait_for("the podresources socket", self._listed)
        allocatable = node_allocatable(profile)
        expected = (str(len(profile.cpu_topology)), allocatable["cpu"], allocatable["memory"])
        try:
            wait_for(
                f"node {self.node} Ready with capacity / allocatable {expected}",
                lambda: self._ready_with(expected),
                # A restarted kubelet on a loaded machine may take minutes to post it.
                timeout=2 * WAIT_S,
            )
        except KindError as exc:
            raise KindError(f"{exc}\n{self._kubelet_diagnostics()}") from exc
        if resources(profile):
            docs = device_plugin_manifests(nodes=[profile], profiles_text=profile_text, image=IMAGE)
            for doc in docs:
                if doc["kind"] == "Pod":
                    # The worker keeps the label of the profile it was created with.
                    doc["spec"]["nodeSelector"] = {"kubernetes.io/hostname": self.node}
            self.kubectl_run("apply", "-f", "-", stdin=yaml.safe_dump_all(self._own_profiles(docs)))
            wanted = {name: str(len(_healthy(profile, name))) for name in resources(profile)}
            wait_for(f"devices {wanted} on {self.node}", lambda: self._has_devices(wanted))
        if profile.dra:
            self._start_dra_plugin(profile, profile_text)

    def _start_dra_plugin(self, profile: NodeProfile, profile_text: str) -> None:
        """The fake DRA kubelet plugin of ``profile`` on this worker, registered by its
        kubelet with every driver's slices published."""
        docs = dra_plugin_manifests(nodes=[profile], profiles_text=profile_text, image=IMAGE)
        name = ""
        for doc in docs:
            if doc["kind"] == "Pod":
                doc["spec"]["nodeSelector"] = {"kubernetes.io/hostname": self.node}
                doc["metadata"]["name"] = name = f"{DRA_PLUGIN}-{self.node}"[:63].rstrip("-.")
        manifests = yaml.safe_dump_all(self._own_profiles(docs))
        try:
            self.kubectl_run("apply", "-f", "-", stdin=manifests)
        except KindError as exc:
            # Workers configured in parallel apply the plugin's shared ServiceAccount and
            # RBAC: one creates them while the other's create fails; applied again, it
            # updates.
            if "AlreadyExists" not in str(exc):
                raise
            self.kubectl_run("apply", "-f", "-", stdin=manifests)
        drivers = [d.name for d in profile.dra]

        def registered() -> bool | None:
            try:
                logs = self.kubectl_run("-n", PLUGIN_NAMESPACE, "logs", name)
            except KindError:
                return None
            done = all(f"serving {d} (" in logs for d in drivers)
            return True if done else None

        wait_for(f"the DRA drivers {drivers} registered on {self.node}", registered)

    def _own_profiles(self, docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``docs`` with the profiles ConfigMap named after this worker, and its plugin
        Pods mounting that one: workers configured side by side with different profiles
        never read each other's."""
        name = f"{PROFILES_CONFIGMAP}-{self.node}"[:253]
        for doc in docs:
            if doc["kind"] == "ConfigMap" and doc["metadata"]["name"] == PROFILES_CONFIGMAP:
                doc["metadata"]["name"] = name
            if doc["kind"] == "Pod":
                for volume in doc["spec"].get("volumes", []):
                    if volume.get("configMap", {}).get("name") == PROFILES_CONFIGMAP:
                        volume["configMap"]["name"] = name
        return docs

    def delete_claims(self) -> None:
        """The oracle's claims and templates, and the ResourceSlices of this worker."""
        self.kubectl_run(
            "-n", self.namespace, "delete", "resourceclaims,resourceclaimtemplates", "--all",
            "--wait=true", "--timeout=120s",
        )  # fmt: skip
        self.kubectl_run(
            "delete", "resourceslices", "--field-selector", f"spec.nodeName={self.node}",
            "--ignore-not-found",
        )  # fmt: skip

    def _kubelet_diagnostics(self) -> str:
        """What the worker's kubelet did (its processes, the unit, its log's last lines),
        for a failed wait's message."""
        script = (
            "ps -eo pid,lstart,args | grep -v grep | grep kubelet; "
            "systemctl status kubelet --no-pager -n 0; "
            'echo "restarts by systemd: $(systemctl show kubelet -p NRestarts --value)"; '
            "echo '-- its errors:'; journalctl -u kubelet --no-pager -n 2000 -o short-precise "
            "| grep -E ' E[0-9]{4} ' | tail -n 30; "
            "echo '-- its last lines:'; journalctl -u kubelet --no-pager -n 30 -o short-precise; "
            "true"
        )
        try:
            return f"the worker's kubelet:\n{self.node_exec('sh', '-c', script)}"
        except KindError as exc:
            return f"the worker's kubelet could not be read: {exc}"

    def _kubelet_pid(self) -> str:
        return self.node_exec("systemctl", "show", "kubelet", "-p", "MainPID", "--value").strip()

    def _new_kubelet(self, before: str) -> bool | None:
        pid = self._kubelet_pid()
        return True if pid not in ("", "0", before) else None

    def _ready_with(self, expected: tuple[str, int, int]) -> bool | Waiting:
        """True once the Node is Ready with ``expected``; until then what it shows."""
        status = self.api_get("api", "v1", "nodes", self.node)["status"]
        ready = any(c["type"] == "Ready" and c["status"] == "True" for c in status["conditions"])
        got = (
            status["capacity"].get("cpu"),
            int(parse_decimal(status["allocatable"].get("cpu", "0"))),
            parse_integer(status["allocatable"].get("memory", "0")),
        )
        if ready and got == expected:
            return True
        return Waiting(f"Ready={ready}, capacity / allocatable {got}")

    def _has_devices(self, wanted: Mapping[str, str]) -> bool | None:
        """The kubelet's own view (GetAllocatableResources), not the Node object: a
        restarted kubelet's Node keeps the previous device capacity for a while."""
        client = PodResourcesClient(self.socket, timeout_s=5)
        try:
            devices = client.allocatable().devices
        except PodResourcesError:
            return None
        finally:
            client.close()
        counts: dict[str, int] = {}
        for d in devices:
            counts[d.resource_name] = counts.get(d.resource_name, 0) + len(d.device_ids)
        return True if all(str(counts.get(k, 0)) == v for k, v in wanted.items()) else None

    def _listed(self) -> tuple[PodResources, ...] | None:
        client = PodResourcesClient(self.socket, timeout_s=5)
        try:
            return client.list()
        except PodResourcesError:
            return None
        finally:
            client.close()

    def delete_pods(self) -> None:
        """The oracle's pods on this worker (in its namespace)."""
        self.kubectl_run(
            "-n", self.namespace, "delete", "pods",
            "--field-selector", f"spec.nodeName={self.node}",
            "--grace-period=0", "--force", "--wait=true",
        )  # fmt: skip

    # -- running a scenario ------------------------------------------------------------
    def run_pods(
        self,
        manifests: Sequence[Mapping[str, Any]],
        *,
        claims: Sequence[Mapping[str, Any]] = (),
        scheduled: frozenset[str] = frozenset(),
    ) -> dict[str, dict[str, Any]]:
        """Create ``claims``, then the pods in order on the worker; each waits for the
        kubelet's verdict (and, with claims, for them to be prepared or refused). Pods
        named in ``scheduled`` go through the cluster's kube-scheduler, pinned to the
        worker by a node selector; the others are bound with ``spec.nodeName``. Returns
        pod key -> the Pod as the API server has it then."""
        if claims:
            self.kubectl_run("create", "-f", "-", stdin=yaml.safe_dump_all(list(claims)))
        pods: dict[str, dict[str, Any]] = {}
        for manifest in manifests:
            doc = json.loads(json.dumps(manifest))
            name = doc["metadata"]["name"]
            if name in scheduled:
                doc["spec"]["nodeSelector"] = {"kubernetes.io/hostname": self.node}
            else:
                doc["spec"]["nodeName"] = self.node
            namespace = doc["metadata"].get("namespace", self.namespace)
            self.kubectl_run("create", "-f", "-", stdin=json.dumps(doc))
            with_claims = bool(doc["spec"].get("resourceClaims"))

            def decided(
                ns: str = namespace, n: str = name, claiming: bool = with_claims
            ) -> dict[str, Any] | None:
                pod = self.api_get("api", "v1", "namespaces", ns, "pods", n)
                status = pod.get("status", {})
                if not kubelet_decided(status):
                    return None
                # admitted with claims: they are prepared (it starts) or refused (an event)
                pending = claiming and status.get("phase") == "Pending"
                if pending and not self._prepare_failed(ns, n):
                    return None
                return pod

            pods[f"{namespace}/{name}"] = wait_for(f"the verdict on pod {name}", decided)
        return pods

    def _prepare_failed(self, namespace: str, pod: str) -> bool:
        events = self.api_get(
            "api", "v1", "namespaces", namespace, "events",
            fieldSelector=f"involvedObject.name={pod},reason=FailedPrepareDynamicResources",
        )  # fmt: skip
        return bool(events.get("items"))

    def claims(self) -> list[dict[str, Any]]:
        """The oracle's ResourceClaims as the API server has them (allocated by then)."""
        items: list[dict[str, Any]] = self.kubectl_json("-n", self.namespace, "resourceclaims")[
            "items"
        ]
        return items

    def listed(self) -> tuple[PodResources, ...]:
        return wait_for("podresources List", self._listed)


def _healthy(profile: NodeProfile, resource: str) -> list[str]:
    out: list[str] = []
    for zone in profile.zones:
        if resource in zone.devices:
            out.extend(zone.devices[resource].healthy)
    if resource in profile.devices:
        out.extend(profile.devices[resource].healthy)
    return out


def create(
    *, cluster: str, work_dir: Path, profiles: Sequence[NodeProfile]
) -> tuple[RealKubeletNode, ...]:
    """A Kind cluster with one real-kubelet worker per profile node, rendered from them (in
    order: Kind's ``<cluster>-worker``, ``-worker2``, ...)."""
    node_image = _run([str(KIND_DIR / "build-node-image.sh")], None, 7200).strip().splitlines()[-1]
    kind = Path(
        _run(["bash", "-c", f'source "{KIND_DIR}/lib.sh" && kind_binary'], None, 600).strip()
    )
    kubectl = Path(_lib_value("K8S_BIN_DIR")) / "kubectl"
    _run([str(KIND_DIR / "image.sh")], None, 1800)
    nodes_dir = work_dir / "nodes"
    names = [worker_name(cluster, i) for i in range(len(profiles))]
    # A worker's files live under its Kind node name; later scenarios rewrite them.
    for profile, node in zip(profiles, names, strict=True):
        render_node(profile, nodes_dir / node)
    config_path = nodes_dir / "kind-cluster.yaml"
    config = kind_cluster(
        cluster=cluster,
        nodes=[(p, nodes_dir / n) for p, n in zip(profiles, names, strict=True)],
    )
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    kubeconfig = work_dir / "kubeconfig"
    _run([str(kind), "delete", "cluster", "--name", cluster], None, 300)
    _run(
        [str(kind), "create", "cluster", "--name", cluster, "--image", node_image,
         "--config", str(config_path), "--kubeconfig", str(kubeconfig), "--wait", "0s"],
        None, 900,
    )  # fmt: skip
    _run([str(kind), "load", "docker-image", "--name", cluster, IMAGE], None, 600)
    nodes = []
    for index, node in enumerate(names):
        volume = json.loads(_run(["docker", "inspect", node], None, 60))[0]["Mounts"]
        var = next(m["Source"] for m in volume if m["Destination"] == "/var")
        socket = Path(f"/tmp/{cluster}-{index}-podresources.sock")
        socket.unlink(missing_ok=True)
        socket.symlink_to(f"{var}/lib/kubelet/pod-resources/kubelet.sock")
        real = RealKubeletNode(
            cluster=cluster,
            kubeconfig=kubeconfig,
            kubectl=kubectl,
            kind=kind,
            work_dir=work_dir,
            node=node,
            base_config={},
            socket=socket,
        )
        wait_for(f"the worker {node} registered", _registered(real), 300)
        nodes.append(real)
    wait_for("default ServiceAccount", lambda: True if _has_sa(nodes[0]) else None, 300)
    for real in nodes:
        real.base_config = yaml.safe_load(real.node_exec("cat", "/var/lib/kubelet/config.yaml"))
    return tuple(nodes)


def _registered(real: RealKubeletNode) -> Callable[[], bool | None]:
    return lambda: True if _exists(real) else None


def _exists(real: RealKubeletNode) -> bool:
    try:
        real.kubectl_run("get", "node", real.node)
    except KindError:
        return False
    return True


def _has_sa(real: RealKubeletNode) -> bool:
    try:
        real.kubectl_run("-n", "default", "get", "serviceaccount", "default")
    except KindError:
        return False
    return True


def delete(nodes: Sequence[RealKubeletNode]) -> None:
    """Delete the cluster of ``nodes`` (and their socket symlinks)."""
    for real in nodes:
        real.close()
        real.socket.unlink(missing_ok=True)
    subprocess.run(
        [str(nodes[0].kind), "delete", "cluster", "--name", nodes[0].cluster],
        capture_output=True,
        timeout=300,
        check=False,
    )


def delete_cluster(cluster: str) -> None:
    """Delete Kind cluster ``cluster`` by name (one whose creation failed half-way)."""
    kind = _run(["bash", "-c", f'source "{KIND_DIR}/lib.sh" && kind_binary'], None, 600).strip()
    subprocess.run(
        [kind, "delete", "cluster", "--name", cluster], capture_output=True, timeout=300,
        check=False,
    )  # fmt: skip
