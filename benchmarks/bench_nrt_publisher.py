"""Benchmark of ``fakenrt nrt publish`` on one large node (what the DaemonSet's resources
in manifests/nrt-publisher/daemonset.yaml rest on).

The node: 256 CPUs in 8 NUMA zones, 8 GPUs, the static CPU and Memory Managers; 110
Guaranteed pods admitted by the kubelet simulator (8 with a GPU), served by the fake
podresources server on a unix socket, with the machine files and KubeletConfiguration a
real-kubelet node has. Printed:

* in process: one poll's read (sysfs + config + GetAllocatableResources + List) and
  compute, median and 95th percentile over ``--polls`` polls;
* the command as its own process against a real kube-apiserver + etcd (polling every
  second): CPU per poll in steady state (``/proc/<pid>/stat``) and RSS.

Run: .venv/bin/python benchmarks/bench_nrt_publisher.py [--polls 200] [--steady-seconds 30]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from exporter.podresources_client import PodResourcesClient
from fakenrt.kubelet.node import NodeState
from fakenrt.nrt.loaded import node_allocations
from fakenrt.nrtpub.compute import compute_nrt
from fakenrt.nrtpub.inputs import observe
from fakenrt.podspec import ContainerSpec, PodSpec
from fakenrt.profiles import NodeProfile, parse_profiles
from tests.controlplane.cluster import ControlPlane, binaries_dir
from tests.controlplane.helpers import admin_client, install_crds
from tests.nrtpub.realnode_files import ServedNode, served_node


def big_node() -> tuple[NodeProfile, NodeState]:
    (profile,) = parse_profiles(
        {
            "nodes": [
                {
                    "name": "bench-nrt-publisher",
                    "kubelet": {
                        "topologyManagerPolicy": "restricted",
                        "reservedSystemCPUs": "0",
                    },
                    "shape": {
                        "numaNodes": 8,
                        "coresPerNumaNode": 16,
                        "threadsPerCore": 2,
                        "memoryPerNumaNode": "512Gi",
                        "devicesPerNumaNode": {"nvidia.com/gpu": 1},
                    },
                }
            ]
        },
        source="bench",
    )
    state = NodeState.from_profile(profile)
    for i in range(110):
        amounts = {"cpu": Decimal(2), "memory": Decimal(4 << 30)}
        if i < 8:
            amounts["nvidia.com/gpu"] = Decimal(1)
        pod = PodSpec(
            namespace="bench",
            name=f"p{i}",
            containers=(ContainerSpec("c", requests=amounts, limits=amounts),),
            node_name=profile.name,
        )
        assert state.admit(pod).admit, pod.name
    return profile, state


def proc_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def in_process(profile: NodeProfile, served: ServedNode, polls: int) -> None:
    client = PodResourcesClient(served.socket)
    times = []
    try:
        for _ in range(polls):
            start = time.perf_counter()
            obs = observe(
                client=client, sysfs_root=served.sysfs_root, kubelet_config=served.kubelet_config
            )
            compute_nrt(profile.name, obs)
            times.append(time.perf_counter() - start)
    finally:
        client.close()
    times.sort()
    print(f"read + compute per poll, median: {statistics.median(times) * 1000:.2f} ms")
    print(f"read + compute per poll, p95:    {times[int(len(times) * 0.95)] * 1000:.2f} ms")


def as_process(profile: NodeProfile, served: ServedNode, steady_s: float) -> None:
    with ControlPlane(bin_dir=binaries_dir()) as cp:
        api = admin_client(cp)
        install_crds(api)
        api.close()
        proc = subprocess.Popen(
            [
                sys.executable, "-c", "from fakenrt.cli import main; main()", "nrt", "publish",
                "--node", profile.name,
                "--podresources-socket", str(served.socket),
                "--sysfs-root", str(served.sysfs_root),
                "--kubelet-config", str(served.kubelet_config),
                "--kubeconfig", str(cp.kubeconfig),
                "--poll-interval", "1s",
            ],
            cwd=REPO,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        try:
            time.sleep(5.0)  # start-up and the first write
            cpu0, t0 = proc_cpu_s(proc.pid), time.monotonic()
            time.sleep(steady_s)
            cpu1, t1 = proc_cpu_s(proc.pid), time.monotonic()
            rss = proc_rss_mib(proc.pid)
        finally:
            proc.terminate()
            _, stderr = proc.communicate(timeout=30)
        if "published" not in stderr:
            raise SystemExit(f"the publisher did not publish:\n{stderr[-2000:]}")
        polls = t1 - t0  # one poll per second
        print(f"process CPU per 1 s poll (steady): {(cpu1 - cpu0) / polls * 1000:.2f} ms")
        print(f"process RSS: {rss:.1f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--polls", type=int, default=200, help="in-process polls timed")
    parser.add_argument("--steady-seconds", type=float, default=30.0, help="steady state")
    args = parser.parse_args()
    profile, state = big_node()
    with served_node(profile) as served:
        served.serve(node_allocations(state))
        print(f"node: 256 CPUs, 8 NUMA zones, 8 GPUs, {len(state.allocations())} pods")
        in_process(profile, served, args.polls)
        as_process(profile, served, args.steady_seconds)


if __name__ == "__main__":
    main()
