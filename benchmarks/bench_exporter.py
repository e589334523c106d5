"""Benchmark of a real ``numa-exporter run`` process on one GPU node, side by side with KAI's
Go exporter (``numa-placement-exporter``) when ``NPE_BIN`` names its binary.

The node: 256 CPUs, 8 NUMA zones, 8 GPUs, the Memory Manager's static policy, and 110
Guaranteed pods, every one holding exclusive resources:

* 8 GPU pods: 4 CPUs + 1 GPU + 16Gi, all in one zone;
* 102 pods of 2 CPUs + 4Gi: every third with its memory block over two zones, every
  tenth also with 2Gi of hugepages-1Gi, six with a second container (1 CPU + 1Gi).

Each exporter runs as its own process against the suite's real kube-apiserver + etcd and a
fake podresources server on a unix socket, one after the other on new pods of the same
scenario, each polling every second. ``numa-exporter`` is started as the DaemonSet's image
starts it (``kind/image.sh``, ``Dockerfile``): a console script ``#!<python> -S`` whose
modules come from ``PYTHONPATH`` (here the checkout and this interpreter's site-packages,
byte-compiled ahead as the image's are), ``PYTHONDONTWRITEBYTECODE=1``. KAI's exporter is
started with the arguments its operator gives it (the socket, the sysfs root, the poll
interval; its default logging). Both take their API credentials as a DaemonSet pod does, in
cluster: ``KUBERNETES_SERVICE_HOST``/``_PORT`` and the ServiceAccount's token and CA under
``/var/run/secrets/kubernetes.io/serviceaccount``, put there in a private mount namespace
of the process (``unshare``; as root - otherwise, or with ``--kubeconfig-credentials``,
a kubeconfig naming the same token file and CA, which brings the library's kubeconfig
loader into numa-exporter's process: RSS is then reported as such). CPU time comes from
``/proc/<pid>/stat`` (every thread) and schedstat, RSS from ``/proc/<pid>/status``, API
writes from a watch of the pods. Printed, per exporter, one line per figure with its
target, then the two side by side (issue 21's targets: steady CPU per pass <= 1.0 ms and
below the Go exporter's, RSS <= 64 MiB, start to first annotation <= 0.5 s, no growth over
churn):

* start: time from the process starting to the first and the last of the 110 pods
  annotated, and the process's CPU time until the first and until the last;
* steady state over ``--steady-seconds`` (>= 60): CPU per pass, API writes, RSS; beside
  it, the library's floor: a process making only the exporter's List call once a second
  (its client, grpcio), and numa-exporter's own share above it;
* the same with the pods listed in a new order on every List (as the kubelet may);
* a burst: 110 new pods listed by the kubelet, Running 3 s later, CPU from before they
  are listed until all are annotated;
* pod annotatable -> annotated: from the moment the exporter's rule allows it (numa-exporter:
  the kubelet lists the pod, then it turns Running; KAI's: the kubelet lists it);
* churn for ``--churn-seconds`` (10 pods replaced per second), RSS every interval;
* numa-exporter's runtime dependencies: CPU and resident memory of each one's import in a
  fresh interpreter started as the exporter is, and its installed size.

Run: .venv/bin/python benchmarks/bench_exporter.py [--churn-seconds 3600]
     NPE_BIN=~/.cache/numa-testkit/kai/<build>/numa-placement-exporter \\
         .venv/bin/python benchmarks/bench_exporter.py   (KAI's exporter beside it; the
         binary is built by schedulers/kai/build.sh)
     .venv/bin/python benchmarks/bench_exporter.py --startup-only 10   (start-up figures of
     10 fresh processes of each exporter, taken in turns, each on 110 new pods)
     .venv/bin/python benchmarks/bench_exporter.py --dependencies-only   (the footprint of
     each dependency, no control plane)
"""

from __future__ import annotations

import argparse
import functools
import importlib.metadata
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from exporter.annotations import OBSERVED_PLACEMENT
from exporter.kubeclient import MERGE_PATCH, KubeClient, path
from exporter.kubeerrors import ApiError
from exporter.resources import (
    AllocatableResources,
    ContainerResources,
    DeviceAssignment,
    MemoryBlock,
    PodResources,
)
from exporter.sysfs import write_fixture
from tests.controlplane.cluster import ControlPlane, binaries_dir
from tests.controlplane.helpers import admin_client, create_fake_node, ensure_namespace
from tests.exporter.fake_podresources import FakePodResources
from tests.exporter.kube_helpers import exporter_kube

T = TypeVar("T")

