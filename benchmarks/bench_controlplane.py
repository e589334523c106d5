"""Warm start and stop time of the test suite's control plane (etcd + kube-apiserver).

Run: .venv/bin/python benchmarks/bench_controlplane.py [ROUNDS]
Builds the binaries first if they are not cached (not timed), then starts and stops the
control plane ROUNDS times (default 3) and prints each round and the median.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.controlplane.cluster import ControlPlane, binaries_dir


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    bin_dir = binaries_dir()
    starts: list[float] = []
    stops: list[float] = []
    for i in range(rounds):
        cp = ControlPlane(bin_dir=bin_dir)
        t0 = time.perf_counter()
        cp.start()
        starts.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        cp.stop()
        stops.append(time.perf_counter() - t0)
        print(f"round {i + 1}: start to /readyz {starts[-1]:.2f} s, stop {stops[-1]:.2f} s")
    print(
        f"control plane warm start: median {statistics.median(starts):.2f} s "
        f"(stop {statistics.median(stops):.2f} s) over {rounds} rounds"
    )


if __name__ == "__main__":
    main()
