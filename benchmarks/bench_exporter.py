"""Benchmark of numa-exporter on one large node: 256 CPUs, 8 NUMA zones, 8 GPUs, 110 pods.

Prints, with the targets from the exporter issue:
  * CPU time of one reconcile pass when nothing changed (target <= 10 ms) and when every
    pod is new (110 patches), measured in-process on the reconciling thread;
  * the daemon's CPU time per pass and RSS, measured on a real ``numa-exporter run``
    subprocess (target RSS <= 80 MiB);
  * API writes: per pod lifetime (Pending -> Running -> Succeeded -> deleted; target 1
    write carrying both annotations) and in steady state (target 0).

Starts its own etcd + kube-apiserver (tests/controlplane) and a fake podresources
server on a unix socket. Run: .venv/bin/python benchmarks/bench_exporter.py
"""

from __future__ import annotations

import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kubernetes import client
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from exporter.health import Health
from exporter.kube_pods import PodApi
from exporter.metrics import ExporterMetrics
from exporter.patching import Patcher
from exporter.pod_cache import PodCache
from exporter.podresources_client import PodResourcesClient
from exporter.reconciler import Reconciler
from exporter.resources import (
    AllocatableResources,
    ContainerResources,
    DeviceAssignment,
    MemoryBlock,
    PodResources,
)
from exporter.sysfs import read_cpu_numa_map, write_fixture
from tests.controlplane.cluster import ControlPlane, binaries_dir
from tests.controlplane.helpers import admin_client, ensure_namespace
from tests.exporter.fake_podresources import FakePodResources
from tests.exporter.kube_helpers import exporter_kube

T = TypeVar("T")

CPUS, ZONES, GPUS, PODS = 256, 8, 8, 110
PER_ZONE = CPUS // ZONES
GI = 1024**3
NODE = "bench-node"
GUARANTEED_CPU: dict[str, dict[str, str]] = {"limits": {"cpu": "4", "memory": "4Gi"}}
GUARANTEED_GPU: dict[str, dict[str, str]] = {
    "limits": {"cpu": "8", "memory": "16Gi", "nvidia.com/gpu": "1"}
}
BURSTABLE: dict[str, dict[str, str]] = {"requests": {"cpu": "100m", "memory": "128Mi"}}


Resources = dict[str, dict[str, str]]


def node_reports(namespace: str) -> tuple[list[PodResources], dict[str, Resources]]:
    """110 pods: 8 GPU pods (1 GPU + 8 CPUs + 16Gi, one zone each), 30 exclusive-CPU pods
    (4 CPUs + 4Gi; every third with a 2-zone memory group), 72 shared-pool pods."""
    reports: list[PodResources] = []
    specs: dict[str, Resources] = {}
    next_cpu = [z * PER_ZONE for z in range(ZONES)]

    def take(zone: int, n: int) -> tuple[int, ...]:
        start = next_cpu[zone]
        next_cpu[zone] += n
        return tuple(range(start, start + n))

    for g in range(GPUS):
        name = f"gpu-{g}"
        reports.append(PodResources(namespace, name, (ContainerResources(
            "main", cpu_ids=take(g, 8),
            devices=(DeviceAssignment("nvidia.com/gpu", (f"GPU-{g}",), (g,)),),
            memory=(MemoryBlock("memory", 16 * GI, (g,)),),
        ),)))  # fmt: skip
        specs[name] = GUARANTEED_GPU
    for i in range(30):
        zone = i % ZONES
        name = f"cpu-{i}"
        memory = (
            MemoryBlock("memory", 4 * GI, (zone, (zone + 1) % ZONES))
            if i % 3 == 0
            else MemoryBlock("memory", 4 * GI, (zone,))
        )
        reports.append(PodResources(namespace, name, (
            ContainerResources("main", cpu_ids=take(zone, 4), memory=(memory,)),
        )))  # fmt: skip
        specs[name] = GUARANTEED_CPU
    for i in range(PODS - len(reports)):
        name = f"shared-{i}"
        reports.append(PodResources(namespace, name, (ContainerResources("main"),)))
        specs[name] = BURSTABLE
    return reports, specs