CPUS, ZONES, GPUS, PODS = 256, 8, 8, 110
PER_ZONE = CPUS // ZONES
GI = 1024**3
NODE = "bench-node"
NAMESPACE = "bench"
GPU = "nvidia.com/gpu"
#: numa-exporter's runtime dependencies: (distribution, the modules the daemon imports of it,
#: the name shown); kubernetes: its parts the daemon imports in-cluster (exporter.kubeparts)
DEPENDENCIES: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("grpcio", ("grpc",), "grpcio (grpc)"),
    ("protobuf", ("protos.podresources.v1.api_pb2",), "protobuf (the podresources messages)"),
    ("prometheus-client", ("prometheus_client",), "prometheus-client"),
    ("kubernetes", ("kubernetes.client.rest", "kubernetes.config.incluster_config",
                    "kubernetes.utils.quantity"), "kubernetes (its parts, with urllib3)"),
    ("kubernetes", ("kubernetes",), "  the whole package (import kubernetes)"),
    ("PyYAML", ("yaml",), "PyYAML (a YAML kubeconfig only)"),
)  # fmt: skip
#: the imports of argv[1] (comma-separated) in a fresh interpreter set up as the console
#: script sets it up, after the modules of argv[2:] (not counted): CPU seconds and resident
#: KiB they added
IMPORT_PROBE = """
import sys, time
from exporter import kubeparts
modules = sys.argv[1].split(",")
if modules != ["kubernetes"]:  # the whole package as an ordinary program imports it
    kubeparts.import_parts_only()
for name in sys.argv[2:]:
    __import__(name)
def rss():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
rss0, cpu0 = rss(), time.process_time()
for name in modules:
    __import__(name)
print(time.process_time() - cpu0, rss() - rss0)
"""
#: The library's floor under a steady pass: a fresh interpreter started as the exporter is,
#: making the exporter's List call (its client, its gRPC settings) once a second and nothing
#: else - what grpcio costs per pass before any of numa-exporter's own work.
GRPC_FLOOR_PROBE = """
import sys, time
from pathlib import Path
from exporter.podresources_settings import configure_grpc_core
configure_grpc_core()
from exporter.podresources_client import PodResourcesClient
client = PodResourcesClient(Path(sys.argv[1]))
while True:
    client.list_raw()
    time.sleep(1 - time.monotonic() % 1)
"""
#: the standard-library modules the daemon imports, one name a line
STDLIB_PROBE = """
import sys
from exporter import kubeparts
kubeparts.import_parts_only()
import exporter.daemon
print("\\n".join(sorted(
    name for name in sys.modules
    if name.partition(".")[0] in sys.stdlib_module_names and name != "__main__"
)))
"""

Limits = dict[str, str]


