"""Benchmark of a real ``numa-exporter run`` process on one GPU node (exporter issue 12).

The node: 256 CPUs, 8 NUMA zones, 8 GPUs, the Memory Manager's static policy, and 110
Guaranteed pods, every one holding exclusive resources:

* 8 GPU pods: 4 CPUs + 1 GPU + 16Gi, all in one zone;
* 102 pods of 2 CPUs + 4Gi: every third with its memory block over two zones, every
  tenth also with 2Gi of hugepages-1Gi, six with a second container (1 CPU + 1Gi).

The exporter runs as its own process, started as the DaemonSet's image starts it
(``kind/image.sh``, ``Dockerfile``): a console script ``#!<python> -S`` whose modules come
from ``PYTHONPATH`` (here the checkout and this interpreter's site-packages, byte-compiled
ahead as the image's are), ``PYTHONDONTWRITEBYTECODE=1``, and API credentials as
in-cluster ones are (a token file and a CA file, named by a kubeconfig). It runs
against the suite's real kube-apiserver + etcd and a fake podresources server on a unix
socket. Its CPU time comes from ``/proc/<pid>/stat`` (every thread), RSS from
``/proc/<pid>/status``. Printed, one line per figure with its target:

* start: time from the process starting to the first and the last of the 110 pods
  annotated, and the process's CPU time until the last;
* steady state over ``--steady-seconds`` (>= 60): CPU per pass, API writes, RSS;
* the same with the pods listed in a new order on every List (as the kubelet may);
* a burst: 110 new pods turning Running, CPU until all are annotated;
* pod admitted -> annotated: the kubelet lists the pod, then it turns Running;
* churn for ``--churn-seconds`` (10 pods replaced per second), RSS every interval;
* the footprint of each runtime dependency: CPU and resident memory of its import in a
  fresh interpreter started as the exporter is, and its installed size.

Run: .venv/bin/python benchmarks/bench_exporter.py [--churn-seconds 3600]
     .venv/bin/python benchmarks/bench_exporter.py --startup-only 10   (start-up figures of
     10 fresh processes, each on 110 new pods: their distribution, nothing else)
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
from tests.controlplane.helpers import admin_client, ensure_namespace
from tests.exporter.fake_podresources import FakePodResources
from tests.exporter.kube_helpers import exporter_kube

T = TypeVar("T")

CPUS, ZONES, GPUS, PODS = 256, 8, 8, 110
PER_ZONE = CPUS // ZONES
GI = 1024**3
NODE = "bench-node"
NAMESPACE = "bench"
GPU = "nvidia.com/gpu"
# what the old exporter and the Go exporter measured on this scenario (issue 12)
ISSUE = {"pass_ms": (3.9, 1.6), "start_cpu": (0.31, 0.10), "first": (0.26, 0.09)}
#: the exporter's runtime dependencies: (distribution, what the exporter imports of it)
DEPENDENCIES = (
    ("grpcio", "grpc"),
    ("protobuf", "protos.podresources.v1.api_pb2"),
    ("prometheus-client", "prometheus_client"),
    ("PyYAML", "yaml"),
)
#: one module's import in a fresh interpreter, after the modules of argv[2:] (not
#: counted): CPU seconds and resident KiB it added
IMPORT_PROBE = """
import sys, time
for name in sys.argv[2:]:
    __import__(name)
def rss():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
rss0, cpu0 = rss(), time.process_time()
__import__(sys.argv[1])
print(time.process_time() - cpu0, rss() - rss0)
"""
#: the standard-library modules the daemon imports, one name a line
STDLIB_PROBE = """
import sys
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


class Watcher:
    """Records when each pod of the namespace is first seen carrying its annotation."""

    def __init__(self, kube: KubeClient) -> None:
        self.kube = kube
        self.annotated: dict[str, float] = {}
        self.lock = threading.Lock()
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        version = ""
        while True:
            try:
                for event in self.kube.watch(pods_path(), resource_version=version, timeout_s=300):
                    obj: dict[str, Any] = event.get("object") or {}
                    meta = obj.get("metadata") or {}
                    version = str(meta.get("resourceVersion") or version)
                    if OBSERVED_PLACEMENT in (meta.get("annotations") or {}):
                        with self.lock:
                            self.annotated.setdefault(str(meta.get("name")), time.monotonic())
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
APPLIED = 'numa_exporter_annotation_patches_total{result="applied"}'


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


