"""Benchmark of ``fakenrt controller`` against a real kube-apiserver + etcd.

Starts its own control plane (tests.controlplane.cluster), then one in-process controller
serving N fake nodes of 2, 4 and 8 NUMA zones (with podresources sockets and sysfs trees),
binds pods to them at full speed and prints:

* node registration time, and controller RSS per node (RSS growth from just before the
  controller was built to after every node is served, divided by N);
* pods admitted per second: pods bound / time from the first create to the last pod's
  status written by the controller (admission, status write, NRT publication included);
* NRT writes per second over the same window (coalesced per node), and in total;
* restart recovery: time for a new controller to rebuild every node from the API and
  publish again.

Run: .venv/bin/python benchmarks/bench_controller.py [--nodes 500] [--pods-per-node 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from exporter.kubeclient import KubeClient
from exporter.kubesettings import ClusterConfig
from fakenrt.controller.effects import PublishNrt
from fakenrt.controller.fleet import Fleet
from fakenrt.controller.nodeobjects import NodeIdentity
from fakenrt.controller.runner import Controller, RunOptions
from fakenrt.controller.settings import ControllerSettings
from fakenrt.profiles import NodeProfile, parse_profiles
from tests.controlplane.cluster import ControlPlane, binaries_dir
from tests.controlplane.helpers import admin_client, ensure_namespace, install_crds

ZONES = (2, 4, 8)
NAMESPACE = "bench"


def rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def profiles(count: int) -> tuple[NodeProfile, ...]:
    nodes = []
    for i in range(count):
        zones = ZONES[i % len(ZONES)]
        nodes.append(
            {
                "name": f"bench-{i:04d}",
                "kubelet": {"topologyManagerPolicy": "single-numa-node"},
                "shape": {
                    "numaNodes": zones,
                    "coresPerNumaNode": 8,
                    "threadsPerCore": 2,
                    "memoryPerNumaNode": "64Gi",
                    "devicesPerNumaNode": {"nvidia.com/gpu": 16 // zones},
                },
            }
        )
    return parse_profiles({"nodes": nodes}, source="bench")


def pod(name: str, node: str) -> dict[str, Any]:
    limits = {"cpu": "2", "memory": "1Gi", "nvidia.com/gpu": "1"}
    return {
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "nodeName": node,
            "containers": [{"name": "main", "image": "busybox", "resources": {"limits": limits}}],
        },
    }


def cpu_seconds(cp: ControlPlane) -> dict[str, float]:
    """CPU time (user + system) of this process and of the control plane's processes."""
    tick = os.sysconf("SC_CLK_TCK")

    def of(pid: int | str) -> float:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / tick

    return {
        "controller": of("self"),
        "control plane": sum(of(p.pid) for p in cp._procs if p.poll() is None),
    }


CREATOR = """
import json, sys
from concurrent.futures import ThreadPoolExecutor
sys.path.insert(0, {repo!r})
from pathlib import Path
from exporter.kubeclient import KubeClient, path
from exporter.kubesettings import ClusterConfig
from benchmarks.bench_controller import NAMESPACE, pod
config = ClusterConfig(server={server!r}, ca_file=Path({ca!r}), token={token!r})
kube = KubeClient(config, read_timeout_s=30, pool_size=8)
where = path("api", "v1", "namespaces", NAMESPACE, "pods")
names = json.load(sys.stdin)
with ThreadPoolExecutor(max_workers=6) as pool:
    list(pool.map(lambda n: kube.create(where, pod(*n)), names))
"""


def run_creator(cp: ControlPlane, names: list[tuple[str, str]]) -> float:
    """Create the pods from a separate process; returns how long that took."""
    code = CREATOR.format(
        repo=str(REPO), server=cp.server, ca=str(cp.ca_file), token=cp.admin_token
    )
    start = time.monotonic()
    subprocess.run([sys.executable, "-c", code], input=json.dumps(names), text=True, check=True)
    return time.monotonic() - start


def wait(probe: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not probe():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.02)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--pods-per-node", type=int, default=2)
    parser.add_argument("--workers", type=int, default=8, help="controller writer threads")
    parser.add_argument("--no-sockets", action="store_true", help="no podresources/sysfs")
    args = parser.parse_args()
    t0 = time.monotonic()
    with ControlPlane(bin_dir=binaries_dir()) as cp:
        api = admin_client(cp)
        install_crds(api)
        ensure_namespace(api, NAMESPACE)
        sockets = "no" if args.no_sockets else "yes"
        print(
            f"control plane up in {time.monotonic() - t0:.1f}s; {args.nodes} nodes "
            f"({'/'.join(map(str, ZONES))} zones), sockets={sockets}, workers={args.workers}"
        )
        config = ClusterConfig(server=cp.server, ca_file=cp.ca_file, token=cp.admin_token)
        bench(cp, KubeClient(config, connect_timeout_s=30, read_timeout_s=30, pool_size=32), args)
    core_only(args.nodes, args.pods_per_node * 5)  # last: it would skew the RSS figures
    print(f"total benchmark time {time.monotonic() - t0:.0f}s")