ALLOCATABLE = AllocatableResources(
    cpu_ids=tuple(range(CPUS)),
    devices=tuple(DeviceAssignment("nvidia.com/gpu", (f"GPU-{g}",), (g,)) for g in range(GPUS)),
    memory=tuple(MemoryBlock("memory", 128 * GI, (z,)) for z in range(ZONES)),
)


def create_pods(
    api: client.ApiClient, namespace: str, specs: dict[str, Resources], phase: str | None
) -> None:
    core = client.CoreV1Api(api)
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    for name, resources in specs.items():
        core.create_namespaced_pod(namespace, {
            "metadata": {"name": name},
            "spec": {"nodeName": NODE, "containers": [
                {"name": "main", "image": "registry.k8s.io/pause:3.10", "resources": resources}
            ]},
        })  # fmt: skip
        if phase:
            core.patch_namespaced_pod_status(
                name, namespace, {"status": {"phase": phase, "startTime": now}}
            )


def set_phase(api: client.ApiClient, namespace: str, names: list[str], phase: str) -> None:
    core = client.CoreV1Api(api)
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    for name in names:
        core.patch_namespaced_pod_status(
            name, namespace, {"status": {"phase": phase, "startTime": now}}
        )


def in_process(cp: ControlPlane, api: client.ApiClient, sysfs: Path, sock_dir: Path) -> None:
    namespace = "bench-inproc"
    ensure_namespace(api, namespace)
    reports, specs = node_reports(namespace)
    create_pods(api, namespace, specs, "Running")
    fake = FakePodResources(sock_dir / "inproc.sock", reports, allocatable=ALLOCATABLE).start()
    pod_api = PodApi(exporter_kube(cp))
    cache = PodCache(pod_api, NODE)
    _, items = pod_api.list_node_pods(NODE)
    cache.replace(items)
    cache.connected = True
    podresources = PodResourcesClient(fake.socket_path)
    reconciler = Reconciler(
        podresources=podresources,
        cache=cache,
        patcher=Patcher(pod_api, sleep=time.sleep, rng=random.Random(0)),
        load_cpu_map=lambda: read_cpu_numa_map(sysfs),
        metrics=ExporterMetrics(CollectorRegistry()),
        health=Health(clock=time.monotonic),
        clock=time.monotonic,
        wall_clock=time.time,
    )
    cpu0, wall0 = time.thread_time(), time.perf_counter()
    first = reconciler.run_once()
    cpu_new, wall_new = time.thread_time() - cpu0, time.perf_counter() - wall0
    assert first.pods_reported == PODS, first
    samples = []
    writes = 0
    for _ in range(300):
        t0 = time.thread_time()
        result = reconciler.run_once()
        samples.append(time.thread_time() - t0)
        writes += sum(result.patches.values())
    samples.sort()
    print("in-process reconcile pass (reconciling thread CPU time, 110 pods reported):")
    print(
        f"  every pod new:   {cpu_new * 1e3:7.1f} ms CPU ({wall_new * 1e3:.0f} ms wall) "
        f"for {sum(first.patches.values())} patches {dict(first.patches)}"
    )
    print(
        f"  unchanged pass:  {statistics.mean(samples) * 1e3:7.2f} ms CPU mean, "
        f"p50 {samples[len(samples) // 2] * 1e3:.2f} ms, "
        f"p99 {samples[int(len(samples) * 0.99)] * 1e3:.2f} ms over {len(samples)} passes "
        f"(target <= 10 ms); writes in those passes: {writes} (target 0)"
    )
    podresources.close()
    fake.stop()


def scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
        text = resp.read().decode()
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def applied(metrics: dict[tuple[str, tuple[tuple[str, str], ...]], float]) -> float:
    return metrics.get(("numa_exporter_annotation_patches_total", (("result", "applied"),)), 0.0)


def proc_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_mem_kib(pid: int) -> dict[str, int]:
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0])
    return out


def wait(condition: Callable[[], T | None], timeout_s: float, what: str) -> T:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise SystemExit(f"benchmark: timed out waiting for {what}")