class Bench:
    def __init__(self, cp: ControlPlane, work: Path, args: argparse.Namespace) -> None:
        self.args = args
        self.kube = exporter_kube(cp)
        ensure_namespace(admin_client(cp), NAMESPACE)  # its ServiceAccount from the kcm
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
        self.kubeconfig = self._in_cluster_like_kubeconfig(work)

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

    def command(self) -> list[str]:
        """The console script as the image has it (``--exporter``: another install's,
        e.g. the virtualenv's ``numa-exporter``)."""
        if self.args.exporter:
            return [self.args.exporter]
        return [str(self.script)]

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
        return script, env

    def _in_cluster_like_kubeconfig(self, work: Path) -> Path:
        """What in-cluster credentials are (a token file, re-read every minute, and a CA
        file), named by a kubeconfig."""
        token = work / "token"
        token.write_text(self.cp.admin_token)
        doc = {
            "apiVersion": "v1", "kind": "Config", "current-context": "bench",
            "contexts": [{"name": "bench", "context": {"cluster": "bench", "user": "bench"}}],
            "clusters": [{"name": "bench", "cluster": {
                "server": self.cp.server, "certificate-authority": str(self.cp.ca_file)}}],
            "users": [{"name": "bench", "user": {"tokenFile": str(token)}}],
        }  # fmt: skip
        path = work / "kubeconfig.json"
        path.write_text(json.dumps(doc))
        return path

    def imports_cpu_s(self) -> float:
        """CPU of ``numa-exporter run --help``: the interpreter and every import of the
        daemon, nothing else (the least of five)."""
        best = float("inf")
        for _ in range(5):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            subprocess.run(
                [*self.command(), "run", "--help"], check=True, capture_output=True, env=self.env
            )
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            spent = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
            best = min(best, spent)
        return best

    def start_exporter(self) -> float:
        # byte-compiled, as pip leaves an installed package (the image); a checkout run
        # with PYTHONDONTWRITEBYTECODE would compile every module at every start
        subprocess.run(
            [sys.executable, "-m", "compileall", "-q", str(REPO / "exporter")], check=True
        )
        command = self.command()
        started = time.monotonic()
        self.proc = subprocess.Popen(
            [*command, "run", "--node-name", NODE,
             "--podresources-socket", str(self.fake.socket_path),
             "--sysfs-root", str(self.sysfs), "--kubeconfig", str(self.kubeconfig),
             "--poll-interval", "1", "--metrics-bind-address", f"127.0.0.1:{self.port}"],
            stderr=subprocess.DEVNULL, env=self.env,
        )  # fmt: skip
        return started

    def start(self, names: list[str]) -> tuple[float, float, float, float]:
        """Start the exporter on ``names`` (none annotated yet): seconds from the process
        start to the first and the last annotation seen, and its CPU until the last (from
        /proc/<pid>/stat, and from schedstat: ns resolution, live threads only)."""
        started = self.start_exporter()
        times = wait(lambda: self.watcher.times(names), 60, "every pod annotated")
        start_cpu, precise = proc_cpu_s(self.pid), proc_cpu_ns(self.pid) / 1e9
        return min(times) - started, max(times) - started, start_cpu, precise

    def startup_only(self, rounds: int) -> None:
        """``rounds`` fresh processes, each on 110 new pods: the start-up figures'
        distribution."""
        print(
            f"node: {CPUS} CPUs, {ZONES} NUMA zones, {GPUS} GPUs; {PODS} Guaranteed pods; "
            f"{rounds} starts of numa-exporter run, each on {PODS} new pods; "
            f"{' '.join(self.command())} (interpreter {image_python()})"
        )
        firsts, lasts, cpus, precises = [], [], [], []
        for round_ in range(rounds):
            names = self.new_pods(PODS, running=True)
            time.sleep(1)  # the API server settles after 220 writes
            load = os.getloadavg()[0]
            first, last, cpu, precise = self.start(names)
            print(f"    start {round_ + 1:2d}: first {first:.3f} s, all {last:.3f} s, "
                  f"CPU {cpu:.3f} s (schedstat {precise:.3f} s)  (load {load:.1f})")  # fmt: skip
            firsts.append(first)
            lasts.append(last)
            cpus.append(cpu)
            precises.append(precise)
            self.close_exporter()
            self.remove_pods(names)
        print_load()

        def spread(xs: list[float]) -> str:
            return f"{min(xs):.3f}/{statistics.median(xs):.3f}/{max(xs):.3f} s"

        print(f"start (min/median/max of {rounds}):")
        line("first pod annotated", spread(firsts), "<= 0.5 s (median)",
             statistics.median(firsts) <= 0.5)  # fmt: skip
        line("all 110 pods annotated", spread(lasts), "(reported)", None)
        line("process CPU until all 110 annotated", spread(cpus), "(reported)", None)
        line("  the same from schedstat (ns resolution)", spread(precises), "(reported)", None)
        line("  of which interpreter + imports (run --help)", f"{self.imports_cpu_s():.3f} s",
             "(reported)", None)  # fmt: skip

    def seen(self, name: str) -> Callable[[], list[float] | None]:
        def condition() -> list[float] | None:
            return self.watcher.times([name])

        return condition

    def steady(self, seconds: float) -> tuple[float, float, float, float]:
        """(ms CPU per pass from /proc/<pid>/stat, the same from schedstat, applied
        writes, RSS MiB) over ``seconds``; ``self.by_thread``: ms per pass by thread name."""
        m0, cpu0, ns0 = scrape(self.port), proc_cpu_s(self.pid), proc_cpu_ns(self.pid)
        threads0 = threads_cpu_ns(self.pid)
        time.sleep(seconds)
        threads1 = threads_cpu_ns(self.pid)
        ns1, cpu1, m1 = proc_cpu_ns(self.pid), proc_cpu_s(self.pid), scrape(self.port)
        passes = max(m1[PASSES] - m0[PASSES], 1)
        self.by_thread = {
            name: (ns - threads0.get(name, 0)) / passes / 1e6 for name, ns in threads1.items()
        }
        return (
            (cpu1 - cpu0) / passes * 1e3,
            (ns1 - ns0) / passes / 1e6,
            m1[APPLIED] - m0[APPLIED],
            proc_rss_mib(self.pid),
        )

    def run(self) -> None:
        args = self.args
        print(
            f"node: {CPUS} CPUs, {ZONES} NUMA zones, {GPUS} GPUs; {PODS} Guaranteed pods "
            "holding exclusive resources; numa-exporter run, --poll-interval 1"
        )
        names = self.new_pods(PODS, running=True)
        print_load()

        # -- start ----------------------------------------------------------------------
        first, last, start_cpu, precise = self.start(names)
        print("start (process started -> annotations seen through a watch):")
        line("first pod annotated", f"{first:.3f} s", "<= 0.5 s", first <= 0.5)
        line("all 110 pods annotated", f"{last:.3f} s", "(reported)", None)
        line("process CPU until all 110 annotated", f"{start_cpu:.3f} s", "(reported)", None)
        line("  the same from schedstat (ns resolution)", f"{precise:.3f} s", "(reported)", None)
        line("  of which interpreter + imports (run --help)", f"{self.imports_cpu_s():.3f} s",
             "(reported)", None)  # fmt: skip

        # -- steady state ---------------------------------------------------------------
        time.sleep(3)
        per_pass, precise, writes, rss = self.steady(args.steady_seconds)
        print(f"steady state over {args.steady_seconds:.0f} s (110 pods, nothing changes):")
        line("process CPU per 1 s pass (/proc/<pid>/stat)", f"{per_pass:.2f} ms", "<= 1.0 ms",
             per_pass <= 1.0)  # fmt: skip
        line("  the same from schedstat (ns resolution)", f"{precise:.3f} ms", "<= 1.0 ms",
             precise <= 1.0)  # fmt: skip
        shares = ", ".join(
            f"{name} {ms:.3f} ms"
            for name, ms in sorted(self.by_thread.items(), key=lambda x: -x[1])
        )
        print(f"    by thread (schedstat; Python's threads carry the process's name): {shares}")
        line("API writes", f"{writes:.0f}", "0", writes == 0)
        line("RSS", f"{rss:.1f} MiB", "<= 64 MiB", rss <= 64)
        self.fake.shuffle = True
        _, precise, writes, _ = self.steady(min(args.steady_seconds, 30))
        self.fake.shuffle = False
        line("same, pods in a new order every List (schedstat)", f"{precise:.3f} ms",
             "<= 1.0 ms", precise <= 1.0)  # fmt: skip

        # -- a burst of 110 new pods ----------------------------------------------------
        self.remove_pods(names)
        names = self.new_pods(PODS, running=False)
        time.sleep(3)
        cpu0 = proc_cpu_s(self.pid)
        for name in names:
            set_running(self.kube, name)
        wait(lambda: self.watcher.times(names), 60, "the burst annotated")
        burst_cpu = proc_cpu_s(self.pid) - cpu0
        print("burst (110 new pods turn Running):")
        line("process CPU until all 110 annotated", f"{burst_cpu:.3f} s", "<= 0.15 s",
             round(burst_cpu, 3) <= 0.15)  # fmt: skip

        # -- admitted -> annotated ------------------------------------------------------
        lags = []
        for _ in range(args.latency_pods):
            (name,) = self.new_pods(1, running=False)
            time.sleep(1.2)  # the kubelet lists it, a pass has seen it
            t0 = time.monotonic()
            set_running(self.kube, name)
            (t1,) = wait(self.seen(name), 30, f"{name} annotated")
            lags.append(t1 - t0)
            self.remove_pods([name])
        mean_lag, max_lag = statistics.mean(lags), max(lags)
        print(f"pod admitted -> annotated ({len(lags)} pods: listed by the kubelet, then Running):")
        line("mean", f"{mean_lag:.3f} s", "< 0.45 s (Go exporter)", mean_lag < 0.45)
        line("max", f"{max_lag:.3f} s", "(reported)", None)

        # -- churn ------------------------------------------------------------------------
        print(
            f"churn for {args.churn_seconds:.0f} s: 10 pods replaced per second "
            "(RSS of the exporter process):"
        )
        samples: list[float] = []
        end = time.monotonic() + args.churn_seconds
        next_sample = time.monotonic() + args.churn_interval
        while time.monotonic() < end:
            tick = time.monotonic()
            self.remove_pods(names[:10])
            names = names[10:] + self.new_pods(10, running=True)
            if time.monotonic() >= next_sample:
                samples.append(proc_rss_mib(self.pid))
                print(f"    t={args.churn_seconds - (end - time.monotonic()):6.0f} s  "
                      f"RSS {samples[-1]:.1f} MiB")  # fmt: skip
                next_sample += args.churn_interval
            time.sleep(max(0.0, 1.0 - (time.monotonic() - tick)))
        if len(samples) >= 2:
            growth = samples[-1] - samples[0]
            line("RSS growth, first to last sample", f"{growth:+.1f} MiB", "no growth (< 1 MiB)",
                 growth < 1.0)  # fmt: skip
        time.sleep(3)
        m = scrape(self.port)
        bad = sum(v for k, v in m.items() if "patches_total" in k and ("failed" in k or "rej" in k))
        line("failed or refused patches over the whole run", f"{bad:.0f}", "0", bad == 0)

        print_dependencies(self.env)

    def close_exporter(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=30)  # it joins its watch thread for 5 s
            self.proc = None

    def close(self) -> None:
        self.close_exporter()
        self.fake.stop()


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
    module: str, env: dict[str, str], after: list[str] | None = None
) -> tuple[float, float]:
    """(CPU seconds, resident MiB) that importing ``module`` adds to a fresh interpreter
    started as the exporter is (``-S``, modules byte-compiled, on ``PYTHONPATH``), once
    the modules ``after`` are imported; the least of five."""
    runs = []
    for _ in range(5):
        out = subprocess.run(
            [image_python(), "-S", "-c", IMPORT_PROBE, module, *(after or [])],
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
    for distribution, module in DEPENDENCIES:
        alone = import_cost(module, env)
        after = import_cost(module, env, stdlib)
        size = installed_mib(distribution)
        name = f"{distribution} ({module})"
        print(f"  {name:<44}"
              f" {alone[0] * 1e3:>4.0f} ms {alone[1]:>5.1f} MiB"
              f" {after[0] * 1e3:>6.0f} ms {after[1]:>5.1f} MiB {size:>6.1f} MiB")  # fmt: skip
    cpu_s, rss_mib = import_cost("exporter.daemon", env)
    name = "the whole daemon (exporter.daemon)"
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
    parser.add_argument("--startup-only", type=int, default=0, metavar="N",
                        help="only the start-up figures, over N fresh processes")  # fmt: skip
    parser.add_argument("--dependencies-only", action="store_true",
                        help="only the footprint of each runtime dependency")  # fmt: skip
    args = parser.parse_args()
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