def core_only(nodes: int, pods_per_node: int) -> None:
    """The pure core in simulated time (no API server): admissions and NRT renders per
    second, what a whole-cluster simulation can drive."""
    fleet_profiles = profiles(nodes)
    clock = [1_800_000_000.0]
    settings = ControllerSettings(controller="bench", nrt_refresh=0, nrt_delay=1.0)
    fleet = Fleet(
        [(p, NodeIdentity(p.name, i)) for i, p in enumerate(fleet_profiles)],
        settings,
        clock=lambda: clock[0],
    )
    fleet.start([])
    manifests = []
    for j in range(pods_per_node):
        for i, p in enumerate(fleet_profiles):
            manifest = pod(f"p{j}-{i:04d}", p.name)
            manifest["metadata"]["uid"] = f"uid-{j}-{i}"
            manifests.append(manifest)
    start = time.process_time()
    published = 0
    for n, manifest in enumerate(manifests):
        fleet.pod_event("ADDED", manifest)
        if n % 100 == 99:
            clock[0] += 0.5
            published += sum(isinstance(e, PublishNrt) for e in fleet.advance())
    clock[0] += 10
    published += sum(isinstance(e, PublishNrt) for e in fleet.advance())
    spent = time.process_time() - start
    admitted = sum(m.admissions for m in fleet.nodes.values())
    print(
        f"core only (simulated time, {nodes} nodes): {len(manifests)} pods ({admitted} admitted)"
        f" in {spent:.2f}s CPU -> {len(manifests) / spent:.0f} pods/s, {published} NRT renders"
    )


def bench(cp: ControlPlane, kube: KubeClient, args: argparse.Namespace) -> None:
    fleet = profiles(args.nodes)
    settings = ControllerSettings(controller="bench", nrt_refresh=0)
    state_dir = None if args.no_sockets else Path(tempfile.mkdtemp(prefix="fnrt-"))
    options = RunOptions(state_dir=state_dir, workers=args.workers)

    rss0 = rss_bytes()
    ctl = Controller(kube, fleet, settings, options)
    try:
        t_start = time.monotonic()
        ctl.start()
        ctl.run_in_thread()
        assert ctl.executor is not None
        ctl.executor.wait_idle(300)
        start_s = time.monotonic() - t_start
        grown = rss_bytes() - rss0
        print(f"start (register {args.nodes} nodes, sockets, sysfs, first NRTs): {start_s:.1f}s")
        print(
            f"controller RSS: +{grown / 2**20:.1f} MiB for {args.nodes} nodes = "
            f"{grown / args.nodes / 1024:.0f} KiB per node (process RSS {rss_bytes() / 2**20:.0f}"
            f" MiB, {threading.active_count()} threads)"
        )

        total = args.nodes * args.pods_per_node
        names = [
            (f"p{j}-{i:04d}", fleet[i].name)
            for j in range(args.pods_per_node)
            for i in range(args.nodes)
        ]
        writes0, cpu0 = ctl.nrt.writes, cpu_seconds(cp)
        t_pods = time.monotonic()
        # Pods are created by another process (6 threads), so the controller keeps its GIL.
        created_s = run_creator(cp, names)

        def done() -> bool:
            stats = ctl.stats()
            settled = stats["admitted"] + stats["rejected"] >= total
            executor = ctl.executor
            return settled and ctl.inbox.empty() and executor is not None and executor.idle()

        wait(done, 300, "every pod admitted and written")
        pods_s = time.monotonic() - t_pods
        stats, cpu1 = ctl.stats(), cpu_seconds(cp)
        writes = ctl.nrt.writes - writes0
        own_cpu = cpu1["controller"] - cpu0["controller"]
        cp_cpu = cpu1["control plane"] - cpu0["control plane"]
        print(
            f"pods: {total} bound in {created_s:.1f}s; all admitted and written after "
            f"{pods_s:.1f}s -> {total / pods_s:.0f} pods admitted/s "
            f"(admitted {stats['admitted']}, rejected {stats['rejected']})"
        )
        print(
            f"NRT writes: {writes} in {pods_s:.1f}s -> {writes / pods_s:.0f} writes/s "
            f"({writes / total:.2f} per pod after coalescing)"
        )
        print(
            f"CPU in that window: controller {own_cpu:.1f}s ({own_cpu / total * 1000:.1f} ms "
            f"per pod), kube-apiserver + etcd {cp_cpu:.1f}s"
        )
        print(f"controller RSS with {total} pods: {rss_bytes() / 2**20:.0f} MiB")
    finally:
        ctl.stop()

    rss2 = rss_bytes()
    again = Controller(kube, fleet, settings, options)
    try:
        t_restart = time.monotonic()
        again.start()
        assert again.executor is not None
        again.executor.wait_idle(300)
        restart_s = time.monotonic() - t_restart
        print(
            f"restart: rebuilt {again.stats()['admitted']} pods on {args.nodes} nodes and "
            f"republished in {restart_s:.1f}s (RSS +{(rss_bytes() - rss2) / 2**20:.0f} MiB)"
        )
    finally:
        again.stop()


if __name__ == "__main__":
    main()