def daemon(cp: ControlPlane, api: client.ApiClient, sysfs: Path, sock_dir: Path) -> None:
    namespace = "bench-daemon"
    ensure_namespace(api, namespace)
    reports, specs = node_reports(namespace)
    fake = FakePodResources(sock_dir / "daemon.sock", reports, allocatable=ALLOCATABLE).start()
    create_pods(api, namespace, specs, phase=None)  # Pending, not yet acknowledged
    port = 18000 + random.Random().randrange(2000)
    proc = subprocess.Popen(
        [sys.executable, "-c", "from exporter.cli import main; main()", "run",
         "--node-name", NODE, "--podresources-socket", str(fake.socket_path),
         "--sysfs-root", str(sysfs), "--kubeconfig", str(cp.kubeconfig),
         "--poll-interval", "1", "--metrics-bind-address", f"127.0.0.1:{port}"],
        cwd=REPO, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:

        def ready() -> bool:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as r:
                    return bool(r.status == 200)
            except OSError:
                return False

        wait(ready, 60, "the daemon to be ready")
        before_start = applied(scrape(port))
        t_running = time.monotonic()
        set_phase(api, namespace, list(specs), "Running")
        wait(lambda: applied(scrape(port)) >= PODS, 60, "every pod annotated")
        to_annotated = time.monotonic() - t_running
        writes_start = applied(scrape(port)) - before_start

        # steady state
        m0 = scrape(port)
        cpu0 = proc_cpu_s(proc.pid)
        time.sleep(20)
        m1 = scrape(port)
        cpu1 = proc_cpu_s(proc.pid)
        passes = (
            m1[("numa_exporter_reconcile_duration_seconds_count", ())]
            - m0[("numa_exporter_reconcile_duration_seconds_count", ())]
        )
        steady_writes = applied(m1) - applied(m0)
        mem = proc_mem_kib(proc.pid)

        # the rest of each pod's life: finished, then deleted
        set_phase(api, namespace, list(specs), "Succeeded")
        time.sleep(3)
        client.CoreV1Api(api).delete_collection_namespaced_pod(namespace, grace_period_seconds=0)
        fake.set_pods([])
        time.sleep(3)
        m2 = scrape(port)
        lifetime_writes = applied(m2) - before_start
        lag_sum = m2[("numa_exporter_observation_lag_seconds_sum", ())]
        lag_count = m2[("numa_exporter_observation_lag_seconds_count", ())]
        print("numa-exporter run (subprocess, --poll-interval 1, 110 pods):")
        print(
            f"  all {PODS} pods Running -> all annotated in {to_annotated:.2f} s; "
            f"mean observation lag {lag_sum / max(lag_count, 1):.2f} s "
            "(status.startTime has 1 s resolution)"
        )
        print(
            f"  steady state over 20 s: {passes:.0f} passes, process CPU "
            f"{(cpu1 - cpu0) / max(passes, 1) * 1e3:.2f} ms per pass "
            f"({(cpu1 - cpu0) / 20 * 100:.2f}% of one core), writes {steady_writes:.0f} (target 0)"
        )
        print(
            f"  RSS {mem['VmRSS'] / 1024:.1f} MiB, peak {mem['VmHWM'] / 1024:.1f} MiB "
            "(target <= 80 MiB)"
        )
        print(
            f"  API writes per pod lifetime: {lifetime_writes / PODS:.2f} "
            f"({lifetime_writes:.0f} patches for {PODS} pods, each carrying both annotations; "
            f"{writes_start:.0f} at start, target 1)"
        )
    finally:
        proc.terminate()
        proc.wait(timeout=15)
        fake.stop()


def main() -> None:
    t0 = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="nxb-", dir="/tmp"))
    try:
        sysfs = work / "sys"
        write_fixture(sysfs, {z: f"{z * PER_ZONE}-{(z + 1) * PER_ZONE - 1}" for z in range(ZONES)})
        print(f"node: {CPUS} CPUs, {ZONES} NUMA zones, {GPUS} GPUs, {PODS} running pods")
        with ControlPlane(bin_dir=binaries_dir()) as cp:
            api = admin_client(cp)
            in_process(cp, api, sysfs, work)
            daemon(cp, api, sysfs, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"(benchmark took {time.monotonic() - t0:.0f} s)")


if __name__ == "__main__":
    main()