class Node:
    """Hands out exclusive CPUs per zone, like the kubelet's CPU manager (no reuse
    needed: the benchmark's pods never exceed the node)."""

    def __init__(self) -> None:
        self.free = {z: list(range(z * PER_ZONE, (z + 1) * PER_ZONE)) for z in range(ZONES)}

    def take(self, zone: int, n: int) -> tuple[int, ...]:
        cpus, self.free[zone] = self.free[zone][:n], self.free[zone][n:]
        return tuple(cpus)

    def give(self, report: PodResources) -> None:
        for container in report.containers:
            for cpu in container.cpu_ids:
                self.free[cpu // PER_ZONE].append(cpu)


def make_pod(node: Node, index: int, name: str) -> tuple[PodResources, dict[str, Limits]]:
    """Pod ``index`` of the scenario: its podresources report and its containers' limits."""
    if index < GPUS:
        zone = index
        main = ContainerResources(
            "main",
            cpu_ids=node.take(zone, 4),
            devices=(DeviceAssignment(GPU, (f"GPU-{zone}",), (zone,)),),
            memory=(MemoryBlock("memory", 16 * GI, (zone,)),),
        )
        return PodResources(NAMESPACE, name, (main,)), {
            "main": {"cpu": "4", "memory": "16Gi", GPU: "1"}
        }
    i = index - GPUS
    zone = max(range(ZONES), key=lambda z: len(node.free[z]))
    nodes = (zone, (zone + 1) % ZONES) if i % 3 == 0 else (zone,)
    memory = [MemoryBlock("memory", 4 * GI, nodes)]
    limits: dict[str, Limits] = {"main": {"cpu": "2", "memory": "4Gi"}}
    if i % 10 == 0:
        memory.append(MemoryBlock("hugepages-1Gi", 2 * GI, (zone,)))
        limits["main"]["hugepages-1Gi"] = "2Gi"
    containers = [ContainerResources("main", cpu_ids=node.take(zone, 2), memory=tuple(memory))]
    if i % 17 == 0:  # six of the 102
        containers.append(
            ContainerResources(
                "sidecar",
                cpu_ids=node.take(zone, 1),
                memory=(MemoryBlock("memory", GI, (zone,)),),
            )
        )
        limits["sidecar"] = {"cpu": "1", "memory": "1Gi"}
    return PodResources(NAMESPACE, name, tuple(containers)), limits


ALLOCATABLE = AllocatableResources(
    cpu_ids=tuple(range(CPUS)),
    devices=tuple(DeviceAssignment(GPU, (f"GPU-{g}",), (g,)) for g in range(GPUS)),
    memory=tuple(MemoryBlock("memory", 120 * GI, (z,)) for z in range(ZONES))
    + tuple(MemoryBlock("hugepages-1Gi", 8 * GI, (z,)) for z in range(ZONES)),
)


# -- the API ------------------------------------------------------------------------------
def pods_path(*rest: str) -> str:
    return path("api", "v1", "namespaces", NAMESPACE, "pods", *rest)


def create_pod(kube: KubeClient, name: str, limits: dict[str, Limits]) -> None:
    containers = [
        {"name": c, "image": "registry.k8s.io/pause:3.10", "resources": {"limits": lim}}
        for c, lim in limits.items()
    ]
    body = {"metadata": {"name": name}, "spec": {"nodeName": NODE, "containers": containers}}
    kube.create(pods_path(), body)


def set_running(kube: KubeClient, name: str) -> None:
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    kube.patch(
        pods_path(name, "status"),
        {"status": {"phase": "Running", "startTime": now}},
        content_type=MERGE_PATCH,
    )


def delete_pod(kube: KubeClient, name: str) -> None:
    kube.delete(pods_path(name), {"gracePeriodSeconds": 0})


def renew_node_lease(kube: KubeClient) -> None:
    """Renew the node's Lease in ``kube-node-lease`` every 10 s, as its kubelet does
    (the node lifecycle controller's heartbeat; 40 s without one marks the node Unknown)."""
    leases = path("apis", "coordination.k8s.io", "v1", "namespaces", "kube-node-lease", "leases")
    created = False
    while True:
        now = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
        spec = {"holderIdentity": NODE, "leaseDurationSeconds": 40, "renewTime": now}
        try:
            if created:
                kube.patch(f"{leases}/{NODE}", {"spec": spec}, content_type=MERGE_PATCH)
            else:
                kube.create(leases, {"metadata": {"name": NODE}, "spec": spec})
                created = True
        except ApiError:
            pass  # renewed on the next round (or the control plane is gone)
        time.sleep(10)


class Watcher:
    """Records when each pod of the namespace is first seen carrying its annotation, and
    counts the namespace's pod events (every write to a pod is one)."""

    def __init__(self, kube: KubeClient) -> None:
        self.kube = kube
        self.annotated: dict[str, float] = {}
        self.events = 0
        #: called (in the watch's thread) when the first pod is seen annotated after
        #: ``expect_first``: the moment to read the exporter's CPU
        self._on_first: Callable[[], None] | None = None
        self.lock = threading.Lock()
        threading.Thread(target=self._run, daemon=True).start()

    def expect_first(self, callback: Callable[[], None]) -> None:
        with self.lock:
            self._on_first = callback

    def _run(self) -> None:
        version = ""
        while True:
            try:
                for event in self.kube.watch(pods_path(), resource_version=version, timeout_s=300):
                    obj: dict[str, Any] = event.get("object") or {}
                    meta = obj.get("metadata") or {}
                    version = str(meta.get("resourceVersion") or version)
                    if event.get("type") == "BOOKMARK":
                        continue
                    with self.lock:
                        self.events += 1
                        if OBSERVED_PLACEMENT in (meta.get("annotations") or {}):
                            name = str(meta.get("name"))
                            if name not in self.annotated:
                                self.annotated[name] = time.monotonic()
                                first, self._on_first = self._on_first, None
                                if first is not None:
                                    first()
            except ApiError:
                return  # the control plane is gone: the benchmark is over

    def times(self, names: list[str]) -> list[float] | None:
        with self.lock:
            if all(n in self.annotated for n in names):
                return [self.annotated[n] for n in names]
        return None


# -- the process --------------------------------------------------------------------------
def proc_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_cpu_ns(pid: int) -> int:
    """The same to the nanosecond (scheduler statistics of every live thread): the
    clock-tick figure above moves in 10 ms steps."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, IndexError, ValueError):
            continue  # a thread that just ended
    return total


def threads_cpu_ns(pid: int) -> dict[str, int]:
    """Thread name (``comm``: grpc names its threads, Python's keep the process's name)
    -> CPU nanoseconds of the live threads of that name."""
    out: dict[str, int] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            name = (task / "comm").read_text().strip()
            out[name] = out.get(name, 0) + int((task / "schedstat").read_text().split()[0])
        except (OSError, IndexError, ValueError):
            continue  # a thread that just ended
    return out


def proc_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def scrape(port: int) -> dict[str, float]:
    """``name{labels}`` -> value from /metrics (the text format; no comments)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
        text = resp.read().decode()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.rpartition(" ")
            out[key] = float(value)
    return out


PASSES = "numa_exporter_reconcile_duration_seconds_count"


def wait(condition: Callable[[], T | None], timeout_s: float, what: str, step: float = 0.002) -> T:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(step)
    raise SystemExit(f"benchmark: timed out waiting for {what}")


def line(figure: str, value: str, target: str, ok: bool | None) -> None:
    verdict = "" if ok is None else ("  OK" if ok else "  MISSED")
    print(f"  {figure:<52} {value:>16}   target {target}{verdict}")


def load() -> float:
    return os.getloadavg()[0]


@dataclass(frozen=True)
class Exporter:
    """An exporter under test: its name, and whether it serves numa-exporter's /metrics
    (its pass counter; KAI's passes on a ticker: one a poll interval)."""

    name: str
    go: bool = False


NUMA_EXPORTER = Exporter("numa-exporter")
GO_EXPORTER = Exporter("KAI numa-placement-exporter", go=True)

#: figure key -> (label, unit format, target text, verdict on (ours, Go's) or None)
Verdict = Callable[[float, float | None], bool] | None
FIGURES: dict[str, tuple[str, str, str, Verdict]] = {
    "first_s": ("start -> first pod annotated (wall)", "{:.3f} s", "<= 0.5 s",
                lambda v, _: v <= 0.5),
    "first_cpu_s": ("  process CPU until then", "{:.3f} s", "(an idle machine's wall)", None),
    "all_s": ("start -> all 110 annotated (wall)", "{:.3f} s", "(reported)", None),
    "start_cpu_s": ("  process CPU until then", "{:.3f} s", "(reported)", None),
    "pass_ms": ("steady CPU per 1 s pass (/proc/<pid>/stat)", "{:.2f} ms",
                "<= 1.0 ms and < Go's", lambda v, go: v <= 1.0 and (go is None or v < go)),
    "pass_ns_ms": ("  the same from schedstat (ns resolution)", "{:.3f} ms",
                   "<= 1.0 ms and < Go's", lambda v, go: v <= 1.0 and (go is None or v < go)),
    "floor_ms": ("  grpcio's List call alone, once a second (schedstat)", "{:.3f} ms",
                 "(the library's floor)", None),
    "own_ms": ("  numa-exporter's own share (pass - floor)", "{:.3f} ms", "(reported)", None),
    "writes": ("API writes in steady state", "{:.0f}", "0", lambda v, _: v == 0),
    "rss_mib": ("RSS in steady state", "{:.1f} MiB", "<= 64 MiB", lambda v, _: v <= 64),
    "shuffled_ms": ("steady, pods in a new order every List (schedstat)", "{:.3f} ms",
                    "<= 1.0 ms", lambda v, _: v <= 1.0),
    "burst_cpu_s": ("burst: 110 new pods listed, Running, CPU to annotated", "{:.3f} s",
                    "(reported)", None),
    "lag_mean_s": ("pod annotatable -> annotated, mean", "{:.3f} s", "< 0.45 s",
                   lambda v, _: v < 0.45),
    "lag_max_s": ("  max", "{:.3f} s", "(reported)", None),
    "churn_mib": ("RSS growth over churn, first to last sample", "{:+.1f} MiB",
                  "no growth (< 1 MiB)", lambda v, _: v < 1.0),
}  # fmt: skip


def verdict(key: str, value: float, go: float | None) -> bool | None:
    judge = FIGURES[key][3]
    return None if judge is None else judge(value, go)


def print_figure(key: str, value: float, go: float | None = None) -> None:
    label, unit, target, _ = FIGURES[key]
    line(label, unit.format(value), target, verdict(key, value, go))


class Bench:
    def __init__(self, cp: ControlPlane, work: Path, args: argparse.Namespace) -> None:
        self.args = args
        self.kube = exporter_kube(cp)
        ensure_namespace(admin_client(cp), NAMESPACE)  # its ServiceAccount from the kcm
        # the node, Ready and its kubelet's Lease renewed: otherwise the controller-manager's
        # pod GC deletes the pods bound to a node that does not exist, and its node
        # lifecycle controller marks them not ready once the node's heartbeat is missing
        # (pod writes that are no exporter's)
        create_fake_node(admin_client(cp), NODE)
        threading.Thread(target=renew_node_lease, args=(exporter_kube(cp),), daemon=True).start()
        self.node = Node()
        self.sysfs = work / "sys"
        write_fixture(
            self.sysfs, {z: f"{z * PER_ZONE}-{(z + 1) * PER_ZONE - 1}" for z in range(ZONES)}
        )
        self.fake = FakePodResources(work / "kubelet.sock", allocatable=ALLOCATABLE).start()
        self.reports: dict[str, PodResources] = {}
        self.serial = 0
        self.cp = cp
        self.watcher = Watcher(exporter_kube(cp))
        self.port = 18000 + random.Random().randrange(2000)
        self.proc: subprocess.Popen[bytes] | None = None
        self.by_thread: dict[str, float] = {}
        self.script, self.env = self._image_like_install(work)
        self.secrets = self._service_account(work)
        self.kubeconfig = self._kubeconfig(work)
        self.in_cluster = not args.kubeconfig_credentials and can_fake_in_cluster()

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def new_pods(self, count: int, *, running: bool) -> list[str]:
        """Create ``count`` pods of the scenario (in the API and listed by the kubelet)."""
        names = []
        for _ in range(count):
            index = self.serial % PODS
            name = f"pod-{self.serial}"
            self.serial += 1
            report, limits = make_pod(self.node, index, name)
            create_pod(self.kube, name, limits)
            self.reports[name] = report
            names.append(name)
        self.fake.set_pods(self.reports.values())
        if running:
            for name in names:
                set_running(self.kube, name)
        return names

    def remove_pods(self, names: list[str]) -> None:
        for name in names:
            self.node.give(self.reports.pop(name))
        self.fake.set_pods(self.reports.values())
        for name in names:
            delete_pod(self.kube, name)

    def _image_like_install(self, work: Path) -> tuple[Path, dict[str, str]]:
        """The console script and environment of the image (kind/image.sh, Dockerfile):
        the script pip writes, its interpreter line ``#!<python> -S``, the modules on
        ``PYTHONPATH`` (the image: its site directory; here the checkout, then the
        dependencies' directory as a plain path entry, no .pth files run)."""
        script = work / "bin" / "numa-exporter"
        script.parent.mkdir()
        script.write_text(
            f"#!{image_python()} -S\nimport sys\nfrom exporter.cli import main\n"
            "if __name__ == '__main__':\n    sys.exit(main())\n"
        )
        script.chmod(0o755)
        env = dict(
            os.environ,
            PYTHONPATH=f"{REPO}:{sysconfig.get_paths()['purelib']}",
            PYTHONDONTWRITEBYTECODE="1",
            PYTHONUNBUFFERED="1",
        )
        env.pop("KUBECONFIG", None)  # both exporters would take it over in-cluster
        return script, env

    def _service_account(self, work: Path) -> Path:
        """A ServiceAccount's token and CA, as the kubelet mounts them into a pod."""
        secrets = work / "serviceaccount"
        secrets.mkdir()
        (secrets / "token").write_text(self.cp.admin_token)
        shutil.copy(self.cp.ca_file, secrets / "ca.crt")
        return secrets

    def _kubeconfig(self, work: Path) -> Path:
        """The same credentials named by a kubeconfig (the token file is read again every
        minute, as in-cluster)."""
        doc = {
            "apiVersion": "v1", "kind": "Config", "current-context": "bench",
            "contexts": [{"name": "bench", "context": {"cluster": "bench", "user": "bench"}}],
            "clusters": [{"name": "bench", "cluster": {
                "server": self.cp.server, "certificate-authority": str(self.secrets / "ca.crt")}}],
            "users": [{"name": "bench", "user": {"tokenFile": str(self.secrets / "token")}}],
        }  # fmt: skip
        path = work / "kubeconfig.json"
        path.write_text(json.dumps(doc))
        return path

    def command(self, exporter: Exporter, *, in_cluster: bool) -> list[str]:
        """The exporter's command line (``--exporter``: another install's numa-exporter)."""
        where = ["--node-name", NODE, "--podresources-socket", str(self.fake.socket_path),
                 "--sysfs-root", str(self.sysfs)]  # fmt: skip
        credentials = [] if in_cluster else ["--kubeconfig", str(self.kubeconfig)]
        if exporter.go:
            return [self.args.npe_bin, *where, "--poll-interval", "1s", *credentials]
        return [self.args.exporter or str(self.script), "run", *where, "--poll-interval", "1",
                "--metrics-bind-address", f"127.0.0.1:{self.port}", *credentials]  # fmt: skip

    def launch(self, exporter: Exporter, *, in_cluster: bool | None = None) -> float:
        """Start the exporter; its start time (monotonic)."""
        in_cluster = self.in_cluster if in_cluster is None else in_cluster
        # byte-compiled, as pip leaves an installed package (the image); a checkout run
        # with PYTHONDONTWRITEBYTECODE would compile every module at every start
        subprocess.run(
            [sys.executable, "-m", "compileall", "-q", str(REPO / "exporter")], check=True
        )
        command = self.command(exporter, in_cluster=in_cluster)
        env = dict(self.env)
        if in_cluster:
            host, _, port = self.cp.server.removeprefix("https://").rpartition(":")
            env.update(KUBERNETES_SERVICE_HOST=host, KUBERNETES_SERVICE_PORT=port)
            command = [*IN_CLUSTER_WRAPPER, str(self.secrets), *command]
        started = time.monotonic()
        self.proc = subprocess.Popen(command, stderr=subprocess.DEVNULL, env=env)
        return started

    def start(self, exporter: Exporter, names: list[str]) -> dict[str, float]:
        """Start the exporter on ``names`` (none annotated yet): seconds from the process
        start to the first and the last annotation seen, its CPU until each (schedstat:
        ns resolution, live threads; read the moment the watch sees the first)."""
        first_cpu: list[float] = []
        self.watcher.expect_first(lambda: first_cpu.append(proc_cpu_ns(self.pid) / 1e9))
        started = self.launch(exporter)
        times = wait(lambda: self.watcher.times(names), 60, "every pod annotated")
        return {
            "first_s": min(times) - started,
            "first_cpu_s": first_cpu[0] if first_cpu else float("nan"),
            "all_s": max(times) - started,
            "start_cpu_s": proc_cpu_ns(self.pid) / 1e9,
        }

    def passes(self, exporter: Exporter) -> Callable[[], float]:
        """A counter of passes from now: numa-exporter's own, KAI's one per second."""
        if exporter.go:
            t0 = time.monotonic()
            return lambda: time.monotonic() - t0
        m0 = scrape(self.port)[PASSES]
        return lambda: scrape(self.port)[PASSES] - m0

    def steady(self, exporter: Exporter, seconds: float) -> tuple[float, float, float, float]:
        """(ms CPU per pass from /proc/<pid>/stat, the same from schedstat, pod writes,
        RSS MiB) over ``seconds``; ``self.by_thread``: ms per pass by thread name."""
        counter = self.passes(exporter)
        cpu0, ns0, threads0 = proc_cpu_s(self.pid), proc_cpu_ns(self.pid), threads_cpu_ns(self.pid)
        with self.watcher.lock:
            events0 = self.watcher.events
        time.sleep(seconds)
        threads1, ns1, cpu1 = threads_cpu_ns(self.pid), proc_cpu_ns(self.pid), proc_cpu_s(self.pid)
        passes = max(counter(), 1.0)
        with self.watcher.lock:
            writes = self.watcher.events - events0
        self.by_thread = {
            name: (ns - threads0.get(name, 0)) / passes / 1e6 for name, ns in threads1.items()
        }
        return (
            (cpu1 - cpu0) / passes * 1e3,
            (ns1 - ns0) / passes / 1e6,
            writes,
            proc_rss_mib(self.pid),
        )

    def grpc_floor(self, seconds: float) -> float:
        """CPU ms per call of :data:`GRPC_FLOOR_PROBE` (one call at every whole second)
        against the same podresources server listing the same 110 pods, over ``seconds``,
        beside the exporter under test."""
        probe = subprocess.Popen(
            [image_python(), "-S", "-c", GRPC_FLOOR_PROBE, str(self.fake.socket_path)],
            env=self.env,
            stderr=subprocess.DEVNULL,
        )
        try:
            time.sleep(3)  # started, connected, past its first calls
            ns0 = proc_cpu_ns(probe.pid)
            time.sleep(seconds)
            ns1 = proc_cpu_ns(probe.pid)
        finally:
            probe.terminate()
            probe.wait(timeout=30)
        return (ns1 - ns0) / round(seconds) / 1e6

    def measure(self, exporter: Exporter) -> dict[str, float]:
        """Every figure of one exporter, printed as it is taken; the exporter is stopped
        and its pods removed at the end."""
        args = self.args
        credentials = "in-cluster" if self.in_cluster else "a kubeconfig"
        print(f"{exporter.name} ({' '.join(self.command(exporter, in_cluster=self.in_cluster)[:1])}"
              f"; credentials: {credentials}):")  # fmt: skip
        names = self.new_pods(PODS, running=True)
        time.sleep(1)  # the API server settles after 220 writes
        out: dict[str, float] = {"load_start": load()}
        out |= self.start(exporter, names)
        for key in ("first_s", "first_cpu_s", "all_s", "start_cpu_s"):
            print_figure(key, out[key])
        print(f"    (load {out['load_start']:.1f})")

        time.sleep(3)
        out["load_steady"] = load()
        out["pass_ms"], out["pass_ns_ms"], out["writes"], out["rss_mib"] = self.steady(
            exporter, args.steady_seconds
        )
        for key in ("pass_ms", "pass_ns_ms"):
            print_figure(key, out[key])
        if not exporter.go:
            out["floor_ms"] = self.grpc_floor(args.steady_seconds)
            out["own_ms"] = out["pass_ns_ms"] - out["floor_ms"]
            print_figure("floor_ms", out["floor_ms"])
            print_figure("own_ms", out["own_ms"])
        for key in ("writes", "rss_mib"):
            print_figure(key, out[key])
        shares = ", ".join(
            f"{name} {ms:.3f} ms"
            for name, ms in sorted(self.by_thread.items(), key=lambda x: -x[1])
            if ms >= 0.0005
        )
        print(f"    by thread (schedstat; Python's threads carry the process's name): {shares}")
        print(f"    (load {out['load_steady']:.1f}, {args.steady_seconds:.0f} s)")
        self.fake.shuffle = True
        _, out["shuffled_ms"], _, _ = self.steady(exporter, min(args.steady_seconds, 30))
        self.fake.shuffle = False
        print_figure("shuffled_ms", out["shuffled_ms"])

        # a burst of 110 new pods (KAI's exporter annotates a pod once the kubelet lists
        # it, numa-exporter once it runs: the CPU is counted from before they are listed,
        # the 3 s between included)
        self.remove_pods(names)
        cpu0 = proc_cpu_ns(self.pid)
        names = self.new_pods(PODS, running=False)
        time.sleep(3)
        for name in names:
            set_running(self.kube, name)
        wait(lambda: self.watcher.times(names), 60, "the burst annotated")
        out["burst_cpu_s"] = (proc_cpu_ns(self.pid) - cpu0) / 1e9
        print_figure("burst_cpu_s", out["burst_cpu_s"])

        # admitted -> annotated: from the moment the exporter's rule allows it (KAI's: the
        # kubelet lists the pod; numa-exporter's: listed, then Running)
        lags = []
        for _ in range(args.latency_pods):
            (name,) = self.new_pods(1, running=False)
            t0 = time.monotonic()
            if not exporter.go:
                time.sleep(1.2)  # the kubelet lists it, a pass has seen it
                t0 = time.monotonic()
                set_running(self.kube, name)
            (t1,) = wait(self.seen(name), 30, f"{name} annotated")
            lags.append(t1 - t0)
            if exporter.go:
                set_running(self.kube, name)
            self.remove_pods([name])
        if lags:
            out["lag_mean_s"], out["lag_max_s"] = statistics.mean(lags), max(lags)
            print_figure("lag_mean_s", out["lag_mean_s"])
            print_figure("lag_max_s", out["lag_max_s"])

        # churn
        samples: list[float] = []
        end = time.monotonic() + args.churn_seconds
        next_sample = time.monotonic() + args.churn_interval
        while time.monotonic() < end:
            tick = time.monotonic()
            self.remove_pods(names[:10])
            names = names[10:] + self.new_pods(10, running=True)
            if time.monotonic() >= next_sample:
                samples.append(proc_rss_mib(self.pid))
                next_sample += args.churn_interval
            time.sleep(max(0.0, 1.0 - (time.monotonic() - tick)))
        if len(samples) >= 2:
            out["churn_mib"] = samples[-1] - samples[0]
            print_figure("churn_mib", out["churn_mib"])
            print("    RSS every " f"{args.churn_interval:.0f} s of {args.churn_seconds:.0f} s: "
                  + ", ".join(f"{x:.1f}" for x in samples) + " MiB")  # fmt: skip
        if not exporter.go:
            time.sleep(3)
            m = scrape(self.port)
            bad = sum(
                v for k, v in m.items() if "patches_total" in k and ("fail" in k or "rej" in k)
            )
            line("failed or refused patches over the whole run", f"{bad:.0f}", "0", bad == 0)
        self.close_exporter()
        self.remove_pods(names)
        time.sleep(2)
        return out

    def seen(self, name: str) -> Callable[[], list[float] | None]:
        def condition() -> list[float] | None:
            return self.watcher.times([name])

        return condition

    def kubeconfig_rss(self) -> float:
        """numa-exporter's RSS with a kubeconfig file instead of in-cluster credentials
        (the library's kubeconfig loader imports requests and oauthlib), 5 s after its
        first pods are annotated."""
        names = self.new_pods(PODS, running=True)
        self.launch(NUMA_EXPORTER, in_cluster=False)
        wait(lambda: self.watcher.times(names), 60, "every pod annotated")
        time.sleep(5)
        rss = proc_rss_mib(self.pid)
        self.close_exporter()
        self.remove_pods(names)
        return rss

    def exporters(self) -> list[Exporter]:
        return [NUMA_EXPORTER, GO_EXPORTER] if self.args.npe_bin else [NUMA_EXPORTER]

    def run(self) -> None:
        print(
            f"node: {CPUS} CPUs, {ZONES} NUMA zones, {GPUS} GPUs; {PODS} Guaranteed pods "
            "holding exclusive resources; poll interval 1 s"
        )
        print_load()
        figures = {exporter.name: self.measure(exporter) for exporter in self.exporters()}
        if self.in_cluster:
            rss = self.kubeconfig_rss()
            line("numa-exporter RSS with a kubeconfig instead", f"{rss:.1f} MiB", "(reported)",
                 None)  # fmt: skip
        print_load()
        if self.args.npe_bin:
            print_side_by_side(figures[NUMA_EXPORTER.name], figures[GO_EXPORTER.name])
        print_dependencies(self.env)

    def startup_only(self, rounds: int) -> None:
        """``rounds`` fresh processes of each exporter, taken in turns, each on 110 new
        pods: the start-up figures' distribution."""
        print(
            f"node: {CPUS} CPUs, {ZONES} NUMA zones, {GPUS} GPUs; {PODS} Guaranteed pods; "
            f"{rounds} starts of each exporter in turns, each on {PODS} new pods "
            f"(numa-exporter's interpreter {image_python()}; credentials: "
            f"{'in-cluster' if self.in_cluster else 'a kubeconfig'})"
        )
        taken: dict[str, list[dict[str, float]]] = {e.name: [] for e in self.exporters()}
        for round_ in range(rounds):
            for exporter in self.exporters():
                names = self.new_pods(PODS, running=True)
                time.sleep(1)  # the API server settles after 220 writes
                before = load()
                figures = self.start(exporter, names)
                figures["load"] = before
                taken[exporter.name].append(figures)
                print(f"    {exporter.name:<28} start {round_ + 1:2d}: "
                      f"first {figures['first_s']:.3f} s (CPU {figures['first_cpu_s']:.3f} s), "
                      f"all {figures['all_s']:.3f} s (CPU {figures['start_cpu_s']:.3f} s)"
                      f"  (load {before:.1f})")  # fmt: skip
                self.close_exporter()
                self.remove_pods(names)
        print_load()

        def spread(xs: list[float]) -> str:
            return f"{min(xs):.3f}/{statistics.median(xs):.3f}/{max(xs):.3f} s"

        for name, runs in taken.items():
            print(f"{name}, start (min/median/max of {rounds}):")
            for key in ("first_s", "first_cpu_s", "all_s", "start_cpu_s"):
                xs = [r[key] for r in runs]
                label, _, target, _ = FIGURES[key]
                line(label, spread(xs), target + " (median)" if key == "first_s" else target,
                     verdict(key, statistics.median(xs), None))  # fmt: skip
        line("numa-exporter: interpreter + imports (run --help)", f"{self.imports_cpu_s():.3f} s",
             "(reported)", None)  # fmt: skip

    def imports_cpu_s(self) -> float:
        """CPU of ``numa-exporter run --help``: the interpreter and the command line's
        imports, nothing else (the least of five)."""
        best = float("inf")
        for _ in range(5):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            subprocess.run(
                [self.args.exporter or str(self.script), "run", "--help"],
                check=True, capture_output=True, env=self.env,
            )  # fmt: skip
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            spent = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
            best = min(best, spent)
        return best

    def close_exporter(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=30)  # it joins its watch thread for 5 s
            self.proc = None

    def close(self) -> None:
        self.close_exporter()
        self.fake.stop()


def print_side_by_side(ours: dict[str, float], go: dict[str, float]) -> None:
    """Every figure of both exporters, with its target and whether numa-exporter meets it."""
    print("side by side (same node scenario, same control plane, taken one after the other):")
    print(f"  {'figure':<52} {'numa-exporter':>14} {'KAI (Go)':>12}   target")
    for key, (label, unit, target, _) in FIGURES.items():
        if key not in ours:
            continue
        theirs = go.get(key)
        ok = verdict(key, ours[key], theirs)
        mark = "" if ok is None else ("  OK" if ok else "  MISSED")
        shown = unit.format(theirs) if theirs is not None else "-"
        print(f"  {label:<52} {unit.format(ours[key]):>14} {shown:>12}   {target}{mark}")
    print(f"  {'load average at start / in steady state':<52} "
          f"{ours['load_start']:>6.1f} /{ours['load_steady']:>5.1f} "
          f"{go['load_start']:>5.1f} /{go['load_steady']:>4.1f}")  # fmt: skip


#: Runs a command in-cluster as a DaemonSet pod sees it: in a private mount namespace, a
#: tmpfs over /var/run holding the ServiceAccount's token and CA (copied from argv[1]) where
#: the kubelet mounts them; then it becomes the command (same process).
IN_CLUSTER_WRAPPER = [
    "unshare", "--mount", "--propagation", "private", "sh", "-ec",
    'mount -t tmpfs -o size=1m,mode=0755 tmpfs /var/run\n'
    'dir=/var/run/secrets/kubernetes.io/serviceaccount\n'
    'mkdir -p "$dir"\n'
    'cp "$1/token" "$1/ca.crt" "$dir/"\n'
    'shift\n'
    'exec "$@"',
    "in-cluster",
]  # fmt: skip


@functools.cache
def can_fake_in_cluster() -> bool:
    """Whether IN_CLUSTER_WRAPPER works here (root, unshare, mounts allowed)."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("token", "ca.crt"):
            Path(tmp, name).write_text("x")
        probe = [*IN_CLUSTER_WRAPPER, tmp, "test", "-s",
                 "/var/run/secrets/kubernetes.io/serviceaccount/token"]  # fmt: skip
        return subprocess.run(probe, check=False, capture_output=True).returncode == 0


@functools.cache
def image_python() -> str:
    """The image's interpreter (Debian bookworm's /usr/bin/python3, CPython 3.11) when this
    machine has the same, else this one (the modules' byte code is 3.11's either way)."""
    debian = "/usr/bin/python3"
    probe = "import sys; print(sys.version_info[:2] == (3, 11) and sys.implementation.name)"
    if os.access(debian, os.X_OK):
        out = subprocess.run(
            [debian, "-S", "-c", probe], check=False, capture_output=True, text=True
        )
        if out.stdout.strip() == "cpython":
            return debian
    return sys.executable


def installed_mib(distribution: str) -> float:
    """The size of every file the distribution installed (its RECORD)."""
    files = importlib.metadata.distribution(distribution).files or []
    total = 0
    for file in files:
        located = Path(str(file.locate()))
        if located.is_file():
            total += located.stat().st_size
    return total / 2**20


def import_cost(
    modules: tuple[str, ...], env: dict[str, str], after: list[str] | None = None
) -> tuple[float, float]:
    """(CPU seconds, resident MiB) that importing ``modules`` adds to a fresh interpreter
    started as the exporter is (``-S``, modules byte-compiled, on ``PYTHONPATH``, the
    kubernetes library's parts only: ``exporter.kubeparts``), once the modules ``after``
    are imported; the least of five."""
    runs = []
    for _ in range(5):
        out = subprocess.run(
            [image_python(), "-S", "-c", IMPORT_PROBE, ",".join(modules), *(after or [])],
            check=True, capture_output=True, text=True, env=env,
        )  # fmt: skip
        cpu, rss_kib = out.stdout.split()
        runs.append((float(cpu), int(rss_kib) / 1024))
    return min(c for c, _ in runs), min(r for _, r in runs)


def print_dependencies(env: dict[str, str]) -> None:
    """Each runtime dependency's import cost, alone (with every standard-library module it
    pulls in) and in the daemon (once the standard-library modules the daemon imports are
    loaded: its own code), its installed size, and the import of the whole daemon."""
    for package in ("exporter", "protos"):
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / package)], check=True)
    stdlib = subprocess.run(
        [image_python(), "-S", "-c", STDLIB_PROBE],
        check=True, capture_output=True, text=True, env=env,
    ).stdout.split()  # fmt: skip
    print("footprint of the runtime dependencies (imports in fresh interpreters, least of 5):")
    print(f"  {'':<44} {'import alone':>18} {'after the stdlib':>18} {'installed':>10}")
    for distribution, modules, name in DEPENDENCIES:
        alone = import_cost(modules, env)
        after = import_cost(modules, env, stdlib)
        size = installed_mib(distribution)
        print(f"  {name:<44}"
              f" {alone[0] * 1e3:>4.0f} ms {alone[1]:>5.1f} MiB"
              f" {after[0] * 1e3:>6.0f} ms {after[1]:>5.1f} MiB {size:>6.1f} MiB")  # fmt: skip
    for modules, name in (
        (("exporter.daemon",), "the whole daemon (exporter.daemon, in-cluster)"),
        (("exporter.daemon", "kubernetes.config.kube_config"), "  the same with a kubeconfig"),
    ):
        cpu_s, rss_mib = import_cost(modules, env)
        print(f"  {name:<44} {cpu_s * 1e3:>4.0f} ms {rss_mib:>5.1f} MiB")


def print_load() -> None:
    print(
        "load average of this machine (1, 5, 15 min): "
        + ", ".join(f"{x:.1f}" for x in os.getloadavg())
        + f" on {os.cpu_count()} CPUs (wall-clock figures stretch with it; CPU times less)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steady-seconds", type=float, default=60.0, help=">= 60 s")
    parser.add_argument("--churn-seconds", type=float, default=60.0, help="3600 for the hour")
    parser.add_argument("--churn-interval", type=float, default=10.0, help="RSS sample period")
    parser.add_argument("--latency-pods", type=int, default=10, help="pods timed one by one")
    parser.add_argument("--exporter", default="", help="numa-exporter script of another install")
    parser.add_argument("--npe-bin", default=os.environ.get("NPE_BIN", ""),
                        help="KAI's numa-placement-exporter binary (env NPE_BIN): measured "
                        "beside numa-exporter")  # fmt: skip
    parser.add_argument("--kubeconfig-credentials", action="store_true",
                        help="a kubeconfig file instead of in-cluster credentials")  # fmt: skip
    parser.add_argument("--startup-only", type=int, default=0, metavar="N",
                        help="only the start-up figures, over N fresh processes")  # fmt: skip
    parser.add_argument("--dependencies-only", action="store_true",
                        help="only the footprint of each runtime dependency")  # fmt: skip
    args = parser.parse_args()
    if args.npe_bin and not os.access(args.npe_bin, os.X_OK):
        parser.error(f"--npe-bin/NPE_BIN {args.npe_bin!r} is not an executable file")
    if args.dependencies_only:
        print_dependencies(
            dict(os.environ, PYTHONPATH=f"{REPO}:{sysconfig.get_paths()['purelib']}")
        )
        return
    t0 = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="nxb-", dir="/tmp"))
    try:
        with ControlPlane(bin_dir=binaries_dir()) as cp:
            bench = Bench(cp, work, args)
            try:
                if args.startup_only:
                    bench.startup_only(args.startup_only)
                else:
                    bench.run()
            finally:
                bench.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"(benchmark took {time.monotonic() - t0:.0f} s)")


if __name__ == "__main__":
    main()
